//! The rebuild: split, rebalance, node store and spanning store as one level-by-level
//! algorithm (the kernel's `mas_wr_bnode`). The split of a level is in `split`, the pull-in of
//! a right neighbour (rebalance) in `rebalance`.
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

use crate::entry::{Entry, Word};

use super::big_node::{Item, Items};
use super::path::{Levels, Path, Retired};
use super::WriteMode;
use super::Writer;
use crate::tree::node::Write;
use crate::tree::node::{Exclusive, Kind};
use crate::tree::walk::Level;

/// A rebuild in progress: the paths whose nodes it consumes, the items of the level it is at
/// (the big node), and what it has done so far.
pub(crate) struct Rebuild<'t, 'b> {
    pub(crate) paths: &'b mut SmallVec<[Path<'t>; 4]>,
    pub(crate) retired: Retired<'t>,
    /// The level being built (0 = root) and the kind of its nodes.
    pub(crate) level: usize,
    pub(crate) kind: Kind,
    pub(crate) leaf_level: usize,
    /// The level's items and where the written entry (or the new nodes below) went in them.
    pub(crate) items: &'b mut Items<'t>,
    pub(crate) entry_pos: usize,
    /// The range the consumed nodes of the level cover.
    pub(crate) run_min: u64,
    pub(crate) run_max: u64,
    /// The written range (for the removal of subtrees inside it).
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) spanning: bool,
    pub(crate) pulled: bool,
    pub(crate) split: bool,
}

/// What `rebuild` reports: the final range of the written entry (NULL writes widen).
pub(crate) struct Rebuilt {
    pub(crate) first: u64,
    pub(crate) last: u64,
}

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// The generic write: see the module docs. `lpath`/`rpath` lead to the leaves holding `first`
    /// and `last` (`rpath` `None`: the same leaf as `lpath`).
    pub(crate) fn rebuild(
        &mut self,
        lpath: Path<'t>,
        rpath: Option<Path<'t>>,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> Rebuilt {
        let height = lpath.levels.len();
        let leaf_level = height - 1;
        // The two big buffers (the paths, the items: over 4 KiB) are locals the rebuild borrows:
        // built in place, never moved (each move would be a `memcpy`).
        let mut paths = SmallVec::new();
        let mut items = Items::new();
        let mut rb = Rebuild {
            spanning: rpath
                .as_ref()
                .is_some_and(|r| lpath.levels[leaf_level].node != r.levels[leaf_level].node),
            paths: &mut paths,
            retired: Retired::new(),
            level: leaf_level,
            kind: Kind::Leaf,
            leaf_level,
            items: &mut items,
            entry_pos: 0,
            run_min: 0,
            run_max: 0,
            first,
            last,
            pulled: false,
            split: false,
        };
        rb.paths.push(lpath);
        rb.paths.extend(rpath);
        self.leaf_items(&mut rb, entry);
        rb.run_min = paths_min(rb.paths, leaf_level);
        rb.run_max = paths_max(rb.paths, leaf_level);
        self.fix_leaf_level(&mut rb, height);
        // The written range, widened by any NULL merge.
        let result = Rebuilt {
            first: if rb.entry_pos == 0 {
                rb.run_min
            } else {
                rb.items.get(rb.entry_pos - 1).hi + 1
            },
            last: rb.items.get(rb.entry_pos).hi,
        };
        while !self.climb(&mut rb) {}
        let st = &mut self.st.stats;
        st.spanning_store += u64::from(rb.spanning);
        st.split += u64::from(rb.split);
        st.rebalance += u64::from(rb.pulled && !rb.spanning);
        for n in rb.retired {
            self.retire_node(n);
        }
        result
    }

    /// The items of the leaf level: the slots of the consumed leaves with `[first, last]` cut
    /// out and `entry` in its place; the entries cut out are released, a range split around the
    /// entry shares its word.
    fn leaf_items(&mut self, rb: &mut Rebuild<'t, '_>, entry: Word<E>) {
        let (first, last) = (rb.first, rb.last);
        let consumed = consumed_at(rb.paths, rb.leaf_level);
        let mut placed = false;
        for lvl in &consumed {
            for (lo, hi, s) in lvl.node.slots(lvl.min, lvl.max, self.internal) {
                let w = s.entry();
                if hi < first || lo > last {
                    rb.items.push(Item::slot(hi, w));
                    continue;
                }
                let left = lo < first;
                let right = hi > last;
                if left {
                    rb.items.push(Item::slot(first - 1, w));
                }
                if !placed {
                    rb.entry_pos = rb.items.len();
                    rb.items.push(Item::slot(last, entry.raw()));
                    placed = true;
                }
                if right {
                    rb.items.push(Item::slot(hi, w));
                }
                match (left, right) {
                    (true, true) => self.share_entry(Word::leaf(w)),
                    (false, false) => self.release_entry(Word::leaf(w)),
                    _ => {}
                }
            }
        }
        debug_assert!(placed);
    }

    /// One level of the climb: ends the rebuild at this level (`true`: a collapse of the root,
    /// a single node replaced, or a new root grown), or moves it to the parent level.
    fn climb(&mut self, rb: &mut Rebuild<'t, '_>) -> bool {
        let consumed = consumed_at(rb.paths, rb.level);
        // An internal root with a single child collapses.
        if rb.level == 0 && rb.kind != Kind::Leaf && rb.items.len() == 1 {
            self.collapse_root(rb, &consumed);
            return true;
        }
        if consumed.len() == 1 && rb.items.len() <= rb.kind.slots() {
            self.replace_single(rb, consumed[0]);
            return true;
        }
        // Several nodes at this level.
        let mut new_items = Items::new();
        self.split_level(rb, &mut new_items);
        rb.retired.extend(consumed.iter().map(|l| l.node));
        if rb.level == 0 {
            // Grow: a new root above the parts.
            self.grow_root(new_items.as_slice());
            return true;
        }
        self.parent_items(rb, &consumed, &new_items);
        self.fix_internal_level(rb);
        false
    }

    /// The root level holds a single child: it becomes the root (and so on down while the new
    /// root has a single child), shrinking the height.
    fn collapse_root(&mut self, rb: &mut Rebuild<'t, '_>, consumed: &[Level<'t, Write>]) {
        rb.retired.extend(consumed.iter().map(|l| l.node));
        let mut top = rb.items.get(0).slot.child();
        let mut shrink = rb.level + 1;
        while !top.is_leaf() && top.end(u64::MAX) == 0 {
            rb.retired.push(top);
            top = top.child(0, self.internal);
            shrink += 1;
        }
        let old = self.root.promote(top);
        self.retire_old_root(old);
        self.st.height -= shrink;
        self.st.stats.shrink += 1;
    }

    /// The level's items fit the one consumed node `x`: it is replaced by a fresh node with
    /// one store of its parent's slot (RCU), or rewritten in place (exclusive).
    fn replace_single(&mut self, rb: &mut Rebuild<'t, '_>, x: Level<'t, Write>) {
        let ancestors: Levels<'t> = if rb.level == 0 {
            Levels::new()
        } else {
            path_to(rb.paths, rb.level - 1)
        };
        if let Some(w) = M::exclusive(self) {
            w.rewrite_single(rb, x, &ancestors);
        } else {
            let n = self.alloc_node(rb.kind);
            self.write_items(&n, rb.items.as_slice(), x.max);
            let g = self.items_gap(rb.kind, rb.items.as_slice(), x.min);
            // One Release store of the parent's slot (or a copy of a sealed parent).
            self.replace_child(&ancestors, n, g);
        }
        if rb.level == rb.leaf_level && !rb.spanning && !rb.pulled && !rb.split {
            self.st.stats.node_store += 1;
        }
    }

    /// The items of the parent level: the children of the consumed parents before and after the
    /// run below, with `new_items` (the new nodes of the level below) in its place; children
    /// inside the run that were not consumed lie inside the write and are removed.
    fn parent_items(
        &mut self,
        rb: &mut Rebuild<'t, '_>,
        consumed: &[Level<'t, Write>],
        new_items: &Items<'t>,
    ) {
        let parent_level = rb.level - 1;
        let pconsumed = consumed_at(rb.paths, parent_level);
        // The level's items went into `new_items`: the buffer takes the parent's, in place.
        rb.items.truncate(0);
        let pitems = &mut *rb.items;
        let mut placed = false;
        for pl in &pconsumed {
            for (i, (clo, chi, s)) in pl.node.slots(pl.min, pl.max, self.internal).enumerate() {
                let before = chi < rb.run_min;
                if !before && !placed {
                    rb.entry_pos = pitems.len();
                    pitems.extend(new_items.as_slice());
                    placed = true;
                }
                if before || clo > rb.run_max {
                    let gap = self.child_gap(pl.node, i);
                    pitems.push(Item {
                        hi: chi,
                        slot: s,
                        gap,
                    });
                    continue;
                }
                let child = s.child();
                if !consumed.iter().any(|c| c.node == child) {
                    debug_assert!(
                        clo >= rb.first && chi <= rb.last,
                        "removing a subtree outside the write"
                    );
                    self.remove_subtree(child, clo, chi, &mut rb.retired);
                }
            }
        }
        debug_assert!(placed);
        rb.level = parent_level;
        rb.kind = self.internal;
        rb.run_min = paths_min(rb.paths, rb.level);
        rb.run_max = paths_max(rb.paths, rb.level);
    }
}

/// Distinct nodes at `level` over all paths reaching it, in index order.
pub(crate) fn consumed_at<'g>(paths: &[Path<'g>], level: usize) -> SmallVec<[Level<'g, Write>; 4]> {
    let mut v: SmallVec<[Level<'g, Write>; 4]> = SmallVec::new();
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

pub(crate) fn paths_min(paths: &[Path<'_>], level: usize) -> u64 {
    paths
        .iter()
        .filter_map(|p| p.levels.get(level))
        .map(|l| l.min)
        .min()
        .unwrap_or(0)
}

pub(crate) fn paths_max(paths: &[Path<'_>], level: usize) -> u64 {
    paths
        .iter()
        .filter_map(|p| p.levels.get(level))
        .map(|l| l.max)
        .max()
        .unwrap_or(u64::MAX)
}

/// The path whose node at `level` is rightmost.
pub(crate) fn rightmost_path<'g>(paths: &[Path<'g>], level: usize) -> Path<'g> {
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
pub(crate) fn path_to<'g>(paths: &[Path<'g>], level: usize) -> Levels<'g> {
    paths
        .iter()
        .find(|p| p.levels.len() > level)
        .map(|p| Levels::from_slice(&p.levels[..=level]))
        .unwrap()
}

/// Exclusive mode only: a node rewritten where readers could be.
impl<'t, E: Entry> Writer<'t, E, Exclusive> {
    /// [`replace_single`](Writer::replace_single) in place: `x`, below `ancestors`, rewritten
    /// with the level's items, still linked where it was.
    fn rewrite_single(
        &mut self,
        rb: &Rebuild<'t, '_>,
        x: Level<'t, Write>,
        ancestors: &[Level<'t, Write>],
    ) {
        let new = x.node;
        self.rewrite_items(new, rb.items.as_slice(), x.max);
        let g = self.items_gap(rb.kind, rb.items.as_slice(), x.min);
        if let Some(parent) = ancestors.last() {
            new.set_parent(Some(parent.node), parent.offset);
        } else {
            new.set_parent(None, 0);
        }
        self.propagate_gap(ancestors, g);
    }
}
