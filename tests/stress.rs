//! Real-thread stress test of the concurrency contract (README.md, "Guarantees"): several lock-free
//! readers against one writer running a seeded mixed workload that hits every write path, through
//! `Arc<MapleTree>`.
//!
//! The index space is cut into regions by *sentinels*: single-index ranges `[1000 k, 1000 k]`
//! stored first and never written again, so that every iteration must yield all of them (a range
//! unchanged for the whole iteration is never skipped). Every other entry is a fresh [`Payload`]
//! tagged with the range it was stored over and a version from a global clock, so readers can
//! check, without knowing the writer's schedule:
//! - an entry found at index `i` (point load, `load_range`, iteration) was stored over a range
//!   containing every index it is reported for, and is live (not poisoned by `Drop`);
//! - per index, the versions a reader sees never go backwards;
//! - iterations (forward, backward, windowed) yield strictly monotonic, non-overlapping ranges.
//!
//! Time-bounded (`STRESS_SECS`, default 2.5 s per tree kind, two kinds; `scripts/test-all.sh`
//! gives it 30 s, `scripts/stress-long.sh` ten minutes) and seeded (`STRESS_SEED`).
//! The writer checks its own view against a `BTreeMap` model after every round, phases alternate
//! between RCU-mode writes with the readers running and exclusive-mode writes with the readers
//! stopped (slot stores and the `+1` append at the start exist only there), and at the end every
//! path counter must have moved and every entry ever created must have been dropped exactly once
//! after the tree (with its own collector) is dropped.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_epoch::Collector;
use maple_tree::{MapleTree, Options, Stats};

const LIVE: u64 = 0x1157_1157_1157_1157;
const DEAD: u64 = 0xdead_dead_dead_dead;
/// Sentinels at `1000 k` for `k` in `0..REGIONS`; the tail above is for appends.
const REGIONS: u64 = 16;
const SPAN: u64 = 1000;
const TAIL: u64 = REGIONS * SPAN;
/// Drop flags come in chunks of this many entries, made as the writer reaches them, so that a
/// run of any length (`scripts/stress-long.sh`: ten minutes per kind) has room for its entries.
const CHUNK: usize = if cfg!(miri) { 1 << 10 } else { 1 << 20 };
/// Chunks a run may make: 2^32 entries (a byte each, made only as needed).
const CHUNKS: usize = if cfg!(miri) { 1 << 4 } else { 1 << 12 };

/// One entry. `first..=last` is the range it was stored over (it may later be trimmed, never
/// grown); `version` comes from the writer's clock (0 for sentinels).
struct Payload {
    magic: u64,
    first: u64,
    last: u64,
    version: u64,
    serial: usize,
    flags: Arc<DropFlags>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        // SAFETY: `magic` is a plain field of `self`; the volatile write keeps the poison from
        // being optimised away before the box is freed, so a reader racing with the drop (a tree
        // bug) sees it, and TSan reports the race.
        unsafe { std::ptr::write_volatile(&mut self.magic, DEAD) };
        let prev = self.flags.flag(self.serial).fetch_add(1, Ordering::Relaxed);
        assert_eq!(prev, 0, "entry {} dropped twice", self.serial);
    }
}

/// Per-entry drop counts, indexed by serial, in chunks made on demand (by the writer, before the
/// entry exists: a drop always finds its chunk), and the count of entries made.
struct DropFlags(Box<[OnceLock<Box<[AtomicU8]>>]>, AtomicU64);

impl DropFlags {
    fn new() -> Arc<Self> {
        Arc::new(DropFlags(
            (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            AtomicU64::new(0),
        ))
    }

    /// The drop count of entry `serial` (its chunk made if it is the first of it).
    fn flag(&self, serial: usize) -> &AtomicU8 {
        let chunk = self.0.get(serial / CHUNK).expect("raise CHUNKS");
        let chunk = chunk.get_or_init(|| (0..CHUNK).map(|_| AtomicU8::new(0)).collect());
        &chunk[serial % CHUNK]
    }

    fn entry(self: &Arc<Self>, first: u64, last: u64, version: u64) -> Box<Payload> {
        let serial = self.1.fetch_add(1, Ordering::Relaxed) as usize;
        self.flag(serial);
        Box::new(Payload {
            magic: LIVE,
            first,
            last,
            version,
            serial,
            flags: Arc::clone(self),
        })
    }

    fn assert_all_dropped_once(&self) {
        let n = self.1.load(Ordering::Relaxed) as usize;
        for i in 0..n {
            let f = self.flag(i).load(Ordering::Relaxed);
            assert_eq!(f, 1, "entry {i} dropped {f} times");
        }
    }
}

type Tree = MapleTree<Box<Payload>>;

/// splitmix64: a tiny seeded generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Checks one entry reported for `[lo, hi]`.
fn check_entry(p: &Payload, lo: u64, hi: u64) {
    // Plain reads of the payload: if the tree let a reader reach an entry being dropped, this
    // read would race with `Drop`'s poisoning write (TSan and Miri report it; natively the poison
    // usually shows).
    let magic = p.magic;
    assert_eq!(
        magic, LIVE,
        "reader reached a dropped entry (serial {})",
        p.serial
    );
    assert!(lo <= hi, "empty range [{lo}, {hi}]");
    assert!(
        p.first <= lo && hi <= p.last,
        "range [{lo}, {hi}] reported for an entry stored over [{}, {}] (version {})",
        p.first,
        p.last,
        p.version
    );
    if p.version == 0 {
        assert!(
            lo == hi && lo % SPAN == 0 && lo < TAIL,
            "sentinel reported as [{lo}, {hi}]"
        );
    }
}

/// Checks an iteration given in index order; returns the sentinels seen.
fn check_ranges(got: &[(u64, u64, u64)], what: &str) -> usize {
    for w in got.windows(2) {
        assert!(
            w[0].1 < w[1].0,
            "{what}: ranges out of order or overlapping: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
    got.iter().filter(|r| r.2 == 0).count()
}

/// Number of probe indices whose versions a reader tracks.
const PROBES: usize = 64;

/// Runs checks until `stop`; returns how many.
fn reader(tree: Arc<Tree>, stop: Arc<AtomicBool>, seed: u64, probes: Arc<Vec<u64>>) -> u64 {
    let mut rng = Rng(seed);
    let mut seen = [0u64; PROBES];
    let mut checks = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let guard = tree.pin();
        match rng.below(10) {
            0..=3 => {
                // Point loads of the probes: versions never go backwards.
                for (k, &i) in probes.iter().enumerate() {
                    if let Some(p) = tree.load(i, &guard) {
                        check_entry(p, i, i);
                        assert!(
                            p.version >= seen[k],
                            "index {i}: version {} after {}",
                            p.version,
                            seen[k]
                        );
                        seen[k] = p.version;
                    }
                }
                for k in 0..REGIONS {
                    let p = tree.load(k * SPAN, &guard).expect("sentinel missing");
                    check_entry(p, k * SPAN, k * SPAN);
                    assert_eq!(p.version, 0, "sentinel {k} replaced");
                }
            }
            4 => {
                let i = rng.below(TAIL + 2000);
                if let Some((lo, hi, p)) = tree.load_range(i, &guard) {
                    assert!(lo <= i && i <= hi, "load_range({i}) = [{lo}, {hi}]");
                    check_entry(p, lo, hi);
                }
            }
            5..=6 => {
                let got: Vec<_> = tree
                    .iter(&guard)
                    .map(|(a, b, p)| {
                        check_entry(p, a, b);
                        (a, b, p.version)
                    })
                    .collect();
                assert_eq!(
                    check_ranges(&got, "forward"),
                    REGIONS as usize,
                    "forward iteration skipped a sentinel"
                );
            }
            7..=8 => {
                let mut got: Vec<_> = tree
                    .iter(&guard)
                    .rev()
                    .map(|(a, b, p)| {
                        check_entry(p, a, b);
                        (a, b, p.version)
                    })
                    .collect();
                got.reverse();
                assert_eq!(
                    check_ranges(&got, "backward"),
                    REGIONS as usize,
                    "backward iteration skipped a sentinel"
                );
            }
            _ => {
                // A windowed iteration over a region and its neighbours, both ways alternately.
                let k = rng.below(REGIONS - 2);
                let (a, b) = (k * SPAN, (k + 2) * SPAN);
                let it = tree.range(a..=b, &guard).map(|(x, y, p)| {
                    check_entry(p, x, y);
                    (x, y, p.version)
                });
                let got: Vec<_> = if rng.chance(50) {
                    it.collect()
                } else {
                    let mut v: Vec<_> = it.rev().collect();
                    v.reverse();
                    v
                };
                let sentinels = check_ranges(&got, "range");
                assert_eq!(
                    sentinels, 3,
                    "windowed iteration [{a}, {b}] skipped a sentinel: {got:?}"
                );
            }
        }
        checks += 1;
    }
    checks
}

/// The writer's model: non-empty ranges `first -> (last, version)`, the tests' shared one.
#[path = "kit/ranges.rs"]
mod kit;
type Model = kit::Ranges;

/// The workload never writes over a sentinel.
fn assert_no_sentinel(a: u64, b: u64) {
    assert!(a <= b);
    if a < TAIL {
        let k = a.div_ceil(SPAN);
        assert!(
            k * SPAN > b,
            "write [{a}, {b}] covers sentinel {}",
            k * SPAN
        );
    }
}

/// The writer: one mixed write at a time, through `write` (RCU mode or exclusive), model in step.
struct Writer {
    rng: Rng,
    model: Model,
    clock: u64,
    flags: Arc<DropFlags>,
    alloc: bool,
}

impl Writer {
    /// A random range strictly inside region `k` (never a sentinel).
    fn region_range(&mut self, max_len: u64) -> (u64, u64) {
        let k = self.rng.below(REGIONS);
        let a = k * SPAN + 1 + self.rng.below(SPAN - 1);
        let len = 1 + self.rng.below(max_len);
        (a, (a + len - 1).min(k * SPAN + SPAN - 1))
    }

    fn store(&mut self, w: &mut maple_tree::WriteGuard<'_, Box<Payload>>, a: u64, b: u64) {
        assert_no_sentinel(a, b);
        self.clock += 1;
        w.store_range(a..=b, self.flags.entry(a, b, self.clock))
            .unwrap();
        self.model.store(a, b, Some(self.clock));
    }

    fn erase(&mut self, w: &mut maple_tree::WriteGuard<'_, Box<Payload>>, a: u64, b: u64) {
        assert_no_sentinel(a, b);
        w.erase_range(a..=b).unwrap();
        self.model.store(a, b, None);
    }

    /// Grows the tree by one level with in-order appends past the data (one lock per append,
    /// readers running), then erases them all in one store: the root collapses back (`shrink`).
    /// With leaves filled to 16 slots by in-order builds, random phases alone rarely change the
    /// height, so both directions are made to happen here.
    fn grow_and_shrink(&mut self, tree: &Tree) {
        self.erase(&mut tree.lock(), TAIL + 1, u64::MAX);
        let h = tree.lock().height();
        let mut a = TAIL + 10;
        while tree.lock().height() == h {
            assert!(a < TAIL + 10_000_000, "the tree never grew");
            self.store(&mut tree.lock(), a, a + 5);
            a += 10;
        }
        self.erase(&mut tree.lock(), TAIL + 1, u64::MAX);
    }

    /// One write; `phase` biases the mix (0: mixed, 1: append-heavy, 2: erase-heavy, 3: fill).
    fn step(&mut self, w: &mut maple_tree::WriteGuard<'_, Box<Payload>>, phase: u32) {
        let r = self.rng.below(100);
        match phase {
            1 => {
                // Appends at the tail: three-way appends into the trailing NULL, `+1` appends at the
                // end ([x, MAX] chasing), occasionally trimmed back.
                // `start`: where the last range starts if it reaches `u64::MAX`, else one past
                // the last range (the trailing NULL's start).
                let tail = self.model.at(u64::MAX).map(|(x, _, _)| x);
                let start = tail.unwrap_or_else(|| self.model.last_end().max(TAIL) + 1);
                if r < 45 {
                    // Strictly inside the last range (or trailing NULL): a three-way append.
                    let a = start + 1 + self.rng.below(3);
                    let b = a + self.rng.below(4);
                    self.store(w, a, b);
                } else if r < 90 {
                    let a = start + self.rng.below(5);
                    self.store(w, a, u64::MAX);
                } else {
                    let a = TAIL + 1 + self.rng.below(start.saturating_sub(TAIL).max(1));
                    self.erase(w, a, u64::MAX);
                }
            }
            2 => {
                if r < 60 {
                    let (a, b) = self.region_range(400);
                    self.erase(w, a, b);
                } else if r < 80 {
                    let i = 1 + self.rng.below(TAIL + 500);
                    if i % SPAN != 0 || i >= TAIL {
                        if let Some((a, b, _)) = self.model.at(i) {
                            assert_eq!(w.erase(i), Some((a, b)));
                            self.model.store(a, b, None);
                        }
                    }
                } else {
                    let (a, b) = self.region_range(5);
                    self.store(w, a, b);
                }
            }
            3 => {
                let (a, b) = self.region_range(4);
                self.store(w, a, b);
            }
            _ => {
                if r < 25 {
                    let (a, b) = self.region_range(8);
                    self.store(w, a, b);
                } else if r < 40 {
                    // Exact fit: overwrite an existing range whole.
                    let (i, _) = self.region_range(1);
                    if let Some((a, b, _)) = self.model.at(i) {
                        self.store(w, a, b);
                    }
                } else if r < 50 {
                    // Boundary moves (slot stores in exclusive mode): overlap a range's edge.
                    let (i, _) = self.region_range(1);
                    if let Some((a, b, _)) = self.model.at(i) {
                        let k = i / SPAN;
                        let lo = a.saturating_sub(self.rng.below(3)).max(k * SPAN + 1);
                        let hi = (a + self.rng.below(b - a + 1)).min(k * SPAN + SPAN - 1);
                        self.store(w, lo, hi);
                    }
                } else if r < 60 {
                    // Spanning: a wide store across many ranges (and leaves).
                    let (a, b) = self.region_range(300);
                    self.store(w, a, b);
                } else if r < 70 {
                    let (a, b) = self.region_range(30);
                    self.erase(w, a, b);
                } else if r < 80 && self.alloc {
                    let k = self.rng.below(REGIONS);
                    let size = 1 + self.rng.below(6);
                    let (min, max) = (k * SPAN + 1, k * SPAN + SPAN - 1);
                    self.clock += 1;
                    let e = self.flags.entry(min, max, self.clock);
                    let got = if self.rng.chance(50) {
                        w.alloc_range(e, size, min, max)
                    } else {
                        w.alloc_rrange(e, size, min, max)
                    };
                    if let Ok(s) = got {
                        self.model.store(s, s + size - 1, Some(self.clock));
                    }
                } else if r < 90 {
                    let (a, b) = self.region_range(3);
                    self.store(w, a, b);
                } else {
                    // Appends strictly inside a region's trailing NULL or at a range's end.
                    let (i, _) = self.region_range(1);
                    if let Some((a, b, _)) = self.model.at(i) {
                        if b > a {
                            let x = a + 1 + self.rng.below(b - a);
                            self.store(w, x, b);
                        }
                    }
                }
            }
        }
    }

    fn check(&self, tree: &Tree) {
        let g = tree.pin();
        let got: Vec<(u64, u64, u64)> = tree.iter(&g).map(|(a, b, p)| (a, b, p.version)).collect();
        let want: Vec<(u64, u64, u64)> =
            self.model.0.iter().map(|(&a, &(b, v))| (a, b, v)).collect();
        assert_eq!(got, want, "tree and model differ");
        tree.validate().unwrap();
    }
}

/// One run; returns the path counters.
fn stress(alloc: bool, seed: u64, size: Size) -> Stats {
    let flags = DropFlags::new();
    let mut tree = Arc::new(Tree::with_options(
        Options::new().alloc(alloc).collector(Collector::new()),
    ));
    let mut wr = Writer {
        rng: Rng(seed),
        model: Model::default(),
        clock: 0,
        flags: Arc::clone(&flags),
        alloc,
    };
    {
        let mut w = tree.lock();
        for k in 0..REGIONS {
            w.store_range(k * SPAN..=k * SPAN, flags.entry(k * SPAN, k * SPAN, 0))
                .unwrap();
            wr.model.store(k * SPAN, k * SPAN, Some(0));
        }
    }
    let probes: Arc<Vec<u64>> = Arc::new(
        (0..PROBES as u64)
            .map(|k| 1 + (k * 7919) % (TAIL - 1))
            .filter(|i| i % SPAN != 0)
            .collect(),
    );
    let deadline = Instant::now() + Duration::from_secs_f64(size.secs);
    let (mut reads, mut writes, mut round) = (0u64, 0u64, 0u32);
    while Instant::now() < deadline || round < size.min_rounds {
        // RCU phase: readers running.
        let stop = Arc::new(AtomicBool::new(false));
        let start = Arc::new(Barrier::new(size.readers + 1));
        let readers: Vec<_> = (0..size.readers as u64)
            .map(|r| {
                let (tree, stop, start, probes) = (
                    Arc::clone(&tree),
                    Arc::clone(&stop),
                    Arc::clone(&start),
                    Arc::clone(&probes),
                );
                let s = seed ^ (u64::from(round) << 32) ^ r;
                std::thread::spawn(move || {
                    start.wait();
                    reader(tree, stop, s, probes)
                })
            })
            .collect();
        start.wait();
        let phase = round % 4;
        let n = if phase == 1 {
            size.writes * 3 / 2
        } else {
            size.writes
        };
        for _ in 0..n {
            let mut w = tree.lock();
            wr.step(&mut w, phase);
            writes += 1;
        }
        if phase == 1 && round % 8 == 1 && size.writes >= 100 {
            wr.grow_and_shrink(&tree);
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            reads += r.join().expect("reader failed");
        }
        wr.check(&tree);
        // Exclusive phase: no readers; in-place slot stores and `+1` appends at the start.
        {
            let t = Arc::get_mut(&mut tree).expect("readers joined");
            let mut w = t.exclusive();
            for _ in 0..size.writes / 4 {
                wr.step(&mut w, 0);
                writes += 1;
            }
        }
        wr.check(&tree);
        round += 1;
    }
    let stats = tree.stats();
    eprintln!("stress alloc={alloc} seed={seed:#x}: {round} rounds, {writes} writes, {reads} reader checks, {stats:?}");
    let tree = Arc::try_unwrap(tree).ok().expect("no other reference");
    drop(tree);
    flags.assert_all_dropped_once();
    stats
}

fn assert_every_path(s: &Stats, alloc: bool) {
    let paths = [
        ("exact_fit", s.exact_fit),
        ("slot_store", s.slot_store),
        ("slot_store3", s.slot_store3),
        ("append_end", s.append_end),
        ("append_start", s.append_start),
        ("append_three_way", s.append_three_way),
        ("node_store", s.node_store),
        ("split", s.split),
        ("grow", s.grow),
        ("rebalance", s.rebalance),
        ("spanning_store", s.spanning_store),
        ("shrink", s.shrink),
        ("new_root", s.new_root),
    ];
    for (name, n) in paths {
        assert!(n > 0, "alloc={alloc}: write path {name} never taken: {s:?}");
    }
}

/// How big a run is.
#[derive(Clone, Copy)]
struct Size {
    /// Run at least this long...
    secs: f64,
    /// ... and at least this many rounds (each: an RCU phase with readers, then an exclusive one).
    min_rounds: u32,
    /// Writes per RCU phase (half as many more in append-heavy phases, a quarter as many in each
    /// exclusive phase).
    writes: u32,
    /// Reader threads.
    readers: usize,
}

/// The seed (`STRESS_SEED`) and the full size (`STRESS_SECS`, default 2.5 s per tree kind).
fn params() -> (u64, Size) {
    let seed = std::env::var("STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0001);
    let secs = std::env::var("STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.5);
    let size = Size {
        secs,
        min_rounds: 8,
        writes: 400,
        readers: 3,
    };
    (seed, size)
}

/// Range tree (16-slot internal nodes).
#[test]
#[cfg_attr(miri, ignore)]
fn stress_range_tree() {
    let (seed, size) = params();
    let s = stress(false, seed, size);
    assert_every_path(&s, false);
}

/// Allocation tree (10-slot gap-tracking internal nodes; `alloc_range`/`alloc_rrange` in the mix).
#[test]
#[cfg_attr(miri, ignore)]
fn stress_alloc_tree() {
    let (seed, size) = params();
    let s = stress(true, seed.wrapping_add(1), size);
    assert_every_path(&s, true);
}

/// A run small enough for Miri (which checks the concurrent accesses for data races and the
/// pointer accesses for undefined behaviour on the schedules it tries): one round of each phase,
/// two readers, 24 writes per phase, both tree kinds. Not every path is reached at this size.
#[test]
fn stress_tiny() {
    let size = Size {
        secs: 0.0,
        min_rounds: 4,
        writes: 24,
        readers: 2,
    };
    stress(false, 0x7111, size);
    stress(true, 0x7112, size);
}

// ---- the promise, checked across long write sequences -----------------------------------------
//
// The tests above check what a reader can check alone. The ones below check the promise itself
// (README "Guarantees") against the writer's log. The writer numbers its writes `1, 2, ...`; write
// `v` stores `Value::new(v)` (every stored value is unique), is logged as `(first, last, Some(v))`
// (an erase as the range it emptied, `None`; `clear` as `[0, MAX]`), and only then is `v`
// published in the sequence counter (Release). State `k` is the tree after writes `1..=k`. A read
// loads the counter before (`b`) and after (`a`) it (Acquire): while it ran, the tree was in the
// states `b..=a + 1` (write `a + 1` may have been under way; none after it can have published
// anything the read saw, or the counter load after it would have seen `a + 1`). Readers record
// what they saw; after each phase the checker replays the log from the phase's first state and
// proves:
// - a point load returned the index's entry (or nothing) of some state in its window;
// - an iteration (forward, backward, whole or windowed) yielded strictly increasing,
//   non-overlapping ranges, each of which was exactly a range of some state in its window, and
//   yielded every range of state `b` inside its span that no write of the window touched.
//
// Workloads (one per phase, chosen by the seed): issue 13's "clear, 8 stores, [80, 85], [73, 75]"
// loop (append split, then `+1` append into the truncated leaf), in-order builds (appends, append
// splits, fills, climbs), random stores, random erases. Seed `MAPLE_STRESS_SEED`, duration
// `MAPLE_STRESS_SECS` per tree kind (default 2 s; `scripts/stress-long.sh` runs it for minutes),
// readers `MAPLE_STRESS_READERS` (default 3); `MAPLE_STRESS_APPEND=0` turns the in-place appends
// off (a control run).

mod promise {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    use maple_tree::{MapleTree, Value};

    use super::Rng;

    type Tree = MapleTree<Value>;

    /// One logged write: the range it wrote and the value (`None`: emptied).
    #[derive(Clone, Copy, Debug)]
    struct Logged {
        first: u64,
        last: u64,
        val: Option<u64>,
    }

    /// The reference: the tests' shared range map.
    type Model = super::kit::Ranges;

    /// What a reader saw, with its window `[b, a + 1]` (write numbers).
    enum Obs {
        Point {
            i: u64,
            got: Option<u64>,
        },
        Iter {
            what: &'static str,
            span: (u64, u64),
            got: Vec<(u64, u64, u64)>,
        },
    }

    struct Seen {
        b: u64,
        a: u64,
        obs: Obs,
    }

    /// Indices every reader probes: issue 13's (76, 80, 90, 1000) and boundaries of the workloads.
    const PROBES: [u64; 10] = [0, 73, 75, 76, 80, 86, 90, 1000, 2000, u64::MAX];
    /// Upper end of the random workloads' indices.
    const SPACE: u64 = 4000;
    /// Ranges a reader records per phase at most (then it does point loads only), so a phase's
    /// memory stays bounded.
    const MAX_RECORDED_RANGES: usize = 400_000;

    fn reader(tree: Arc<Tree>, seq: Arc<AtomicU64>, stop: Arc<AtomicBool>, seed: u64) -> Vec<Seen> {
        let mut rng = Rng(seed);
        let mut out = Vec::new();
        let mut ranges = 0usize;
        while !stop.load(Ordering::Relaxed) {
            let kind = if ranges >= MAX_RECORDED_RANGES {
                0
            } else {
                rng.below(8)
            };
            let guard = tree.pin();
            let b = seq.load(Ordering::Acquire);
            let obs = match kind {
                0..=2 => {
                    let i = if rng.chance(70) {
                        PROBES[rng.below(PROBES.len() as u64) as usize]
                    } else {
                        rng.below(SPACE + 100)
                    };
                    Obs::Point {
                        i,
                        got: tree.load(i, &guard).map(|v| v.get()),
                    }
                }
                3..=4 => Obs::Iter {
                    what: "forward",
                    span: (0, u64::MAX),
                    got: tree.iter(&guard).map(|(a, b, v)| (a, b, v.get())).collect(),
                },
                5..=6 => {
                    let mut got: Vec<_> = tree
                        .iter(&guard)
                        .rev()
                        .map(|(a, b, v)| (a, b, v.get()))
                        .collect();
                    got.reverse();
                    Obs::Iter {
                        what: "backward",
                        span: (0, u64::MAX),
                        got,
                    }
                }
                _ => {
                    let lo = rng.below(SPACE);
                    let hi = lo + rng.below(400);
                    let it = tree.range(lo..=hi, &guard).map(|(a, b, v)| (a, b, v.get()));
                    let (what, got) = if rng.chance(50) {
                        ("range forward", it.collect())
                    } else {
                        let mut g: Vec<_> = it.rev().collect();
                        g.reverse();
                        ("range backward", g)
                    };
                    Obs::Iter {
                        what,
                        span: (lo, hi),
                        got,
                    }
                }
            };
            let a = seq.load(Ordering::Acquire);
            drop(guard);
            if let Obs::Iter { got, .. } = &obs {
                ranges += got.len() + 1;
            }
            out.push(Seen { b, a, obs });
        }
        out
    }

    /// The writer: one write per lock acquisition, logged, then published in `seq`.
    struct Writer<'a> {
        tree: &'a Tree,
        seq: &'a AtomicU64,
        log: Vec<Logged>,
        model: Model,
        next: u64,
    }

    impl Writer<'_> {
        fn done(&mut self, l: Logged) {
            self.model.store(l.first, l.last, l.val);
            self.log.push(l);
            self.seq.store(self.next, Ordering::Release);
            self.next += 1;
        }
        fn store(&mut self, first: u64, last: u64) {
            let v = self.next;
            self.tree.store_range(first..=last, Value::new(v)).unwrap();
            self.done(Logged {
                first,
                last,
                val: Some(v),
            });
        }
        fn erase(&mut self, i: u64) {
            let (first, last) = self.tree.erase(i).unwrap_or((1, 0));
            self.done(Logged {
                first,
                last,
                val: None,
            });
        }
        fn erase_range(&mut self, first: u64, last: u64) {
            self.tree.erase_range(first..=last).unwrap();
            self.done(Logged {
                first,
                last,
                val: None,
            });
        }
        fn clear(&mut self) {
            self.tree.clear();
            self.done(Logged {
                first: 0,
                last: u64::MAX,
                val: None,
            });
        }
    }

    /// One phase's workload.
    fn workload(w: &mut Writer<'_>, rng: &mut Rng, kind: u64, writes: u64) {
        let end = w.next + writes;
        match kind {
            // Issue 13: clear, 8 stores (a full root leaf), [80, 85] (append split), [73, 75]
            // (+1 append into the truncated leaf), sometimes a few more appends after it.
            0 => {
                while w.next < end {
                    w.clear();
                    for i in 0..8 {
                        w.store(10 * i, 10 * i + 5);
                    }
                    w.store(80, 85);
                    w.store(73, 75);
                    for i in 0..rng.below(12) {
                        w.store(90 + 10 * i, 95 + 10 * i);
                    }
                }
            }
            // In-order builds from empty: three-way appends, append splits, fills, climbs;
            // sometimes `+1` appends at the end ([x, MAX]) and trims.
            1 => {
                w.clear();
                let mut x = 0;
                while w.next < end {
                    match rng.below(10) {
                        0 => w.store(x, u64::MAX),
                        1 if x > 20 => w.store(x - 3, x - 1),
                        _ => w.store(x, x + 5),
                    }
                    x += 10;
                    if x > SPACE * 4 {
                        w.clear();
                        x = 0;
                    }
                }
            }
            // Random stores (exact fits, slot and node stores, splits, spanning stores).
            2 => {
                while w.next < end {
                    let a = rng.below(SPACE);
                    let len = if rng.chance(10) {
                        rng.below(500)
                    } else {
                        rng.below(12)
                    };
                    if rng.chance(20) {
                        if let Some((x, y, _)) = w.model.at(a) {
                            w.store(x, y);
                            continue;
                        }
                    }
                    w.store(a, a + len);
                }
            }
            // Erases: of whole ranges and of random spans (rebalance, shrink).
            _ => {
                while w.next < end {
                    let a = rng.below(SPACE);
                    match rng.below(10) {
                        0..=5 => w.erase(a),
                        6..=8 => w.erase_range(a, a + rng.below(200)),
                        _ => {
                            let len = rng.below(8);
                            w.store(a, a + len);
                        }
                    }
                }
            }
        }
    }

    /// Checks every observation of a phase: `start` is the model of state `first` (the state
    /// before the phase's first write `first + 1`), `log[j]` is write `first + 1 + j`.
    fn check_phase(start: &Model, first: u64, log: &[Logged], seen: &[Seen], ctx: &str) -> u64 {
        let last = first + log.len() as u64;
        let window = |s: &Seen| (s.b, (s.a + 1).min(last));
        // Per observation: what is still to be shown (point: 1 item; iteration: its ranges).
        let mut pending: Vec<Vec<bool>> = seen
            .iter()
            .map(|s| match &s.obs {
                Obs::Point { .. } => vec![false],
                Obs::Iter { got, .. } => vec![false; got.len()],
            })
            .collect();
        // The order and the skip checks need no replay beyond state b.
        let mut by_start: Vec<usize> = (0..seen.len()).collect();
        by_start.sort_by_key(|&j| seen[j].b);
        let mut model = start.clone();
        let mut k = first;
        let mut next = 0;
        let mut active: Vec<usize> = Vec::new();
        let touched = |lo: u64, hi: u64, from: u64, to: u64| {
            // Does a write of (from, to] intersect [lo, hi]?
            (from + 1..=to).any(|v| {
                let l = log[(v - first - 1) as usize];
                l.first <= hi && lo <= l.last
            })
        };
        loop {
            while next < by_start.len() && seen[by_start[next]].b == k {
                let j = by_start[next];
                let s = &seen[j];
                let (b, a) = window(s);
                assert!(
                    b >= first && b <= a,
                    "{ctx}: bad window [{b}, {a}] for phase ({first}, {last}]"
                );
                if let Obs::Iter { what, span, got } = &s.obs {
                    for w in got.windows(2) {
                        assert!(
                            w[0].1 < w[1].0,
                            "{ctx}: {what} {span:?} in window [{b}, {a}]: ranges out of order or overlapping: {:?} then {:?}",
                            w[0], w[1]
                        );
                    }
                    for r in model.within(span.0, span.1) {
                        if !touched(r.0, r.1, b, a) {
                            // Iterations yield ranges whole (not clipped to the span).
                            let yielded = got
                                .binary_search_by_key(&r.0, |g| g.0)
                                .is_ok_and(|x| got[x] == r);
                            assert!(
                                yielded,
                                "{ctx}: {what} {span:?} in window [{b}, {a}] skipped {r:?}, unchanged through the window; got {got:?}"
                            );
                        }
                    }
                }
                active.push(j);
                next += 1;
            }
            // State k: mark what it shows.
            active.retain(|&j| {
                let s = &seen[j];
                let p = &mut pending[j];
                match &s.obs {
                    Obs::Point { i, got } => {
                        if model.at(*i).map(|r| r.2) == *got {
                            p[0] = true;
                        }
                    }
                    Obs::Iter { got, .. } => {
                        for (x, &r) in got.iter().enumerate() {
                            if !p[x] && model.has(r) {
                                p[x] = true;
                            }
                        }
                    }
                }
                let (_, a) = window(s);
                if k >= a || p.iter().all(|&d| d) {
                    if let Some(x) = p.iter().position(|&d| !d) {
                        let (b, a) = window(s);
                        let writes: Vec<_> = (b + 1..=a).map(|v| (v, log[(v - first - 1) as usize])).collect();
                        match &s.obs {
                            Obs::Point { i, got } => panic!(
                                "{ctx}: load({i}) = {got:?} in window [{b}, {a}]: not the index's entry in any state of it; writes of the window {writes:?}"
                            ),
                            Obs::Iter { what, span, got } => panic!(
                                "{ctx}: {what} {span:?} in window [{b}, {a}] yielded {:?}, a range of no state of the window; writes of the window {writes:?}; got {got:?}",
                                got[x]
                            ),
                        }
                    }
                    false
                } else {
                    true
                }
            });
            if k == last {
                break;
            }
            let l = log[(k - first) as usize];
            model.store(l.first, l.last, l.val);
            k += 1;
        }
        assert!(active.is_empty() && next == by_start.len());
        seen.len() as u64
    }

    /// Runs phases for `secs`; returns (writes, reads checked).
    pub(super) fn run(alloc: bool, seed: u64, secs: f64, readers: usize) -> (u64, u64) {
        let tree = Arc::new(if alloc {
            Tree::new_alloc()
        } else {
            Tree::new()
        });
        // `MAPLE_STRESS_APPEND=0`: the in-place appends off (the control run: no append split).
        let append = std::env::var("MAPLE_STRESS_APPEND").map_or(true, |v| v != "0");
        tree.set_append(append);
        let seq = Arc::new(AtomicU64::new(0));
        let mut rng = Rng(seed);
        let mut model = Model::default();
        let mut next = 1;
        let (mut reads, mut phases) = (0u64, 0u64);
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        let t0 = Instant::now();
        let mut per_kind = [0u64; 4];
        while phases < 4 || Instant::now() < deadline {
            let kind = if phases < 4 { phases } else { rng.below(4) };
            let writes = 200 + rng.below(800);
            let stop = Arc::new(AtomicBool::new(false));
            let barrier = Arc::new(Barrier::new(readers + 1));
            let handles: Vec<_> = (0..readers as u64)
                .map(|r| {
                    let (tree, seq, stop, barrier) = (
                        Arc::clone(&tree),
                        Arc::clone(&seq),
                        Arc::clone(&stop),
                        Arc::clone(&barrier),
                    );
                    let s = seed ^ (phases << 20) ^ (r + 1);
                    std::thread::spawn(move || {
                        barrier.wait();
                        reader(tree, seq, stop, s)
                    })
                })
                .collect();
            barrier.wait();
            let start = model.clone();
            let first = next - 1;
            let mut w = Writer {
                tree: &tree,
                seq: &seq,
                log: Vec::new(),
                model,
                next,
            };
            workload(&mut w, &mut rng, kind, writes);
            stop.store(true, Ordering::Relaxed);
            let Writer {
                log,
                model: m,
                next: n,
                ..
            } = w;
            model = m;
            next = n;
            let seen: Vec<Seen> = handles
                .into_iter()
                .flat_map(|h| h.join().expect("reader panicked"))
                .collect();
            let ctx = format!(
                "alloc={alloc} append={append} seed={seed:#x} phase {phases} (workload {kind}) after {:.2?}",
                t0.elapsed()
            );
            reads += check_phase(&start, first, &log, &seen, &ctx);
            // The writer's own view, single-threaded.
            let g = tree.pin();
            let got: Vec<_> = tree.iter(&g).map(|(a, b, v)| (a, b, v.get())).collect();
            let want: Vec<_> = model.0.iter().map(|(&a, &(b, v))| (a, b, v)).collect();
            assert_eq!(got, want, "{ctx}: tree and model differ");
            drop(g);
            tree.validate().unwrap();
            per_kind[kind as usize] += log.len() as u64;
            phases += 1;
        }
        eprintln!(
            "promise alloc={alloc} append={append} seed={seed:#x}: {phases} phases, {} writes (issue loop / in-order / random / erase: {per_kind:?}), {reads} reads checked, {:.1?}",
            next - 1,
            t0.elapsed()
        );
        (next - 1, reads)
    }

    pub(super) fn params() -> (u64, f64, usize) {
        let env = |k: &str| std::env::var(k).ok();
        let seed = env("MAPLE_STRESS_SEED")
            .and_then(|s| {
                s.strip_prefix("0x")
                    .map_or_else(|| s.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
            })
            .unwrap_or(0x13_5eed);
        let secs = env("MAPLE_STRESS_SECS")
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.0);
        let readers = env("MAPLE_STRESS_READERS")
            .and_then(|s| s.parse().ok())
            .unwrap_or(3);
        (seed, secs, readers)
    }
}

/// The promise against the writer's log, in a range tree (see the `promise` module).
#[test]
#[cfg_attr(miri, ignore)]
fn promise_range_tree() {
    let (seed, secs, readers) = promise::params();
    promise::run(false, seed, secs, readers);
}

/// The promise against the writer's log, in an allocation tree.
#[test]
#[cfg_attr(miri, ignore)]
fn promise_alloc_tree() {
    let (seed, secs, readers) = promise::params();
    promise::run(true, seed.wrapping_add(1), secs, readers);
}
