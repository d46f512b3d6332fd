//! One loom model per write path (the paths of the publication protocol in `src/tree/node.rs`): the
//! tree is pre-filled before the reader is spawned, the writer runs on the main thread (loom
//! explores a spawned writer poorly, loom #392/#166), and one spawned reader checks the observation
//! rules (see the crate docs): point loads of the indices the write touches, then a full forward
//! and a full backward iteration, under one guard. Each test first checks the write's result once,
//! without the reader (path taken, heights, `validate`, contents), then explores every interleaving
//! of the write with the reader within the preemption bound (`LOOM_MAX_PREEMPTIONS`, 2 unless set).
//!
//! Shapes (16-slot leaves): `spaced(3)` is one leaf `[v1][nil][v2][nil][v3][nil..MAX]`;
//! `spaced(8)` fills one leaf (16 slots); `spaced(12)` is two leaves under a root, the left one
//! `[0, 74]` with 15 slots, the right one `[75, MAX]` with 9.

#![cfg(loom)]

use maple_tree_loom_tests::{reclaimed, scenario, spaced, Op, Reads, Scenario, Write};

fn with(mut ops: Vec<Op>, more: &[Op]) -> Vec<Op> {
    ops.extend_from_slice(more);
    ops
}

// ---- in place in RCU mode ----------------------------------------------------------------------

/// Exact fit: one Release store of the slot.
#[test]
fn exact_fit() {
    scenario(
        spaced(3),
        Op::Store(10, 14, 100),
        &[10, 14],
        (1, 1),
        &[("exact_fit", 1)],
    )
    .check_all();
}

/// Exact fit in the left leaf of a two-level tree.
#[test]
fn exact_fit_two_levels() {
    scenario(
        spaced(12),
        Op::Store(70, 74, 100),
        &[70, 74],
        (2, 2),
        &[("exact_fit", 1)],
    )
    .check_all();
}

/// `+1` append at the end: `[25, MAX]` (NULL) becomes `[25, 29]` NULL + `[30, MAX]`; the new slot
/// is written beyond the end, then the old end pivot lowered by one Release store.
#[test]
fn append_end() {
    scenario(
        spaced(3),
        Op::Store(30, u64::MAX, 100),
        &[29, 30],
        (1, 1),
        &[("append_end", 1)],
    )
    .check_all();
}

/// `+1` append at the end of the left leaf of a two-level tree (its last range is `[70, 74]`).
#[test]
fn append_end_two_levels() {
    let pre = with(spaced(12), &[Op::EraseRange(10, 14)]);
    scenario(
        pre,
        Op::Store(72, 74, 100),
        &[71, 72, 75],
        (2, 2),
        &[("append_end", 1)],
    )
    .check_all();
}

/// Three-way append: `[30, 34]` inside the last range `[25, MAX]`: two new slots beyond the end,
/// the old end pivot lowered last.
#[test]
fn append_three_way() {
    scenario(
        spaced(3),
        Op::Store(30, 34, 100),
        &[29, 30, 35],
        (1, 1),
        &[("append_three_way", 1)],
    )
    .check_all();
}

/// Three-way append inside the last range of the left leaf of a two-level tree.
#[test]
fn append_three_way_two_levels() {
    let pre = with(spaced(12), &[Op::EraseRange(10, 14)]);
    scenario(
        pre,
        Op::Store(71, 72, 100),
        &[70, 71, 73],
        (2, 2),
        &[("append_three_way", 1)],
    )
    .check_all();
}

/// Append split of a full root leaf (in-order append): the leaf is kept, truncated by the new
/// root's pivot, and its tail plus the new entry go into one fresh leaf; the new root is published
/// by the root pointer.
#[test]
fn append_split_grow_root() {
    scenario(
        spaced(8),
        Op::Store(80, 84, 100),
        &[70, 75, 80, 85],
        (1, 2),
        &[("split", 1), ("append_split", 1), ("grow", 1)],
    )
    .check_all();
}

/// Append split of the full right leaf of a two-level tree: the leaf is truncated in place (never
/// rewritten), the fresh leaf is appended to the root by the in-place `+1` append (slot and pivot
/// written beyond the root's end, then its old end pivot lowered by one Release store).
#[test]
fn append_split_two_levels() {
    let pre = with(spaced(15), &[Op::Store(150, u64::MAX, 16)]);
    scenario(
        pre,
        Op::Store(160, u64::MAX, 100),
        &[145, 155, 160],
        (2, 2),
        &[("split", 1), ("append_split", 1)],
    )
    .check_all();
}

/// The full right leaf with one free slot (it starts with a gap, so 15 slots are in use) takes a
/// three-way append by copy-on-write: a new leaf with its slots plus the entry as the 16th, a new
/// leaf for the rest of the gap, and a new root above both, published by the root pointer.
#[test]
fn append_fill_grow_root() {
    let pre: Vec<Op> = (1..8).map(|i| Op::Store(10 * i, 10 * i + 4, i)).collect();
    scenario(
        pre,
        Op::Store(80, 84, 100),
        &[70, 77, 80, 85],
        (1, 2),
        &[
            ("split", 1),
            ("append_split", 1),
            ("append_fill", 1),
            ("grow", 1),
        ],
    )
    .check_all();
}

/// The same fill in the right leaf of a two-level tree: the new leaves go into a copy of the
/// root, published by the root pointer; the old root and leaf are retired, never changed.
#[test]
fn append_fill_two_levels() {
    scenario(
        spaced(15),
        Op::Store(150, 154, 100),
        &[145, 147, 150, 155],
        (2, 2),
        &[("split", 1), ("append_split", 1), ("append_fill", 1)],
    )
    .check_all();
}

// ---- copy-on-write in RCU mode (in place only in exclusive mode) --------------------------------

/// Two-slot slot store (`[10, 16]` over `[10, 14]` and part of `[15, 19]`): a visible boundary
/// moves, so RCU mode rebuilds the leaf (node store).
#[test]
fn slot_store_two() {
    scenario(
        spaced(3),
        Op::Store(10, 16, 100),
        &[14, 16, 17],
        (1, 1),
        &[("node_store", 1)],
    )
    .check_all();
}

/// Three-slot slot store (`[8, 16]`): two visible boundaries move; node store in RCU mode.
#[test]
fn slot_store_three() {
    scenario(
        spaced(3),
        Op::Store(8, 16, 100),
        &[7, 10, 17],
        (1, 1),
        &[("node_store", 1)],
    )
    .check_all();
}

/// `+1` append at the start of the last range: a visible boundary moves; node store in RCU mode.
#[test]
fn append_start() {
    scenario(
        spaced(3),
        Op::Store(25, 30, 100),
        &[25, 31],
        (1, 1),
        &[("node_store", 1)],
    )
    .check_all();
}

/// Node store of a root leaf: a fresh leaf published by the root pointer.
#[test]
fn node_store() {
    scenario(
        spaced(3),
        Op::Store(12, 22, 100),
        &[10, 15, 24],
        (1, 1),
        &[("node_store", 1)],
    )
    .check_all();
}

/// Node store of the right leaf of a two-level tree: a fresh leaf published by one Release store
/// of the parent's slot.
#[test]
fn node_store_two_levels() {
    scenario(
        spaced(12),
        Op::Store(82, 92, 100),
        &[80, 85, 94],
        (2, 2),
        &[("node_store", 1)],
    )
    .check_all();
}

/// Leaf split (the direct split): the full left leaf of a two-level tree gets two more slots;
/// two fresh leaves and a copy of the root with both, published by the root pointer.
#[test]
fn leaf_split() {
    scenario(
        spaced(12),
        Op::Store(16, 17, 100),
        &[16, 18],
        (2, 2),
        &[("split", 1), ("leaf_split", 1)],
    )
    .check_all();
}

/// Split of a full root leaf, growing a new root.
#[test]
fn split_grow_root() {
    scenario(
        spaced(8),
        Op::Store(6, 7, 100),
        &[5, 6, 8],
        (1, 2),
        &[("split", 1), ("leaf_split", 1), ("grow", 1)],
    )
    .check_all();
}

/// Rebalance after erase: the left leaf falls below minimum occupancy and is merged with its
/// neighbour; the root collapses onto the merged leaf.
#[test]
fn rebalance_after_erase() {
    let pre = with(
        spaced(12),
        &[
            Op::EraseRange(10, 14),
            Op::EraseRange(30, 34),
            Op::EraseRange(50, 54),
            Op::EraseRange(60, 64),
        ],
    );
    scenario(
        pre,
        Op::Erase(40),
        &[40, 70, 80],
        (2, 1),
        &[("rebalance", 1), ("shrink", 1)],
    )
    .check_all();
}

/// Spanning store across the two leaves (`[62, 82]` over `[60, 64]` ... `[80, 84]`). Regression
/// model of the iterator-restart bug (fixed in `iter.rs`): an iterator that had yielded `(70, 74)`
/// from the old left leaf restarted at 75 in the new tree and yielded `(62, 82)`, overlapping what
/// it had yielded (forward; backward symmetrically after `(80, 84)`). `tests/observation.rs` in
/// the main crate has the single-threaded reproducer.
#[test]
fn spanning_store() {
    scenario(
        spaced(12),
        Op::Store(62, 82, 100),
        &[60, 70, 75, 84],
        (2, 2),
        &[("split", 1), ("spanning_store", 1)],
    )
    .check_all();
}

/// Erase of the left leaf's last entry: its NULL coalesces with the right leaf's leading NULL, so
/// the right leaf is pulled in and the pair rebuilt.
#[test]
fn erase_coalesce_across_leaves() {
    scenario(
        spaced(12),
        Op::Erase(70),
        &[70, 75, 80],
        (2, 2),
        &[("split", 1), ("rebalance", 1)],
    )
    .check_all();
}

/// Gap update in an allocation tree: the allocation fills the left leaf's largest gap in place
/// (exact fit) and lowers the root's gap for it; a reader's gap search must give the old or the
/// new answer.
#[test]
fn gap_update_alloc_tree() {
    let pre = with(spaced(12), &[Op::EraseRange(30, 34)]);
    let mut s = scenario(
        pre,
        Op::Alloc {
            val: 100,
            size: 15,
            min: 0,
            max: 1000,
            at: 25,
        },
        &[25, 39],
        (2, 2),
        &[("exact_fit", 1)],
    );
    s.alloc = true;
    s.check_all();
    s.check_timed(Reads::EmptyArea(0, 1000, 10));
}

/// `dup` of the tree being read: the reader sees the source unchanged; the copy equals it, shares
/// its entries (counted), and its own exact fit leaves the source alone.
#[test]
fn dup_while_read() {
    Scenario {
        alloc: false,
        prefill: spaced(3),
        write: Write::Dup {
            replace: 10,
            val: 100,
        },
        probes: vec![10, 20],
        heights: (1, 1),
        paths: vec![],
        reclaim: false,
    }
    .check_all();
}

// ---- reclamation -------------------------------------------------------------------------------

/// Reclamation under a reader: a node store that also drops two entries (`[8, 26]` covers `[10,
/// 14]` and `[20, 24]`), then the writer flushes the collector twice, which is the least that can
/// free the old leaf and the two entries while the model runs (the garbage's epoch must be two
/// behind). A reader still pinned must keep them alive; loom reports any access that races with
/// their poisoning. Point loads only: the epoch traffic of the flushes multiplies the
/// interleavings (about 70k executions at bound 2), whatever the reads.
#[test]
fn reclamation() {
    let mut s = scenario(
        spaced(3),
        Op::Store(8, 26, 100),
        &[10, 20],
        (1, 1),
        &[("node_store", 1)],
    );
    s.reclaim = true;
    s.check_result();
    s.check_timed(Reads::Points);
    let n = reclaimed();
    eprintln!("    garbage freed under a running reader in {n} executions");
    assert!(
        n > 0,
        "the model never reclaimed anything while the reader ran: it checks nothing"
    );
}
