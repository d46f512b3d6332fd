//! The node store (`mas_wr_node_store`): a write inside one leaf rebuilt as one node — a fresh
//! leaf published by one store of its parent's slot in RCU mode, the leaf rewritten in place in
//! exclusive mode.

use crate::entry::{Entry, Word};

use super::big_node::LeafWrite;
use super::WriteMode;
use super::Writer;
use crate::tree::node::Exclusive;
use crate::tree::node::Write;
use crate::tree::node::{Kind, Live, RANGE_PIVOTS};
use crate::tree::walk::Walker;

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// The node store of `l` in the leaf of `lw`: the leaf's slots with `[first, last]` cut out
    /// and `entry` in its place, written straight out of the image `l` read; the entries it
    /// drops are released, a range split around the new entry shares its word.
    pub(crate) fn wr_node_store(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) {
        self.release_replaced(l);
        self.st.stats.node_store += 1;
        let ancestors = &lw.path()[..lw.depth - 1];
        // The new largest gap (a root leaf's is recorded nowhere).
        let gap = self.node_store_gap(ancestors, l);
        if let Some(x) = M::exclusive(self) {
            x.node_store_in_place(lw, l);
            x.propagate_gap(ancestors, gap);
            return;
        }
        // A fresh leaf, published by one store of its parent's slot (the old one retired).
        let n = self.alloc_node(Kind::Leaf);
        self.put_image(n.node(), 0, l);
        self.replace_child(ancestors, n, gap);
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

    /// Writes the leaf `l` describes once its write is done into `n`, from slot `from` on
    /// (`from <= l.off`): the image's slots before the write, the write's pieces, the image's
    /// slots after it.
    #[inline]
    fn put_image(&self, n: Live<'_>, from: usize, l: &LeafWrite) {
        let mut j = from;
        let put = |hi: u64, w: usize| {
            n.init_entry(j, Word::<E>::leaf(w));
            if j < RANGE_PIVOTS {
                n.init_pivot(j, hi);
            }
            j += 1;
        };
        l.for_each_slot_after(from, put);
        debug_assert_eq!(j, l.new_end + 1);
    }
}

/// Exclusive mode only: the leaf is rewritten where readers could be.
impl<'t, E: Entry> Writer<'t, E, Exclusive> {
    /// The node store in exclusive mode (no reader): the leaf rewritten in place from the
    /// write's first slot on, out of the image `l` read (the slots before `off` stay as they
    /// are; those the leaf no longer uses are cleared).
    fn node_store_in_place(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) {
        let n = lw.leaf().node;
        self.put_image(n, l.off, l);
        n.clear_slots(l.new_end + 1..l.end + 1);
    }
}
