//! The maple tree: an RCU-safe B-tree of non-overlapping inclusive `u64` ranges.
//!
//! Module map, from the bottom (the only `unsafe` of the tree is in `node`, and of the crate
//! besides in `entry`: the crate denies `unsafe_code` and allows it on those two modules
//! alone; no two modules import each other in a circle, `scripts/import-cycles.py`):
//! - `node/`: raw 256-byte nodes, the root with the writer lock, the publication protocol and
//!   its typed handles (`RootRef`, `WriterRoot<M>` with the write modes `Rcu`/`Exclusive`,
//!   `NodeRef` for readers, `Live` for the writer, `Fresh`, `Unlinked`, `Loaded`, `Slot`,
//!   `SavedNodes`; the readers' handles branded by the tree's entry type, so that a loaded
//!   word is read as an entry without naming it), one concern per file, with the tree's own
//!   node allocator (`node/slab`);
//! - `pending`, `seal`: counters of retired memory; the seals that force copy-on-write;
//! - `walk`: lock-free reader walks (load, the path-keeping `Walker` used by iterators,
//!   cursors and the writer); `iter`: iteration;
//! - `state`: the writer's private state;
//! - `write/`: the write guard, the primitives every write path shares, and in its folder
//!   every write path (`exact_fit`, `append`, `slot_store`, `node_store`, `append_split`,
//!   `rebuild` with `split` and `rebalance`, `spanning`), `store`, which classifies a store and
//!   sends it down one of them, and the item buffer and paths they share (`big_node`, `path`);
//! - `gap/`: gap sizes and `empty_area` searches, the writer's allocations (`gap/alloc`) and
//!   the tree's searches and one-call allocations (`gap/tree_api`);
//! - `cursor/` (the kernel's `ma_state`), `dup`, `validate`, `dump`, `erased`;
//! - the façade: this module (the tree, its options and constructors), `read` (the reads),
//!   `one_call` (the one-call writes), `api` (the std conventions), `conveniences`;
//!   `allocator` and `id_allocator` are built on the façade.
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

mod allocator;
mod api;
mod bounds;
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
mod one_call;
mod pending;
mod read;
mod seal;
mod state;
mod validate;
mod walk;
mod write;

use alloc::sync::Arc;
use core::marker::PhantomData;
use core::sync::atomic::AtomicUsize as StdAtomicUsize;

use crossbeam_epoch::{Collector, Guard, LocalHandle};

use crate::entry::Entry;
use node::{Kind, Read, RootRef};
use state::{StateRef, WriterState};

pub use crate::error::ValidateError;
pub use allocator::{Allocator, Placement};
pub use api::Gaps;
pub use bounds::inclusive;
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
    /// thread-local handles), or without std (no default collector) a new one of the tree's
    /// own. Give each loom model or leak-counting test its own.
    pub collector: Option<Collector>,
    /// Once the tree has more than 1,024 nodes (256 KiB), take its further nodes from 2 MiB
    /// chunks advised `MADV_HUGEPAGE`, so that lookups in a big tree miss the TLB less (Linux,
    /// with transparent huge pages in `madvise` or `always` mode; elsewhere ordinary pages).
    /// A 2 MiB chunk goes back to the allocator only once all its nodes are free. A std
    /// feature: without std no huge chunks are taken.
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
    pub(crate) root: node::Root<WriterState<E>, E>,
    /// Internal node kind: `ARange` for allocation trees, else `Range`.
    pub(crate) internal: Kind,
    /// Ranges holding an entry or the zero entry, kept by the writer; read lock-free.
    /// A std atomic even under loom: a statistic no model reasons about.
    pub(crate) len: StdAtomicUsize,
    /// Retired nodes and entries whose deferred free has not run yet (made by the first
    /// RCU-mode write).
    pub(crate) pending: pending::LazyPending,
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
type FreeAll<E> = fn(&mut node::Root<WriterState<E>, E>);

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
    #[inline]
    pub fn with_options(opts: Options) -> Self {
        let (collector, default_collector) = match opts.collector {
            Some(c) => (c, false),
            #[cfg(feature = "std")]
            None => (crossbeam_epoch::default_collector().clone(), true),
            // Without std there is no default collector (it lives in a thread-local): a
            // collector of the tree's own.
            #[cfg(not(feature = "std"))]
            None => (Collector::new(), false),
        };
        let internal = if opts.alloc {
            Kind::ARange
        } else {
            Kind::Range
        };
        MapleTree {
            root: node::Root::new(internal, collector, default_collector, opts.huge_pages),
            internal,
            len: StdAtomicUsize::new(0),
            pending: pending::LazyPending::default(),
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
    ///
    /// With std, on crossbeam's default collector, this pins through the thread's own handle
    /// (a thread-local). Without std (or with a collector of the tree's own) there is no
    /// thread-local handle: each call registers a handle for this guard alone, which is
    /// correct but costs an allocation and a registration; a reader that pins often should
    /// [`register`](Self::register) once and pin through its [`ReadHandle`].
    pub fn pin(&self) -> TreeGuard<'_> {
        TreeGuard {
            guard: self.root.pin(),
            _tree: PhantomData,
        }
    }

    /// Registers a reader with this tree's collector: a [`ReadHandle`] for this thread (it is
    /// neither `Send` nor `Sync`), whose [`pin`](ReadHandle::pin) gives the same guards as
    /// [`MapleTree::pin`], without a registration per guard. For readers on a system without
    /// std (a kernel's or a hypervisor's CPUs, see the crate docs' "Without std"), where
    /// `MapleTree::pin` has no thread-local handle to use; with std it works as well, and pins
    /// as fast as `MapleTree::pin` on the default collector.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// let reader = tree.register(); // once per thread (or per CPU)
    /// for _ in 0..3 {
    ///     let guard = reader.pin();
    ///     assert_eq!(tree.load(15, &guard), Some(Value::new(1)));
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn register(&self) -> ReadHandle<'_> {
        ReadHandle {
            handle: self.root.collector().register(),
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
    pub(crate) fn reader<'g>(&'g self, guard: &'g Guard) -> RootRef<'g, Read, E> {
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
            self.pending.get(),
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
        // reader exists): no longer pending. (Queued nodes were counted, so the counters are
        // made; none queued, nothing to count.)
        let mut x = root.exclusive();
        let queued = x.queued_nodes();
        if queued != 0 {
            if let Some(p) = pending.made() {
                p.sub_nodes(queued);
            }
        }
        // `&mut` tree: no reader exists, none can hold a value an earlier store replaced.
        x.seals.clear();
        // Exclusive-mode writes never count pending frees: the guard holds the placeholder.
        let counters = pending.for_exclusive();
        WriteGuard::from_parts(StateRef::Exclusive(x), *internal, None, len, counters)
    }
}

impl<E> Drop for MapleTree<E> {
    fn drop(&mut self) {
        // `free_all` is `free_tree::<E>` (set by `with_options`, the only constructor);
        // `&mut self`: no reader or writer can reach the tree any more.
        (self.free_all)(&mut self.root);
    }
}

/// Frees a whole tree of `E` (see [`node::Root::free_all`]) with its ledger of shared words
/// (in place: the tree is being dropped, so no empty ledger is made to take its place).
fn free_tree<E: Entry>(root: &mut node::Root<WriterState<E>, E>) {
    root.free_all(|s| &mut s.ledger);
}

#[cfg(test)]
mod tests;

/// A pinned guard of a tree's collector, from [`MapleTree::pin`] or [`ReadHandle::pin`]; derefs to crossbeam's
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

/// A reader's handle on a tree's collector, from [`MapleTree::register`]: pins guards of the
/// tree without registering anything per guard. Neither `Send` nor `Sync` (it is one thread's,
/// or one CPU's with interrupts or preemption kept off while a guard of it lives), and it
/// borrows the tree, so it cannot outlive it.
///
/// ```compile_fail
/// use maple_tree::{MapleTree, Value};
///
/// let tree = MapleTree::<Value>::new();
/// let reader = tree.register();
/// std::thread::scope(|s| {
///     s.spawn(move || drop(reader.pin())); // error: `ReadHandle` is not `Send`
/// });
/// ```
pub struct ReadHandle<'t> {
    handle: LocalHandle,
    _tree: PhantomData<&'t ()>,
}

impl ReadHandle<'_> {
    /// Pins a guard of the tree's collector through this handle: the same guard as
    /// [`MapleTree::pin`]'s, borrowed from the handle. Pinning again while a guard of the
    /// handle lives is allowed (the guards nest).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// let tree = MapleTree::<Value>::new();
    /// tree.store(5, Value::new(1)).unwrap();
    /// let reader = tree.register();
    /// let guard = reader.pin();
    /// let inner = reader.pin();
    /// assert_eq!(tree.load(5, &guard), tree.load(5, &inner));
    /// ```
    pub fn pin(&self) -> TreeGuard<'_> {
        TreeGuard {
            guard: self.handle.pin(),
            _tree: PhantomData,
        }
    }
}

impl core::fmt::Debug for ReadHandle<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReadHandle").finish_non_exhaustive()
    }
}

impl core::fmt::Debug for TreeGuard<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TreeGuard").finish_non_exhaustive()
    }
}
