//! Double-ended iteration over `(first, last, entry)`, lock-free.
//!
//! Each direction keeps its own walker (path), so a step is `O(1)` amortised. Under a concurrent
//! writer, each yielded range existed at some moment of the iteration, ranges come out strictly
//! increasing (or decreasing), and a range unchanged for the whole iteration is never skipped.

use core::marker::PhantomData;

use crate::entry::Entry;

use super::node::{Kind, Loaded, NodeRef, RootRef, RANGE_PIVOTS};
use super::walk::Walker;

/// Iterator over the entries of a tree (see [`MapleTree::iter`](crate::MapleTree::iter) and [`MapleTree::range`](crate::MapleTree::range)).
pub struct Iter<'g, E> {
    // The front keeps its own leaf position (the fast path): while `leaf` is `Some`, the front's
    // current slot is `off` of that leaf, covering `[lo, hi]`, the last range yielded; the leaf
    // covers `[min, max]` and is child `poff` of `parent` (whose max is `pmax`), and the walker's
    // record of its parent offset, leaf and slot is stale (written back by
    // `sync_front` before the walker moves). `next` reads each slot's pivot and
    // word once in a tight loop and crosses to the parent's next child itself, with the checks of
    // `Walker::next_leaf` on that path; everything else (the first step, the parent's last child,
    // dead nodes, restarts) goes through the walker. `None`: the walker is authoritative.
    front: Walker<'g>,
    back: Walker<'g>,
    front_started: bool,
    back_started: bool,
    /// Something was yielded from that end (later ranges must not overlap it).
    front_yielded: bool,
    back_yielded: bool,
    /// Next index the front may yield from (inclusive); while `leaf` is `Some` it is `hi + 1`
    /// instead (see [`front_pos`](Self::front_pos)).
    front_pos: u64,
    /// Last index the back may yield up to (inclusive).
    back_pos: u64,
    /// Ended (`leaf` is then `None`).
    done: bool,
    internal: Kind,
    leaf: Option<NodeRef<'g>>,
    /// `leaf` while slot `off` is not its last (the two-slot step may look past it).
    fast: Option<NodeRef<'g>>,
    /// `min(max, back_pos)`: a pivot below it bounds a slot that is neither the leaf's last
    /// nor reaches the back.
    lim: u64,
    /// The back's leaf while its fast path holds the position: slot `boff` of it, `[blo, bhi]`,
    /// the leaf's min `bmin`; the back walker's record of that slot is stale meanwhile.
    bfast: Option<NodeRef<'g>>,
    boff: usize,
    blo: u64,
    bhi: u64,
    bmin: u64,
    /// The range `next_general` found.
    out: (u64, u64),
    off: usize,
    lo: u64,
    hi: u64,
    min: u64,
    max: u64,
    parent: Option<NodeRef<'g>>,
    poff: usize,
    pmax: u64,
    _e: PhantomData<&'g E>,
}

/// The fast path's scan of leaf `$n` (whose max is `$max`) from the slot after `$i` (whose
/// bound is `$hi`, below `$max`), inside a method of [`Iter`] (`$s` is its `self`): each slot's
/// pivot is read once, then its word; a pivot at or above the max (or the slot past the pivots)
/// ends the leaf, that slot's bound clamped to the max. Returns the first entry found (through
/// `yield_front`), or evaluates `$end` with the leaf's last slot as `($ei, $elo, $ehi)`. A macro
/// rather than a function so that the yield is a plain `return` at both uses.
macro_rules! scan_leaf {
    ($s:ident, $n:expr, $max:expr, $i:expr, $hi:expr, |$ei:ident, $elo:ident, $ehi:ident| $end:expr) => {{
        let (n, max): (NodeRef<'g>, u64) = ($n, $max);
        let (mut i, mut hi): (usize, u64) = ($i, $hi);
        debug_assert!(hi < max);
        loop {
            i = i.wrapping_add(1);
            let lo = hi + 1;
            let w = if i < RANGE_PIVOTS {
                let p = n.range_pivot(i);
                let w = n.range_word(i);
                if p < max {
                    hi = p;
                    // Read under the guard of 'g that created this iterator.
                    if let Some(b) = w.entry::<E>() {
                        return $s.yield_front(i, lo, hi, b);
                    }
                    continue;
                }
                w
            } else {
                n.range_word(i)
            };
            // The leaf's last slot, `[lo, max]`.
            if let Some(b) = w.entry::<E>() {
                $s.fast = None;
                return $s.yield_front(i, lo, max, b);
            }
            let ($ei, $elo, $ehi) = (i, lo, max);
            break $end;
        }
    }};
}

impl<'g, E: Entry> Iter<'g, E> {
    pub(crate) fn new(root: RootRef<'g>, first: u64, last: u64) -> Self {
        Iter {
            front: Walker::new(root),
            back: Walker::new(root),
            front_started: false,
            back_started: false,
            front_yielded: false,
            back_yielded: false,
            front_pos: first,
            back_pos: last,
            done: first > last,
            internal: root.internal(),
            leaf: None,
            fast: None,
            lim: 0,
            bfast: None,
            boff: 0,
            blo: 0,
            bhi: 0,
            bmin: 0,
            out: (0, 0),
            off: 0,
            lo: 0,
            hi: 0,
            min: 0,
            max: 0,
            parent: None,
            poff: 0,
            pmax: 0,
            _e: PhantomData,
        }
    }

    /// Next index the front may yield from.
    #[inline]
    fn front_pos(&self) -> u64 {
        if self.leaf.is_some() {
            self.hi + 1
        } else {
            self.front_pos
        }
    }

    /// Ends the iteration.
    #[inline]
    fn finish(&mut self) {
        self.done = true;
        self.leaf = None;
        self.fast = None;
        self.bfast = None;
    }

    /// Enters leaf `n` (covering up to `max`) on the fast path.
    #[inline]
    fn enter_leaf(&mut self, n: NodeRef<'g>, max: u64) {
        self.leaf = Some(n);
        self.fast = Some(n);
        self.max = max;
        self.lim = max.min(self.back_pos);
    }

    /// The window left to yield from, and whether the iterator has ended (for `Debug`).
    pub(crate) fn positions(&self) -> (u64, u64, bool) {
        (self.front_pos(), self.back_pos, self.done)
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// Yields the entry `b` of slot `off` of the fast path's leaf, `[lo, hi]`.
    #[inline(always)]
    fn yield_front(
        &mut self,
        off: usize,
        lo: u64,
        hi: u64,
        b: E::Borrowed<'g>,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        if hi >= self.back_pos {
            return self.yield_last(lo, hi, b);
        }
        self.off = off;
        self.lo = lo;
        self.hi = hi;
        Some((lo, hi, b))
    }

    /// The front's last range (it reaches `back_pos`), if it starts within the window.
    #[cold]
    #[inline(never)]
    fn yield_last(
        &mut self,
        lo: u64,
        hi: u64,
        b: E::Borrowed<'g>,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        self.finish();
        if lo > self.back_pos {
            return None;
        }
        Some((lo, hi, b))
    }

    /// The fast path at the last slot of its leaf (`off`, `[lo, hi]`, `hi` the leaf's max):
    /// across to the parent's next child and on through that leaf, or through
    /// [`next_slow`](Self::next_slow). Checks what `Walker::next_leaf` checks on this path, in
    /// its order: the leaf alive, not the parent's last child, the parent alive, the child slot
    /// (after its pivot) non-empty and a leaf.
    #[inline(always)]
    fn next_cross(
        &mut self,
        mut off: usize,
        mut lo: u64,
        mut hi: u64,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        let last_hi = self.hi;
        loop {
            if hi == u64::MAX {
                self.finish();
                return None;
            }
            let (Some(n), Some(p)) = (self.leaf, self.parent) else {
                break;
            };
            if n.is_dead() || hi >= self.pmax || p.is_dead() {
                break;
            }
            let pi = self.poff + 1;
            let max = p.slot_max(pi, self.pmax);
            let Some(c) = p.try_child(pi, self.internal) else {
                break;
            };
            // (A child ending at or before `hi` covers nothing: no writer makes one; the
            // walker deals with it.)
            if !c.is_leaf() || hi >= max {
                break;
            }
            self.poff = pi;
            self.enter_leaf(c, max);
            self.min = hi + 1;
            // From a virtual slot before 0 that ends at `hi` (`min - 1`).
            scan_leaf!(self, c, max, usize::MAX, hi, |i, l, h| (off, lo, hi) =
                (i, l, h));
        }
        self.sync_front(off, lo, hi);
        self.front_pos = last_hi + 1;
        let (lo, hi, w) = self.next_slow()?;
        // Read under the guard of 'g that created this iterator.
        let b = w.entry::<E>()?;
        Some((lo, hi, b))
    }

    /// Hands the position the fast path reached (slot `off` of its leaf, `[lo, hi]`) back to the
    /// walker, and leaves the fast path.
    fn sync_front(&mut self, off: usize, lo: u64, hi: u64) {
        self.fast = None;
        if let Some(n) = self.leaf.take() {
            if self.parent.is_some() {
                self.front.set_parent_leaf(self.poff, n, self.min, self.max);
            }
            let w = n.range_word(off);
            self.front.set_leaf_slot(off, lo, hi, w);
        }
    }

    /// The front's step through the walker (first step, leaf crossings, restarts): moves to the
    /// next entry, applies the overlap and end checks, and caches the leaf for the fast path.
    #[inline(never)]
    fn next_slow(&mut self) -> Option<(u64, u64, Loaded<'g>)> {
        debug_assert!(self.leaf.is_none());
        let step = if self.front_started {
            self.front.next_entry()
        } else {
            self.front_started = true;
            self.front.walk(self.front_pos).and_then(|()| {
                let w = self.front.word;
                if w.is_entry() {
                    Some(())
                } else {
                    self.front.next_entry()
                }
            })
        };
        if step.is_none() {
            self.finish();
            return None;
        }
        // A walker that restarted from the root (it met a replaced node) lands on the range
        // containing its next index, which may have been created since and start before it:
        // skip such a range rather than yield an overlap.
        while self.front_yielded && self.front.lo < self.front_pos {
            if self.front.next_entry().is_none() {
                self.finish();
                return None;
            }
        }
        if self.front.lo > self.back_pos {
            self.finish();
            return None;
        }
        self.front_yielded = true;
        let (lo, hi) = (self.front.lo, self.front.hi);
        if hi >= self.back_pos {
            self.finish();
        } else {
            self.front_pos = hi + 1;
            let path = self.front.path();
            let leaf = path[path.len() - 1];
            if path.len() >= 2 {
                let p = path[path.len() - 2];
                self.parent = Some(p.node);
                self.poff = p.offset;
                self.pmax = p.max;
            } else {
                self.parent = None;
            }
            self.enter_leaf(leaf.node, leaf.max);
            if hi >= leaf.max {
                self.fast = None;
            }
            self.min = leaf.min;
            self.off = leaf.offset;
            self.lo = lo;
            self.hi = hi;
        }
        Some((lo, hi, self.front.word))
    }
}

impl<'g, E: Entry + 'g> Iterator for Iter<'g, E> {
    type Item = (u64, u64, E::Borrowed<'g>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        // Fastest path: slot `off` is not the leaf's last, so slot `off + 1` is within its end;
        // with room for two more pivots, the next two slots without a loop (a range and the
        // gap after it is the common shape). Each pivot is loaded before its slot, as in
        // `scan_leaf`; a bound at or above `lim` (the leaf's last slot, or the back reached)
        // goes the general way.
        if let Some(n) = self.fast {
            let (i, lim) = (self.off, self.lim);
            if i < RANGE_PIVOTS - 2 {
                let p1 = n.range_pivot(i + 1);
                let w1 = n.range_word(i + 1);
                if w1.raw() == 0 {
                    if p1 < lim {
                        let p2 = n.range_pivot(i + 2);
                        let w2 = n.range_word(i + 2);
                        // Read under the guard of 'g that created this iterator.
                        if let (true, Some(b)) = (p2 < lim, w2.entry::<E>()) {
                            self.off = i + 2;
                            self.hi = p2;
                            return Some((p1 + 1, p2, b));
                        }
                    }
                } else if let (true, Some(b)) = (p1 < lim, w1.entry::<E>()) {
                    let lo = self.hi + 1;
                    self.off = i + 1;
                    self.hi = p1;
                    return Some((lo, p1, b));
                }
            }
        }
        // Everything else re-reads from slot `off`.
        let b = self.next_general()?;
        Some((self.out.0, self.out.1, b))
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// [`next`](Iterator::next) past the two-slot step: the entry, its range in `out` (a small
    /// return value keeps the fast path's result in registers).
    #[inline(never)]
    fn next_general(&mut self) -> Option<E::Borrowed<'g>> {
        let (lo, hi, b) = self.next_scan()?;
        self.out = (lo, hi);
        Some(b)
    }

    /// The next entry from slot `off` of the front's leaf, across leaves, or through the walker.
    #[inline(always)]
    fn next_scan(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        // Fast path: the next entry in the same leaf, as `Walker::next_entry` finds it (each
        // slot's bound is its pivot, read once, clamped to the leaf's max), without touching the
        // walker. No overlap check is needed: `lo` follows the last yielded range.
        if let Some(n) = self.leaf {
            let (max, i, hi) = (self.max, self.off, self.hi);
            if hi >= max {
                return self.next_cross(i, self.lo, hi);
            }
            let (i, lo, hi) = scan_leaf!(self, n, max, i, hi, |i, lo, hi| (i, lo, hi));
            return self.next_cross(i, lo, hi);
        }
        if self.done {
            return None;
        }
        let (lo, hi, w) = self.next_slow()?;
        // Read under the guard of 'g that created this iterator.
        let b = w.entry::<E>()?;
        Some((lo, hi, b))
    }
}

impl<'g, E: Entry + 'g> DoubleEndedIterator for Iter<'g, E> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        if let Some(n) = self.bfast {
            if let Some(r) = self.back_in_leaf(n) {
                return r;
            }
        }
        self.next_back_slow()
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// The back's fast path, the mirror of `next`'s within a leaf: from slot `boff` (`[blo,
    /// bhi]`) of leaf `n` down to the previous entry, each slot's lower bound the pivot before
    /// it (below the back's slot, so below the leaf's end: pivots that no writer changes in
    /// place). `None` when slot 0 holds no entry: the back's walker takes over from there.
    #[inline(always)]
    fn back_in_leaf(&mut self, n: NodeRef<'g>) -> Option<Option<(u64, u64, E::Borrowed<'g>)>> {
        let front = self.front_pos();
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
            if hi < front {
                self.finish();
                return Some(None);
            }
            // Read under the guard of 'g that created this iterator.
            if let Some(b) = n.range_word(j).entry::<E>() {
                (self.boff, self.blo, self.bhi) = (j, lo, hi);
                self.back_yield(lo);
                return Some(Some((lo, hi, b)));
            }
            if j == 0 {
                // On slot 0, which holds no entry: the walker steps on from there.
                (self.boff, self.blo, self.bhi) = (0, lo, hi);
                return None;
            }
        }
    }

    /// Records that the back yielded a range starting at `lo`.
    #[inline(always)]
    fn back_yield(&mut self, lo: u64) {
        self.back_yielded = true;
        if lo <= self.front_pos() || lo == 0 {
            self.finish();
        } else {
            self.back_pos = lo - 1;
            self.lim = self.lim.min(self.back_pos);
        }
    }

    /// Hands the back's fast-path position back to its walker.
    fn sync_back(&mut self) {
        if let Some(n) = self.bfast.take() {
            let w = n.range_word(self.boff);
            self.back.set_leaf_slot(self.boff, self.blo, self.bhi, w);
        }
    }

    /// The back's step through its walker (first step, leaf crossings, restarts); caches the
    /// leaf for the fast path after a yield.
    #[inline(never)]
    fn next_back_slow(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        self.sync_back();
        if self.done {
            return None;
        }
        let step = if self.back_started {
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
            if self.back.hi < self.front_pos() {
                self.finish();
                return None;
            }
            // As in `next`: after a restart, skip a range that reaches past what was yielded.
            if self.back.lo <= self.back_pos
                && (!self.back_yielded || self.back.hi <= self.back_pos)
            {
                if let Some(b) = self.back.word.entry::<E>() {
                    let (lo, hi) = (self.back.lo, self.back.hi);
                    self.back_yield(lo);
                    if !self.done {
                        let leaf = *self.back.leaf();
                        self.bfast = Some(leaf.node);
                        (self.boff, self.blo, self.bhi) = (leaf.offset, lo, hi);
                        self.bmin = leaf.min;
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{MapleTree, Value};

    /// Irregular ranges and gaps over several levels (both tree kinds), then every way of
    /// walking them: forward, backward, alternating ends, and bounded ranges, against a model.
    #[test]
    fn fast_path_matches_model() {
        for alloc in [false, true] {
            let tree = if alloc {
                MapleTree::<Value>::new_alloc()
            } else {
                MapleTree::<Value>::new()
            };
            let mut model = BTreeMap::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut at = 0u64;
            for i in 0..3000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let len = x % 7;
                let gap = (x >> 8) % 4;
                tree.store_range(at..=at + len, Value::new(i)).unwrap();
                model.insert(at, (at + len, i));
                at += len + 1 + gap;
            }
            let all: Vec<_> = model.iter().map(|(&a, &(b, v))| (a, b, v)).collect();
            let g = tree.pin();
            let got: Vec<_> = tree.iter(&g).map(|(a, b, v)| (a, b, v.get())).collect();
            assert_eq!(got, all);
            let mut back: Vec<_> = tree
                .iter(&g)
                .rev()
                .map(|(a, b, v)| (a, b, v.get()))
                .collect();
            back.reverse();
            assert_eq!(back, all);
            // Alternating ends meet in the middle without overlap or loss.
            let mut it = tree.iter(&g);
            let (mut front, mut rear) = (Vec::new(), Vec::new());
            for k in 0.. {
                let step = if k % 3 == 2 {
                    it.next_back()
                } else {
                    it.next()
                };
                let Some((a, b, v)) = step else { break };
                if k % 3 == 2 {
                    rear.push((a, b, v.get()));
                } else {
                    front.push((a, b, v.get()));
                }
            }
            rear.reverse();
            front.extend(rear);
            assert_eq!(front, all);
            // Bounded ranges, edges inside entries and inside gaps.
            for (first, last) in [(0, 0), (5, 97), (1234, 1234), (100, 9000), (7000, u64::MAX)] {
                let want: Vec<_> = all
                    .iter()
                    .copied()
                    .filter(|&(a, b, _)| b >= first && a <= last)
                    .collect();
                let got: Vec<_> = tree
                    .range(first..=last, &g)
                    .map(|(a, b, v)| (a, b, v.get()))
                    .collect();
                assert_eq!(got, want, "range {first}..={last}");
            }
        }
    }
}
