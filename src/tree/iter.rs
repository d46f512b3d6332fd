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

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// Copies the back walker's path into `bpath` and enters its leaf on the back's fast path,
    /// on the walker's slot (from `lo`).
    fn cache_back_path(&mut self, lo: u64) {
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
    fn back_fast_yield(
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
    fn next_back_general(&mut self) -> Option<E::Borrowed<'g>> {
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
    fn back_cross(&mut self) -> Option<Loaded<'g>> {
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
    fn back_in_leaf(&mut self, n: NodeRef<'g>) -> Option<Option<(u64, u64, E::Borrowed<'g>)>> {
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
    fn back_yield(&mut self, lo: u64) -> bool {
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
    fn bound_front(&mut self) {
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
    fn back_prev_leaf(&mut self, n: NodeRef<'g>) -> Option<Loaded<'g>> {
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
    fn back_climb(&mut self, n: NodeRef<'g>, target: u64) -> Result<Loaded<'g>, bool> {
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
    fn back_descend(
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
    fn set_bparent(&mut self) {
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
    fn next_back_slow(&mut self, from_fast: bool) -> Option<(u64, u64, E::Borrowed<'g>)> {
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
                if i % 7 == 3 {
                    // Occupied, but read as empty by iteration and cursors.
                    tree.lock().store_zero_range(at..=at + len).unwrap();
                } else {
                    tree.store_range(at..=at + len, Value::new(i)).unwrap();
                    model.insert(at, (at + len, i));
                }
                at += len + 1 + gap;
            }
            let all: Vec<_> = model.iter().map(|(&a, &(b, v))| (a, b, v)).collect();
            let g = tree.pin();
            let got: Vec<_> = tree
                .iter(&g)
                .map(|(r, v)| (*r.start(), *r.end(), v.get()))
                .collect();
            assert_eq!(got, all);
            let mut back: Vec<_> = tree
                .iter(&g)
                .rev()
                .map(|(r, v)| (*r.start(), *r.end(), v.get()))
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
                let Some((r, v)) = step else { break };
                let (a, b) = (*r.start(), *r.end());
                if k % 3 == 2 {
                    rear.push((a, b, v.get()));
                } else {
                    front.push((a, b, v.get()));
                }
            }
            rear.reverse();
            front.extend(rear);
            assert_eq!(front, all);
            // The cursor's in-leaf step: `find` to the end, and `find`/`next` under a limit.
            let mut c = tree.cursor(0, &g);
            let mut found = Vec::new();
            while let Some(v) = c.find(u64::MAX) {
                found.push((c.index(), c.last(), v.get()));
            }
            assert_eq!(found, all);
            let limit = all[all.len() / 2].0;
            for next in [false, true] {
                let mut c = tree.cursor(0, &g);
                let mut found = Vec::new();
                let mut step = c.find(limit);
                while let Some(v) = step {
                    found.push((c.index(), c.last(), v.get()));
                    step = if next { c.next(limit) } else { c.find(limit) };
                }
                let want: Vec<_> = all.iter().copied().filter(|r| r.0 <= limit).collect();
                assert_eq!(found, want, "next: {next}");
            }
            // Bounded ranges, edges inside entries and inside gaps.
            for (first, last) in [(0, 0), (5, 97), (1234, 1234), (100, 9000), (7000, u64::MAX)] {
                let want: Vec<_> = all
                    .iter()
                    .copied()
                    .filter(|&(a, b, _)| b >= first && a <= last)
                    .collect();
                let got: Vec<_> = tree
                    .range(first..=last, &g)
                    .map(|(r, v)| (*r.start(), *r.end(), v.get()))
                    .collect();
                assert_eq!(got, want, "range {first}..={last}");
            }
        }
    }

    /// The front takes the first `s` ranges (holding its leaf), then the back takes all it
    /// can, for every `s`: the back stops where the front is, in the front's leaf or another,
    /// without yielding a range twice, and yields every range the front has not.
    #[test]
    fn back_stops_at_the_front() {
        let tree = MapleTree::<Value>::new();
        let n = 100u64;
        for i in 0..n {
            tree.store_range(10 * i..=10 * i + 1, Value::new(i))
                .unwrap();
        }
        let g = tree.pin();
        for s in 0..=n as usize {
            let mut it = tree.iter(&g);
            let mut got: Vec<u64> = (&mut it).take(s).map(|(_, v)| v.get()).collect();
            let mut back: Vec<u64> = it.rev().map(|(_, v)| v.get()).collect();
            back.reverse();
            got.extend(back);
            assert_eq!(got, (0..n).collect::<Vec<_>>(), "front took {s}");
        }
    }

    /// Writes into what each end has just yielded (splitting that range, which replaces its
    /// leaf, and now and then its parent): the end's leaf and path die under it, so its
    /// crossings meet dead nodes and walk again from the root (counted as restarts). Nothing
    /// the end has still to yield changed, so it yields exactly the original ranges.
    #[test]
    fn ends_restart_past_replaced_nodes() {
        for backward in [false, true] {
            let tree = MapleTree::<Value>::new();
            let n = 3000u64;
            for i in 0..n {
                tree.store_range(10 * i..=10 * i + 5, Value::new(i))
                    .unwrap();
            }
            let g = tree.pin();
            let before = tree.stats().reader_restarts;
            let mut it = tree.iter(&g);
            let mut got = Vec::new();
            loop {
                let step = if backward { it.next_back() } else { it.next() };
                let Some((r, v)) = step else { break };
                let (a, b) = (*r.start(), *r.end());
                got.push((a, b, v.get()));
                tree.store_range(a + 1..=a + 2, Value::new(u64::MAX >> 2))
                    .unwrap();
            }
            if backward {
                got.reverse();
            }
            let want: Vec<_> = (0..n).map(|i| (10 * i, 10 * i + 5, i)).collect();
            assert_eq!(got, want, "backward: {backward}");
            let restarts = tree.stats().reader_restarts - before;
            assert!(restarts > 0, "backward: {backward}: no restart");
        }
    }
}
