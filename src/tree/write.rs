//! The writer: the write guard, the typed writer it lends out for each operation
//! (`Writer<'w, E, M>`, in the guard's write mode `M`), and the primitives every write path
//! shares — node allocation, publication of a replaced child or a new root level, retirement,
//! entry ownership, seals, and writing items into a node. What the writer can do is this
//! folder's listing: `store` classifies a store and sends it down one write path, each in its
//! own module (`exact_fit`, `append`, `slot_store`, `node_store`, `append_split`, and the
//! rebuild of `rebuild`/`split`/`rebalance`/`spanning`), on the item buffer and leaf image of
//! `big_node` and the paths of `path`; every path keeps the recorded gaps up to date through
//! `gaps`. `alloc` is the allocation routine behind every allocation, `take` the exclusive
//! writer's removals that hand entries back. The paths valid in exclusive mode only are
//! methods of `Writer<'_, E, Exclusive>` (see [`WriteMode`]).

pub(crate) mod alloc;
mod append;
mod append_split;
pub(crate) mod big_node;
mod exact_fit;
mod gaps;
mod node_store;
mod path;
mod rebalance;
mod rebuild;
mod slot_store;
mod spanning;
mod split;
mod store;
mod take;

use core::marker::PhantomData;

use core::cell::OnceCell;

use crossbeam_epoch::Guard;
use smallvec::SmallVec;

use crate::entry::{Entry, Ledger, Word};
use ::alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};

use super::node::{Read, Write};
use super::pending::Pending;

use self::big_node::Item;
use self::path::Retired;
use super::iter::Iter;
use super::node::{
    Exclusive, Fresh, Kind, Live, Mode, NodeMem, Rcu, RootRef, Slot, Unlinked, WriterLock,
    WriterRoot, RANGE_SLOTS,
};
use super::state::{StateRef, WriterState};
use super::walk::{Level, Walker};

/// Nodes a tree allocates (retired ones included) before [`Writer::copy_node`] takes leaf
/// copies from the slab's fresh run.
const FRESH_AFTER: u64 = 32;

/// The writer: holds the tree's lock (RCU mode, from [`MapleTree::lock`](crate::MapleTree::lock)) or its exclusive
/// borrow ([`MapleTree::exclusive`](crate::MapleTree::exclusive)). Every write method of the tree lives here; reads through it
/// see the writer's own changes at once.
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut tree = MapleTree::<Value>::new();
/// {
///     let mut w = tree.exclusive(); // no readers: in place, frees at once
///     for i in 0..100u64 {
///         w.store_range(i * 10..=i * 10 + 5, Value::new(i))?;
///     }
/// }
/// assert_eq!(tree.get(995), Some(Value::new(99)));
/// tree.validate()?;
/// # Ok(())
/// # }
/// ```
pub struct WriteGuard<'t, E> {
    /// The writer lock (RCU mode) or the exclusive borrow, with the writer state.
    lock: StateRef<'t, E>,
    pub(crate) internal: Kind,
    /// RCU mode: the guard replaced nodes and entries are deferred on, pinned on first need, so
    /// that a write that retires and releases nothing (an in-place append) does not pin; none in
    /// exclusive mode, which frees at once. The writer's own reads need no guard: only the
    /// writer retires nodes and releases entries, its retired nodes wait until its borrow ends,
    /// and what it defers waits for this guard, pinned before the deferral.
    guard: Option<OnceCell<Guard>>,
    /// The tree's count of ranges holding an entry (see [`MapleTree::len`](crate::MapleTree::len)).
    len: &'t StdAtomicUsize,
    /// The tree's pending-frees counters.
    pending: &'t Arc<Pending>,
    _e: PhantomData<E>,
}

/// The writer of one write operation (or of one writing cursor), borrowed from a
/// [`WriteGuard`]: every write path is a method of it. Its [`WriterRoot`] and every node handle
/// made from it live for `'w`, the borrow of the write guard: none outlives that borrow.
pub(crate) struct Writer<'w, E, M: Mode> {
    pub(crate) root: WriterRoot<'w, M, E>,
    pub(crate) internal: Kind,
    pub(crate) st: &'w mut WriterState<E>,
    /// Exclusive mode: where retired nodes wait for the end of the guard's borrow.
    mem: &'w mut NodeMem,
    /// RCU mode: the guard replaced nodes and entries are deferred on, pinned on first need.
    guard: Option<&'w OnceCell<Guard>>,
    /// The tree's count of ranges holding an entry.
    pub(crate) len: &'w StdAtomicUsize,
    /// The tree's pending-frees counters.
    pub(crate) pending: &'w Arc<Pending>,
    _e: PhantomData<E>,
}

/// The two write modes as the writer knows them. What the modes share is one generic method of
/// [`Writer`] (its mode's constants folded per mode); a path valid in exclusive mode only (no
/// reader: a boundary moved or a node rewritten in place) is a method of
/// `Writer<'_, E, Exclusive>`, reached from the shared code through
/// [`exclusive`](Self::exclusive), so that the compiler checks it never runs under readers.
pub(crate) trait WriteMode: Mode {
    /// The writer as an exclusive-mode one, if this is [`Exclusive`] (the identity; `None` for
    /// [`Rcu`]; a constant per mode).
    fn exclusive<'a, 't, E>(
        w: &'a mut Writer<'t, E, Self>,
    ) -> Option<&'a mut Writer<'t, E, Exclusive>>;
}

impl WriteMode for Exclusive {
    #[inline(always)]
    fn exclusive<'a, 't, E>(
        w: &'a mut Writer<'t, E, Self>,
    ) -> Option<&'a mut Writer<'t, E, Exclusive>> {
        Some(w)
    }
}

impl WriteMode for Rcu {
    #[inline(always)]
    fn exclusive<'a, 't, E>(
        _: &'a mut Writer<'t, E, Self>,
    ) -> Option<&'a mut Writer<'t, E, Exclusive>> {
        None
    }
}

impl<E> Drop for WriteGuard<'_, E> {
    fn drop(&mut self) {
        // RCU mode: hand a full batch of retired nodes to the collector while the lock and
        // the pinned guard are still held (exclusive mode frees them as its root drops).
        if let (StateRef::Locked(l), Some(cell)) = (&mut self.lock, &self.guard) {
            flush_full_batch(l, cell, self.pending);
        }
    }
}

/// RCU mode: [`flush_retired`] once the writes before have queued a whole batch
/// ([`WriterLock::retired_batch_full`]); nothing before.
#[inline]
fn flush_full_batch<E>(
    l: &mut WriterLock<'_, WriterState<E>, E>,
    cell: &OnceCell<Guard>,
    pending: &Arc<Pending>,
) {
    if l.retired_batch_full() {
        flush_retired(l, cell, pending);
    }
}

/// RCU mode: hands the nodes the writes before retired to the collector, on `cell`'s guard
/// (pinned now if this is its first need), as one batch; nothing if there are none.
pub(crate) fn flush_retired<E>(
    l: &mut WriterLock<'_, WriterState<E>, E>,
    cell: &OnceCell<Guard>,
    pending: &Arc<Pending>,
) {
    if !l.has_retired() {
        return;
    }
    let g = cell.get_or_init(|| l.pin());
    l.stats.retire_batches += 1;
    l.flush_retired(g, |n| {
        let pending = Arc::clone(pending);
        move || pending.sub_nodes(n)
    });
}

/// A [`Writer`] in the mode of the guard that made it ([`WriteGuard::any_writer`]).
pub(crate) enum AnyWriter<'w, E> {
    Rcu(Writer<'w, E, Rcu>),
    Exclusive(Writer<'w, E, Exclusive>),
}

/// `with_mode!(any, w => body)` runs `body` with `w` bound to the writer inside `any` (an
/// [`AnyWriter`], or `ref any` for a place holding one, borrowed mutably), once per mode: the
/// body is compiled for both, each with its mode's constants folded.
macro_rules! with_mode {
    (ref $any:expr, $w:ident => $body:expr) => {
        match &mut $any {
            $crate::tree::write::AnyWriter::Rcu($w) => $body,
            $crate::tree::write::AnyWriter::Exclusive($w) => $body,
        }
    };
    ($any:expr, $w:ident => $body:expr) => {
        match $any {
            #[allow(unused_mut)]
            $crate::tree::write::AnyWriter::Rcu(mut $w) => $body,
            #[allow(unused_mut)]
            $crate::tree::write::AnyWriter::Exclusive(mut $w) => $body,
        }
    };
}
pub(crate) use with_mode;

impl<'t, E: Entry> WriteGuard<'t, E> {
    /// A write guard over the parts of a tree: the writer lock or the exclusive borrow (with
    /// the writer state), the tree's internal node kind, the guard cell of RCU mode (none in
    /// exclusive mode), and the tree's counters.
    pub(crate) fn from_parts(
        lock: StateRef<'t, E>,
        internal: Kind,
        guard: Option<OnceCell<Guard>>,
        len: &'t StdAtomicUsize,
        pending: &'t Arc<Pending>,
    ) -> Self {
        WriteGuard {
            lock,
            internal,
            guard,
            len,
            pending,
            _e: PhantomData,
        }
    }

    /// RCU mode: the capability to defer entry drops on the tree's collector after this guard
    /// is gone; `None` in exclusive mode.
    pub(crate) fn reclaim(&self) -> Option<super::node::RcuReclaim<'t>> {
        match &self.lock {
            StateRef::Locked(l) => Some(l.reclaim()),
            StateRef::Exclusive(_) => None,
        }
    }

    /// The tree's pending-frees counters, for the tree's borrow.
    pub(crate) fn pending(&self) -> &'t Arc<Pending> {
        self.pending
    }

    /// The writer, for one operation, in the guard's mode: its handles live as long as this
    /// borrow. Run code in either mode with [`with_mode!`].
    #[inline]
    pub(crate) fn any_writer(&mut self) -> AnyWriter<'_, E> {
        let (internal, guard, len, pending) =
            (self.internal, self.guard.as_ref(), self.len, self.pending);
        match &mut self.lock {
            StateRef::Locked(l) => {
                flush_full_batch(l, guard.expect("RCU mode holds a guard cell"), pending);
                let (root, st, mem) = l.writer();
                AnyWriter::Rcu(Writer {
                    root,
                    internal,
                    st,
                    mem,
                    guard,
                    len,
                    pending,
                    _e: PhantomData,
                })
            }
            StateRef::Exclusive(x) => {
                let (root, st, mem) = x.writer();
                AnyWriter::Exclusive(Writer {
                    root,
                    internal,
                    st,
                    mem,
                    guard: None,
                    len,
                    pending,
                    _e: PhantomData,
                })
            }
        }
    }

    /// The writer state, for reads.
    #[inline]
    pub(crate) fn state(&self) -> &WriterState<E> {
        &self.lock
    }

    /// Whether this is an exclusive-mode guard.
    pub(crate) fn is_exclusive(&self) -> bool {
        self.guard.is_none()
    }

    /// Whether the tree is an allocation tree.
    pub(crate) fn is_alloc(&self) -> bool {
        self.internal == Kind::ARange
    }

    /// The number of ranges holding an entry or the zero entry (see [`MapleTree::len`](crate::MapleTree::len)).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// w.store_range(20..=29, Value::new(2))?;
    /// assert_eq!(w.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.len.load(StdOrdering::Relaxed)
    }

    /// Whether the tree holds nothing (`len() == 0`).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// assert!(w.is_empty());
    /// w.store_range(5..=5, Value::new(1))?;
    /// assert!(!w.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Height (levels).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// assert_eq!(w.height(), 0);
    /// w.store_range(0..=9, Value::new(1))?;
    /// assert_eq!(w.height(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn height(&self) -> usize {
        self.state().height
    }

    /// The entry at `index`, read under the writer.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(10..=19, Value::new(1))?;
    /// assert_eq!(w.load(15), Some(Value::new(1)));
    /// assert_eq!(w.load(20), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn load(&self, index: u64) -> Option<E::Borrowed<'_>> {
        // The writer is the only mutator and `&self` keeps it from writing while the borrow
        // lives; what it released waits for its guard, pinned when it deferred the drop.
        super::walk::load_word(self.view(), index).entry()
    }

    /// Iterates under the writer (see [`MapleTree::iter`](crate::MapleTree::iter)).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// w.store_range(20..=29, Value::new(2))?;
    /// let all: Vec<_> = w.iter().map(|(r, v)| (r, v.get())).collect();
    /// assert_eq!(all, [(0..=9, 1), (20..=29, 2)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn iter(&self) -> Iter<'_, E> {
        Iter::new(self.view(), 0, u64::MAX)
    }

    /// The reader view of the root, for reads under the writer borrowed from `&self` (the
    /// writer cannot write while they live).
    pub(crate) fn view(&self) -> RootRef<'_, Read, E> {
        self.lock.view()
    }

    /// Whether the tree's nodes come from huge-page chunks once it is big
    /// ([`Options::huge_pages`](crate::Options::huge_pages)).
    pub(crate) fn huge_pages(&self) -> bool {
        self.lock.huge_pages()
    }
}

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// The pinned guard of the tree's collector this writer defers frees on (RCU mode only).
    fn rcu_guard(&self) -> &'t Guard {
        let cell = self.guard.expect("RCU mode holds a guard cell");
        let root = self.root;
        cell.get_or_init(|| root.pin())
    }

    /// The reader view of the root, for the shared read code.
    pub(crate) fn view(&self) -> RootRef<'t, Read, E> {
        self.root.view()
    }

    /// A walker for the write paths (unbranded: they read words, never entries).
    pub(crate) fn walker(&self) -> Walker<'t, Write> {
        Walker::new(self.root.walk_root().unbranded())
    }

    /// Whether the tree is an allocation tree.
    pub(crate) fn is_alloc(&self) -> bool {
        self.internal == Kind::ARange
    }

    // ----- primitives ---------------------------------------------------------------------------

    /// A fresh, unpublished node (counted).
    pub(crate) fn alloc_node(&mut self, kind: Kind) -> Fresh<'t> {
        self.st.stats.nodes_allocated += 1;
        self.root.alloc(kind, self.mem)
    }

    /// A fresh copy of the live node `src` (see [`WriterRoot::alloc_copy`]), children `0..keep`
    /// re-parented to it. A leaf copy comes from never-used memory (the slab's fresh run, for
    /// the locality of the leaves an RCU fill ends with) only once the tree has allocated
    /// [`FRESH_AFTER`] nodes: before, the fresh run would take a chunk of its own, a second
    /// one for a small tree, whose few leaves lie together anyway.
    pub(crate) fn copy_node(&mut self, src: Live<'t>, keep: usize) -> Fresh<'t> {
        let fresh = self.st.stats.nodes_allocated >= FRESH_AFTER;
        self.st.stats.nodes_allocated += 1;
        self.root.alloc_copy(src, keep, self.mem, fresh)
    }

    /// Publishes `n` (fresh, fully written) as the new root (row P1).
    pub(crate) fn publish_root(&mut self, n: Fresh<'t>) {
        let old = self.root.publish(n);
        self.retire_old_root(old);
    }

    /// Grows the tree by one level: a fresh root over `items` (two or three nodes of the old top
    /// level, `u64::MAX` last), published by one store of the root word.
    pub(crate) fn grow_root(&mut self, items: &[Item<'t>]) {
        let root = self.alloc_node(self.internal);
        self.write_items(&root, items, u64::MAX);
        self.publish_root(root);
        self.st.height += 1;
        self.st.stats.grow += 1;
    }

    /// RCU mode: collects a finished seal lift and schedules the next (see `seal`); called at
    /// the start of every write, after the sealing stores of the writes before.
    pub(crate) fn schedule_seals(&mut self) {
        if let Some(cell) = self.guard {
            let root = self.root;
            self.st
                .seals
                .schedule(self.pending, || cell.get_or_init(|| root.pin()));
        }
    }

    /// Records, in RCU mode, that `pivot[offset]` of `n` was lowered in place (see `seal`).
    pub(crate) fn seal_lowered(&mut self, n: Live<'_>, offset: usize) {
        if !M::EXCLUSIVE {
            self.st.seals.lowered(n, offset);
        }
    }

    /// Records, in RCU mode, that `n`'s maximum shrank in place (see `seal`).
    pub(crate) fn seal_shrunk(&mut self, n: Live<'_>) {
        if !M::EXCLUSIVE {
            self.st.seals.shrunk(n);
        }
    }

    /// Whether slot `offset` of `n` may be re-pointed in place (`last`: it is the node's last
    /// slot). Always in exclusive mode; in RCU mode unless a lowered pivot seals it.
    pub(crate) fn may_repoint(&self, n: Live<'_>, offset: usize, last: bool) -> bool {
        M::EXCLUSIVE || self.st.seals.may_repoint(n, offset, last)
    }

    /// Whether the writer may write beyond `n`'s end in place (append into it).
    pub(crate) fn may_extend(&self, n: Live<'_>) -> bool {
        M::EXCLUSIVE || self.st.seals.may_extend(n)
    }

    /// RCU mode: publishes the fresh node `new` in place of the child that `ancestors` (root
    /// first, ending at its parent) lead to, covering the same range, and brings the recorded
    /// gaps up to date (`new_gap`: its largest gap). One Release store of the parent's slot —
    /// unless a lowered pivot seals that slot: then the parent is copied with `new` in it and
    /// replaces the parent the same way, one level up (the root word is never sealed). The
    /// replaced child and the copied parents are retired.
    #[inline]
    pub(crate) fn replace_child(
        &mut self,
        ancestors: &[Level<'t, Write>],
        new: Fresh<'t>,
        new_gap: u64,
    ) {
        // The common case first: the parent's slot is not sealed (or the child is the root).
        match ancestors.last() {
            None => self.publish_root(new),
            Some(&p)
                if self.may_repoint(
                    p.node,
                    p.offset,
                    p.node.slot_max(p.offset, p.max) == p.max,
                ) =>
            {
                if let Some(old) = p.node.publish_child(p.offset, new) {
                    self.retire(old);
                }
                self.propagate_gap(ancestors, new_gap);
            }
            Some(_) => self.replace_sealed_child(ancestors, new, new_gap),
        }
    }

    /// [`replace_child`](Self::replace_child) under a sealed parent slot: the parents are
    /// copied up to the first one whose slot may be re-pointed (or the root).
    #[cold]
    #[inline(never)]
    fn replace_sealed_child(
        &mut self,
        ancestors: &[Level<'t, Write>],
        mut new: Fresh<'t>,
        mut new_gap: u64,
    ) {
        let mut copied: SmallVec<[Live<'t>; 4]> = SmallVec::new();
        let mut d = ancestors.len();
        loop {
            let Some(up) = d.checked_sub(1) else {
                self.publish_root(new);
                break;
            };
            let p = ancestors[up];
            let last = p.node.slot_max(p.offset, p.max) == p.max;
            if self.may_repoint(p.node, p.offset, last) {
                if let Some(old) = p.node.publish_child(p.offset, new) {
                    self.retire(old);
                }
                self.propagate_gap(&ancestors[..d], new_gap);
                break;
            }
            let mut items: SmallVec<[Item<'t>; RANGE_SLOTS]> = SmallVec::new();
            let mut child = Some(new);
            for (i, (_, hi, s)) in p.node.slots(p.min, p.max, self.internal).enumerate() {
                if i == p.offset {
                    let n = child.take().expect("one slot holds the replaced child");
                    items.push(Item::fresh(hi, n, new_gap));
                } else {
                    let gap = self.recorded_gap(p.node, i);
                    items.push(Item { hi, slot: s, gap });
                }
            }
            assert!(
                child.is_none(),
                "maple tree: the replaced child's slot is past the end"
            );
            let copy = self.alloc_node(p.node.kind());
            self.write_items(&copy, &items, p.max);
            new_gap = self.node_max_gap(copy.node(), p.min, p.max);
            self.st.stats.sealed_copy += 1;
            copied.push(p.node);
            new = copy;
            d = up;
        }
        // The replaced child (or the topmost copied parent) is retired above; if parents were
        // copied, they and the replaced child below them are unlinked too. Readers that
        // reached them see them unchanged.
        if let (Some(&first), Some(p)) = (copied.first(), ancestors.last()) {
            debug_assert!(first == p.node);
            copied.push(p.node.child(p.offset, self.internal));
        }
        for n in copied {
            self.retire_node(n);
        }
    }

    /// Retires the unlinked node `u`: dead for readers, freed after a grace period (in
    /// exclusive mode at once), once the guard's borrow that made this writer ends. Nothing if
    /// it was retired already.
    pub(crate) fn retire(&mut self, u: Unlinked<'t>) {
        if !M::EXCLUSIVE {
            self.st.seals.forget(u.addr());
        }
        if self.root.retire(u, self.mem) {
            if !M::EXCLUSIVE {
                self.pending.add_node();
            }
            self.st.stats.nodes_freed += 1;
        }
    }

    /// Retires `n`, a node this write unlinked (a consumed node of a rebuild, a node of a
    /// removed subtree, a copied parent), after the node layer checks that it is unlinked
    /// ([`WriterRoot::unlinked`]); a node still linked is left alone (a bug: debug builds panic).
    pub(crate) fn retire_node(&mut self, n: Live<'t>) {
        match self.root.unlinked(n) {
            Some(u) => self.retire(u),
            None => debug_assert!(false, "maple tree: retiring a linked node {n:?}"),
        }
    }

    /// Retires the old root a root publication unlinked, if there was one.
    pub(crate) fn retire_old_root(&mut self, old: Option<Unlinked<'t>>) {
        if let Some(u) = old {
            self.retire(u);
        }
    }

    /// A slot of the live tree stopped referencing `w`: the entry is dropped unless another
    /// slot shares it (the [`Ledger`] decides).
    pub(crate) fn release_entry(&mut self, w: Word<E>) {
        if w.is_null() {
            return;
        }
        self.add_len(-1);
        let Some(r) = self.st.ledger.release(w) else {
            return;
        };
        // Both modes: dropped (exclusive mode) or handed to the collector (RCU mode) only once
        // the write is complete (`drop_released`). In RCU mode the slot that held the word may
        // still be published here (a node store releases before it publishes the new leaf): a
        // drop deferred now could be handed to the collector before that publication (a full
        // bag, or the pacing flush), and a reader pinned after the hand-over but before the
        // publication could load the word and keep it past its free. In exclusive mode an
        // entry's `Drop` may panic, and the tree must be whole and valid by then.
        self.st.ledger.queue(r);
    }

    /// Ends a write: the entries it released leave the tree's ownership. Exclusive mode drops
    /// them now: if one entry's `Drop` panics, the rest are still dropped (once each) while the
    /// panic unwinds, and the tree is already in its new, valid state. RCU mode hands them to
    /// the collector, on the writer's guard, after the write's last publishing store: a reader
    /// that could still load one of them was pinned before this deferral, so its guard holds
    /// the drop back.
    #[inline]
    pub(crate) fn drop_released(&mut self) {
        if self.st.ledger.has_queued() {
            if M::EXCLUSIVE {
                self.drop_released_slow();
            } else {
                self.defer_released();
            }
        }
    }

    /// RCU mode: see [`drop_released`](Self::drop_released).
    #[cold]
    fn defer_released(&mut self) {
        let Some(rcu) = self.root.rcu() else {
            return;
        };
        let guard = self.rcu_guard();
        let mut n = 0;
        while let Some(r) = self.st.ledger.dequeue() {
            let pending = Arc::clone(self.pending);
            pending.add_entry();
            // The drop waits for every guard that could still read the word, and runs on
            // whichever thread collects, long after the write returned: a panic in the entry's
            // `Drop` is contained there, so that the collector's other deferred frees still run.
            rcu.defer_drop_entry(r, guard, move || pending.sub_entry());
            n += 1;
        }
        super::node::paced_defers(guard, n);
    }

    #[cold]
    fn drop_released_slow(&mut self) {
        // Each word was queued once by `release_entry`, when the last slot referencing it went,
        // and is dequeued once; no reader exists (`&mut` tree).
        struct DropRest<'a, 't, E: Entry>(&'a mut Ledger<E>, WriterRoot<'t, Exclusive, E>);
        impl<E: Entry> Drop for DropRest<'_, '_, E> {
            fn drop(&mut self) {
                while let Some(r) = self.0.dequeue() {
                    self.1.drop_entry_now(r);
                }
            }
        }
        // If a drop below panics, `rest` is dropped while unwinding and drops the others.
        let Some(root) = self.root.exclusive() else {
            return; // RCU mode releases nothing here
        };
        let rest = DropRest(&mut self.st.ledger, root);
        while let Some(r) = rest.0.dequeue() {
            rest.1.drop_entry_now(r);
        }
    }

    /// A range split around a new entry: `w` is now referenced by one more slot.
    pub(crate) fn share_entry(&mut self, w: Word<E>) {
        if w.is_null() {
            return;
        }
        self.add_len(1);
        self.st.ledger.share(w);
    }

    /// Writes `items` into the fresh node `n` covering `[.., max]`: slots, pivots (with
    /// `pivot[end] = max` when there is room), gaps, and re-parents children. Nothing beyond the
    /// items is written: a node from [`alloc_node`](Self::alloc_node) is zero there, and words
    /// beyond a node's end are unspecified anyway (node.rs, "Layout").
    pub(crate) fn write_items(&self, n: &Fresh<'_>, items: &[Item<'_>], max: u64) {
        let len = items.len();
        assert!(
            len >= 1 && len <= n.node().kind().slots(),
            "maple tree: {len} items for one node"
        );
        debug_assert_eq!(items[len - 1].hi, max);
        self.write_items_at(n, 0, items);
    }

    /// Writes `items` into the fresh node `n` from slot `from` on (slots, pivots, gaps), the
    /// slots before left as they are.
    #[inline]
    pub(crate) fn write_items_at(&self, n: &Fresh<'_>, from: usize, items: &[Item<'_>]) {
        self.put_items(n.node(), from, items);
    }

    /// The stores of [`write_items_at`](Self::write_items_at), one loop per node kind.
    #[inline]
    pub(crate) fn put_items(&self, n: Live<'_>, from: usize, items: &[Item<'_>]) {
        let kind = n.kind();
        let p = kind.pivots();
        if kind == Kind::Leaf {
            for (j, it) in (from..).zip(items) {
                let Slot::Entry(w) = it.slot else {
                    panic!("maple tree: a child stored into a leaf");
                };
                n.init_entry(j, Word::<E>::leaf(w));
                if j < p {
                    n.init_pivot(j, it.hi);
                }
            }
            return;
        }
        for (j, it) in (from..).zip(items) {
            match it.slot {
                Slot::Entry(_) => panic!("maple tree: an entry stored into an internal node"),
                Slot::Child(c) => n.init_child(j, c),
            }
            if j < p {
                n.init_pivot(j, it.hi);
            }
            if kind == Kind::ARange {
                gaps::put_gap(n, j, it.gap);
            }
        }
    }

    /// [`write_items`](Self::write_items) into a live node rewritten in place (exclusive mode,
    /// no reader): the slots the node used beyond the new items are zeroed too, so that no
    /// stale child or entry word stays behind them.
    pub(crate) fn rewrite_items(&self, n: Live<'_>, items: &[Item<'_>], max: u64) {
        let kind = n.kind();
        let len = items.len();
        assert!(
            len >= 1 && len <= kind.slots(),
            "maple tree: {len} items for one node"
        );
        debug_assert_eq!(items[len - 1].hi, max);
        let old_end = n.end(max);
        self.put_items(n, 0, items);
        n.clear_slots(len..old_end + 1);
    }

    /// Removes a whole subtree (covering `[min, max]`) lying inside a write: its entries are
    /// released, its nodes retired.
    pub(crate) fn remove_subtree(
        &mut self,
        n: Live<'t>,
        min: u64,
        max: u64,
        retired: &mut Retired<'t>,
    ) {
        for (lo, hi, s) in n.slots(min, max, self.internal) {
            match s {
                Slot::Entry(w) => self.release_entry(Word::leaf(w)),
                Slot::Child(c) => self.remove_subtree(c, lo, hi, retired),
            }
        }
        retired.push(n);
    }

    // ----- the store --------------------------------------------------------------------------

    /// Adjusts the count of ranges holding an entry (the writer is the only one changing it).
    #[inline]
    pub(crate) fn add_len(&self, d: isize) {
        let n = self.len.load(StdOrdering::Relaxed);
        self.len
            .store(n.wrapping_add_signed(d), StdOrdering::Relaxed);
    }
}
