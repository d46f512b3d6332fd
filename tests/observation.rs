//! Deterministic reader/writer interleavings on one thread: an iterator (the reader) is advanced
//! `k` steps, one write of each path runs, then the iterator finishes. An iterator is a reader like
//! any other (it holds a guard and walks the live tree), so the observation rules of README.md
//! ("Guarantees") apply: ranges strictly monotonic and non-overlapping, each one a range of the old
//! or of the new tree, none skipped that is the same in both. Every `k` and both directions are
//! tried, for the write shapes of the loom models (`loom-tests/`), which explore the real
//! interleavings at the level of single atomic accesses; these tests pin down the coarse ones
//! cheaply in the normal test run.

use crossbeam_epoch::Collector;
use maple_tree::{MapleTree, Options, Value};

type Range = (u64, u64, u64);

/// The reference range map, shared by the tree's tests.
#[path = "kit/ranges.rs"]
mod kit;
use kit::Ranges;

/// A write: `[first, last]` gets `Some(value)` or is erased.
type Op = (u64, u64, Option<u64>);

/// A tree with its own collector, so dropping it frees its garbage (no leak reports under Miri).
fn tree() -> MapleTree<Value> {
    MapleTree::with_options(Options::new().collector(Collector::new()))
}

fn spaced(n: u64) -> Vec<Op> {
    (0..n).map(|i| (10 * i, 10 * i + 4, Some(i + 1))).collect()
}

fn apply(tree: &MapleTree<Value>, (a, b, v): Op) {
    match v {
        Some(v) => tree.store_range(a..=b, Value::new(v)).unwrap(),
        None => tree.erase_range(a..=b).unwrap(),
    }
}

/// Every `k` and both directions; returns the violations found.
fn interleavings(pre: &[Op], write: Op) -> Vec<String> {
    let mut old = Ranges::default();
    for &(a, b, v) in pre {
        old.store(a, b, v);
    }
    let mut new = old.clone();
    new.store(write.0, write.1, write.2);
    let mut bad = Vec::new();
    for backward in [false, true] {
        for k in 0..=old.0.len() {
            let tree = tree();
            for &op in pre {
                apply(&tree, op);
            }
            let guard = tree.pin();
            let mut got: Vec<Range> = Vec::new();
            {
                let it = tree
                    .iter(&guard)
                    .map(|(r, v)| (*r.start(), *r.end(), v.get()));
                let mut it: Box<dyn Iterator<Item = Range>> = if backward {
                    Box::new(it.rev())
                } else {
                    Box::new(it)
                };
                got.extend(it.by_ref().take(k));
                apply(&tree, write);
                got.extend(it);
            }
            if backward {
                got.reverse();
            }
            let what = format!("{} k={k}", if backward { "backward" } else { "forward" });
            if got.windows(2).any(|w| w[0].1 >= w[1].0) {
                bad.push(format!("{what}: out of order or overlapping: {got:?}"));
            }
            for &r in &got {
                if !old.has(r) && !new.has(r) {
                    bad.push(format!("{what}: {r:?} exists in neither state: {got:?}"));
                }
            }
            for r in old.list() {
                if new.has(r) && !got.contains(&r) {
                    bad.push(format!("{what}: skipped {r:?}: {got:?}"));
                }
            }
        }
    }
    bad
}

fn assert_clean(pre: &[Op], write: Op) {
    let bad = interleavings(pre, write);
    assert!(
        bad.is_empty(),
        "{} violations, first: {}",
        bad.len(),
        bad[0]
    );
}

fn with(mut pre: Vec<Op>, more: &[Op]) -> Vec<Op> {
    pre.extend_from_slice(more);
    pre
}

#[test]
fn in_place_paths() {
    assert_clean(&spaced(3), (10, 14, Some(100))); // exact fit
    assert_clean(&spaced(12), (70, 74, Some(100))); // exact fit, two levels
    assert_clean(&spaced(3), (30, u64::MAX, Some(100))); // +1 append at the end
    assert_clean(&with(spaced(12), &[(10, 14, None)]), (72, 74, Some(100)));
    assert_clean(&spaced(3), (30, 34, Some(100))); // three-way append
    assert_clean(&with(spaced(12), &[(10, 14, None)]), (71, 72, Some(100)));
    assert_clean(&spaced(8), (80, 84, Some(100))); // append split, new root
    assert_clean(
        &with(spaced(15), &[(150, u64::MAX, Some(16))]),
        (160, u64::MAX, Some(100)),
    );
}

#[test]
fn copy_on_write_paths() {
    assert_clean(&spaced(3), (10, 16, Some(100))); // slot store (2), node store in RCU mode
    assert_clean(&spaced(3), (8, 16, Some(100))); // slot store (3)
    assert_clean(&spaced(3), (25, 30, Some(100))); // +1 append at the start
    assert_clean(&spaced(3), (12, 22, Some(100))); // node store
    assert_clean(&spaced(12), (82, 92, Some(100))); // node store, two levels
    assert_clean(&spaced(12), (16, 17, Some(100))); // leaf split
    assert_clean(&spaced(8), (6, 7, Some(100))); // split growing a new root
    let sparse = with(
        spaced(12),
        &[
            (10, 14, None),
            (30, 34, None),
            (50, 54, None),
            (60, 64, None),
        ],
    );
    assert_clean(&sparse, (40, 44, None)); // rebalance after erase
    assert_clean(&spaced(12), (70, 74, None)); // erase with NULL coalescing across leaves
}

/// Regression test of the iterator-restart bug (fixed in `iter.rs`; the loom model
/// `spanning_store` covers it too): forward, an iterator that had yielded `(70, 74, 8)` from the
/// old left leaf moved on to 75, found the leaf's parent replaced, re-walked the new tree at 75
/// and yielded `(62, 82, 100)`, which starts before its position and overlaps `(70, 74)`;
/// backward, symmetrically, `(62, 82, 100)` after `(80, 84, 9)`.
#[test]
fn spanning_store_iteration() {
    assert_clean(&spaced(12), (62, 82, Some(100)));
}

/// The same bug's single-step reproducer, forward.
#[test]
fn spanning_store_iteration_minimal() {
    let tree = tree();
    for i in 0..12u64 {
        tree.store_range(10 * i..=10 * i + 4, Value::new(i + 1))
            .unwrap();
    }
    let guard = tree.pin();
    let mut it = tree
        .iter(&guard)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()));
    assert_eq!(it.by_ref().nth(7), Some((70, 74, 8)));
    tree.store_range(62..=82, Value::new(100)).unwrap();
    let next = it.next().unwrap();
    assert!(
        next.0 > 74,
        "after (70, 74, 8) the iterator yielded {next:?}"
    );
}
