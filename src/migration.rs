//! Porting code to the maple tree from `rangemap`, from a `BTreeMap` used as a range map, from
//! an `RwLock<BTreeMap>` lookup table and from `vm-allocator`. Every snippet is a doctest.
//!
//! # From `rangemap`
//!
//! | `rangemap` | `maple-tree` |
//! |---|---|
//! | `RangeMap::new()` / `RangeInclusiveMap::new()` | [`MapleTree::new`](crate::MapleTree::new) |
//! | `map.insert(a..b, v)` | `tree.store_range(a..b, v)?` (any `RangeBounds<u64>`) |
//! | `map.remove(a..b)` | `tree.erase_range(a..b)?` |
//! | `map.get(&i)` | `tree.get(i)` (a clone) or `tree.load(i, &guard)` (a borrow) |
//! | `map.get_key_value(&i)` | `tree.load_range(i, &guard)` (a borrow) or `tree.get_range(i)` (a clone) |
//! | `map.iter()` | `tree.iter(&guard)`, items `(RangeInclusive<u64>, entry)` |
//! | `map.overlapping(&r)` | `tree.range(r, &guard)` (nothing for an empty `r`) |
//! | `map.gaps(&r)` | `tree.gaps(r, &guard)?` (inclusive ranges) |
//! | `map.len()`, `map.is_empty()` | [`len`](crate::MapleTree::len), [`is_empty`](crate::MapleTree::is_empty) |
//! | `RangeMap::from_iter(..)` | `collect()` of `(RangeInclusive<u64>, E)` |
//!
//! Range arguments take any `RangeBounds<u64>` (`a..b`, `a..=b`, `..=b`, `a..`, `..`), so
//! `rangemap`'s half-open ranges carry over as they are; an empty or inverted one is
//! [`Error::InvalidRange`](crate::Error::InvalidRange) where `rangemap` panics. Two differences
//! matter. Keys are `u64` indices and the tree reports every range as a `RangeInclusive<u64>`
//! (iterator items, [`load_range`](crate::MapleTree::load_range), [`first`](crate::MapleTree::first), `gaps`, ...); and **equal neighbours
//! are not merged** (the kernel's rule): storing the same value over two touching ranges keeps
//! two ranges, where `rangemap` coalesces them into one.
//!
//! ```
//! use maple_tree::{MapleTree, Value};
//! # fn main() -> Result<(), maple_tree::Error> {
//! // rangemap: map.insert(0..10, 1); map.insert(10..20, 1); map.insert(5..15, 2);
//! let tree = MapleTree::<Value>::new();
//! tree.store_range(0..10, Value::new(1))?;
//! tree.store_range(10..20, Value::new(1))?; // not merged with [0, 9]
//! tree.store_range(5..15, Value::new(2))?; // trims both neighbours
//! let guard = tree.pin();
//! let ranges: Vec<_> = tree.iter(&guard).map(|(r, v)| (r, v.get())).collect();
//! assert_eq!(ranges, [(0..=4, 1), (5..=14, 2), (15..=19, 1)]);
//! // map.get_key_value(&7)
//! assert_eq!(tree.load_range(7, &guard), Some((5..=14, Value::new(2))));
//! // map.gaps(&(0..30))
//! assert_eq!(tree.gaps(0..30, &guard)?.collect::<Vec<_>>(), [20..=29]);
//! // map.overlapping(&(12..17))
//! let over: Vec<u64> = tree.range(12..17, &guard).map(|(r, _)| *r.start()).collect();
//! assert_eq!(over, [5, 15]);
//! drop(guard);
//! // map.remove(0..3)
//! tree.erase_range(0..3)?;
//! assert_eq!(tree.get(1), None);
//! assert_eq!(tree.len(), 3);
//! # Ok(())
//! # }
//! ```
//!
//! # From a `BTreeMap<u64, (u64, V)>` range map
//!
//! The usual hand-written range map keys each range by its start and keeps its end beside the
//! value; a lookup takes the last start at or below the index, and every insert must trim or
//! split the ranges it overlaps by hand. The tree does the trimming, and the lookup is one call:
//!
//! ```
//! use std::collections::BTreeMap;
//! use maple_tree::MapleTree;
//! # fn main() -> Result<(), maple_tree::Error> {
//! // Before: BTreeMap<start, (last, name)> and a hand-written lookup.
//! let mut by_start: BTreeMap<u64, (u64, String)> = BTreeMap::new();
//! by_start.insert(0x1000, (0x1fff, "text".into()));
//! by_start.insert(0x3000, (0x3fff, "data".into()));
//! let find = |i: u64| {
//!     let (_, (last, name)) = by_start.range(..=i).next_back()?;
//!     (*last >= i).then_some(name.clone())
//! };
//! assert_eq!(find(0x3800).as_deref(), Some("data"));
//!
//! // After: the tree owns boxed values and hands out borrows under a guard.
//! let tree: MapleTree<Box<String>> = by_start
//!     .into_iter()
//!     .map(|(first, (last, name))| (first..=last, Box::new(name)))
//!     .collect();
//! let guard = tree.pin();
//! assert_eq!(tree.load(0x3800, &guard).map(|s| s.as_str()), Some("data"));
//! // An insert that overlaps is trimmed for you (or refused, with insert_range).
//! drop(guard);
//! tree.store_range(0x1800..=0x37ff, Box::new("heap".into()))?;
//! assert_eq!(tree.len(), 3);
//! # Ok(())
//! # }
//! ```
//!
//! The `BTreeMap` conventions, for ranges:
//!
//! | `BTreeMap<u64, V>` | `MapleTree<E>` |
//! |---|---|
//! | `map.clone()` | `tree.clone()` (one pass, as [`dup`](crate::MapleTree::dup)) |
//! | `map.iter().map(\|(k, v)\| (*k, f(v))).collect()`, or `clone()` then `values_mut()` | [`tree.dup_map(\|range, entry\| f(entry))`](crate::MapleTree::dup_map): the same nodes, entries mapped in the one pass, of any entry type |
//! | `map.into_iter()` | `tree.into_iter()`: `(RangeInclusive<u64>, E)` in index order |
//! | `map.retain(\|k, v\| ..)` | [`tree.retain(\|range, entry\| ..)`](crate::MapleTree::retain) |
//! | `map.extract_if(a..b, ..)` / removing a key range | [`tree.drain(a..b)?`](crate::MapleTree::drain): ranges trimmed to `a..b`, with their entries |
//! | `map.split_off(&at)` | [`tree.split_off(at)`](crate::MapleTree::split_off): a range straddling `at` is split |
//! | `map.range(..=i).next_back()` + end check, cloned | [`tree.get_range(i)`](crate::MapleTree::get_range) |
//!
//! # From an `RwLock<BTreeMap>` lookup table
//!
//! Readers of a `RwLock` wait for the writer; readers of the tree do not. Share the tree (it is
//! `Sync` when its entries are `Send + Sync`), write through the one-call methods or one
//! [`lock`](crate::MapleTree::lock) for several writes, and read with [`get`](crate::MapleTree::get)
//! (a clone, `Arc` entries make it cheap) or under a guard:
//!
//! ```
//! use std::sync::Arc;
//! use maple_tree::MapleTree;
//! # fn main() -> Result<(), maple_tree::Error> {
//! let table = Arc::new(MapleTree::<Arc<String>>::new());
//! table.store_range(0..=99, Arc::new("low".into()))?;
//! let reader = {
//!     let table = Arc::clone(&table);
//!     std::thread::spawn(move || table.get(50).map(|s| s.len()))
//! };
//! {
//!     let mut w = table.lock(); // readers keep running
//!     w.store_range(100..=199, Arc::new("high".into()))?;
//! }
//! assert_eq!(reader.join().ok().flatten(), Some(3));
//! assert_eq!(table.get(150).as_deref().map(String::as_str), Some("high"));
//! # Ok(())
//! # }
//! ```
//!
//! # From `vm-allocator`
//!
//! `AddressAllocator::new(base, size)`, `allocate(size, align, AllocPolicy::FirstMatch)` and
//! `free(&range)` map onto [`tree::Allocator`](crate::tree::Allocator) with
//! [`Placement`](crate::tree::Placement) `FirstMatch`, `LastMatch` or `ExactMatch(start)`;
//! allocations are `RangeInclusive<u64>` as there. Underneath, the aligned search is
//! [`MapleTree::empty_area_aligned`](crate::MapleTree::empty_area_aligned), which also finds
//! holes of exactly the requested size (the `size + align - 1` trick misses them).
//!
//! ```
//! use maple_tree::tree::{Allocator, Placement};
//! use maple_tree::Error;
//! # fn main() -> Result<(), Error> {
//! let mut mmio = Allocator::new(0xd000_0000, 0x1000_0000)?;
//! let bar0 = mmio.allocate(0x1000, 0x1000, Placement::FirstMatch)?;
//! let bar1 = mmio.allocate(0x10_0000, 0x10_0000, Placement::LastMatch)?;
//! assert_eq!(bar0, 0xd000_0000..=0xd000_0fff);
//! assert_eq!(bar1, 0xdff0_0000..=0xdfff_ffff);
//! let fixed = mmio.allocate(0x1000, 0x1000, Placement::ExactMatch(0xd000_1000))?;
//! assert_eq!(mmio.allocate(0x1000, 0x1000, Placement::ExactMatch(0xd000_1000)), Err(Error::Occupied));
//! mmio.free(&fixed)?;
//! assert_eq!(mmio.free(&fixed), Err(Error::NotAllocated));
//! # Ok(())
//! # }
//! ```

//! # From earlier versions of this crate
//!
//! | before | now | why |
//! |---|---|---|
//! | `let g: Guard = tree.pin();` | `let g: TreeGuard<'_> = tree.pin();` (or `let g = tree.pin();`) | the guard borrows the tree and cannot outlive it (see [`MapleTree::pin`](crate::MapleTree::pin)); `&g` is still a `&Guard` for every read |
//! | `maple-tree = { default-features = false }` (no features before) | the same turns off the new default feature `std` (the crate is then `no_std`); keep `features = ["std"]` for the old build | [without std](crate#without-std-kernels-hypervisors) |
//! | `tree.collector().register()` kept per thread, its guards checked against the tree's | [`tree.register()`](crate::MapleTree::register), a [`ReadHandle`](crate::ReadHandle) whose `pin` is a [`TreeGuard`](crate::TreeGuard) | the guard borrows its handle and the tree; the readers' way without std |
//! | a guard of the tree's collector kept past the tree | `tree.collector().register().pin()`, with a clone of the [`Collector`](crate::Collector) kept alive past the guard | the guard must not hold the collector's last reference |
//! | `Cursor::find` / `find_rev` stopping (`None`, active) on a zero entry at the start index | the zero entry is stepped over, as by every later `find` | the documented rule; `find_range` still stops on it |
//! | `for (first, last, v) in tree.iter(&g)` (also `range`, `&WriteGuard`) | `for (r, v) in tree.iter(&g)`, `r: RangeInclusive<u64>` (`*r.start()`, `*r.end()`) | one range type everywhere |
//! | `tree.load_range(i, &g) -> Option<(u64, u64, _)>`; `next`, `prev` alike | `Option<(RangeInclusive<u64>, _)>` | one range type |
//! | `tree.erase(i) -> Option<(u64, u64)>` | `tree.erase(i) -> Option<Erased>`: `.range()`, and the entry in the same walk: `.entry()` (a borrow), `.cloned()`, `.into_entry()` (owned, exclusive mode) | [`mtree_erase`](crate::MapleTree::erase) returns the entry; reading it first cost a second walk |
//! | `tree.empty_area(min, max, size)`, `empty_area_rev` | `tree.empty_area(min..=max, size)` (any `RangeBounds<u64>`: `..`, `a..b`) | windows as ranges, always first |
//! | `tree.empty_area_aligned(min, max, size, align)`, `empty_area_rev_aligned` | `tree.empty_area_aligned(min..=max, size, align)` | one argument order |
//! | `tree.alloc_range(entry, size, min, max) -> Result<u64>`, `alloc_rrange` | `tree.alloc_range(min..=max, size, entry) -> Result<RangeInclusive<u64>>` | one order; the range allocated comes back |
//! | `tree.alloc_range_aligned(entry, size, align, min, max)`, `alloc_rrange_aligned` | `tree.alloc_range_aligned(min..=max, size, align, entry)` | one order |
//! | `tree.alloc_cyclic(entry, lo, hi, &mut next)` | `tree.alloc_cyclic(lo..=hi, &mut next, entry)`, or an [`IdAllocator`](crate::IdAllocator) keeping `next` | one order; `next` shared by any number of threads |
//! | a placeholder allocated, then overwritten with the entry that holds its id or range | [`alloc_range_with(window, size, \|range\| entry)`](crate::MapleTree::alloc_range_with), `alloc_rrange_with`, the `_aligned_with` forms, [`alloc_cyclic_with`](crate::MapleTree::alloc_cyclic_with), and `try_` forms returning the closure's error | readers never see the placeholder |
//! | `cursor.set_range(first, last)` | `cursor.set_range(first..=last)`; `cursor.range()` | one range type |
//! | `maple_tree::entry::{ZERO_WORD, RESERVED_LIMIT, is_reserved_word}`, `ValidateError.0` | gone from the public API; `ValidateError` displays its message and converts into [`Error::Invalid`](crate::Error::Invalid) | internals |
//! | `examples/profile`, `kernel_oracle`, `kernel_workloads`, `memory` and the probes | `cargo run --release -p maple-tools --bin <name>` | `examples/` holds user programs only |
//!
//! ```
//! use maple_tree::{MapleTree, TreeGuard, Value};
//!
//! let tree = MapleTree::new();
//! tree.store_range(1..=9, Value::new(1)).unwrap();
//! let guard: TreeGuard<'_> = tree.pin();
//! let g: &maple_tree::Guard = &guard; // what the explicit-guard reads take
//! assert_eq!(tree.load(5, g), Some(Value::new(1)));
//! ```
//!
//! The range shapes and argument orders, before and after:
//!
//! ```
//! use maple_tree::{IdAllocator, MapleTree, Value};
//! # fn main() -> Result<(), maple_tree::Error> {
//! let tree = MapleTree::<Value>::new_alloc();
//! // Before: tree.alloc_range(Value::new(1), 0x10, 0x1000, u64::MAX) == Ok(0x1000)
//! assert_eq!(tree.alloc_range(0x1000.., 0x10, Value::new(1))?, 0x1000..=0x100f);
//! // Before: tree.empty_area(0, 0xffff, 0x100) == Ok(0)
//! assert_eq!(tree.empty_area(..=0xffff, 0x100)?, 0);
//! // Before: for (first, last, v) in tree.iter(&guard)
//! let guard = tree.pin();
//! for (r, v) in tree.iter(&guard) {
//!     assert_eq!((*r.start(), *r.end(), v), (0x1000, 0x100f, Value::new(1)));
//! }
//! drop(guard);
//! // Before: let (first, last) = tree.erase(0x1000).unwrap(); (the entry needed a load first)
//! let erased = tree.erase(0x1000).unwrap();
//! assert_eq!((erased.range(), erased.cloned()), (0x1000..=0x100f, Some(Value::new(1))));
//! // Before: a placeholder, then an overwrite once the id was known.
//! let ids = IdAllocator::new(1..)?;
//! let id = ids.alloc_with(|id| Value::new(id * 100))?;
//! assert_eq!(ids.get(id), Some(Value::new(id * 100)));
//! # Ok(())
//! # }
//! ```
