//! The in-place appends (`mas_wr_append`): a write that starts in the leaf's last slot and adds
//! one slot (`+1` at the end, or at the start in exclusive mode) or two (the three-way append,
//! a range strictly inside the last one). New slots and pivots are written beyond the end with
//! Relaxed stores, then the old end pivot is lowered by the one Release store that publishes
//! them (rows P6/P8/P9); a leaf whose max shrank within the grace period is sealed (`seal`).

use crate::entry::{Entry, Word};

use super::WriteMode;
use super::Writer;
use crate::tree::node::Write;
use crate::tree::node::{Exclusive, Kind, RANGE_SLOTS};
use crate::tree::walk::{Level, Walker};

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// The in-place appends (see the module table) of `[first, last] = entry` into the last slot
    /// `[r_min, max]` of `lw`'s leaf, holding `content`; `false` when none applies (no room, or
    /// an append at the start in RCU mode).
    pub(crate) fn append_in_place(
        &mut self,
        lw: &Walker<'t, Write>,
        r_min: u64,
        content: usize,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> bool {
        let leaf = *lw.leaf();
        if !self.may_extend(leaf.node) {
            // The leaf shrank in place (append split) within the current grace period: a reader
            // may still read it up to its old max, beyond the end. The leaf store copies it
            // instead (and counts `sealed_extend`).
            return false;
        }
        if !self.append_stores(leaf, r_min, content, first, last, entry) {
            return false;
        }
        self.after_append(lw, r_min, content, first, last, entry);
        // Same nodes, same limits: the next in-order append can start from this leaf (the
        // saved path as it was, if this write started from it).
        if !self.st.saved.resume(self.root, lw.leaf().offset) {
            lw.save(self.root, &mut self.st.saved);
        }
        true
    }
    /// The stores of the appends into the last slot `leaf.offset` of `leaf` (see the module
    /// docs): Relaxed stores beyond the end, then the old end pivot lowered by one Release store
    /// (the `+1` at the start, exclusive only, moves a visible boundary instead). `false`, with
    /// nothing done, when none applies.
    fn append_stores(
        &mut self,
        leaf: Level<'t, Write>,
        r_min: u64,
        content: usize,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> bool {
        let (n, end, max) = (leaf.node, leaf.offset, leaf.max);
        let p = Kind::Leaf.pivots();
        if r_min < first && last < max {
            if end + 2 >= RANGE_SLOTS || !self.st.three_way {
                return false;
            }
            // Three-way append: [content][entry][content]; the old end pivot lowered last.
            n.init_entry(end + 2, Word::<E>::leaf(content));
            if end + 2 < p {
                n.init_pivot(end + 2, max);
            }
            n.init_pivot(end + 1, last);
            n.init_entry(end + 1, entry);
            n.publish_pivot(end, first - 1);
            self.seal_lowered(n, end);
            self.share_entry(Word::leaf(content));
            self.st.stats.append_three_way += 1;
        } else if r_min < first {
            if end + 1 >= RANGE_SLOTS {
                return false;
            }
            // +1 at the end: [content][entry].
            n.init_entry(end + 1, entry);
            if end + 1 < p {
                n.init_pivot(end + 1, max);
            }
            n.publish_pivot(end, first - 1);
            self.seal_lowered(n, end);
            self.st.stats.append_end += 1;
        } else if last < max {
            // +1 at the start: a visible boundary moves, so exclusive only.
            return M::exclusive(self).is_some_and(|x| x.append_start(leaf, content, last, entry));
        } else {
            return false;
        }
        true
    }
}

/// Exclusive mode only: the append at the start moves a boundary readers could see.
impl<'t, E: Entry> Writer<'t, E, Exclusive> {
    /// `+1` at the start of the last slot `leaf.offset` of `leaf` (holding `content`):
    /// `[entry][content]`, `entry` ending at `last`; `false`, with nothing done, without room.
    fn append_start(
        &mut self,
        leaf: Level<'t, Write>,
        content: usize,
        last: u64,
        entry: Word<E>,
    ) -> bool {
        let (n, end, max) = (leaf.node, leaf.offset, leaf.max);
        let p = Kind::Leaf.pivots();
        if end + 1 >= RANGE_SLOTS {
            return false;
        }
        // [entry][content]: the slot and pivot beyond the end, then the end's pivot and entry.
        n.init_entry(end + 1, Word::<E>::leaf(content));
        if end + 1 < p {
            n.init_pivot(end + 1, max);
        }
        n.init_pivot(end, last);
        n.init_entry(end, entry);
        self.st.stats.append_start += 1;
        true
    }
}
