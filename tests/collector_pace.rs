//! The pace of the deferred frees on crossbeam's default collector: alone in its test binary,
//! one test, so that no other thread's pinned guard holds the epoch back.

use maple_tree::{Error, MapleTree, Value};

/// A thread that writes many frees under each pin of its own (here: a guard held across each
/// batch of writes, as a fork's copy loop holds one over its source) keeps the backlog of
/// deferred frees bounded: the writers make the collector collect as fast as they defer. (On
/// its own the default collector collects a few bags every 128 outermost pins of a thread, and
/// these loops pin once per 30 frees: the backlog grew by about 26 a round, to 50,000.)
#[test]
fn deferred_frees_do_not_pile_up_under_a_held_guard() -> Result<(), Error> {
    // Released entries: each exact fit drops the entry it replaces after a grace period.
    let t = MapleTree::<Box<u64>>::new();
    for i in 0..30u64 {
        t.store_range(i * 10..=i * 10 + 5, Box::new(i))?;
    }
    let mut most = 0;
    for round in 0..2_000u64 {
        let held = t.pin();
        for i in 0..30u64 {
            t.store_range(i * 10..=i * 10 + 5, Box::new(round))?;
        }
        drop(held);
        most = most.max(t.pending_frees().entries);
    }
    assert!(most < 1_000, "{most} deferred entry drops pending at once");

    // Retired nodes: each write rewrites a leaf by copy-on-write (a point store splits a
    // range, the next store merges it back), retiring the old leaf.
    let t = MapleTree::<Value>::new();
    for i in 0..30u64 {
        t.store_range(i * 10..=i * 10 + 5, Value::new(i))?;
    }
    let mut most = 0;
    for _ in 0..2_000u64 {
        let held = t.pin();
        for i in 0..15u64 {
            t.store_range(i * 10 + 2..=i * 10 + 2, Value::new(0))?;
            t.store_range(i * 10..=i * 10 + 5, Value::new(i))?;
        }
        drop(held);
        most = most.max(t.pending_frees().nodes);
    }
    assert!(most < 1_000, "{most} retired nodes pending at once");
    Ok(())
}
