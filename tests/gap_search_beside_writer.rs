//! Gap searches beside a writer: a reader's `empty_area` / `empty_area_rev` on an
//! allocation tree never answers `NoRoom` for a window that held a fitting hole for the whole
//! search, and every answer is a range that was free.
//!
//! The tree has a fixed prefix of entries with permanent holes between them, and a tail gap the
//! writer works in: it appends ranges upwards from `APPEND_BASE` (in place, and with append
//! splits once a leaf is full), `alloc_rrange`s from the top of the space downwards, and erases
//! both again, over and over. Readers search windows that stay free throughout: a prefix window
//! around one permanent hole of size `HOLE` (its fits are known exactly), and windows inside the
//! tail gap that the writer never reaches (the whole window is a fit).
//!
//! `GAP_SEARCH_SECS` sets how long each test runs (default 3 s).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use maple_tree::{Error, MapleTree, Value};

/// Prefix: `[10 i, 10 i + 5]` for `i < PREFIX`, except the entries `HOLE_AT..HOLE_AT + 4`,
/// which leave one permanent hole `[10 HOLE_AT - 4, 10 (HOLE_AT + 4) - 1]` of 44 indices.
const PREFIX: u64 = 2_000;
const HOLE_AT: u64 = 700;
const HOLE_LO: u64 = 10 * HOLE_AT - 4;
const HOLE_HI: u64 = 10 * (HOLE_AT + 4) - 1;
/// The size the readers ask for: only the permanent hole (and the tail) fits it.
const SIZE: u64 = 40;
/// Where the writer's appends start and how many it makes before erasing them.
const APPEND_BASE: u64 = 10 * PREFIX + 1_000;
const APPENDS: u64 = 3_000;
/// Above the appends, below the `alloc_rrange`s: free for ever.
const FREE_LO: u64 = APPEND_BASE + 10 * APPENDS + 1_000;
const FREE_HI: u64 = FREE_LO + 1_000_000;
/// The `alloc_rrange`s' floor (they go downwards from `u64::MAX`).
const RR_MIN: u64 = FREE_HI + 1_000;
const RR_COUNT: u64 = 3_000;

fn secs() -> Duration {
    Duration::from_secs(
        std::env::var("GAP_SEARCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3),
    )
}

fn build() -> MapleTree<Value> {
    let tree = MapleTree::new_alloc();
    for i in (0..PREFIX).filter(|i| !(HOLE_AT..HOLE_AT + 4).contains(i)) {
        tree.store_range(10 * i..=10 * i + 5, Value::new(i))
            .unwrap();
    }
    tree
}

/// The writer: appends upwards, `alloc_rrange`s downwards, then erases everything it wrote;
/// `mixed` interleaves the two kinds of writes, otherwise each round does one kind.
fn writer(tree: &MapleTree<Value>, stop: &AtomicBool, mixed: bool) -> u64 {
    let mut rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut placed = Vec::new();
        let (append, rrange) = if mixed {
            (true, true)
        } else {
            (rounds % 2 == 0, rounds % 2 == 1)
        };
        for k in 0..APPENDS.max(RR_COUNT) {
            if append && k < APPENDS {
                let a = APPEND_BASE + 10 * k;
                // Contiguous: every full leaf is an append split climbing in place.
                tree.store_range(a..=a + 9, Value::new(k)).unwrap();
                placed.push(a);
            }
            if rrange && k < RR_COUNT {
                let r = tree
                    .alloc_rrange(RR_MIN..=u64::MAX, 7, Value::new(k))
                    .unwrap();
                placed.push(*r.start());
            }
        }
        if rounds % 3 == 0 {
            placed.reverse();
        }
        for a in placed {
            tree.erase(a);
        }
        rounds += 1;
    }
    rounds
}

/// One reader: every answer checked; returns the number of searches.
fn reader(tree: &MapleTree<Value>, stop: &AtomicBool, seed: u64, bad: &AtomicU64) -> u64 {
    let mut x = seed | 1;
    let mut calls = 0;
    let mut first_bad = true;
    while !stop.load(Ordering::Relaxed) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // A prefix window holding the permanent hole (and nothing else of size SIZE)...
        let (pmin, pmax) = (HOLE_LO - (x % 5_000), HOLE_HI + (x >> 20) % 5_000);
        // ... and a window inside the free stretch of the tail gap.
        let fmin = FREE_LO + (x >> 8) % 1_000;
        let fmax = fmin + SIZE - 1 + (x >> 40) % 100_000;
        let checks: [(u64, u64, bool, Result<u64, Error>); 4] = [
            (pmin, pmax, false, Ok(HOLE_LO)),
            (pmin, pmax, true, Ok(HOLE_HI - SIZE + 1)),
            (fmin, fmax, false, Ok(fmin)),
            (fmin, fmax, true, Ok(fmax - SIZE + 1)),
        ];
        for (min, max, rev, want) in checks {
            let got = if rev {
                tree.empty_area_rev(min..=max, SIZE)
            } else {
                tree.empty_area(min..=max, SIZE)
            };
            calls += 1;
            if got != want {
                if first_bad {
                    first_bad = false;
                    eprintln!(
                        "empty_area{}({min}, {max}, {SIZE}) = {got:?}, want {want:?}",
                        if rev { "_rev" } else { "" }
                    );
                }
                bad.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    calls
}

fn run(mixed: bool) {
    let tree = Arc::new(build());
    let stop = Arc::new(AtomicBool::new(false));
    let bad = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (tree, stop, bad) = (tree.clone(), stop.clone(), bad.clone());
            std::thread::spawn(move || reader(&tree, &stop, 0x9e37_79b9_7f4a_7c15 + r, &bad))
        })
        .collect();
    let w = {
        let (tree, stop) = (tree.clone(), stop.clone());
        std::thread::spawn(move || writer(&tree, &stop, mixed))
    };
    let start = Instant::now();
    while start.elapsed() < secs() && bad.load(Ordering::Relaxed) == 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = w.join().unwrap();
    let calls: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let bad = bad.load(Ordering::Relaxed);
    eprintln!("mixed {mixed}: {calls} searches, {rounds} writer rounds, {bad} wrong");
    tree.validate().unwrap();
    assert_eq!(bad, 0, "{bad} of {calls} searches were wrong");
}

#[test]
fn gap_search_beside_appends_and_rranges() {
    run(false);
}

#[test]
fn gap_search_beside_mixed_writes() {
    run(true);
}
