//! Double-ended iteration over `(range, entry)`, lock-free.
//!
//! Each direction keeps its own position (path), so a step is `O(1)` amortised. Under a
//! concurrent writer, each yielded range existed at some moment of the iteration, ranges come
//! out strictly increasing (or decreasing), and a range unchanged for the whole iteration is
//! never skipped.

use core::marker::PhantomData;
use core::ops::RangeInclusive;

use crate::entry::Entry;

use super::node::{
    FastLeaf, FrontLeaf, FrontParent, Kind, Loaded, NodeRef, Read, RootRef, RANGE_PIVOTS,
    RANGE_SLOTS,
};
use super::walk::{check_rewalk, leaf_end, Level, Walker};

mod back;
#[cfg(test)]
mod tests;

use back::Back;

/// The offsets of the front's two-slot step (`FrontLeaf::at`): pivots `j` and `j + 1`.
const FRONT_ROOM: usize = RANGE_PIVOTS - 1;
/// The back's two-slot step (`FastLeaf`) from slot `i + 3`: pivots `i` and `i + 1`, slots up
/// to `i + 2`.
const BACK_ROOM: usize = RANGE_SLOTS - 3;

/// Iterator over the entries of a tree (see [`MapleTree::iter`](crate::MapleTree::iter) and [`MapleTree::range`](crate::MapleTree::range)).
pub struct Iter<'g, E> {
    root: RootRef<'g, Read, E>,
    internal: Kind,
    /// Ended (neither end then holds a leaf).
    done: bool,
    /// The range `next_general` or `next_back_general` found.
    out: (u64, u64),
    front: Front<'g, E>,
    back: Back<'g, E>,
    _e: PhantomData<&'g E>,
}

/// The iterator's front end: its walker and, while it holds a leaf (the fast path), its place
/// in that leaf. `next` reads each slot's pivot and word once and crosses leaves itself, with
/// the checks of the walker's crossing ([`cross`](Self::cross) to the next child of the same
/// parent, [`Walker::cross_next`] above that); the first step and restarts walk from the root
/// with the walker (`next_slow`).
struct Front<'g, E> {
    /// The walker, whose path is the front's: while `leaf` holds a leaf, that leaf is the
    /// path's last level, but for a crossing to the parent's next child, which moves `leaf`,
    /// `max` and `poff` alone (the path's last level and the parent's offset are then behind;
    /// nothing reads them before the next walk or climb rewrites them). The walker's slot
    /// (`lo`, `hi`, `word`) is its last walk's.
    walker: Walker<'g, Read, E>,
    /// Something was yielded from the front (later ranges must not overlap it).
    yielded: bool,
    /// The leaf, if the fast path holds the position, with the slot after the current one,
    /// `next_off` (the current is `next_off - 1`; 0 before slot 0). While slot `next_off - 1`
    /// is the leaf's last, `next_off` is past the slots (`RANGE_SLOTS`) or the next step
    /// crosses at once, so the two-slot step never looks past the leaf's end.
    leaf: FrontLeaf<'g, E>,
    /// `min(max, back.pos)` while `leaf` holds one (meaningless otherwise): a pivot below it
    /// bounds a slot that is neither the leaf's last nor reaches the back.
    lim: u64,
    /// The end of what the front has passed: the next index it may yield from is `hi + 1`
    /// (wrapping: `u64::MAX` before index 0; see [`pos`](Self::pos)). Not kept while the front
    /// holds a leaf and `next_off` is in `1..=RANGE_PIVOTS`: the current slot, `next_off - 1`,
    /// is then not the leaf's last (a state on the last slot sets `next_off` to `RANGE_SLOTS`,
    /// or leaves the leaf at once), so its pivot is the end (see [`end`](Self::end)), and the
    /// fast path's steps do not store it.
    hi: u64,
    /// For the back's fast path, a range starting past `bound` is free (it starts at or above
    /// [`pos`](Self::pos)): the max of the front's leaf while it holds one (a range of another
    /// leaf starts past it), `pos` otherwise.
    bound: u64,
    /// The max of the leaf.
    max: u64,
    /// The leaf's parent with its max (`NONE`: the leaf is the root), and the leaf's offset in
    /// it.
    parent: FrontParent<'g, E>,
    poff: usize,
}

/// The fast path's scan of leaf `$n` (whose max is `$max`) from the slot after `$i` (whose
/// bound is `$hi`, below `$max`), inside a method of [`Iter`] (`$s` is its `self`): each slot's
/// pivot is read once, then its word; a pivot at or above the max (or the slot past the pivots)
/// ends the leaf, that slot's bound clamped to the max. Returns the first entry found (through
/// `yield_front`), or evaluates `$end` with the leaf's last slot as `($ei, $ehi)`. A macro
/// rather than a function so that the yield is a plain `return`.
macro_rules! scan_leaf {
    ($s:ident, $n:expr, $max:expr, $i:expr, $hi:expr, |$ei:ident, $ehi:ident| $end:expr) => {{
        let (n, max): (NodeRef<'g, Read, E>, u64) = ($n, $max);
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
                    if let Some(b) = w.entry() {
                        return $s.yield_front(i, lo, hi, b);
                    }
                    continue;
                }
                w
            } else {
                n.range_word(i)
            };
            // The leaf's last slot, `[lo, max]`.
            if let Some(b) = w.entry() {
                return $s.yield_end(n, lo, max, b);
            }
            let ($ei, $ehi) = (i, max);
            break $end;
        }
    }};
}

impl<'g, E> Front<'g, E> {
    #[inline(always)]
    fn new(root: RootRef<'g, Read, E>, first: u64) -> Self {
        Front {
            walker: Walker::new(root),
            yielded: false,
            leaf: FrontLeaf::NONE,
            lim: 0,
            hi: first.wrapping_sub(1),
            bound: first,
            max: 0,
            parent: FrontParent::NONE,
            poff: 0,
        }
    }

    /// The end of what the front has passed (see `hi`).
    #[inline]
    fn end(&self) -> u64 {
        match self.leaf.get() {
            Some(n) if (1..=RANGE_PIVOTS).contains(&self.leaf.off()) => {
                n.range_pivot(self.leaf.off() - 1)
            }
            _ => self.hi,
        }
    }

    /// Next index the front may yield from.
    #[inline]
    fn pos(&self) -> u64 {
        self.end().wrapping_add(1)
    }

    /// Whether index `x` is below [`pos`](Self::pos) (`bound` first: only an `x` at or below
    /// it may be).
    #[inline]
    fn before(&self, x: u64) -> bool {
        x <= self.bound && x < self.pos()
    }

    /// Ends the front at the current position.
    #[inline]
    fn finish(&mut self) {
        self.hi = self.end();
        self.bound = self.hi.wrapping_add(1);
        self.leaf = FrontLeaf::NONE;
    }

    /// Leaves the fast path at the current position (in `hi`, kept): the next step walks from
    /// the root.
    fn leave(&mut self) {
        self.bound = self.hi.wrapping_add(1);
        self.leaf = FrontLeaf::NONE;
    }

    /// Enters leaf `n` (covering up to `max`) on the fast path, at offset `off`, the back at
    /// `back_pos`.
    #[inline]
    fn enter_leaf(&mut self, n: NodeRef<'g, Read, E>, max: u64, off: usize, back_pos: u64) {
        self.leaf = FrontLeaf::new(n, off);
        self.set_max(max, back_pos);
    }

    /// The max of the leaf the front enters, its `lim` and `bound`.
    #[inline]
    fn set_max(&mut self, max: u64, back_pos: u64) {
        self.max = max;
        self.bound = max;
        self.lim = max.min(back_pos);
    }

    /// The parent scalars from the path.
    #[inline]
    fn set_parent(&mut self) {
        let depth = self.walker.depth;
        if depth >= 2 {
            let p = *self.walker.level(depth - 2);
            (self.parent, self.poff) = (FrontParent::new(p.node, p.max), p.offset);
        } else {
            self.parent = FrontParent::NONE;
        }
    }

    /// From the last slot of the leaf `leaf` (ending at `max`, below `u64::MAX`) to the
    /// leftmost leaf after it, as [`Walker::cross_next`] moves: to the parent's next child
    /// when the leaf is not its last (the leaf and the parent alive, the child slot non-empty
    /// and a leaf), through `cross_next` otherwise. The front then stands before the new
    /// leaf's slot 0 (`next_off` 0, ending at `min - 1`). `Some(false)` (nothing changed but
    /// the path's offsets, which the walk that follows rewrites) when the walker must walk
    /// from the root instead: a dead node (counted as a restart) or a state only a race can
    /// produce. `None` (nothing changed) when the leaf is its parent's last child: the caller
    /// then [`climb`](Self::climb)s.
    #[inline(always)]
    fn cross(
        &mut self,
        root: RootRef<'g, Read, E>,
        leaf: NodeRef<'g, Read, E>,
        back_pos: u64,
    ) -> Option<bool> {
        let target = self.max + 1;
        let p = self.parent.below(self.max)?;
        if leaf.is_dead() || p.is_dead() {
            root.restarted();
            return Some(false);
        }
        let i = self.poff + 1;
        let Some((c, max)) = p.child_and_max(i, self.parent.max()) else {
            return Some(false);
        };
        if !c.is_leaf() || max < target {
            return Some(false);
        }
        self.poff = i;
        self.leaf.move_to(c);
        self.set_max(max, back_pos);
        self.hi = target - 1;
        Some(true)
    }

    /// [`cross`](Self::cross) when the leaf is its parent's last child: the walker's crossing.
    /// (The parent's offset in the path is behind, and stays so: the climb passes the parent,
    /// whose last child the leaf is, and the descent rewrites its level.)
    /// (Inlined into the iterator's [`climb`](Iter::climb), which is not.)
    #[inline]
    fn climb(&mut self, leaf: NodeRef<'g, Read, E>, back_pos: u64) -> bool {
        if self.walker.cross_next(leaf, self.max).is_none() {
            return false;
        }
        let l = *self.walker.leaf();
        self.set_parent();
        self.enter_leaf(l.node, l.max, 0, back_pos);
        self.hi = l.min - 1;
        true
    }

    /// Enters the walker's leaf on the fast path, after the walker's slot.
    fn cache_path(&mut self, back_pos: u64) {
        let leaf = *self.walker.leaf();
        self.set_parent();
        // On the leaf's last slot, the next step crosses (the two-slot step finds no slot).
        let off = if self.walker.hi >= leaf.max {
            RANGE_SLOTS
        } else {
            leaf.offset + 1
        };
        self.enter_leaf(leaf.node, leaf.max, off, back_pos);
    }
}

impl<'g, E: Entry> Iter<'g, E> {
    /// The iterator over `[first, last]`.
    pub(crate) fn new(root: RootRef<'g, Read, E>, first: u64, last: u64) -> Self {
        Iter {
            root,
            internal: root.internal(),
            done: first > last,
            out: (0, 0),
            front: Front::new(root, first),
            back: Back::new(root, last),
            _e: PhantomData,
        }
    }

    /// The front's crossing from leaf `n` ([`Front::cross`], or [`climb`](Self::climb)).
    #[inline(always)]
    fn cross_front(&mut self, n: NodeRef<'g, Read, E>) -> bool {
        match self.front.cross(self.root, n, self.back.pos) {
            Some(crossed) => crossed,
            None => self.climb(n),
        }
    }

    /// [`Front::climb`], out of line (a method of the iterator, so that it is compiled with it
    /// and called directly).
    #[inline(never)]
    fn climb(&mut self, n: NodeRef<'g, Read, E>) -> bool {
        self.front.climb(n, self.back.pos)
    }

    /// Ends the iteration.
    #[inline]
    fn finish(&mut self) {
        self.front.finish();
        self.done = true;
        self.back.leaf = FastLeaf::NONE;
    }

    /// The window left to yield from, and whether the iterator has ended (for `Debug`).
    pub(crate) fn positions(&self) -> (u64, u64, bool) {
        (self.front.pos(), self.back.pos, self.done)
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
        if hi >= self.back.pos {
            return self.yield_last(lo, hi, b);
        }
        self.front.leaf.set_off(off + 1);
        self.front.hi = hi;
        Some((lo, hi, b))
    }

    /// Yields the entry `b` of the last slot of the front's leaf `n`, `[lo, max]`, and moves
    /// on to the next leaf at once (the next call starts there on the fast path).
    #[inline(always)]
    fn yield_end(
        &mut self,
        n: NodeRef<'g, Read, E>,
        lo: u64,
        max: u64,
        b: E::Borrowed<'g>,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        if max >= self.back.pos {
            return self.yield_last(lo, max, b);
        }
        // A crossing sets the position itself (before the new leaf's slot 0, ending at `max`).
        if !self.cross_front(n) {
            self.front.hi = max;
            self.front.leave();
        }
        Some((lo, max, b))
    }

    /// The front's last range (it reaches `back.pos`), if it starts within the window.
    #[cold]
    #[inline(never)]
    fn yield_last(
        &mut self,
        lo: u64,
        hi: u64,
        b: E::Borrowed<'g>,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        let reaches_yielded = self.back.yielded && hi > self.back.pos && check_rewalk();
        self.finish();
        // A range reaching into what the back has yielded changed since the back passed it
        // (a write between the two ends' steps): its indices there came out already.
        if lo > self.back.pos || reaches_yielded {
            return None;
        }
        Some((lo, hi, b))
    }

    /// The front's step from the root, with the walker (the first step and restarts): to the
    /// range containing the front's position, on to an entry, skipping a range that starts
    /// before that position once something was yielded (a walk that restarted lands on the
    /// range containing its index, which may have been created since: it must not overlap what
    /// was yielded); applies the end checks and enters the walker's leaf on the fast path.
    #[inline(never)]
    fn next_slow(&mut self) -> Option<(u64, u64, Loaded<'g, E>)> {
        debug_assert!(self.front.leaf.get().is_none());
        let pos = self.front.pos();
        let w = &mut self.front.walker;
        let step = w.walk(pos).and_then(|()| {
            if w.word.is_entry() {
                Some(())
            } else {
                w.next_entry()
            }
        });
        if step.is_none() {
            self.finish();
            return None;
        }
        while self.front.yielded && self.front.walker.lo < pos {
            if self.front.walker.next_entry().is_none() {
                self.finish();
                return None;
            }
        }
        let (lo, hi, word) = (
            self.front.walker.lo,
            self.front.walker.hi,
            self.front.walker.word,
        );
        if lo > self.back.pos {
            self.finish();
            return None;
        }
        self.front.yielded = true;
        if hi >= self.back.pos {
            // As in `yield_last`: never into what the back has yielded.
            let reaches_yielded = self.back.yielded && hi > self.back.pos && check_rewalk();
            self.finish();
            if reaches_yielded {
                return None;
            }
        } else {
            self.front.cache_path(self.back.pos);
            self.front.hi = hi;
        }
        Some((lo, hi, word))
    }
}

impl<'g, E: Entry + 'g> Iterator for Iter<'g, E> {
    type Item = (RangeInclusive<u64>, E::Borrowed<'g>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        self.next_raw().map(|(a, b, v)| (a..=b, v))
    }
}

impl<'g, E: Entry + 'g> DoubleEndedIterator for Iter<'g, E> {
    #[inline(always)]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_back_raw().map(|(a, b, v)| (a..=b, v))
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// The next `(first, last, entry)` from the front (the iterator's `next`, without the
    /// range built: the crate's own loops read the bounds).
    #[inline(always)]
    pub(crate) fn next_raw(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        // Fastest path: slot `next_off` is within the leaf's end (the current slot is not the
        // last); with a leaf and room for two pivots (one check, `FrontLeaf::at`), the next
        // two slots without a loop (a gap and the range after it is the common shape). Each
        // pivot is loaded before its slot, as in `scan_leaf`; a bound at or above `lim` (the
        // leaf's last slot, or the back reached) goes the general way, and so does slot
        // `next_off` itself then, entry or not.
        let b = 'slow: {
            let lim = self.front.lim;
            if let Some(at) = self.front.leaf.at::<FRONT_ROOM>() {
                let (n, j) = (at.node(), at.off());
                let p1 = n.range_pivot(j);
                let w1 = n.range_word(j);
                if p1 < lim {
                    if w1.raw() == 0 {
                        // Slot `j` holds nothing: on to slot `j + 1`.
                        let p2 = n.range_pivot(j + 1);
                        // Read under the guard of 'g that created this iterator.
                        if let Some(b) = n.range_word(j + 1).entry() {
                            if p2 < lim {
                                at.advance(2);
                                return Some((p1 + 1, p2, b));
                            }
                            break 'slow self.yield_bound(n, j + 1, p1 + 1, p2, b);
                        }
                    } else {
                        // Read under the guard of 'g that created this iterator.
                        let Some(b) = w1.entry() else {
                            break 'slow self.next_past_zero();
                        };
                        // After slot `j - 1`, not the last, or (slot 0) after `hi`.
                        let lo = if j == 0 {
                            self.front.hi
                        } else {
                            n.range_pivot(j - 1)
                        } + 1;
                        at.advance(1);
                        return Some((lo, p1, b));
                    }
                }
            } else if let Some(n) = self.front.leaf.at_exactly(RANGE_PIVOTS - 1) {
                // Slot 14 and the leaf's last possible slot, 15 (no pivot).
                let j = RANGE_PIVOTS - 1;
                let p1 = n.range_pivot(j);
                let w1 = n.range_word(j);
                if w1.raw() == 0 && p1 < lim {
                    if let Some(b) = n.range_word(j + 1).entry() {
                        return self.yield_end(n, p1 + 1, self.front.max, b);
                    }
                }
            }
            // Everything else re-reads from the leaf's offset.
            self.next_general()
        }?;
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

    /// [`next_general`](Self::next_general) from a slot of the two-slot step that holds the
    /// zero entry (read as empty; rare, and kept apart so that the step tests for nothing
    /// first).
    #[cold]
    #[inline(never)]
    fn next_past_zero(&mut self) -> Option<E::Borrowed<'g>> {
        self.next_general()
    }

    /// The fast path's entry `b` in slot `off` of leaf `n` from `lo`, whose bound `p`
    /// (`u64::MAX` past the pivots) is at or above `lim`: the leaf's last slot (then on to the next leaf) or the
    /// range reaching the back. Its range goes to `out`, as for `next_general`.
    #[inline(never)]
    fn yield_bound(
        &mut self,
        n: NodeRef<'g, Read, E>,
        off: usize,
        lo: u64,
        p: u64,
        b: E::Borrowed<'g>,
    ) -> Option<E::Borrowed<'g>> {
        let (lo, hi, b) = if p >= self.front.max {
            self.yield_end(n, lo, self.front.max, b)
        } else {
            self.yield_front(off, lo, p, b)
        }?;
        self.out = (lo, hi);
        Some(b)
    }

    /// The next entry from slot `next_off` of the front's leaf, across leaves, or from the root.
    #[inline(always)]
    fn next_scan(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        while let Some(n) = self.front.leaf.get() {
            let (max, i, hi) = (
                self.front.max,
                self.front.leaf.off().wrapping_sub(1),
                self.front.end(),
            );
            if hi < max {
                // On the leaf's last slot: `next_off` past the slots (see `hi`).
                scan_leaf!(self, n, max, i, hi, |_i, hi| {
                    self.front.leaf.set_off(RANGE_SLOTS);
                    self.front.hi = hi;
                });
            }
            if self.front.hi == u64::MAX {
                self.finish();
                return None;
            }
            if !self.cross_front(n) {
                self.front.leave();
            }
        }
        if self.done {
            return None;
        }
        let (lo, hi, w) = self.next_slow()?;
        // Read under the guard of 'g that created this iterator.
        let b = w.entry()?;
        Some((lo, hi, b))
    }
}
