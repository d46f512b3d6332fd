//! Restoring a snapshot (feature `serde`) against building the same tree in order, timed
//! alternately in one process: `postcard::from_bytes` (and `serde_json::from_slice`) of a
//! serialised tree of `n` ranges, against `n` in-order `store_range` calls through one
//! `exclusive()` writer (the fastest build the API offers, the in-place append path). The goal
//! is a restore within 1.5x of the build: the deserialiser checks every range and stores it as
//! it is read, with no buffer of all ranges in between.
//!
//! As `benches/modes.rs`, not a criterion benchmark: each round times both, in turn first and
//! second, and a row is the median of the rounds' ratios (with their range) and each side's
//! best round. Run: `cargo bench --bench snapshot` (`MAPLE_BENCH_QUICK=1` for a smoke run).

mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use maple_tree::{MapleTree, Value};
use support::shape;

/// The tree of `n` ranges both sides make: `shape(i)` = `i`.
fn build(n: u64) -> MapleTree<Value> {
    let mut t = MapleTree::new();
    let mut w = t.exclusive();
    for i in 0..n {
        let (a, b) = shape(i);
        w.store_range(a..=b, Value::new(i)).unwrap();
    }
    drop(w);
    t
}

/// Times `f`, dropping its result outside the timing.
fn timed<T>(f: impl FnOnce() -> T) -> Duration {
    let t0 = Instant::now();
    let out = f();
    let d = t0.elapsed();
    drop(black_box(out));
    d
}

/// Alternates `restore` and `build` for `rounds` rounds and prints the row.
fn row(name: &str, n: u64, rounds: usize, restore: impl Fn() -> MapleTree<Value>) {
    let (mut ratios, mut best_r, mut best_b) = (Vec::new(), Duration::MAX, Duration::MAX);
    for k in 0..rounds {
        let (r, b) = if k % 2 == 0 {
            let r = timed(&restore);
            (r, timed(|| build(n)))
        } else {
            let b = timed(|| build(n));
            (timed(&restore), b)
        };
        best_r = best_r.min(r);
        best_b = best_b.min(b);
        ratios.push(r.as_secs_f64() / b.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let per = |d: Duration| d.as_secs_f64() * 1e9 / n as f64;
    println!(
        "{name:<16} n={n:>9}  restore {:>6.1} ns/range  build {:>6.1} ns/range  \
         restore/build {:.3} ({:.3}-{:.3}, {rounds} rounds)",
        per(best_r),
        per(best_b),
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

fn main() {
    let quick = support::quick();
    let sizes: &[u64] = if quick {
        &[10_000]
    } else {
        &[10_000, 1_000_000]
    };
    for &n in sizes {
        let tree = build(n);
        let bytes = postcard::to_allocvec(&tree).unwrap();
        let json = serde_json::to_vec(&tree).unwrap();
        drop(tree);
        let rounds = if quick {
            3
        } else if n >= 1_000_000 {
            11
        } else {
            41
        };
        row("postcard", n, rounds, || {
            postcard::from_bytes(black_box(&bytes)).unwrap()
        });
        row("json", n, rounds, || {
            serde_json::from_slice(black_box(&json)).unwrap()
        });
    }
}
