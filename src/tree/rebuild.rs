//! Split, rebalance, node store and spanning store as one level-by-level algorithm (no unsafe).
//!
//! The kernel's `mas_wr_bnode`/`mas_split`/`mas_spanning_rebalance` work on a "big node" per
//! level and ascend the left and right paths together. This is the same idea, stated once:
//!
//! * **Consumed nodes.** Every node on a *path* is consumed: the path to the leaf holding
//!   `first`, the path to the leaf holding `last`, and the path to each neighbour pulled in to fix
//!   an underfull or NULL-ended result. A consumed node is replaced; its content is copied.
//! * **Items of a level.** At the leaf level the items are the slots of the consumed leaves with
//!   `[first, last]` cut out and the new entry put in its place (so the trimmed neighbours become
//!   remainders), adjacent NULLs coalesced. At an internal level they are the children of the
//!   consumed nodes that lie before or after the run below, with the new nodes of the level below
//!   in between. Children inside the run that are not consumed lie wholly inside `[first, last]`:
//!   their subtrees are removed and their entries released.
//! * **Fix-ups.** If the items would leave a non-rightmost node below minimum occupancy, or a
//!   non-rightmost leaf ending in NULL, the right neighbour at that level is pulled in (its path
//!   joins the consumed set). Items that overflow one node are partitioned into two or three.
//! * **Termination.** When a level's consumed set is a single node and its items fit one node,
//!   that node is replaced by a single pointer store in its parent (RCU: a fresh node; exclusive:
//!   rewritten in place). At the root, several nodes grow a new root; an internal root left with
//!   one child collapses, shrinking the height.

use smallvec::SmallVec;

use crate::entry::Entry;

use super::big_node::{Item, Items};
use super::node::{Kind, NodeRef};
use super::path::{Levels, Path, Retired};
use super::walk::Level;
use super::write::WriteGuard;

/// Item ranges `(start, end)` of the nodes a level is partitioned into.
type Parts = SmallVec<[(usize, usize); 8]>;

/// What `rebuild` reports: the final range of the written entry (NULL writes widen).
pub(crate) struct Rebuilt {
    pub(crate) first: u64,
    pub(crate) last: u64,
}

impl<'t, E: Entry> WriteGuard<'t, E> {
    /// The generic write: see the module docs. `lpath`/`rpath` lead to the leaves holding `first`
    /// and `last`.
    pub(crate) fn rebuild(
        &mut self,
        lpath: Path<'t>,
        rpath: Path<'t>,
        first: u64,
        last: u64,
        entry: usize,
    ) -> Rebuilt {
        let internal = self.internal;
        let height = lpath.levels.len();
        let leaf_level = height - 1;
        let spanning = lpath.levels[leaf_level].node != rpath.levels[leaf_level].node;
        let mut paths: SmallVec<[Path<'t>; 4]> = smallvec::smallvec![lpath, rpath];
        let mut retired: Retired<'t> = Retired::new();
        let mut pulled = false;
        let mut split = false;
        let mut result = Rebuilt { first, last };

        // ---- leaf level --------------------------------------------------------------------
        let mut items = Items::new();
        let mut entry_pos = 0usize;
        {
            let consumed = consumed_at(&paths, leaf_level);
            let mut placed = false;
            for lvl in &consumed {
                for (lo, hi, s) in lvl.node.slots(lvl.min, lvl.max, internal) {
                    let w = s.entry();
                    if hi < first || lo > last {
                        items.push(Item::slot(hi, w));
                        continue;
                    }
                    let left = lo < first;
                    let right = hi > last;
                    if left {
                        items.push(Item::slot(first - 1, w));
                    }
                    if !placed {
                        entry_pos = items.len();
                        items.push(Item::slot(last, entry));
                        placed = true;
                    }
                    if right {
                        items.push(Item::slot(hi, w));
                    }
                    match (left, right) {
                        (true, true) => self.share_entry(w),
                        (false, false) => self.release_entry(w),
                        _ => {}
                    }
                }
            }
            debug_assert!(placed);
        }
        let mut run_min = paths_min(&paths, leaf_level);
        let mut run_max = paths_max(&paths, leaf_level);
        loop {
            coalesce_nulls(&mut items, &mut entry_pos);
            let needs_null_fix = items.last().is_null() && run_max != u64::MAX;
            let underfull =
                items.len() < Kind::Leaf.min_end() + 1 && run_max != u64::MAX && height > 1;
            if !(needs_null_fix || underfull) {
                break;
            }
            let hi_path = rightmost_path(&paths, leaf_level);
            let nb = hi_path
                .right_neighbour(internal)
                .expect("run_max < MAX implies a right neighbour");
            let lvl = *nb.levels.last().unwrap();
            for (_, hi, s) in lvl.node.slots(lvl.min, lvl.max, internal) {
                items.push(Item {
                    hi,
                    slot: s,
                    gap: 0,
                });
            }
            run_max = lvl.max;
            paths.push(nb);
            pulled = true;
        }
        // The written range, widened by any NULL merge.
        result.first = if entry_pos == 0 {
            run_min
        } else {
            items.get(entry_pos - 1).hi + 1
        };
        result.last = items.get(entry_pos).hi;

        // ---- climb ---------------------------------------------------------------------------
        let mut level = leaf_level;
        let mut kind = Kind::Leaf;
        loop {
            let consumed = consumed_at(&paths, level);
            let single = consumed.len() == 1;
            let is_root = level == 0;
            // An internal root with a single child collapses.
            if is_root && kind != Kind::Leaf && items.len() == 1 {
                retired.extend(consumed.iter().map(|l| l.node));
                let mut top = items.get(0).slot.child();
                let mut top_max = u64::MAX;
                let mut shrink = level + 1;
                while !top.is_leaf() && top.end(top_max) == 0 {
                    retired.push(top);
                    top = top.child(0, internal);
                    top_max = u64::MAX;
                    shrink += 1;
                }
                self.root.promote(top);
                self.st.height -= shrink;
                self.st.stats.shrink += 1;
                break;
            }
            if single && items.len() <= kind.slots() {
                let x = consumed[0];
                let ancestors: Levels<'t> = if is_root {
                    Levels::new()
                } else {
                    path_to(&paths, level - 1)
                };
                if self.exclusive {
                    // Rewritten in place: still linked where it was.
                    let new = x.node;
                    self.write_items(new, items.as_slice(), x.max);
                    let g = self.node_max_gap(new, x.min, x.max);
                    if let Some(parent) = ancestors.last() {
                        new.set_parent(Some(parent.node), parent.offset);
                    } else {
                        new.set_parent(None, 0);
                    }
                    self.propagate_gap(&ancestors, g);
                } else {
                    let n = self.alloc_node(kind);
                    self.write_items(n.node(), items.as_slice(), x.max);
                    retired.push(x.node);
                    let g = self.node_max_gap(n.node(), x.min, x.max);
                    // One Release store of the parent's slot (or a copy of a sealed parent).
                    self.replace_child(&ancestors, n, g);
                }
                if level == leaf_level && !spanning && !pulled && !split {
                    self.st.stats.node_store += 1;
                }
                break;
            }
            // Several nodes at this level.
            let parts = partition(
                &items,
                kind,
                run_max == u64::MAX,
                entry_pos,
                level == leaf_level,
            );
            if parts.len() > 1 {
                split = true;
            }
            let mut new_items = Items::new();
            let mut lo = run_min;
            for &(a, b) in &parts {
                let hi = items.get(b - 1).hi;
                let n = self.alloc_node(kind);
                self.write_items(n.node(), &items.as_slice()[a..b], hi);
                let g = self.node_max_gap(n.node(), lo, hi);
                new_items.push(Item::fresh(hi, n, g));
                lo = hi.wrapping_add(1);
            }
            retired.extend(consumed.iter().map(|l| l.node));
            if is_root {
                // Grow: a new root above the parts.
                self.grow_root(new_items.as_slice());
                break;
            }
            // Items of the parent level.
            let parent_level = level - 1;
            let pconsumed = consumed_at(&paths, parent_level);
            let mut pitems = Items::new();
            let mut placed = false;
            for pl in &pconsumed {
                for (i, (clo, chi, s)) in pl.node.slots(pl.min, pl.max, internal).enumerate() {
                    if chi < run_min {
                        pitems.push(Item {
                            hi: chi,
                            slot: s,
                            gap: self.child_gap(pl.node, i),
                        });
                    } else if clo > run_max {
                        if !placed {
                            entry_pos = pitems.len();
                            pitems.extend(new_items.as_slice());
                            placed = true;
                        }
                        pitems.push(Item {
                            hi: chi,
                            slot: s,
                            gap: self.child_gap(pl.node, i),
                        });
                    } else {
                        if !placed {
                            entry_pos = pitems.len();
                            pitems.extend(new_items.as_slice());
                            placed = true;
                        }
                        let child = s.child();
                        if !consumed.iter().any(|c| c.node == child) {
                            debug_assert!(
                                clo >= first && chi <= last,
                                "removing a subtree outside the write"
                            );
                            self.remove_subtree(child, clo, chi, &mut retired);
                        }
                    }
                }
            }
            debug_assert!(placed);
            items = pitems;
            level = parent_level;
            kind = internal;
            run_min = paths_min(&paths, level);
            run_max = paths_max(&paths, level);
            // Fix an underfull internal level by pulling its right neighbour.
            while items.len() < kind.min_end() + 1 && run_max != u64::MAX && level > 0 {
                let hi_path = rightmost_path(&paths, level);
                let nb = hi_path.right_neighbour(internal).expect("right neighbour");
                let lvl = *nb.levels.last().unwrap();
                for (i, (_, hi, s)) in lvl.node.slots(lvl.min, lvl.max, internal).enumerate() {
                    items.push(Item {
                        hi,
                        slot: s,
                        gap: self.child_gap(lvl.node, i),
                    });
                }
                run_max = lvl.max;
                paths.push(nb);
                pulled = true;
            }
        }

        if spanning {
            self.st.stats.spanning_store += 1;
        }
        if split {
            self.st.stats.split += 1;
        }
        if pulled && !spanning {
            self.st.stats.rebalance += 1;
        }
        for n in retired {
            self.retire_node(n);
        }
        result
    }

    fn child_gap(&self, n: NodeRef<'_>, i: usize) -> u64 {
        if n.kind() == Kind::ARange {
            n.gap(i)
        } else {
            0
        }
    }
}

/// Distinct nodes at `level` over all paths reaching it, in index order.
fn consumed_at<'g>(paths: &[Path<'g>], level: usize) -> SmallVec<[Level<'g>; 4]> {
    let mut v: SmallVec<[Level<'g>; 4]> = SmallVec::new();
    for p in paths {
        if let Some(l) = p.levels.get(level) {
            if !v.iter().any(|x| x.node == l.node) {
                v.push(*l);
            }
        }
    }
    v.sort_by_key(|l| l.min);
    v
}

fn paths_min(paths: &[Path<'_>], level: usize) -> u64 {
    paths
        .iter()
        .filter_map(|p| p.levels.get(level))
        .map(|l| l.min)
        .min()
        .unwrap_or(0)
}

fn paths_max(paths: &[Path<'_>], level: usize) -> u64 {
    paths
        .iter()
        .filter_map(|p| p.levels.get(level))
        .map(|l| l.max)
        .max()
        .unwrap_or(u64::MAX)
}

/// The path whose node at `level` is rightmost.
fn rightmost_path<'g>(paths: &[Path<'g>], level: usize) -> Path<'g> {
    let p = paths
        .iter()
        .filter(|p| p.levels.len() > level)
        .max_by_key(|p| p.levels[level].max)
        .expect("a path reaches every processed level");
    Path {
        levels: Levels::from_slice(&p.levels[..=level]),
    }
}

/// Root-to-`level` levels of a path reaching it.
fn path_to<'g>(paths: &[Path<'g>], level: usize) -> Levels<'g> {
    paths
        .iter()
        .find(|p| p.levels.len() > level)
        .map(|p| Levels::from_slice(&p.levels[..=level]))
        .unwrap()
}

/// Merges adjacent NULL items (keeping the later bound), tracking where the entry item went.
fn coalesce_nulls(items: &mut Items<'_>, entry_pos: &mut usize) {
    let mut out = 0usize;
    let n = items.len();
    let mut i = 0;
    while i < n {
        let it = items.get(i);
        if out > 0 && it.is_null() && items.get(out - 1).is_null() {
            items.set(out - 1, it);
            if i == *entry_pos {
                *entry_pos = out - 1;
            }
        } else {
            if i == *entry_pos {
                *entry_pos = out;
            }
            items.set(out, it);
            out += 1;
        }
        i += 1;
    }
    items.truncate(out);
}

/// Splits `items` into node-sized parts `[a, b)`. Parts other than the last get at least the
/// minimum occupancy; leaves never end a non-last part on a NULL. When the run is on the right
/// edge and the write lands at its end (in-order appends), parts are packed full from the left,
/// as the kernel's bulk mode did; otherwise they are balanced. If moving a boundary off a NULL
/// would overfill a part, one more part is used.
fn partition(
    items: &Items<'_>,
    kind: Kind,
    right_edge: bool,
    entry_pos: usize,
    leaf: bool,
) -> Parts {
    let n = items.len();
    let cap = kind.slots();
    let min = kind.min_end() + 1;
    let null_at = |b: usize| leaf && items.get(b - 1).is_null();
    let valid = |bounds: &[usize]| {
        bounds.windows(2).enumerate().all(|(j, w)| {
            let len = w[1] - w[0];
            let last = j + 2 == bounds.len();
            len >= 1 && len <= cap && (last || (len >= min && !null_at(w[1])))
        })
    };
    let to_parts =
        |bounds: &[usize]| -> Parts { bounds.windows(2).map(|w| (w[0], w[1])).collect() };
    if right_edge && entry_pos + 2 >= n {
        let mut bounds: SmallVec<[usize; 8]> = smallvec::smallvec![0];
        let mut b = 0;
        while n - b > cap {
            let mut nb = b + cap;
            if null_at(nb) {
                nb -= 1;
            }
            bounds.push(nb);
            b = nb;
        }
        bounds.push(n);
        if valid(&bounds) {
            return to_parts(&bounds);
        }
    }
    let mut k = n.div_ceil(cap);
    loop {
        let base = n / k;
        let extra = n % k;
        let mut bounds: SmallVec<[usize; 8]> = smallvec::smallvec![0];
        let mut b = 0;
        for j in 0..k - 1 {
            b += base + usize::from(j < extra);
            bounds.push(b);
        }
        bounds.push(n);
        // Move boundaries off NULLs: right if the right part can spare one, else left.
        for j in 1..k {
            if null_at(bounds[j]) {
                let left = bounds[j] - bounds[j - 1];
                let right = bounds[j + 1] - bounds[j];
                if left < cap && right > min {
                    bounds[j] += 1;
                } else {
                    bounds[j] -= 1;
                }
            }
        }
        if valid(&bounds) {
            return to_parts(&bounds);
        }
        k += 1;
        assert!(k <= n, "maple tree: cannot partition {n} items");
    }
}
