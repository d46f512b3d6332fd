//! Real-thread stress test of the concurrency contract (SPEC §1.3): several lock-free readers
//! against one writer running a seeded mixed workload that hits every write path, through
//! `Arc<MapleTree>`.
//!
//! The index space is cut into regions by *sentinels*: single-index ranges `[1000 k, 1000 k]`
//! stored first and never written again, so that every iteration must yield all of them (a range
//! unchanged for the whole iteration is never skipped). Every other entry is a fresh [`Payload`]
//! tagged with the range it was stored over and a version from a global clock, so readers can check,
//! without knowing the writer's schedule:
//! - an entry found at index `i` (point load, `load_range`, iteration) was stored over a range
//!   containing every index it is reported for, and is live (not poisoned by `Drop`);
//! - per index, the versions a reader sees never go backwards;
//! - iterations (forward, backward, windowed) yield strictly monotonic, non-overlapping ranges.
//!
//! Time-bounded (`STRESS_SECS`, default 2.5 s per tree kind, two kinds) and seeded (`STRESS_SEED`).
//! The writer checks its own view against a `BTreeMap` model after every round, phases alternate
//! between RCU-mode writes with the readers running and exclusive-mode writes with the readers
//! stopped (slot stores and the `+1` append at the start exist only there), and at the end every
//! path counter must have moved and every entry ever created must have been dropped exactly once
//! after the tree (with its own collector) is dropped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crossbeam_epoch::Collector;
use maple_tree::{MapleTree, Options, Stats};

const LIVE: u64 = 0x1157_1157_1157_1157;
const DEAD: u64 = 0xdead_dead_dead_dead;
/// Sentinels at `1000 k` for `k` in `0..REGIONS`; the tail above is for appends.
const REGIONS: u64 = 16;
const SPAN: u64 = 1000;
const TAIL: u64 = REGIONS * SPAN;
/// Entries a run may create (drop flags are preallocated).
const MAX_ENTRIES: usize = if cfg!(miri) { 1 << 12 } else { 1 << 22 };

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
        let prev = self.flags.0[self.serial].fetch_add(1, Ordering::Relaxed);
        assert_eq!(prev, 0, "entry {} dropped twice", self.serial);
    }
}

/// Per-entry drop counts, indexed by serial.
struct DropFlags(Vec<AtomicU8>, AtomicU64);

impl DropFlags {
    fn new() -> Arc<Self> {
        Arc::new(DropFlags(
            (0..MAX_ENTRIES).map(|_| AtomicU8::new(0)).collect(),
            AtomicU64::new(0),
        ))
    }

    fn entry(self: &Arc<Self>, first: u64, last: u64, version: u64) -> Box<Payload> {
        let serial = self.1.fetch_add(1, Ordering::Relaxed) as usize;
        assert!(serial < MAX_ENTRIES, "raise MAX_ENTRIES");
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
        for (i, f) in self.0[..n].iter().enumerate() {
            assert_eq!(
                f.load(Ordering::Relaxed),
                1,
                "entry {i} dropped {} times",
                f.load(Ordering::Relaxed)
            );
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
                let it = tree.range(a, b, &guard).map(|(x, y, p)| {
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

/// The writer's model: non-empty ranges `first -> (last, version)`.
#[derive(Default)]
struct Model(BTreeMap<u64, (u64, u64)>);

impl Model {
    fn store(&mut self, first: u64, last: u64, v: Option<u64>) {
        let over: Vec<(u64, u64, u64)> = self
            .0
            .range(..=last)
            .rev()
            .take_while(|(_, &(l, _))| l >= first)
            .map(|(&a, &(b, v))| (a, b, v))
            .collect();
        for (a, b, val) in over {
            self.0.remove(&a);
            if a < first {
                self.0.insert(a, (first - 1, val));
            }
            if b > last {
                self.0.insert(last + 1, (b, val));
            }
        }
        if let Some(v) = v {
            self.0.insert(first, (last, v));
        }
    }
    fn at(&self, i: u64) -> Option<(u64, u64, u64)> {
        self.0
            .range(..=i)
            .next_back()
            .filter(|(_, &(l, _))| l >= i)
            .map(|(&a, &(b, v))| (a, b, v))
    }
    /// End of the last range (0 if none).
    fn last_end(&self) -> u64 {
        self.0.iter().next_back().map_or(0, |(_, &(b, _))| b)
    }
}

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
        w.store_range(a, b, self.flags.entry(a, b, self.clock))
            .unwrap();
        self.model.store(a, b, Some(self.clock));
    }

    fn erase(&mut self, w: &mut maple_tree::WriteGuard<'_, Box<Payload>>, a: u64, b: u64) {
        assert_no_sentinel(a, b);
        w.erase_range(a, b).unwrap();
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
    let mut tree = Arc::new(Tree::with_options(Options {
        alloc,
        collector: Some(Collector::new()),
    }));
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
            w.store_range(k * SPAN, k * SPAN, flags.entry(k * SPAN, k * SPAN, 0))
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
