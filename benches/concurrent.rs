//! Reader lookup rate alone and beside one writer storing continuously (the goal in BENCHMARKS.md:
//! the writer may cost readers at most 20%), for the maple tree (lock-free readers, RCU-mode
//! writer), `parking_lot::RwLock<BTreeMap>` and `std::sync::RwLock<BTreeMap>` (the `BTreeMap` range
//! map), and `scc::TreeIndex`, in one run.
//!
//! The map holds ranges `[10i, 10i+5]` = `i` (1,000,000 of them; 100,000 in quick mode). The
//! writer loops over random `i`: erase range `i`, store it again (one lock acquisition for the
//! pair), so every write rebuilds or rewrites a leaf. The reader (the main thread)
//! looks up random stored indices and checks each answer is `i` or, mid-rewrite, nothing.
//!
//! Not a criterion benchmark: reader rates under a busy writer are heavy-tailed (a starved reader
//! gets whole batches through only when the writer is descheduled), so each row is total lookups
//! over total time in fixed windows, alternated alone / busy. Results also go to
//! `target/bench-results/concurrent.json`.
//!
//! Run: `cargo bench --bench concurrent` (`MAPLE_BENCH_QUICK=1` for a smoke run).

mod support;

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use maple_tree::{MapleTree, Value};
use support::btree_range::BTreeRangeMap;
use support::{pick, shape, XorShift64};

/// A map shared by one writer and the reader.
trait Shared: Sync {
    const NAME: &'static str;
    fn build(n: u64) -> Self;
    /// Looks up `count` random stored indices (drawn from `rng`); returns how many were found.
    fn read_batch(&self, rng: &mut XorShift64, n: u64, count: u64) -> u64;
    /// Erases range `i` and stores it again.
    fn rewrite(&self, i: u64);
}

/// The index looked up and the range it falls in.
#[inline]
fn query(rng: &mut XorShift64, n: u64) -> (u64, u64) {
    let x = rng.next_u64();
    let i = pick(x, n);
    (10 * i + (((x & 0xffff) * 6) >> 16), i)
}

#[inline]
fn check(got: Option<u64>, i: u64) -> u64 {
    assert!(
        got.is_none() || got == Some(i),
        "read {got:?} for range {i}"
    );
    got.is_some() as u64
}

impl Shared for MapleTree<Value> {
    const NAME: &'static str = "maple";
    fn build(n: u64) -> Self {
        let mut t = MapleTree::new_alloc();
        {
            let mut w = t.exclusive();
            for i in 0..n {
                let (a, b) = shape(i);
                w.store_range(a..=b, Value::new(i)).unwrap();
            }
        }
        t
    }
    fn read_batch(&self, rng: &mut XorShift64, n: u64, count: u64) -> u64 {
        let mut found = 0;
        let mut left = count;
        while left > 0 {
            // Re-pin every 1,024 lookups so that the writer's garbage can be reclaimed.
            let guard = self.pin();
            for _ in 0..left.min(1024) {
                let (x, i) = query(rng, n);
                found += check(self.load(x, &guard).map(Value::get), i);
            }
            left -= left.min(1024);
        }
        found
    }
    fn rewrite(&self, i: u64) {
        let (a, b) = shape(i);
        let mut w = self.lock();
        w.erase_range(a..=b).unwrap();
        w.store_range(a..=b, Value::new(i)).unwrap();
    }
}

struct PlRwLock(parking_lot::RwLock<BTreeRangeMap>);
impl Shared for PlRwLock {
    const NAME: &'static str = "rwlock-btreemap-parking_lot";
    fn build(n: u64) -> Self {
        PlRwLock(parking_lot::RwLock::new(build_btree(n)))
    }
    fn read_batch(&self, rng: &mut XorShift64, n: u64, count: u64) -> u64 {
        let mut found = 0;
        for _ in 0..count {
            let (x, i) = query(rng, n);
            found += check(self.0.read().get(x), i);
        }
        found
    }
    fn rewrite(&self, i: u64) {
        let (a, b) = shape(i);
        let mut m = self.0.write();
        m.erase(a, b);
        m.store(a, b, i);
    }
}

struct StdRwLock(std::sync::RwLock<BTreeRangeMap>);
impl Shared for StdRwLock {
    const NAME: &'static str = "rwlock-btreemap-std";
    fn build(n: u64) -> Self {
        StdRwLock(std::sync::RwLock::new(build_btree(n)))
    }
    fn read_batch(&self, rng: &mut XorShift64, n: u64, count: u64) -> u64 {
        let mut found = 0;
        for _ in 0..count {
            let (x, i) = query(rng, n);
            found += check(self.0.read().unwrap().get(x), i);
        }
        found
    }
    fn rewrite(&self, i: u64) {
        let (a, b) = shape(i);
        let mut m = self.0.write().unwrap();
        m.erase(a, b);
        m.store(a, b, i);
    }
}

fn build_btree(n: u64) -> BTreeRangeMap {
    let mut m = BTreeRangeMap::new();
    for i in 0..n {
        let (a, b) = shape(i);
        m.push(a, b, i);
    }
    m
}

/// `scc::TreeIndex` keyed by range start; the reader's lookup is a floor search (`locate`).
struct Scc(scc::TreeIndex<u64, (u64, u64)>);
impl Shared for Scc {
    const NAME: &'static str = "scc";
    fn build(n: u64) -> Self {
        let t = scc::TreeIndex::new();
        for i in 0..n {
            let (a, b) = shape(i);
            t.insert_sync(a, (b, i)).unwrap();
        }
        Scc(t)
    }
    fn read_batch(&self, rng: &mut XorShift64, n: u64, count: u64) -> u64 {
        use scc::tree_index::Proximity;
        let mut found = 0;
        let mut left = count;
        while left > 0 {
            let guard = scc::Guard::new();
            for _ in 0..left.min(1024) {
                let (x, i) = query(rng, n);
                let floor = match self.0.locate(&x, &guard) {
                    Proximity::Exact(it) | Proximity::Between(it) => it.get(),
                    Proximity::Smaller(it) => it.get_back(),
                    Proximity::Larger(_) | Proximity::Empty => None,
                };
                let got = match floor {
                    Some((_, &(e, v))) if e >= x => Some(v),
                    _ => None,
                };
                found += check(got, i);
            }
            left -= left.min(1024);
        }
        found
    }
    fn rewrite(&self, i: u64) {
        let (a, b) = shape(i);
        self.0.remove_sync(&a);
        let _ = self.0.insert_sync(a, (b, i));
    }
}

fn size() -> u64 {
    if support::quick() {
        100_000
    } else {
        1_000_000
    }
}

/// Nanoseconds this thread has spent on a CPU (`/proc/thread-self/schedstat`): on a machine
/// shared with other work, the reader's rate per CPU-second separates what the writer costs the
/// reader through the data structure (lock waits, cache misses, retries) from what it costs by
/// taking a core.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// One measurement window: lookups per wall second and per reader CPU second.
#[derive(Clone, Copy, Default)]
struct Rate {
    lookups: u64,
    wall_ns: u64,
    cpu_ns: u64,
}

impl Rate {
    fn per_wall(&self) -> f64 {
        self.lookups as f64 * 1e9 / self.wall_ns as f64
    }
    fn per_cpu(&self) -> f64 {
        self.lookups as f64 * 1e9 / self.cpu_ns.max(1) as f64
    }
    fn add(&mut self, o: Rate) {
        self.lookups += o.lookups;
        self.wall_ns += o.wall_ns;
        self.cpu_ns += o.cpu_ns;
    }
}

/// Lookups in batches of 256 until `window` has passed.
fn read_for<S: Shared>(map: &S, n: u64, rng: &mut XorShift64, window: Duration) -> Rate {
    let (t0, c0) = (Instant::now(), thread_cpu_ns());
    let (mut looked, mut found) = (0u64, 0u64);
    while t0.elapsed() < window {
        found += black_box(map.read_batch(rng, n, 256));
        looked += 256;
    }
    let r = Rate {
        lookups: looked,
        wall_ns: t0.elapsed().as_nanos() as u64,
        cpu_ns: thread_cpu_ns() - c0,
    };
    // Mid-rewrite misses are allowed beside a writer, but most lookups must hit.
    assert!(found * 10 >= looked * 9, "{}: {found} of {looked}", S::NAME);
    r
}

struct Row {
    name: &'static str,
    alone: Rate,
    busy: Rate,
    writes_per_s: f64,
}

fn run<S: Shared>(rounds: usize, window: Duration) -> Row {
    let n = size();
    let map = S::build(n);
    let mut rng = XorShift64::new();
    let (mut alone, mut busy) = (Rate::default(), Rate::default());
    let (mut writes, mut write_ns) = (0u64, 0u64);
    // Alternate alone / with a writer, so that drifts in the machine's load hit both alike.
    for _ in 0..rounds {
        alone.add(read_for(&map, n, &mut rng, window));
        let stop = AtomicBool::new(false);
        let done = AtomicU64::new(0);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut wrng = XorShift64(7);
                let mut k = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    map.rewrite(pick(wrng.next_u64(), n));
                    k += 1;
                }
                done.store(k, Ordering::Relaxed);
            });
            busy.add(read_for(&map, n, &mut rng, window));
            stop.store(true, Ordering::Relaxed);
        });
        write_ns += t0.elapsed().as_nanos() as u64;
        writes += done.load(Ordering::Relaxed);
    }
    assert!(writes > 0, "{}: the writer never ran", S::NAME);
    Row {
        name: S::NAME,
        alone,
        busy,
        writes_per_s: writes as f64 * 1e9 / write_ns as f64,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported (the four rows belong
    // together).
    let (rounds, window) = if support::quick() {
        (1, Duration::from_millis(150))
    } else {
        (3, Duration::from_secs(1))
    };
    let rows = [
        run::<MapleTree<Value>>(rounds, window),
        run::<PlRwLock>(rounds, window),
        run::<StdRwLock>(rounds, window),
        run::<Scc>(rounds, window),
    ];
    println!(
        "\nconcurrent: {} ranges, reader lookups alone vs beside one writer ({rounds} x {:?} each, alternated)",
        size(),
        window
    );
    println!(
        "{:<30} {:>12} {:>12} {:>8} {:>14} {:>12}",
        "map", "alone /s", "busy /s", "ratio", "ratio per CPU", "writes /s"
    );
    let mut json = String::from("[\n");
    for (k, r) in rows.iter().enumerate() {
        let ratio = r.busy.per_wall() / r.alone.per_wall();
        let ratio_cpu = r.busy.per_cpu() / r.alone.per_cpu();
        println!(
            "{:<30} {:>12.0} {:>12.0} {:>8.3} {:>14.3} {:>12.0}",
            r.name,
            r.alone.per_wall(),
            r.busy.per_wall(),
            ratio,
            ratio_cpu,
            r.writes_per_s
        );
        json += &format!(
            "  {{\"name\": \"{}\", \"alone_per_s\": {:.0}, \"busy_per_s\": {:.0}, \"ratio\": {:.4}, \"alone_per_cpu_s\": {:.0}, \"busy_per_cpu_s\": {:.0}, \"ratio_cpu\": {:.4}, \"writes_per_s\": {:.0}}}{}\n",
            r.name,
            r.alone.per_wall(),
            r.busy.per_wall(),
            ratio,
            r.alone.per_cpu(),
            r.busy.per_cpu(),
            ratio_cpu,
            r.writes_per_s,
            if k + 1 < rows.len() { "," } else { "" }
        );
    }
    json += "]\n";
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("concurrent.json"), json).unwrap();
}
