//! The iterator's back end: `next_back`, its fast path in a leaf and its crossing to the leaf
//! before, which never passes the front.

use super::*;
use crate::tree::node::BackParent;

/// The iterator's back end: its walker and, while it holds a leaf (the fast path), its place
/// in that leaf. `next_back` crosses leaves itself, with the checks of the walker's crossing
/// ([`cross`](Self::cross) to the parent's previous child, [`Walker::cross_prev`] above that);
/// the first step and restarts walk from the root with the walker (`next_back_slow`).
pub(super) struct Back<'g, E> {
    /// The walker, whose path is the back's: while `leaf` holds a leaf, that leaf is the
    /// path's last level, but for a crossing to the parent's previous child, which moves the
    /// scalars below alone (the path's last level and the parent's offset are then behind,
    /// and written back before a climb). The walker's slot (`lo`, `hi`, `word`) is its last
    /// walk's.
    pub(super) walker: Walker<'g, Read, E>,
    /// The walker has taken its first step.
    pub(super) started: bool,
    /// Something was yielded from the back (later ranges must not overlap it).
    pub(super) yielded: bool,
    /// Last index the back may yield up to (inclusive).
    pub(super) pos: u64,
    /// The leaf while the fast path holds the position, with the back's slot in it (its
    /// offset), starting at `lo` (its end is not kept: the slot above starts after it, and a leaf's last slot ends at
    /// `max`); the leaf covers `[min, max]`. Whenever the fast path may step, the back has
    /// yielded that slot, so it starts at `pos + 1`: the two-slot step keeps only `pos`, and
    /// `next_back_raw` sets `lo` from it when it leaves that step (the crossing on the leaf's
    /// first slots, or `next_back_general`).
    pub(super) leaf: FastLeaf<'g, E, BACK_ROOM>,
    pub(super) lo: u64,
    pub(super) min: u64,
    pub(super) max: u64,
    /// The leaf's parent with its min (`NONE`: the leaf is the root), and the leaf's offset in
    /// it.
    pub(super) parent: BackParent<'g, E>,
    pub(super) poff: usize,
}

impl<'g, E> Back<'g, E> {
    #[inline(always)]
    pub(super) fn new(root: RootRef<'g, Read, E>, last: u64) -> Self {
        Back {
            walker: Walker::new(root),
            started: false,
            yielded: false,
            pos: last,
            leaf: FastLeaf::NONE,
            lo: 0,
            min: 0,
            max: 0,
            parent: BackParent::NONE,
            poff: 0,
        }
    }

    /// Enters the walker's leaf on the fast path, on the walker's slot (from `lo`).
    pub(super) fn cache_path(&mut self, lo: u64) {
        let leaf = *self.walker.leaf();
        self.set_parent();
        self.leaf = FastLeaf::new(leaf.node, leaf.offset);
        self.lo = lo;
        (self.min, self.max) = (leaf.min, leaf.max);
    }

    /// The parent scalars from the path.
    #[inline]
    pub(super) fn set_parent(&mut self) {
        self.parent = BackParent::NONE;
        let depth = self.walker.depth;
        if depth >= 2 {
            let p = *self.walker.level(depth - 2);
            (self.parent, self.poff) = (BackParent::new(p.node, p.min), p.offset);
        }
    }

    /// From slot 0 of the leaf to the last slot of the leaf before it, through the parent, as
    /// [`Walker::cross_prev`] moves there: the leaf alive, not the parent's first child, the
    /// parent alive, the child slot non-empty and a leaf; then that leaf's end (its pivots
    /// read in order, as any reader derives it). Returns the slot's word, the back standing on
    /// it; `None` (nothing changed) for everything else, left to
    /// [`prev_leaf`](Self::prev_leaf).
    #[inline(always)]
    pub(super) fn cross(
        &mut self,
        n: NodeRef<'g, Read, E>,
        internal: Kind,
    ) -> Option<Loaded<'g, E>> {
        let p = self.parent.above(self.min)?;
        if n.is_dead() || p.is_dead() {
            // `prev_leaf` meets it too, and restarts.
            return None;
        }
        let (i, max) = (self.poff - 1, self.min - 1);
        let min = p.slot_min(i, self.parent.min());
        let c = p.try_child(i, internal)?;
        if !c.is_leaf() || min > max {
            return None;
        }
        let end = leaf_end(c, max);
        let lo = c.slot_min(end, min);
        let w = c.leaf_word(end);
        self.leaf = FastLeaf::new(c, end);
        (self.poff, self.min, self.max) = (i, min, max);
        self.lo = lo;
        Some(w)
    }

    /// From slot 0 of leaf `n` to the last slot of the leaf before it, through the walker's
    /// crossing on the back's path (its last level and the parent's offset written back
    /// first). Returns that slot's word; `None` when the walker must walk from the root
    /// instead (see `cross_prev`), or at index 0. (Inlined into the iterator's
    /// [`back_prev_leaf`](Iter::back_prev_leaf), which is not.)
    #[inline]
    pub(super) fn prev_leaf(&mut self, n: NodeRef<'g, Read, E>) -> Option<Loaded<'g, E>> {
        if self.lo == 0 {
            return None;
        }
        let d = self.walker.depth - 1;
        *self.walker.level_mut(d) = Level {
            node: n,
            min: self.min,
            max: self.max,
            offset: 0,
        };
        if d >= 1 {
            self.walker.level_mut(d - 1).offset = self.poff;
        }
        let (lo, w) = self.walker.cross_prev(n, self.min)?;
        let leaf = *self.walker.leaf();
        self.set_parent();
        self.leaf = FastLeaf::new(leaf.node, leaf.offset);
        self.lo = lo;
        (self.min, self.max) = (leaf.min, leaf.max);
        Some(w)
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// The next `(first, last, entry)` from the back (see [`next_raw`](Self::next_raw)).
    #[inline(always)]
    pub(crate) fn next_back_raw(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        // Fastest path, the mirror of `next`'s: the two slots below the back's (slot `k`,
        // from `pos + 1`, see `Back::lo`) without a loop, each slot's lower bound the pivot
        // before it (below the back's slot, so below the leaf's end: pivots that no writer
        // changes in place). A range that would reach the front goes the general way.
        let front = self.front.bound;
        // (Slots `k - 3..k`, `i = k - 3`: the offsets `FastLeaf::at` bounds, so the loads skip
        // their checks.)
        if let Some(at) = self.back.leaf.at() {
            let (n, i) = (at.node(), at.i());
            let p = n.range_pivot(i + 1);
            let w1 = n.range_word(i + 2);
            // Read under the guard of 'g that created this iterator.
            if w1.raw() == 0 {
                let q = n.range_pivot(i);
                if let (true, Some(b)) = (q >= front, n.range_word(i + 1).entry()) {
                    at.set_off(i + 1);
                    return Some(self.back_fast_yield(q + 1, p, b));
                }
            } else if let (true, Some(b)) = (p >= front, w1.entry()) {
                at.set_off(i + 2);
                let hi = self.back.pos;
                return Some(self.back_fast_yield(p + 1, hi, b));
            }
        } else if let Some(n) = self.back.leaf.below(3) {
            // On slot 0, 1 or 2: the leaf's first slots and the crossing to the leaf before,
            // without a call.
            if let Some(r) = self.back_cross_fast(n, front) {
                return r;
            }
        }
        // (Not kept by the two-slot step: see `Back::lo`. Meaningless without a leaf.)
        self.back.lo = self.back.pos.wrapping_add(1);
        self.next_back_out()
    }

    /// [`next_back_general`](Self::next_back_general) with its range from `out`.
    #[inline(always)]
    fn next_back_out(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        let b = self.next_back_general()?;
        Some((self.out.0, self.out.1, b))
    }

    /// The fast path's step from slot `k` (0, 1 or 2, having yielded it: it starts at
    /// `pos + 1`) of leaf `n`. From slot 2, slots 1 and 0 as the two-slot step takes them
    /// (slot 0 from `min`, its yield through `back_yield`, which ends the iteration at index
    /// 0). From slot 0 or 1, the crossing to the last slot of the leaf before, as
    /// [`next_back_general`](Self::next_back_general) steps there (through slot 0, when `k` is
    /// 1, if it holds nothing and lies past the front's `bound`): [`Back::cross`], then the
    /// same checks on the slot reached, yielding its entry. `None` (nothing changed) when
    /// slot 2's step finds nothing it may yield, or slot 0 holds an entry or may reach the
    /// front; every other case the general path finishes from where the crossing stands (`lo`
    /// kept).
    #[inline(always)]
    fn back_cross_fast(
        &mut self,
        n: NodeRef<'g, Read, E>,
        front: u64,
    ) -> Option<Option<(u64, u64, E::Borrowed<'g>)>> {
        let k = self.back.leaf.off();
        if k == 2 {
            // Slots 1 and 0, as the two-slot step (slot 0 from `min`, its yield by
            // `back_yield`, which ends the iteration at index 0).
            let p = n.range_pivot(0);
            let w1 = n.range_word(1);
            if w1.raw() == 0 {
                if let (true, Some(b)) = (p > front, n.range_word(0).entry()) {
                    self.back.leaf.set_off(0);
                    let lo = self.back.min;
                    self.back.lo = lo;
                    if !self.back_yield(lo) {
                        return Some(None);
                    }
                    return Some(Some((lo, p, b)));
                }
            } else if let (true, Some(b)) = (p >= front, w1.entry()) {
                self.back.leaf.set_off(1);
                let hi = self.back.pos;
                return Some(Some(self.back_fast_yield(p + 1, hi, b)));
            }
            return None;
        }
        if k == 1 {
            // Slot 0, `[min, pos]`: not before the front (`pos` past its `bound`), no entry.
            if self.back.pos <= front || n.range_word(0).raw() != 0 {
                return None;
            }
            self.back.leaf = FastLeaf::new(n, 0);
            self.back.lo = self.back.min;
        } else {
            self.back.lo = self.back.pos.wrapping_add(1);
        }
        let Some(w) = self.back.cross(n, self.internal) else {
            // Slot 0 of leaf `n`, from `lo`: the walker's crossing, or a walk.
            return Some(self.next_back_out());
        };
        // Now on the last slot of a leaf, `[lo, max]` (as in `next_back_general`).
        if self.front.before(self.back.max) {
            self.finish();
            return Some(None);
        }
        // Read under the guard of 'g that created this iterator.
        if let Some(b) = w.entry() {
            let lo = self.back.lo;
            if !self.back_yield(lo) {
                return Some(None);
            }
            return Some(Some((lo, self.back.max, b)));
        }
        // It holds nothing: the general path steps on from it.
        Some(self.next_back_out())
    }

    /// [`Back::prev_leaf`], out of line (a method of the iterator, so that it is compiled with
    /// it and called directly).
    #[inline(never)]
    fn back_prev_leaf(&mut self, n: NodeRef<'g, Read, E>) -> Option<Loaded<'g, E>> {
        self.back.prev_leaf(n)
    }

    /// The back's fast-path yield of its slot (the offset already moved), `[lo, hi]`, `lo`
    /// above the front's position.
    #[inline(always)]
    fn back_fast_yield(
        &mut self,
        lo: u64,
        hi: u64,
        b: E::Borrowed<'g>,
    ) -> (u64, u64, E::Borrowed<'g>) {
        self.back.pos = lo - 1;
        self.bound_front();
        (lo, hi, b)
    }

    /// [`next_back`](DoubleEndedIterator::next_back) past the two-slot step, from the back's
    /// slot (from `lo`, which the caller sets): the entry, its range in `out`.
    #[inline(never)]
    fn next_back_general(&mut self) -> Option<E::Borrowed<'g>> {
        let (lo, hi, b) = loop {
            if let Some(n) = self.back.leaf.get() {
                if let Some(r) = self.back_in_leaf(n) {
                    break r?;
                }
                // On slot 0 of the leaf, which holds no entry: on to the leaf before it.
                let w = if let Some(w) = self.back.cross(n, self.internal) {
                    w
                } else if let Some(w) = self.back_prev_leaf(n) {
                    w
                } else {
                    break self.next_back_slow(true)?;
                };
                // Now on the last slot of a leaf, `[lo, max]`.
                if self.front.before(self.back.max) {
                    self.finish();
                    return None;
                }
                // Read under the guard of 'g that created this iterator.
                if let Some(b) = w.entry() {
                    if !self.back_yield(self.back.lo) {
                        return None;
                    }
                    break (self.back.lo, self.back.max, b);
                }
                continue;
            }
            break self.next_back_slow(false)?;
        };
        self.out = (lo, hi);
        Some(b)
    }

    /// The back's fast path, the mirror of `next`'s within a leaf: from its slot (from `lo`)
    /// of leaf `n` down to the previous entry, each slot's lower bound the pivot before it
    /// (below the back's slot, so below the leaf's end: pivots that no writer changes in
    /// place). `None` when slot 0 holds no entry: the crossing takes over from there.
    #[inline(always)]
    fn back_in_leaf(
        &mut self,
        n: NodeRef<'g, Read, E>,
    ) -> Option<Option<(u64, u64, E::Borrowed<'g>)>> {
        let (mut j, mut lo) = (self.back.leaf.off(), self.back.lo);
        if j == 0 {
            return None;
        }
        loop {
            j -= 1;
            let hi = lo - 1;
            lo = if j == 0 {
                self.back.min
            } else {
                n.range_pivot(j - 1) + 1
            };
            if self.front.before(hi) {
                self.finish();
                return Some(None);
            }
            // Read under the guard of 'g that created this iterator.
            if let Some(b) = n.range_word(j).entry() {
                self.back.leaf.set_off(j);
                self.back.lo = lo;
                if !self.back_yield(lo) {
                    return Some(None);
                }
                return Some(Some((lo, hi, b)));
            }
            if j == 0 {
                // On slot 0, which holds no entry: the crossing steps on from there.
                self.back.leaf.set_off(0);
                self.back.lo = lo;
                return None;
            }
        }
    }

    /// Records that the back yields a range starting at `lo`; `false` if it must not: the
    /// range reaches below what the front has yielded (it changed since the front passed it,
    /// a write between the two ends' steps, and its indices there came out already). The
    /// iteration ends when the back reaches the front.
    #[inline(always)]
    #[must_use]
    fn back_yield(&mut self, lo: u64) -> bool {
        self.back.yielded = true;
        if lo == 0 || self.front.before(lo - 1) {
            let overlaps = self.front.yielded && lo < self.front.pos() && check_rewalk();
            self.finish();
            !overlaps
        } else {
            self.back.pos = lo - 1;
            self.bound_front();
            true
        }
    }

    /// Keeps the front's fast path below `back.pos` (`lim` is read only while the front has a
    /// leaf, and recomputed when it enters one).
    #[inline(always)]
    fn bound_front(&mut self) {
        if self.front.leaf.get().is_some() {
            self.front.lim = self.front.lim.min(self.back.pos);
        }
    }

    /// The back's step through its walker: the first step, or (`from_fast`, the fast path's
    /// fallback on slot 0 of its leaf, whose position is dropped) a walk from the root to the
    /// index before that slot; enters the walker's leaf on the fast path after a yield.
    #[inline(never)]
    fn next_back_slow(&mut self, from_fast: bool) -> Option<(u64, u64, E::Borrowed<'g>)> {
        self.back.leaf = FastLeaf::NONE;
        if self.done {
            return None;
        }
        let step = if from_fast {
            let w = &mut self.back.walker;
            self.back.lo.checked_sub(1).and_then(|t| w.walk(t))
        } else if self.back.started {
            // (The walker's own position: no leaf was entered since its last step.)
            self.back.walker.prev_slot()
        } else {
            self.back.started = true;
            self.back.walker.walk(self.back.pos)
        };
        if step.is_none() {
            self.finish();
            return None;
        }
        loop {
            let (lo, hi, word) = (
                self.back.walker.lo,
                self.back.walker.hi,
                self.back.walker.word,
            );
            if self.front.before(hi) {
                self.finish();
                return None;
            }
            // As in `next`: after a restart, skip a range that reaches past what was yielded.
            if lo <= self.back.pos && (!self.back.yielded || hi <= self.back.pos) {
                if let Some(b) = word.entry() {
                    if !self.back_yield(lo) {
                        return None;
                    }
                    if !self.done {
                        self.back.cache_path(lo);
                    }
                    return Some((lo, hi, b));
                }
            }
            if self.back.walker.prev_slot().is_none() {
                self.finish();
                return None;
            }
        }
    }
}
