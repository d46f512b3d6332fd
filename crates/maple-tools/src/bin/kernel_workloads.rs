//! The kernel C tree's timing workloads (`bench_slab` of the kernel oracle: W1–W8 and its two
//! extras, in its order) on this crate's tree, printed as `bench_slab` prints them: one
//! `name ns_per_op` line per workload, `#` lines for extra information. Each workload is timed
//! once, as there; `scripts/bench-vs-kernel.sh` runs the two programs alternately, pinned, and
//! divides row by row.
//!
//! ```text
//! cargo run --release -p maple-tools --bin kernel_workloads [-- --quick]
//! ```
//!
//! The workloads (n = 1,000,000 ranges `[10i, 10i+5]` = `i`; random numbers from xorshift64
//! reseeded to 42 at the start of each random workload, drawn before the timed loop):
//!
//! | row | what |
//! |---|---|
//! | `seq_store` | the ranges stored in order into an empty range tree (`exclusive()`) |
//! | `load_hit`, `load_miss` | 10 M `load`s at `10*(x%n) + x'%6` (stored) and `10*(x%n) + 6 + x'%4` (gap), one guard |
//! | `fork134` | 100,000 times: a fresh allocation tree filled in order from the 135-range source (`[10i, 10i+5]`, i = 0..=134), then dropped |
//! | `fork134_mt_dup` | 100,000 times: `dup` of that source, then dropped |
//! | `iterate` | the W1 tree by `find` from the root per entry (`mt_for_each`), one guard |
//! | `iterate_mas` | the same by the iterator (`mas_for_each`) |
//! | `seq_store_alloc_range` | `seq_store` into an allocation tree |
//! | `empty_area_rev` | 1 M `empty_area_rev(lo, lo + 10000, 3)` on it, `lo = x % (10n - 10000)` (each pins a guard; the C tree's run under one `rcu_read_lock`) |
//! | `erase_half` | `erase(10i)` for even i on the W1 tree |
//! | `random_store` | 1 M stores `[s, s+len-1]`, `s = x % (2^32 - 64)`, `len = 1 + x' % 64`, into an empty range tree |
//!
//! Rows ending in `_locked` repeat a write row through the writer lock (RCU mode, readers
//! allowed); the C tree's rows are without `MT_FLAGS_USE_RCU`. `--quick` divides every count by
//! 100 (a smoke run).

use std::hint::black_box;
use std::time::Instant;

use maple_tree::{Guard, MapleTree, Value};

/// The benchmarks' xorshift64 (seeded 42): the C bench's generator, reseeded per workload.
#[path = "../../../../benches/support/mod.rs"]
mod support;
use support::XorShift64 as Xs64;

/// The counts of one run.
struct Counts {
    seq: u64,
    load: u64,
    fork: u64,
    rstore: u64,
    gap: u64,
}

const FORK_ENTRIES: u64 = 135;
const GAP_WINDOW: u64 = 10_000;

fn report(name: &str, start: Instant, ops: u64) {
    let ns = start.elapsed().as_nanos() as f64;
    println!("{name} {:.2}", ns / ops as f64);
}

fn fill_seq(t: &mut MapleTree<Value>, n: u64, locked: bool) {
    if locked {
        for i in 0..n {
            t.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
        }
    } else {
        let mut w = t.exclusive();
        for i in 0..n {
            w.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
        }
    }
}

/// `seq_store` into `t` (`name`), timed; then the `#` line on its shape (`label`).
fn timed_fill(name: &str, label: &str, t: &mut MapleTree<Value>, c: &Counts) {
    let t0 = Instant::now();
    fill_seq(t, c.seq, false);
    report(name, t0, c.seq);
    let s = t.stats();
    let bytes = (s.nodes_allocated - s.nodes_freed) as f64 * 256.0 / c.seq as f64;
    println!(
        "# {label}: bytes_per_entry={bytes:.2} height={}",
        t.height()
    );
}

fn seq_store(c: &Counts) -> MapleTree<Value> {
    let mut t = MapleTree::new();
    timed_fill("seq_store", "after W1", &mut t, c);
    t
}

fn loads(t: &MapleTree<Value>, c: &Counts) {
    let n = c.seq;
    let draw = |gap: bool| {
        let mut x = Xs64::new();
        (0..c.load)
            .map(|_| {
                let r = x.next_u64() % n;
                if gap {
                    10 * r + 6 + x.next_u64() % 4
                } else {
                    10 * r + x.next_u64() % 6
                }
            })
            .collect::<Vec<u64>>()
    };
    let g = t.pin();
    let idx = draw(false);
    let t0 = Instant::now();
    let sum = load_pass(t, &g, &idx);
    report("load_hit", t0, c.load);
    assert!(idx[..1000]
        .iter()
        .all(|&i| t.load(i, &g).map(Value::get) == Some(i / 10)));
    println!("# load_hit checksum {sum}");
    let idx = draw(true);
    let t0 = Instant::now();
    let hits = load_pass(t, &g, &idx);
    report("load_miss", t0, c.load);
    assert_eq!(hits, 0, "load_miss found entries");
}

/// The loads of `idx`, the sum of what they found. Out of line, so that a profiler can count
/// it alone (`valgrind --tool=callgrind --toggle-collect='*load_pass*'`, as `mtree_load` on the
/// C side).
#[inline(never)]
fn load_pass(t: &MapleTree<Value>, g: &Guard, idx: &[u64]) -> u64 {
    let mut sum = 0u64;
    for &i in idx {
        sum = sum.wrapping_add(t.load(i, g).map_or(0, Value::get));
    }
    sum
}

fn forks(c: &Counts) {
    let src = MapleTree::new_alloc();
    for i in 0..FORK_ENTRIES {
        src.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
    }
    let g = src.pin();
    let mut stored = 0u64;
    let t0 = Instant::now();
    for _ in 0..c.fork {
        let mut new = MapleTree::<Value>::new_alloc();
        {
            let mut w = new.exclusive();
            for (r, x) in src.iter(&g) {
                w.store_range(r, x).unwrap();
                stored += 1;
            }
        }
        drop(black_box(new));
    }
    report("fork134", t0, c.fork);
    assert_eq!(stored, c.fork * FORK_ENTRIES, "fork134 count");
    let t0 = Instant::now();
    for _ in 0..c.fork {
        drop(black_box(src.dup()));
    }
    report("fork134_mt_dup", t0, c.fork);
}

fn iterate(t: &MapleTree<Value>, c: &Counts) {
    let g = t.pin();
    let (mut index, mut n, mut sum) = (0u64, 0u64, 0u64);
    let t0 = Instant::now();
    while let Some(x) = t.find(&mut index, u64::MAX, &g) {
        sum = sum.wrapping_add(x.get());
        n += 1;
        if index == 0 {
            break;
        }
    }
    report("iterate", t0, n);
    assert_eq!(n, c.seq, "iterate count");
    println!("# iterate checksum {sum}");
    let (mut n, mut sum) = (0u64, 0u64);
    let t0 = Instant::now();
    for (_, x) in t.iter(&g) {
        sum = sum.wrapping_add(x.get());
        n += 1;
    }
    report("iterate_mas", t0, n);
    assert_eq!(n, c.seq, "iterate_mas count");
    black_box(sum);
}

fn gap_search(c: &Counts) {
    let mut t = MapleTree::new_alloc();
    timed_fill("seq_store_alloc_range", "alloc-range tree", &mut t, c);
    let mut x = Xs64::new();
    let lo: Vec<u64> = (0..c.gap)
        .map(|_| x.next_u64() % (10 * c.seq - GAP_WINDOW))
        .collect();
    let mut sum = 0u64;
    let t0 = Instant::now();
    for &l in &lo {
        sum = sum.wrapping_add(t.empty_area_rev(l..=l + GAP_WINDOW, 3).unwrap());
    }
    report("empty_area_rev", t0, c.gap);
    println!("# empty_area_rev checksum {sum}");
    for &l in &lo[..1000.min(lo.len())] {
        let s = t.empty_area_rev(l..=l + GAP_WINDOW, 3).unwrap();
        assert!(s >= l && s + 2 <= l + GAP_WINDOW && !t.contains(s) && !t.contains(s + 2));
    }
}

fn erase_half(t: &mut MapleTree<Value>, c: &Counts, locked: bool) {
    let t0 = Instant::now();
    if locked {
        for i in (0..c.seq).step_by(2) {
            assert_eq!(
                t.erase(10 * i).map(|e| e.range()),
                Some(10 * i..=10 * i + 5)
            );
        }
        report("erase_half_locked", t0, c.seq / 2);
    } else {
        let mut w = t.exclusive();
        for i in (0..c.seq).step_by(2) {
            assert_eq!(
                w.erase(10 * i).map(|e| e.range()),
                Some(10 * i..=10 * i + 5)
            );
        }
        report("erase_half", t0, c.seq / 2);
    }
}

fn random_store(c: &Counts, locked: bool) {
    let mut x = Xs64::new();
    let ranges: Vec<(u64, u64)> = (0..c.rstore)
        .map(|_| {
            let s = x.next_u64() % ((1 << 32) - 64);
            (s, s + x.next_u64() % 64)
        })
        .collect();
    let mut t = MapleTree::new();
    let t0 = Instant::now();
    if locked {
        for (i, &(a, b)) in (0..).zip(&ranges) {
            t.store_range(a..=b, Value::new(i)).unwrap();
        }
        report("random_store_locked", t0, c.rstore);
    } else {
        let mut w = t.exclusive();
        for (i, &(a, b)) in (0..).zip(&ranges) {
            w.store_range(a..=b, Value::new(i)).unwrap();
        }
        drop(w);
        report("random_store", t0, c.rstore);
    }
    println!("# random tree: height={}", t.height());
}

fn main() {
    let div = if std::env::args().any(|a| a == "--quick") {
        100
    } else {
        1
    };
    let c = Counts {
        seq: 1_000_000 / div,
        load: 10_000_000 / div,
        fork: 100_000 / div,
        rstore: 1_000_000 / div,
        gap: 1_000_000 / div,
    };
    let mut t = seq_store(&c);
    // The loads right after the build, as in the C bench (the locked build comes after them).
    loads(&t, &c);
    let mut locked = MapleTree::new();
    let t0 = Instant::now();
    fill_seq(&mut locked, c.seq, true);
    report("seq_store_locked", t0, c.seq);
    forks(&c);
    iterate(&t, &c);
    gap_search(&c);
    erase_half(&mut t, &c, false);
    erase_half(&mut locked, &c, true);
    drop((t, locked));
    random_store(&c, false);
    random_store(&c, true);
}
