//! The iterator's back end: `next_back`, its fast path in a leaf and its crossing to the leaf
//! before, which never passes the front.

use super::*;

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// Copies the back walker's path into `bpath` and enters its leaf on the back's fast path,
    /// on the walker's slot (from `lo`).
    pub(super) fn cache_back_path(&mut self, lo: u64) {
        let path = self.back.path();
        self.bpath.set_prefix(path.iter().copied());
        let leaf = path[path.len() - 1];
        self.bdepth = path.len();
        self.set_bparent();
        self.bfast = FastLeaf::new(leaf.node);
        (self.boff, self.blo) = (leaf.offset, lo);
        (self.bmin, self.bmax) = (leaf.min, leaf.max);
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// The next `(first, last, entry)` from the back (see [`next_raw`](Self::next_raw)).
    #[inline(always)]
    pub(crate) fn next_back_raw(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        // Fastest path, the mirror of `next`'s: the two slots below the back's (slot `boff`,
        // from `blo`) without a loop, each slot's lower bound the pivot before it (below the
        // back's slot, so below the leaf's end: pivots that no writer changes in place). A
        // range that would reach the front goes the general way.
        let k = self.boff;
        // (Slots `k - 3..k`: the offsets `FastLeaf::at` bounds, so the loads skip their checks.)
        let i = k.wrapping_sub(3);
        if let Some(n) = self.bfast.at(i) {
            let front = self.fbound;
            let p = n.range_pivot(i + 1);
            let w1 = n.range_word(i + 2);
            // Read under the guard of 'g that created this iterator.
            if w1.raw() == 0 {
                let q = n.range_pivot(i);
                if let (true, Some(b)) = (q >= front, n.range_word(i + 1).entry::<E>()) {
                    return Some(self.back_fast_yield(i + 1, q + 1, p, b));
                }
            } else if let (true, Some(b)) = (p >= front, w1.entry::<E>()) {
                let hi = self.blo - 1;
                return Some(self.back_fast_yield(i + 2, p + 1, hi, b));
            }
        }
        let b = self.next_back_general()?;
        Some((self.out.0, self.out.1, b))
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// The back's fast-path yield of slot `k`, `[lo, hi]`, `lo` above the front's position.
    #[inline(always)]
    pub(super) fn back_fast_yield(
        &mut self,
        k: usize,
        lo: u64,
        hi: u64,
        b: E::Borrowed<'g>,
    ) -> (u64, u64, E::Borrowed<'g>) {
        (self.boff, self.blo) = (k, lo);
        self.back_pos = lo - 1;
        self.bound_front();
        (lo, hi, b)
    }

    /// [`next_back`](DoubleEndedIterator::next_back) past the two-slot step: the entry, its
    /// range in `out`.
    #[inline(never)]
    pub(super) fn next_back_general(&mut self) -> Option<E::Borrowed<'g>> {
        let (lo, hi, b) = loop {
            if let Some(n) = self.bfast.get() {
                if let Some(r) = self.back_in_leaf(n) {
                    break r?;
                }
                // On slot 0 of the leaf, which holds no entry: on to the leaf before it.
                let w = if let Some(w) = self.back_cross() {
                    w
                } else if let Some(w) = self.back_prev_leaf(n) {
                    w
                } else {
                    break self.next_back_slow(true)?;
                };
                // Now on the last slot of a leaf, `[blo, bmax]`.
                if self.before_front(self.bmax) {
                    self.finish();
                    return None;
                }
                // Read under the guard of 'g that created this iterator.
                if let Some(b) = w.entry::<E>() {
                    if !self.back_yield(self.blo) {
                        return None;
                    }
                    break (self.blo, self.bmax, b);
                }
                continue;
            }
            break self.next_back_slow(false)?;
        };
        self.out = (lo, hi);
        Some(b)
    }

    /// From slot 0 of the back's leaf to the last slot of the leaf before it, through the
    /// parent, as `Walker::prev_slot` moves there: the leaf alive, not the parent's first
    /// child, the parent alive, the child slot non-empty and a leaf; then that leaf's end (its
    /// pivots read in order, as any reader derives it). Returns the slot's word, the back
    /// standing on it; `None` (nothing changed) for everything else, left to
    /// [`back_prev_leaf`](Self::back_prev_leaf).
    pub(super) fn back_cross(&mut self) -> Option<Loaded<'g>> {
        let (Some(n), Some(p)) = (self.bfast.get(), self.bparent) else {
            return None;
        };
        if self.bmin <= self.bpmin {
            return None;
        }
        if n.is_dead() || p.is_dead() {
            // `back_prev_leaf` meets it too, and restarts.
            return None;
        }
        let (i, max) = (self.bpoff - 1, self.bmin - 1);
        let min = p.slot_min(i, self.bpmin);
        let c = p.try_child(i, self.internal)?;
        if !c.is_leaf() || min > max {
            return None;
        }
        let end = leaf_end(c, max);
        let lo = c.slot_min(end, min);
        let w = c.leaf_word(end);
        self.bfast = FastLeaf::new(c);
        (self.bpoff, self.bmin, self.bmax) = (i, min, max);
        (self.boff, self.blo) = (end, lo);
        Some(w)
    }

    /// The back's fast path, the mirror of `next`'s within a leaf: from slot `boff` (from
    /// `blo`) of leaf `n` down to the previous entry, each slot's lower bound the pivot before
    /// it (below the back's slot, so below the leaf's end: pivots that no writer changes in
    /// place). `None` when slot 0 holds no entry: the back's walker takes over from there.
    #[inline(always)]
    pub(super) fn back_in_leaf(
        &mut self,
        n: NodeRef<'g>,
    ) -> Option<Option<(u64, u64, E::Borrowed<'g>)>> {
        let (mut j, mut lo) = (self.boff, self.blo);
        if j == 0 {
            return None;
        }
        loop {
            j -= 1;
            let hi = lo - 1;
            lo = if j == 0 {
                self.bmin
            } else {
                n.range_pivot(j - 1) + 1
            };
            if self.before_front(hi) {
                self.finish();
                return Some(None);
            }
            // Read under the guard of 'g that created this iterator.
            if let Some(b) = n.range_word(j).entry::<E>() {
                (self.boff, self.blo) = (j, lo);
                if !self.back_yield(lo) {
                    return Some(None);
                }
                return Some(Some((lo, hi, b)));
            }
            if j == 0 {
                // On slot 0, which holds no entry: the walker steps on from there.
                (self.boff, self.blo) = (0, lo);
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
    pub(super) fn back_yield(&mut self, lo: u64) -> bool {
        self.back_yielded = true;
        if lo == 0 || self.before_front(lo - 1) {
            let overlaps = self.front_yielded && lo < self.front_pos() && check_rewalk();
            self.finish();
            !overlaps
        } else {
            self.back_pos = lo - 1;
            self.bound_front();
            true
        }
    }

    /// Keeps the front's fast path below `back_pos` (`lim` is read only while the front has a
    /// leaf, and recomputed when it enters one).
    #[inline(always)]
    pub(super) fn bound_front(&mut self) {
        if self.leaf.get().is_some() {
            self.lim = self.lim.min(self.back_pos);
        }
    }

    /// `Walker::prev_slot` from slot 0 of the back's leaf `n` on the back's own path, as that
    /// walker would move on its path: the leaf alive; up to the first ancestor, alive, with a
    /// child before the one taken; down that child's last slots to a leaf (each node's end
    /// derived from its pivots in order), the back standing on the last slot. Returns that
    /// slot's word; `None` when the walker must walk from the root instead (past a dead node
    /// or an empty child slot, counted as a restart, or above the root), or at index 0.
    #[inline(never)]
    pub(super) fn back_prev_leaf(&mut self, n: NodeRef<'g>) -> Option<Loaded<'g>> {
        if self.blo == 0 {
            return None;
        }
        let r = self.back_climb(n, self.blo - 1);
        if let Err(true) = r {
            self.root.restarted();
        }
        r.ok()
    }

    /// [`back_prev_leaf`](Self::back_prev_leaf) below `target + 1`: `Err(restart)` when the
    /// walker must walk from the root to `target` instead (`restart`: to be counted).
    pub(super) fn back_climb(&mut self, n: NodeRef<'g>, target: u64) -> Result<Loaded<'g>, bool> {
        if n.is_dead() {
            return Err(true);
        }
        // The leaf level and the parent's offset back into the path first.
        let mut d = self.bdepth - 1;
        let (min, max) = (self.bmin, self.bmax);
        let leaf = Level {
            node: n,
            min,
            max,
            offset: 0,
        };
        self.bpath.set(d, leaf);
        if d >= 1 {
            self.bpath.get_mut(d - 1).offset = self.bpoff;
        }
        let mut cmin = min;
        loop {
            d = d.checked_sub(1).ok_or(false)?;
            let lvl = *self.bpath.get(d);
            if lvl.node.is_dead() {
                return Err(true);
            }
            if cmin > lvl.min {
                let i = lvl.offset - 1;
                self.bpath.get_mut(d).offset = i;
                let min = lvl.node.slot_min(i, lvl.min);
                let c = lvl.node.try_child(i, self.internal).ok_or(true)?;
                // The node before `c`, where the next climb goes, if it is far (see `climb`).
                if i > 0 {
                    lvl.node.prefetch_child(i - 1, n);
                }
                return self.back_descend(d + 1, c, min, target);
            }
            cmin = lvl.min;
        }
    }

    /// The descent of [`back_prev_leaf`](Self::back_prev_leaf) (`Walker`'s rightmost descent):
    /// from `n` (level `d` of `bpath`, covering `[min, max]`) down its last slots to a leaf,
    /// the back then on that leaf's last slot (ending at `max`); `Err(true)` at an empty child
    /// slot.
    pub(super) fn back_descend(
        &mut self,
        mut d: usize,
        mut n: NodeRef<'g>,
        mut min: u64,
        max: u64,
    ) -> Result<Loaded<'g>, bool> {
        loop {
            let end = if n.is_leaf() {
                leaf_end(n, max)
            } else {
                n.end(max)
            };
            let lo = n.slot_min(end, min);
            let lvl = Level {
                node: n,
                min,
                max,
                offset: end,
            };
            self.bpath.set(d, lvl);
            if n.is_leaf() {
                let w = n.leaf_word(end);
                self.bdepth = d + 1;
                self.set_bparent();
                self.bfast = FastLeaf::new(n);
                (self.boff, self.blo) = (end, lo);
                (self.bmin, self.bmax) = (min, max);
                return Ok(w);
            }
            let c = n.try_child(end, self.internal).ok_or(true)?;
            (n, min, d) = (c, lo, d + 1);
        }
    }

    /// The back's parent scalars from `bpath`.
    #[inline]
    pub(super) fn set_bparent(&mut self) {
        self.bparent = None;
        if self.bdepth >= 2 {
            let p = *self.bpath.get(self.bdepth - 2);
            (self.bparent, self.bpmin, self.bpoff) = (Some(p.node), p.min, p.offset);
        }
    }

    /// The back's step through its walker: the first step, or (`from_fast`, the fast path's
    /// fallback on slot 0 of its leaf, whose position is dropped) a walk from the root to the
    /// index before that slot; caches the walker's path for the fast path after a yield.
    #[inline(never)]
    pub(super) fn next_back_slow(
        &mut self,
        from_fast: bool,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        self.bfast = FastLeaf::NONE;
        if self.done {
            return None;
        }
        let step = if from_fast {
            self.blo.checked_sub(1).and_then(|t| self.back.walk(t))
        } else if self.back_started {
            // (The walker's own position: no leaf was cached since its last step.)
            self.back.prev_slot()
        } else {
            self.back_started = true;
            self.back.walk(self.back_pos)
        };
        if step.is_none() {
            self.finish();
            return None;
        }
        loop {
            if self.before_front(self.back.hi) {
                self.finish();
                return None;
            }
            // As in `next`: after a restart, skip a range that reaches past what was yielded.
            if self.back.lo <= self.back_pos
                && (!self.back_yielded || self.back.hi <= self.back_pos)
            {
                if let Some(b) = self.back.word.entry::<E>() {
                    let (lo, hi) = (self.back.lo, self.back.hi);
                    if !self.back_yield(lo) {
                        return None;
                    }
                    if !self.done {
                        self.cache_back_path(lo);
                    }
                    return Some((lo, hi, b));
                }
            }
            if self.back.prev_slot().is_none() {
                self.finish();
                return None;
            }
        }
    }
}
