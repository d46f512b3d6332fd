//! The root word, the collector and the writer lock ([`Root`], [`WriterLock`],
//! [`ExclusiveRoot`]), the drop of a whole tree, and the readers' view of the root ([`RootRef`]).

use super::*;
use alloc::boxed::Box;
use alloc::vec::Vec;

/// The tree's root word (row P1), the collector whose guards protect its nodes, the count of
/// reader restarts (a reader that meets a dead node, or a state only a race can produce, walks
/// again from here), and the writer lock with the writer's private state `S`. The root word is
/// loaded and stored in this file only: readers go through a [`RootRef`] made from a guard of
/// this collector ([`Root::reader`]), the writer through a [`WriterRoot`], which only this
/// tree's own lock guard ([`WriterLock::writer`], from [`Root::lock`]) or `&mut` of the tree
/// ([`Root::exclusive`]) makes.
pub(crate) struct Root<S, E> {
    /// On cache lines of its own: every reader loads the root word on every walk, and the
    /// writer's stores beside it (the lock word, the writer state) would take the line from the
    /// reader's cache on every write.
    pub(super) shared: CachePadded<RootWord>,
    /// The writer's side, made by the first writer (see [`LazySide`]).
    pub(super) writer: Mutex<LazySide<S>>,
    /// The brand: the tree's entry type (the module docs, "The brand").
    pub(super) _e: PhantomData<fn() -> E>,
}

/// The writer state and the exclusive mode's retire queue, with the node slab.
pub(super) struct Side<S> {
    pub(super) state: S,
    pub(super) mem: NodeMem,
}

/// What the writer lock guards: the writer's [`Side`], in a box of its own made by the first
/// writer ([`side`](Self::side)), so that a tree is small (cheap to make, move and drop, and a
/// tree never written allocates nothing) while the writer state, which only the writer
/// touches, is as big as it likes.
pub(super) struct LazySide<S> {
    /// The side once made: a box given up by `Box::leak`, owned by this (freed by the
    /// drop), never taken back while the tree lives. A raw pointer rather than a `Box`, so that
    /// the writer lock's holder may keep it ([`WriterLock`]) while the guard is moved around.
    made: Option<NonNull<Side<S>>>,
    /// Take huge-page chunks once big: the slab's option, given to it when the side is made.
    huge: bool,
}

// SAFETY: a `LazySide` owns its `Side` as a `Box` would (nothing else holds the pointer but a
// `WriterLock` borrowing it under the lock): sending it sends the `Side`, sharing it shares the
// `Side`.
unsafe impl<S> Send for LazySide<S> where Side<S>: Send {}
// SAFETY: as for `Send`: through `&LazySide` nothing of the `Side` is reached at all.
unsafe impl<S> Sync for LazySide<S> where Side<S>: Sync {}

impl<S> LazySide<S> {
    /// The side, if a writer made it.
    #[inline]
    fn made_mut(&mut self) -> Option<&mut Side<S>> {
        // SAFETY: `made` is a live box owned by `self` (see `made`); `&mut self` excludes every
        // other access to it (a `WriterLock`'s copy of the pointer lives only while it holds
        // the lock, whose guard borrows `self`).
        self.made.map(|p| unsafe { &mut *p.as_ptr() })
    }
}

impl<S: Default> LazySide<S> {
    /// The side, made now if this is the first writer: the pointer, owned by `self`, stays
    /// valid until `self` is dropped.
    #[inline]
    fn side(&mut self) -> NonNull<Side<S>> {
        match self.made {
            Some(p) => p,
            None => self.make(),
        }
    }

    #[cold]
    #[inline(never)]
    fn make(&mut self) -> NonNull<Side<S>> {
        // Allocated first and written in place (`Box::new` would build the side on the stack
        // and copy it in).
        let mut side = Box::<Side<S>>::new_uninit();
        side.write(Side {
            state: S::default(),
            mem: NodeMem {
                owner: 0,
                nodes: Vec::new(),
                slab: Slab::new(self.huge),
            },
        });
        // SAFETY: written just above.
        let side = unsafe { side.assume_init() };
        let p = NonNull::from(Box::leak(side));
        self.made = Some(p);
        p
    }

    /// The side through `&mut` (made now if need be).
    #[inline]
    fn side_mut(&mut self) -> &mut Side<S> {
        let p = self.side();
        // SAFETY: as in `made_mut`.
        unsafe { &mut *p.as_ptr() }
    }
}

impl<S> Drop for LazySide<S> {
    fn drop(&mut self) {
        if let Some(p) = self.made.take() {
            // SAFETY: the box given up by `make`, dropped once (`take`); `&mut self`: nothing
            // else reaches it.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
    }
}

/// What readers and the writer share: the root word and what protects its nodes.
pub(super) struct RootWord {
    pub(super) word: AtomicUsize,
    pub(super) restarts: AtomicU64,
    /// Nodes retired so far (the writer's own counter: Relaxed): a [`SavedNodes`] is trusted
    /// only while it has not changed. Stored on every retirement, so on a cache line apart from
    /// the root word's.
    pub(super) retired: CachePadded<AtomicU64>,
    pub(super) internal: Kind,
    pub(super) collector: Collector,
    pub(super) default_collector: bool,
    /// Without std: the holders of the writer lock and the entry drops postponed while it is
    /// held (see `PostponedDrop`), shared with the deferred drops.
    #[cfg(not(feature = "std"))]
    pub(super) postponed: alloc::sync::Arc<Postponed>,
}

impl<S, E> Root<S, E> {
    /// An empty root of a tree whose internal nodes are `internal`, protected by `collector`
    /// (`default_collector`: crossbeam's default one, pinned through its thread-local handle),
    /// with the writer state (`S::default()`, made by the first writer) behind the writer
    /// lock; its nodes come from a slab of huge-page chunks once it is big if `huge_pages` (see
    /// `slab`).
    #[inline]
    pub(crate) fn new(
        internal: Kind,
        collector: Collector,
        default_collector: bool,
        huge_pages: bool,
    ) -> Self {
        Root {
            shared: CachePadded::new(RootWord {
                word: AtomicUsize::new(0),
                restarts: AtomicU64::new(0),
                retired: CachePadded::new(AtomicU64::new(0)),
                internal,
                collector,
                default_collector,
                #[cfg(not(feature = "std"))]
                postponed: alloc::sync::Arc::default(),
            }),
            writer: Mutex::new(LazySide {
                made: None,
                huge: huge_pages,
            }),
            _e: PhantomData,
        }
    }

    /// The collector this tree's guards must come from.
    pub(crate) fn collector(&self) -> &Collector {
        &self.shared.collector
    }

    /// Pins a guard of this tree's collector.
    pub(crate) fn pin(&self) -> Guard {
        self.shared.pin()
    }

    /// Checks, in every profile, that `guard` is pinned on this tree's collector (as
    /// crossbeam-skiplist's `check_guard` does): a guard of another collector, or crossbeam's
    /// unprotected guard, would not hold back this tree's frees.
    ///
    /// # Panics
    ///
    /// On a guard of another collector (or the unprotected one).
    #[inline]
    pub(crate) fn check_guard(&self, guard: &Guard) {
        self.shared.check_guard(guard);
    }

    /// A reader's view of the root, for as long as `guard` (checked to be of this tree's
    /// collector) is pinned: every node reached from it stays allocated for `'g`, since nodes
    /// are freed only after every guard pinned before their retirement is gone.
    ///
    /// # Panics
    ///
    /// As [`check_guard`](Self::check_guard).
    #[inline]
    pub(crate) fn reader<'g>(&'g self, guard: &'g Guard) -> RootRef<'g, Read, E> {
        self.check_guard(guard);
        RootRef {
            root: &self.shared,
            internal: self.shared.internal,
            _a: PhantomData,
        }
    }

    /// Takes the tree's writer lock (RCU mode: readers may run meanwhile). The guard derefs to
    /// the writer state; [`WriterLock::writer`] makes the writer's view of the root from it.
    #[inline]
    pub(crate) fn lock(&self) -> WriterLock<'_, S, E>
    where
        S: Default,
    {
        let mut lock = self.writer.lock();
        WriterLock {
            root: &self.shared,
            side: lock.side(),
            _lock: lock,
            _held: WriterHeld::new(&self.shared),
            _e: PhantomData,
        }
    }

    /// [`lock`](Self::lock), if no writer holds it now.
    pub(crate) fn try_lock(&self) -> Option<WriterLock<'_, S, E>>
    where
        S: Default,
    {
        let mut lock = self.writer.try_lock()?;
        Some(WriterLock {
            root: &self.shared,
            side: lock.side(),
            _lock: lock,
            _held: WriterHeld::new(&self.shared),
            _e: PhantomData,
        })
    }

    /// Exclusive mode: `&mut` means no reader exists, so replaced nodes are freed without a
    /// grace period ([`ExclusiveRoot::writer`] makes the writer's view of the root).
    #[inline]
    pub(crate) fn exclusive(&mut self) -> ExclusiveRoot<'_, S, E>
    where
        S: Default,
    {
        ExclusiveRoot {
            root: &self.shared,
            side: self.writer.get_mut().side_mut(),
            _e: PhantomData,
        }
    }

    /// The writer state, through `&mut` (no lock needed).
    pub(crate) fn state_mut(&mut self) -> &mut S
    where
        S: Default,
    {
        &mut self.writer.get_mut().side_mut().state
    }

    /// Frees the whole tree, dropping every entry exactly once (words held by several slots
    /// are counted in the writer state's ledger, which `ledger` picks out, used in place); the
    /// root becomes empty. `&mut`: nothing else can reach a node.
    pub(crate) fn free_all(&mut self, ledger: fn(&mut S) -> &mut Ledger<E>)
    where
        E: Entry,
    {
        let Some(side) = self.writer.get_mut().made_mut() else {
            // No writer made the side: no node was ever published, none allocated.
            debug_assert_eq!(atomic_take(&mut self.shared.word), 0);
            return;
        };
        let mem = &mut side.mem;
        let ledger = ledger(&mut side.state);
        // SAFETY: `&mut self`: no writer borrow and no reader exists.
        unsafe { mem.free() };
        // `&mut`: no reader can reach a node, retired ones included, so the slab's chunks go
        // back whole (`release_all`), and the tree is walked only for entries to drop. A slab
        // of one box per node (loom, `maple_tree_box_nodes`) has its nodes freed on the walk.
        let chunked = !cfg!(any(loom, maple_tree_box_nodes));
        let internal = self.shared.internal;
        let w = atomic_take(&mut self.shared.word);
        // An entry's `Drop` may panic: as `Vec` and `BTreeMap` do, the other entries are still
        // dropped (once each) and every node freed, then the first panic goes on.
        let mut panic = None;
        if w != 0 && (core::mem::needs_drop::<E>() || !chunked) {
            // SAFETY: a non-zero root word is a node word of this tree, and under `&mut self` no
            // reader or writer can reach the tree: every node stays allocated until freed here.
            let n: NodeRef<'_> = unsafe { NodeRef::from_word(w, internal) };
            let slab = (!chunked).then_some(&mut mem.slab);
            free_node::<E>(n, 0, u64::MAX, internal, ledger, slab, &mut panic);
        }
        // SAFETY: the root word is zero and nothing else reaches the tree or any node retired
        // from it (`&mut self`): no node of the slab is used again.
        let released = unsafe { mem.slab.release_all() };
        debug_assert_eq!(released, chunked);
        if let Some(p) = panic {
            crate::sync::resume_unwind(p);
        }
    }

    /// Reader restarts so far.
    pub(crate) fn restarts(&self) -> u64 {
        self.shared.restarts.load(Ordering::Relaxed)
    }
}

impl RootWord {
    /// See [`Root::check_guard`].
    #[inline]
    pub(super) fn check_guard(&self, guard: &Guard) {
        assert!(
            guard.collector() == Some(&self.collector),
            "maple tree: the guard is not pinned on this tree's collector"
        );
    }

    /// Counts one reader restart (a statistic: Relaxed).
    #[cold]
    pub(super) fn restarted(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// Pins a guard of this tree's collector: through the thread's handle of crossbeam's
    /// default collector, else through a handle registered for this guard alone (which goes
    /// when the guard does).
    pub(super) fn pin(&self) -> Guard {
        #[cfg(feature = "std")]
        if self.default_collector {
            return crossbeam_epoch::pin();
        }
        self.collector.register().pin()
    }
}

/// The tree's writer lock, held: made only by [`Root::lock`], so it proves that its holder is
/// the one writer of that tree. Derefs to the writer state.
pub(crate) struct WriterLock<'t, S, E> {
    pub(super) root: &'t RootWord,
    /// The tree's side (made by [`Root::lock`]), reached by the holder of `lock` alone.
    side: NonNull<Side<S>>,
    /// The held lock (only its drop is used: the side is reached through `side`).
    _lock: MutexGuard<'t, LazySide<S>>,
    /// Marks the thread as holding a writer lock; declared after `lock`, so that it is dropped
    /// after the mutex is released, and the entry drops postponed meanwhile run unlocked.
    pub(super) _held: WriterHeld<'t>,
    /// The brand of the tree (see [`Root`]).
    pub(super) _e: PhantomData<fn() -> E>,
}

/// The parts of the writer: its view of the root, the writer state, the retire queue, all for
/// the borrow of the lock guard or of the exclusive root that made them.
pub(crate) type WriterParts<'w, S, M, E> = (WriterRoot<'w, M, E>, &'w mut S, &'w mut NodeMem);

impl<'t, S, E> WriterLock<'t, S, E> {
    /// The writer's side.
    #[inline]
    fn side(&self) -> &Side<S> {
        // SAFETY: `side` is the tree's side, made before this lock guard and owned by the
        // `LazySide` the held `_lock` guards until the tree is dropped (the guard borrows the
        // tree for `'t`); only the holder of the lock reaches it, and `&self` shares it.
        unsafe { self.side.as_ref() }
    }

    /// The writer's side, through `&mut`.
    #[inline]
    fn side_mut(&mut self) -> &mut Side<S> {
        // SAFETY: as in `side`; `&mut self` makes this the only borrow of it.
        unsafe { self.side.as_mut() }
    }

    /// The capability to defer entry drops on this tree's collector after the lock is gone
    /// (see [`TakenEntry`]).
    pub(crate) fn reclaim(&self) -> RcuReclaim<'t> {
        RcuReclaim { root: self.root }
    }

    /// Pins a guard of this tree's collector (RCU-mode writers pin only when they defer
    /// something: a write that retires and releases nothing never pins).
    pub(crate) fn pin(&self) -> Guard {
        self.root.pin()
    }

    /// Whether the writers before left retired nodes to hand to the collector.
    #[inline]
    pub(crate) fn has_retired(&self) -> bool {
        !self.side().mem.nodes.is_empty()
    }

    /// Whether the writers before queued a whole batch of retired nodes ([`retire_batch`]):
    /// an RCU-mode write hands its retired nodes to the collector only then, all in one
    /// deferred free, so that a write pays no pin, no deferral and no give-back lock per node.
    #[inline]
    pub(crate) fn retired_batch_full(&self) -> bool {
        self.side().mem.nodes.len() >= retire_batch()
    }

    /// Hands the nodes the writers before retired to the collector, in one deferred free: they
    /// are given back to the slab once every guard pinned now (`guard`, of this tree's
    /// collector, checked) has been dropped; `freed(n)` makes the closure that runs after the
    /// `n` nodes are given back.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector.
    #[inline]
    pub(crate) fn flush_retired<F: FnOnce() + 'static>(
        &mut self,
        guard: &Guard,
        freed: impl FnOnce(usize) -> F,
    ) {
        if !self.side().mem.nodes.is_empty() {
            self.flush_queued(guard, freed);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn flush_queued<F: FnOnce() + 'static>(
        &mut self,
        guard: &Guard,
        freed: impl FnOnce(usize) -> F,
    ) {
        self.root.check_guard(guard);
        let mem = &mut self.side_mut().mem;
        let batch = core::mem::replace(&mut mem.nodes, Vec::with_capacity(retire_batch()));
        let n = batch.len();
        // SAFETY: every queued address was queued once by `WriterRoot::retire` from an
        // `Unlinked` handle (its dead bit was clear): a node of the tree's slab, unreachable for
        // guards pinned from now on (it was unlinked before this call, by this thread or by a
        // writer before it, whose lock release this thread's lock acquisition follows), and
        // retired once (it leaves the queue here). `&mut self`: the borrows that made the
        // writers before have ended, and with them their handles. `guard` is of this collector
        // (checked), and the nodes are of the slab the returner gives them back to.
        unsafe { retire_batch_on(batch, guard, mem.slab.returner(), freed(n)) };
        paced_defers(guard, n);
    }

    /// The writer's view of the root in RCU mode, the writer state and the retire queue, for
    /// as long as this borrow of the lock guard lasts (see [`WriterRoot`] for what the writer
    /// must still guarantee).
    #[inline]
    pub(crate) fn writer(&mut self) -> WriterParts<'_, S, Rcu, E> {
        let root = self.root;
        let side = self.side_mut();
        side.mem.owner = core::ptr::from_ref(root).addr();
        let root = WriterRoot {
            root,
            _m: PhantomData,
        };
        (root, &mut side.state, &mut side.mem)
    }

    /// Whether the tree's slab takes huge-page chunks once big.
    pub(crate) fn huge_pages(&self) -> bool {
        self.side().mem.huge_pages()
    }

    /// A reader view of the root, for reads under the lock borrowed from `&self` (no writer
    /// view exists while it lives).
    pub(crate) fn view(&self) -> RootRef<'_, Read, E> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
        }
    }
}

impl<S, E> core::ops::Deref for WriterLock<'_, S, E> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.side().state
    }
}

impl<S, E> core::ops::DerefMut for WriterLock<'_, S, E> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.side_mut().state
    }
}

/// The tree borrowed `&mut` for exclusive-mode writes: made only by [`Root::exclusive`].
/// Derefs to the writer state. Frees the nodes its writers retired when the next writer is
/// made and when it is dropped.
pub(crate) struct ExclusiveRoot<'t, S, E> {
    pub(super) root: &'t RootWord,
    pub(super) side: &'t mut Side<S>,
    /// The brand of the tree (see [`Root`]).
    pub(super) _e: PhantomData<fn() -> E>,
}

impl<S, E> ExclusiveRoot<'_, S, E> {
    /// Retired nodes queued by RCU-mode writers and not handed to the collector yet (see
    /// [`retire_batch`]); exclusive mode frees them at once, without a grace period.
    pub(crate) fn queued_nodes(&self) -> usize {
        self.side.mem.nodes.len()
    }

    /// The writer's view of the root in exclusive mode, the writer state and the retire queue,
    /// for as long as this borrow lasts. First frees what the writers before retired.
    #[inline]
    pub(crate) fn writer(&mut self) -> WriterParts<'_, S, Exclusive, E> {
        // SAFETY: `&mut self`: the borrows that made the writers before have ended, and with
        // them every handle of their writes; `&mut` tree: no reader exists.
        unsafe { self.side.mem.free() };
        self.side.mem.owner = core::ptr::from_ref(self.root).addr();
        let root = WriterRoot {
            root: self.root,
            _m: PhantomData,
        };
        (root, &mut self.side.state, &mut self.side.mem)
    }

    /// A reader view of the root, for reads borrowed from `&self`.
    pub(crate) fn view(&self) -> RootRef<'_, Read, E> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
        }
    }

    /// Whether the tree's slab takes huge-page chunks once big.
    pub(crate) fn huge_pages(&self) -> bool {
        self.side.mem.huge_pages()
    }
}

impl<S, E> core::ops::Deref for ExclusiveRoot<'_, S, E> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.side.state
    }
}

impl<S, E> core::ops::DerefMut for ExclusiveRoot<'_, S, E> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.side.state
    }
}

impl<S, E> Drop for ExclusiveRoot<'_, S, E> {
    fn drop(&mut self) {
        // SAFETY: as in `writer`: the exclusive root's borrows, and their handles, are gone.
        unsafe { self.side.mem.free() };
    }
}

/// A panic caught while dropping entries, to go on once the rest is dropped.
pub(super) type Panic = Option<crate::sync::PanicPayload>;

/// Drops the entries of the subtree of `n` (covering `[min, max]`) of a tree nobody else can
/// reach (see [`Root::free_all`]), and frees its nodes into `slab` if there is one (else its
/// chunks go back whole afterwards). An entry's `Drop` that panics does not stop the walk: the
/// first panic is kept in `panic` (for the caller to resume), later ones are dropped.
pub(super) fn free_node<E: Entry>(
    n: NodeRef<'_>,
    min: u64,
    max: u64,
    internal: Kind,
    ledger: &mut Ledger<E>,
    mut slab: Option<&mut Slab>,
    panic: &mut Panic,
) {
    if !n.is_leaf() {
        for i in 0..=n.end(max) {
            let c = n.child(i, internal);
            let (lo, hi) = (n.slot_min(i, min), n.slot_max(i, max));
            free_node::<E>(c, lo, hi, internal, ledger, slab.as_deref_mut(), panic);
        }
    } else if core::mem::needs_drop::<E>() {
        // (Nothing to drop in the slots of e.g. `Value`: no need to find the node's end.)
        let end = n.end(max);
        let mut i = 0;
        while i <= end {
            // One `catch_unwind` per leaf, resumed after the slot whose drop panicked.
            let r = crate::sync::catch_unwind(|| {
                while i <= end {
                    let w = Word::<E>::leaf(n.slot(i));
                    i += 1;
                    // A leaf word of a tree of `E` (only `WriteGuard<E>` stores leaf words),
                    // whose slot goes now: the ledger releases it with its last slot.
                    if let Some(r) = ledger.release(w) {
                        // SAFETY: the tree is unreachable (`&mut`): no thread can load the word.
                        unsafe { r.drop_values() };
                    }
                }
            });
            if let Err(p) = r {
                panic.get_or_insert(p);
            }
        }
    }
    if let Some(slab) = slab {
        // SAFETY: `n` is a node of this tree's slab that nothing can reach any more (`&mut
        // Root`, children freed first), freed once: the tree is a tree.
        unsafe { n.free_now(slab) };
    }
}

/// The root as a reader sees it: a root borrowed for `'g` while a guard of the tree's
/// collector is pinned for `'g` (made by [`Root::reader`]) or while the writer holds the tree
/// (made by [`WriterRoot::view`]). Loads only.
///
/// `A` is the access of the node handles it hands out: [`Read`] for readers; the writer's own
/// walks get a `RootRef<'w, Write>` ([`WriterRoot::walk_root`]), whose nodes are [`Live`].
///
/// `E` is the brand (the module docs, "The brand"): the entry type of the tree, handed on to
/// every node handle reached from this root, whose leaf loads can then be read as entries of
/// `E`. Only a root of a tree of `E` makes a `RootRef` branded `E`.
pub(crate) struct RootRef<'g, A: Access = Read, E = Unbranded> {
    pub(super) root: &'g RootWord,
    /// `root.internal`, kept by value (read once, not after every Acquire load).
    pub(super) internal: Kind,
    pub(super) _a: PhantomData<(A, fn() -> E)>,
}

// (By hand: a derive would ask `E: Copy`; the brand is only a name.)
impl<A: Access, E> Clone for RootRef<'_, A, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: Access, E> Copy for RootRef<'_, A, E> {}

impl<'g, A: Access, E> RootRef<'g, A, E> {
    /// This root without its brand (for code that reads no entry: the gap search,
    /// `validate`): always sound, see [`Unbranded`].
    #[inline]
    pub(crate) fn unbranded(self) -> RootRef<'g, A> {
        RootRef {
            root: self.root,
            internal: self.internal,
            _a: PhantomData,
        }
    }

    /// The root node, if any (Acquire: pairs with the Release store that published it).
    #[inline]
    pub(crate) fn node(self) -> Option<NodeRef<'g, A, E>> {
        // ORDERING: P1 (the reader's load of the root word).
        let w = self.root.word.load(ord::P1_LOAD_ROOT);
        if w == 0 {
            None
        } else {
            // SAFETY: a non-zero root word is a node word of this tree, whose entry type is
            // the brand `E` (only a `Root<_, E>` makes a `RootRef` branded `E`, else it is
            // unbranded); a `RootRef<'g>` exists only while a guard of the tree's collector (or
            // the writer) protects its nodes for 'g (see `Root::reader`, `WriterRoot::view`).
            Some(unsafe { NodeRef::from_word(w, self.internal) })
        }
    }

    /// Internal node kind of the tree.
    #[inline]
    pub(crate) fn internal(self) -> Kind {
        self.internal
    }

    /// The collector of the tree.
    #[inline]
    pub(crate) fn collector(self) -> &'g Collector {
        &self.root.collector
    }

    /// Whether the tree's collector is crossbeam's default one.
    #[inline]
    pub(crate) fn is_default_collector(self) -> bool {
        self.root.default_collector
    }

    /// Counts one reader restart.
    #[cold]
    pub(crate) fn restarted(self) {
        self.root.restarted();
    }
}

/// The writer lock without std (see `crate::sync`'s `mutex`): a test-and-test-and-set spin lock
/// over a cell. Not poisoned by a panic (writes are panic-safe, as with std's lock, whose
/// poisoning `sync` ignores).
#[cfg(not(feature = "std"))]
pub(crate) struct SpinMutex<T> {
    locked: crate::sync::AtomicBool,
    value: core::cell::UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `SpinGuard` (one at a time: the lock word's
// compare-exchange lets one holder in, Acquire; its release is a Release store) or `&mut`, so
// sharing the mutex sends the `T` between threads, as std's `Mutex<T>: Sync` for `T: Send`.
#[cfg(not(feature = "std"))]
unsafe impl<T: Send> Sync for SpinMutex<T> {}

/// A held [`SpinMutex`]; lets go when dropped. Not `Send`, as std's `MutexGuard` (so that the
/// writer's guards are the same types in both builds): it is let go on the thread that took it.
#[cfg(not(feature = "std"))]
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinMutex<T>,
    _not_send: PhantomData<*const ()>,
}

// SAFETY: through `&SpinGuard` only `&T` is reachable (`Deref`), which `T: Sync` lets threads
// share; as std's `MutexGuard<T>: Sync` for `T: Sync`.
#[cfg(not(feature = "std"))]
unsafe impl<T: Sync> Sync for SpinGuard<'_, T> {}

#[cfg(not(feature = "std"))]
impl<T> SpinMutex<T> {
    pub(crate) fn new(v: T) -> Self {
        SpinMutex {
            locked: crate::sync::AtomicBool::new(false),
            value: core::cell::UnsafeCell::new(v),
        }
    }

    /// The lock: spins (on a plain load, so that waiting CPUs share the line until the holder
    /// lets go) until it is free, then takes it.
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            while self.locked.load(Ordering::Relaxed) {
                core::hint::spin_loop();
            }
        }
    }

    /// The lock if no one holds it now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        // ORDERING: the lock's own hand-over, no row of the publication table (readers never
        // take it): Acquire, so the new holder sees what the previous one wrote under the lock
        // (its Release in `SpinGuard::drop`).
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| SpinGuard {
                lock: self,
                _not_send: PhantomData,
            })
    }

    pub(crate) fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

#[cfg(not(feature = "std"))]
impl<T: Default> Default for SpinMutex<T> {
    fn default() -> Self {
        SpinMutex::new(T::default())
    }
}

#[cfg(not(feature = "std"))]
impl<T> core::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock (the only way to make one is `try_lock`'s
        // successful compare-exchange), so no other reference to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

#[cfg(not(feature = "std"))]
impl<T> core::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow through the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

#[cfg(not(feature = "std"))]
impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // ORDERING: the lock's hand-over (see `try_lock`): Release, what this holder wrote under
        // the lock, for the next holder's Acquire.
        self.lock.locked.store(false, Ordering::Release);
    }
}
