//! The split of a level (`mas_split`, and the kernel's bulk/rightmost packing): a level's items
//! that overflow one node are partitioned into node-sized parts, each written into a fresh node;
//! and the direct split of one leaf (`wr_leaf_split`: the same parts as the rebuild's at every
//! level it climbs, without its buffers; in exclusive mode the left ones rewritten where they
//! were).

use smallvec::SmallVec;

use core::ops::Range;

use crate::entry::{Entry, Word};

use super::big_node::{Item, Items, LeafWrite};
use super::gaps;
use super::rebuild::Rebuild;
use super::WriteMode;
use super::Writer;
use crate::tree::node::Write;
use crate::tree::node::{Exclusive, Fresh, Kind, Live, RANGE_PIVOTS, RANGE_SLOTS};
use crate::tree::walk::{Level, Walker};

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// Partitions the level's items into fresh nodes (a split if more than one); pushes them
    /// onto `new_items` (empty), the items of the parent level's run.
    pub(crate) fn split_level(&mut self, rb: &mut Rebuild<'t, '_>, new_items: &mut Items<'t>) {
        let parts = partition(
            rb.items,
            rb.kind,
            rb.run_max == u64::MAX,
            rb.entry_pos,
            rb.level == rb.leaf_level,
        );
        if parts.len() > 1 {
            rb.split = true;
        }
        let mut lo = rb.run_min;
        for &(a, b) in &parts {
            let hi = rb.items.get(b - 1).hi;
            let n = self.alloc_node(rb.kind);
            let part = &rb.items.as_slice()[a..b];
            self.write_items(&n, part, hi);
            let g = self.items_gap(rb.kind, part, lo);
            new_items.push(Item::fresh(hi, n, g));
            lo = hi.wrapping_add(1);
        }
    }
}

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// The split of the leaf of `lw` by the write `l` (`mas_split`), without the rebuild's
    /// buffers: the leaf's items after the write are partitioned as the rebuild would partition
    /// them ([`partition`]), the right part goes into one fresh leaf, and the parent gains it
    /// after the left part. A full parent is split the same way and its new node climbs; a
    /// full root grows a new root above its two parts. The tree it leaves is the rebuild's,
    /// node for node.
    ///
    /// In exclusive mode (no reader) everything is in place: each left part is rewritten where
    /// it was (the leaf from the write's first slot on), and the ancestor with room moves its
    /// later slots right by one, their children re-parented. Under readers every node it
    /// changes is a fresh one (each left part too, and a copy of the ancestor with room, with
    /// the new child in it), published by one store of the slot above (`replace_child`) or of
    /// the root, the nodes they replace retired: readers see the old subtree or the new one.
    ///
    /// `false`, with nothing written, where the rebuild is needed: an ancestor with room the
    /// rebuild would pull a neighbour into, or leaf items that do not cut in two (or the split
    /// turned off: `MapleTree::set_leaf_split`, with the `bench-internals` feature).
    // Out of line: inlined, it made the store's other paths dearer (erases through the lock
    // +45 instructions each) for a call it saves once per split.
    #[inline(never)]
    pub(crate) fn wr_leaf_split(&mut self, lw: &Walker<'t, Write>, l: &LeafWrite) -> bool {
        if !self.st.leaf_split {
            return false;
        }
        let path = lw.path();
        let leaf = path[lw.depth - 1];
        let Some(top) = split_top(&path[..lw.depth - 1]) else {
            return false;
        };
        let items = LeafItems::new(l);
        let n = items.len;
        // The rebuild's `fix_leaf_level` has nothing to do here: no two ranges of the tree are
        // adjacent NULLs (`validate`), the leaf store widened a NULL write over its NULL
        // neighbours, and a NULL write reaching the max of a leaf that is not the rightmost
        // went to the rebuild (`ends_in_null`).
        debug_assert!((1..n).all(|i| items.ws[i - 1] != 0 || items.ws[i] != 0));
        debug_assert!(items.ws[n - 1] != 0 || leaf.max == u64::MAX);
        let entry_pos = l.off + usize::from(l.r_min < l.first);
        let null_at = |b: usize| items.ws[b - 1] == 0;
        let right_edge = leaf.max == u64::MAX;
        let Some(b) = split_point(n, right_edge, entry_pos, null_at) else {
            return false;
        };
        debug_assert_eq!(
            partition_by(n, Kind::Leaf, right_edge, entry_pos, null_at)[..],
            [(0, b), (b, n)]
        );
        self.release_replaced(l);
        let left_hi = items.his[b - 1];
        let new = self.alloc_node(Kind::Leaf);
        items.put::<E>(new.node(), b..n, 0);
        let (left_gap, new_gap) = if self.is_alloc() {
            (
                gaps::slots_max_gap(&items.his[..b], &items.ws[..b], leaf.min),
                gaps::slots_max_gap(&items.his[b..n], &items.ws[b..n], left_hi + 1),
            )
        } else {
            (0, 0)
        };
        let left = if M::EXCLUSIVE {
            // In place: the slots before the write's first one are unchanged.
            let node = leaf.node;
            items.put::<E>(node, l.off.min(b)..b, l.off.min(b));
            node.clear_slots(b..l.end + 1);
            None
        } else {
            let fresh = self.alloc_node(Kind::Leaf);
            items.put::<E>(fresh.node(), 0..b, 0);
            Some(fresh)
        };
        let mut up = Split {
            left,
            left_hi,
            left_gap,
            new,
            new_gap,
        };
        // The full levels above split in turn, the lowest first; under readers the nodes they
        // replace are retired once the new ones are published.
        let mut replaced: SmallVec<[Live<'t>; 4]> = SmallVec::new();
        replaced.push(leaf.node);
        let full_from = top.map_or(0, |(d, _)| d + 1);
        for &p in path[full_from..lw.depth - 1].iter().rev() {
            up = self.split_internal(p, up);
            replaced.push(p.node);
        }
        match top {
            Some((d, end)) => {
                if let Some(x) = M::exclusive(self) {
                    x.insert_split(&path[..=d], end, up);
                } else {
                    // A copy of the ancestor with room, published in its place (which retires
                    // it).
                    let p = path[d];
                    let kind = p.node.kind();
                    let items = self.items_with_split(p, up);
                    let copy = self.alloc_node(kind);
                    self.write_items(&copy, &items, p.max);
                    let g = self.items_gap(kind, &items, p.min);
                    self.replace_child(&path[..d], copy, g);
                }
            }
            None => {
                let root = path[0].node;
                let left = up.left_item(root);
                self.grow_root(&[left, Item::fresh(u64::MAX, up.new, up.new_gap)]);
            }
        }
        if !M::EXCLUSIVE {
            for n in replaced {
                self.retire_node(n);
            }
        }
        self.st.stats.split += 1;
        self.st.stats.leaf_split += 1;
        true
    }

    /// The children of the internal node of `p` with its child `p.offset` split: the left part
    /// (`up.left`, or that child itself when split in place) ending at `up.left_hi`, then
    /// `up.new`.
    fn items_with_split(
        &self,
        p: Level<'t, Write>,
        up: Split<'t>,
    ) -> SmallVec<[Item<'t>; RANGE_SLOTS + 1]> {
        let (x, o) = (p.node, p.offset);
        let mut items = SmallVec::new();
        let mut up = Some(up);
        for (i, (_, hi, slot)) in x.slots(p.min, p.max, self.internal).enumerate() {
            if i == o {
                let mut up = up.take().expect("one slot is the split child's");
                items.push(up.left_item(slot.child()));
                items.push(Item::fresh(hi, up.new, up.new_gap));
            } else {
                let gap = self.child_gap(x, i);
                items.push(Item { hi, slot, gap });
            }
        }
        items
    }

    /// The full internal node of `p` split, its child `p.offset` split below
    /// ([`items_with_split`](Self::items_with_split)): its children are cut as the rebuild cuts
    /// them ([`partition`]); the left part is rewritten in place (exclusive mode) or written
    /// into a fresh node, the right part into a fresh node (its children re-parented there),
    /// which climbs.
    fn split_internal(&mut self, p: Level<'t, Write>, up: Split<'t>) -> Split<'t> {
        let x = p.node;
        let kind = x.kind();
        let items = self.items_with_split(p, up);
        let n = items.len();
        let parts = partition_by(n, kind, p.max == u64::MAX, p.offset, |_| false);
        let [(_, b), _] = parts[..] else {
            unreachable!("one node and one child more cut in two");
        };
        let (left, right) = items.split_at(b);
        let left_hi = left[b - 1].hi;
        let y = self.alloc_node(kind);
        self.write_items(&y, right, p.max);
        let fresh = if M::EXCLUSIVE {
            self.put_items(x, 0, left);
            x.clear_slots(b..n - 1);
            None
        } else {
            let f = self.alloc_node(kind);
            self.write_items(&f, left, left_hi);
            Some(f)
        };
        Split {
            left: fresh,
            left_hi,
            left_gap: self.items_gap(kind, left, p.min),
            new: y,
            new_gap: self.items_gap(kind, right, left_hi + 1),
        }
    }

    /// Exclusive mode: the parent `p` (last child `end`, room for one more) gains `up.new`
    /// right after its child `p.offset`, which now ends at `up.left_hi`: the later slots,
    /// pivots and gaps move right by one, in place, and their children are re-parented at
    /// their new offsets.
    fn insert_child_after(&self, p: Level<'t, Write>, end: usize, up: Split<'t>) {
        let (n, o) = (p.node, p.offset);
        let kind = n.kind();
        let (pivots, alloc) = (kind.pivots(), kind == Kind::ARange);
        for i in (o..=end).rev() {
            if i + 1 < pivots {
                n.init_pivot(i + 1, n.slot_max(i, p.max));
            }
            if i == o {
                break;
            }
            if alloc {
                gaps::shift_gap(n, i);
            }
            n.init_child(i + 1, n.child(i, kind));
        }
        if alloc {
            gaps::put_gap(n, o + 1, up.new_gap);
            gaps::put_gap(n, o, up.left_gap);
        }
        n.init_child(o + 1, up.new.into_child());
        n.init_pivot(o, up.left_hi);
    }
}

/// A node split: its left part (`left`, fresh; `None`: the node itself, rewritten in place)
/// ends at `left_hi` (its largest gap `left_gap`), and `new` (largest gap `new_gap`) follows it
/// with the rest.
struct Split<'t> {
    left: Option<Fresh<'t>>,
    left_hi: u64,
    left_gap: u64,
    new: Fresh<'t>,
    new_gap: u64,
}

impl<'t> Split<'t> {
    /// The item of the left part: the fresh node, or `node` (the split node) itself.
    fn left_item(&mut self, node: Live<'t>) -> Item<'t> {
        match self.left.take() {
            Some(f) => Item::fresh(self.left_hi, f, self.left_gap),
            None => Item::child(self.left_hi, node, self.left_gap),
        }
    }
}

/// Where the split of the leaf below `ancestors` (root first, ending at its parent)
/// stops climbing: `Some((d, end))` for the lowest ancestor with room (index `d`, last child
/// `end`), `None` when every ancestor is full (the root grows). `None` overall (the rebuild's
/// case) when the ancestor with room is one the rebuild's `fix_internal_level` would pull a
/// neighbour into (below minimum occupancy with its new child, not on the right edge, not the
/// root).
fn split_top(ancestors: &[Level<'_, Write>]) -> Option<Option<(usize, usize)>> {
    for (d, p) in ancestors.iter().enumerate().rev() {
        let kind = p.node.kind();
        let end = p.node.end(p.max);
        if end + 1 < kind.slots() {
            let fix = end + 2 < kind.min_end() + 1 && p.max != u64::MAX && d > 0;
            return (!fix).then_some(Some((d, end)));
        }
    }
    Some(None)
}

/// The ranges of one leaf after a write inside it (at most two more than its slots), as upper
/// bounds and words: the slots before and after the write as they were, the write's pieces
/// between them.
struct LeafItems {
    his: [u64; RANGE_SLOTS + 2],
    ws: [usize; RANGE_SLOTS + 2],
    len: usize,
}

impl LeafItems {
    #[inline]
    fn new(l: &LeafWrite) -> Self {
        let mut items = LeafItems {
            his: [0; RANGE_SLOTS + 2],
            ws: [0; RANGE_SLOTS + 2],
            len: 0,
        };
        let push = |hi: u64, w: usize| {
            items.his[items.len] = hi;
            items.ws[items.len] = w;
            items.len += 1;
        };
        l.for_each_slot_after(0, push);
        debug_assert_eq!(items.len, l.new_end + 1);
        items
    }

    /// Writes the items of `range` into the leaf `n` from slot `at` on.
    #[inline]
    fn put<E: Entry>(&self, n: Live<'_>, range: Range<usize>, at: usize) {
        for (j, i) in (at..).zip(range) {
            n.init_entry(j, Word::<E>::leaf(self.ws[i]));
            if j < RANGE_PIVOTS {
                n.init_pivot(j, self.his[i]);
            }
        }
    }
}

/// Where [`partition`] cuts `n` leaf items (`n` one or two more than a leaf holds) when it cuts
/// them in two, `None` when it needs three parts: the same packed then balanced bounds, for two
/// parts only.
fn split_point(
    n: usize,
    right_edge: bool,
    entry_pos: usize,
    null_at: impl Fn(usize) -> bool,
) -> Option<usize> {
    let (cap, min) = (Kind::Leaf.slots(), Kind::Leaf.min_end() + 1);
    debug_assert!(n > cap && n <= 2 * cap);
    let valid = |b: usize| b >= min && b <= cap && n - b <= cap && !null_at(b);
    if right_edge && entry_pos + 2 >= n {
        let b = if null_at(cap) { cap - 1 } else { cap };
        if valid(b) {
            return Some(b);
        }
    }
    let mut b = n.div_ceil(2);
    if null_at(b) {
        if b < cap && n - b > min {
            b += 1;
        } else {
            b -= 1;
        }
    }
    valid(b).then_some(b)
}

/// Item ranges `(start, end)` of the nodes a level is partitioned into.
type Parts = SmallVec<[(usize, usize); 8]>;

/// Splits `items` into node-sized parts `[a, b)`. Parts other than the last get at least the
/// minimum occupancy; leaves never end a non-last part on a NULL. When the run is on the right
/// edge and the write lands at its end (in-order appends), parts are packed full from the left,
/// as the kernel's bulk mode did; otherwise they are balanced. If moving a boundary off a NULL
/// would overfill a part, one more part is used.
pub(crate) fn partition(
    items: &Items<'_>,
    kind: Kind,
    right_edge: bool,
    entry_pos: usize,
    leaf: bool,
) -> Parts {
    let null_at = |b: usize| leaf && items.get(b - 1).is_null();
    partition_by(items.len(), kind, right_edge, entry_pos, null_at)
}

/// [`partition`] of `n` items, `null_at(b)` telling whether item `b - 1` is a NULL a part must
/// not end on.
fn partition_by(
    n: usize,
    kind: Kind,
    right_edge: bool,
    entry_pos: usize,
    null_at: impl Fn(usize) -> bool + Copy,
) -> Parts {
    let cap = kind.slots();
    let min = kind.min_end() + 1;
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
        let bounds = packed_bounds(n, cap, null_at);
        if valid(&bounds) {
            return to_parts(&bounds);
        }
    }
    let mut k = n.div_ceil(cap);
    loop {
        let bounds = balanced_bounds(n, k, cap, min, null_at);
        if valid(&bounds) {
            return to_parts(&bounds);
        }
        k += 1;
        assert!(k <= n, "maple tree: cannot partition {n} items");
    }
}

/// Part boundaries of `n` items packed full from the left (`cap` per part), a boundary that
/// would end a part on a NULL moved one left (the kernel's bulk/rightmost packing).
fn packed_bounds(n: usize, cap: usize, null_at: impl Fn(usize) -> bool) -> Bounds {
    let mut bounds: Bounds = smallvec::smallvec![0];
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
    bounds
}

/// Part boundaries of `n` items in `k` balanced parts, boundaries moved off NULLs: right if the
/// right part can spare one, else left.
fn balanced_bounds(
    n: usize,
    k: usize,
    cap: usize,
    min: usize,
    null_at: impl Fn(usize) -> bool,
) -> Bounds {
    let (base, extra) = (n / k, n % k);
    let mut bounds: Bounds = smallvec::smallvec![0];
    let mut b = 0;
    for j in 0..k - 1 {
        b += base + usize::from(j < extra);
        bounds.push(b);
    }
    bounds.push(n);
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
    bounds
}

/// Boundaries `0 = b0 < b1 < ... < n` of the parts of a level.
type Bounds = SmallVec<[usize; 8]>;

/// Exclusive mode only: a child inserted into a node readers could be in.
impl<'t, E: Entry> Writer<'t, E, Exclusive> {
    /// The split's new right part `up` inserted after slot `end`'s child into the ancestor with
    /// room, the last of `path` (root first), in place; the gaps above brought up to date.
    fn insert_split(&mut self, path: &[Level<'t, Write>], end: usize, up: Split<'t>) {
        let d = path.len() - 1;
        let p = path[d];
        self.insert_child_after(p, end, up);
        if self.is_alloc() {
            let g = self.gaps_up_to(p.node, end + 1);
            self.propagate_gap(&path[..d], g);
        }
    }
}
