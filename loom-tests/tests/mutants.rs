//! Mutant twins: the same models with a deliberately wrong ordering switched on through
//! `maple_tree::loom_knobs`. Each must fail; a model that cannot fail proves nothing.

#![cfg(loom)]

use maple_tree::loom_knobs;
use maple_tree_loom_tests::{Op, Reads, Scenario, Write};

/// Turns every knob off when dropped, also when the model panics (as it must).
struct Knobs;

impl Knobs {
    fn on(set: fn(bool)) -> Knobs {
        loom_knobs::reset();
        set(true);
        Knobs
    }
}

impl Drop for Knobs {
    fn drop(&mut self) {
        loom_knobs::reset();
    }
}

fn spaced(n: u64) -> Vec<Op> {
    (0..n).map(|i| Op::Store(10 * i, 10 * i + 4, i + 1)).collect()
}

#[test]
#[should_panic]
fn exact_fit_relaxed_slot_publish() {
    let _k = Knobs::on(loom_knobs::set_relaxed_slot_publish);
    Scenario {
        alloc: false,
        prefill: spaced(3),
        write: Write::Op(Op::Store(10, 14, 100)),
        probes: vec![10],
        heights: (1, 1),
        paths: vec![("exact_fit", 1)],
        reclaim: false,
    }
    .check_timed(Reads::Points);
}
