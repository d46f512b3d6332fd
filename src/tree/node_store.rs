//! The node store (`mas_wr_node_store`): a write inside one leaf rebuilt as one node — a fresh
//! leaf published by one store of its parent's slot in RCU mode, the leaf rewritten in place in
//! exclusive mode.

use crate::entry::{Entry, Word};

use super::big_node::{Item, LeafWrite};
use super::gap::range_size;
use super::node::Mode;
use super::node::Write;
use super::node::{Kind, RANGE_PIVOTS, RANGE_SLOTS};
use super::walk::Walker;
use super::write::Writer;

impl<'t, E: Entry, M: Mode> Writer<'t, E, M> {
    /// The node store of `l` in the leaf of `lw`: the leaf's items with `[first, last]` cut out
    /// and `entry` in its place; the entries it drops are released, a range split around the
    /// new entry shares its word.
    pub(crate) fn wr_node_store(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) {
        if M::EXCLUSIVE {
            self.release_replaced(l);
            self.node_store_in_place(lw, l);
            return;
        }
        let (off, off_end) = (l.off, l.off_end);
        let mut items: [Item<'t>; RANGE_SLOTS] = [Item::slot(0, 0); RANGE_SLOTS];
        let mut len = 0;
        let mut push = |it: Item<'t>| {
            items[len] = it;
            len += 1;
        };
        for i in 0..off {
            push(Item::slot(l.his[i], l.ws[i]));
        }
        l.for_each_piece(|_, hi, w| push(Item::slot(hi, w)));
        for i in off_end + 1..=l.end {
            push(Item::slot(l.his[i], l.ws[i]));
        }
        debug_assert_eq!(len, l.new_end + 1);
        self.release_replaced(l);
        // A fresh leaf, published by one store of its parent's slot (the old one retired).
        let leaf = *lw.leaf();
        self.st.stats.node_store += 1;
        let items = &items[..len];
        let n = self.alloc_node(Kind::Leaf);
        self.write_items(&n, items, leaf.max);
        let g = self.items_gap(Kind::Leaf, items, leaf.min);
        self.replace_child(&lw.path()[..lw.depth - 1], n, g);
    }

    /// The entries of the slots the write covers leave the tree, but for the pieces left of
    /// `first` and right of `last`; a range split around the new entry shares its word.
    pub(crate) fn release_replaced(&mut self, l: &LeafWrite) {
        let (off, off_end) = (l.off, l.off_end);
        let left = l.r_min < l.first;
        let right = l.last < l.end_piv;
        for (i, &w) in l.ws.iter().enumerate().take(off_end + 1).skip(off) {
            let kept = (left && i == off) || (right && i == off_end);
            if !kept {
                self.release_entry(Word::leaf(w));
            }
        }
        if left && right && off == off_end {
            self.share_entry(Word::leaf(l.ws[off]));
        }
    }

    /// The node store in exclusive mode (no reader): the leaf rewritten in place from the
    /// write's first slot on, out of the image `l` read (the slots before `off` stay as they
    /// are; those the leaf no longer uses are cleared); the largest gap comes from the image
    /// too.
    fn node_store_in_place(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) {
        let leaf = *lw.leaf();
        let n = leaf.node;
        self.st.stats.node_store += 1;
        let mut j = l.off;
        let mut put = |hi: u64, w: usize| {
            n.init_entry(j, Word::<E>::leaf(w));
            if j < RANGE_PIVOTS {
                n.init_pivot(j, hi);
            }
            j += 1;
        };
        l.for_each_piece(|_, hi, w| put(hi, w));
        for i in l.off_end + 1..=l.end {
            put(l.his[i], l.ws[i]);
        }
        debug_assert_eq!(j, l.new_end + 1);
        for k in j..=l.end {
            n.clear_slot(k);
            if k < RANGE_PIVOTS {
                n.init_pivot(k, 0);
            }
        }
        if self.is_alloc() && lw.depth > 1 {
            let parent = lw.path()[lw.depth - 2];
            let old = parent.node.gap(parent.offset);
            self.propagate_gap(&lw.path()[..lw.depth - 1], image_gap(l, old));
        }
    }
}

/// The largest NULL range of the leaf `l` describes once its write is done: the slots before
/// and after the write as they were, and the write's pieces (the part of the first slot left of
/// `first`, the entry, the part of the last slot right of `last`). `old` is the leaf's largest
/// NULL range before the write (its parent's record): when no slot the write covers was that
/// large, one of the slots kept still is, and only the pieces need looking at.
fn image_gap(l: &LeafWrite, old: u64) -> u64 {
    let null = |lo: u64, hi: u64, w: usize| if w == 0 { range_size(lo, hi) } else { 0 };
    let slots = |from: usize, to: usize| {
        let (los, his, ws) = (&l.los[from..to], &l.his[from..to], &l.ws[from..to]);
        los.iter()
            .zip(his)
            .zip(ws)
            .fold(0, |best, ((&lo, &hi), &w)| best.max(null(lo, hi, w)))
    };
    let mut best = if slots(l.off, l.off_end + 1) < old {
        old
    } else {
        slots(0, l.off).max(slots(l.off_end + 1, l.end + 1))
    };
    l.for_each_piece(|lo, hi, w| best = best.max(null(lo, hi, w)));
    best
}
