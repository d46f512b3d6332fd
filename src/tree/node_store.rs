//! The node store (`mas_wr_node_store`): a write inside one leaf rebuilt as one node — a fresh
//! leaf published by one store of its parent's slot in RCU mode, the leaf rewritten in place in
//! exclusive mode.

use crate::entry::{Entry, Word};

use super::big_node::{Item, LeafWrite};
use super::node::Mode;
use super::node::Write;
use super::node::{Kind, RANGE_SLOTS};
use super::walk::Walker;
use super::write::Writer;

impl<'t, E: Entry, M: Mode> Writer<'t, E, M> {
    /// The node store of `l` in the leaf of `lw`: the leaf's items with `[first, last]` cut out
    /// and `entry` in its place; the entries it drops are released, a range split around the
    /// new entry shares its word.
    pub(crate) fn wr_node_store(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) {
        let (off, off_end, first, last) = (l.off, l.off_end, l.first, l.last);
        let mut items: [Item<'t>; RANGE_SLOTS] = [Item::slot(0, 0); RANGE_SLOTS];
        let mut len = 0;
        let mut push = |it: Item<'t>| {
            items[len] = it;
            len += 1;
        };
        for i in 0..off {
            push(Item::slot(l.his[i], l.ws[i]));
        }
        let left = l.r_min < first;
        let right = last < l.end_piv;
        if left {
            push(Item::slot(first - 1, l.ws[off]));
        }
        push(Item::slot(last, l.entry));
        if right {
            push(Item::slot(l.end_piv, l.ws[off_end]));
        }
        for i in off_end + 1..=l.end {
            push(Item::slot(l.his[i], l.ws[i]));
        }
        debug_assert_eq!(len, l.new_end + 1);
        for (i, &w) in l.ws.iter().enumerate().take(off_end + 1).skip(off) {
            let kept = (left && i == off) || (right && i == off_end);
            if !kept {
                self.release_entry(Word::leaf(w));
            }
        }
        if left && right && off == off_end {
            self.share_entry(Word::leaf(l.ws[off]));
        }
        self.node_store(lw, &items[..len]);
    }

    /// Replaces the leaf of `lw` with `items` (`wr_node_store`).
    fn node_store(&mut self, lw: &Walker<'t, Write>, items: &[Item<'t>]) {
        let leaf = *lw.leaf();
        self.st.stats.node_store += 1;
        if M::EXCLUSIVE {
            self.rewrite_items(leaf.node, items, leaf.max);
            if self.is_alloc() && lw.depth > 1 {
                let g = self.items_gap(Kind::Leaf, items, leaf.min);
                self.propagate_gap(&lw.path()[..lw.depth - 1], g);
            }
            return;
        }
        let n = self.alloc_node(Kind::Leaf);
        self.write_items(&n, items, leaf.max);
        let g = self.items_gap(Kind::Leaf, items, leaf.min);
        // Retires the replaced leaf.
        self.replace_child(&lw.path()[..lw.depth - 1], n, g);
    }
}
