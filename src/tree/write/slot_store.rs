//! The slot store (`mas_wr_slot_store`): a write inside one leaf that keeps its slot count,
//! moving one boundary (two slots) or two (three slots), in place. Exclusive mode only: it moves
//! a boundary of a range that stays visible, which readers could pair with the old entry.

use crate::entry::{Entry, Word};

use super::big_node::LeafWrite;
use super::Writer;
use crate::tree::node::Exclusive;
use crate::tree::node::Write;
use crate::tree::walk::Walker;

/// Exclusive mode only: a slot store moves boundaries inside a node readers could be in.
impl<'t, E: Entry> Writer<'t, E, Exclusive> {
    /// The slot store of `l` in the leaf of `lw`, if it is one; `false`, with nothing done,
    /// otherwise.
    pub(crate) fn slot_store(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) -> bool {
        if l.new_end != l.end {
            return false;
        }
        let n = lw.leaf().node;
        let (off, first, last, entry) = (l.off, l.first, l.last, Word::<E>::leaf(l.entry));
        if l.off_end == off + 1 {
            if l.r_min == first {
                n.init_entry(off, entry);
                n.init_pivot(off, last);
                self.release_entry(Word::leaf(l.ws[off]));
            } else {
                n.init_entry(off + 1, entry);
                n.init_pivot(off, first - 1);
                self.release_entry(Word::leaf(l.ws[off + 1]));
            }
            self.st.stats.slot_store += 1;
        } else if l.off_end == off + 2 {
            n.init_entry(off + 1, entry);
            n.init_pivot(off, first - 1);
            n.init_pivot(off + 1, last);
            self.release_entry(Word::leaf(l.ws[off + 1]));
            self.st.stats.slot_store3 += 1;
        } else {
            return false;
        }
        self.after_leaf_change(lw, true);
        true
    }
}
