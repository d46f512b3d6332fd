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
    FastLeaf, FrontLeaf, FrontParent, Kind, Loaded, NodeRef, RootRef, WalkStack, RANGE_PIVOTS,
    RANGE_SLOTS,
};
use super::walk::{check_rewalk, Level, Walker, MAX_DEPTH};

mod back;
#[cfg(test)]
mod tests;

/// The offsets of the front's two-slot step (`FrontLeaf::at`): pivots `j` and `j + 1`.
const FRONT_ROOM: usize = RANGE_PIVOTS - 1;
/// The back's two-slot step (`FastLeaf`) from slot `i + 3`: pivots `i` and `i + 1`, slots up
/// to `i + 2`.
const BACK_ROOM: usize = RANGE_SLOTS - 3;

/// Iterator over the entries of a tree (see [`MapleTree::iter`](crate::MapleTree::iter) and [`MapleTree::range`](crate::MapleTree::range)).
pub struct Iter<'g, E> {
    // The front keeps its own path (the fast path): while `leaf` holds a leaf, the front's
    // current slot is `off` of that leaf, ending at `front_hi` (the last range yielded ends
    // there); the leaf covers `[min, max]` and is level `fdepth - 1` of `fpath`, whose other
    // levels are its ancestors with the offsets taken (the leaf level there is stale: `off`,
    // `min`, `max` are current, and so are `parent` and `poff` for the level above). `next`
    // reads each slot's pivot and word once and crosses leaves itself, with the checks of
    // `Walker::next_leaf` (`cross`, `climb`); the first step and restarts walk from the root
    // with the walker (`next_slow`), whose path is then copied.
    root: RootRef<'g>,
    front: Walker<'g>,
    back: Walker<'g>,
    back_started: bool,
    /// Something was yielded from that end (later ranges must not overlap it).
    front_yielded: bool,
    back_yielded: bool,
    /// Last index the back may yield up to (inclusive).
    back_pos: u64,
    /// Ended (`leaf` is then `FrontLeaf::NONE`).
    done: bool,
    internal: Kind,
    /// The front's leaf, if the fast path holds the position, with the slot after the current
    /// one, `next_off` (the current is `next_off - 1`; 0 before slot 0). While slot
    /// `next_off - 1` is the leaf's last, `next_off` is past the slots (`RANGE_SLOTS`) or the
    /// next step crosses at once, so the two-slot step never looks past the leaf's end.
    leaf: FrontLeaf<'g>,
    /// `min(max, back_pos)` while `leaf` holds one (stale otherwise): a pivot below it bounds a
    /// slot that is neither the leaf's last nor reaches the back.
    lim: u64,
    /// The back's leaf while its fast path holds the position: slot `boff` of it, starting at
    /// `blo` (its end is not kept: the slot above starts after it, and a leaf's last slot ends
    /// at `bmax`), the leaf's min `bmin`; the back walker's record of that slot is stale
    /// meanwhile.
    bfast: FastLeaf<'g, BACK_ROOM>,
    boff: usize,
    blo: u64,
    bmin: u64,
    /// That leaf's max, its parent (`None`: the leaf is the root), the parent's min and the
    /// leaf's offset in it (current; the back walker's record is stale).
    bmax: u64,
    bparent: Option<NodeRef<'g>>,
    bpmin: u64,
    bpoff: usize,
    /// The back's own path while `bfast` holds a leaf (as `fpath` for the front): level
    /// `bdepth - 1` is the leaf and `bdepth - 2` its parent, both stale there (the scalars
    /// above are current). Once the back has climbed through it, the back walker's path is
    /// stale; the walker then only walks from the root.
    bpath: WalkStack<Level<'g>, MAX_DEPTH>,
    bdepth: usize,
    /// The range `next_general` found.
    out: (u64, u64),
    /// The end of what the front has passed: the next index it may yield from is `hi + 1`
    /// (wrapping: `u64::MAX` before index 0; see [`front_pos`](Self::front_pos)). Stale while
    /// the front holds a leaf and `next_off` is in `1..=RANGE_PIVOTS`: the current slot,
    /// `next_off - 1`, is then not the leaf's last (a state on the last slot sets `next_off` to
    /// `RANGE_SLOTS`, or leaves the leaf at once), so its pivot is the end (see
    /// [`front_hi`](Self::front_hi)), and the fast path's steps do not store it.
    hi: u64,
    /// For the back's fast path, a range starting past `fbound` is free (it starts at or above
    /// [`front_pos`](Self::front_pos)): the max of the front's leaf while it holds one (a
    /// range of another leaf starts past it), `front_pos` otherwise.
    fbound: u64,
    max: u64,
    /// The leaf's parent with its max (`NONE`: the leaf is the root), and the leaf's offset in
    /// it (current; `fpath`'s record of it is stale).
    parent: FrontParent<'g>,
    poff: usize,
    fpath: WalkStack<Level<'g>, MAX_DEPTH>,
    fdepth: usize,
    _e: PhantomData<&'g E>,
}

/// The fast path's scan of leaf `$n` (whose max is `$max`) from the slot after `$i` (whose
/// bound is `$hi`, below `$max`), inside a method of [`Iter`] (`$s` is its `self`): each slot's
/// pivot is read once, then its word; a pivot at or above the max (or the slot past the pivots)
/// ends the leaf, that slot's bound clamped to the max. Returns the first entry found (through
/// `yield_front`), or evaluates `$end` with the leaf's last slot as `($ei, $ehi)`. A macro
/// rather than a function so that the yield is a plain `return`.
macro_rules! scan_leaf {
    ($s:ident, $n:expr, $max:expr, $i:expr, $hi:expr, |$ei:ident, $ehi:ident| $end:expr) => {{
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
                return $s.yield_end(n, lo, max, b);
            }
            let ($ei, $ehi) = (i, max);
            break $end;
        }
    }};
}

/// `NodeRef::end` of leaf `n` (whose max is `max`): the same loads, in the same order, without
/// the kind dispatch, two pivots per test (the larger of the two at or above `max` means one
/// of them is: the first of them then ends the leaf). The pivot after the end is loaded with
/// it at times: a word beyond the end, read and then ignored.
#[inline]
fn leaf_end(n: NodeRef<'_>, max: u64) -> usize {
    debug_assert!(n.is_leaf());
    let mut i = 0;
    while i + 1 < RANGE_PIVOTS {
        let (a, b) = (n.range_pivot(i), n.range_pivot(i + 1));
        if a.max(b) >= max {
            return if a >= max { i } else { i + 1 };
        }
        i += 2;
    }
    if n.range_pivot(RANGE_PIVOTS - 1) >= max {
        RANGE_PIVOTS - 1
    } else {
        RANGE_PIVOTS
    }
}

impl<'g, E: Entry> Iter<'g, E> {
    pub(crate) fn new(root: RootRef<'g>, first: u64, last: u64) -> Self {
        Iter {
            root,
            front: Walker::new(root),
            back: Walker::new(root),
            back_started: false,
            front_yielded: false,
            back_yielded: false,
            back_pos: last,
            done: first > last,
            internal: root.internal(),
            leaf: FrontLeaf::NONE,
            lim: 0,
            bfast: FastLeaf::NONE,
            boff: 0,
            blo: 0,
            bmin: 0,
            bmax: 0,
            bparent: None,
            bpmin: 0,
            bpoff: 0,
            bpath: WalkStack::new(),
            bdepth: 0,
            out: (0, 0),
            hi: first.wrapping_sub(1),
            fbound: first,
            max: 0,
            parent: FrontParent::NONE,
            poff: 0,
            fpath: WalkStack::new(),
            fdepth: 0,
            _e: PhantomData,
        }
    }

    /// The end of what the front has passed (see `hi`).
    #[inline]
    fn front_hi(&self) -> u64 {
        match self.leaf.get() {
            Some(n) if (1..=RANGE_PIVOTS).contains(&self.leaf.off()) => {
                n.range_pivot(self.leaf.off() - 1)
            }
            _ => self.hi,
        }
    }

    /// Next index the front may yield from.
    #[inline]
    fn front_pos(&self) -> u64 {
        self.front_hi().wrapping_add(1)
    }

    /// Whether index `x` is below [`front_pos`](Self::front_pos) (`fbound` first: only an `x`
    /// at or below it may be).
    #[inline]
    fn before_front(&self, x: u64) -> bool {
        x <= self.fbound && x < self.front_pos()
    }

    /// Ends the iteration.
    #[inline]
    fn finish(&mut self) {
        self.hi = self.front_hi();
        self.fbound = self.hi.wrapping_add(1);
        self.done = true;
        self.leaf = FrontLeaf::NONE;
        self.bfast = FastLeaf::NONE;
    }

    /// Enters leaf `n` (covering up to `max`) on the fast path, at offset `off`.
    #[inline]
    fn enter_leaf(&mut self, n: NodeRef<'g>, max: u64, off: usize) {
        self.leaf = FrontLeaf::new(n, off);
        self.set_max(max);
    }

    /// The max of the leaf the front enters, its `lim` and `fbound`.
    #[inline]
    fn set_max(&mut self, max: u64) {
        self.max = max;
        self.fbound = max;
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
        self.leaf.set_off(off + 1);
        self.hi = hi;
        Some((lo, hi, b))
    }

    /// Yields the entry `b` of the last slot of the front's leaf `n`, `[lo, max]`, and moves
    /// on to the next leaf at once (the next call starts there on the fast path).
    #[inline(always)]
    fn yield_end(
        &mut self,
        n: NodeRef<'g>,
        lo: u64,
        max: u64,
        b: E::Borrowed<'g>,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        if max >= self.back_pos {
            return self.yield_last(lo, max, b);
        }
        // A crossing sets the position itself (before the new leaf's slot 0, ending at `max`).
        if !self.cross(n) {
            self.hi = max;
            self.leave_front();
        }
        Some((lo, max, b))
    }

    /// Leaves the fast path at the current position (in `hi`, current): the next step walks
    /// from the root.
    fn leave_front(&mut self) {
        self.fbound = self.hi.wrapping_add(1);
        self.leaf = FrontLeaf::NONE;
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
        let reaches_yielded = self.back_yielded && hi > self.back_pos && check_rewalk();
        self.finish();
        // A range reaching into what the back has yielded changed since the back passed it
        // (a write between the two ends' steps): its indices there came out already.
        if lo > self.back_pos || reaches_yielded {
            return None;
        }
        Some((lo, hi, b))
    }

    /// From the last slot of the front's leaf `leaf` (ending at `max`, below `u64::MAX`) to the
    /// leftmost leaf after it, as `Walker::next_leaf` moves: the leaf alive; up to the first
    /// ancestor, alive, with a child after the one taken; down that child's leftmost slots,
    /// each child slot non-empty. The front then stands before the new leaf's slot 0
    /// (`next_off` 0, ending at `min - 1`). `false` (nothing changed but `fpath`'s offsets, which
    /// the walk that follows rewrites) when the walker must walk from the root instead: a dead
    /// node (counted as a restart) or a state only a race can produce.
    #[inline(always)]
    fn cross(&mut self, leaf: NodeRef<'g>) -> bool {
        let target = self.max + 1;
        let Some(p) = self.parent.below(self.max) else {
            return self.climb(leaf);
        };
        if leaf.is_dead() || p.is_dead() {
            self.root.restarted();
            return false;
        }
        let i = self.poff + 1;
        let Some((c, max)) = p.child_and_max(i, self.parent.max()) else {
            return false;
        };
        if !c.is_leaf() || max < target {
            return false;
        }
        self.poff = i;
        self.leaf.move_to(c);
        self.set_max(max);
        self.hi = target - 1;
        true
    }

    /// [`cross`](Self::cross) when the leaf is its parent's last child: through `fpath`, as
    /// far up as needed. (The parent's offset in `fpath` is stale, and stays so: the climb
    /// passes the parent, whose last child the leaf is, and the descent rewrites its level.)
    #[inline(never)]
    fn climb(&mut self, leaf: NodeRef<'g>) -> bool {
        let target = self.max + 1;
        if leaf.is_dead() {
            self.root.restarted();
            return false;
        }
        let Some((d, up)) = self.climb_to_next_child() else {
            return false;
        };
        let Some((n, max)) = up.node.child_and_max(up.offset, up.max) else {
            return false;
        };
        if max < target {
            return false;
        }
        // The node after `n` is where the next climb goes: ask for it now, a parent's leaves
        // ahead, if it is far (an RCU-built tree's parents are copies, far from their leaves).
        up.node.prefetch_child(up.offset + 1, leaf);
        self.descend_leftmost(d + 1, up, n, target, max)
    }

    /// The ascent of [`climb`](Self::climb): the deepest level of `fpath` with a child after
    /// the one on the path, its offset moved to that child (returned with its depth). `None`
    /// past the last child of the root, or at a dead node (counted as a restart).
    fn climb_to_next_child(&mut self) -> Option<(usize, Level<'g>)> {
        let (mut d, mut cmax) = (self.fdepth - 1, self.max);
        loop {
            d = d.checked_sub(1)?;
            let mut lvl = *self.fpath.get(d);
            if lvl.node.is_dead() {
                self.root.restarted();
                return None;
            }
            if cmax < lvl.max {
                lvl.offset += 1;
                self.fpath.set(d, lvl);
                return Some((d, lvl));
            }
            cmax = lvl.max;
        }
    }

    /// The descent of [`climb`](Self::climb): from `n`, level `d` of `fpath` and child
    /// `up.offset` of level `up` above it (`n` covers `[min, max]`), down its first children to
    /// a leaf, entered at its first slot. The levels above the leaf are written to `fpath`
    /// (the leaf's own level is not: it is stale while the front holds the leaf), the parent
    /// scalars from the last of them.
    fn descend_leftmost(
        &mut self,
        mut d: usize,
        up: Level<'g>,
        mut n: NodeRef<'g>,
        min: u64,
        mut max: u64,
    ) -> bool {
        let mut parent = up;
        while !n.is_leaf() {
            let lvl = Level {
                node: n,
                min,
                max,
                offset: 0,
            };
            self.fpath.set(d, lvl);
            let Some((c, hi)) = n.child_and_max(0, max) else {
                return false;
            };
            (parent, n, max, d) = (lvl, c, hi, d + 1);
        }
        self.fdepth = d + 1;
        (self.parent, self.poff) = (FrontParent::new(parent.node, parent.max), parent.offset);
        self.enter_leaf(n, max, 0);
        self.hi = min - 1;
        true
    }

    /// The parent scalars from `fpath`.
    #[inline]
    fn set_parent(&mut self) {
        if self.fdepth >= 2 {
            let p = *self.fpath.get(self.fdepth - 2);
            (self.parent, self.poff) = (FrontParent::new(p.node, p.max), p.offset);
        } else {
            self.parent = FrontParent::NONE;
        }
    }

    /// The front's step from the root, with the walker (the first step and restarts): to the
    /// range containing `front_pos`, on to an entry, skipping a range that starts before
    /// `front_pos` once something was yielded (a walk that restarted lands on the range
    /// containing its index, which may have been created since: it must not overlap what was
    /// yielded); applies the end checks and caches the walker's path for the fast path.
    #[inline(never)]
    fn next_slow(&mut self) -> Option<(u64, u64, Loaded<'g>)> {
        debug_assert!(self.leaf.get().is_none());
        let pos = self.front_pos();
        let step = self.front.walk(pos).and_then(|()| {
            if self.front.word.is_entry() {
                Some(())
            } else {
                self.front.next_entry()
            }
        });
        if step.is_none() {
            self.finish();
            return None;
        }
        while self.front_yielded && self.front.lo < pos {
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
            // As in `yield_last`: never into what the back has yielded.
            let reaches_yielded = self.back_yielded && hi > self.back_pos && check_rewalk();
            self.finish();
            if reaches_yielded {
                return None;
            }
        } else {
            self.cache_path();
            self.hi = hi;
        }
        Some((lo, hi, self.front.word))
    }

    /// Copies the walker's path into the fast path's.
    fn cache_path(&mut self) {
        let path = self.front.path();
        self.fpath.set_prefix(path.iter().copied());
        let leaf = path[path.len() - 1];
        self.fdepth = path.len();
        self.set_parent();
        // On the leaf's last slot, the next step crosses (the two-slot step finds no slot).
        let off = if self.front.hi >= leaf.max {
            RANGE_SLOTS
        } else {
            leaf.offset + 1
        };
        self.enter_leaf(leaf.node, leaf.max, off);
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
            let lim = self.lim;
            if let Some(at) = self.leaf.at::<FRONT_ROOM>() {
                let (n, j) = (at.node(), at.off());
                let p1 = n.range_pivot(j);
                let w1 = n.range_word(j);
                if p1 < lim {
                    if w1.raw() == 0 {
                        // Slot `j` holds nothing: on to slot `j + 1`.
                        let p2 = n.range_pivot(j + 1);
                        // Read under the guard of 'g that created this iterator.
                        if let Some(b) = n.range_word(j + 1).entry::<E>() {
                            if p2 < lim {
                                at.advance(2);
                                return Some((p1 + 1, p2, b));
                            }
                            break 'slow self.yield_bound(n, j + 1, p1 + 1, p2, b);
                        }
                    } else {
                        // Read under the guard of 'g that created this iterator.
                        let Some(b) = w1.entry::<E>() else {
                            break 'slow self.next_past_zero();
                        };
                        // After slot `j - 1`, not the last, or (slot 0) after `hi`.
                        let lo = if j == 0 {
                            self.hi
                        } else {
                            n.range_pivot(j - 1)
                        } + 1;
                        at.advance(1);
                        return Some((lo, p1, b));
                    }
                }
            } else if let Some(n) = self.leaf.at_exactly(RANGE_PIVOTS - 1) {
                // Slot 14 and the leaf's last possible slot, 15 (no pivot).
                let j = RANGE_PIVOTS - 1;
                let p1 = n.range_pivot(j);
                let w1 = n.range_word(j);
                if w1.raw() == 0 && p1 < lim {
                    if let Some(b) = n.range_word(j + 1).entry::<E>() {
                        return self.yield_end(n, p1 + 1, self.max, b);
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
        n: NodeRef<'g>,
        off: usize,
        lo: u64,
        p: u64,
        b: E::Borrowed<'g>,
    ) -> Option<E::Borrowed<'g>> {
        let (lo, hi, b) = if p >= self.max {
            self.yield_end(n, lo, self.max, b)
        } else {
            self.yield_front(off, lo, p, b)
        }?;
        self.out = (lo, hi);
        Some(b)
    }

    /// The next entry from slot `next_off` of the front's leaf, across leaves, or from the root.
    #[inline(always)]
    fn next_scan(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        while let Some(n) = self.leaf.get() {
            let (max, i, hi) = (self.max, self.leaf.off().wrapping_sub(1), self.front_hi());
            if hi < max {
                // On the leaf's last slot: `next_off` past the slots (see `hi`).
                scan_leaf!(self, n, max, i, hi, |_i, hi| {
                    self.leaf.set_off(RANGE_SLOTS);
                    self.hi = hi;
                });
            }
            if self.hi == u64::MAX {
                self.finish();
                return None;
            }
            if !self.cross(n) {
                self.leave_front();
            }
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
