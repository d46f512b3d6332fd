//! The slot store (`mas_wr_slot_store`): a write inside one leaf that keeps its slot count,
//! moving one boundary (two slots) or two (three slots), in place. Exclusive mode only: it moves
//! a boundary of a range that stays visible, which readers could pair with the old entry.

use crate::entry::{Entry, Word};

use super::big_node::LeafWrite;
use super::Writer;
use crate::tree::node::Mode;
use crate::tree::node::Write;
use crate::tree::walk::Walker;

impl<'t, E: Entry, M: Mode> Writer<'t, E, M> {
    /// The slot store of `l` in the leaf of `lw`, if it is one and the mode allows it; `false`,
    /// with nothing done, otherwise.
    pub(crate) fn slot_store(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) -> bool {
        if !M::EXCLUSIVE || l.new_end != l.end {
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
