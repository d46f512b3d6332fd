//! The rebalance (`mas_rebalance`): a level whose items would leave a non-rightmost node below
//! minimum occupancy, or a non-rightmost leaf ending in NULL, pulls in its right neighbour (whose
//! path joins the nodes the rebuild consumes). Adjacent NULLs are coalesced first.

use crate::entry::Entry;

use super::big_node::{Item, Items};
use super::rebuild::{rightmost_path, Rebuild};
use super::WriteMode;
use super::Writer;
use crate::tree::node::Kind;

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// The leaf level: coalesces NULLs and pulls in right neighbours while the last leaf would
    /// end in NULL or be underfull (in a tree of `height` levels).
    pub(crate) fn fix_leaf_level(&mut self, rb: &mut Rebuild<'t, '_>, height: usize) {
        loop {
            coalesce_nulls(rb.items, &mut rb.entry_pos);
            let not_last = rb.run_max != u64::MAX;
            let needs_null_fix = rb.items.last().is_null() && not_last;
            let underfull = rb.items.len() < Kind::Leaf.min_end() + 1 && not_last && height > 1;
            if !(needs_null_fix || underfull) {
                return;
            }
            self.pull_right(rb);
        }
    }

    /// An internal level: pulls in right neighbours while it is underfull (not at the root).
    pub(crate) fn fix_internal_level(&mut self, rb: &mut Rebuild<'t, '_>) {
        while rb.items.len() < rb.kind.min_end() + 1 && rb.run_max != u64::MAX && rb.level > 0 {
            self.pull_right(rb);
        }
    }

    /// Appends the slots of the right neighbour of the level's run to its items.
    fn pull_right(&mut self, rb: &mut Rebuild<'t, '_>) {
        let nb = rightmost_path(rb.paths, rb.level)
            .right_neighbour(self.internal)
            .expect("run_max < MAX implies a right neighbour");
        let lvl = *nb.levels.last().unwrap();
        for (i, (_, hi, slot)) in lvl.node.slots(lvl.min, lvl.max, self.internal).enumerate() {
            let gap = self.child_gap(lvl.node, i);
            rb.items.push(Item { hi, slot, gap });
        }
        rb.run_max = lvl.max;
        rb.paths.push(nb);
        rb.pulled = true;
    }
}

/// Merges adjacent NULL items (keeping the later bound), tracking where the entry item went.
/// Usually there are none (the leaf store widened the write over its NULL neighbours): one scan.
fn coalesce_nulls(items: &mut Items<'_>, entry_pos: &mut usize) {
    let s = items.as_mut_slice();
    let Some(first) = s.windows(2).position(|w| w[0].is_null() && w[1].is_null()) else {
        return;
    };
    // Items `0..=first` stay where they are; `s[out - 1]` is the last item kept.
    let mut out = first + 1;
    for i in first + 1..s.len() {
        let it = s[i];
        if it.is_null() && s[out - 1].is_null() {
            s[out - 1] = it;
            if i == *entry_pos {
                *entry_pos = out - 1;
            }
        } else {
            if i == *entry_pos {
                *entry_pos = out;
            }
            s[out] = it;
            out += 1;
        }
    }
    items.truncate(out);
}
