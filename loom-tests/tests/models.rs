//! One loom model per write path (SPEC §5): the writer on the main thread, one spawned reader.

#![cfg(loom)]

use maple_tree_loom_tests::{Op, Scenario, Write};

/// Ranges `[10 i, 10 i + 4]` holding value `i + 1`, for `i` in `0..n` (one slot per range plus a
/// NULL slot between ranges: `2 n` slots).
fn spaced(n: u64) -> Vec<Op> {
    (0..n).map(|i| Op::Store(10 * i, 10 * i + 4, i + 1)).collect()
}

fn all_reads(s: &Scenario) {
    s.check_all();
}

#[test]
fn exact_fit() {
    all_reads(&Scenario {
        alloc: false,
        prefill: spaced(3),
        write: Write::Op(Op::Store(10, 14, 100)),
        probes: vec![10, 14],
        heights: (1, 1),
        paths: vec![("exact_fit", 1)],
        reclaim: false,
    });
}
