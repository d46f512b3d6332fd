//! A driver for profilers: runs one benchmark workload (the shapes of `benches/peers.rs` and
//! `benches/kernel.rs`) inside `measured`, so that callgrind can count just that part:
//!
//! ```text
//! cargo build --release -p maple-tools --bin profile
//! valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file=cg.out \
//!     target/release/profile lookup_hit maple 1000000
//! callgrind_annotate --inclusive=yes cg.out | head -40
//! ```
//!
//! Instruction counts do not depend on the machine's load, so they compare runs on a shared
//! machine where times cannot. `scripts/bench-profile.sh` runs the whole set.
//!
//! Usage: `profile WORKLOAD MAP [N]`; WORKLOAD is one of build, lookup_hit, lookup_miss,
//! random_store, erase_half, iterate, iterate_rev (`iterate` backwards; both repeat whole
//! passes up to a million ranges, the operations counted being ranges), gap (`gap_rev`
//! forwards, maple only), gap_rev, fork_old, fork_new, dup, dup_drop, fork_map (`dup_map`, the
//! range map's clone and a pass over its values), create_drop (N = 0: empty trees made and
//! dropped; N = 1: with one range stored), slot_store, node_store, rewrite; MAP is maple
//! (allocation tree, exclusive writer), maple-rcu (writes through the
//! lock), maple-plain (a plain range tree, exclusive writer: no gap tracking) or btreemap.
//! `PROFILE_DENSE=1` builds ranges `[10i, 10i + 9]` instead of `[10i, 10i + 5]`: no gap
//! between two ranges, so the tree holds one slot per range instead of two (build, lookup_hit,
//! iterate, iterate_rev and fork_map). N is the number of ranges (default 1,000,000; for fork_old and fork_new,
//! the source's entries, default 135; `dup` is `fork_new`'s `dup` alone, the copy dropped
//! outside the count). build, random_store and erase_half at small N count about 100,000
//! ranges' worth of trees (build and random_store make theirs inside the count, their drops
//! outside; erase_half's trees are built outside), so that per-tree costs count as often as a
//! program of many small trees pays them. Prints the number of operations measured; `--help` prints the usage.

#[path = "../../../../benches/support/btree_range.rs"]
#[allow(dead_code)]
mod btree_range;

use std::hint::black_box;

use btree_range::BTreeRangeMap;
use maple_tree::{MapleTree, Value};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

fn pick(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// The maps under test, behind one interface.
enum Map {
    Maple(Box<MapleTree<Value>>, bool),
    Btree(BTreeRangeMap),
}

impl Map {
    fn new(name: &str) -> Map {
        match name {
            "maple" => Map::Maple(Box::new(MapleTree::new_alloc()), false),
            "maple-rcu" => Map::Maple(Box::new(MapleTree::new_alloc()), true),
            "maple-plain" => Map::Maple(Box::new(MapleTree::new()), false),
            "btreemap" => Map::Btree(BTreeRangeMap::new()),
            _ => panic!("unknown map {name}"),
        }
    }
    fn store(&mut self, a: u64, b: u64, v: u64) {
        match self {
            Map::Maple(t, true) => t.store_range(a..=b, Value::new(v)).unwrap(),
            Map::Maple(t, false) => t.exclusive().store_range(a..=b, Value::new(v)).unwrap(),
            Map::Btree(m) => m.store(a, b, v),
        }
    }
    fn push(&mut self, a: u64, b: u64, v: u64) {
        match self {
            Map::Btree(m) => m.push(a, b, v),
            _ => self.store(a, b, v),
        }
    }
    fn erase(&mut self, a: u64, b: u64) {
        match self {
            Map::Maple(t, true) => t.erase_range(a..=b).unwrap(),
            Map::Maple(t, false) => t.exclusive().erase_range(a..=b).unwrap(),
            Map::Btree(m) => m.erase(a, b),
        }
    }
    fn built(name: &str, n: u64) -> Map {
        let mut m = Map::new(name);
        for i in 0..n {
            let (a, b) = shape(i);
            m.push(a, b, i);
        }
        m
    }
}

/// Range `i` of the built trees: `[10i, 10i + 5]`, or with `PROFILE_DENSE=1` `[10i, 10i + 9]`
/// (no gap between two ranges: one slot per range instead of two; for build, lookup_hit,
/// iterate, iterate_rev and fork_map).
fn shape(i: u64) -> (u64, u64) {
    (10 * i, 10 * i + span())
}

/// The last index of range `i` less `10i` (read once: the environment is not read per range).
fn span() -> u64 {
    static SPAN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SPAN.get_or_init(|| if dense() { 9 } else { 5 })
}

fn dense() -> bool {
    std::env::var_os("PROFILE_DENSE").is_some_and(|v| v == "1")
}

/// The tree a maple MAP is made of: an allocation tree, or for `maple-plain` a plain range
/// tree (no gap tracking).
fn maker(map: &str) -> fn() -> MapleTree<Value> {
    if map == "maple-plain" {
        MapleTree::new
    } else {
        MapleTree::new_alloc
    }
}

/// Drops a copy outside the count: its name matches the driver's `--toggle-collect='*measured*'`,
/// so entering it toggles collection off and leaving it toggles it back on.
#[inline(never)]
fn unmeasured_drop<T>(t: T) {
    drop(t);
}

/// Full passes of `iterate` and `iterate_rev` over `n` ranges: enough for a million ranges in
/// all (one pass from a million up).
fn iterate_passes(n: u64) -> u64 {
    (1_000_000 / n.max(1)).max(1)
}

/// `reps` trees made by `make`, each given the `n` ranges `range(i)` = `i` by `put`, in a loop
/// of the tree's own type; their drops are not counted.
#[inline(always)]
fn many<T>(
    reps: u64,
    n: u64,
    make: impl Fn() -> T,
    range: impl Fn(u64) -> (u64, u64),
    mut put: impl FnMut(&mut T, u64, u64, u64),
) {
    let mut made = Vec::with_capacity(reps as usize);
    for _ in 0..reps {
        let mut t = make();
        for i in 0..n {
            let (a, b) = range(i);
            put(&mut t, a, b, i);
        }
        made.push(t);
    }
    unmeasured_drop(made);
}

/// `count` trees made by `make`, given one range by `put` if `n` is 1, and dropped.
#[inline(always)]
fn made_dropped<T>(count: u64, n: u64, make: impl Fn() -> T, mut put: impl FnMut(&mut T, u64)) {
    for i in 0..count {
        let mut t = make();
        if n == 1 {
            put(&mut t, i);
        }
        drop(black_box(t));
    }
}

/// Trees per measured call at `n` ranges: about 100,000 ranges in all (one from 100,000 on),
/// so that small trees' counts are not one tree's.
fn reps(n: u64) -> u64 {
    (100_000 / n.max(1)).max(1)
}

#[inline(never)]
fn measured(work: &str, map: &str, n: u64, m: &mut Map, more: &mut [Map], ops: &mut u64) {
    let mut rng = Rng(42);
    match work {
        "build" => {
            // Small trees: `reps` of them (about 100,000 ranges in all), each made and built
            // here, by a loop of the map's own type (no `Map` in between); their drops are not
            // counted.
            let reps = reps(n);
            let span = span();
            let fill = |i: u64| (10 * i, 10 * i + span);
            match map {
                "btreemap" => many(reps, n, BTreeRangeMap::new, fill, |t, a, b, v| {
                    t.push(a, b, v)
                }),
                "maple" | "maple-plain" => many(reps, n, maker(map), fill, |t, a, b, v| {
                    t.exclusive().store_range(a..=b, Value::new(v)).unwrap()
                }),
                _ => many(reps, n, MapleTree::new_alloc, fill, |t, a, b, v| {
                    t.store_range(a..=b, Value::new(v)).unwrap()
                }),
            }
            *ops = n * reps;
        }
        "lookup_hit" | "lookup_miss" => {
            let hit = work == "lookup_hit";
            let count = 1_000_000;
            let mut found = 0u64;
            match m {
                Map::Maple(t, _) => {
                    let g = t.pin();
                    for _ in 0..count {
                        let x = rng.next();
                        let i = pick(x, n);
                        let k = if hit {
                            10 * i + (x & 3)
                        } else {
                            10 * i + 6 + (x & 3)
                        };
                        found += t.load(k, &g).is_some() as u64;
                    }
                }
                Map::Btree(b) => {
                    for _ in 0..count {
                        let x = rng.next();
                        let i = pick(x, n);
                        let k = if hit {
                            10 * i + (x & 3)
                        } else {
                            10 * i + 6 + (x & 3)
                        };
                        found += b.get(k).is_some() as u64;
                    }
                }
            }
            assert_eq!(found, if hit { count } else { 0 });
            *ops = count;
        }
        "random_store" => {
            // As `build`: `reps` fresh trees, the same ranges in each.
            let reps = reps(n);
            let ranges: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let a = pick(rng.next(), (1 << 32) - 64);
                    let len = 1 + pick(rng.next(), 64);
                    (a, a + len - 1)
                })
                .collect();
            let at = |i: u64| ranges[i as usize];
            match map {
                "btreemap" => many(reps, n, BTreeRangeMap::new, at, |t, a, b, v| {
                    t.store(a, b, v)
                }),
                "maple" | "maple-plain" => many(reps, n, maker(map), at, |t, a, b, v| {
                    t.exclusive().store_range(a..=b, Value::new(v)).unwrap()
                }),
                _ => many(reps, n, MapleTree::new_alloc, at, |t, a, b, v| {
                    t.store_range(a..=b, Value::new(v)).unwrap()
                }),
            }
            *ops = n * reps;
        }
        "erase_half" => {
            // `reps` built trees (built before `measured`: `more`), every second range erased
            // from each.
            for t in std::iter::once(&mut *m).chain(more.iter_mut()) {
                for i in (0..n).step_by(2) {
                    t.erase(10 * i, 10 * i + 5);
                }
            }
            *ops = n.div_ceil(2) * (1 + more.len() as u64);
        }
        "create_drop" => {
            // Empty trees made and dropped (N = 0), or made, given one range and dropped.
            let count = 100_000;
            match map {
                "btreemap" => made_dropped(count, n, BTreeRangeMap::new, |t, v| t.store(10, 15, v)),
                "maple" | "maple-plain" => made_dropped(count, n, maker(map), |t, v| {
                    t.exclusive().store_range(10..=15, Value::new(v)).unwrap()
                }),
                _ => made_dropped(count, n, MapleTree::new_alloc, |t, v| {
                    t.store_range(10..=15, Value::new(v)).unwrap()
                }),
            }
            *ops = count;
        }
        "fork_map" => {
            // The one-pass mapped copy (`dup_map`), against the range map's clone and the same
            // map over its values; the copies' drops are not counted.
            let count = (270_000 / n.max(1)).max(2);
            for _ in 0..count {
                match m {
                    Map::Maple(src, _) => {
                        let new = src.dup_map(|_, v| Value::new(v.get() + 1));
                        unmeasured_drop(black_box(new));
                    }
                    Map::Btree(src) => {
                        let mut new = src.clone();
                        new.map_values(|v| v + 1);
                        unmeasured_drop(black_box(new));
                    }
                }
            }
            *ops = count;
        }
        "iterate" => {
            // Whole passes (a pinned guard and a new iterator each) until a million ranges,
            // so that a small tree's per-range count is its steady state.
            let passes = iterate_passes(n);
            let mut s = 0;
            for _ in 0..passes {
                match m {
                    Map::Maple(t, _) => {
                        let g = t.pin();
                        for (_, v) in t.iter(&g) {
                            s += v.get();
                        }
                    }
                    Map::Btree(b) => {
                        for (_, _, v) in b.iter() {
                            s += v;
                        }
                    }
                }
            }
            assert_eq!(s, passes * (n * (n - 1) / 2));
            *ops = n * passes;
        }
        "gap_rev" => {
            // Windows 10,000 wide, or the whole tree below 1,000 ranges.
            let count = 100_000;
            let w = (10 * n).min(10_000);
            for _ in 0..count {
                let lo = pick(rng.next(), 10 * n - w + 1);
                let r = match m {
                    Map::Maple(t, _) => t.empty_area_rev(lo..=lo + w - 1, 3).ok(),
                    Map::Btree(b) => b.empty_area_rev(lo, lo + w - 1, 3),
                };
                black_box(r.unwrap());
            }
            *ops = count;
        }
        "gap" => {
            // `gap_rev`'s windows, searched forwards (the range map has no forward search).
            let Map::Maple(t, _) = m else {
                panic!("the forward gap search is for the maple tree")
            };
            let count = 100_000;
            let w = (10 * n).min(10_000);
            for _ in 0..count {
                let lo = pick(rng.next(), 10 * n - w + 1);
                black_box(t.empty_area(lo..=lo + w - 1, 3).unwrap());
            }
            *ops = count;
        }
        "fork_old" | "fork_new" => {
            let count = (270_000 / n).max(2);
            let Map::Maple(src, rcu) = m else {
                panic!("forks are for the maple tree")
            };
            for _ in 0..count {
                let new = if work == "fork_new" {
                    let mut new = src.dup();
                    {
                        let mut w = new.exclusive();
                        let mut c = w.cursor(0);
                        while let Some(x) = c.find(u64::MAX) {
                            c.store(x).unwrap();
                        }
                    }
                    new
                } else {
                    let mut new = MapleTree::new_alloc();
                    let g = src.pin();
                    if *rcu {
                        let mut w = new.lock();
                        for (r, v) in src.iter(&g) {
                            w.store_range(r, v).unwrap();
                        }
                    } else {
                        let mut w = new.exclusive();
                        for (r, v) in src.iter(&g) {
                            w.store_range(r, v).unwrap();
                        }
                    }
                    new
                };
                drop(black_box(new));
            }
            *ops = count;
        }
        "dup" => {
            let count = (270_000 / n).max(2);
            let Map::Maple(src, _) = m else {
                panic!("dup is for the maple tree")
            };
            for _ in 0..count {
                let new = black_box(src.dup());
                unmeasured_drop(new);
            }
            *ops = count;
        }
        "dup_drop" => {
            // `dup` and the copy's drop, as the C tree's `fork134_mt_dup` (`__mt_dup` and
            // `mtree_destroy`).
            let count = (270_000 / n).max(2);
            let Map::Maple(src, _) = m else {
                panic!("dup is for the maple tree")
            };
            for _ in 0..count {
                drop(black_box(src.dup()));
            }
            *ops = count;
        }
        "slot_store" => {
            let count = 200_000;
            let Map::Maple(t, rcu) = m else { panic!() };
            for _ in 0..count {
                if *rcu {
                    t.erase_range(105..=105).unwrap();
                    t.store_range(100..=105, Value::new(105)).unwrap();
                } else {
                    let mut w = t.exclusive();
                    w.erase_range(105..=105).unwrap();
                    w.store_range(100..=105, Value::new(105)).unwrap();
                }
            }
            *ops = count;
        }
        "node_store" => {
            let count = 200_000;
            let mut o = 76;
            for _ in 0..count {
                m.store(o, o + 15, o);
                o += 5;
                if o >= 135 {
                    o = 76;
                }
            }
            *ops = count;
        }
        "rewrite" => {
            let count = 100_000;
            for _ in 0..count {
                let i = pick(rng.next(), n);
                m.erase(10 * i, 10 * i + 5);
                m.store(10 * i, 10 * i + 5, i);
            }
            *ops = count;
        }
        "iterate_rev" => {
            let passes = iterate_passes(n);
            let mut s = 0;
            for _ in 0..passes {
                match m {
                    Map::Maple(t, _) => {
                        let g = t.pin();
                        for (_, v) in t.iter(&g).rev() {
                            s += v.get();
                        }
                    }
                    Map::Btree(b) => {
                        for (_, _, v) in b.iter().rev() {
                            s += v;
                        }
                    }
                }
            }
            assert_eq!(s, passes * (n * (n - 1) / 2));
            *ops = n * passes;
        }
        _ => panic!("unknown workload {work}"),
    }
}

const USAGE: &str = "usage: profile WORKLOAD MAP [N]
  WORKLOAD: build lookup_hit lookup_miss random_store erase_half iterate iterate_rev gap gap_rev
            fork_old fork_new dup dup_drop fork_map create_drop slot_store node_store
            rewrite
  MAP:      maple (allocation tree, exclusive writer), maple-rcu (writes through the lock),
            maple-plain (plain range tree, exclusive writer), btreemap
  PROFILE_DENSE=1: ranges [10i, 10i+9], no gaps (build lookup_hit iterate iterate_rev fork_map)
  N:        ranges (default 1000000; the fork source's entries for fork_old, fork_new, dup,
            dup_drop and fork_map, default 135; create_drop: 0 or 1, default 0)
Runs the workload inside `measured` (valgrind --tool=callgrind --toggle-collect='*measured*')
and prints the number of operations measured.";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
    let work = args.get(1).map(String::as_str).unwrap_or("lookup_hit");
    let map = args.get(2).map(String::as_str).unwrap_or("maple");
    let given: Option<u64> = args.get(3).map(|s| s.parse().unwrap());
    let mut n = given.unwrap_or(1_000_000);
    assert!(
        !dense() || ["build", "lookup_hit", "iterate", "iterate_rev", "fork_map"].contains(&work),
        "PROFILE_DENSE=1 is for build, lookup_hit, iterate, iterate_rev and fork_map"
    );
    let mut m = match work {
        "build" | "random_store" => Map::new(map),
        "create_drop" => {
            n = given.unwrap_or(0);
            Map::new(map)
        }
        "fork_old" | "fork_new" | "dup" | "dup_drop" | "fork_map" => {
            // The source's entry count: bench_forking's 135 unless given.
            n = given.unwrap_or(135);
            Map::built(map, n)
        }
        "slot_store" => {
            n = 104;
            Map::built(map, n)
        }
        "node_store" => {
            n = 24;
            Map::built(map, n)
        }
        _ => Map::built(map, n),
    };
    // erase_half's further trees at small n (see `reps`).
    let mut more: Vec<Map> = if work == "erase_half" {
        (1..reps(n)).map(|_| Map::built(map, n)).collect()
    } else {
        Vec::new()
    };
    // Register this thread with the epoch collector outside the count: a program pins many
    // times, and only its first pin registers (about 1,100 instructions that would otherwise
    // land on a one-pass row such as `iterate` at 10 ranges).
    if let Map::Maple(t, _) = &m {
        drop(t.pin());
    }
    let mut ops = 0;
    measured(work, map, n, &mut m, &mut more, &mut ops);
    println!("{work} {map} n={n} ops={ops}");
}
