//! The writer: the write guard, store classification and the in-place fast paths.
//!
//! A store first walks to the leaf holding `first`. If the write stays inside that leaf it is
//! classified as the kernel's `mas_wr_store_type` does and, where the mode allows, done in place:
//!
//! | path | exclusive (`&mut`) | RCU (`&self` + lock) | why it is safe under readers |
//! |---|---|---|---|
//! | exact fit | in place | in place | one Release store of the slot |
//! | append `+1` at the end | in place | in place | new slot/pivot written beyond the end, then the old end pivot lowered by one Release store |
//! | three-way append | in place | in place | two new slots and their pivots beyond the end, then the old end pivot lowered last |
//! | append `+1` at the start | in place | node store | it moves a boundary of a range that stays visible |
//! | slot store (2 or 3 slots) | in place | node store | same |
//! | node store, split, rebalance, spanning | `rebuild` | `rebuild` (fresh nodes, one pointer publish) | readers see the old or the new subtree |
//!
//! Readers find a node's end from its pivots only (see `node`), which is what makes both appends
//! safe: until the old end pivot is lowered, every slot beyond it is unreachable, and once it is
//! lowered everything beyond it is already written.

use core::marker::PhantomData;

use crossbeam_epoch::{Collector, Guard};
use smallvec::SmallVec;

use crate::entry::{Entry, Owned, ZERO_WORD};
use crate::error::Error;
use crate::sync::MutexGuard;
use core::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};
use std::sync::Arc;

use super::pending::Pending;

use super::append::LastSlot;
use super::node::{Fresh, Kind, Loaded, NodeRef, Slot, WriterRoot, RANGE_PIVOTS, RANGE_SLOTS};
use super::rebuild::{Path, Retired};
use super::walk::{Level, Walker};
use super::{MapleTree, WriterState};

/// One slot of a level being rebuilt: its upper bound, its word (entry or child node) and, for
/// children of allocation trees, the child's largest gap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item<'g> {
    pub(crate) hi: u64,
    pub(crate) slot: Slot<'g>,
    pub(crate) gap: u64,
}

impl<'g> Item<'g> {
    /// A leaf slot holding the entry word `word` (leaves keep no gaps per slot).
    #[inline]
    pub(crate) const fn slot(hi: u64, word: usize) -> Self {
        Item {
            hi,
            slot: Slot::Entry(word),
            gap: 0,
        }
    }

    /// An internal slot holding the fresh node `child` (handed over to the fresh parent these
    /// items are written into), whose largest gap is `gap`.
    #[inline]
    pub(crate) fn fresh(hi: u64, child: Fresh<'g>, gap: u64) -> Self {
        Self::child(hi, child.into_child(), gap)
    }

    /// An internal slot holding `child`, whose largest gap is `gap`.
    #[inline]
    pub(crate) const fn child(hi: u64, child: NodeRef<'g>, gap: u64) -> Self {
        Item {
            hi,
            slot: Slot::Child(child),
            gap,
        }
    }

    /// An empty leaf slot.
    #[inline]
    pub(crate) fn is_null(&self) -> bool {
        self.slot.is_null()
    }
}

/// The items of a level being rebuilt.
#[derive(Clone, Default)]
pub(crate) struct Items<'g>(SmallVec<[Item<'g>; 48]>);

impl<'g> Items<'g> {
    pub(crate) fn new() -> Self {
        Items(SmallVec::new())
    }
    #[inline]
    pub(crate) fn push(&mut self, it: Item<'g>) {
        self.0.push(it);
    }
    pub(crate) fn extend(&mut self, other: &[Item<'g>]) {
        self.0.extend_from_slice(other);
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Item<'g> {
        self.0[i]
    }
    #[inline]
    pub(crate) fn set(&mut self, i: usize, it: Item<'g>) {
        self.0[i] = it;
    }
    pub(crate) fn last(&self) -> Item<'g> {
        self.0[self.0.len() - 1]
    }
    pub(crate) fn truncate(&mut self, n: usize) {
        self.0.truncate(n);
    }
    pub(crate) fn as_slice(&self) -> &[Item<'g>] {
        &self.0
    }
}

pub(crate) enum StateRef<'t> {
    Locked(MutexGuard<'t, WriterState>),
    Exclusive(&'t mut WriterState),
}

impl core::ops::Deref for StateRef<'_> {
    type Target = WriterState;
    fn deref(&self) -> &WriterState {
        match self {
            StateRef::Locked(g) => g,
            StateRef::Exclusive(r) => r,
        }
    }
}
impl core::ops::DerefMut for StateRef<'_> {
    fn deref_mut(&mut self) -> &mut WriterState {
        match self {
            StateRef::Locked(g) => &mut *g,
            StateRef::Exclusive(r) => r,
        }
    }
}

/// The writer: holds the tree's lock (RCU mode, from [`MapleTree::lock`]) or its exclusive
/// borrow ([`MapleTree::exclusive`]). Every write method of the tree lives here; reads through it
/// see the writer's own changes at once.
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// let mut tree = MapleTree::<Value>::new();
/// {
///     let mut w = tree.exclusive(); // no readers: in place, frees at once
///     for i in 0..100u64 {
///         w.store_range(i * 10, i * 10 + 5, Value::new(i)).unwrap();
///     }
/// }
/// assert_eq!(tree.get(995), Some(Value::new(99)));
/// tree.validate().unwrap();
/// ```
pub struct WriteGuard<'t, E> {
    pub(crate) root: WriterRoot<'t>,
    pub(crate) internal: Kind,
    pub(crate) st: StateRef<'t>,
    /// RCU mode: the pinned guard replaced nodes and entries are deferred on (none in exclusive
    /// mode, which frees at once).
    guard: Option<Guard>,
    pub(crate) exclusive: bool,
    /// The tree's count of ranges holding an entry (see [`MapleTree::len`]).
    pub(crate) len: &'t StdAtomicUsize,
    /// The tree's pending-frees counters.
    pub(crate) pending: &'t Arc<Pending>,
    _e: PhantomData<E>,
}

/// Outcome of the single-leaf classification.
enum Leafed {
    Done(u64, u64),
    Rebuild(u64, u64),
}

impl<'t, E: Entry> WriteGuard<'t, E> {
    pub(crate) fn new_rcu(tree: &'t MapleTree<E>) -> Self {
        let lock = tree.writer.lock();
        let root = tree.root.locked(&lock);
        WriteGuard {
            root,
            internal: tree.internal,
            st: StateRef::Locked(lock),
            guard: Some(tree.pin()),
            exclusive: false,
            len: &tree.len,
            pending: &tree.pending,
            _e: PhantomData,
        }
    }

    pub(crate) fn new_exclusive(tree: &'t mut MapleTree<E>) -> Self {
        let MapleTree {
            root,
            internal,
            writer,
            len,
            pending,
            ..
        } = tree;
        let st = writer.get_mut();
        // `&mut` tree: no reader exists, none can hold a value an earlier store replaced.
        st.seals.clear();
        WriteGuard {
            root: root.exclusive(),
            internal: *internal,
            st: StateRef::Exclusive(st),
            guard: None,
            exclusive: true,
            len,
            pending,
            _e: PhantomData,
        }
    }

    /// The pinned guard of the tree's collector this writer defers frees on (RCU mode only).
    fn rcu_guard(&self) -> &Guard {
        self.guard.as_ref().expect("RCU mode holds a pinned guard")
    }

    pub(crate) fn walker(&self) -> Walker<'t> {
        Walker::new(self.root.view())
    }

    /// Whether the tree is an allocation tree.
    pub(crate) fn is_alloc(&self) -> bool {
        self.internal == Kind::ARange
    }

    // ----- primitives ---------------------------------------------------------------------------

    /// A fresh, unpublished node (counted).
    pub(crate) fn alloc_node(&mut self, kind: Kind) -> Fresh<'t> {
        self.st.stats.nodes_allocated += 1;
        self.root.alloc(kind)
    }

    /// Publishes `n` (fresh, fully written) as the new root (row P1).
    pub(crate) fn publish_root(&self, n: Fresh<'t>) {
        self.root.publish(n);
    }

    /// Grows the tree by one level: a fresh root over `items` (two or three nodes of the old top
    /// level, `u64::MAX` last), published by one store of the root word.
    pub(crate) fn grow_root(&mut self, items: &[Item<'t>]) {
        let root = self.alloc_node(self.internal);
        self.write_items(root.node(), items, u64::MAX);
        self.publish_root(root);
        self.st.height += 1;
        self.st.stats.grow += 1;
    }

    /// Records, in RCU mode, that `pivot[offset]` of `n` was lowered in place (see `seal`).
    pub(crate) fn seal_lowered(&mut self, n: NodeRef<'_>, offset: usize) {
        if !self.exclusive {
            self.st.seals.lowered(n, offset);
        }
    }

    /// Records, in RCU mode, that `n`'s maximum shrank in place (see `seal`).
    pub(crate) fn seal_shrunk(&mut self, n: NodeRef<'_>) {
        if !self.exclusive {
            self.st.seals.shrunk(n);
        }
    }

    /// Whether slot `offset` of `n` may be re-pointed in place (`last`: it is the node's last
    /// slot). Always in exclusive mode; in RCU mode unless a lowered pivot seals it.
    pub(crate) fn may_repoint(&self, n: NodeRef<'_>, offset: usize, last: bool) -> bool {
        self.exclusive || self.st.seals.may_repoint(n, offset, last)
    }

    /// Whether the writer may write beyond `n`'s end in place (append into it).
    pub(crate) fn may_extend(&self, n: NodeRef<'_>) -> bool {
        self.exclusive || self.st.seals.may_extend(n)
    }

    /// RCU mode: publishes the fresh node `new` in place of the child that `ancestors` (root
    /// first, ending at its parent) lead to, covering the same range, and brings the recorded
    /// gaps up to date (`new_gap`: its largest gap). One Release store of the parent's slot —
    /// unless a lowered pivot seals that slot: then the parent is copied with `new` in it and
    /// replaces the parent the same way, one level up (the root word is never sealed). Copied
    /// parents are retired.
    pub(crate) fn replace_child(
        &mut self,
        ancestors: &[Level<'t>],
        mut new: Fresh<'t>,
        mut new_gap: u64,
    ) {
        let mut copied: SmallVec<[NodeRef<'t>; 4]> = SmallVec::new();
        let mut d = ancestors.len();
        loop {
            let Some(up) = d.checked_sub(1) else {
                self.publish_root(new);
                break;
            };
            let p = ancestors[up];
            let last = p.node.slot_max(p.offset, p.max) == p.max;
            if self.may_repoint(p.node, p.offset, last) {
                p.node.publish_child(p.offset, new);
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
                    let gap = if self.is_alloc() { p.node.gap(i) } else { 0 };
                    items.push(Item { hi, slot: s, gap });
                }
            }
            assert!(
                child.is_none(),
                "maple tree: the replaced child's slot is past the end"
            );
            let copy = self.alloc_node(p.node.kind());
            self.write_items(copy.node(), &items, p.max);
            new_gap = self.node_max_gap(copy.node(), p.min, p.max);
            self.st.stats.sealed_copy += 1;
            copied.push(p.node);
            new = copy;
            d = up;
        }
        // Unlinked now; readers that reached them see them unchanged.
        for n in copied {
            self.retire_node(n);
        }
    }

    /// Replaced node: dead for readers, freed after a grace period (at once in exclusive mode).
    ///
    /// Callers retire a node only after unlinking it (a new pointer published in its place, or
    /// its whole subtree unlinked), and each node exactly once (see [`WriterRoot`]).
    pub(crate) fn retire_node(&mut self, n: NodeRef<'t>) {
        self.st.stats.nodes_freed += 1;
        match &self.guard {
            None => self.root.retire(n, None, || {}),
            Some(g) => {
                self.pending.add_node();
                let pending = Arc::clone(self.pending);
                self.root.retire(n, Some(g), move || pending.sub_node());
            }
        }
    }

    /// A slot stopped referencing `w`: drop the entry unless another slot shares it.
    pub(crate) fn release_entry(&mut self, w: usize) {
        if w == 0 {
            return;
        }
        self.add_len(-1);
        if w == ZERO_WORD || !core::mem::needs_drop::<E>() {
            return;
        }
        if let Some(c) = self.st.multi.get_mut(&w) {
            *c -= 1;
            if *c == 0 {
                self.st.multi.remove(&w);
            }
            return;
        }
        if self.exclusive {
            // Dropped when the write is complete (`drop_released`): an entry's `Drop` may panic,
            // and the tree must be whole and valid by then.
            self.st.released.push(w);
            return;
        }
        let pending = Arc::clone(self.pending);
        pending.add_entry();
        // `w` is a live entry word that no slot references any more (shared words were handled
        // above). The drop waits for every guard that could still read it, and runs on whichever
        // thread collects, long after the write returned: a panic in the entry's `Drop` is
        // contained there, so that the collector's other deferred frees still run.
        self.root
            .defer_drop_entry::<E>(w, self.rcu_guard(), move || pending.sub_entry());
    }

    /// Exclusive mode: drops the entries the completed write released. If one entry's `Drop`
    /// panics, the rest are still dropped (once each) while the panic unwinds, and the tree is
    /// already in its new, valid state.
    #[inline]
    pub(crate) fn drop_released(&mut self) {
        if !self.st.released.is_empty() {
            self.drop_released_slow();
        }
    }

    #[cold]
    fn drop_released_slow(&mut self) {
        // Each word was pushed once by `release_entry`, when the last slot referencing it went,
        // and is popped once; no reader exists (`&mut` tree).
        struct DropRest<'a, 't, E: Entry>(&'a mut Vec<usize>, WriterRoot<'t>, PhantomData<E>);
        impl<E: Entry> Drop for DropRest<'_, '_, E> {
            fn drop(&mut self) {
                while let Some(w) = self.0.pop() {
                    self.1.drop_entry_now::<E>(w);
                }
            }
        }
        // If a drop below panics, `rest` is dropped while unwinding and drops the others.
        let root = self.root;
        let rest = DropRest::<E>(&mut self.st.released, root, PhantomData);
        while let Some(w) = rest.0.pop() {
            rest.1.drop_entry_now::<E>(w);
        }
    }

    /// A range split around a new entry: `w` is now referenced by one more slot.
    pub(crate) fn share_entry(&mut self, w: usize) {
        if w == 0 {
            return;
        }
        self.add_len(1);
        if w == ZERO_WORD || !core::mem::needs_drop::<E>() {
            return;
        }
        *self.st.multi.entry(w).or_insert(0) += 1;
    }

    /// Writes `items` into node `n` covering `[min, max]`: slots, pivots (with `pivot[end] =
    /// max` when there is room), zeroes beyond, gaps, and re-parents children.
    #[allow(clippy::needless_range_loop)] // `j` indexes the node's slots, past `items` too
    pub(crate) fn write_items(&self, n: NodeRef<'_>, items: &[Item<'_>], max: u64) {
        let kind = n.kind();
        let p = kind.pivots();
        let len = items.len();
        assert!(
            len >= 1 && len <= kind.slots(),
            "maple tree: {len} items for one node"
        );
        debug_assert_eq!(items[len - 1].hi, max);
        for j in 0..kind.slots() {
            if j < len {
                let it = items[j];
                match it.slot {
                    Slot::Entry(w) => n.init_entry(j, w),
                    Slot::Child(c) => n.init_child(j, c),
                }
                if j < p {
                    n.init_pivot(j, it.hi);
                }
                if kind == Kind::ARange {
                    n.set_gap(j, it.gap);
                }
            } else {
                n.clear_slot(j);
                if j < p {
                    n.init_pivot(j, 0);
                }
                if kind == Kind::ARange {
                    n.set_gap(j, 0);
                }
            }
        }
    }

    /// Largest gap in `n`'s subtree (leaves: computed from NULL slots; allocation-tree internal
    /// nodes: the largest child gap; 0 for range-tree internal nodes).
    pub(crate) fn node_max_gap(&self, n: NodeRef<'_>, min: u64, max: u64) -> u64 {
        match n.kind() {
            Kind::Leaf => super::gap::leaf_max_gap(n, min, max),
            Kind::ARange => {
                let end = n.end(max);
                (0..=end).map(|i| n.gap(i)).max().unwrap_or(0)
            }
            Kind::Range => 0,
        }
    }

    /// After the child at the last level's offset changed its largest gap to `g`, update the
    /// ancestors upwards until a level's maximum does not change.
    ///
    /// A node's largest gap before the change is what its parent records for it, so most levels
    /// decide without scanning their gaps: a raised gap at or above that maximum is the new
    /// maximum; a lowered gap that was not the maximum changes nothing; a lowered maximum is still
    /// the maximum when it is at least the number of indices left and right of the child (every
    /// other child's gap is bounded by its span) — the in-order append case, where the huge gap
    /// at the right edge shrinks by one range at a time. Only the rest scans the node.
    pub(crate) fn propagate_gap(&self, ancestors: &[Level<'_>], mut g: u64) {
        if !self.is_alloc() {
            return;
        }
        for (k, lvl) in ancestors.iter().enumerate().rev() {
            let n = lvl.node;
            let o = lvl.offset;
            let old = n.gap(o);
            if old == g {
                return;
            }
            n.set_gap(o, g);
            let Some(up) = k.checked_sub(1).map(|u| ancestors[u]) else {
                return; // the root: nothing records its maximum
            };
            let old_max = up.node.gap(up.offset);
            let new_max = if g >= old_max {
                g
            } else if old < old_max {
                return;
            } else {
                let clo = if o == 0 { lvl.min } else { n.pivot(o - 1) + 1 };
                let chi = n.slot_max(o, lvl.max);
                if g >= clo - lvl.min && g >= lvl.max - chi {
                    g
                } else {
                    let end = n.end(lvl.max);
                    (0..=end).map(|i| n.gap(i)).max().unwrap_or(0)
                }
            };
            if new_max == old_max {
                return;
            }
            g = new_max;
        }
    }

    /// Removes a whole subtree (covering `[min, max]`) lying inside a write: its entries are
    /// released, its nodes retired.
    pub(crate) fn remove_subtree(
        &mut self,
        n: NodeRef<'t>,
        min: u64,
        max: u64,
        retired: &mut Retired<'t>,
    ) {
        for (lo, hi, s) in n.slots(min, max, self.internal) {
            match s {
                Slot::Entry(w) => self.release_entry(w),
                Slot::Child(c) => self.remove_subtree(c, lo, hi, retired),
            }
        }
        retired.push(n);
    }

    // ----- the store --------------------------------------------------------------------------

    /// Stores `entry` (0 = nothing) over `[first, last]`; returns the range written (a NULL
    /// store reports the widened NULL range). `first <= last` is the caller's job.
    pub(crate) fn write(&mut self, first: u64, last: u64, entry: usize) -> (u64, u64) {
        let mut w = self.walker();
        // The saved path is emptied at the start of every write (`write_from`, `clear`) and
        // saved again only at the end of an in-place append, which changes no node's place or
        // limits; so a non-empty one still describes the live tree (`restore` checks every node
        // of it against the tree's own words anyway).
        let walked = w.restore(self.root, &self.st.saved, first);
        self.write_from(&mut w, walked, first, last, entry)
    }

    /// [`write`](Self::write), reusing a walker already positioned on the slot holding `first`.
    pub(crate) fn write_from(
        &mut self,
        lw: &mut Walker<'t>,
        walked: bool,
        first: u64,
        last: u64,
        entry: usize,
    ) -> (u64, u64) {
        if entry != 0 {
            // The new range; what it overwrites is counted down by `release_entry` (a range
            // removed) and up by `share_entry` (a range split in two).
            self.add_len(1);
        }
        let r = self.store_from(lw, walked, first, last, entry);
        self.drop_released();
        r
    }

    /// Adjusts the count of ranges holding an entry (the writer is the only one changing it).
    #[inline]
    pub(crate) fn add_len(&self, d: isize) {
        let n = self.len.load(StdOrdering::Relaxed);
        self.len
            .store(n.wrapping_add_signed(d), StdOrdering::Relaxed);
    }

    /// The number of ranges holding an entry or the zero entry (see [`MapleTree::len`]).
    pub fn len(&self) -> usize {
        self.len.load(StdOrdering::Relaxed)
    }

    /// Whether the tree holds nothing (`len() == 0`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The store itself; the caller drops the entries it released once it is complete.
    fn store_from(
        &mut self,
        lw: &mut Walker<'t>,
        walked: bool,
        first: u64,
        last: u64,
        entry: usize,
    ) -> (u64, u64) {
        debug_assert!(first <= last);
        self.st.saved.clear();
        if let Some(g) = &self.guard {
            self.st.seals.schedule(g);
        }
        let Some(old) = self.root.node() else {
            if entry == 0 {
                return (0, u64::MAX);
            }
            self.new_leaf_root(first, last, entry);
            return (first, last);
        };
        // A whole-space store is a new root (`wr_new_root`), unless one slot already covers the
        // whole space: then it is an exact fit (step 4 comes first).
        if first == 0
            && last == u64::MAX
            && !(lw.walk(0).is_some() && lw.lo == 0 && lw.hi == u64::MAX)
        {
            let mut retired = Retired::new();
            self.remove_subtree(old, 0, u64::MAX, &mut retired);
            if entry == 0 {
                self.root.publish_empty();
                self.st.height = 0;
                self.st.stats.new_root += 1;
            } else {
                self.new_leaf_root(0, u64::MAX, entry); // counts the new root
            }
            for n in retired {
                self.retire_node(n);
            }
            return (0, u64::MAX);
        }
        let (a, b) = self.write_in_tree(lw, walked, first, last, entry);
        if entry == 0 && a == 0 && b == u64::MAX {
            // Nothing is left: the single NULL leaf goes, the tree becomes empty (as
            // `mas_new_root` of a NULL does).
            self.clear();
        }
        (a, b)
    }

    fn write_in_tree(
        &mut self,
        lw: &mut Walker<'t>,
        walked: bool,
        first: u64,
        last: u64,
        entry: usize,
    ) -> (u64, u64) {
        if !walked {
            lw.walk(first).expect("non-empty tree");
        }
        if self.exact_fit_at(lw, first, last, entry) {
            return (first, last);
        }
        let lw = &*lw;
        // An append into the leaf's last slot (the slot reaches the leaf's max): no leaf image.
        let leaf_max = lw.leaf().max;
        if entry != 0
            && self.st.append
            && lw.hi == leaf_max
            && last <= leaf_max
            && self.append_in_place(lw, lw.lo, lw.word.raw(), first, last, entry)
        {
            return (first, last);
        }
        let leaf = *lw.leaf();
        if last < leaf.max || (last == leaf.max && (entry != 0 || leaf.max == u64::MAX)) {
            match self.leaf_store(lw, first, last, entry) {
                Leafed::Done(a, b) => return (a, b),
                Leafed::Rebuild(a, b) => {
                    let lpath = Path::from_walker(lw);
                    let r = self.rebuild(lpath.clone(), lpath, a, b, entry);
                    return (r.first, r.last);
                }
            }
        }
        let mut rw = self.walker();
        rw.walk(last).expect("non-empty tree");
        let r = self.rebuild(
            Path::from_walker(lw),
            Path::from_walker(&rw),
            first,
            last,
            entry,
        );
        (r.first, r.last)
    }

    /// The exact fit without the leaf image (`wr_exact_fit`): `[first, last]` is exactly the
    /// walker's slot and `entry` is not NULL (a NULL store may widen over empty neighbours, so it
    /// takes the general path). One Release store of the slot; the walker stays valid and now
    /// reports `entry`. `false`, with nothing done, when the store is not an exact fit.
    pub(crate) fn exact_fit_at(
        &mut self,
        lw: &mut Walker<'t>,
        first: u64,
        last: u64,
        entry: usize,
    ) -> bool {
        if entry == 0 || lw.depth == 0 || lw.lo != first || lw.hi != last {
            return false;
        }
        let leaf = *lw.leaf();
        if !self.may_repoint(leaf.node, leaf.offset, lw.hi == leaf.max) {
            self.st.stats.sealed_repoint += 1;
            return false; // the leaf store copies the leaf instead
        }
        let old = lw.word.raw();
        if old != entry {
            leaf.node.publish_entry(leaf.offset, entry);
            lw.word = leaf.node.leaf_word(leaf.offset);
            self.release_entry(old);
            self.after_leaf_change(lw, old == 0);
        } else {
            self.add_len(-1); // the range was already counted
        }
        self.st.stats.exact_fit += 1;
        true
    }

    fn new_leaf_root(&mut self, first: u64, last: u64, entry: usize) {
        let mut items = Items::new();
        if first > 0 {
            items.push(Item::slot(first - 1, 0));
        }
        items.push(Item::slot(last, entry));
        if last < u64::MAX {
            items.push(Item::slot(u64::MAX, 0));
        }
        let n = self.alloc_node(Kind::Leaf);
        self.write_items(n.node(), items.as_slice(), u64::MAX);
        self.publish_root(n);
        self.st.height = 1;
        self.st.stats.new_root += 1;
    }

    /// A write inside one leaf: the fast paths, or a request to rebuild (node store, split,
    /// rebalance) with the NULL-widened range.
    fn leaf_store(
        &mut self,
        lw: &Walker<'t>,
        mut first: u64,
        mut last: u64,
        entry: usize,
    ) -> Leafed {
        let leaf = *lw.leaf();
        let n = leaf.node;
        let (min, max) = (leaf.min, leaf.max);
        let end = n.end(max);
        // Leaf image.
        let mut los = [0u64; RANGE_SLOTS];
        let mut his = [0u64; RANGE_SLOTS];
        let mut ws = [0usize; RANGE_SLOTS];
        let mut lo = min;
        for i in 0..=end {
            let hi = if i < RANGE_PIVOTS {
                n.range_pivot(i).min(max)
            } else {
                max
            };
            los[i] = lo;
            his[i] = hi;
            ws[i] = n.range_slot(i);
            lo = hi.wrapping_add(1);
        }
        let mut off = leaf.offset;
        let mut off_end = off;
        while off_end < end && his[off_end] < last {
            off_end += 1;
        }
        if entry == 0 {
            // NULL widening within the leaf (`mas_wr_extend_null`).
            if ws[off] == 0 {
                first = los[off];
            } else if first == los[off] && off > 0 && ws[off - 1] == 0 {
                off -= 1;
                first = los[off];
            }
            if ws[off_end] == 0 {
                last = his[off_end];
            } else if last == his[off_end] && off_end < end && ws[off_end + 1] == 0 {
                off_end += 1;
                last = his[off_end];
            }
            if last == max && max != u64::MAX {
                // The leaf would end in NULL: merge with the next leaf.
                return Leafed::Rebuild(first, last);
            }
        }
        let r_min = los[off];
        let end_piv = his[off_end];
        let new_end =
            end + 2 - (off_end - off) - usize::from(r_min == first) - usize::from(end_piv == last);
        let is_root = lw.depth == 1;

        // Exact fit (in place unless a lowered pivot seals the slot: then a node store).
        if off == off_end
            && r_min == first
            && end_piv == last
            && self.may_repoint(n, off, end_piv == max)
        {
            let old = ws[off];
            if old != entry {
                n.publish_entry(off, entry);
                self.release_entry(old);
                self.after_leaf_change(lw, (old == 0) != (entry == 0));
            } else if entry != 0 {
                self.add_len(-1); // the range was already counted
            }
            self.st.stats.exact_fit += 1;
            return Leafed::Done(first, last);
        }
        if new_end >= RANGE_SLOTS && self.st.append && off == end && max == u64::MAX && end >= 2 {
            // In-order append into the full rightmost leaf: split by truncation (append.rs).
            let ls = LastSlot {
                end,
                r_min,
                content: ws[end],
                prev_hi: his[end - 1],
                prev_word: ws[end - 1],
                prev2_hi: his[end - 2],
            };
            self.append_split(lw, first, last, entry, ls);
            return Leafed::Done(first, last);
        }
        if new_end >= RANGE_SLOTS || (new_end < Kind::Leaf.min_end() && !is_root && max != u64::MAX)
        {
            return Leafed::Rebuild(first, last);
        }
        // Appends: the write starts in the last slot.
        if self.st.append && off == end && new_end > end {
            if self.append_in_place(lw, r_min, ws[end], first, last, entry) {
                return Leafed::Done(first, last);
            }
            if !self.may_extend(n) {
                self.st.stats.sealed_extend += 1;
            }
        }
        // Slot stores: the slot count does not change (exclusive mode only).
        if self.exclusive && new_end == end {
            if off_end == off + 1 {
                if r_min == first {
                    let old = ws[off];
                    n.init_entry(off, entry);
                    n.init_pivot(off, last);
                    self.release_entry(old);
                } else {
                    let old = ws[off + 1];
                    n.init_entry(off + 1, entry);
                    n.init_pivot(off, first - 1);
                    self.release_entry(old);
                }
                self.st.stats.slot_store += 1;
                self.after_leaf_change(lw, true);
                return Leafed::Done(first, last);
            }
            if off_end == off + 2 {
                let old = ws[off + 1];
                n.init_entry(off + 1, entry);
                n.init_pivot(off, first - 1);
                n.init_pivot(off + 1, last);
                self.release_entry(old);
                self.st.stats.slot_store3 += 1;
                self.after_leaf_change(lw, true);
                return Leafed::Done(first, last);
            }
        }
        // Node store: the leaf rebuilt as one node (fresh in RCU mode, in place otherwise).
        let mut items: [Item<'t>; RANGE_SLOTS] = [Item::slot(0, 0); RANGE_SLOTS];
        let mut len = 0;
        let mut push = |it: Item<'t>| {
            items[len] = it;
            len += 1;
        };
        for i in 0..off {
            push(Item::slot(his[i], ws[i]));
        }
        let left = r_min < first;
        let right = last < end_piv;
        if left {
            push(Item::slot(first - 1, ws[off]));
        }
        push(Item::slot(last, entry));
        if right {
            push(Item::slot(end_piv, ws[off_end]));
        }
        for i in off_end + 1..=end {
            push(Item::slot(his[i], ws[i]));
        }
        debug_assert_eq!(len, new_end + 1);
        for (i, &w) in ws.iter().enumerate().take(off_end + 1).skip(off) {
            let kept = (left && i == off) || (right && i == off_end);
            if !kept {
                self.release_entry(w);
            }
        }
        if left && right && off == off_end {
            self.share_entry(ws[off]);
        }
        self.node_store(lw, &items[..len]);
        Leafed::Done(first, last)
    }

    /// The in-place appends (see the module table) of `[first, last] = entry` into the last slot
    /// `[r_min, max]` of `lw`'s leaf, holding `content`; `false` when none applies (no room, or
    /// an append at the start in RCU mode).
    fn append_in_place(
        &mut self,
        lw: &Walker<'t>,
        r_min: u64,
        content: usize,
        first: u64,
        last: u64,
        entry: usize,
    ) -> bool {
        let leaf = *lw.leaf();
        let (n, end, max) = (leaf.node, leaf.offset, leaf.max);
        let p = Kind::Leaf.pivots();
        if !self.may_extend(n) {
            // The leaf shrank in place (append split) within the current grace period: a reader
            // may still read it up to its old max, beyond the end. The leaf store copies it
            // instead (and counts `sealed_extend`).
            return false;
        }
        if r_min < first && last < max {
            if end + 2 >= RANGE_SLOTS {
                return false;
            }
            // Three-way append: [content][entry][content]; the old end pivot lowered last.
            n.init_entry(end + 2, content);
            if end + 2 < p {
                n.init_pivot(end + 2, max);
            }
            n.init_pivot(end + 1, last);
            n.init_entry(end + 1, entry);
            n.publish_pivot(end, first - 1);
            self.seal_lowered(n, end);
            self.share_entry(content);
            self.st.stats.append_three_way += 1;
        } else if r_min < first {
            if end + 1 >= RANGE_SLOTS {
                return false;
            }
            // +1 at the end: [content][entry].
            n.init_entry(end + 1, entry);
            if end + 1 < p {
                n.init_pivot(end + 1, max);
            }
            n.publish_pivot(end, first - 1);
            self.seal_lowered(n, end);
            self.st.stats.append_end += 1;
        } else if last < max && self.exclusive {
            if end + 1 >= RANGE_SLOTS {
                return false;
            }
            // +1 at the start: [entry][content]; a visible boundary moves, so exclusive only.
            n.init_entry(end + 1, content);
            if end + 1 < p {
                n.init_pivot(end + 1, max);
            }
            n.init_pivot(end, last);
            n.init_entry(end, entry);
            self.st.stats.append_start += 1;
        } else {
            return false;
        }
        self.after_append(lw, r_min, content, first, last, entry);
        // Same nodes, same limits: the next in-order append can start from this leaf.
        lw.save(self.root, &mut self.st.saved);
        true
    }

    /// Replaces the leaf of `lw` with `items` (`wr_node_store`).
    fn node_store(&mut self, lw: &Walker<'t>, items: &[Item]) {
        let leaf = *lw.leaf();
        self.st.stats.node_store += 1;
        if self.exclusive {
            self.write_items(leaf.node, items, leaf.max);
            if self.is_alloc() && lw.depth > 1 {
                let g = super::gap::leaf_max_gap(leaf.node, leaf.min, leaf.max);
                self.propagate_gap(&lw.path()[..lw.depth - 1], g);
            }
            return;
        }
        let n = self.alloc_node(Kind::Leaf);
        self.write_items(n.node(), items, leaf.max);
        let g = self.node_max_gap(n.node(), leaf.min, leaf.max);
        self.replace_child(&lw.path()[..lw.depth - 1], n, g);
        self.retire_node(leaf.node);
    }

    /// Gap maintenance after an in-place append that split the leaf's last slot `[r_min, max]`
    /// (holding `content`) around `[first, last]`: only a NULL slot's pieces can change the leaf's
    /// largest gap, and the same span bound as in [`propagate_gap`](Self::propagate_gap) usually
    /// decides the new one without a scan.
    fn after_append(
        &self,
        lw: &Walker<'_>,
        r_min: u64,
        content: usize,
        first: u64,
        last: u64,
        entry: usize,
    ) {
        if !self.is_alloc() || lw.depth < 2 || (content != 0 && entry != 0) {
            return;
        }
        let leaf = lw.leaf();
        let up = lw.path()[lw.depth - 2];
        let old_max = up.node.gap(up.offset);
        if entry == 0 {
            // A NULL written inside an entry's range (NULL widening excludes a NULL content):
            // one new gap, the maximum can only grow.
            let g = super::gap::range_size(first, last);
            if g > old_max {
                self.propagate_gap(&lw.path()[..lw.depth - 1], g);
            }
            return;
        }
        if super::gap::range_size(r_min, leaf.max) < old_max {
            return; // the pieces are smaller still, the maximum is elsewhere
        }
        let left = if first > r_min {
            super::gap::range_size(r_min, first - 1)
        } else {
            0
        };
        let right = if last < leaf.max {
            super::gap::range_size(last + 1, leaf.max)
        } else {
            0
        };
        let g = if left.max(right) >= r_min - leaf.min {
            left.max(right)
        } else {
            super::gap::leaf_max_gap(leaf.node, leaf.min, leaf.max)
        };
        self.propagate_gap(&lw.path()[..lw.depth - 1], g);
    }

    /// Gap maintenance after an in-place leaf change.
    fn after_leaf_change(&self, lw: &Walker<'_>, gaps_changed: bool) {
        if !gaps_changed || !self.is_alloc() || lw.depth < 2 {
            return;
        }
        let leaf = lw.leaf();
        let g = super::gap::leaf_max_gap(leaf.node, leaf.min, leaf.max);
        self.propagate_gap(&lw.path()[..lw.depth - 1], g);
    }

    // ----- public write API -----------------------------------------------------------------------

    /// Stores `entry` over `[first, last]` (`mtree_store_range`): trims or removes whatever was
    /// there, across any number of nodes.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::store_range`].
    pub fn store_range(&mut self, first: u64, last: u64, entry: E) -> Result<(), Error> {
        if first > last {
            return Err(Error::InvalidRange);
        }
        let w = Owned::new(entry)?.into_raw();
        self.write(first, last, w);
        Ok(())
    }

    /// Stores the reserved zero entry (`XA_ZERO_ENTRY`) over `[first, last]`: the range counts
    /// as occupied for insert and gap search but reads as empty through `load` and `iter`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] if `first > last` (nothing is written).
    pub fn store_zero_range(&mut self, first: u64, last: u64) -> Result<(), Error> {
        if first > last {
            return Err(Error::InvalidRange);
        }
        self.write(first, last, ZERO_WORD);
        Ok(())
    }

    /// Stores `entry` only if all of `[first, last]` is empty (`mtree_insert_range`).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::insert_range`].
    pub fn insert_range(&mut self, first: u64, last: u64, entry: E) -> Result<(), Error> {
        if first > last {
            return Err(Error::InvalidRange);
        }
        if self.is_occupied(first, last) {
            return Err(Error::Occupied);
        }
        let w = Owned::new(entry)?.into_raw();
        self.write(first, last, w);
        Ok(())
    }

    /// [`insert_range`](Self::insert_range) of one index.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::insert_range`].
    pub fn insert(&mut self, index: u64, entry: E) -> Result<(), Error> {
        self.insert_range(index, index, entry)
    }

    /// Whether any index of `[first, last]` holds an entry (the zero entry counts).
    pub(crate) fn is_occupied(&self, first: u64, last: u64) -> bool {
        let mut w = self.walker();
        if w.walk(first).is_none() {
            return false;
        }
        loop {
            if w.word != Loaded::NONE {
                return true;
            }
            if w.hi >= last {
                return false;
            }
            if w.next_slot().is_none() {
                return false;
            }
        }
    }

    /// Erases the range containing `index` (`mtree_erase`); returns it if it held an entry.
    pub fn erase(&mut self, index: u64) -> Option<(u64, u64)> {
        let mut w = self.walker();
        w.walk(index)?;
        if w.word == Loaded::NONE {
            return None;
        }
        let (lo, hi) = (w.lo, w.hi);
        self.write_from(&mut w, true, lo, hi, 0);
        Some((lo, hi))
    }

    /// Empties `[first, last]` (a NULL store).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::erase_range`].
    pub fn erase_range(&mut self, first: u64, last: u64) -> Result<(), Error> {
        if first > last {
            return Err(Error::InvalidRange);
        }
        self.write(first, last, 0);
        Ok(())
    }

    /// Empties the tree (`mtree_destroy`), keeping its options.
    pub fn clear(&mut self) {
        self.st.saved.clear();
        let Some(n) = self.root.node() else {
            return;
        };
        let mut retired = Retired::new();
        self.remove_subtree(n, 0, u64::MAX, &mut retired);
        self.root.publish_empty();
        self.st.height = 0;
        for n in retired {
            self.retire_node(n);
        }
        self.drop_released();
    }

    /// Height (levels).
    pub fn height(&self) -> usize {
        self.st.height
    }

    /// The entry at `index`, read under the writer.
    pub fn load(&self, index: u64) -> Option<E::Borrowed<'_>> {
        // The writer is the only mutator and `&self` keeps it from writing while the borrow
        // lives; the guard it holds covers RCU-deferred frees.
        super::walk::load_word(self.view(), index).entry::<E>()
    }

    /// Iterates under the writer (see [`MapleTree::iter`]).
    pub fn iter(&self) -> super::Iter<'_, E> {
        super::Iter::new(self.view(), 0, u64::MAX)
    }

    /// The reader view of the root, for reads under the writer borrowed from `&self` (the
    /// writer cannot write while they live).
    pub(crate) fn view(&self) -> super::node::RootRef<'_> {
        self.root.view()
    }

    /// The tree's collector.
    pub(crate) fn collector(&self) -> &Collector {
        self.root.collector()
    }
}
