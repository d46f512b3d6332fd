//! Loom models of one reader across **several consecutive writes**, and of the write paths the
//! single-write models (`tests/models.rs`) do not reach. Each model pre-fills the tree, then the
//! writer (the main thread) makes its writes one after another, each through its own `lock()`
//! (RCU mode), while one spawned reader, under **one guard**, loads the probed indices and then
//! iterates forward and backward. The reader checks its answers against the sequence of states
//! `s0..sn` the writes pass through (see `Sequence` in the support library): a point load returns
//! the index's entry in a state it may still be in, an iteration yields strictly increasing,
//! non-overlapping ranges, each a range of one of those states, and every range that stayed the
//! same in all of them. A one-execution check first asserts each write's path (`stats`), the
//! height, `validate` and the contents, so a model cannot silently race the wrong path.
//!
//! The `append_split_then_*` models are the reproducers of the in-place append over a truncated leaf: they fail on the code
//! where a truncated leaf is written in place again while a reader may still hold its old bound.
//!
//! The two models with large pre-fills (depth 3) iterate over `range(first, MAX)` around the
//! write only, which keeps their interleavings in CI's budget.
//!
//! Shapes (16-slot leaves): `spaced(n)` is `[10 i, 10 i + 4] = i + 1`; `wide(8)` is the issue's
//! `[10 i, 10 i + 5] = i + 1`, a full root leaf whose last range is the NULL `[76, MAX]`;
//! `gap_first(8)` is a full root leaf `[nil][e]...[nil][e]` whose last range is the entry
//! `[75, MAX] = 8`, so the append split keeps only 14 slots and the truncated leaf has room for a
//! three-way append.

#![cfg(loom)]

use maple_tree_loom_tests::{spaced, Op, Sequence};

const MAX: u64 = u64::MAX;

/// The shape: `[10 i, 10 i + 5] = i + 1` for `i` in `0..n`.
fn wide(n: u64) -> Vec<Op> {
    (0..n)
        .map(|i| Op::Store(10 * i, 10 * i + 5, i + 1))
        .collect()
}

/// `[10 i + 5, 10 i + 9] = i + 1` for `i` in `0..n - 1`, then `[10 (n - 1) + 5, MAX] = n`.
fn gap_first(n: u64) -> Vec<Op> {
    (0..n)
        .map(|i| {
            let last = if i + 1 == n { MAX } else { 10 * i + 9 };
            Op::Store(10 * i + 5, last, i + 1)
        })
        .collect()
}

/// Sets the retire batch (`loom_knobs::set_retire_batch`) for one model, back to 1 when dropped.
struct RetireBatch;

impl RetireBatch {
    fn of(n: usize) -> RetireBatch {
        maple_tree::loom_knobs::set_retire_batch(n);
        RetireBatch
    }
}

impl Drop for RetireBatch {
    fn drop(&mut self) {
        maple_tree::loom_knobs::set_retire_batch(1);
    }
}

fn with(mut ops: Vec<Op>, more: &[Op]) -> Vec<Op> {
    ops.extend_from_slice(more);
    ops
}

/// The path of an append into a leaf the append split truncated, once such a leaf is sealed
/// until a grace period has passed (the fix): a copy-on-write node store.
const SEALED: &[(&str, u64)] = &[("node_store", 1), ("sealed_extend", 1)];

const APPEND_SPLIT_GROW: &[(&str, u64)] = &[("split", 1), ("append_split", 1), ("grow", 1)];

// ---- across two and three writes ---------------------------------------------------------------

/// The truncated-leaf reproducer: append split of the full root leaf (`[80, 85]`: the leaf is truncated
/// at 75 by the new root, `[76, MAX]` moves on), then a `+1` append at the end of the truncated
/// leaf (`[73, 75]` over the end of `[70, 75]`), which writes slot 15, beyond its new end: a
/// reader that read the old bound `MAX` sees `[73, MAX] = 101` and skips `[80, 85]`.
#[test]
fn append_split_then_append_end() {
    Sequence::new(wide(8), 1)
        .then(Op::Store(80, 85, 100), 2, APPEND_SPLIT_GROW)
        .then(Op::Store(73, 75, 101), 2, &[("append_end", 1)])
        .or_paths(SEALED)
        .probes(&[76, 80, 1000])
        .check_all();
}

/// The same in an allocation tree (10-slot gap-tracking root).
#[test]
fn append_split_then_append_end_alloc() {
    Sequence::new(wide(8), 1)
        .alloc_tree()
        .then(Op::Store(80, 85, 100), 2, APPEND_SPLIT_GROW)
        .then(Op::Store(73, 75, 101), 2, &[("append_end", 1)])
        .or_paths(SEALED)
        .probes(&[76, 80, 1000])
        .check_all();
}

/// Append split of a full leaf ending in the entry `[75, MAX]` (`[80, 84]` inside it: the leaf
/// keeps 14 slots, up to `[65, 69] = 7`), then a three-way append inside the truncated leaf's
/// last range (`[66, 67]`), written into slots 14 and 15 beyond its new end.
#[test]
fn append_split_then_three_way() {
    Sequence::new(gap_first(8), 1)
        .then(Op::Store(80, 84, 100), 2, APPEND_SPLIT_GROW)
        .then(Op::Store(66, 67, 101), 2, &[("append_three_way", 1)])
        .or_paths(SEALED)
        .probes(&[68, 75, 80, 1000])
        .check_all();
}

/// Three writes: append split, `+1` append into the truncated leaf, then a three-way append
/// into the new right leaf (`[90, 95]` inside `[86, MAX]`).
#[test]
fn append_split_then_append_end_then_three_way() {
    Sequence::new(wide(8), 1)
        .then(Op::Store(80, 85, 100), 2, APPEND_SPLIT_GROW)
        .then(Op::Store(73, 75, 101), 2, &[("append_end", 1)])
        .or_paths(SEALED)
        .then(Op::Store(90, 95, 102), 2, &[("append_three_way", 1)])
        .probes(&[76, 90, 1000])
        .check_all();
}

/// Append split, then an exact fit in the truncated (left) half (`[60, 64]` replaced).
#[test]
fn append_split_then_exact_fit_left() {
    Sequence::new(spaced(8), 1)
        .then(Op::Store(80, 84, 100), 2, APPEND_SPLIT_GROW)
        .then(Op::Store(60, 64, 101), 2, &[("exact_fit", 1)])
        .probes(&[60, 75, 80])
        .check_all();
}

/// A `+1` append lowers the end pivot of a leaf (`[16, MAX]` becomes `[16, 16]`, `[17, MAX] =
/// 100` is published beyond it), then an exact fit re-points the slot that pivot bounds (`[16,
/// 16] = 101`). A reader that loaded the old pivot (`MAX`) before the append and the slot after
/// the exact fit would return 101 for index 18, which never held it: the lowered pivot seals the
/// slot until a grace period has passed, and the exact fit becomes a copy-on-write node store.
#[test]
fn append_end_then_exact_fit_of_the_lowered_slot() {
    Sequence::new(vec![Op::Store(10, 15, 1)], 1)
        .then(Op::Store(17, MAX, 100), 1, &[("append_end", 1)])
        .then(Op::Store(16, 16, 101), 1, &[("exact_fit", 1)])
        .or_paths(&[("node_store", 1), ("sealed_repoint", 1)])
        .probes(&[16, 18, 1000])
        .check_all();
}

/// The same with a three-way append: `[20, 25] = 100` inside `[16, MAX]` lowers that slot's
/// pivot to 19; then `[16, 19]` is re-pointed by an exact fit.
#[test]
fn three_way_then_exact_fit_of_the_lowered_slot() {
    Sequence::new(vec![Op::Store(10, 15, 1)], 1)
        .then(Op::Store(20, 25, 100), 1, &[("append_three_way", 1)])
        .then(Op::Store(16, 19, 101), 1, &[("exact_fit", 1)])
        .or_paths(&[("node_store", 1), ("sealed_repoint", 1)])
        .probes(&[17, 22, 1000])
        .check_all();
}

/// The append split of the right leaf of a two-level tree lowers the root's pivot in place (the
/// root gains the new leaf by a `+1` append); then a write into the truncated leaf is a
/// copy-on-write node store, whose new leaf would be published in the root slot that lowered
/// pivot bounds. A reader that loaded the old pivot (`MAX`) and then the new leaf would walk it
/// with a max it never had, past its end. The sealed slot makes the writer copy the root instead
/// (`sealed_copy`), so the reader sees the old root and leaf, or the new ones.
#[test]
fn append_split_then_node_store_under_the_lowered_pivot() {
    let mut pre = spaced(15);
    pre.push(Op::Store(150, MAX, 16));
    Sequence::new(pre, 2)
        .then(
            Op::Store(160, MAX, 100),
            2,
            &[("split", 1), ("append_split", 1)],
        )
        .then(Op::Store(141, 142, 101), 2, &[("append_three_way", 1)])
        .or_paths(&[("node_store", 1), ("sealed_copy", 1), ("sealed_extend", 1)])
        .probes(&[142, 150, 1000])
        .span(130, MAX)
        .check_all();
}

/// Append split, then an exact fit in the new (right) half (`[80, 84]` replaced).
#[test]
fn append_split_then_exact_fit_right() {
    Sequence::new(spaced(8), 1)
        .then(Op::Store(80, 84, 100), 2, APPEND_SPLIT_GROW)
        .then(Op::Store(80, 84, 101), 2, &[("exact_fit", 1)])
        .probes(&[75, 80, 1000])
        .check_all();
}

/// Rebalance (the left leaf under minimum occupancy merges with its neighbour and the root
/// collapses onto the merged leaf), then a `+1` append at the end of the merged leaf.
#[test]
fn rebalance_then_append_end() {
    let pre = with(
        spaced(12),
        &[
            Op::EraseRange(10, 14),
            Op::EraseRange(30, 34),
            Op::EraseRange(50, 54),
            Op::EraseRange(60, 64),
        ],
    );
    Sequence::new(pre, 2)
        .then(Op::Erase(40), 1, &[("rebalance", 1), ("shrink", 1)])
        .then(Op::Store(120, MAX, 100), 1, &[("append_end", 1)])
        .probes(&[40, 119, 120])
        .check_all();
}

/// Erase of the only entry (the tree becomes empty, height 0), then the first store into the
/// empty tree (a new root leaf).
#[test]
fn erase_to_empty_then_first_store() {
    Sequence::new(spaced(1), 1)
        .then(Op::Erase(0), 0, &[("node_store", 1)])
        .then(Op::Store(5, 9, 100), 1, &[("new_root", 1)])
        .probes(&[0, 5])
        .check_all();
}

/// Spanning store across the two leaves, then a `+1` append at the end of the new right leaf.
#[test]
fn spanning_store_then_append_end() {
    Sequence::new(spaced(12), 2)
        .then(
            Op::Store(62, 82, 100),
            2,
            &[("split", 1), ("spanning_store", 1)],
        )
        .then(Op::Store(120, MAX, 101), 2, &[("append_end", 1)])
        .probes(&[70, 119, 120])
        .check_all();
}

/// Node store of the root leaf (`[12, 22]`), then a slot store in the new leaf (`[23, 26]` moves
/// the boundary between `[12, 22]`'s trailing NULL and `[20..]`: a node store again under
/// readers).
#[test]
fn node_store_then_slot_store() {
    two_node_stores().check_all();
}

fn two_node_stores() -> Sequence {
    Sequence::new(spaced(3), 1)
        .then(Op::Store(12, 22, 100), 1, &[("node_store", 1)])
        .then(Op::Store(23, 26, 101), 1, &[("node_store", 1)])
        .probes(&[15, 23, 27])
}

/// The same two node stores with retired nodes handed to the collector two at a time (release
/// builds queue 32): the first write's replaced leaf waits in the writer's queue, the second
/// write hands both leaves on in one deferred free, while the reader may still be in either.
#[test]
fn node_store_then_slot_store_batched() {
    let _b = RetireBatch::of(2);
    two_node_stores().check_all();
}

/// Leaf split then a node store in the left leaf, retired nodes handed on three at a time:
/// the split's leaf and root wait for the node store's leaf, and the three go together.
#[test]
fn leaf_split_then_node_store_batched() {
    let _b = RetireBatch::of(3);
    Sequence::new(spaced(12), 2)
        .then(
            Op::Store(16, 17, 100),
            2,
            &[("split", 1), ("leaf_split", 1)],
        )
        .then(Op::Store(12, 13, 101), 2, &[("node_store", 1)])
        .probes(&[12, 16])
        .check_all();
}

/// `dup_mmap`'s loop: one `CursorMut` finds each entry and replaces it through its cached walker
/// (two exact fits under one lock acquisition, the second without a new walk).
#[test]
fn cursor_rewrite_cached_walker() {
    Sequence::new(spaced(3), 1)
        .then(
            Op::CursorRewrite {
                from: 0,
                count: 2,
                val: 100,
            },
            1,
            &[("exact_fit", 2)],
        )
        .probes(&[0, 10, 20])
        .check_all();
}

// ---- write paths without a single-write model -----------------------------------------------------

/// The leaf fill when the parent is full: an allocation tree of height 2 whose root holds 10
/// leaves (full), the rightmost leaf with one free slot; the three-way append cannot fill by
/// copy-on-write of the leaf and its parent (no room in the parent), so the generic rebuild packs
/// the leaf full, splits the root and grows a new root above (height 3), published by the root
/// pointer.
#[test]
fn append_fill_full_parent() {
    maple_tree_loom_tests::append_fill_full_parent().check_all();
}

/// The append split's climb when the parent is full: an allocation tree of height 2 built of
/// adjacent ranges, whose root holds 10 leaves (full), the rightmost leaf full; the append
/// truncates the leaf, the full root keeps all its children and shrinks (its last child's new
/// max), the new leaf goes into a new node, and a new root grows above both (height 3).
#[test]
fn append_split_climb_full_parent() {
    maple_tree_loom_tests::append_split_climb_full_parent().check_all();
}

/// The copy-on-write leaf fill at depth 3: an allocation tree of height 3, rightmost leaf with
/// one free slot; a new leaf pair and a new parent, published by one Release store of the
/// parent's slot in the root.
#[test]
fn append_fill_cow_depth3() {
    Sequence::new(spaced(87), 3)
        .alloc_tree()
        .then(
            Op::Store(870, 874, 100),
            3,
            &[("split", 1), ("append_split", 1), ("append_fill", 1)],
        )
        .probes(&[864, 869, 870, 875])
        .span(855, MAX)
        .check_all();
}

/// `CursorMut::store` through the cached walker: walk to `[10, 14]`, store over it (exact fit).
#[test]
fn cursor_store_cached_walker() {
    Sequence::new(spaced(3), 1)
        .then(Op::CursorStore(10, 14, 100), 1, &[("exact_fit", 1)])
        .probes(&[10, 14])
        .check_all();
}

/// `CursorMut::erase` of `[10, 14]`: its NULL merges with both neighbours (node store).
#[test]
fn cursor_erase() {
    Sequence::new(spaced(3), 1)
        .then(Op::CursorErase(12), 1, &[("node_store", 1)])
        .probes(&[5, 10, 15])
        .check_all();
}

/// `preallocate` + `store_prealloc` of `[30, 34]`: a three-way append inside `[25, MAX]`.
#[test]
fn cursor_store_prealloc() {
    Sequence::new(spaced(3), 1)
        .then(
            Op::CursorPrealloc(30, 34, 100),
            1,
            &[("append_three_way", 1)],
        )
        .probes(&[29, 30, 35])
        .check_all();
}

/// `clear()` of a two-level tree: the root word is emptied, every node retired.
#[test]
fn clear_two_levels() {
    Sequence::new(spaced(12), 2)
        .then(Op::Clear, 0, &[])
        .probes(&[0, 80])
        .check_all();
}

/// Erase of everything (`erase_range(..)`): the whole-space NULL store empties the tree.
#[test]
fn erase_to_empty() {
    Sequence::new(spaced(3), 1)
        .then(Op::EraseRange(0, MAX), 0, &[("new_root", 1)])
        .probes(&[0, 20])
        .check_all();
}

/// The first store into an empty tree: a new root leaf published by the root pointer.
#[test]
fn first_store_empty_tree() {
    Sequence::new(vec![], 0)
        .then(Op::Store(5, 9, 100), 1, &[("new_root", 1)])
        .probes(&[4, 5, 10])
        .check_all();
}

/// A whole-space store `[0, MAX]` over a root leaf: a new root leaf of one slot.
#[test]
fn whole_space_store() {
    Sequence::new(spaced(3), 1)
        .then(Op::Store(0, MAX, 100), 1, &[("new_root", 1)])
        .probes(&[0, 15, 30])
        .check_all();
}

/// `alloc_cyclic` from `next = 30` in an allocation tree: the lowest free index at or above 30
/// is 30, inside the trailing NULL `[25, MAX]` (a three-way append).
#[test]
fn alloc_cyclic() {
    Sequence::new(spaced(3), 1)
        .alloc_tree()
        .then(
            Op::AllocCyclic {
                val: 100,
                lo: 0,
                hi: MAX,
                next: 30,
                at: 30,
            },
            1,
            &[("append_three_way", 1)],
        )
        .probes(&[29, 30, 31])
        .check_all();
}

/// `alloc_cyclic` from `next = 11`: the first free index is 15, inside the NULL `[15, 19]`
/// between two entries (a node store under readers).
#[test]
fn alloc_cyclic_between() {
    Sequence::new(spaced(3), 1)
        .alloc_tree()
        .then(
            Op::AllocCyclic {
                val: 100,
                lo: 0,
                hi: MAX,
                next: 11,
                at: 15,
            },
            1,
            &[("node_store", 1)],
        )
        .probes(&[14, 15, 16])
        .check_all();
}
