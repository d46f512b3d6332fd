//! Memory and retirement: the writer's node memory ([`NodeMem`]: the slab, the queue of
//! retired nodes), deferred entry drops and their pacing, the handles that hand a removed
//! entry back ([`TakenEntry`], [`RcuReclaim`]), and the node allocation itself.

use super::*;
use alloc::boxed::Box;
use alloc::vec::Vec;

/// The clones `dup` made for one leaf before its copy is made: dropped with it unless handed
/// over (`len` set to zero), so that a `Clone` that panics leaks none of them.
pub(super) struct Clones<E: Entry> {
    pub(super) words: [usize; RANGE_SLOTS],
    pub(super) len: usize,
    pub(super) _e: PhantomData<fn() -> E>,
}

impl<E: Entry> Clones<E> {
    pub(super) fn new() -> Self {
        Clones {
            words: [0; RANGE_SLOTS],
            len: 0,
            _e: PhantomData,
        }
    }

    pub(super) fn push(&mut self, w: Word<E>) {
        self.words[self.len] = w.raw();
        self.len += 1;
    }
}

impl<E: Entry> Drop for Clones<E> {
    fn drop(&mut self) {
        let mut ledger = Ledger::<E>::default(); // each clone is its own word
        for &w in &self.words[..core::mem::take(&mut self.len)] {
            if let Some(r) = ledger.release(Word::leaf(w)) {
                // SAFETY: `w` is a clone's word (`into_word` of a fresh clone), stored in no node
                // (not handed over), so nothing else can load or drop it; dropped once here.
                unsafe { r.drop_values() };
            }
        }
    }
}

/// RCU mode only: entries are dropped after a grace period.
impl<B> WriterRoot<'_, Rcu, B> {
    /// Drops the values of `r` after a grace period of `guard` (a pinned guard of this tree's
    /// collector, checked); `dropped` runs first. A panic in an entry's `Drop` is contained
    /// there (the drop runs on whichever thread collects).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector.
    pub(crate) fn defer_drop_entry<E: Entry>(
        self,
        r: Released<E>,
        guard: &Guard,
        dropped: impl FnOnce() + 'static,
    ) {
        defer_entry_drop(self.root, r, guard, dropped);
    }
}

/// See [`WriterRoot::defer_drop_entry`]; also the drop of a [`TakenEntry`] of an RCU-mode
/// tree, after the write that unlinked it.
pub(super) fn defer_entry_drop<E: Entry>(
    root: &RootWord,
    r: Released<E>,
    guard: &Guard,
    dropped: impl FnOnce() + 'static,
) {
    root.check_guard(guard);
    #[cfg(not(feature = "std"))]
    let postponed = alloc::sync::Arc::clone(&root.postponed);
    let run = move || {
        dropped();
        // The collector runs this on whichever thread pins or flushes, which may be a
        // writer holding a tree's writer lock (its own pin, the pacing flush): an entry
        // whose `Drop` writes to that tree would wait for ever on the lock its own thread
        // holds. The entry is dropped once the lock is let go (see `PostponedDrop`).
        #[cfg(feature = "std")]
        if holds_writer_lock() {
            let (raw, count) = r.into_raw_parts();
            postpone_drop(PostponedDrop {
                raw,
                count,
                drop: crate::entry::drop_released_raw::<E>,
            });
            return;
        }
        #[cfg(not(feature = "std"))]
        if postponed.held() {
            let (raw, count) = r.into_raw_parts();
            postponed.postpone(PostponedDrop {
                raw,
                count,
                drop: crate::entry::drop_released_raw::<E>,
            });
            return;
        }
        let _ = crate::sync::catch_unwind(|| {
            // SAFETY: this runs after every guard pinned when the last slot of the word was
            // unlinked is gone (below): no thread can load the word any more.
            unsafe { r.drop_values() };
        });
    };
    // SAFETY: the closure only drops entries no reader can reach once it runs (above);
    // crossbeam runs it after every guard pinned now is gone.
    unsafe { guard.defer_unchecked(run) };
}

/// The capability to defer an entry's drop on an RCU-mode tree's collector outside a write:
/// made only from the writer lock ([`WriterLock::reclaim`]), so only for a tree whose readers
/// run beside its writer; it outlives the lock for `'t`, the borrow of the tree.
#[derive(Clone, Copy)]
pub(crate) struct RcuReclaim<'t> {
    pub(super) root: &'t RootWord,
}

/// An entry a write took out of the tree to hand to the caller ([`crate::Erased`]): the last
/// slot holding its word was unlinked by that write, so the tree no longer owns it; this does.
/// In exclusive mode no reader exists and the value is the caller's at once. In RCU mode,
/// readers pinned before the write may still borrow it: it can be borrowed here too, but never
/// moved out, and it is dropped through the tree's collector, after a grace period that starts
/// when this is dropped (later than the write, so every such reader is waited for).
pub(crate) struct TakenEntry<'t, E: Entry> {
    pub(super) released: core::mem::ManuallyDrop<Released<E>>,
    /// RCU mode: the collector to defer the drop on and the pending-frees counters (the
    /// entry was counted pending when it was taken, under the writer lock).
    pub(super) rcu: Option<(
        RcuReclaim<'t>,
        alloc::sync::Arc<crate::tree::pending::Pending>,
    )>,
}

impl<'t, E: Entry> TakenEntry<'t, E> {
    /// Exclusive mode: `r`, taken by the write of `_x`'s writer.
    pub(crate) fn exclusive<B>(r: Released<E>, _x: WriterRoot<'_, Exclusive, B>) -> Self {
        TakenEntry {
            released: core::mem::ManuallyDrop::new(r),
            rcu: None,
        }
    }

    /// A copy of a value without drop glue (freely duplicable, the `Entry` contract): the
    /// caller's in either mode.
    pub(crate) fn copy(r: Released<E>) -> Self {
        debug_assert!(!core::mem::needs_drop::<E>());
        TakenEntry {
            released: core::mem::ManuallyDrop::new(r),
            rcu: None,
        }
    }

    /// RCU mode: `r`, taken by a write of the tree `at` reclaims for; `pending` already
    /// counts it.
    pub(crate) fn rcu(
        r: Released<E>,
        at: RcuReclaim<'t>,
        pending: alloc::sync::Arc<crate::tree::pending::Pending>,
    ) -> Self {
        TakenEntry {
            released: core::mem::ManuallyDrop::new(r),
            rcu: Some((at, pending)),
        }
    }

    /// The entry, borrowed.
    pub(crate) fn borrow(&self) -> E::Borrowed<'_> {
        self.released.borrow()
    }

    /// Calls `f` with a reference to the entry (for its `Clone`).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&E) -> R) -> R {
        // SAFETY: the word is live (owned by `self`, not consumed while `&self` lives).
        unsafe { crate::entry::view_word(self.released.raw_word(), f) }
    }

    /// The entry itself if no reader can hold it (exclusive mode); `self` back otherwise.
    pub(crate) fn try_take(mut self) -> Result<E, Self> {
        if self.rcu.is_some() {
            return Err(self);
        }
        // SAFETY: `released` is taken once (`self` is forgotten below, so `Drop` does not see
        // it again).
        let r = unsafe { core::mem::ManuallyDrop::take(&mut self.released) };
        core::mem::forget(self);
        // SAFETY: `rcu` is `None` only for `exclusive` (no reader exists) and for `copy` (a
        // value without drop glue, which the `Entry` contract lets us duplicate).
        let e = unsafe { r.take() };
        Ok(e.expect("a taken entry holds a value"))
    }
}

impl<E: Entry> Drop for TakenEntry<'_, E> {
    fn drop(&mut self) {
        // SAFETY: `released` is taken once, here (`try_take` forgets `self` after its take).
        let r = unsafe { core::mem::ManuallyDrop::take(&mut self.released) };
        match self.rcu.take() {
            None => {
                // SAFETY: exclusive mode (no reader exists), or a copy without drop glue
                // (`drop_values` of a count of 0 drops nothing).
                unsafe { r.drop_values() }
            }
            Some((at, pending)) => {
                let guard = at.root.pin();
                defer_entry_drop(at.root, r, &guard, move || pending.sub_entry());
                paced_defers(&guard, 1);
            }
        }
    }
}

/// An RCU-mode entry drop the collector ran on a thread that held a writer lock: the parts of
/// its `Released<E>` ([`Released::into_raw_parts`]) and the drop of its `E`. (`Copy` as plain
/// data; each one made is run once.)
#[derive(Clone, Copy)]
pub(super) struct PostponedDrop {
    pub(super) raw: usize,
    pub(super) count: usize,
    pub(super) drop: unsafe fn(usize, usize),
}

// Entry drops must never run while their thread holds a writer lock: an entry's `Drop` may
// write to its own tree (or to another one whose lock this thread holds), and the writer lock
// is not reentrant. The collector runs deferred drops on whichever thread pins or flushes —
// among them the writer itself, under its lock (its first pin of a fresh `Local` on a tree
// with its own collector, every 128th pin on the default one, the pacing flush of
// `paced_defers`) — so the deferred drop checks whether the lock may be held by its thread
// ([`WriterHeld`], part of every [`WriterLock`]) and, if so, queues the drop instead; the
// queue runs as soon as the lock is let go, before the write call that made the collector run
// returns. (Moving the collector's runs out of the lock instead would not do: any pin may
// collect, the writer's pins included.) A grace period has passed for a queued drop already,
// so running it later only delays it.
//
// With std: a per-thread count of the writer locks (of any tree) the thread holds, and a
// per-thread queue. Without std (no thread-locals): per tree, a count of the holders of the
// tree's writer lock (0 or 1) and a queue ([`Postponed`], shared with the deferred drops): a
// drop of that tree's entry that finds its lock held — by its own thread or another — is
// queued, and the holder runs the queue once it has let go (the drop looks again after it
// queued, and runs the queue itself if the lock was let go meanwhile). What this does not
// cover without std: an entry of tree A whose `Drop` writes to another tree B, run while its
// thread holds B's lock (the thread pinned A while holding B's lock).
//
// Not under loom: a model's threads share one OS thread, so a std thread-local would be shared
// between them, and no model has an entry whose `Drop` writes to its tree; the drops run as
// the collector runs them.
#[cfg(feature = "std")]
std::thread_local! {
    /// Writer locks (of any tree) this thread holds.
    static WRITER_LOCKS: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
    /// Entry drops postponed until this thread holds no writer lock.
    static POSTPONED: core::cell::RefCell<Vec<PostponedDrop>> =
        const { core::cell::RefCell::new(Vec::new()) };
}

/// Whether this thread holds a writer lock (of any tree); `false` while its thread-locals
/// are being destroyed (no lock is held then).
#[cfg(feature = "std")]
#[inline]
pub(super) fn holds_writer_lock() -> bool {
    crate::sync::THREAD_LOCALS && WRITER_LOCKS.try_with(|c| c.get() > 0).unwrap_or(false)
}

/// Queues `p` until this thread releases its last writer lock ([`WriterHeld`]'s drop).
#[cfg(feature = "std")]
#[cold]
pub(super) fn postpone_drop(p: PostponedDrop) {
    if !crate::sync::THREAD_LOCALS || POSTPONED.try_with(|q| q.borrow_mut().push(p)).is_err() {
        run_postponed_drop(p); // thread-locals gone (not pushed): no lock can be held
    }
}

/// Runs one postponed drop; a panic in an entry's `Drop` is contained, as on the collector.
pub(super) fn run_postponed_drop(p: PostponedDrop) {
    let _ = crate::sync::catch_unwind(|| {
        // SAFETY: `p` holds the parts of a `Released<E>` (made by `defer_drop_entry`'s
        // closure) with `E`'s drop, queued once and dequeued once: a grace period passed after
        // the word's last slot was unlinked before the collector ran that closure, so no thread
        // can load the word.
        unsafe { (p.drop)(p.raw, p.count) };
    });
}

/// Marks its thread as holding a writer lock while it lives (see [`PostponedDrop`]); its drop,
/// after the lock's, runs the postponed entry drops once the thread holds no writer lock.
/// Neither `Send` nor `Sync`: it stays on the thread whose count it raised.
#[cfg(feature = "std")]
pub(super) struct WriterHeld<'t>(pub(super) PhantomData<(&'t (), *const ())>);

#[cfg(feature = "std")]
impl<'t> WriterHeld<'t> {
    #[inline]
    pub(super) fn new(_root: &'t RootWord) -> Self {
        if crate::sync::THREAD_LOCALS {
            WRITER_LOCKS.with(|c| c.set(c.get() + 1));
        }
        WriterHeld(PhantomData)
    }
}

#[cfg(feature = "std")]
impl Drop for WriterHeld<'_> {
    #[inline]
    fn drop(&mut self) {
        if crate::sync::THREAD_LOCALS {
            let held = WRITER_LOCKS.with(|c| {
                let h = c.get() - 1;
                c.set(h);
                h
            });
            if held == 0 {
                run_postponed();
            }
        }
    }
}

/// Runs the entry drops this thread postponed, unlocked; drops that write take and release
/// writer locks themselves (their drops postponed meanwhile run at that release, or here).
#[cfg(feature = "std")]
#[inline]
pub(super) fn run_postponed() {
    if POSTPONED.with(|q| q.borrow().is_empty()) {
        return;
    }
    run_postponed_slow();
}

#[cfg(feature = "std")]
#[cold]
pub(super) fn run_postponed_slow() {
    loop {
        let batch = POSTPONED.with(|q| core::mem::take(&mut *q.borrow_mut()));
        if batch.is_empty() {
            return;
        }
        for p in batch {
            run_postponed_drop(p);
        }
    }
}

/// Without std: one tree's holders of its writer lock and its postponed entry drops (see
/// [`PostponedDrop`]), shared by the tree and the deferred drops of its entries.
#[cfg(not(feature = "std"))]
#[derive(Default)]
pub(crate) struct Postponed {
    /// Holders of the tree's writer lock: 0 or 1, but counted, so that a holder that lets go
    /// never clears the mark of the next one.
    held: AtomicUsize,
    /// Entry drops postponed until the lock is let go.
    queue: Mutex<Vec<PostponedDrop>>,
}

#[cfg(not(feature = "std"))]
impl Postponed {
    /// Whether the tree's writer lock is held (by any thread).
    #[inline]
    fn held(&self) -> bool {
        // SeqCst, with `WriterHeld`'s: a drop that queues and then sees the lock free runs the
        // queue itself; one that sees it held has queued before the holder's decrement, which
        // is before the holder's look at the queue (see `postpone`).
        self.held.load(Ordering::SeqCst) != 0
    }

    /// Queues `p` while the lock is held; runs the queue if it has been let go meanwhile.
    #[cold]
    fn postpone(&self, p: PostponedDrop) {
        self.queue.lock().push(p);
        if !self.held() {
            self.run();
        }
    }

    /// Runs the queued drops (on a thread that does not hold the tree's lock: it was seen
    /// free, or this thread just let it go).
    fn run(&self) {
        loop {
            let batch = core::mem::take(&mut *self.queue.lock());
            if batch.is_empty() {
                return;
            }
            for p in batch {
                run_postponed_drop(p);
            }
        }
    }
}

#[cfg(not(feature = "std"))]
impl Drop for Postponed {
    fn drop(&mut self) {
        // The last holder is gone: no lock is held. (Drops are queued only while a holder
        // lives, and it runs the queue as it goes, so this finds nothing in practice.)
        self.run();
    }
}

/// Without std: marks the tree's writer lock as held while it lives (see [`PostponedDrop`]);
/// its drop, after the lock's, runs the entry drops postponed meanwhile. Neither `Send` nor
/// `Sync`, as with std (the writer's guards are the same types in both builds).
#[cfg(not(feature = "std"))]
pub(super) struct WriterHeld<'t>(&'t Postponed, PhantomData<*const ()>);

#[cfg(not(feature = "std"))]
impl<'t> WriterHeld<'t> {
    #[inline]
    pub(super) fn new(root: &'t RootWord) -> Self {
        root.postponed.held.fetch_add(1, Ordering::SeqCst);
        WriterHeld(&root.postponed, PhantomData)
    }
}

#[cfg(not(feature = "std"))]
impl Drop for WriterHeld<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.0.held.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.run();
        }
    }
}

/// Exclusive mode only: no reader exists, entries are dropped (or handed back) at once.
impl<B> WriterRoot<'_, Exclusive, B> {
    /// Drops the values of `r` now.
    pub(crate) fn drop_entry_now<E: Entry>(self, r: Released<E>) {
        // SAFETY: exclusive mode: no reader exists (`&mut` tree).
        unsafe { r.drop_values() };
    }

    /// Hands back the first value of `r` and drops the others (for types without drop glue,
    /// a copy of the value).
    pub(crate) fn take_entries<E: Entry>(self, r: Released<E>) -> Option<E> {
        // SAFETY: exclusive mode: no reader exists (`&mut` tree).
        unsafe { r.take() }
    }
}

/// The writer's node memory: the tree's [`Slab`], where its nodes come from and go back to, and
/// the nodes the writer retired, unlinked and marked dead, handed on after the writer's borrow
/// ends — to the collector in RCU mode, a batch at a time ([`retire_batch`],
/// [`WriterLock::flush_retired`], back into the slab after a grace period), to the slab in
/// exclusive mode ([`ExclusiveRoot::writer`] or its drop) — so that no node handle of the write
/// that retired them can still be used, and the write never touches a node it has handed on.
/// Belongs to one tree (checked by [`WriterRoot::retire`]).
pub(crate) struct NodeMem {
    pub(super) owner: usize,
    /// Addresses of nodes of `slab`, unlinked and marked dead, each queued once.
    pub(super) nodes: Vec<usize>,
    pub(super) slab: Slab,
}

/// Closures a thread's writers defer before they make the collector collect: one bag's worth
/// (crossbeam's bags hold 64).
pub(super) const DEFER_BATCH: usize = 64;

#[cfg(feature = "std")]
std::thread_local! {
    /// Closures this thread's writers deferred since they last made a collector collect.
    static DEFERRED: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Without std (no thread-locals): closures all writers deferred since one of them last made
/// a collector collect. The same pace overall (one flush per bag's worth of deferred
/// closures), though the flush is the bag of whichever writer crosses the count.
#[cfg(not(feature = "std"))]
static DEFERRED: AtomicUsize = AtomicUsize::new(0);

/// Counts `n` closures deferred on `guard` and, once this thread has deferred one bag's worth
/// since the last time, makes `guard`'s collector collect (the guard's `flush`: the thread's
/// bag goes to the global queue, and the bags whose grace period has passed are freed). A
/// collector collects by itself only every 128 pins of a thread (a guard pinned while another
/// is does not count), a few bags at a time: a thread that defers more than that per pin, such
/// as one filling trees while it holds a guard, would otherwise pile deferred frees up without
/// bound. (Not under loom, whose models check the protocol, not the collector's pace.)
#[inline]
pub(crate) fn paced_defers(guard: &Guard, n: usize) {
    if crate::sync::LOOM {
        let _ = (guard, n);
        return;
    }
    #[cfg(feature = "std")]
    let d = DEFERRED.with(|c| {
        let d = c.get() + n;
        c.set(if d >= DEFER_BATCH { 0 } else { d });
        d
    });
    #[cfg(not(feature = "std"))]
    let d = {
        let d = DEFERRED.fetch_add(n, Ordering::Relaxed) + n;
        if d >= DEFER_BATCH {
            // Whoever crosses the count flushes; a race only flushes once more or less.
            DEFERRED.store(0, Ordering::Relaxed);
        }
        d
    };
    if d >= DEFER_BATCH {
        guard.flush();
    }
}

/// Retired nodes an RCU-mode writer queues before it hands them to the collector, all in one
/// deferred free (as `kvfree_rcu` gathers pointers into batches): 32 nodes, 8 KiB. A write
/// that does not fill the batch hands nothing on and does not pin; the queue waits for later
/// writes, for [`MapleTree::pending_frees`](crate::MapleTree::pending_frees) (which hands a
/// partial batch on), for exclusive mode (which frees it at once) or for the tree's drop.
/// Under loom: one node unless a model asks for more (`loom_knobs::set_retire_batch`), so that
/// every model's frees happen within the model.
#[inline]
pub(crate) fn retire_batch() -> usize {
    crate::sync::knobs::retire_batch()
}

/// Gives the nodes at `batch` back through `returner` once every guard pinned now has been
/// dropped; `freed` runs right after (the pending-frees count).
///
/// # Safety
///
/// Each node must already be unreachable for guards pinned from now on (unlinked from the live
/// tree), must not be retired twice, and must be a node of the slab `returner` holds. `guard`
/// must belong to the tree's collector.
pub(super) unsafe fn retire_batch_on(
    batch: Vec<usize>,
    guard: &Guard,
    returner: Returner,
    freed: impl FnOnce() + 'static,
) {
    let nodes = move || {
        batch.into_iter().map(|addr| {
            let p = core::ptr::with_exposed_provenance_mut::<Node>(addr);
            // SAFETY: a queued address is a node's (non-null).
            unsafe { NonNull::new_unchecked(p) }
        })
    };
    if crate::sync::knobs::free_at_once() {
        // Deliberately wrong (a loom mutant): poison now. The memory is leaked rather than
        // deallocated, so the test process itself never reads freed memory.
        for p in nodes() {
            // SAFETY: under loom a node is a `Box` of its own (`alloc_boxed`); it is dropped in
            // place exactly once and never deallocated, so later (racy, reported) reads still
            // read allocated memory.
            unsafe { core::ptr::drop_in_place(p.as_ptr()) };
        }
        #[allow(clippy::drop_non_drop)] // the boxed slab's returner holds nothing
        drop(returner);
        freed();
        return;
    }
    // SAFETY: the nodes are unlinked (caller contract), so only guards pinned before this call
    // can still reach them; crossbeam runs the closure after all of them are gone, which makes
    // the give-back the last access, once, to the slab the nodes are of (caller contract).
    unsafe {
        guard.defer_unchecked(move || {
            returner.give_back_all(nodes());
            freed();
        });
    }
}

impl NodeMem {
    /// Whether the slab takes huge-page chunks once big.
    pub(crate) fn huge_pages(&self) -> bool {
        self.slab.huge_pages()
    }

    /// Makes room for `n` more nodes in one run of the slab (see [`Slab::reserve`]).
    pub(crate) fn reserve(&mut self, n: usize) {
        self.slab.reserve(n);
    }

    /// Frees the queued nodes into the slab.
    ///
    /// # Safety
    ///
    /// No handle of the writes that queued them may be used any more (the borrow that made
    /// their writer has ended), and no reader exists (exclusive mode).
    #[inline]
    pub(super) unsafe fn free(&mut self) {
        if !self.nodes.is_empty() {
            // SAFETY: the caller's contract.
            unsafe { self.free_queued() };
        }
    }

    /// Queues the address of a node just retired. The queue's first allocation holds a whole
    /// [`retire_batch`], the length at which an RCU-mode write hands it on, so that a young
    /// tree's writes do not grow it 4 → 8 → 16 → 32 (three reallocations on its first ten
    /// RCU-mode stores).
    #[inline]
    pub(super) fn queue(&mut self, addr: usize) {
        if self.nodes.len() == self.nodes.capacity() {
            self.grow_queue();
        }
        self.nodes.push(addr);
    }

    #[cold]
    #[inline(never)]
    fn grow_queue(&mut self) {
        self.nodes.reserve(retire_batch());
    }

    /// [`free`](Self::free) of a non-empty queue.
    ///
    /// # Safety
    ///
    /// As [`free`](Self::free).
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn free_queued(&mut self) {
        for addr in self.nodes.drain(..) {
            let p = core::ptr::with_exposed_provenance_mut::<Node>(addr);
            // SAFETY: a queued address is a node of this slab (non-null) that was unlinked and
            // marked dead once (its dead bit was clear); nothing can reach it (caller
            // contract), and it leaves the queue here, so it is freed once.
            unsafe { self.slab.free(NonNull::new_unchecked(p)) };
        }
    }
}

// ===== Node memory ==============================================================================
//
// A tree's nodes come from its slab (`slab`, held by the writer in `NodeMem`), one chunk of
// nodes at a time, and go back to it. Under loom, and with `--cfg maple_tree_box_nodes` (for the
// sanitizers), each node is a `Box` of its own instead (`crate::sync::BOX_NODES`; the two
// functions below are the boxed slab's, compiled in every build).

/// A node in a `Box` of its own (see `slab`): under loom a whole `Node::new` (with its
/// allocation tracking and liveness cell), else uninitialised memory for one node.
pub(super) fn alloc_boxed() -> NonNull<Node> {
    if crate::sync::PLAIN_NODES {
        NonNull::from(Box::leak(Box::<Node>::new_uninit())).cast::<Node>()
    } else {
        NonNull::from(Box::leak(Box::new(Node::new())))
    }
}

/// Frees a node of [`alloc_boxed`] (under loom: dropped, i.e. poisoned, and deallocated).
///
/// # Safety
///
/// `p` comes from [`alloc_boxed`], nothing can reach it any more, and it is freed once.
pub(super) unsafe fn free_boxed(p: NonNull<Node>) {
    // SAFETY: the caller's contract; outside loom `Node` has no drop glue, so dropping the box
    // only deallocates it (with `Node`'s layout, which `alloc_boxed` allocated).
    drop(unsafe { Box::from_raw(p.as_ptr()) });
}

/// A zeroed node (the node `Node::new` makes) from `slab`, owned by the caller. Under loom
/// (`!PLAIN_NODES`) the slab's box already holds a whole `Node::new`.
#[inline]
pub(super) fn new_node(slab: &mut Slab) -> NonNull<Node> {
    let p = slab.alloc();
    if crate::sync::PLAIN_NODES {
        // SAFETY: `p` is memory for one node that nothing else references (the slab's
        // contract). A plain node (`PLAIN_NODES`) is only atomics (`repr(C)`, no padding), for
        // which all-zero bytes are valid values: the node `Node::new` makes.
        unsafe { p.as_ptr().write_bytes(0, 1) };
    }
    p
}

const _: () = assert!(!crate::sync::PLAIN_NODES || !core::mem::needs_drop::<Node>());

// ===== end of node memory =======================================================================
