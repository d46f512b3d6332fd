//! # maple-tree
//!
//! The Linux kernel's maple tree in userspace: an RCU-safe B-tree over non-overlapping inclusive
//! ranges `[first, last]` of `u64` indices, each mapped to an owned, pointer-sized entry. This
//! crate is the tree alone (its one runtime dependency besides the small `smallvec` is
//! crossbeam-epoch); three of the kernel's users of the tree, modelled closely enough to
//! reproduce four kernel patches' results, are crates of their own built on its public API:
//! `maple-mm` (a VMA manager and the userfaultfd contexts that ride on its VMAs) and
//! `maple-poll` (`poll(2)`'s result copy-out, Linux only).
//!
//! - **Lock-free readers** on [crossbeam-epoch](crossbeam_epoch): loads, finds, iteration and
//!   cursors never lock and never allocate; they pin a guard and restart when they meet a node a
//!   writer replaced.
//! - **One writer at a time**, serialised by the tree's lock ([`MapleTree::lock`]) or by `&mut`
//!   ([`MapleTree::exclusive`]). Writes through the lock are RCU-safe: copy-on-write where a
//!   reader could see a half-done change, in place where the write order keeps every reader
//!   correct — including the in-place appends the kernel turned off under RCU in v6.5.
//! - **The kernel's whole API**, with the kernel's semantics and edge cases: load,
//!   store/insert/erase of ranges, `find`/`next`/`prev`, double-ended iteration, a cursor with
//!   the `ma_state` status machine, gap search (`empty_area`, `empty_area_rev`), allocation
//!   (`alloc_range`, `alloc_rrange`, `alloc_cyclic`), structural duplication (`dup`, like
//!   `__mt_dup`), `validate` and dumps. Bad input is a typed [`Error`], never a panic.
//!
//! | you want | start at |
//! |---|---|
//! | a concurrent range map | [`MapleTree`], [the tree](#the-tree) |
//! | to walk ranges one by one, or edit while walking | [`Cursor`], [`CursorMut`], [cursors](#cursors) |
//! | the lowest/highest free hole, or to allocate ids or address ranges | [gap search and allocation](#gap-search-and-allocation) |
//! | readers on other threads | [concurrency](#concurrency) |
//! | to port code from `rangemap`, a `BTreeMap` range map, an `RwLock<BTreeMap>` or `vm-allocator` | [`migration`] |
//! | your own entry type | [`Entry`] (implemented for [`Box<T>`](alloc::boxed::Box), [`Arc<T>`](alloc::sync::Arc) and [`Value`]) |
//! | address spaces: mmap, munmap, mprotect, fork; userfaultfd registrations across fork | the `maple-mm` crate |
//! | `poll(2)`'s copy-out strategies | the `maple-poll` crate |
//!
//! ## The tree
//!
//! A [`MapleTree`] is a total map from every `u64` index to an entry or nothing, kept as
//! consecutive inclusive ranges. Storing over a range trims or removes whatever was there;
//! empty neighbours always coalesce, but equal neighbours never merge (as in the kernel, and
//! unlike `rangemap`). Entries are owned and pointer-sized ([`Entry`]): [`Value`] for small
//! integers, [`Box<T>`](alloc::boxed::Box) or [`Arc<T>`](alloc::sync::Arc) for anything else; each is dropped exactly
//! once, when overwritten or erased (after readers are done with it) or with the tree.
//!
//! Reads come in two flavours: the *explicit-guard* calls ([`MapleTree::load`],
//! [`load_range`](MapleTree::load_range), [`find`](MapleTree::find),
//! [`next`](MapleTree::next), [`prev`](MapleTree::prev), [`iter`](MapleTree::iter),
//! [`range`](MapleTree::range), [`cursor`](MapleTree::cursor)) take a guard from
//! [`MapleTree::pin`] and return borrows that live as long as it; the *pin-for-you* calls
//! ([`get`](MapleTree::get), [`with`](MapleTree::with), [`contains`](MapleTree::contains),
//! [`count`](MapleTree::count)) pin internally and return owned values.
//!
//! ```
//! use maple_tree::{Error, MapleTree, Value};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tree = MapleTree::<Value>::new();
//! tree.store_range(10..=19, Value::new(1))?;
//! tree.store(25, Value::new(2))?;
//! assert_eq!(tree.get(15), Some(Value::new(1)));
//! assert_eq!(tree.get(20), None);
//!
//! // Insert writes nothing if any index is taken; bad ranges are errors, not panics.
//! assert_eq!(tree.insert_range(18..=22, Value::new(9)), Err(Error::Occupied));
//! assert_eq!(tree.store_range(5..=4, Value::new(9)), Err(Error::InvalidRange));
//!
//! // A store trims its neighbours: [10, 19] becomes [10, 14], the entry at 25 is replaced.
//! tree.store_range(15..=25, Value::new(3))?;
//!
//! let guard = tree.pin();
//! let ranges: Vec<_> = tree.iter(&guard).map(|(r, v)| (r, v.get())).collect();
//! assert_eq!(ranges, [(10..=14, 1), (15..=25, 3)]);
//! // Double-ended, and over part of the index space (ranges are reported whole).
//! let starts: Vec<u64> = tree.iter(&guard).rev().map(|(r, _)| *r.start()).collect();
//! assert_eq!(starts, [15, 10]);
//! let part: Vec<_> = tree.range(12..=13, &guard).map(|(r, _)| r).collect();
//! assert_eq!(part, [10..=14]);
//!
//! // The range around an index; the kernel's mt_find / mt_next / mt_prev.
//! assert_eq!(tree.load_range(20, &guard), Some((15..=25, Value::new(3))));
//! let mut index = 0;
//! assert_eq!(tree.find(&mut index, 100, &guard), Some(Value::new(1)));
//! assert_eq!(index, 15); // moved past the range found
//! assert_eq!(tree.next(12, u64::MAX, &guard).map(|(r, _)| r), Some(15..=25));
//! assert_eq!(tree.prev(20, 0, &guard).map(|(r, _)| r), Some(10..=14));
//! drop(guard);
//!
//! // Erase takes the whole range containing the index and hands its entry back (readers may
//! // still hold it: it is dropped after a grace period); erase_range trims.
//! let erased = tree.erase(12).expect("[10, 14] held an entry");
//! assert_eq!((erased.range(), erased.entry()), (10..=14, Some(Value::new(1))));
//! assert!(tree.erase(12).is_none());
//! tree.erase_range(20..=100)?;
//! assert_eq!(tree.count(), 1);
//! assert!(tree.contains(19) && !tree.contains(20));
//!
//! // A structural copy, and the checks the tests use.
//! let copy = tree.dup();
//! assert_eq!(copy.get(17), Some(Value::new(3)));
//! copy.validate()?;
//! assert!(!tree.dump().is_empty() && tree.dump_dot().starts_with("digraph"));
//! # Ok(())
//! # }
//! ```
//!
//! Boxed entries are borrowed as `&T` for as long as the guard lives:
//!
//! ```
//! use maple_tree::MapleTree;
//!
//! # fn main() -> Result<(), maple_tree::Error> {
//! let names = MapleTree::<Box<String>>::new();
//! names.store_range(0x1000..=0x1fff, Box::new("text".to_string()))?;
//! let guard = names.pin();
//! let s: &String = names.load(0x1234, &guard).unwrap();
//! assert_eq!(s, "text");
//! // Or without a guard in sight:
//! assert_eq!(names.with(0x1fff, |s| s.map(|s| s.len())), Some(4));
//! # Ok(())
//! # }
//! ```
//!
//! The conventions of `BTreeMap`: [`len`](MapleTree::len) in `O(1)`,
//! [`is_empty`](MapleTree::is_empty), [`first`](MapleTree::first)/[`last`](MapleTree::last),
//! owned removal through `&mut` ([`remove`](MapleTree::remove),
//! [`pop_first`](MapleTree::pop_first), [`pop_last`](MapleTree::pop_last)), `Debug`,
//! `FromIterator` and `Extend` of `(RangeInclusive<u64>, E)` (store semantics;
//! [`try_extend`](MapleTree::try_extend) reports errors instead of panicking), and the empty
//! ranges of a window ([`gaps`](MapleTree::gaps), double-ended):
//!
//! ```
//! use maple_tree::{MapleTree, Value};
//! # fn main() -> Result<(), maple_tree::Error> {
//! let mut tree: MapleTree<Value> = [(0..=9, Value::new(1)), (20..=29, Value::new(2))]
//!     .into_iter()
//!     .collect();
//! assert_eq!(format!("{tree:?}"), "{0..=9: Value(1), 20..=29: Value(2)}");
//! assert_eq!(tree.len(), 2);
//! let guard = tree.pin();
//! assert_eq!(tree.gaps(..=40, &guard)?.collect::<Vec<_>>(), [10..=19, 30..=40]);
//! assert_eq!(tree.last(&guard), Some((20..=29, Value::new(2))));
//! drop(guard);
//! assert_eq!(tree.pop_first(), Some((0..=9, Value::new(1))));
//! assert_eq!(tree.remove(25), Some((20..=29, Value::new(2))));
//! assert!(tree.is_empty());
//! # Ok(())
//! # }
//! ```
//!
//! ## Cursors
//!
//! A cursor is the kernel's `ma_state`: a requested or found range ([`index`](Cursor::index),
//! [`last`](Cursor::last)), a [`Status`] and a cached path, so that stepping to the neighbouring
//! range costs `O(1)` amortised. [`Cursor`] ([`MapleTree::cursor`]) reads lock-free under a
//! guard; [`CursorMut`] ([`WriteGuard::cursor`]) lives inside a writer and can also
//! [`store`](CursorMut::store), [`erase`](CursorMut::erase) and
//! [`preallocate`](CursorMut::preallocate) + [`store_prealloc`](CursorMut::store_prealloc), with
//! iteration staying correct after its own writes.
//!
//! The moves differ in what they stop at: [`walk`](Cursor::walk) re-walks to `index` and takes
//! the whole slot, empty or not; [`find`](Cursor::find), [`next`](Cursor::next),
//! [`prev`](Cursor::prev) and [`find_rev`](Cursor::find_rev) stop only at entries;
//! [`find_range`](Cursor::find_range), [`next_range`](Cursor::next_range) and
//! [`prev_range`](Cursor::prev_range) visit empty ranges too (returning `None` for them while
//! the status stays [`Status::Active`]). Every move follows the kernel's status machine
//! exactly (index, last, status and entry, also after moves that find nothing; checked against
//! traces of the Linux 6.12 tree): [`next`](Cursor::next) and `next_range` that hit their limit
//! return `None` and set [`Status::Overflow`], the backward moves [`Status::Underflow`];
//! [`find`](Cursor::find) returns `None` and stays active, as the kernel's `mas_find` does
//! ("ignores overflow"), and so does [`find_range`](Cursor::find_range) at its limit. Leaving
//! overflow, `prev` and `find` first return the entry at the current range; leaving underflow,
//! `next` and `find` do. [`Cursor`] documents the semantics in full and the few deliberate
//! differences (no root entry form, no null-node crash, no empty leaf after erasing a
//! whole-space entry).
//!
//! ```
//! use maple_tree::{MapleTree, Status, Value};
//!
//! # fn main() -> Result<(), maple_tree::Error> {
//! let tree = MapleTree::<Value>::new();
//! tree.store_range(10..=19, Value::new(1))?;
//! tree.store_range(30..=39, Value::new(3))?;
//! let guard = tree.pin();
//!
//! // walk: the slot that contains the index, here the empty range between the two entries.
//! let mut c = tree.cursor(25, &guard);
//! assert_eq!(c.status(), Status::Start);
//! assert_eq!(c.walk(), None);
//! assert_eq!((c.index(), c.last(), c.status()), (20, 29, Status::Active));
//! // next / prev: entries only.
//! assert_eq!(c.next(u64::MAX), Some(Value::new(3)));
//! assert_eq!((c.index(), c.last()), (30, 39));
//! assert_eq!(c.prev(0), Some(Value::new(1)));
//! assert_eq!(c.prev(0), None); // nothing before [10, 19]
//! assert_eq!(c.status(), Status::Underflow);
//!
//! // find: the entry at index or the next one, then one entry per call.
//! c.set(0);
//! assert_eq!(c.find(u64::MAX), Some(Value::new(1)));
//! assert_eq!(c.find(u64::MAX), Some(Value::new(3)));
//! assert_eq!(c.find(u64::MAX), None);
//! assert_eq!(c.status(), Status::Active); // mas_find ignores overflow, as in the kernel
//!
//! // find_range: every range, empty ones included, up to the one reaching the limit (the
//! // first call skips an empty range at index, as mas_find_range does).
//! c.set(0);
//! let mut seen = vec![];
//! loop {
//!     let v = c.find_range(45);
//!     seen.push((c.index(), c.last(), v.map(|v| v.get())));
//!     if c.last() >= 45 {
//!         break;
//!     }
//! }
//! assert_eq!(seen, [(10, 19, Some(1)), (20, 29, None), (30, 39, Some(3)), (40, u64::MAX, None)]);
//! assert_eq!(c.find_range(45), None); // at the limit: nothing, and still active
//! assert_eq!((c.index(), c.last(), c.status()), (40, u64::MAX, Status::Active));
//!
//! // Limits are checked before the first walk: a fresh cursor at 15 with next(15) overflows
//! // on [15, 15] without walking (the kernel's mas_next_setup).
//! let mut c = tree.cursor(15, &guard);
//! assert_eq!(c.next(15), None);
//! assert_eq!((c.index(), c.last(), c.status()), (15, 15, Status::Overflow));
//! drop(guard);
//!
//! // CursorMut: set a range and store over it; edit while iterating.
//! let mut w = tree.lock();
//! let mut c = w.cursor(0);
//! c.set_range(20..=29);
//! c.store(Value::new(2))?;
//! c.set(0);
//! while let Some(v) = c.find(u64::MAX) {
//!     let doubled = Value::new(v.get() * 2);
//!     c.store(doubled)?; // over [index, last]: the found range, an exact fit
//! }
//! drop(w);
//! let guard = tree.pin();
//! let all: Vec<_> = tree.iter(&guard).map(|(r, v)| (r, v.get())).collect();
//! assert_eq!(all, [(10..=19, 2), (20..=29, 4), (30..=39, 6)]);
//! # Ok(())
//! # }
//! ```
//!
//! ## Gap search and allocation
//!
//! [`MapleTree::empty_area`] and [`empty_area_rev`](MapleTree::empty_area_rev) find the lowest
//! or highest start of `size` free indices inside a window (any `RangeBounds<u64>`, always the
//! first argument; the kernel's `mas_empty_area{,_rev}`, with its window clipping). They work on every tree; on an
//! *allocation tree* ([`MapleTree::new_alloc`], the kernel's `MT_FLAGS_ALLOC_RANGE`) internal
//! nodes track the largest gap below them, so the search is `O(log n)`.
//! [`alloc_range`](MapleTree::alloc_range), [`alloc_rrange`](MapleTree::alloc_rrange) and
//! [`alloc_cyclic`](MapleTree::alloc_cyclic) search and store in one step and need an
//! allocation tree ([`Error::NotAllocTree`] otherwise); they return the range allocated. Their
//! `_with` forms ([`alloc_range_with`](MapleTree::alloc_range_with),
//! [`alloc_cyclic_with`](MapleTree::alloc_cyclic_with), ...) build the entry from the range
//! found, under the writer lock before the store, so an entry that holds its own id or range
//! is never seen as a placeholder; [`IdAllocator`] keeps a cyclic allocator's `next` for any
//! number of threads. The VMA manager places mappings with these; the poll model allocates
//! the lowest free descriptor with them.
//!
//! ```
//! use maple_tree::{Error, MapleTree, Value};
//!
//! # fn main() -> Result<(), maple_tree::Error> {
//! let tree = MapleTree::<Value>::new_alloc();
//! tree.store_range(0..=99, Value::new(0))?;
//! tree.store_range(200..=299, Value::new(0))?;
//! // Free: [100, 199] and [300, u64::MAX].
//! assert_eq!(tree.empty_area(0..=1000, 50), Ok(100));
//! assert_eq!(tree.empty_area(0..=1000, 150), Ok(300)); // the first hole is too small
//! assert_eq!(tree.empty_area_rev(0..=250, 50), Ok(150)); // highest fit inside the window
//! assert_eq!(tree.empty_area(..=250, 150), Err(Error::NoRoom));
//! assert_eq!(tree.empty_area(10..10, 1), Err(Error::InvalidWindow)); // an empty window
//!
//! // Allocate: lowest fit, highest fit.
//! assert_eq!(tree.alloc_range(0..=1000, 10, Value::new(1)), Ok(100..=109));
//! assert_eq!(tree.alloc_rrange(..200, 10, Value::new(2)), Ok(190..=199));
//! assert_eq!(tree.get(105), Some(Value::new(1)));
//!
//! // Cyclic ids in [1, 3] (like the kernel's idr): search from `next`, wrap to the start.
//! let ids = MapleTree::<Value>::new_alloc();
//! let mut next = 0;
//! assert_eq!(ids.alloc_cyclic(1..=3, &mut next, Value::new(7)), Ok((1, false)));
//! assert_eq!(ids.alloc_cyclic(1..=3, &mut next, Value::new(7)), Ok((2, false)));
//! assert_eq!(ids.alloc_cyclic(1..=3, &mut next, Value::new(7)), Ok((3, false)));
//! assert_eq!(ids.alloc_cyclic(1..=3, &mut next, Value::new(7)), Err(Error::NoRoom));
//! ids.erase(2);
//! assert_eq!(ids.alloc_cyclic(1..=3, &mut next, Value::new(7)), Ok((2, true))); // wrapped
//!
//! // Allocation needs gap tracking; plain search does not.
//! let plain = MapleTree::<Value>::new();
//! assert_eq!(plain.alloc_range(0..=10, 1, Value::new(1)), Err(Error::NotAllocTree));
//! assert_eq!(plain.empty_area(5..=10, 2), Ok(5));
//! # Ok(())
//! # }
//! ```
//!
//! Aligned variants ([`empty_area_aligned`](MapleTree::empty_area_aligned),
//! [`empty_area_rev_aligned`](MapleTree::empty_area_rev_aligned),
//! [`alloc_range_aligned`](MapleTree::alloc_range_aligned),
//! [`alloc_rrange_aligned`](MapleTree::alloc_rrange_aligned)) take a power-of-two alignment for
//! the start and find exact-size aligned holes too; [`tree::Allocator`] wraps them as an
//! address allocator (first, last or exact placement; frees of exactly an allocated range):
//!
//! ```
//! use maple_tree::tree::{Allocator, Placement};
//! use maple_tree::{MapleTree, Value};
//! # fn main() -> Result<(), maple_tree::Error> {
//! let tree = MapleTree::<Value>::new_alloc();
//! tree.store_range(0..=0xfff, Value::new(1))?;
//! tree.store_range(0x2000..=0x2fff, Value::new(2))?;
//! assert_eq!(tree.empty_area_aligned(.., 0x1000, 0x1000)?, 0x1000);
//!
//! let mut pages = Allocator::new(0x10_0000, 0x10_0000)?;
//! let r = pages.allocate(0x3000, 0x1_0000, Placement::LastMatch)?;
//! assert_eq!(r, 0x1f_0000..=0x1f_2fff);
//! pages.free(&r)?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Concurrency
//!
//! Any number of threads read while one thread writes. Readers never lock and never block on the
//! writer; during one write a reader sees, for each index, the old entry or the new one, and an
//! iterator yields strictly increasing, non-overlapping ranges, each of which existed at some
//! moment of the iteration. Removed nodes and entries are freed once no guard that could reach
//! them is alive (hold guards briefly: a long-lived guard holds back all reclamation).
//!
//! Writers are serialised in one of two ways:
//!
//! - [`MapleTree::lock`] returns a [`WriteGuard`] for **RCU-mode** writes through a shared
//!   reference, with readers running. Every one-call write on `MapleTree`
//!   ([`store_range`](MapleTree::store_range), [`erase`](MapleTree::erase),
//!   [`alloc_range`](MapleTree::alloc_range), ...) takes this lock for one operation; take it
//!   yourself to make several writes under one acquisition, or to use a [`CursorMut`]. The lock
//!   is not reentrant: while a thread holds a `WriteGuard`, it must write through the guard, not
//!   through the tree's one-call methods (nor call [`validate`](MapleTree::validate),
//!   [`stats`](MapleTree::stats), [`height`](MapleTree::height) or the dumps, which lock too).
//! - [`MapleTree::exclusive`] takes `&mut MapleTree`, so no reader can exist: nodes are rewritten
//!   in place and anything removed is freed at once (the kernel's non-RCU mode). Use it to build
//!   a tree before sharing it, or whenever you own it outright.
//!
//! ```
//! use maple_tree::{MapleTree, Value};
//! use std::sync::atomic::{AtomicBool, Ordering};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut tree = MapleTree::<Value>::new();
//! {
//!     // Build in exclusive mode: no readers yet, no copy-on-write.
//!     let mut w = tree.exclusive();
//!     for i in 0..1000u64 {
//!         w.store_range(i * 10..=i * 10 + 5, Value::new(i))?;
//!     }
//!     assert_eq!(w.load(42), Some(Value::new(4)));
//! }
//!
//! let tree = &tree; // from here on, shared: readers on threads, writes through the lock
//! let done = AtomicBool::new(false);
//! std::thread::scope(|s| -> Result<(), maple_tree::Error> {
//!     let reader = s.spawn(|| {
//!         let mut lookups = 0u64;
//!         while !done.load(Ordering::Acquire) || lookups == 0 {
//!             let guard = tree.pin(); // explicit guard: borrows live while it does
//!             for i in (0..10_000u64).step_by(7) {
//!                 // Old entry or new one, never anything else: here, i / 10 or nothing.
//!                 if let Some(v) = tree.load(i, &guard) {
//!                     assert_eq!(v.get(), i / 10);
//!                 }
//!                 lookups += 1;
//!             }
//!             let starts: Vec<u64> = tree.iter(&guard).map(|(r, _)| *r.start()).collect();
//!             assert!(starts.windows(2).all(|w| w[0] < w[1]));
//!         }
//!         lookups
//!     });
//!     // The writer: one-call writes (each takes the lock) ...
//!     for i in (0..1000u64).step_by(3) {
//!         tree.erase_range(i * 10..=i * 10 + 5)?;
//!         tree.store_range(i * 10..=i * 10 + 5, Value::new(i))?;
//!     }
//!     // ... or several under one acquisition.
//!     let mut w = tree.lock();
//!     for i in (1..1000u64).step_by(3) {
//!         w.erase(i * 10);
//!         w.insert_range(i * 10..=i * 10 + 5, Value::new(i))?;
//!     }
//!     drop(w);
//!     done.store(true, Ordering::Release);
//!     assert!(reader.join().expect("the reader panicked") > 0);
//!     Ok(())
//! })?;
//! // Pin-for-you reads: no guard to manage, owned results.
//! assert_eq!(tree.get(9995), Some(Value::new(999)));
//! assert_eq!(tree.count(), 1000);
//! tree.validate()?;
//! # Ok(())
//! # }
//! ```
//!
//! For `Arc` sharing (`Arc<MapleTree<E>>`) the tree is `Send + Sync` when `E: Send + Sync`.
//! Guards come from the tree's collector ([`MapleTree::pin`], or a reader's
//! [`ReadHandle`]; crossbeam's default collector unless [`Options::collector`] names another,
//! or without std one of the tree's own).
//! [`Guard`] and [`Collector`] are crossbeam-epoch's, re-exported. Everything RCU-mode writes
//! retire waits for the guards pinned before: [`MapleTree::pending_frees`] reports how many
//! nodes and entries (and their bytes) a long-pinned guard is holding back (retired nodes go to
//! the collector 32 at a time, one deferred free per batch; `pending_frees` hands a partial
//! batch on). A released entry is dropped after its grace period by whichever thread runs the
//! deferred drop, which may be a writer of any tree in the middle of its write (RCU-mode
//! writers make the collector collect once they have deferred 64 frees, so that frees never
//! pile up); a panic in it is caught there (with std). Entry drops never run while their thread holds a
//! writer lock: a drop the collector runs on such a thread waits until the thread has released
//! its last writer lock (before the write call returns), so an entry's `Drop` may read or
//! write any tree, its own included. Dropping a tree, or an exclusive-mode write, drops every
//! entry it removes even if one `Drop` panics, then the first panic goes on; a `Clone` that
//! panics in [`MapleTree::dup`] leaves no clone behind.
//!
//! ## Without std (kernels, hypervisors)
//!
//! With the default feature `std` off the crate is `#![no_std]` + `alloc`, and every tree API
//! works on a global allocator alone (64-bit targets, and 32-bit ones such as
//! `riscv32imac-unknown-none-elf`, where 64-bit atomics come from portable-atomic and are
//! lock-based). What differs:
//!
//! - each tree has a collector of its own (crossbeam-epoch's default one lives in a
//!   thread-local); readers [`register`](MapleTree::register) once per thread or CPU and pin
//!   through their [`ReadHandle`]. [`MapleTree::pin`] and the pin-for-you calls still work,
//!   registering a handle per call (correct, but an allocation each time);
//! - the writer lock is a spin lock (a sleeping lock, if wanted, goes around `tree.lock()`);
//! - an entry drop the collector runs while its tree's writer lock is held waits, queued on the
//!   tree, until the lock is let go (with std: per thread, across trees);
//! - panics cannot be caught: what the std build would still drop after a panicking `Drop` or
//!   `Clone` leaks;
//! - no spare-chunk cache, no huge pages ([`Options::huge_pages`] is ignored).
//!
//! ```
//! use maple_tree::{MapleTree, Value};
//!
//! let tree = MapleTree::<Value>::new();
//! tree.store(7, Value::new(1)).unwrap();
//! let reader = tree.register(); // once per CPU or thread
//! let guard = reader.pin();
//! assert_eq!(tree.load(7, &guard), Some(Value::new(1)));
//! ```
//!
//! ## Features
//!
//! Its dependencies are crossbeam-epoch, crossbeam-utils, smallvec, (with `std`, on Linux)
//! libc, and (on targets without 64-bit atomics) portable-atomic.
//!
//! - `std` (default): the standard library: crossbeam's default collector and its thread-local
//!   handles, std's mutex, per-thread writer bookkeeping, caught panics, huge pages. Off: see
//!   [without std](#without-std-kernels-hypervisors).
//! - `serde`: `Serialize`/`Deserialize` for [`MapleTree`] and [`Value`] (see the `snapshot` module).
//! - `bench-internals`: experiment switches for the benchmarks and the kernel-patch
//!   demonstration (`MapleTree::set_append`, `set_three_way_append`, `set_leaf_split`: the
//!   kernel's store paths before its append patches). Not part of the stable API.
//! - `loom`: builds the tree on loom's atomics and locks for the loom models (with
//!   `RUSTFLAGS="--cfg loom --cfg crossbeam_loom"`; see `loom-tests/`). Never for a normal
//!   build: an optional dependency, so that a dependent's lockfile does not hold loom.
//!
//! ## Verification
//!
//! `unsafe` is confined to the node layer (`tree/node.rs` and the files of `tree/node/`) and
//! the entry words (`entry.rs`), each block with a `// SAFETY:` comment; the algorithms above
//! them are safe code. The concurrency contract is checked by loom
//! models of readers against every write path (`loom-tests/`), a real-thread stress test
//! (`tests/stress.rs`, small enough to run under Miri and TSan), differential property tests
//! against a `BTreeMap` model, and cargo-fuzz targets whose corpora `cargo test` replays. See the
//! README for the commands.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// `no_std` + `alloc` without the `std` feature (the tests always have std: they run on a host).
#![cfg_attr(not(any(feature = "std", test)), no_std)]
// `unsafe` lives in two layers only, each allowed where it is declared: `entry` (entry words)
// and `tree::node` (raw nodes, the root, the publication protocol, the node slab).
#![deny(unsafe_code)]

extern crate alloc;

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[allow(unsafe_code)]
pub mod entry;
mod error;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_knobs;
pub mod migration;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod snapshot;
mod sync;
pub mod tree;

pub use crossbeam_epoch::{Collector, Guard};
pub use entry::{Entry, Value};
pub use error::{Error, ValidateError};
pub use tree::{
    Cursor, CursorMut, Erased, Gaps, IdAllocator, Iter, MapleTree, Options, PendingFrees,
    ReadHandle, Stats, Status, TreeGuard, WriteGuard,
};
