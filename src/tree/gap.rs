//! Gaps: the largest NULL range per subtree (allocation trees track it in internal nodes), the
//! searches `empty_area`/`empty_area_rev` with the kernel's window rules (`mas_empty_area` and
//! `mas_empty_area_rev` in lib/maple_tree.c), and allocation.
//!
//! A gap's size is the number of indices it covers, saturating at `u64::MAX` (the whole space has
//! `2^64` indices). Saturation is why a search with `max = u64::MAX` still finds gaps in the
//! leftmost subtree, unlike the 6.12 kernel's `mas_empty_area`.

mod alloc;
mod tree_api;

use crate::error::Error;

use super::node::{Kind, NodeRef, Read, RootRef, WalkStack, RANGE_PIVOTS, RANGE_SLOTS};
use super::walk::MAX_DEPTH;

/// Size of the NULL range `[lo, hi]`, saturating.
#[inline]
pub(crate) fn range_size(lo: u64, hi: u64) -> u64 {
    (hi - lo).saturating_add(1)
}

/// The largest NULL range of a leaf covering `[min, max]`.
pub(crate) fn leaf_max_gap(n: NodeRef<'_>, min: u64, max: u64) -> u64 {
    let mut best = 0;
    let mut lo = min;
    for i in 0..RANGE_SLOTS {
        let last = i == RANGE_PIVOTS;
        let hi = if last { max } else { n.range_pivot(i).min(max) };
        if n.range_slot(i) == 0 {
            best = best.max(range_size(lo, hi));
        }
        if last || hi >= max {
            break;
        }
        lo = hi + 1;
    }
    best
}

fn check_window(min: u64, max: u64, size: u64) -> Result<(), Error> {
    if min > max || size == 0 || max - min < size - 1 {
        Err(Error::InvalidWindow)
    } else {
        Ok(())
    }
}

fn check_align(align: u64) -> Result<(), Error> {
    if align.is_power_of_two() {
        Ok(())
    } else {
        Err(Error::InvalidAlignment)
    }
}

/// Where a NULL range `[lo, hi]` admits `size` indices starting at a multiple of `align` (a
/// power of two) inside `[min, max]`, if it does: the lowest such start, or reversed the highest.
#[inline]
fn fit(lo: u64, hi: u64, min: u64, max: u64, q: Query) -> Option<u64> {
    let a = lo.max(min);
    let b = hi.min(max);
    if a > b || b - a < q.size - 1 {
        return None;
    }
    let mask = q.align - 1;
    if q.rev {
        let s = (b - (q.size - 1)) & !mask;
        (s >= a).then_some(s)
    } else {
        let s = a.checked_add(mask)? & !mask;
        (s <= b && b - s >= q.size - 1).then_some(s)
    }
}

/// One gap search: the window, the size, the alignment (a power of two) and the direction.
#[derive(Clone, Copy)]
struct Query {
    min: u64,
    max: u64,
    size: u64,
    align: u64,
    rev: bool,
}

/// A node being searched and the range it covers.
#[derive(Clone, Copy)]
struct Span<'g> {
    n: NodeRef<'g>,
    min: u64,
    max: u64,
}

impl<'g> Span<'g> {
    #[inline(always)]
    fn new(n: NodeRef<'g>, min: u64, max: u64) -> Self {
        Span { n, min, max }
    }
}

/// An ancestor of the node being searched: its span and the slot taken in it (the node handle
/// last: a frame stored as `(Span, usize)` also copied the handle's padding, 4 instructions a
/// level more under callgrind).
#[derive(Clone, Copy)]
struct Frame<'g> {
    min: u64,
    max: u64,
    i: usize,
    n: NodeRef<'g>,
}

impl<'g> Frame<'g> {
    #[inline(always)]
    fn new(at: Span<'g>, i: usize) -> Self {
        Frame {
            min: at.min,
            max: at.max,
            i,
            n: at.n,
        }
    }

    /// The ancestor's span and slot, to go on from.
    #[inline(always)]
    fn resume(self) -> (Span<'g>, usize) {
        (Span::new(self.n, self.min, self.max), self.i)
    }
}

/// What a slot offers the search.
enum Look<'g> {
    /// A fit: the search's answer.
    Fit(u64),
    /// A child that could hold a fit.
    Child(NodeRef<'g>),
    /// Nothing: move on.
    Pass,
    /// A child on the tree's right edge (its range reaches `u64::MAX`) whose recorded gap is
    /// too small: pruned only once the path to it is found still to be the right edge (see
    /// [`search`]).
    EdgeGap,
}

/// Searches the tree from `root` for the first (or, reversed, last) fit, iteratively (the
/// loops of `mas_awalk` / `mas_rev_awalk` with `mas_ascend`): in each node it starts at the slot
/// holding the window's edge on the search's side (one scan of the pivots up to it, each loaded
/// once) and moves away from it; slots outside the window are never looked at. A step forwards
/// loads the next slot's pivot, a step back the previous slot's lower one; a slot's bounds are
/// derived once, and returning from a child restores them from the path (the ancestors, root
/// first, with the slot taken in each).
///
/// A child is entered only if it could hold a fit: in allocation trees its largest gap is at
/// least `size`, and its range (clipped to the window) holds `size` indices — necessary
/// conditions, so a search may enter a subtree whose gaps are large enough but lie outside the
/// window or are misaligned, and move on to the next one.
///
/// # Beside a writer
///
/// A reader's bounds and gaps are loaded one at a time, and a writer may change them in
/// between. Every fit found lies in a NULL slot of a leaf, loaded with its bounds as they were
/// together at some moment: a range that was free then. A hole that stays free for the whole
/// search is never pruned away: every recorded gap a reader can load is at least the largest
/// hole of the range the writer recorded it for, at the moment it stored it, so a prune is
/// wrong only when the reader pairs the gap with a wider range than that. Only one write
/// shrinks a child's range in place — the append split's climb (lowered pivot of the ancestor
/// with room, or a new root above a truncated one, over full nodes that keep their children) —
/// and always on the tree's right edge; it stores the lowered gaps of the shrunk children only
/// after the store that shrinks them (row P12). So a child whose range reaches `u64::MAX` in the
/// reader's view is pruned by its gap only after an Acquire load of the gap and a re-read of the
/// path: the search's root still the root, every slot taken still reaching `u64::MAX`
/// ([`edge_holds`]); otherwise the reader holds a bound the writer has lowered, and enters the
/// child (what it finds there was free when it read that bound).
fn search<const REV: bool>(root: NodeRef<'_>, internal: Kind, q: Query) -> Option<u64> {
    debug_assert_eq!(q.rev, REV);
    let mut path: WalkStack<Frame<'_>, MAX_DEPTH> = WalkStack::new();
    let mut d = 0;
    let mut at = Span::new(root, 0, u64::MAX);
    let (mut i, mut lo, mut hi) = edge::<REV>(at, q);
    'slot: loop {
        'enter: {
            let c = match look(at.n, i, lo, hi, internal, q) {
                Look::Fit(s) => return Some(s),
                Look::Child(c) => c,
                Look::EdgeGap => match edge_child(&path, d, at, (i, lo, hi), internal, q) {
                    Some(c) => c,
                    None => break 'enter,
                },
                Look::Pass => break 'enter,
            };
            // A path deeper than a tree can be is a state only a race produces: skip the child.
            if d < MAX_DEPTH {
                path.set(d, Frame::new(at, i));
                d += 1;
                at = Span::new(c, lo, hi);
                (i, lo, hi) = edge::<REV>(at, q);
                continue 'slot;
            }
        }
        // The next slot of this node, or back to the parent's (no fit in this node).
        loop {
            if let Some(next) = step::<REV>(at, i, lo, hi, q) {
                (i, lo, hi) = next;
                break;
            }
            if d == 0 {
                return None;
            }
            d -= 1;
            (lo, hi) = (at.min, at.max);
            (at, i) = path.get(d).resume();
        }
    }
}

/// The right-edge child at slot `i` of `at` (covering `[lo, hi]`) whose recorded gap was loaded
/// too small: the gap loaded again, Acquire; `None` (pruned) if that is too small too and the
/// path to the child is still the tree's right edge, else the child if [`enter`] enters it (see
/// [`search`]).
#[cold]
#[inline(never)]
fn edge_child<'g>(
    path: &WalkStack<Frame<'g>, MAX_DEPTH>,
    d: usize,
    at: Span<'g>,
    (i, lo, hi): (usize, u64, u64),
    internal: Kind,
    q: Query,
) -> Option<NodeRef<'g>> {
    if at.n.edge_gap(i) < q.size && edge_holds(path, d, at, i) {
        return None;
    }
    match enter(at.n, i, lo, hi, internal, q) {
        Look::Child(c) => Some(c),
        _ => None,
    }
}

/// Whether the search's way to slot `i` of `at` is still the tree's right edge, after the
/// Acquire load of that slot's lowered gap (see [`search`]): the search's root is still the
/// root (its parent word names no parent: a root grown above it re-parents it before it is
/// published, row P13), and each slot taken on the way, and slot `i`, still reaches
/// `u64::MAX` (the pivots re-loaded, Acquire, row P9). A shrink published before the gap was
/// stored is seen here (row P12).
fn edge_holds(path: &WalkStack<Frame<'_>, MAX_DEPTH>, d: usize, at: Span<'_>, i: usize) -> bool {
    if crate::sync::knobs::trust_edge_gap() {
        return true;
    }
    // The search's root is still the root: a new root grown above it re-parented it first.
    let top = if d == 0 { at.n } else { path.get(0).n };
    if !top.is_root() {
        return false;
    }
    let reaches_max = |n: NodeRef<'_>, i: usize| n.slot_max(i, u64::MAX) == u64::MAX;
    (0..d).all(|k| {
        let f = path.get(k);
        reaches_max(f.n, f.i)
    }) && reaches_max(at.n, i)
}

/// The slot of `at` holding the window's edge on the search's side: `(i, lo, hi)`.
#[inline(always)]
fn edge<const REV: bool>(at: Span<'_>, q: Query) -> (usize, u64, u64) {
    let target = if REV {
        q.max.min(at.max)
    } else {
        q.min.max(at.min)
    };
    let (i, below, pivot) = at.n.pivot_at_or_above(target);
    let lo = if i == 0 { at.min } else { below + 1 };
    (i, lo, pivot.min(at.max))
}

/// Slot `i` of `n`, covering `[lo, hi]`: a fit in a NULL leaf slot, or a child that could hold
/// one (`mas_awalk`'s test: the recorded gap of an allocation tree, the clipped range's size).
/// An empty child slot is a state only a race with the writer produces (see
/// `NodeRef::try_child`); the answer is a hint then anyway, so the slot is passed.
#[inline(always)]
fn look<'g>(n: NodeRef<'g>, i: usize, lo: u64, hi: u64, internal: Kind, q: Query) -> Look<'g> {
    // Every slot looked at meets the window (the edge slot holds its edge, a step is taken
    // only while the window goes on, an ancestor's slot met it to be entered), also under
    // races: the bounds are clamped to keep it so.
    debug_assert!(hi >= q.min && lo <= q.max);
    if n.is_leaf() {
        if n.range_slot(i) != 0 {
            return Look::Pass;
        }
        return fit(lo, hi, q.min, q.max, q).map_or(Look::Pass, Look::Fit);
    }
    #[cfg(test)]
    hook::before_gap_load();
    if internal == Kind::ARange && n.gap(i) < q.size {
        // A right-edge child's range may have shrunk under this reader (see `search`).
        return if hi == u64::MAX {
            Look::EdgeGap
        } else {
            Look::Pass
        };
    }
    enter(n, i, lo, hi, internal, q)
}

/// Child `i` of the internal node `n`, covering `[lo, hi]`, if its range clipped to the window
/// holds `size` indices (the slot meets the window, so the clipped range is not empty).
#[inline(always)]
fn enter<'g>(n: NodeRef<'g>, i: usize, lo: u64, hi: u64, internal: Kind, q: Query) -> Look<'g> {
    let (a, b) = (lo.max(q.min), hi.min(q.max));
    if b - a < q.size - 1 {
        return Look::Pass;
    }
    n.try_child(i, internal).map_or(Look::Pass, Look::Child)
}

/// The next slot of `at` after slot `i` (`[lo, hi]`) in the search's direction, if the window
/// and the node go on that way.
#[inline(always)]
fn step<const REV: bool>(
    at: Span<'_>,
    i: usize,
    lo: u64,
    hi: u64,
    q: Query,
) -> Option<(usize, u64, u64)> {
    if REV {
        if i == 0 || lo <= q.min || lo <= at.min {
            return None;
        }
        let lo_prev = if i == 1 {
            at.min
        } else {
            at.n.pivot(i - 2).saturating_add(1).clamp(at.min, lo - 1)
        };
        Some((i - 1, lo_prev, lo - 1))
    } else {
        if hi >= q.max || hi >= at.max {
            return None;
        }
        let hi_next = at.n.slot_max(i + 1, at.max).max(hi + 1);
        Some((i + 1, hi + 1, hi_next))
    }
}

/// `mas_empty_area` (`rev = false`) and `mas_empty_area_rev` (`rev = true`), for the writer
/// (whose view of the tree is consistent) and for readers beside a writer (see [`search`]: a
/// fit was free at some moment of the search, and `NoRoom` means no hole of the window stayed
/// free throughout it).
pub(crate) fn empty_area_at<E>(
    root: RootRef<'_, Read, E>,
    min: u64,
    max: u64,
    size: u64,
    rev: bool,
) -> Result<u64, Error> {
    empty_area_aligned_at(root, min, max, size, 1, rev)
}

/// [`empty_area_at`] whose start must be a multiple of `align` (a power of two).
pub(crate) fn empty_area_aligned_at<E>(
    root: RootRef<'_, Read, E>,
    min: u64,
    max: u64,
    size: u64,
    align: u64,
    rev: bool,
) -> Result<u64, Error> {
    let q = query(min, max, size, align, rev)?;
    search_root(root.unbranded(), q).ok_or(Error::NoRoom)
}

fn query(min: u64, max: u64, size: u64, align: u64, rev: bool) -> Result<Query, Error> {
    check_window(min, max, size)?;
    check_align(align)?;
    Ok(Query {
        min,
        max,
        size,
        align,
        rev,
    })
}

/// One search from the root, for `q`.
#[inline(always)]
fn search_root(root: RootRef<'_>, q: Query) -> Option<u64> {
    match root.node() {
        None => fit(0, u64::MAX, q.min, q.max, q),
        Some(r) if q.rev => search::<true>(r, root.internal(), q),
        Some(r) => search::<false>(r, root.internal(), q),
    }
}

/// A test hook in the reader's search: a closure run just before the `n`-th load of a recorded
/// gap (after the slot's bounds were loaded), to interleave a write there deterministically.
#[cfg(test)]
pub(crate) mod hook {
    use std::cell::{Cell, RefCell};

    std::thread_local! {
        static LEFT: Cell<usize> = const { Cell::new(0) };
        static RUN: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
    }

    /// Runs `f` just before the `n`-th (from 1) gap load of this thread's next searches;
    /// `n = 0` clears the hook.
    pub(crate) fn at_gap_load(n: usize, f: impl FnOnce() + 'static) {
        LEFT.with(|l| l.set(n));
        let f: Option<Box<dyn FnOnce()>> = if n == 0 { None } else { Some(Box::new(f)) };
        RUN.with(|r| *r.borrow_mut() = f);
    }

    /// Whether the hook set last has run (or none is set).
    pub(crate) fn ran() -> bool {
        RUN.with(|r| r.borrow().is_none())
    }

    pub(super) fn before_gap_load() {
        let left = LEFT.with(Cell::get);
        if left == 0 {
            return;
        }
        LEFT.with(|l| l.set(left - 1));
        if left == 1 {
            if let Some(f) = RUN.with(|r| r.borrow_mut().take()) {
                f();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MapleTree, Value};

    /// The recursive search this module had before the iterative one, kept as the reference.
    #[allow(clippy::too_many_lines)]
    fn old_search(n: NodeRef<'_>, nmin: u64, nmax: u64, internal: Kind, q: Query) -> Option<u64> {
        let Query {
            min,
            max,
            size,
            rev,
            ..
        } = q;
        let p = n.kind().pivots();
        // Upper bound of slot `i` starting at `lo`, kept inside `[lo, nmax]`.
        let bound = |i: usize, lo: u64| -> u64 {
            if i >= p {
                return nmax;
            }
            let v = n.pivot(i);
            if v >= nmax {
                nmax
            } else {
                v.max(lo)
            }
        };
        // The slot holding the window's edge on the search's side.
        let target = if rev { max.min(nmax) } else { min.max(nmin) };
        let (mut i, mut lo) = (0, nmin);
        let mut hi = bound(0, lo);
        while hi < target {
            i += 1;
            lo = hi + 1;
            hi = bound(i, lo);
        }
        loop {
            if hi >= min && lo <= max {
                if n.is_leaf() {
                    if n.slot(i) == 0 {
                        if let Some(s) = fit(lo, hi, min, max, q) {
                            return Some(s);
                        }
                    }
                } else if fit(lo, hi, min, max, q).is_some()
                    && (internal != Kind::ARange || n.gap(i) >= size)
                {
                    // An empty child slot is a state only a race with the writer produces (see
                    // `NodeRef::try_child`); the answer is a hint then anyway, so skip it.
                    if let Some(c) = n.try_child(i, internal) {
                        if let Some(s) = old_search(c, lo, hi, internal, q) {
                            return Some(s);
                        }
                    }
                }
            }
            if rev {
                if i == 0 || lo <= min || lo <= nmin {
                    return None;
                }
                i -= 1;
                hi = lo - 1;
                lo = if i == 0 {
                    nmin
                } else {
                    n.pivot(i - 1).saturating_add(1).clamp(nmin, hi)
                };
            } else {
                if hi >= max || hi >= nmax {
                    return None;
                }
                i += 1;
                lo = hi + 1;
                hi = bound(i, lo);
            }
        }
    }

    /// The edge scan answers what a plain scan of `pivot` does, for every target around the
    /// pivots of a leaf (15 pivots) and an allocation-tree root (9: the unpaired last pivot).
    #[test]
    fn pivot_scan_matches_plain_scan() {
        let tree = MapleTree::<Value>::new_alloc();
        for j in 0..2_000u64 {
            tree.store_range(10 * j..=10 * j + 5, Value::new(j))
                .unwrap();
        }
        let g = tree.pin();
        let root = tree.reader(&g).unbranded();
        let r = root.node().unwrap();
        let mut leaf = r;
        while !leaf.is_leaf() {
            leaf = leaf.child(0, root.internal());
        }
        assert_eq!(r.kind(), Kind::ARange);
        for n in [r, leaf] {
            let p = n.kind().pivots();
            let top = n.pivot(p - 1).saturating_add(2);
            for target in (0..=top.min(100_000)).chain([top, u64::MAX]) {
                let i = (0..p).find(|&i| n.pivot(i) >= target).unwrap_or(p);
                let below = if i == 0 { 0 } else { n.pivot(i - 1) };
                let at = if i == p { u64::MAX } else { n.pivot(i) };
                assert_eq!(
                    n.pivot_at_or_above(target),
                    (i, below, at),
                    "{n:?} {target}"
                );
            }
        }
    }

    /// Aligned searches through leaves whose gaps are large enough but misaligned back out of
    /// them into allocation-tree (10-slot) parents, in both directions.
    #[test]
    fn backs_out_of_leaves() {
        for alloc in [false, true] {
            let tree = if alloc {
                MapleTree::<Value>::new_alloc()
            } else {
                MapleTree::<Value>::new()
            };
            // 3-long ranges, 2-long gaps `[5j + 3, 5j + 4]`: a gap holds a multiple of 64 only
            // every 64 ranges, so an aligned search passes many leaves it enters.
            for j in 0..20_000u64 {
                tree.store_range(5 * j..=5 * j + 2, Value::new(j)).unwrap();
            }
            let g = tree.pin();
            let root = tree.reader(&g).unbranded();
            let r = root.node().unwrap();
            for start in (0..90_000).step_by(997) {
                for rev in [false, true] {
                    let q = Query {
                        min: start,
                        max: start + 9_000,
                        size: 1,
                        align: 64,
                        rev,
                    };
                    let want = old_search(r, 0, u64::MAX, root.internal(), q);
                    let got = if rev {
                        search::<true>(r, root.internal(), q)
                    } else {
                        search::<false>(r, root.internal(), q)
                    };
                    assert_eq!(got, want, "from {start} rev {rev}");
                    assert!(want.is_some());
                }
            }
        }
    }

    /// The iterative search answers what the recursive one did, on irregular trees of both
    /// kinds, for windows, sizes and alignments that make it backtrack.
    #[test]
    fn iterative_matches_recursive() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for alloc in [false, true] {
            let tree = if alloc {
                MapleTree::<Value>::new_alloc()
            } else {
                MapleTree::<Value>::new()
            };
            let mut at = 0u64;
            for i in 0..4000u64 {
                let len = rnd(9);
                tree.store_range(at..=at + len, Value::new(i)).unwrap();
                at += len + 1 + rnd(3) * rnd(5);
            }
            // A regular stretch: 3-long ranges and 2-long gaps, where aligned searches enter
            // leaves whose gaps are large enough but misaligned, and back out of them.
            at += 10;
            for i in 0..3000u64 {
                tree.store_range(at + 5 * i..=at + 5 * i + 2, Value::new(i))
                    .unwrap();
            }
            at += 15_000;
            let g = tree.pin();
            let root = tree.reader(&g).unbranded();
            let r = root.node().unwrap();
            for _ in 0..20000 {
                let min = rnd(at + 100);
                let max = min + rnd(at / 4 + 2);
                let size = 1 + rnd(12) * (1 + rnd(4));
                let align = 1 << rnd(6);
                for rev in [false, true] {
                    let q = Query {
                        min,
                        max,
                        size,
                        align,
                        rev,
                    };
                    if check_window(min, max, size).is_err() {
                        continue;
                    }
                    let want = old_search(r, 0, u64::MAX, root.internal(), q);
                    let got = if rev {
                        search::<true>(r, root.internal(), q)
                    } else {
                        search::<false>(r, root.internal(), q)
                    };
                    assert_eq!(
                        got, want,
                        "{min}..={max} size {size} align {align} rev {rev}"
                    );
                }
            }
        }
    }

    /// Deterministically: a reader's search loads a slot's bounds, then the writer
    /// writes into the tail gap, then the reader loads the slot's recorded gap — which may
    /// describe a child that no longer covers the bounds the reader holds (the in-place `+1`
    /// append of a child once lowered the gap of the old last child before the pivot that shrank
    /// it; now it lowers it after, and the search re-reads its path before it prunes the right
    /// edge).
    /// The writes: contiguous appends (every full leaf an append split climbing in place),
    /// appends with holes between them, and those alternating with `alloc_rrange`s from the top.
    /// The window lies in the tail gap where the writer never writes: every answer is its edge,
    /// never `NoRoom`.
    #[test]
    fn search_across_a_write_between_bounds_and_gap() {
        use std::sync::Arc;
        const W: u64 = 1 << 40;
        const RR_MIN: u64 = 1 << 50;
        fn write(t: &MapleTree<Value>, mode: u32, k: u64) {
            match mode {
                0 => t.store_range(10 * k..=10 * k + 9, Value::new(k)).unwrap(),
                1 => t.store_range(10 * k..=10 * k + 5, Value::new(k)).unwrap(),
                _ if k % 2 == 1 => {
                    t.alloc_rrange(RR_MIN.., 7, Value::new(k)).unwrap();
                }
                _ => t.store_range(10 * k..=10 * k + 5, Value::new(k)).unwrap(),
            }
        }
        let mut failed = Vec::new();
        for mode in 0..3 {
            for rev in [false, true] {
                // The `n`-th gap load of the search: deeper loads on taller trees.
                for n in 1..=3 {
                    let tree = Arc::new(MapleTree::<Value>::new_alloc());
                    let mut wrong = Vec::new();
                    for k in 0..1_500u64 {
                        let t = Arc::clone(&tree);
                        hook::at_gap_load(n, move || write(&t, mode, k));
                        let (min, max) = (W, W + 999);
                        let got = if rev {
                            tree.empty_area_rev(min..=max, 100)
                        } else {
                            tree.empty_area(min..=max, 100)
                        };
                        let want = if rev { max - 99 } else { min };
                        if got != Ok(want) {
                            wrong.push((k, got));
                        }
                        if !hook::ran() {
                            // The search loaded fewer gaps: write now.
                            hook::at_gap_load(0, || {});
                            write(&tree, mode, k);
                        }
                    }
                    tree.validate().unwrap();
                    if !wrong.is_empty() {
                        failed.push(format!(
                            "mode {mode} rev {rev} gap load {n}: {} of 1500 wrong, first {:?}",
                            wrong.len(),
                            &wrong[..wrong.len().min(3)]
                        ));
                    }
                }
            }
        }
        assert!(failed.is_empty(), "\n{}", failed.join("\n"));
    }
}
