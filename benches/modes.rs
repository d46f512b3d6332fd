//! RCU mode ÷ exclusive mode, the two timed alternately in one process: every write row of
//! `benches/peers.rs` done through the lock (RCU mode) and through `exclusive()`, and the read
//! rows (lookups, iteration) on a tree built through the lock against one built exclusively, both
//! trees alive. One row has no `peers` twin: `erase_entry`, every second range taken out with
//! its entry, by `erase(i)` through the lock (RCU mode, the entry handed back in an `Erased`)
//! against the exclusive `remove(i)`.
//!
//! Not a criterion benchmark: criterion times one function after another, and on a shared
//! two-core host the drift between two rows a minute apart (1.01–1.67 for the same code in one
//! week's runs) is larger than most of what the ratio is meant to show. Here each round times
//! both modes back to back, in turn first and second, and a row is the median of the rounds'
//! ratios (with their range) and each mode's best round. Results also go to
//! `target/bench-results/modes.json`.
//!
//! Run: `cargo bench --bench modes [WORKLOAD]` (only the rows whose workload name contains
//! `WORKLOAD`; `MAPLE_BENCH_QUICK=1` for a smoke run).

mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use maple_tree::{MapleTree, Options, Value};
use support::{pick, shape, XorShift64};

/// The two write modes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Exclusive,
    Rcu,
}

/// Stores `[a, b]` = `v` into `t` in mode `m`, one writer borrow per store (as the peers rows).
#[inline]
fn store(t: &mut MapleTree<Value>, m: Mode, a: u64, b: u64, v: u64) {
    let v = Value::new(v);
    match m {
        Mode::Exclusive => t.exclusive().store_range(a..=b, v).unwrap(),
        Mode::Rcu => t.store_range(a..=b, v).unwrap(),
    }
}

/// Erases `[a, b]` from `t` in mode `m`, one writer borrow per erase.
#[inline]
fn erase(t: &mut MapleTree<Value>, m: Mode, a: u64, b: u64) {
    match m {
        Mode::Exclusive => t.exclusive().erase_range(a..=b).unwrap(),
        Mode::Rcu => t.erase_range(a..=b).unwrap(),
    }
}

/// Takes out the range containing `index` of `t` with its entry in mode `m`: through the lock,
/// [`MapleTree::erase`] (RCU mode: the entry comes back borrowed in an `Erased`, dropped after a
/// grace period); exclusively, [`MapleTree::remove`] (the owned entry). Returns the range's
/// start and the entry's value.
#[inline]
fn erase_entry(t: &mut MapleTree<Value>, m: Mode, index: u64) -> (u64, u64) {
    match m {
        Mode::Exclusive => {
            let (r, v) = t.remove(index).unwrap();
            (*r.start(), v.get())
        }
        Mode::Rcu => {
            let e = t.erase(index).unwrap();
            (*e.range().start(), e.entry().unwrap().get())
        }
    }
}

/// The benches' allocation tree of ranges `[10i, 10i+5]` = `i`, `i < n`, built in mode `m`.
fn build(m: Mode, n: u64) -> MapleTree<Value> {
    let mut t = MapleTree::with_options(Options::new().alloc(true));
    for i in 0..n {
        let (a, b) = shape(i);
        store(&mut t, m, a, b, i);
    }
    t
}

/// One row: a workload at one size, `ops` operations per timed call.
struct Row {
    workload: &'static str,
    n: u64,
    ops: u64,
    /// Per round: (exclusive, RCU) time of one call.
    rounds: Vec<(Duration, Duration)>,
}

impl Row {
    fn ratios(&self) -> Vec<f64> {
        let mut r: Vec<f64> = self
            .rounds
            .iter()
            .map(|(e, r)| r.as_secs_f64() / e.as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        r
    }
    fn median(&self) -> f64 {
        let r = self.ratios();
        r[r.len() / 2]
    }
    /// Each mode's best round, ns per operation.
    fn best_ns(&self) -> (f64, f64) {
        let per_op = |d: Duration| d.as_secs_f64() * 1e9 / self.ops as f64;
        let e = self.rounds.iter().map(|r| r.0).min().unwrap();
        let r = self.rounds.iter().map(|r| r.1).min().unwrap();
        (per_op(e), per_op(r))
    }
}

/// Times `call(mode)` for both modes over `rounds` rounds, the first mode alternating; `call`
/// returns the time of its measured part (setup and drop untimed).
fn alternate(
    workload: &'static str,
    n: u64,
    ops: u64,
    rounds: usize,
    mut call: impl FnMut(Mode) -> Duration,
) -> Row {
    // One untimed call of each: warm caches, fault in the allocator's memory.
    call(Mode::Exclusive);
    call(Mode::Rcu);
    let rounds = (0..rounds)
        .map(|k| {
            if k % 2 == 0 {
                let e = call(Mode::Exclusive);
                (e, call(Mode::Rcu))
            } else {
                let r = call(Mode::Rcu);
                (call(Mode::Exclusive), r)
            }
        })
        .collect();
    let row = Row {
        workload,
        n,
        ops,
        rounds,
    };
    let (e, r) = row.best_ns();
    let ratios = row.ratios();
    println!(
        "{workload:<28} {n:>10} {e:>10.1} {r:>10.1} {:>8.3} {:>8.3}–{:.3}",
        row.median(),
        ratios[0],
        ratios[ratios.len() - 1]
    );
    row
}

/// Times `body` on what `setup` made (setup and the drop of the result untimed).
fn timed<S, T>(setup: impl FnOnce() -> S, body: impl FnOnce(S) -> T) -> Duration {
    let s = setup();
    let t0 = Instant::now();
    let out = body(s);
    let d = t0.elapsed();
    drop(black_box(out));
    d
}

/// Rounds of the read rows (cheap, and the closest to their goal).
const READ_ROUNDS: usize = 25;

/// Lookups at stored (`hit`) or gap indices of the two built trees, the same random indices for
/// both in a round.
fn lookups(n: u64, hit: bool, rows: &mut Vec<Row>) {
    let trees = [build(Mode::Exclusive, n), build(Mode::Rcu, n)];
    let count = 200_000u64;
    let mut seed = XorShift64::new();
    let mut start = seed.next_u64();
    let mut last = Mode::Rcu;
    let name = if hit { "lookup_hit" } else { "lookup_miss" };
    rows.push(alternate(name, n, count, READ_ROUNDS, |m| {
        // A new index sequence per round, shared by the two modes of the round.
        if m == last {
            start = seed.next_u64();
        }
        last = m;
        let t = &trees[(m == Mode::Rcu) as usize];
        let guard = t.pin();
        let mut rng = XorShift64(start);
        let t0 = Instant::now();
        let mut found = 0u64;
        for _ in 0..count {
            let x = rng.next_u64();
            let i = pick(x, n);
            let k = ((x & 0xffff) * if hit { 6 } else { 4 }) >> 16;
            let at = if hit { 10 * i + k } else { 10 * i + 6 + k };
            found += black_box(t.load(at, &guard)).is_some() as u64;
        }
        let d = t0.elapsed();
        assert_eq!(found, if hit { count } else { 0 });
        d
    }));
}

/// Full iterations of the two built trees.
fn iterate(n: u64, rows: &mut Vec<Row>) {
    let trees = [build(Mode::Exclusive, n), build(Mode::Rcu, n)];
    let passes = (1_000_000 / n).max(1);
    rows.push(alternate("iterate", n, n * passes, READ_ROUNDS, |m| {
        let t = &trees[(m == Mode::Rcu) as usize];
        let guard = t.pin();
        let t0 = Instant::now();
        for _ in 0..passes {
            let sum: u64 = t.iter(&guard).map(|(_, v)| v.get()).sum();
            assert_eq!(sum, n * (n - 1) / 2);
        }
        t0.elapsed()
    }));
}

fn main() {
    let quick = support::quick();
    let sizes: &[u64] = if quick {
        &[1_000, 100_000]
    } else {
        &[1_000, 100_000, 1_000_000]
    };
    let rounds = |n: u64| {
        if quick {
            5
        } else if n >= 1_000_000 {
            7
        } else {
            15
        }
    };
    println!("\nmodes: RCU mode ÷ exclusive mode, alternated in one process (best ns per op; ratio: median of rounds, range)");
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>8} {:>14}",
        "workload", "n", "excl ns", "RCU ns", "ratio", "range"
    );
    // `cargo bench` passes `--bench`; the first other argument filters rows by workload.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |w: &str| filter.as_deref().is_none_or(|f| w.contains(f));
    let mut rows = Vec::new();
    for &n in sizes.iter().filter(|_| wanted("lookup_hit")) {
        lookups(n, true, &mut rows);
    }
    for &n in sizes.iter().filter(|_| wanted("lookup_miss")) {
        lookups(n, false, &mut rows);
    }
    for &n in sizes.iter().filter(|_| wanted("build")) {
        let calls = (1_000_000 / n).max(1);
        rows.push(alternate("build", n, n * calls, rounds(n), |m| {
            (0..calls)
                .map(|_| timed(|| (), |_| build(m, n)))
                .sum::<Duration>()
        }));
    }
    let iter_sizes: &[u64] = if quick {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    for &n in iter_sizes.iter().filter(|_| wanted("iterate")) {
        iterate(n, &mut rows);
    }
    for &n in sizes.iter().filter(|_| wanted("random_store")) {
        let ranges = support::random_ranges(n as usize);
        let calls = (100_000 / n).max(1);
        rows.push(alternate("random_store", n, n * calls, rounds(n), |m| {
            (0..calls)
                .map(|_| {
                    timed(
                        || MapleTree::with_options(Options::new().alloc(true)),
                        |mut t| {
                            for (i, &(a, b)) in ranges.iter().enumerate() {
                                store(&mut t, m, a, b, i as u64);
                            }
                            t
                        },
                    )
                })
                .sum::<Duration>()
        }));
    }
    for &n in sizes.iter().filter(|_| wanted("erase_half")) {
        let calls = (100_000 / n).max(1);
        rows.push(alternate("erase_half", n, n / 2 * calls, rounds(n), |m| {
            (0..calls)
                .map(|_| {
                    timed(
                        || build(m, n),
                        |mut t| {
                            for i in (0..n).step_by(2) {
                                let (a, b) = shape(i);
                                erase(&mut t, m, a, b);
                            }
                            t
                        },
                    )
                })
                .sum::<Duration>()
        }));
    }
    // `erase(i)` through the lock (RCU mode, the entry handed back) against the exclusive
    // `remove(i)`, each on a tree built in its own mode: every second range taken out.
    for &n in sizes
        .iter()
        .filter(|&&n| n >= 100_000 && wanted("erase_entry"))
    {
        let calls = (100_000 / n).max(1);
        rows.push(alternate("erase_entry", n, n / 2 * calls, rounds(n), |m| {
            (0..calls)
                .map(|_| {
                    timed(
                        || build(m, n),
                        |mut t| {
                            let mut check = 0u64;
                            for i in (0..n).step_by(2) {
                                let (a, b) = shape(i);
                                let (first, v) = erase_entry(&mut t, m, a + (b - a) / 2);
                                check += (first == a && v == i) as u64;
                            }
                            assert_eq!(check, n.div_ceil(2));
                            t
                        },
                    )
                })
                .sum::<Duration>()
        }));
    }
    if wanted("fork135_old") {
        fork135_old(&mut rows);
    }
    write_json(&rows);
}

/// The old fork form: a fresh tree filled in order from a 135-range source.
fn fork135_old(rows: &mut Vec<Row>) {
    let src = build(Mode::Exclusive, 135);
    rows.push(alternate("fork135_old", 135, 1000, 15, |m| {
        let guard = src.pin();
        (0..1000)
            .map(|_| {
                timed(
                    || MapleTree::with_options(Options::new().alloc(true)),
                    |mut t| {
                        for (r, v) in src.iter(&guard) {
                            store(&mut t, m, *r.start(), *r.end(), v.get());
                        }
                        t
                    },
                )
            })
            .sum::<Duration>()
    }));
}

/// `target/bench-results/modes.json`: one object per row.
fn write_json(rows: &[Row]) {
    let mut json = String::from("[\n");
    for (k, r) in rows.iter().enumerate() {
        let (e, rcu) = r.best_ns();
        let ratios = r.ratios();
        json += &format!(
            "  {{\"workload\": \"{}\", \"n\": {}, \"exclusive_ns\": {e:.2}, \"rcu_ns\": {rcu:.2}, \"ratio\": {:.4}, \"ratio_min\": {:.4}, \"ratio_max\": {:.4}, \"rounds\": {}}}{}\n",
            r.workload,
            r.n,
            r.median(),
            ratios[0],
            ratios[ratios.len() - 1],
            r.rounds.len(),
            if k + 1 < rows.len() { "," } else { "" }
        );
    }
    json += "]\n";
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.json"), json).unwrap();
}
