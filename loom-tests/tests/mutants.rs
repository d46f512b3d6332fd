//! Mutant twins: models of `tests/models.rs` with a deliberately wrong ordering switched on through
//! `maple_tree::loom_knobs`. Each must fail (`#[should_panic]`, with the failure it must produce);
//! a model that cannot fail proves nothing.

#![cfg(loom)]

use maple_tree::loom_knobs;
use maple_tree_loom_tests::{executions, scenario, spaced, Op, Reads, Sequence};

/// Turns one knob on; turns every knob off when dropped, also when the model panics (as it must).
/// The knobs are process-wide and the test harness runs tests on parallel threads, so a knob
/// also holds a lock that keeps the mutants one at a time (otherwise one mutant's reset switches
/// another's knob off in the middle of its exploration).
struct Knob(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Knob {
    fn on(set: fn(bool)) -> Knob {
        // A mutant that panicked (as it must) poisons the lock; the knobs are reset regardless.
        let guard = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loom_knobs::reset();
        set(true);
        Knob(guard)
    }
}

impl Drop for Knob {
    fn drop(&mut self) {
        loom_knobs::reset();
        if std::thread::panicking() {
            eprintln!("    caught in execution {}", executions());
        }
    }
}

/// Exact fit with the entry published `Relaxed`: the reader reaches the new entry without
/// seeing its initialisation.
#[test]
#[should_panic(expected = "Causality violation")]
fn exact_fit_relaxed_slot_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_slot_publish);
    scenario(
        spaced(3),
        Op::Store(10, 14, 100),
        &[10],
        (1, 1),
        &[("exact_fit", 1)],
    )
    .check_timed(Reads::Points);
}

/// `+1` append at the end with the lowered end pivot stored `Relaxed`: the reader sees the new
/// end but not the slot written beyond it.
#[test]
#[should_panic(expected = "Causality violation")]
fn append_end_relaxed_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_publish);
    scenario(
        spaced(3),
        Op::Store(30, u64::MAX, 100),
        &[30],
        (1, 1),
        &[("append_end", 1)],
    )
    .check_timed(Reads::Points);
}

/// Three-way append with the publishing pivot stored `Relaxed`.
#[test]
#[should_panic(expected = "Causality violation")]
fn append_three_way_relaxed_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_publish);
    scenario(
        spaced(3),
        Op::Store(30, 34, 100),
        &[30],
        (1, 1),
        &[("append_three_way", 1)],
    )
    .check_timed(Reads::Points);
}

/// Three-way append with the reader's pivot loads `Relaxed`: the lowered end pivot no longer
/// carries the slots written beyond it (the reader's side of the same protocol).
#[test]
#[should_panic(expected = "Causality violation")]
fn append_three_way_relaxed_reader() {
    let _k = Knob::on(loom_knobs::set_relaxed_reader);
    scenario(
        spaced(3),
        Op::Store(30, 34, 100),
        &[30],
        (1, 1),
        &[("append_three_way", 1)],
    )
    .check_timed(Reads::Points);
}

/// Append split of the right leaf of a two-level tree with the root's `+1` append published
/// `Relaxed`: the reader follows the lowered root pivot to a child slot it cannot see written.
/// Readers restart on an empty child slot rather than trust it, so loom reports either the
/// unordered access of the slot, or — when nothing else orders the reader after the write (this
/// write pins no guard: it defers nothing) — the reader restarting for ever on a slot that never
/// becomes visible to it.
#[test]
fn append_split_two_levels_relaxed_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_publish);
    must_fail_with(
        &["Causality violation", "maximum number of branches"],
        || {
            let mut pre = spaced(15);
            pre.push(Op::Store(150, u64::MAX, 16));
            scenario(
                pre,
                Op::Store(160, u64::MAX, 100),
                &[160],
                (2, 2),
                &[("split", 1), ("append_split", 1)],
            )
            .check_timed(Reads::Points);
        },
    );
}

/// Runs `model`, which must fail with a panic whose message contains one of `messages` (a
/// mutant may show its bug in more than one way, depending on what else orders its threads).
fn must_fail_with(messages: &[&str], model: impl FnOnce() + std::panic::UnwindSafe) {
    let err = std::panic::catch_unwind(model).expect_err("the mutant must fail");
    let msg = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("");
    eprintln!("    caught: {msg}");
    assert!(
        messages.iter().any(|m| msg.contains(m)),
        "the mutant failed for another reason: {msg}"
    );
}

/// Node store in a two-level tree with the new leaf published into the parent `Relaxed`: the
/// reader reaches the new leaf without seeing its contents.
#[test]
#[should_panic(expected = "Causality violation")]
fn node_store_two_levels_relaxed_slot_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_slot_publish);
    scenario(
        spaced(12),
        Op::Store(82, 92, 100),
        &[85],
        (2, 2),
        &[("node_store", 1)],
    )
    .check_timed(Reads::Points);
}

/// Node store whose replaced leaf is freed at once instead of after the grace period: a reader
/// still in the old leaf races with the free.
#[test]
#[should_panic(expected = "Causality violation")]
fn node_store_free_at_once() {
    let _k = Knob::on(loom_knobs::set_free_at_once);
    scenario(
        spaced(3),
        Op::Store(12, 22, 100),
        &[15],
        (1, 1),
        &[("node_store", 1)],
    )
    .check_timed(Reads::Points);
}

/// Leaf split in a two-level tree, the replaced leaf and root freed at once: caught in an
/// iteration.
#[test]
#[should_panic(expected = "Causality violation")]
fn leaf_split_free_at_once() {
    let _k = Knob::on(loom_knobs::set_free_at_once);
    scenario(
        spaced(12),
        Op::Store(16, 17, 100),
        &[16],
        (2, 2),
        &[("split", 1), ("leaf_split", 1)],
    )
    .check_timed(Reads::Forward);
}

// ---- twins of the models in `tests/sequences.rs` ------------------------------------------------

/// `CursorMut::store` through the cached walker, the entry published `Relaxed`.
#[test]
#[should_panic(expected = "Causality violation")]
fn cursor_store_cached_walker_relaxed_slot_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_slot_publish);
    Sequence::new(spaced(3), 1)
        .then(Op::CursorStore(10, 14, 100), 1, &[("exact_fit", 1)])
        .probes(&[10])
        .check_timed(Reads::Points);
}

/// `dup_mmap`'s loop (two exact fits through one cursor under one lock), the entries published
/// `Relaxed`.
#[test]
#[should_panic(expected = "Causality violation")]
fn cursor_rewrite_relaxed_slot_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_slot_publish);
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
        .probes(&[10])
        .check_timed(Reads::Points);
}

/// `store_prealloc` (a three-way append) with the publishing pivot stored `Relaxed`.
#[test]
#[should_panic(expected = "Causality violation")]
fn cursor_store_prealloc_relaxed_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_publish);
    Sequence::new(spaced(3), 1)
        .then(
            Op::CursorPrealloc(30, 34, 100),
            1,
            &[("append_three_way", 1)],
        )
        .probes(&[30])
        .check_timed(Reads::Points);
}

/// `clear()` with the retired nodes freed at once: a reader still in them races with the free.
#[test]
#[should_panic(expected = "Causality violation")]
fn clear_free_at_once() {
    let _k = Knob::on(loom_knobs::set_free_at_once);
    Sequence::new(spaced(12), 2)
        .then(Op::Clear, 0, &[])
        .probes(&[80])
        .check_timed(Reads::Points);
}

/// A whole-space store with the replaced root leaf freed at once.
#[test]
#[should_panic(expected = "Causality violation")]
fn whole_space_store_free_at_once() {
    let _k = Knob::on(loom_knobs::set_free_at_once);
    Sequence::new(spaced(3), 1)
        .then(Op::Store(0, u64::MAX, 100), 1, &[("new_root", 1)])
        .probes(&[20])
        .check_timed(Reads::Points);
}

/// `alloc_cyclic` into the trailing NULL (a three-way append), the pivot stored `Relaxed`.
#[test]
#[should_panic(expected = "Causality violation")]
fn alloc_cyclic_relaxed_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_publish);
    Sequence::new(spaced(3), 1)
        .alloc_tree()
        .then(
            Op::AllocCyclic {
                val: 100,
                lo: 0,
                hi: u64::MAX,
                next: 30,
                at: 30,
            },
            1,
            &[("append_three_way", 1)],
        )
        .probes(&[30])
        .check_timed(Reads::Points);
}

/// The copy-on-write fill at depth 3 with the new parent published into the root `Relaxed`.
#[test]
#[should_panic(expected = "Causality violation")]
fn append_fill_cow_depth3_relaxed_slot_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_slot_publish);
    Sequence::new(spaced(87), 3)
        .alloc_tree()
        .then(
            Op::Store(870, 874, 100),
            3,
            &[("split", 1), ("append_split", 1), ("append_fill", 1)],
        )
        .probes(&[870])
        .check_timed(Reads::Points);
}

/// Node store then slot store of the same leaf, the replaced leaves freed at once (the first
/// write frees the original leaf, the second the leaf the first one published).
#[test]
#[should_panic(expected = "Causality violation")]
fn node_store_then_slot_store_free_at_once() {
    let _k = Knob::on(loom_knobs::set_free_at_once);
    Sequence::new(spaced(3), 1)
        .then(Op::Store(12, 22, 100), 1, &[("node_store", 1)])
        .then(Op::Store(23, 26, 101), 1, &[("node_store", 1)])
        .probes(&[15])
        .check_timed(Reads::Points);
}

/// The batched twin: retired nodes handed on two at a time, and the batch freed at once when
/// the second write hands it on (the first write's replaced leaf with it).
#[test]
#[should_panic(expected = "Causality violation")]
fn node_store_then_slot_store_batched_free_at_once() {
    let _k = Knob::on(loom_knobs::set_free_at_once);
    loom_knobs::set_retire_batch(2);
    Sequence::new(spaced(3), 1)
        .then(Op::Store(12, 22, 100), 1, &[("node_store", 1)])
        .then(Op::Store(23, 26, 101), 1, &[("node_store", 1)])
        .probes(&[15])
        .check_timed(Reads::Points);
}

/// Rebalance then `+1` append, the append's pivot stored `Relaxed`: caught in the leaf the
/// rebalance built.
#[test]
#[should_panic(expected = "Causality violation")]
fn rebalance_then_append_end_relaxed_publish() {
    let _k = Knob::on(loom_knobs::set_relaxed_publish);
    let mut pre = spaced(12);
    pre.extend([
        Op::EraseRange(10, 14),
        Op::EraseRange(30, 34),
        Op::EraseRange(50, 54),
        Op::EraseRange(60, 64),
    ]);
    Sequence::new(pre, 2)
        .then(Op::Erase(40), 1, &[("rebalance", 1), ("shrink", 1)])
        .then(Op::Store(120, u64::MAX, 100), 1, &[("append_end", 1)])
        .probes(&[120])
        .check_timed(Reads::Points);
}

/// The knobs really are off again after a mutant (the guard works), and the correct model of a
/// mutated path passes (under the same lock as the mutants, so never during one).
#[test]
fn zz_knobs_reset() {
    let _k = Knob::on(|_| {}); // the lock, all knobs off
    scenario(
        spaced(3),
        Op::Store(30, u64::MAX, 100),
        &[30],
        (1, 1),
        &[("append_end", 1)],
    )
    .check_timed(Reads::Points);
}

// ---- the append split's full-parent paths: the twins of their sequence models --------------------

/// The leaf fill through the generic rebuild (`append_fill_full_parent`) with retired nodes
/// poisoned at once: the reader still in the old root or leaf reads a poisoned node.
#[test]
#[should_panic]
fn append_fill_full_parent_free_at_once() {
    let _k = Knob::on(loom_knobs::set_free_at_once);
    maple_tree_loom_tests::append_fill_full_parent().check_all();
}

/// The climb over a full parent (`append_split_climb_full_parent`) with the new root published
/// `Relaxed`: the reader reaches the new root (and the new node under it) without seeing them
/// written.
#[test]
#[should_panic(expected = "Causality violation")]
fn append_split_climb_full_parent_relaxed_root() {
    let _k = Knob::on(loom_knobs::set_relaxed_root_publish);
    maple_tree_loom_tests::append_split_climb_full_parent().check_all();
}

// ---- seals (tree::seal): the broken twins of the write-sequence models ------------------------

/// Seals ignored: the `+1` append into the leaf the append split truncated is done in place, and
/// the reader that read the old bound sees `[73, MAX] = 101` (the in-place append over a truncated leaf).
#[test]
#[should_panic]
fn append_split_then_append_end_ignoring_seals() {
    let _k = Knob::on(loom_knobs::set_ignore_seals);
    let wide: Vec<Op> = (0..8u64)
        .map(|i| Op::Store(10 * i, 10 * i + 5, i + 1))
        .collect();
    Sequence::new(wide, 1)
        .then(
            Op::Store(80, 85, 100),
            2,
            &[("split", 1), ("append_split", 1), ("grow", 1)],
        )
        .then(Op::Store(73, 75, 101), 2, &[("append_end", 1)])
        .probes(&[76, 1000])
        .check_all();
}

/// Seals ignored: the exact fit re-points the slot whose bound a `+1` append lowered, and a
/// reader pairs the old bound with the new entry.
#[test]
#[should_panic(expected = "exists in no state")]
fn append_end_then_exact_fit_ignoring_seals() {
    let _k = Knob::on(loom_knobs::set_ignore_seals);
    Sequence::new(vec![Op::Store(10, 15, 1)], 1)
        .then(Op::Store(17, u64::MAX, 100), 1, &[("append_end", 1)])
        .then(Op::Store(16, 16, 101), 1, &[("exact_fit", 1)])
        .probes(&[16, 18, 1000])
        .check_all();
}

/// Seals of lowered pivots ignored: the append split lowered the root's pivot in place, and the
/// node store of the truncated leaf publishes its new leaf in that root slot instead of copying
/// the root; a reader that read the old pivot walks the new leaf with a max it never had.
#[test]
#[should_panic]
fn append_split_then_node_store_ignoring_repoint_seals() {
    let _k = Knob::on(loom_knobs::set_ignore_repoint_seals);
    let mut pre = spaced(15);
    pre.push(Op::Store(150, u64::MAX, 16));
    Sequence::new(pre, 2)
        .then(
            Op::Store(160, u64::MAX, 100),
            2,
            &[("split", 1), ("append_split", 1)],
        )
        .then(
            Op::Store(141, 142, 101),
            2,
            &[("node_store", 1), ("sealed_extend", 1)],
        )
        .probes(&[142, 150, 1000])
        .span(130, u64::MAX)
        .check_all();
}
