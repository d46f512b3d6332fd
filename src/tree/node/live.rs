//! The writer's node handles: [`Live`] stores, [`Fresh`] nodes not yet reachable, and
//! [`Unlinked`] nodes that only retirement may take.

use super::*;

/// A fresh node: allocated by [`WriterRoot::alloc`] (or copied by `dup`), reachable by no
/// reader. The writer fills it with Relaxed stores (rows P2/P4/P7, through [`Fresh::node`]); it
/// becomes reachable only by being consumed by one of the publishing operations —
/// [`WriterRoot::publish`] (the root, P1), [`NodeRef::publish_child`] (a slot of a live node,
/// P3), [`NodeRef::append_child`] (beyond a live node's end, then its lowered pivot, P6/P9) —
/// or by being stored into another fresh node ([`Fresh::into_child`]), which is published
/// later. Not `Copy`: it is published once.
#[must_use = "a fresh node is leaked unless it is published"]
pub(crate) struct Fresh<'t>(pub(super) Live<'t>);

impl<'t> Fresh<'t> {
    /// The node, for filling it (and reading it back) before it is published.
    #[inline]
    pub(crate) fn node(&self) -> Live<'t> {
        self.0
    }

    /// Hands the node over to a fresh parent being built (its slot is written with the other
    /// items of that parent and published with it).
    #[inline]
    pub(crate) fn into_child(self) -> Live<'t> {
        self.0
    }
}

/// A node no live node of the tree links any more: made only by the unlinking operations —
/// [`Live::publish_child`] (the child it replaced), [`WriterRoot::publish`],
/// [`WriterRoot::promote`] and [`WriterRoot::publish_empty`] (the old root) — or by
/// [`WriterRoot::unlinked`], which checks it (the consumed nodes of a rebuild, removed
/// subtrees). It can only be retired ([`WriterRoot::retire`]). Not `Copy`.
#[must_use = "an unlinked node is leaked unless it is retired"]
pub(crate) struct Unlinked<'w>(pub(super) Live<'w>);

impl Unlinked<'_> {
    /// The node's address (what the writer's seals are keyed by).
    #[inline]
    pub(crate) fn addr(&self) -> usize {
        self.0.addr()
    }
}

/// The writer's stores, on [`Live`] handles only (a [`Read`] handle cannot reach them).
impl<'w> Live<'w> {
    /// Writer store of pivot `i` on a fresh node or beyond the published end (Relaxed: published
    /// later by a Release store).
    #[inline]
    pub(crate) fn init_pivot(&self, i: usize, v: u64) {
        debug_assert!(i < self.kind.pivots());
        // ORDERING: P7/P8 (published later by a Release store, P1/P3/P9).
        self.node().words[i].store(v, Ordering::Relaxed);
    }

    /// Writer store of the single pivot that publishes an in-place change (Release).
    #[inline]
    pub(crate) fn publish_pivot(&self, i: usize, v: u64) {
        debug_assert!(i < self.kind.pivots());
        // ORDERING: P9 (the single publishing store of an in-place append).
        self.node().words[i].store(v, ord::p9_publish_pivot());
    }

    /// Writer store of a slot on a fresh node or beyond the published end (Relaxed).
    #[inline]
    pub(super) fn init_word(&self, i: usize, w: usize) {
        debug_assert!(i < self.kind.slots());
        // ORDERING: P2/P4/P6 (published later by the Release store that exposes it).
        self.node().words[self.kind.slot_base() + i].store(w as u64, Ordering::Relaxed);
    }

    /// Writer store of a slot that readers can already reach (Release).
    #[inline]
    pub(super) fn publish_word(&self, i: usize, w: usize) {
        debug_assert!(i < self.kind.slots());
        // ORDERING: P3/P5 (pairs with the readers' Acquire slot load).
        self.node().words[self.kind.slot_base() + i].store(w as u64, ord::p3_p5_publish_slot());
    }

    /// Writer store of the entry word `w` (0: nothing) into leaf slot `i` of a fresh node or
    /// beyond the published end (Relaxed, rows P4/P6).
    ///
    /// # Panics
    ///
    /// If this is not a leaf (internal slots hold only children).
    #[inline]
    pub(crate) fn init_entry<E: Entry>(&self, i: usize, w: Word<E>) {
        assert!(
            self.is_leaf(),
            "maple tree: an entry stored into an internal node"
        );
        self.init_word(i, w.raw());
    }

    /// Writer store of the entry word `w` into a leaf slot readers can already reach (Release,
    /// row P5: the exact fit).
    ///
    /// # Panics
    ///
    /// If this is not a leaf.
    #[inline]
    pub(crate) fn publish_entry<E: Entry>(&self, i: usize, w: Word<E>) {
        assert!(
            self.is_leaf(),
            "maple tree: an entry stored into an internal node"
        );
        self.publish_word(i, w.raw());
    }

    /// Writer store of child `c` into slot `i` of a fresh internal node or beyond its published
    /// end (Relaxed, rows P2/P6), recording this node as `c`'s parent (P13).
    ///
    /// # Panics
    ///
    /// If this is a leaf.
    #[inline]
    pub(crate) fn init_child(&self, i: usize, c: Live<'_>) {
        assert!(!self.is_leaf(), "maple tree: a child stored into a leaf");
        c.set_parent(Some(*self), i);
        self.init_word(i, node_word(c));
    }

    /// Replaces child `i` of an internal node readers can already reach by `c` (fresh, fully
    /// written): `c`'s parent word first (P13), then one Release store of the slot (P3).
    ///
    /// # Panics
    ///
    /// If this is a leaf.
    #[inline]
    #[must_use = "the replaced child is leaked unless it is retired"]
    pub(crate) fn publish_child(&self, i: usize, c: Fresh<'w>) -> Option<Unlinked<'w>> {
        assert!(!self.is_leaf(), "maple tree: a child stored into a leaf");
        // An internal node's kind is the tree's internal kind.
        let old = self.child(i, self.kind);
        let c = c.0;
        c.set_parent(Some(*self), i);
        self.publish_word(i, node_word(c));
        // The old child is unlinked unless `c`'s subtree took it in: then its parent word
        // names the node it went into, not this slot.
        (old.parent_info() == (self.addr(), i)).then_some(Unlinked(old))
    }

    /// The in-place `+1` append of a child to an internal node readers can reach, whose last
    /// child is `end` and whose max is `max`: the fresh child `c` (covering up to `max`, largest
    /// gap `c_gap`) goes into slot `end + 1` with its pivot and gap, Relaxed (rows P6/P8/P12);
    /// then pivot `end` is lowered to `end_max`, the one Release store that publishes it all
    /// (P9); only then does the gap of child `end` become `end_gap` (row P12: a gap lowered for
    /// a slot whose range shrank is stored after the store that shrinks it, so that a reader
    /// still holding the old bound, who would prune the whole old range by the new gap, finds
    /// the lowered pivot when it re-reads its path; see `gap::search`).
    ///
    /// # Panics
    ///
    /// If this is a leaf or has no free slot.
    pub(crate) fn append_child(
        &self,
        end: usize,
        max: u64,
        end_max: u64,
        end_gap: u64,
        c: Fresh<'_>,
        c_gap: u64,
    ) {
        let kind = self.kind;
        assert!(
            end + 1 < kind.slots(),
            "maple tree: no room to append a child"
        );
        self.init_child(end + 1, c.0);
        if end + 1 < kind.pivots() {
            self.init_pivot(end + 1, max);
        }
        if kind == Kind::ARange {
            self.set_gap(end + 1, c_gap);
        }
        self.publish_pivot(end, end_max);
        if kind == Kind::ARange {
            self.set_gap(end, end_gap);
        }
    }

    /// Writer store of an empty slot beyond the end of a fresh node (Relaxed): zero words,
    /// which no reader follows.
    #[inline]
    pub(crate) fn clear_slot(&self, i: usize) {
        self.init_word(i, 0);
    }

    /// [`clear_slot`](Self::clear_slot) of each slot of `slots`, with its pivot (within the
    /// pivots) and, in an allocation tree's internal node, its gap: the slots a node rewritten
    /// in place (exclusive mode, no reader) no longer uses, so that no stale child or entry word
    /// stays behind its end.
    #[inline]
    pub(crate) fn clear_slots(&self, slots: core::ops::Range<usize>) {
        let kind = self.kind;
        for k in slots {
            self.clear_slot(k);
            if k < kind.pivots() {
                self.init_pivot(k, 0);
            }
            if kind == Kind::ARange {
                self.set_gap(k, 0);
            }
        }
    }

    /// Sets the gap of child `i` (Release: gaps are hints for the search, loaded Relaxed, but a
    /// reader that read this store and then fences Acquire must see every bound the writer
    /// lowered before it; see the module table, row P12).
    #[inline]
    pub(crate) fn set_gap(&self, i: usize, v: u64) {
        debug_assert!(self.kind == Kind::ARange && i < ARANGE_SLOTS);
        // ORDERING: P12 (Release: the bound a lowered gap belongs with is stored before it).
        self.node().words[ARANGE_GAPS + i].store(v, ord::P12_STORE_GAP);
    }

    /// Records `parent` and this node's offset in it (`None`: this node is the root).
    #[inline]
    pub(crate) fn set_parent(&self, parent: Option<Live<'_>>, offset: usize) {
        let w = match parent {
            Some(p) => {
                let addr = p.ptr.as_ptr().expose_provenance();
                debug_assert_eq!(addr & !ADDR_MASK, 0, "node address uses tag bits");
                addr | (offset << OFFSET_SHIFT)
            }
            None => 0,
        };
        // ORDERING: P13/P17 (the writer's own bookkeeping; readers load the word only for the
        // dead bit, P14, which this store never clears: a node is re-parented only while live).
        self.node().parent.store(w, Ordering::Relaxed);
    }

    /// Marks a replaced node dead (Release), so readers that meet it restart; `false` if it
    /// was dead already. A load and a store, not a read-modify-write: only the writer stores
    /// parent words (P13, P14), so its load reads the last of them (no locked instruction per
    /// retired node).
    #[inline]
    pub(super) fn mark_dead(&self) -> bool {
        let parent = &self.node().parent;
        // ORDERING: P13 (the writer's own word).
        let w = parent.load(Ordering::Relaxed);
        if w & DEAD != 0 {
            return false;
        }
        // ORDERING: P14 (and P17: the store keeps the last re-parenting's bits).
        parent.store(w | DEAD, ord::P14_MARK_DEAD);
        true
    }
}
