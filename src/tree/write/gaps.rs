//! Gap upkeep: every write path brings the largest gaps recorded in an allocation tree's
//! internal nodes (`maple_arange_64`'s gap array, `ma_gaps`) up to date through this module —
//! the gap of a node just written (from its items, its leaf image, or read back), the update of
//! the ancestors above a changed child (`mas_update_gap` / `mas_parent_gap`), and the upkeep
//! after an in-place leaf change or append. Range trees keep no gaps: the routines here are
//! no-ops for them. Each gap store here is row P12 of the publication table (`set_gap`, in the
//! node layer), made at the point of the write path that calls for it, after the stores that
//! changed the gap; a fresh node's gaps are written with its items (`write_items`, through
//! `put_gap`), and the in-place insert of a split's right part (`insert_child_after`) moves its
//! node's gaps with its slots (through `shift_gap` and `put_gap`). The write paths read
//! and store gaps only through this module; the node layer's accessors (`gap`, `set_gap`) stay
//! with the node.

use crate::entry::{Entry, Word};

use super::big_node::{Item, LeafWrite};
use super::{WriteMode, Writer};
use crate::tree::gap::leaf_max_gap;
pub(crate) use crate::tree::gap::range_size;
use crate::tree::node::{Kind, Live, Write};
use crate::tree::walk::{Level, Walker};

/// The largest gap of a node written with `items` (see `Writer::write_items`), whose range starts
/// at `min`: for a leaf, the largest NULL range (what `gap::leaf_max_gap` reads back from the
/// node); for an allocation tree's internal node, the largest child gap; 0 for a range tree's.
fn items_max_gap(kind: Kind, items: &[Item<'_>], min: u64) -> u64 {
    match kind {
        Kind::Leaf => {
            let mut best = 0;
            let mut lo = min;
            for it in items {
                if it.is_null() {
                    best = best.max(range_size(lo, it.hi));
                }
                lo = it.hi.wrapping_add(1);
            }
            best
        }
        Kind::ARange => items.iter().map(|it| it.gap).max().unwrap_or(0),
        Kind::Range => 0,
    }
}

/// The largest NULL range among leaf slots ending at `his` holding the words `ws`, the first
/// of which starts at `lo`.
#[inline]
pub(super) fn slots_max_gap(his: &[u64], ws: &[usize], mut lo: u64) -> u64 {
    his.iter().zip(ws).fold(0, |best, (&hi, &w)| {
        let g = if w == 0 { range_size(lo, hi) } else { 0 };
        lo = hi.wrapping_add(1);
        best.max(g)
    })
}

/// Stores `g` as the gap of child `i` of the allocation-tree internal node `n` (a fresh node's
/// item, or a gap moved with its slot in place).
#[inline(always)]
pub(super) fn put_gap(n: Live<'_>, i: usize, g: u64) {
    n.set_gap(i, g);
}

/// Moves the gap of child `i` of the allocation-tree internal node `n` to child `i + 1` (a
/// slot moved right by one in place, `insert_child_after`).
#[inline(always)]
pub(super) fn shift_gap(n: Live<'_>, i: usize) {
    n.set_gap(i + 1, n.gap(i));
}

/// The largest NULL range of the leaf `l` describes once its write is done: the slots before
/// and after the write as they were, and the write's pieces (the part of the first slot left of
/// `first`, the entry, the part of the last slot right of `last`). `old` is the leaf's largest
/// NULL range before the write (its parent's record): when no slot the write covers was that
/// large, one of the slots kept still is, and only the pieces need looking at.
fn image_gap(l: &LeafWrite, old: u64) -> u64 {
    let null = |lo: u64, hi: u64, w: usize| if w == 0 { range_size(lo, hi) } else { 0 };
    let slots =
        |from: usize, to: usize| slots_max_gap(&l.his[from..to], &l.ws[from..to], l.lo(from));
    let mut best = if slots(l.off, l.off_end + 1) < old {
        old
    } else {
        slots(0, l.off).max(slots(l.off_end + 1, l.end + 1))
    };
    l.for_each_piece(|lo, hi, w| best = best.max(null(lo, hi, w)));
    best
}

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// [`node_max_gap`](Self::node_max_gap) of a node of `kind` just written with `items`
    /// (starting at `min`), computed from the items instead of read back from the node.
    #[inline]
    pub(crate) fn items_gap(&self, kind: Kind, items: &[Item<'_>], min: u64) -> u64 {
        if self.is_alloc() {
            items_max_gap(kind, items, min)
        } else {
            0
        }
    }

    /// The new largest gap of the leaf a node store writes from the image `l`, below
    /// `ancestors` (0 for a root leaf, whose gap is recorded nowhere, and in a range tree).
    #[inline]
    pub(super) fn node_store_gap<B>(
        &self,
        ancestors: &[Level<'_, Write, B>],
        l: &LeafWrite,
    ) -> u64 {
        match ancestors.last() {
            Some(p) if self.is_alloc() => image_gap(l, p.node.gap(p.offset)),
            _ => 0,
        }
    }

    /// The gap recorded for child `i` of the internal node `n` (0 in a range tree).
    #[inline]
    pub(crate) fn recorded_gap(&self, n: Live<'_>, i: usize) -> u64 {
        if self.is_alloc() {
            n.gap(i)
        } else {
            0
        }
    }

    /// The broken twin's order of an append split's climb (the `early_gap_lowering` ordering
    /// mutant): the lowered gap `g` of the shrunk last child `o` of `n` (an allocation tree's
    /// internal node) stored before the store that shrinks it. Off in every real build; see
    /// [`lower_shrunk_gaps`](Self::lower_shrunk_gaps) for the order kept.
    #[inline(always)]
    pub(super) fn lower_gap_early(&self, n: Live<'_>, o: usize, g: u64) {
        if crate::sync::knobs::early_gap_lowering() && n.kind() == Kind::ARange {
            n.set_gap(o, g);
        }
    }

    /// Largest gap in `n`'s subtree (leaves: computed from NULL slots; allocation-tree internal
    /// nodes: the largest child gap; 0 for every node of a range tree, which keeps no gaps).
    pub(crate) fn node_max_gap(&self, n: Live<'_>, min: u64, max: u64) -> u64 {
        if !self.is_alloc() {
            return 0; // range trees keep no gaps: nothing reads a leaf's
        }
        match n.kind() {
            Kind::Leaf => leaf_max_gap(n.view(), min, max),
            Kind::ARange => {
                let end = n.end(max);
                (0..=end).map(|i| n.gap(i)).max().unwrap_or(0)
            }
            Kind::Range => 0,
        }
    }

    /// The largest gap recorded for child `i` of `n` (0 but in an allocation tree's internal
    /// node).
    pub(crate) fn child_gap(&self, n: Live<'_>, i: usize) -> u64 {
        if n.kind() == Kind::ARange {
            n.gap(i)
        } else {
            0
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
    pub(crate) fn propagate_gap<B>(&self, ancestors: &[Level<'_, Write, B>], mut g: u64) {
        if !self.is_alloc() {
            return;
        }
        for (k, lvl) in ancestors.iter().enumerate().rev() {
            let n = lvl.node.unbranded();
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

    /// Gap maintenance after an in-place leaf change.
    pub(crate) fn after_leaf_change<B>(&self, lw: &Walker<'_, Write, B>, gaps_changed: bool) {
        if !gaps_changed || !self.is_alloc() || lw.depth < 2 {
            return;
        }
        let leaf = lw.leaf();
        let g = leaf_max_gap(leaf.node.view().unbranded(), leaf.min, leaf.max);
        self.propagate_gap(&lw.path()[..lw.depth - 1], g);
    }

    /// Gap maintenance after an in-place append that split the leaf's last slot `[r_min, max]`
    /// (holding `content`) around `[first, last]`: only a NULL slot's pieces can change the leaf's
    /// largest gap, and the same span bound as in [`propagate_gap`](Self::propagate_gap) usually
    /// decides the new one without a scan.
    pub(super) fn after_append(
        &self,
        lw: &Walker<'_, Write>,
        r_min: u64,
        content: usize,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) {
        if !self.is_alloc() || lw.depth < 2 || (content != 0 && !entry.is_null()) {
            return;
        }
        let leaf = lw.leaf();
        let up = lw.path()[lw.depth - 2];
        let old_max = up.node.gap(up.offset);
        if entry.is_null() {
            // A NULL written inside an entry's range (NULL widening excludes a NULL content):
            // one new gap, the maximum can only grow.
            let g = range_size(first, last);
            if g > old_max {
                self.propagate_gap(&lw.path()[..lw.depth - 1], g);
            }
            return;
        }
        if range_size(r_min, leaf.max) < old_max {
            return; // the pieces are smaller still, the maximum is elsewhere
        }
        let left = if first > r_min {
            range_size(r_min, first - 1)
        } else {
            0
        };
        let right = if last < leaf.max {
            range_size(last + 1, leaf.max)
        } else {
            0
        };
        let g = if left.max(right) >= r_min - leaf.min {
            left.max(right)
        } else {
            leaf_max_gap(leaf.node.view(), leaf.min, leaf.max)
        };
        self.propagate_gap(&lw.path()[..lw.depth - 1], g);
    }

    /// The largest NULL range of the leaf `n` covering `[min, max]`, read back from the node.
    #[inline]
    pub(crate) fn leaf_gap(&self, n: Live<'_>, min: u64, max: u64) -> u64 {
        leaf_max_gap(n.view(), min, max)
    }

    /// The largest of the gaps recorded for children `0..=end` of the allocation-tree internal
    /// node `n`.
    #[inline]
    pub(crate) fn gaps_up_to(&self, n: Live<'_>, end: usize) -> u64 {
        (0..=end).map(|i| n.gap(i)).max().unwrap_or(0)
    }

    /// The largest gap of the allocation-tree internal node `n` once the gap of its last child
    /// `o` (whose max shrank with `n`'s, in an append split's climb) is `g`. Nothing is stored:
    /// see [`lower_shrunk_gaps`](Self::lower_shrunk_gaps).
    #[inline]
    pub(crate) fn shrunk_node_gap(&self, n: Live<'_>, o: usize, g: u64) -> u64 {
        o.checked_sub(1).map_or(g, |p| self.gaps_up_to(n, p).max(g))
    }

    /// Stores the gaps of the shrunk last children of an append split's climb, `(node, offset,
    /// gap)`, once the store that shrank their range is published (the lowered pivot of the
    /// ancestor with room, or the new root). Before it, a reader holding the old bound reads
    /// each such child as reaching the old max, and the old gap belongs with that range; after
    /// it, a reader that loads a lowered gap and prunes the right edge by it re-reads its path
    /// and finds the shrunk bound (row P12; see `gap::search`).
    pub(crate) fn lower_shrunk_gaps(&self, shrunk: &[(Live<'_>, usize, u64)]) {
        for &(n, o, g) in shrunk {
            n.set_gap(o, g);
        }
    }
}
