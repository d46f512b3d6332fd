//! Lock-free reader walks. Nothing here locks or allocates; a walk that meets a replaced (dead)
//! node restarts from the root. Every pivot is read once per decision (the value that stopped a
//! scan is the value used as the slot's bound), so a concurrent in-place append can never make a
//! walk report a range that does not contain the index it was looking for.

use super::node::{
    Access, Loaded, Mode, NodeRef, Read, RootRef, SavedNodes, Unbranded, WalkStack, Write,
    WriterRoot, RANGE_PIVOTS,
};

/// Whether a read path checks the range a walk lands on against what it already returned
/// (cursor moves, `MapleTree::next`/`prev`, the two ends of an iterator): always, but in a loom
/// broken twin (`loom_knobs::set_trust_rewalk`).
#[inline(always)]
pub(crate) fn check_rewalk() -> bool {
    !crate::sync::knobs::trust_rewalk()
}

/// Deepest tree the walkers can follow. The kernel allows 31 levels; here every level above the
/// leaves has a full node left of the right spine (splits fill the left node), so a tree of
/// `h` levels holds at least `15^(h-2)` leaves: 24 levels would need more memory than exists.
pub(crate) const MAX_DEPTH: usize = 24;

/// `mtree_load`'s walk: the slot word at `index` (nothing if the tree is empty).
#[inline]
pub(crate) fn load_word<E>(root: RootRef<'_, Read, E>, index: u64) -> Loaded<'_, E> {
    let internal = root.internal();
    'restart: loop {
        let Some(mut n) = root.node() else {
            return Loaded::NONE;
        };
        loop {
            let i = n.find_pivot(index);
            if n.is_leaf() {
                let s = n.leaf_word(i);
                if n.is_dead() {
                    root.restarted();
                    continue 'restart;
                }
                return s;
            }
            let Some(c) = n.try_child(i, internal) else {
                root.restarted();
                continue 'restart;
            };
            n = c;
        }
    }
}

/// The whole slot containing `index`: `(first, last, word)`, or `None` for an empty tree.
pub(crate) fn walk_range<E>(
    root: RootRef<'_, Read, E>,
    index: u64,
) -> Option<(u64, u64, Loaded<'_, E>)> {
    let mut w = Walker::new(root);
    w.walk(index)?;
    Some((w.lo, w.hi, w.word))
}

/// One level of a walk: a node, its implied limits, and the slot taken (`A`: the access of the
/// walk's node handles, `Write` for the writer's walks; `E`: their brand, see `node`).
pub(crate) struct Level<'g, A: Access = Read, E = Unbranded> {
    pub(crate) node: NodeRef<'g, A, E>,
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) offset: usize,
}

// (By hand: a derive would ask `E: Copy`; the brand is only a name.)
impl<A: Access, E> Clone for Level<'_, A, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: Access, E> Copy for Level<'_, A, E> {}
impl<A: Access, E> core::fmt::Debug for Level<'_, A, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Level")
            .field("node", &self.node)
            .field("min", &self.min)
            .field("max", &self.max)
            .field("offset", &self.offset)
            .finish()
    }
}

/// Deepest path a writer saves between writes (see [`SavedPath`]); deeper trees just walk.
const SAVED_DEPTH: usize = 8;

/// A writer's path to the leaf of its last in-place append, kept between writes (in the tree's
/// writer state, so across write guards) so that the next in-order append restarts from that
/// leaf instead of walking from the root — the role a kept `ma_state` plays for the kernel's
/// in-order builds. The nodes are kept by the node layer ([`SavedNodes`], which hands them back
/// only while no node has been retired since), the limits and offsets here.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SavedPath {
    nodes: SavedNodes<SAVED_DEPTH>,
    /// `(min, max, offset)` per level, root first.
    levels: [(u64, u64, usize); SAVED_DEPTH],
    /// The write in progress was positioned by [`Walker::restore`] from this path.
    restored: bool,
    /// Set by [`suspend`](Self::suspend) from `restored`: the write in progress may hand the
    /// path back by [`resume`](Self::resume).
    resumable: bool,
}

impl SavedPath {
    /// Forgets the path.
    pub(crate) fn clear(&mut self) {
        self.nodes.clear();
        self.restored = false;
        self.resumable = false;
    }

    /// At the start of every write: the path is unusable until [`resume`](Self::resume)d or
    /// saved again; only a write that [`restore`](Walker::restore)d its position from it may
    /// resume it.
    pub(crate) fn suspend(&mut self) {
        self.resumable = core::mem::take(&mut self.restored);
        self.nodes.suspend();
    }

    /// At the end of an in-place append positioned by `restore` from this path (it changed no
    /// node's place or limits): the path is usable again as it was, with the leaf's slot offset
    /// moved to `leaf_offset`. `false` when the write was not restored from it or a node has
    /// been retired since it was saved: then the caller saves afresh.
    pub(crate) fn resume<M: Mode, B>(
        &mut self,
        writer: WriterRoot<'_, M, B>,
        leaf_offset: usize,
    ) -> bool {
        if !core::mem::take(&mut self.resumable) || !writer.resume_nodes(&mut self.nodes) {
            return false;
        }
        self.levels[self.nodes.len() - 1].2 = leaf_offset;
        true
    }
}

/// A reader position that keeps its path, so moving to a neighbouring slot is `O(1)` amortised.
/// The writer's walkers (`A = Write`, from [`WriterRoot::walk_root`]) hold [`Live`](super::node::Live) nodes.
#[repr(C)]
pub(crate) struct Walker<'g, A: Access = Read, E = Unbranded> {
    /// Root-to-leaf levels (left uninitialised beyond those written, so creating a walker costs
    /// nothing); the current path is the first `depth` of them. (The layout is fixed: the
    /// levels first, their count after them, then `hi`, not zero in a new walker. A new
    /// walker's zeroed fields then do not border the uninitialised levels, and moving a new
    /// walker copies those fields alone; otherwise LLVM copies the levels too.)
    levels: WalkStack<Level<'g, A, E>, MAX_DEPTH>,
    /// The current slot's range, `lo..=hi`, and its word.
    pub(crate) hi: u64,
    /// Levels of the current path (0: not positioned); always `<= levels.init()`.
    pub(crate) depth: usize,
    root: RootRef<'g, A, E>,
    /// (See `hi`.)
    pub(crate) lo: u64,
    /// (See `hi`.)
    pub(crate) word: Loaded<'g, E>,
}

impl<'g, A: Access, E> Walker<'g, A, E> {
    /// Unpositioned.
    pub(crate) fn new(root: RootRef<'g, A, E>) -> Self {
        Walker {
            root,
            levels: WalkStack::new(),
            depth: 0,
            lo: 0,
            hi: u64::MAX,
            word: Loaded::NONE,
        }
    }

    #[inline]
    fn root(&self) -> Option<NodeRef<'g, A, E>> {
        self.root.node()
    }

    #[inline]
    fn internal(&self) -> super::node::Kind {
        self.root.internal()
    }

    #[inline]
    fn set(&mut self, d: usize, l: Level<'g, A, E>) {
        self.levels.set(d, l);
    }

    #[inline]
    fn at(&self, d: usize) -> &Level<'g, A, E> {
        self.levels.get(d)
    }

    #[inline]
    fn at_mut(&mut self, d: usize) -> &mut Level<'g, A, E> {
        self.levels.get_mut(d)
    }

    /// Level `d` of the path (written since the walker was made).
    #[inline]
    pub(crate) fn level(&self, d: usize) -> &Level<'g, A, E> {
        self.at(d)
    }

    /// Level `d` of the path (written since the walker was made), mutably.
    #[inline]
    pub(crate) fn level_mut(&mut self, d: usize) -> &mut Level<'g, A, E> {
        self.at_mut(d)
    }

    /// The leaf level of the current position.
    #[inline]
    pub(crate) fn leaf(&self) -> &Level<'g, A, E> {
        self.at(self.depth - 1)
    }

    /// The path from the root (index 0) to the leaf.
    pub(crate) fn path(&self) -> &[Level<'g, A, E>] {
        self.levels.prefix(self.depth)
    }

    /// Positions at the slot containing `index`. `None` (and unpositioned) for an empty tree.
    pub(crate) fn walk(&mut self, index: u64) -> Option<()> {
        'restart: loop {
            let Some(mut n) = self.root() else {
                self.depth = 0;
                self.lo = 0;
                self.hi = u64::MAX;
                self.word = Loaded::NONE;
                return None;
            };
            let (mut min, mut max) = (0u64, u64::MAX);
            let mut d = 0;
            loop {
                let (i, lo, hi) = n.find_slot(index, min, max);
                self.set(
                    d,
                    Level {
                        node: n,
                        min,
                        max,
                        offset: i,
                    },
                );
                d += 1;
                if n.is_leaf() {
                    let s = n.leaf_word(i);
                    if n.is_dead() {
                        self.root.restarted();
                        continue 'restart;
                    }
                    self.depth = d;
                    self.lo = lo;
                    self.hi = hi;
                    self.word = s;
                    return Some(());
                }
                let Some(c) = n.try_child(i, self.internal()) else {
                    self.root.restarted();
                    continue 'restart;
                };
                n = c;
                min = lo;
                max = hi;
            }
        }
    }

    /// Moves to the next slot (NULL ranges included). `None` past `u64::MAX`.
    #[inline]
    pub(crate) fn next_slot(&mut self) -> Option<()> {
        if self.depth == 0 || self.hi == u64::MAX {
            return None;
        }
        let target = self.hi + 1;
        let d = self.depth - 1;
        let lvl = *self.at(d);
        if self.hi < lvl.max {
            // Same leaf: the next slot's bound is its pivot, read once (clamped to the max).
            let i = lvl.offset + 1;
            self.at_mut(d).offset = i;
            let n = lvl.node;
            let hi = if i < RANGE_PIVOTS {
                let p = n.range_pivot(i);
                if p < lvl.max {
                    p
                } else {
                    lvl.max
                }
            } else {
                lvl.max
            };
            self.word = n.range_word(i);
            self.lo = target;
            self.hi = hi;
            return Some(());
        }
        self.next_leaf()
    }

    /// Records a position an iterator reached by itself in the current leaf (slot `offset`,
    /// covering `[lo, hi]`, holding `word`), as [`next_entry`](Self::next_entry) would have left
    /// it; the walker must be positioned, and `offset` within that leaf's end.
    #[inline]
    pub(crate) fn set_leaf_slot(&mut self, offset: usize, lo: u64, hi: u64, word: Loaded<'g, E>) {
        let d = self.depth - 1;
        self.at_mut(d).offset = offset;
        self.lo = lo;
        self.hi = hi;
        self.word = word;
    }

    /// Records a leaf crossing an iterator made by itself: the leaf is now `leaf` (covering
    /// `[min, max]`, at offset 0), child `parent_offset` of the same parent as before. The walker
    /// must be positioned at least two levels deep; the caller then records its slot with
    /// [`set_leaf_slot`](Self::set_leaf_slot) before the walker moves again.
    #[inline]
    pub(crate) fn set_parent_leaf(
        &mut self,
        parent_offset: usize,
        leaf: NodeRef<'g, A, E>,
        min: u64,
        max: u64,
    ) {
        debug_assert!(self.depth >= 2);
        let d = self.depth - 1;
        self.at_mut(d - 1).offset = parent_offset;
        *self.at_mut(d) = Level {
            node: leaf,
            min,
            max,
            offset: 0,
        };
    }

    /// Moves to the next slot holding an entry (not empty, not the zero entry): a tight loop
    /// within the leaf, [`next_leaf`](Self::next_leaf) across leaves.
    #[inline(always)]
    pub(crate) fn next_entry(&mut self) -> Option<()> {
        loop {
            if self.depth == 0 || self.hi == u64::MAX {
                return None;
            }
            let d = self.depth - 1;
            let lvl = *self.at(d);
            let (n, max) = (lvl.node, lvl.max);
            let mut i = lvl.offset;
            let mut hi = self.hi;
            let (mut lo, mut w) = (self.lo, self.word);
            while hi < max {
                i += 1;
                lo = hi + 1;
                hi = if i < RANGE_PIVOTS {
                    let p = n.range_pivot(i);
                    if p < max {
                        p
                    } else {
                        max
                    }
                } else {
                    max
                };
                w = n.range_word(i);
                if w.is_entry() {
                    self.at_mut(d).offset = i;
                    self.lo = lo;
                    self.hi = hi;
                    self.word = w;
                    return Some(());
                }
            }
            // On the leaf's last slot (a whole position, so a caller may stop here).
            self.at_mut(d).offset = i;
            self.lo = lo;
            self.hi = hi;
            self.word = w;
            if hi == u64::MAX {
                return None;
            }
            self.next_leaf()?;
            if self.word.is_entry() {
                return Some(());
            }
        }
    }

    /// `next_slot` across a leaf boundary: [`cross_next`](Self::cross_next), or a walk from
    /// the root when it fails.
    #[inline(never)]
    fn next_leaf(&mut self) -> Option<()> {
        debug_assert!(self.hi < u64::MAX);
        let target = self.hi.checked_add(1)?;
        let leaf = *self.leaf();
        if self.cross_next(leaf.node, leaf.max).is_none() {
            return self.walk(target);
        }
        let leaf = *self.leaf();
        self.lo = target;
        self.hi = leaf.node.slot_max(0, leaf.max);
        self.word = leaf.node.leaf_word(0);
        Some(())
    }

    /// The leaf crossing forwards (`mas_next_node`), shared by this walker and the iterator's
    /// front: from leaf `leaf`, level `depth - 1`, which ends at `leaf_max` (below
    /// `u64::MAX`): the leaf alive; up to the first ancestor, alive, with a child after the one
    /// on the path, its offset moved to that child; down that child's first children to a leaf
    /// (each child slot non-empty), the levels written (offset 0, each starting at
    /// `leaf_max + 1`) and the leaf the path's last. The levels above the leaf must be current,
    /// but for the offsets of those the climb passes; the leaf's own level is not read. `None`
    /// when the caller must walk from the root instead: at a dead node or an empty child slot
    /// (counted as a restart), past the root's last child, or at a child ending below
    /// `leaf_max + 1` (states only a race produces).
    #[inline]
    pub(crate) fn cross_next(&mut self, leaf: NodeRef<'g, A, E>, leaf_max: u64) -> Option<()> {
        let target = leaf_max + 1;
        if leaf.is_dead() {
            self.root.restarted();
            return None;
        }
        let (mut d, mut cmax) = (self.depth - 1, leaf_max);
        let up = loop {
            d = d.checked_sub(1)?;
            let mut lvl = *self.at(d);
            if lvl.node.is_dead() {
                self.root.restarted();
                return None;
            }
            if cmax < lvl.max {
                lvl.offset += 1;
                self.at_mut(d).offset = lvl.offset;
                break lvl;
            }
            cmax = lvl.max;
        };
        let Some((mut n, mut max)) = up.node.child_and_max(up.offset, up.max) else {
            self.root.restarted();
            return None;
        };
        if max < target {
            return None;
        }
        // The node after `n` is where the next climb goes: ask for it now, a parent's leaves
        // ahead, if it is far (an RCU-built tree's parents are copies, far from their leaves).
        up.node.prefetch_child(up.offset + 1, leaf);
        loop {
            d += 1;
            self.set(
                d,
                Level {
                    node: n,
                    min: target,
                    max,
                    offset: 0,
                },
            );
            if n.is_leaf() {
                self.depth = d + 1;
                return Some(());
            }
            let Some((c, hi)) = n.child_and_max(0, max) else {
                self.root.restarted();
                return None;
            };
            (n, max) = (c, hi);
        }
    }

    /// Moves to the previous slot (NULL ranges included). `None` before index 0
    /// (`mas_prev_slot`).
    pub(crate) fn prev_slot(&mut self) -> Option<()> {
        if self.depth == 0 || self.lo == 0 {
            return None;
        }
        let leaf = *self.at(self.depth - 1);
        if self.lo > leaf.min {
            self.prev_in_leaf(leaf);
            return Some(());
        }
        self.prev_leaf(leaf)
    }

    /// [`prev_slot`](Self::prev_slot) inside the leaf: the slot before the current one.
    #[inline]
    fn prev_in_leaf(&mut self, leaf: Level<'g, A, E>) {
        let i = leaf.offset - 1;
        let lo = if i == 0 {
            leaf.min
        } else {
            leaf.node.pivot(i - 1) + 1
        };
        let s = leaf.node.leaf_word(i);
        self.at_mut(self.depth - 1).offset = i;
        self.hi = self.lo - 1;
        self.lo = lo;
        self.word = s;
    }

    /// [`prev_slot`](Self::prev_slot) across a leaf boundary: [`cross_prev`](Self::cross_prev),
    /// or a walk from the root when it fails.
    fn prev_leaf(&mut self, leaf: Level<'g, A, E>) -> Option<()> {
        let target = self.lo - 1;
        let Some((lo, word)) = self.cross_prev(leaf.node, leaf.min) else {
            return self.walk(target);
        };
        self.lo = lo;
        self.hi = target;
        self.word = word;
        Some(())
    }

    /// The leaf crossing backwards (`mas_prev_node`), shared by this walker and the iterator's
    /// back: from leaf `leaf`, level `depth - 1`, which starts at `leaf_min` (above 0): the leaf
    /// alive; up to the first ancestor, alive, with a child before the one on the path, its
    /// offset moved to that child; down that child's last slots to a leaf (each node's end
    /// derived from its pivots in order, each child slot non-empty), the levels written (offset:
    /// the end, each ending at `leaf_min - 1`) and the leaf the path's last. Returns the start
    /// and the word of that leaf's last slot. The levels above the leaf must be current; the
    /// leaf's own level is not read. `None` when the caller must walk from the root instead: at
    /// a dead node or an empty child slot (counted as a restart), or before the root's first
    /// child (a state only a race produces).
    pub(crate) fn cross_prev(
        &mut self,
        leaf: NodeRef<'g, A, E>,
        leaf_min: u64,
    ) -> Option<(u64, Loaded<'g, E>)> {
        let max = leaf_min - 1;
        if leaf.is_dead() {
            self.root.restarted();
            return None;
        }
        let (mut d, mut cmin) = (self.depth - 1, leaf_min);
        loop {
            d = d.checked_sub(1)?;
            let lvl = *self.at(d);
            if lvl.node.is_dead() {
                self.root.restarted();
                return None;
            }
            if cmin > lvl.min {
                let i = lvl.offset - 1;
                self.at_mut(d).offset = i;
                let min = lvl.node.slot_min(i, lvl.min);
                let Some(c) = lvl.node.try_child(i, self.internal()) else {
                    self.root.restarted();
                    return None;
                };
                // The node before `c`, where the next climb goes, if it is far (see
                // `cross_next`).
                if i > 0 {
                    lvl.node.prefetch_child(i - 1, leaf);
                }
                return self.descend_rightmost(d + 1, c, min, max);
            }
            cmin = lvl.min;
        }
    }

    /// Descends from `n` (level `d` of the path, covering `[min, max]`) to its rightmost leaf,
    /// which becomes the path's last; returns the start and the word of that leaf's last slot,
    /// which ends at `max` (`None` at an empty child slot, counted as a restart).
    fn descend_rightmost(
        &mut self,
        mut d: usize,
        mut n: NodeRef<'g, A, E>,
        mut min: u64,
        max: u64,
    ) -> Option<(u64, Loaded<'g, E>)> {
        loop {
            let end = if n.is_leaf() {
                leaf_end(n, max)
            } else {
                n.end(max)
            };
            let lo = n.slot_min(end, min);
            self.set(
                d,
                Level {
                    node: n,
                    min,
                    max,
                    offset: end,
                },
            );
            if n.is_leaf() {
                self.depth = d + 1;
                return Some((lo, n.leaf_word(end)));
            }
            let Some(c) = n.try_child(end, self.internal()) else {
                self.root.restarted();
                return None;
            };
            (n, min, d) = (c, lo, d + 1);
        }
    }
}

/// `NodeRef::end` of leaf `n` (whose max is `max`): the same loads, in the same order, without
/// the kind dispatch, two pivots per test (the larger of the two at or above `max` means one
/// of them is: the first of them then ends the leaf). The pivot after the end is loaded with
/// it at times: a word beyond the end, read and then ignored.
#[inline(always)]
pub(crate) fn leaf_end<A: Access, E>(n: NodeRef<'_, A, E>, max: u64) -> usize {
    debug_assert!(n.is_leaf());
    let mut i = 0;
    while i + 1 < RANGE_PIVOTS {
        let (a, b) = (n.range_pivot(i), n.range_pivot(i + 1));
        if a.max(b) >= max {
            return if a >= max { i } else { i + 1 };
        }
        i += 2;
    }
    if n.range_pivot(RANGE_PIVOTS - 1) >= max {
        RANGE_PIVOTS - 1
    } else {
        RANGE_PIVOTS
    }
}

/// The writer's walks: saving a path between writes and starting from a saved one.
impl<'g> Walker<'g, Write> {
    /// Saves the current path into `to`, for [`restore`](Self::restore) by a later write; an
    /// empty path when not positioned or deeper than a saved path holds.
    pub(crate) fn save<M: Mode, B>(&self, writer: WriterRoot<'g, M, B>, to: &mut SavedPath) {
        if self.depth == 0 || self.depth > SAVED_DEPTH {
            to.nodes.clear();
            return;
        }
        let path = self.path();
        for (d, l) in path.iter().enumerate() {
            to.levels[d] = (l.min, l.max, l.offset);
        }
        writer.save_nodes(path.iter().map(|l| l.node), &mut to.nodes);
    }

    /// Positions at the slot containing `index` through a saved path instead of a walk, if
    /// `index` lies in the saved leaf's range; `false` (nothing changed) otherwise. The slot is
    /// searched from the saved leaf offset forward (in-order appends land at or after it).
    ///
    /// `p` should have been saved from a walker of this tree, with the tree's structure
    /// unchanged since (the writer drops its saved path at the start of every write that can
    /// change it). Soundness does not rest on that: the node layer hands the saved nodes back
    /// only if no node of the tree has been retired since they were saved ([`SavedNodes`]).
    pub(crate) fn restore<M: Mode, B>(
        &mut self,
        writer: WriterRoot<'g, M, B>,
        p: &mut SavedPath,
        index: u64,
    ) -> bool {
        let len = p.nodes.len();
        if len == 0 {
            return false;
        }
        let (min, max, off) = p.levels[len - 1];
        if index < min || index > max {
            return false;
        }
        let Some(nodes) = writer.saved_nodes(&p.nodes) else {
            return false;
        };
        self.levels.set_prefix(
            nodes
                .zip(&p.levels[..len])
                .map(|(node, &(min, max, offset))| Level {
                    node,
                    min,
                    max,
                    offset,
                }),
        );
        let leaf = self.at(len - 1).node;
        if !leaf.is_leaf() {
            return false;
        }
        let (mut i, mut lo) = (off, min);
        if off > 0 {
            lo = leaf.pivot(off - 1) + 1;
            if index < lo {
                (i, lo) = (0, min);
            }
        }
        loop {
            let hi = leaf.slot_max(i, max);
            if hi >= index {
                self.at_mut(len - 1).offset = i;
                self.depth = len;
                self.lo = lo;
                self.hi = hi;
                self.word = leaf.leaf_word(i);
                p.restored = true;
                return true;
            }
            lo = hi + 1;
            i += 1;
        }
    }
}
