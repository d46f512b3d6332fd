//! Loom models of the read paths found breaking the readers' promise across writes,
//! one write each, each with a broken twin (`loom_knobs::set_trust_rewalk`: the read path trusts
//! the range a re-walk lands on, as before the fix) that must fail:
//!
//! - one iterator driven from both ends across a node store: never an index twice;
//! - a cursor's `find` across a spanning store that replaces the leaf it stands at the end of:
//!   never backwards;
//! - `MapleTree::next` / `prev` across the same store: a range starting after / ending before
//!   the index, never the range now holding it;
//! - a reader's `empty_area` far inside the tail gap of an allocation tree across the in-order
//!   append that splits its full rightmost leaf and appends the new leaf to the parent in place,
//!   and across the climb over a full root (the root shrinks, keeping its children, and a new
//!   root grows above it): never `NoRoom`. Two twins each: the reader prunes the right edge by
//!   the gap without re-reading its path (`loom_knobs::set_trust_edge_gap`), and the writer
//!   lowers the shrunk children's gaps before the store that shrinks them
//!   (`loom_knobs::set_early_gap_lowering`).
//!
//! Shapes: `spaced(4)` is one root leaf `[10 i, 10 i + 4] = i + 1`; `adjacent(17)` is two
//! leaves, `[0, 149]` (15 ranges) and `[150, 169]` plus the NULL `[170, MAX]`.

#![cfg(loom)]

use maple_tree::loom_knobs;
use maple_tree_loom_tests::{adjacent, spaced, Op, Reads, Sequence};

/// Turns the broken twin's knob on; every knob off when dropped (also when the model panics, as
/// it must). The knobs are process-wide: one twin at a time.
struct TrustRewalk(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl TrustRewalk {
    fn on() -> TrustRewalk {
        Self::on_with(loom_knobs::set_trust_rewalk)
    }

    /// Another knob, under the same one-at-a-time lock.
    fn on_with(set: fn(bool)) -> TrustRewalk {
        let guard = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loom_knobs::reset();
        set(true);
        TrustRewalk(guard)
    }
}

impl Drop for TrustRewalk {
    fn drop(&mut self) {
        loom_knobs::reset();
    }
}

/// `[12, 22]` over the root leaf: `[10, 14]` and `[20, 24]` are cut, the leaf copied.
fn node_store() -> Sequence {
    Sequence::new(spaced(4), 1).then(Op::Store(12, 22, 100), 1, &[("node_store", 1)])
}

/// `[146, 165]` across the two leaves: both rebuilt, the range holding 150 now starts at 146.
fn spanning_store() -> Sequence {
    Sequence::new(adjacent(17), 2).then(
        Op::Store(146, 165, 100),
        2,
        &[("split", 1), ("spanning_store", 1)],
    )
}

/// `[300, 309]` after 30 adjacent ranges of an allocation tree: the append split of the full
/// rightmost leaf, the new leaf appended to the root in place.
fn append_split_alloc() -> Sequence {
    Sequence::new(adjacent(30), 2).alloc_tree().then(
        Op::Store(300, 309, 31),
        2,
        &[("split", 1), ("append_split", 1)],
    )
}

/// `[1500, 1509]` after 150 adjacent ranges of an allocation tree whose root holds 10 full
/// leaves: the leaf is truncated, the root keeps its children and shrinks, a new root grows.
fn append_split_climb_alloc() -> Sequence {
    maple_tree_loom_tests::append_split_climb_full_parent()
}

/// A window deep in the tail gap: free in every state.
const TAIL_WINDOW: Reads = Reads::EmptyArea(1 << 40, (1 << 40) + 999, 100);

#[test]
fn both_ends_across_a_node_store() {
    let s = node_store();
    s.check_result();
    s.check_timed(Reads::BothEnds);
}

#[test]
#[should_panic(expected = "out of order or overlapping")]
fn both_ends_across_a_node_store_trusting_the_rewalk() {
    let _k = TrustRewalk::on();
    node_store().check_timed(Reads::BothEnds);
}

#[test]
fn cursor_find_across_a_spanning_store() {
    let s = spanning_store();
    s.check_result();
    s.check_timed(Reads::CursorFind(140));
}

#[test]
#[should_panic(expected = "the cursor moved backwards")]
fn cursor_find_across_a_spanning_store_trusting_the_rewalk() {
    let _k = TrustRewalk::on();
    spanning_store().check_timed(Reads::CursorFind(140));
}

#[test]
fn next_across_a_spanning_store() {
    spanning_store().check_timed(Reads::NextPrev(149));
}

#[test]
#[should_panic(expected = "holds or passes its index")]
fn next_across_a_spanning_store_trusting_the_rewalk() {
    let _k = TrustRewalk::on();
    spanning_store().check_timed(Reads::NextPrev(149));
}

#[test]
fn prev_across_a_spanning_store() {
    spanning_store().check_timed(Reads::NextPrev(150));
}

#[test]
#[should_panic(expected = "holds or passes its index")]
fn prev_across_a_spanning_store_trusting_the_rewalk() {
    let _k = TrustRewalk::on();
    spanning_store().check_timed(Reads::NextPrev(150));
}

#[test]
fn empty_area_across_an_append_split() {
    let s = append_split_alloc();
    s.check_result();
    s.check_timed(TAIL_WINDOW);
}

/// The reader's twin: the right edge pruned by a gap without re-reading the path.
#[test]
#[should_panic(expected = "NoRoom while every state")]
fn empty_area_across_an_append_split_trusting_the_edge_gap() {
    let _k = TrustRewalk::on_with(loom_knobs::set_trust_edge_gap);
    append_split_alloc().check_timed(TAIL_WINDOW);
}

/// The writer's twin: the old last child's gap lowered before the pivot that shrinks it.
#[test]
#[should_panic(expected = "NoRoom while every state")]
fn empty_area_across_an_append_split_lowering_gaps_early() {
    let _k = TrustRewalk::on_with(loom_knobs::set_early_gap_lowering);
    append_split_alloc().check_timed(TAIL_WINDOW);
}

#[test]
fn empty_area_across_an_append_split_climb() {
    let s = append_split_climb_alloc();
    s.check_result();
    s.check_timed(TAIL_WINDOW);
}

#[test]
#[should_panic(expected = "NoRoom while every state")]
fn empty_area_across_an_append_split_climb_trusting_the_edge_gap() {
    let _k = TrustRewalk::on_with(loom_knobs::set_trust_edge_gap);
    append_split_climb_alloc().check_timed(TAIL_WINDOW);
}

/// The shrunk root's last child's gap lowered before the new root is published.
#[test]
#[should_panic(expected = "NoRoom while every state")]
fn empty_area_across_an_append_split_climb_lowering_gaps_early() {
    let _k = TrustRewalk::on_with(loom_knobs::set_early_gap_lowering);
    append_split_climb_alloc().check_timed(TAIL_WINDOW);
}
