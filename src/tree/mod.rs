//! The maple tree: an RCU-safe B-tree of non-overlapping inclusive `u64` ranges.
//!
//! Module map, from the bottom (each module imports only modules listed above it; the only
//! `unsafe` of the tree is in `node` (and its `slab`), and of the crate besides in `entry`: the
//! crate denies `unsafe_code` and allows it on those two modules alone):
//! - `node`: raw 256-byte nodes, the root with the writer lock, the publication protocol and
//!   its typed handles (`RootRef`, `WriterRoot<M>` with the write modes `Rcu`/`Exclusive`,
//!   `NodeRef` for readers, `Live` for the writer, `Fresh`, `Unlinked`, `Loaded`, `Slot`,
//!   `SavedNodes`), and its `node::slab`: the tree's own node allocator (`NodeMem`);
//! - `pending`, `seal`: counters of retired memory; the seals that force copy-on-write;
//! - `walk`: lock-free reader walks (load, the path-keeping `Walker` used by iterators,
//!   cursors and the writer); `iter`: iteration; `gap`: gap sizes and `empty_area` searches;
//! - `big_node`, `path`, `state`: the item buffer and leaf image of a write, its paths, the
//!   writer's private state;
//! - `write`: the write guard and the primitives every write path shares;
//! - the write paths, one per module: `exact_fit`, `append`, `slot_store`, `node_store`,
//!   `append_split`, `rebuild` (with `split` and `rebalance`), `spanning`; and `store`, which
//!   classifies a store and sends it down one of them;
//! - `alloc` (the writer's allocations), `cursor` (the kernel's `ma_state`), `dup`,
//!   `validate`, `dump`;
//! - the façade: this module and `api`; `allocator` is built on the façade.
//!
//! The crate-level documentation is the guide (the tree, cursors, gap search and allocation,
//! concurrency). In one example: several writes under one acquisition of the writer lock, read
//! back through the writer, then by a lock-free reader.
//!
//! ```
//! use maple_tree::{MapleTree, Value};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tree = MapleTree::<Value>::new_alloc();
//! let mut w = tree.lock(); // RCU mode: readers may run meanwhile
//! w.store_range(0..=9, Value::new(1))?;
//! let at = w.alloc_range(0..=100, 5, Value::new(2))?;
//! assert_eq!(at, 10..=14);
//! assert_eq!(w.load(12), Some(Value::new(2)));
//! drop(w); // the one-call methods and `validate` take the lock: drop the guard first
//! let guard = tree.pin();
//! assert_eq!(tree.load_range(14, &guard).map(|(r, _)| r), Some(10..=14));
//! tree.validate()?;
//! # Ok(())
//! # }
//! ```

mod alloc;
mod allocator;
mod api;
mod conveniences;
mod cursor;
mod dump;
mod dup;
mod erased;
mod gap;
mod id_allocator;
mod iter;
#[allow(unsafe_code)] // the raw layer: see the module map above
pub(crate) mod node;
mod pending;
mod seal;
mod state;
mod validate;
mod walk;
mod write;

use core::marker::PhantomData;
use core::ops::{RangeBounds, RangeInclusive};
use core::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::Arc;

use crossbeam_epoch::{Collector, Guard};

use crate::entry::Entry;
use node::{Kind, RootRef};
use state::{StateRef, WriterState};

pub use crate::error::ValidateError;
pub use allocator::{Allocator, Placement};
pub use api::{inclusive, Gaps};
pub use conveniences::IntoIter;
pub use cursor::{Cursor, CursorMut, Status};
pub use erased::Erased;
pub use id_allocator::IdAllocator;
pub use iter::Iter;
pub use pending::PendingFrees;
pub use state::Stats;
pub use write::WriteGuard;

/// Options fixed when a tree is created.
///
/// Build them with [`Options::new`] and the builder methods:
///
/// ```
/// use maple_tree::{MapleTree, Options, Value};
///
/// let tree = MapleTree::<Value>::with_options(Options::new().alloc(true));
/// assert!(tree.is_alloc());
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Options {
    /// Track gaps in internal nodes (`MT_FLAGS_ALLOC_RANGE`): needed for allocation, makes gap
    /// search `O(log n)`; internal nodes then have 10 slots instead of 16.
    pub alloc: bool,
    /// The epoch collector readers and the writer pin; `None` uses crossbeam's default (fast,
    /// thread-local handles). Give each loom model or leak-counting test its own.
    pub collector: Option<Collector>,
    /// Once the tree has more than 1,024 nodes (256 KiB), take its further nodes from 2 MiB
    /// chunks advised `MADV_HUGEPAGE`, so that lookups in a big tree miss the TLB less (Linux,
    /// with transparent huge pages in `madvise` or `always` mode; elsewhere ordinary pages).
    /// A 2 MiB chunk goes back to the allocator only once all its nodes are free.
    pub huge_pages: bool,
}

impl Options {
    /// The default options: a range tree (no gap tracking) on crossbeam's default collector.
    ///
    /// ```
    /// use maple_tree::Options;
    ///
    /// let opts = Options::new();
    /// assert!(!opts.alloc && opts.collector.is_none() && !opts.huge_pages);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`Options::alloc`]: track gaps in internal nodes (an allocation tree).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Options, Value};
    ///
    /// let tree = MapleTree::<Value>::with_options(Options::new().alloc(true));
    /// assert!(tree.is_alloc());
    /// ```
    pub fn alloc(mut self, on: bool) -> Self {
        self.alloc = on;
        self
    }

    /// Sets [`Options::collector`]: the epoch collector the tree's readers and writer pin.
    ///
    /// ```
    /// use maple_tree::{Collector, MapleTree, Options, Value};
    ///
    /// let collector = Collector::new();
    /// let tree = MapleTree::<Value>::with_options(Options::new().collector(collector.clone()));
    /// assert!(*tree.collector() == collector);
    /// ```
    pub fn collector(mut self, collector: Collector) -> Self {
        self.collector = Some(collector);
        self
    }

    /// Sets [`Options::huge_pages`]: a big tree's nodes in huge-page chunks.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Options, Value};
    ///
    /// let tree = MapleTree::<Value>::with_options(Options::new().alloc(true).huge_pages(true));
    /// for i in 0..100_000u64 {
    ///     tree.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
    /// }
    /// assert_eq!(tree.get(10 * 77_777 + 3), Some(Value::new(77_777)));
    /// ```
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = on;
        self
    }
}

/// An RCU-safe maple tree mapping non-overlapping inclusive ranges of `u64` to entries.
///
/// Readers never lock and never allocate: they pin an epoch guard, walk, and restart from the root
/// if they meet a replaced node. Writers are serialised by the tree's own lock ([`MapleTree::lock`])
/// or by `&mut self` ([`MapleTree::exclusive`]), which may write in place and free at once.
///
/// ```
/// use maple_tree::{MapleTree, Value};
///
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Value>::new();
/// tree.store_range(0x1000..=0x1fff, Value::new(1))?;
/// tree.store_range(0x3000..=0x3fff, Value::new(3))?;
/// assert_eq!(tree.get(0x1800), Some(Value::new(1)));
/// assert_eq!(tree.get(0x2000), None);
///
/// // Overwrite across both ranges: neighbours are trimmed.
/// tree.store_range(0x1800..=0x37ff, Value::new(2))?;
/// let guard = tree.pin();
/// let ranges: Vec<_> = tree.iter(&guard).map(|(r, v)| (r, v.get())).collect();
/// assert_eq!(ranges, [(0x1000..=0x17ff, 1), (0x1800..=0x37ff, 2), (0x3800..=0x3fff, 3)]);
/// # Ok(())
/// # }
/// ```
pub struct MapleTree<E> {
    /// Root node word (0: empty) and the collector protecting the nodes.
    pub(crate) root: node::Root<WriterState<E>>,
    /// Internal node kind: `ARange` for allocation trees, else `Range`.
    pub(crate) internal: Kind,
    /// Ranges holding an entry or the zero entry, kept by the writer; read lock-free.
    /// A std atomic even under loom: a statistic no model reasons about.
    pub(crate) len: StdAtomicUsize,
    /// Retired nodes and entries whose deferred free has not run yet.
    pub(crate) pending: Arc<pending::Pending>,
    /// Frees a whole tree of `E` entries at once (`free_tree::<E>`), set where `E:
    /// Entry` is known so that the struct and its `Drop` need no bound.
    free_all: FreeAll<E>,
    /// The tree owns its entries (moved in, dropped on any thread that writes or drops the
    /// tree, or collects its garbage: `Send`) and hands out shared borrows of them to readers on
    /// any thread (`Sync`); so the tree is `Send` and `Sync` exactly when `E` is both, which is
    /// what `Arc<E>` is. Every other field is `Send + Sync`: nodes are only reached through
    /// atomics and reclaimed through the epoch collector.
    _entries: PhantomData<Arc<E>>,
}

/// See [`MapleTree::free_all`].
type FreeAll<E> = fn(&mut node::Root<WriterState<E>>);

impl<E: Entry> Default for MapleTree<E> {
    fn default() -> Self {
        Self::with_options(Options::default())
    }
}

impl<E: Entry> MapleTree<E> {
    /// An empty range tree (internal nodes without gap tracking, 16 slots).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// let tree = MapleTree::<Value>::new();
    /// assert!(tree.is_empty());
    /// assert!(!tree.is_alloc());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty allocation tree (`MT_FLAGS_ALLOC_RANGE`): gap-tracking internal nodes, required
    /// by [`WriteGuard::alloc_range`] and friends, and `O(log n)` gap search.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let ids = MapleTree::<Value>::new_alloc();
    /// assert_eq!(ids.alloc_range(0..=99, 10, Value::new(1))?, 0..=9);
    ///
    /// let plain = MapleTree::<Value>::new();
    /// assert_eq!(plain.alloc_range(0..=99, 10, Value::new(1)), Err(Error::NotAllocTree));
    /// # Ok(())
    /// # }
    /// ```
    pub fn new_alloc() -> Self {
        Self::with_options(Options::new().alloc(true))
    }

    /// An empty tree with the given options.
    ///
    /// ```
    /// use maple_tree::{Collector, MapleTree, Options, Value};
    ///
    /// let collector = Collector::new();
    /// let tree = MapleTree::<Value>::with_options(Options::new().alloc(true).collector(collector));
    /// assert!(tree.is_alloc());
    /// ```
    pub fn with_options(opts: Options) -> Self {
        let (collector, default_collector) = match opts.collector {
            Some(c) => (c, false),
            None => (crossbeam_epoch::default_collector().clone(), true),
        };
        let internal = if opts.alloc {
            Kind::ARange
        } else {
            Kind::Range
        };
        MapleTree {
            root: node::Root::new(
                internal,
                collector,
                default_collector,
                opts.huge_pages,
                WriterState::new(),
            ),
            internal,
            len: StdAtomicUsize::new(0),
            pending: Arc::new(pending::Pending::default()),
            free_all: free_tree::<E>,
            _entries: PhantomData,
        }
    }

    /// Whether this is an allocation tree.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// assert!(MapleTree::<Value>::new_alloc().is_alloc());
    /// assert!(!MapleTree::<Value>::new().is_alloc());
    /// ```
    pub fn is_alloc(&self) -> bool {
        self.internal == Kind::ARange
    }

    /// The collector this tree's guards must come from.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store(5, Value::new(1))?;
    /// // A guard pinned through a handle of the tree's collector does as well as `tree.pin()`.
    /// let handle = tree.collector().register();
    /// let guard = handle.pin();
    /// assert_eq!(tree.load(5, &guard), Some(Value::new(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn collector(&self) -> &Collector {
        self.root.collector()
    }

    /// Pins a guard of this tree's collector: the explicit-guard read API takes it (a
    /// `&TreeGuard` is a `&Guard` by deref), and everything read through it stays valid until
    /// it is dropped. The guard borrows the tree, so the tree cannot be dropped while it lives:
    /// with a collector of the tree's own ([`Options::collector`]), the guard may hold the
    /// last reference to that collector, and crossbeam-epoch 0.9.21 frees the collector from
    /// inside the guard's drop in a way Miri rejects (a protected `&Local` outliving its
    /// allocation); the borrow rules that sequence out.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// let tree = MapleTree::new();
    /// tree.store_range(10..=19, Value::new(1)).unwrap();
    /// let guard = tree.pin();
    /// assert_eq!(tree.load(15, &guard), Some(Value::new(1)));
    /// ```
    pub fn pin(&self) -> TreeGuard<'_> {
        TreeGuard {
            guard: self.root.pin(),
            _tree: PhantomData,
        }
    }

    /// The reader view of the root under `guard`. Every explicit-guard read checks this way,
    /// in every profile, that the guard is pinned on this tree's collector (as
    /// crossbeam-skiplist's `check_guard` does): a guard of another collector, or crossbeam's
    /// unprotected guard, would not hold back this tree's frees.
    ///
    /// # Panics
    ///
    /// On a guard that is not from [`MapleTree::pin`] (or this tree's collector).
    #[inline]
    pub(crate) fn reader<'g>(&'g self, guard: &'g Guard) -> RootRef<'g> {
        self.root.reader(guard)
    }

    /// Number of levels (0 for an empty tree, 1 for a single leaf). Takes the writer lock.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// assert_eq!(tree.height(), 0);
    /// tree.store_range(0..=9, Value::new(1))?;
    /// assert_eq!(tree.height(), 1); // one leaf
    /// for i in 1..100 {
    ///     tree.store(i * 10, Value::new(i))?;
    /// }
    /// assert!(tree.height() > 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn height(&self) -> usize {
        self.root.lock().height
    }

    /// Per-path write counters since creation, and the readers' restarts. Takes the writer lock.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store_range(0..=9, Value::new(2))?; // same range: replaced in place
    /// let stats = tree.stats();
    /// assert_eq!(stats.exact_fit, 1);
    /// assert!(stats.nodes_allocated >= 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> Stats {
        let mut s = self.root.lock().stats;
        s.reader_restarts = self.root.restarts();
        s
    }

    /// Turns the in-place appends on or off (the switch of the three-way append patch, for
    /// benchmarks and tests). When
    /// off, writes that would append rebuild the leaf as a node store, as the kernel did before
    /// the three-way append patch. Only with the `bench-internals` feature: an experiment knob,
    /// not part of the kernel's API.
    #[cfg(feature = "bench-internals")]
    pub fn set_append(&self, on: bool) {
        self.root.lock().append = on;
    }

    /// Turns the three-way append alone on or off (for the seeds demo and tests): off, a range
    /// strictly inside the leaf's last range is written by a node store, as the kernel did
    /// before "maple_tree: optimize mas_wr_append(), also improve duplicating VMAs"; the `+1`
    /// appends and the append split stay. Only with the `bench-internals` feature.
    #[cfg(feature = "bench-internals")]
    pub fn set_three_way_append(&self, on: bool) {
        self.root.lock().three_way = on;
    }

    /// Turns the direct leaf split on or off (for benchmarks and tests). When off, every split
    /// goes through the generic rebuild, which leaves the same tree with more work; the two
    /// are compared node for node by the tests. Only with the `bench-internals` feature.
    #[cfg(feature = "bench-internals")]
    pub fn set_leaf_split(&self, on: bool) {
        self.root.lock().leaf_split = on;
    }

    /// Takes the writer lock for RCU-mode writes: concurrent readers stay correct; replaced nodes
    /// and entries are freed after a grace period.
    ///
    /// The lock is not reentrant: while a thread holds the guard, it writes, validates and dumps
    /// through the guard ([`WriteGuard::height`], [`WriteGuard::validate`],
    /// [`WriteGuard::dump`]); the tree's own writing methods and its `height`, `stats`,
    /// `validate` and `dump` take the lock again and would wait for ever.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// w.store_range(10..=19, Value::new(2))?;
    /// assert_eq!(w.load(15), Some(Value::new(2))); // the writer sees its own writes
    /// drop(w); // release the lock before calling the tree's own writing methods
    /// assert_eq!(tree.get(5), Some(Value::new(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn lock(&self) -> WriteGuard<'_, E> {
        let lock = self.root.lock();
        WriteGuard::from_parts(
            StateRef::Locked(lock),
            self.internal,
            Some(core::cell::OnceCell::new()),
            &self.len,
            &self.pending,
        )
    }

    /// Exclusive-mode writes: no reader can exist, so nodes are rewritten in place and anything
    /// removed is freed at once (the kernel's non-RCU mode).
    ///
    /// ```
    /// use maple_tree::MapleTree;
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let mut tree = MapleTree::<Box<String>>::new();
    /// let mut w = tree.exclusive();
    /// w.store_range(0..=9, Box::new("a".to_string()))?;
    /// // No reader can hold the erased entry: it comes back owned.
    /// let erased = w.erase(5).and_then(|e| e.into_entry().ok().flatten());
    /// assert_eq!(erased.as_deref().map(String::as_str), Some("a"));
    /// assert!(w.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn exclusive(&mut self) -> WriteGuard<'_, E> {
        let MapleTree {
            root,
            internal,
            len,
            pending,
            ..
        } = self;
        // The nodes RCU-mode writes queued are freed at once by the exclusive writer (no
        // reader exists): no longer pending.
        pending.sub_nodes(root.queued_nodes());
        let mut x = root.exclusive();
        // `&mut` tree: no reader exists, none can hold a value an earlier store replaced.
        x.seals.clear();
        WriteGuard::from_parts(StateRef::Exclusive(x), *internal, None, len, pending)
    }

    // ----- explicit-guard reads ----------------------------------------------------------------

    /// The entry at `index` (`mtree_load`). The zero entry reads as `None`.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::MapleTree;
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Box<String>>::new();
    /// tree.store_range(10..=19, Box::new("ten".to_string()))?;
    /// let guard = tree.pin();
    /// let s: &String = tree.load(15, &guard).unwrap(); // borrowed for as long as `guard` lives
    /// assert_eq!(s, "ten");
    /// assert_eq!(tree.load(20, &guard), None);
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn load<'g>(&'g self, index: u64, guard: &'g Guard) -> Option<E::Borrowed<'g>> {
        // Read under `guard`, which keeps the entry alive for 'g (entries are released through
        // the same collector).
        walk::load_word(self.reader(guard), index).entry::<E>()
    }

    /// The range containing `index` and its entry, if any (`mas_walk`, restricted to entries).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// let guard = tree.pin();
    /// assert_eq!(tree.load_range(15, &guard), Some((10..=19, Value::new(1))));
    /// assert_eq!(tree.load_range(20, &guard), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn load_range<'g>(
        &'g self,
        index: u64,
        guard: &'g Guard,
    ) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        let (lo, hi, w) = walk::walk_range(self.reader(guard), index)?;
        w.entry::<E>().map(|b| (lo..=hi, b))
    }

    /// `mt_find`: the first entry whose range contains `*index` or starts in `(*index, max]`;
    /// on success `*index` becomes the found range's `last + 1` (wrapping to 0). `None` leaves
    /// `*index` alone. Zero entries are skipped.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// let mut index = 0;
    /// let mut found = vec![];
    /// while let Some(v) = tree.find(&mut index, u64::MAX, &guard) {
    ///     found.push(v.get());
    /// }
    /// assert_eq!(found, [1, 3]);
    /// assert_eq!(index, 40); // one past the last range found
    /// # Ok(())
    /// # }
    /// ```
    pub fn find<'g>(
        &'g self,
        index: &mut u64,
        max: u64,
        guard: &'g Guard,
    ) -> Option<E::Borrowed<'g>> {
        let root = self.reader(guard);
        if *index > max {
            return None;
        }
        let mut w = walk::Walker::new(root);
        w.walk(*index)?;
        loop {
            if w.lo > max {
                return None;
            }
            if let Some(b) = w.word.entry::<E>() {
                *index = w.hi.wrapping_add(1);
                return Some(b);
            }
            w.next_slot()?;
        }
    }

    /// `mt_find_after`: like [`find`](Self::find) but `None` at once when `*index == 0` (which
    /// is how a wrapped index ends a `find` loop).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=u64::MAX, Value::new(1))?;
    /// let guard = tree.pin();
    /// let mut index = 0;
    /// assert_eq!(tree.find(&mut index, u64::MAX, &guard), Some(Value::new(1)));
    /// assert_eq!(index, 0); // wrapped past u64::MAX: `find` would start over
    /// assert_eq!(tree.find_after(&mut index, u64::MAX, &guard), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn find_after<'g>(
        &'g self,
        index: &mut u64,
        max: u64,
        guard: &'g Guard,
    ) -> Option<E::Borrowed<'g>> {
        if *index == 0 {
            return None;
        }
        self.find(index, max, guard)
    }

    /// `mt_next`: the first entry after the range containing `index` that starts at or below
    /// `max`, with its range. Beside a writer too, the range returned starts after `index`.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// assert_eq!(tree.next(12, u64::MAX, &guard), Some((30..=39, Value::new(3))));
    /// assert_eq!(tree.next(12, 29, &guard), None); // [30, 39] starts above `max`
    /// # Ok(())
    /// # }
    /// ```
    pub fn next<'g>(
        &'g self,
        index: u64,
        max: u64,
        guard: &'g Guard,
    ) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        let mut w = walk::Walker::new(self.reader(guard));
        w.walk(index)?;
        loop {
            w.next_slot()?;
            if w.lo > max {
                return None;
            }
            // Past a replaced node the walker re-walks from the root to the range holding
            // its old end + 1, which may now reach back over `index`: never returned.
            if w.lo <= index && walk::check_rewalk() {
                continue;
            }
            if let Some(b) = w.word.entry::<E>() {
                return Some((w.lo..=w.hi, b));
            }
        }
    }

    /// `mt_prev`: the last entry before the range containing `index` that ends at or above
    /// `min`, with its range. Beside a writer too, the range returned ends before `index`.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// assert_eq!(tree.prev(35, 0, &guard), Some((10..=19, Value::new(1))));
    /// assert_eq!(tree.prev(35, 20, &guard), None); // [10, 19] ends below `min`
    /// # Ok(())
    /// # }
    /// ```
    pub fn prev<'g>(
        &'g self,
        index: u64,
        min: u64,
        guard: &'g Guard,
    ) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        let mut w = walk::Walker::new(self.reader(guard));
        w.walk(index)?;
        loop {
            w.prev_slot()?;
            if w.hi < min {
                return None;
            }
            // As in `next`: a re-walk's range reaching forward over `index` is never returned.
            if w.hi >= index && walk::check_rewalk() {
                continue;
            }
            if let Some(b) = w.word.entry::<E>() {
                return Some((w.lo..=w.hi, b));
            }
        }
    }

    /// Iterates over every `(range, entry)` in index order; double-ended. Zero entries
    /// are skipped. Beside a writer, the front yields strictly increasing ranges and the back
    /// strictly decreasing ones, each a range of some state during the iteration; one iterator
    /// driven from both ends never yields an index twice (each end stops at what the other has
    /// yielded), and a range unchanged for the whole iteration is never skipped.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// let tree: MapleTree<Value> = [(0..=9, Value::new(1)), (20..=29, Value::new(2))]
    ///     .into_iter()
    ///     .collect();
    /// let guard = tree.pin();
    /// let all: Vec<_> = tree.iter(&guard).collect();
    /// assert_eq!(all, [(0..=9, Value::new(1)), (20..=29, Value::new(2))]);
    /// assert_eq!(tree.iter(&guard).next_back(), Some((20..=29, Value::new(2))));
    /// ```
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Iter<'g, E> {
        Iter::new(self.reader(guard), 0, u64::MAX)
    }

    /// Iterates over the entries whose ranges intersect `r`, any range of `u64` (`a..=b`, `a..b`,
    /// `..=b`, `a..`, `..`). Ranges are reported whole, so the first may start before `r` and the
    /// last end after it.
    ///
    /// An empty or inverted `r` (`5..5`, `..0`, `9..=3`) yields nothing: unlike
    /// [`BTreeMap::range`](std::collections::BTreeMap::range) this does not panic. To tell such
    /// a range apart from an empty window, convert it first with
    /// [`inclusive`], which returns
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for it.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..40, Value::new(3))?;
    /// let guard = tree.pin();
    /// let found: Vec<u64> = tree.range(..25, &guard).map(|(r, _)| *r.start()).collect();
    /// assert_eq!(found, [10]);
    /// assert_eq!(tree.range(35.., &guard).count(), 1);
    /// assert_eq!(tree.range(15..15, &guard).count(), 0); // empty: no panic
    /// # Ok(())
    /// # }
    /// ```
    pub fn range<'g>(&'g self, r: impl RangeBounds<u64>, guard: &'g Guard) -> Iter<'g, E> {
        let reader = self.reader(guard);
        match api::inclusive(r) {
            Ok((first, last)) => Iter::new(reader, first, last),
            // `first > last`: an iterator that has ended.
            Err(_) => Iter::new(reader, 1, 0),
        }
    }

    /// A read cursor (`ma_state`) at `index`, in status [`Status::Start`].
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Status, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// let mut c = tree.cursor(0, &guard);
    /// assert_eq!(c.status(), Status::Start);
    /// assert_eq!(c.find(u64::MAX), Some(Value::new(1)));
    /// assert_eq!(c.range(), 10..=19);
    /// assert_eq!(c.next(u64::MAX), Some(Value::new(3)));
    /// assert_eq!(c.range(), 30..=39);
    /// # Ok(())
    /// # }
    /// ```
    pub fn cursor<'g>(&'g self, index: u64, guard: &'g Guard) -> Cursor<'g, E> {
        Cursor::new(self.reader(guard), index)
    }

    // ----- pin-for-you façade ---------------------------------------------------------------------

    /// A clone of the entry at `index` (pins internally). For `Arc` entries this bumps a count;
    /// for [`Value`](crate::Value) it copies.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// assert_eq!(tree.get(19), Some(Value::new(1)));
    /// assert_eq!(tree.get(20), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get(&self, index: u64) -> Option<E>
    where
        E: Clone,
    {
        let guard = self.pin();
        walk::load_word(self.reader(&guard), index).cloned::<E>()
    }

    /// Calls `f` with the entry at `index` (pins internally).
    ///
    /// ```
    /// use maple_tree::MapleTree;
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let names = MapleTree::<Box<String>>::new();
    /// names.store_range(0..=9, Box::new("zero to nine".to_string()))?;
    /// assert_eq!(names.with(5, |s| s.map(|s| s.len())), Some(12));
    /// assert!(names.with(10, |s| s.is_none()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with<R>(&self, index: u64, f: impl FnOnce(Option<E::Borrowed<'_>>) -> R) -> R {
        let guard = self.pin();
        f(self.load(index, &guard))
    }

    /// Whether `index` holds an entry (the zero entry counts as absent, as for `load`).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.lock().store_zero_range(20..=29)?;
    /// assert!(tree.contains(10) && tree.contains(19));
    /// assert!(!tree.contains(25)); // the zero entry
    /// assert!(!tree.contains(30));
    /// # Ok(())
    /// # }
    /// ```
    pub fn contains(&self, index: u64) -> bool {
        let guard = self.pin();
        walk::load_word(self.reader(&guard), index).is_entry()
    }

    /// Number of entries (ranges holding an entry; zero entries not counted). `O(n)`.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store_range(3..=4, Value::new(2))?; // splits [0, 9] in three
    /// tree.lock().store_zero_range(20..=29)?;
    /// assert_eq!(tree.count(), 3);
    /// assert_eq!(tree.len(), 4); // `len` counts the zero entry too
    /// # Ok(())
    /// # }
    /// ```
    pub fn count(&self) -> usize {
        let guard = self.pin();
        self.iter(&guard).count()
    }
}

impl<E: Entry + Send + Sync> MapleTree<E> {
    /// Stores `entry` over the range `r` (`a..=b`, `a..b`, `..=b`, `a..`, `..`), trimming or
    /// removing whatever was there (`mtree_store_range`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for an empty or inverted `r` (`5..5`,
    /// `9..=3`, `..0`; see [`inclusive`]);
    /// [`Error::Reserved`](crate::Error::Reserved) for an entry whose word is reserved (a faulty
    /// [`Entry`] implementation). Nothing is written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0x1000..=0x1fff, Value::new(1))?;
    /// tree.store_range(0x3000..0x4000, Value::new(2))?; // [0x3000, 0x3fff]
    /// assert_eq!(tree.get(0x3fff), Some(Value::new(2)));
    /// assert_eq!(tree.store_range(5..5, Value::new(3)), Err(Error::InvalidRange));
    /// # Ok(())
    /// # }
    /// ```
    pub fn store_range(&self, r: impl RangeBounds<u64>, entry: E) -> Result<(), crate::Error> {
        self.lock().store_range(r, entry)
    }

    /// Stores `entry` at one index (`mtree_store`).
    ///
    /// # Errors
    ///
    /// [`Error::Reserved`](crate::Error::Reserved) for an entry whose word is reserved; nothing is
    /// written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store(5, Value::new(2))?; // splits [0, 9]
    /// let guard = tree.pin();
    /// assert_eq!(tree.load_range(5, &guard), Some((5..=5, Value::new(2))));
    /// assert_eq!(tree.load_range(6, &guard), Some((6..=9, Value::new(1))));
    /// # Ok(())
    /// # }
    /// ```
    pub fn store(&self, index: u64, entry: E) -> Result<(), crate::Error> {
        self.lock().store_range(index..=index, entry)
    }

    /// Stores `entry` over the range `r` only if every index there is empty
    /// (`mtree_insert_range`); otherwise [`Error::Occupied`](crate::Error::Occupied) and
    /// nothing changes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for an empty or inverted `r`,
    /// [`Error::Occupied`](crate::Error::Occupied) if an index of the range holds an entry (the zero
    /// entry included), [`Error::Reserved`](crate::Error::Reserved) for a reserved entry word.
    /// Nothing is written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.insert_range(10..=19, Value::new(1))?;
    /// assert_eq!(tree.insert_range(15..=25, Value::new(2)), Err(Error::Occupied));
    /// assert_eq!(tree.get(25), None); // nothing written
    /// tree.insert_range(20..=25, Value::new(2))?;
    /// assert_eq!(tree.get(25), Some(Value::new(2)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn insert_range(&self, r: impl RangeBounds<u64>, entry: E) -> Result<(), crate::Error> {
        self.lock().insert_range(r, entry)
    }

    /// [`insert_range`](Self::insert_range) of one index.
    ///
    /// # Errors
    ///
    /// As [`insert_range`](Self::insert_range).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.insert(7, Value::new(1))?;
    /// assert_eq!(tree.insert(7, Value::new(2)), Err(Error::Occupied));
    /// assert_eq!(tree.get(7), Some(Value::new(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn insert(&self, index: u64, entry: E) -> Result<(), crate::Error> {
        self.lock().insert_range(index..=index, entry)
    }

    /// Erases the whole range containing `index` (`mtree_erase`) in one walk; returns that
    /// range with its entry if it held one (the zero entry included). Readers may still hold
    /// the entry: [`Erased`] borrows or clones it, and drops it after a grace period.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..20, Value::new(7)).unwrap();
    /// let erased = tree.erase(12).unwrap();
    /// assert_eq!((erased.range(), erased.cloned()), (10..=19, Some(Value::new(7))));
    /// assert!(tree.erase(12).is_none());
    /// ```
    pub fn erase(&self, index: u64) -> Option<Erased<'_, E>> {
        self.lock().erase(index)
    }

    /// Empties the range `r` (a NULL store), trimming entries that stick out.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for an empty or inverted `r` (nothing
    /// is erased).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=99, Value::new(1))?;
    /// tree.erase_range(10..=89)?;
    /// assert_eq!(tree.erase_range(5..5), Err(Error::InvalidRange));
    /// let guard = tree.pin();
    /// let left: Vec<_> = tree.iter(&guard).map(|(r, _)| r).collect();
    /// assert_eq!(left, [0..=9, 90..=99]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn erase_range(&self, r: impl RangeBounds<u64>) -> Result<(), crate::Error> {
        self.lock().erase_range(r)
    }

    /// Empties the whole tree (`mtree_destroy`); the tree stays usable with the same options.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.clear();
    /// assert!(tree.is_empty());
    /// assert!(tree.is_alloc()); // same options
    /// # Ok(())
    /// # }
    /// ```
    pub fn clear(&self) {
        self.lock().clear()
    }

    /// Checks every structural invariant (those of the kernel's `mt_validate`, plus height, parent links, gaps, "no non-rightmost
    /// leaf ends empty" and entry ownership). Takes the writer lock.
    ///
    /// # Errors
    ///
    /// A [`ValidateError`] naming the first broken invariant and where it was found.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// for i in 0..1000 {
    ///     tree.store_range(i * 10..=i * 10 + 4, Value::new(i))?;
    /// }
    /// tree.validate()?; // `?` turns a ValidateError into Error::Invalid
    /// # Ok(())
    /// # }
    /// ```
    pub fn validate(&self) -> Result<(), ValidateError> {
        self.lock().validate()
    }

    /// A text dump of every node (`mt_dump`).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// let text = tree.dump();
    /// assert!(text.starts_with("maple_tree flags range, height 1"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dump(&self) -> String {
        self.lock().dump()
    }

    /// A Graphviz DOT rendering of the tree.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// let dot = tree.dump_dot(); // render with `dot -Tsvg`
    /// assert!(dot.starts_with("digraph"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dump_dot(&self) -> String {
        self.lock().dump_dot()
    }
}

impl<E: Entry + Clone + Send + Sync> MapleTree<E> {
    /// A structural copy (`__mt_dup`): same nodes, same shape, each entry cloned, so that storing
    /// replacement entries over the same ranges afterwards is always an exact fit.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// let copy = tree.dup();
    /// tree.store_range(0..=9, Value::new(2))?; // the copy is independent
    /// assert_eq!(copy.get(5), Some(Value::new(1)));
    /// assert_eq!(copy.height(), tree.height());
    /// # Ok(())
    /// # }
    /// ```
    pub fn dup(&self) -> Self {
        self.lock().dup()
    }
}

impl<E: Entry + Clone> WriteGuard<'_, E> {
    /// A structural copy of the tree (`__mt_dup`): every node copied with the same pivots, gaps
    /// and shape, every entry cloned, so replacing each entry afterwards over the same range is an
    /// exact fit. The copy uses the same options and collector.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// let copy = w.dup();
    /// w.store_range(0..=9, Value::new(2))?;
    /// drop(w);
    /// assert_eq!(copy.get(5), Some(Value::new(1)));
    /// assert_eq!(tree.get(5), Some(Value::new(2)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dup(&self) -> MapleTree<E> {
        let mut opts = Options::new()
            .alloc(self.internal == Kind::ARange)
            .huge_pages(self.huge_pages());
        let view = self.view();
        if !view.is_default_collector() {
            opts = opts.collector(view.collector().clone());
        }
        let mut new = MapleTree::with_options(opts);
        let Some(src) = view.node() else {
            return new;
        };
        let mut count = 0u64;
        {
            // The copy is built and published under `&mut new`: nobody can see it yet.
            let mut x = new.root.exclusive();
            let (dst, _, mem) = x.writer();
            // The copy's nodes in one run of its slab (up to a chunk's worth).
            let st = &self.state().stats;
            let nodes = st.nodes_allocated.saturating_sub(st.nodes_freed);
            mem.reserve(usize::try_from(nodes).unwrap_or(usize::MAX));
            let copy = dup::dup_node::<E>(dst, mem, src, u64::MAX, &mut count);
            let old = dst.publish(copy);
            debug_assert!(old.is_none(), "a new tree has no root to unlink");
        }
        *new.len.get_mut() = self.len();
        let st = new.root.state_mut();
        st.height = self.state().height;
        st.append = self.state().append;
        st.three_way = self.state().three_way;
        st.leaf_split = self.state().leaf_split;
        st.stats.nodes_allocated = count;
        new
    }
}

impl<E> Drop for MapleTree<E> {
    fn drop(&mut self) {
        // `free_all` is `free_tree::<E>` (set by `with_options`, the only constructor);
        // `&mut self`: no reader or writer can reach the tree any more.
        (self.free_all)(&mut self.root);
    }
}

/// Frees a whole tree of `E` (see [`node::Root::free_all`]) with its ledger of shared words.
fn free_tree<E: Entry>(root: &mut node::Root<WriterState<E>>) {
    let mut ledger = core::mem::take(&mut root.state_mut().ledger);
    root.free_all(&mut ledger);
}

#[cfg(test)]
mod tests;

/// A pinned guard of a tree's collector, from [`MapleTree::pin`]; derefs to crossbeam's
/// [`Guard`], which every explicit-guard read takes. It borrows the tree it came from, so it
/// cannot outlive it (see [`MapleTree::pin`] for why).
///
/// ```compile_fail
/// use maple_tree::{MapleTree, Options, Collector, Value};
///
/// let tree = MapleTree::<Value>::with_options(Options::new().collector(Collector::new()));
/// let guard = tree.pin();
/// drop(tree); // error: `tree` is borrowed by `guard`
/// drop(guard);
/// ```
pub struct TreeGuard<'t> {
    guard: Guard,
    _tree: PhantomData<&'t ()>,
}

impl core::ops::Deref for TreeGuard<'_> {
    type Target = Guard;

    fn deref(&self) -> &Guard {
        &self.guard
    }
}

impl core::fmt::Debug for TreeGuard<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TreeGuard").finish_non_exhaustive()
    }
}
