//! The exact fit (`mas_wr_exact_fit`): the write covers exactly one slot, which is replaced in
//! place by one Release store (row P5), in both modes — unless a lowered pivot seals the slot
//! (`seal`), which sends the write to the node store instead.

use crate::entry::{Entry, Word};

use super::big_node::LeafWrite;
use super::WriteMode;
use super::Writer;
use crate::tree::node::Live;
use crate::tree::node::Write;
use crate::tree::walk::Walker;

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// The exact fit without the leaf image (`wr_exact_fit`): `[first, last]` is exactly the
    /// walker's slot and `entry` is not NULL (a NULL store may widen over empty neighbours, so it
    /// takes the general path). One Release store of the slot; the walker stays valid and now
    /// reports `entry`. `false`, with nothing done, when the store is not an exact fit. The
    /// walker may be branded (`B`: a writing cursor's, which reads entries through it).
    pub(crate) fn exact_fit_at<B>(
        &mut self,
        lw: &mut Walker<'t, Write, B>,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> bool {
        if entry.is_null() || lw.depth == 0 || lw.lo != first || lw.hi != last {
            return false;
        }
        let leaf = *lw.leaf();
        let n = leaf.node.unbranded();
        if !self.may_repoint(n, leaf.offset, lw.hi == leaf.max) {
            self.st.stats.sealed_repoint += 1;
            return false; // the leaf store copies the leaf instead
        }
        let old = Word::leaf(lw.word.raw());
        self.wr_exact_fit(lw, n, leaf.offset, old, entry);
        lw.word = leaf.node.leaf_word(leaf.offset);
        true
    }

    /// The exact fit found on the leaf image of a leaf store (a NULL write included, after its
    /// widening); `false`, with nothing done, if it is not one or the slot is sealed.
    pub(crate) fn exact_fit_in_leaf(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) -> bool {
        let n = lw.leaf().node;
        if l.off != l.off_end
            || l.r_min != l.first
            || l.end_piv != l.last
            || !self.may_repoint(n, l.off, l.end_piv == l.max)
        {
            return false;
        }
        self.wr_exact_fit(lw, n, l.off, Word::leaf(l.ws[l.off]), Word::leaf(l.entry));
        true
    }

    /// `mas_wr_exact_fit` proper: slot `off` of the leaf `n` (the leaf of `lw`), holding `old`,
    /// gets `entry` by one Release store; the old entry is released.
    fn wr_exact_fit<B>(
        &mut self,
        lw: &Walker<'_, Write, B>,
        n: Live<'_>,
        off: usize,
        old: Word<E>,
        entry: Word<E>,
    ) {
        if old != entry {
            n.publish_entry(off, entry);
            self.release_entry(old);
            self.after_leaf_change(lw, old.is_null() != entry.is_null());
        } else if !entry.is_null() {
            self.add_len(-1); // the range was already counted
        }
        self.st.stats.exact_fit += 1;
    }
}
