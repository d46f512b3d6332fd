//! The append split: in-order appends that fill the rightmost leaf, without copy-on-write.
//!
//! When a write lands in the last slot of a full leaf on the tree's right edge (the in-order build
//! of a VMA tree at fork, of an id table, of a log), the kernel splits the leaf into two new
//! nodes and rebuilds the parent. Here the leaf is split by **truncation**: it keeps its first
//! slots untouched and simply gets a smaller max (the parent's pivot), and only the tail plus the
//! new entry go into one fresh node appended after it. The parent gains that child by the same
//! in-place `+1` append the leaves use: the new slot and its pivot are written beyond the parent's
//! end, then the old end pivot is lowered by one Release store. If the parent is full it is
//! truncated the same way and the new node climbs; a full root grows a new root above.
//!
//! A leaf with one free slot takes the new entry as its last slot instead and only the rest of
//! the old last range moves on, so in-order builds fill leaves to all sixteen slots (eight
//! `[entry][gap]` pairs), as the kernel's rightmost split does: 34.3 bytes per range for the
//! `[10i, 10i+5]` shape in a range tree, against 39.2 when truncating. Without readers
//! (`exclusive()`) this is done in place; under readers by copy-on-write of the leaf and its
//! parent (the leaf's last slot would otherwise reach the old maximum for a reader that read the
//! parent's old pivot), and by the generic rebuild when the parent is full.
//!
//! Readers stay correct without any node being replaced: a reader that read the parent's old end
//! pivot sees the old leaf whole (its max is still the old one in that reader's view); one that
//! reads the lowered pivot sees the truncated leaf and the new node, already written. Nodes keep
//! stale words beyond their end, which nobody reads (the end is derived from the pivots).

use smallvec::SmallVec;

use crate::entry::{Entry, Word};

use super::big_node::Item;
use super::WriteMode;
use super::Writer;
use crate::tree::node::Write;
use crate::tree::node::{Exclusive, Fresh, Kind, Live, RANGE_SLOTS};
use crate::tree::walk::{Level, Walker};

/// The last slot of the full leaf, as the leaf store saw it.
pub(crate) struct LastSlot {
    pub(crate) end: usize,
    /// Start of the last slot.
    pub(crate) r_min: u64,
    /// The last slot's content.
    pub(crate) content: usize,
    /// Upper bound and word of the slot before it.
    pub(crate) prev_hi: u64,
    pub(crate) prev_word: usize,
    /// Upper bound of the slot before that (for when the previous slot is empty).
    pub(crate) prev2_hi: u64,
}

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// Appends `[first, last] = entry` into the last slot of the full rightmost leaf `lw` by
    /// truncation (see the module docs). The caller checked: the leaf's max is `u64::MAX`, the
    /// write starts in the last slot, and the leaf has no room.
    pub(crate) fn append_split(
        &mut self,
        lw: &Walker<'t, Write>,
        first: u64,
        last: u64,
        entry: Word<E>,
        ls: LastSlot,
    ) {
        let leaf = *lw.leaf();
        debug_assert_eq!(leaf.max, u64::MAX);
        // The fills keep the written range as the leaf's last slot, so never for a NULL store: a
        // leaf that is not the rightmost must not end in NULL.
        let fill =
            !entry.is_null() && ls.end + 2 == RANGE_SLOTS && ls.r_min < first && last < u64::MAX;
        if fill {
            if let Some(x) = M::exclusive(self) {
                return x.append_fill_in_place(lw, first, last, entry, &ls);
            }
            // Truncating instead would leave one leaf in every parent's worth one slot short.
            return self.append_fill_cow(lw, first, last, entry, &ls);
        }
        // The leaf keeps slots 0..k; it must not end in NULL.
        let (k, kept_max) = if ls.prev_word == 0 {
            (ls.end - 1, ls.prev2_hi)
        } else {
            (ls.end, ls.prev_hi)
        };
        let mut items: SmallVec<[Item; 5]> = SmallVec::new();
        if k < ls.end {
            items.push(Item::slot(ls.prev_hi, 0));
        }
        let left = ls.r_min < first;
        let right = last < u64::MAX;
        if left {
            items.push(Item::slot(first - 1, ls.content));
        }
        items.push(Item::slot(last, entry.raw()));
        if right {
            items.push(Item::slot(u64::MAX, ls.content));
        }
        if left && right {
            self.share_entry(Word::leaf(ls.content));
        }
        self.append_climb(lw, kept_max, &items);
    }

    /// The same 16-slot fill under readers, by copy-on-write: a copy of the leaf whose last slot
    /// is cut before the entry and the entry after it, a new leaf for the rest of the old last
    /// range, both in place of the old leaf in a copy of its parent ([`fill_climb`](Self::fill_climb)),
    /// published by one Release store. Readers see the old nodes, untouched, or the new ones,
    /// complete.
    fn append_fill_cow(
        &mut self,
        lw: &Walker<'t, Write>,
        first: u64,
        last: u64,
        entry: Word<E>,
        ls: &LastSlot,
    ) {
        let leaf = *lw.leaf();
        let end = ls.end;
        // Slots 0..=end as they are (slot `end` keeps `content`, now up to `first - 1`).
        let filled = self.copy_node(leaf.node, 0);
        self.write_items_at(
            &filled,
            end,
            &[
                Item::slot(first - 1, ls.content),
                Item::slot(last, entry.raw()),
            ],
        );
        let rest = self.alloc_node(Kind::Leaf);
        self.write_items(&rest, &[Item::slot(u64::MAX, ls.content)], u64::MAX);
        self.share_entry(Word::leaf(ls.content));
        let filled_gap = self.node_max_gap(filled.node(), leaf.min, last);
        let rest_gap = self.node_max_gap(rest.node(), last + 1, u64::MAX);
        self.st.stats.split += 1;
        self.st.stats.append_split += 1;
        self.st.stats.append_fill += 1;
        self.fill_climb(
            lw.path(),
            Item::fresh(last, filled, filled_gap),
            Item::fresh(u64::MAX, rest, rest_gap),
        );
        self.retire_node(leaf.node);
    }

    /// Puts the pair `a`, `b` (fresh, `b` ending at `u64::MAX`) in place of the last node of
    /// `path` (on the right edge): in a copy of its parent, with the pair in place of its last
    /// child, published in the parent's place (one store of the grandparent's slot, or of the
    /// root). A full parent is copied with `a` as its last child instead, and `b` climbs alone in
    /// a new node, as the exclusive climb's full parents keep all their children; a full root
    /// grows a new root above the pair. The nodes copied are retired.
    fn fill_climb(&mut self, path: &[Level<'t, Write>], mut a: Item<'t>, mut b: Item<'t>) {
        let mut full: SmallVec<[Live<'t>; 4]> = SmallVec::new();
        let mut j = path.len() - 1;
        loop {
            let Some(up) = j.checked_sub(1) else {
                self.grow_root(&[a, b]);
                break;
            };
            let p = path[up];
            let (kind, o) = (p.node.kind(), p.offset);
            debug_assert_eq!(p.max, u64::MAX);
            let copy = self.copy_node(p.node, o);
            if o + 1 < kind.slots() {
                self.write_items_at(&copy, o, &[a, b]);
                let g = self.node_max_gap(copy.node(), p.min, p.max);
                // Retires `p`.
                self.replace_child(&path[..up], copy, g);
                break;
            }
            let a_hi = a.hi;
            self.write_items_at(&copy, o, &[a]);
            let a_gap = self.node_max_gap(copy.node(), p.min, a_hi);
            let s = self.alloc_node(kind);
            self.write_items(&s, &[b], u64::MAX);
            let b_gap = b.gap;
            full.push(p.node);
            (a, b) = (
                Item::fresh(a_hi, copy, a_gap),
                Item::fresh(u64::MAX, s, b_gap),
            );
            j = up;
        }
        for n in full {
            self.retire_node(n);
        }
    }

    /// The leaf of `lw` now ends at `kept_max`; `items` (up to `u64::MAX`) go into a new leaf
    /// appended after it, the parents gaining it by the in-place `+1` append or by truncation.
    fn append_climb(&mut self, lw: &Walker<'t, Write>, kept_max: u64, items: &[Item<'t>]) {
        let leaf = *lw.leaf();
        let new_leaf = self.alloc_node(Kind::Leaf);
        self.write_items(&new_leaf, items, u64::MAX);
        let new_gap = self.node_max_gap(new_leaf.node(), kept_max + 1, u64::MAX);
        let mut kept_gap = if self.is_alloc() {
            self.leaf_gap(leaf.node, leaf.min, kept_max)
        } else {
            0
        };
        // The leaf's max shrinks to `kept_max`: readers that read the old one may read it up to
        // there (beyond its new end) until a grace period has passed.
        self.seal_shrunk(leaf.node);
        let mut new_node = new_leaf;
        let mut kept_node = leaf.node;
        self.st.stats.split += 1;
        self.st.stats.append_split += 1;

        let path = lw.path();
        // The shrunk full parents' last-child gaps, stored once the shrink is published.
        let mut shrunk: SmallVec<[(Live<'t>, usize, u64); 4]> = SmallVec::new();
        let mut d = path.len() - 1;
        loop {
            if d == 0 {
                // The truncated node was the root: grow a new root above both.
                self.grow_root(&[
                    Item::child(kept_max, kept_node, kept_gap),
                    Item::fresh(u64::MAX, new_node, new_gap),
                ]);
                self.lower_shrunk_gaps(&shrunk);
                return;
            }
            d -= 1;
            let p = path[d];
            let pn = p.node;
            let kind = pn.kind();
            let o = p.offset;
            debug_assert_eq!(pn.end(p.max), o, "the rightmost child is the last one");
            if o + 1 < kind.slots() {
                self.append_to_parent(&path[..=d], kept_max, kept_gap, new_node, new_gap, &shrunk);
                return;
            }
            // Full: the parent keeps all its children and shrinks to `kept_max` (its last
            // child's new max, implied by the parent's own max); the new node goes into a new
            // parent appended after it. A reader that read the old max sees this parent whole,
            // and its last child with its old max, whole too (the words beyond their new ends
            // stay as they were); one that reads the lowered pivot sees both at their new max.
            let s = self.alloc_node(kind);
            let items = [Item::fresh(u64::MAX, new_node, new_gap)];
            self.write_items(&s, &items, u64::MAX);
            if kind == Kind::ARange {
                self.lower_gap_early(pn, o, kept_gap); // the broken twin's order
                shrunk.push((pn, o, kept_gap));
                kept_gap = self.shrunk_node_gap(pn, o, kept_gap);
            }
            // The parent's max shrinks too.
            self.seal_shrunk(pn);
            kept_node = pn;
            new_node = s;
        }
    }

    /// Room in the last node of `path` (on the right edge): the in-place `+1` append of `new`
    /// after its last child, whose max becomes `kept_max`; then the gaps of the full nodes below
    /// that shrank with it (`shrunk`). A node whose max shrank never gets it back: no reader
    /// holds a larger max for it, whatever the seals say (a seal found here is a stale one of a
    /// freed node at the same address).
    fn append_to_parent(
        &mut self,
        path: &[Level<'t, Write>],
        kept_max: u64,
        kept_gap: u64,
        new: Fresh<'t>,
        new_gap: u64,
        shrunk: &[(Live<'t>, usize, u64)],
    ) {
        let d = path.len() - 1;
        let (pn, o) = (path[d].node, path[d].offset);
        self.lower_gap_early(pn, o, kept_gap); // the broken twin's order
        pn.append_child(o, u64::MAX, kept_max, kept_gap, new, new_gap);
        self.lower_shrunk_gaps(shrunk);
        self.seal_lowered(pn, o);
        if pn.kind() == Kind::ARange {
            let g = self.gaps_up_to(pn, o + 1);
            self.propagate_gap(&path[..d], g);
        }
    }
}

/// Exclusive mode only: the fill moves a boundary inside a node readers could be in.
impl<'t, E: Entry> Writer<'t, E, Exclusive> {
    /// The 16-slot fill of [`append_split`](Self::append_split) in place (see there).
    fn append_fill_in_place(
        &mut self,
        lw: &Walker<'t, Write>,
        first: u64,
        last: u64,
        entry: Word<E>,
        ls: &LastSlot,
    ) {
        // No readers, one slot left (a three-way append needs two): the leaf takes the new
        // entry as its last slot and keeps all sixteen (it ends in the entry, never in NULL),
        // and only the rest of the old last range moves to the new leaf. In-order builds
        // then fill leaves to 16 slots, as the kernel's rightmost split does. Under readers
        // this would move a boundary inside a node whose max a reader may still read as the
        // old one, so RCU mode copies the leaf and its parent instead (`append_fill_cow`).
        let n = lw.leaf().node;
        n.init_entry(ls.end + 1, entry);
        n.init_pivot(ls.end, first - 1);
        self.share_entry(Word::leaf(ls.content));
        let items = [Item::slot(u64::MAX, ls.content)];
        self.st.stats.append_fill += 1;
        self.append_climb(lw, last, &items);
    }
}
