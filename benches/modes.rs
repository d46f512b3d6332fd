//! Three contenders timed alternately in one process: the maple tree written through
//! `exclusive()`, the same tree written through the lock (RCU mode), and std `BTreeMap` used as
//! a range map (`support::btree_range`), on every workload of `benches/peers.rs` from 10 to
//! 1,000,000 ranges. Read rows (lookups, iteration, gap search) read a tree built in the
//! contender's own way (for the RCU column, a tree built through the lock), all three trees
//! alive. Rows without a `peers` twin:
//! - `erase_entry`: every second range taken out with its entry, by `erase(i)` through the lock
//!   (RCU mode, the entry handed back in an `Erased`) against the exclusive `remove(i)` (the
//!   range map: a floor lookup and a `remove`);
//! - `iterate_rev`: the full iteration from the back;
//! - `create_drop`: an empty tree made and dropped (n = 0), or made, given one range and
//!   dropped (n = 1): the per-tree cost a small tree pays;
//! - `fork_map`: the fork a Rust user writes, a copy whose entries are mapped in the same pass:
//!   [`MapleTree::dup_map`] (both maple columns: it takes the source's lock) against the range
//!   map's `clone()` followed by the same map over its values (`values_mut`);
//! - `fork_kernel` (135 ranges): the kernel's fork shape, `dup` and an exact-fit store over
//!   every entry, against the range map's `clone()` and the same pass over its values;
//! - `fork135_old`: the old `bench_forking`, a fresh tree filled in order from a 135-range source.
//!
//! Not a criterion benchmark: criterion times one function after another, and on a shared
//! two-core host the drift between two rows a minute apart (1.01–1.67 for the same code in one
//! week's runs) is larger than most of what the ratios are meant to show. Here each round times
//! the three back to back, in turn first, and a row gives each contender's best round and the
//! median of the rounds' ratios (RCU ÷ exclusive, exclusive ÷ `BTreeMap`) with their range.
//! Small trees are timed in batches (as many trees as make about 1,000 ranges, one clock
//! reading per batch; the batch's drop is not timed), so the clock costs no more than 0.1%.
//! Results also go to `target/bench-results/modes.json`.
//!
//! Run: `cargo bench --bench modes [WORKLOAD]` (only the rows whose workload name contains
//! `WORKLOAD`; `MAPLE_BENCH_QUICK=1` for a smoke run; `MAPLE_BENCH_SIZES=10,100` for those
//! sizes only; `MAPLE_BENCH_ROUNDS=41` for that many rounds of every row).

mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use maple_tree::{MapleTree, Options, Value};
use support::btree_range::BTreeRangeMap;
use support::{pick, shape, XorShift64};

// ----- the contenders ----------------------------------------------------------------------------

/// What every contender does, each workload's body written once against it.
trait Contender: Sized {
    fn empty() -> Self;
    /// Stores `[a, b]` = `v` after everything stored so far (the in-order build).
    fn push(&mut self, a: u64, b: u64, v: u64);
    /// Stores `[a, b]` = `v` over whatever is there.
    fn store(&mut self, a: u64, b: u64, v: u64);
    /// Empties `[a, b]`.
    fn erase(&mut self, a: u64, b: u64);
    /// Takes out the range containing `index` with its entry: `(start, value)`.
    fn take(&mut self, index: u64) -> (u64, u64);
    /// `count` lookups at indices `at(x)` of xorshift outputs from `seed`; how many hit.
    fn lookups(&self, seed: u64, count: u64, at: impl Fn(u64) -> u64) -> u64;
    /// The sum of the values, by a full iteration from the front or from the back.
    fn sum(&self, rev: bool) -> u64;
    /// The highest start of `size` free indices inside `[min, max]`.
    fn gap_rev(&self, min: u64, max: u64, size: u64) -> Option<u64>;
    /// A copy whose values are `v + 1`, in the contender's one pass.
    fn fork_map(&self) -> Self;
    /// The kernel's fork shape: a copy, then every value replaced by `v + 1`.
    fn fork_kernel(&self) -> Self;
    /// Visits every range in order.
    fn visit(&self, f: impl FnMut(u64, u64, u64));
}

/// The maple allocation tree (gap tracking, as the kernel's VMA tree); `RCU` writes through
/// the lock, otherwise through `exclusive()`, one writer borrow per write as the peers rows.
struct Maple<const RCU: bool>(MapleTree<Value>);

impl<const RCU: bool> Contender for Maple<RCU> {
    fn empty() -> Self {
        Maple(MapleTree::with_options(Options::new().alloc(true)))
    }
    #[inline]
    fn push(&mut self, a: u64, b: u64, v: u64) {
        self.store(a, b, v)
    }
    #[inline]
    fn store(&mut self, a: u64, b: u64, v: u64) {
        let v = Value::new(v);
        if RCU {
            self.0.store_range(a..=b, v).unwrap()
        } else {
            self.0.exclusive().store_range(a..=b, v).unwrap()
        }
    }
    #[inline]
    fn erase(&mut self, a: u64, b: u64) {
        if RCU {
            self.0.erase_range(a..=b).unwrap()
        } else {
            self.0.exclusive().erase_range(a..=b).unwrap()
        }
    }
    #[inline]
    fn take(&mut self, index: u64) -> (u64, u64) {
        if RCU {
            let e = self.0.erase(index).unwrap();
            (*e.range().start(), e.entry().unwrap().get())
        } else {
            let (r, v) = self.0.remove(index).unwrap();
            (*r.start(), v.get())
        }
    }
    #[inline]
    fn lookups(&self, seed: u64, count: u64, at: impl Fn(u64) -> u64) -> u64 {
        let guard = self.0.pin();
        let mut rng = XorShift64(seed);
        let mut found = 0;
        for _ in 0..count {
            found += black_box(self.0.load(at(rng.next_u64()), &guard)).is_some() as u64;
        }
        found
    }
    fn sum(&self, rev: bool) -> u64 {
        let guard = self.0.pin();
        if rev {
            self.0.iter(&guard).rev().map(|(_, v)| v.get()).sum()
        } else {
            self.0.iter(&guard).map(|(_, v)| v.get()).sum()
        }
    }
    #[inline]
    fn gap_rev(&self, min: u64, max: u64, size: u64) -> Option<u64> {
        self.0.empty_area_rev(min..=max, size).ok()
    }
    fn fork_map(&self) -> Self {
        Maple(self.0.dup_map(|_, v| Value::new(v.get() + 1)))
    }
    fn fork_kernel(&self) -> Self {
        let mut new = self.0.dup();
        {
            let mut w = new.exclusive();
            let mut c = w.cursor(0);
            while let Some(x) = c.find(u64::MAX) {
                c.store(Value::new(x.get() + 1)).unwrap();
            }
        }
        Maple(new)
    }
    fn visit(&self, mut f: impl FnMut(u64, u64, u64)) {
        let g = self.0.pin();
        for (r, v) in self.0.iter(&g) {
            f(*r.start(), *r.end(), v.get());
        }
    }
}

type Exclusive = Maple<false>;
type Rcu = Maple<true>;

/// std `BTreeMap` as a range map.
struct Btree(BTreeRangeMap);

impl Contender for Btree {
    fn empty() -> Self {
        Btree(BTreeRangeMap::new())
    }
    #[inline]
    fn push(&mut self, a: u64, b: u64, v: u64) {
        self.0.push(a, b, v)
    }
    #[inline]
    fn store(&mut self, a: u64, b: u64, v: u64) {
        self.0.store(a, b, v)
    }
    #[inline]
    fn erase(&mut self, a: u64, b: u64) {
        self.0.erase(a, b)
    }
    #[inline]
    fn take(&mut self, index: u64) -> (u64, u64) {
        self.0.take(index).unwrap()
    }
    #[inline]
    fn lookups(&self, seed: u64, count: u64, at: impl Fn(u64) -> u64) -> u64 {
        let mut rng = XorShift64(seed);
        let mut found = 0;
        for _ in 0..count {
            found += black_box(self.0.get(at(rng.next_u64()))).is_some() as u64;
        }
        found
    }
    fn sum(&self, rev: bool) -> u64 {
        if rev {
            self.0.iter().rev().map(|(_, _, v)| v).sum()
        } else {
            self.0.iter().map(|(_, _, v)| v).sum()
        }
    }
    #[inline]
    fn gap_rev(&self, min: u64, max: u64, size: u64) -> Option<u64> {
        self.0.empty_area_rev(min, max, size)
    }
    fn fork_map(&self) -> Self {
        let mut new = self.0.clone();
        new.map_values(|v| v + 1);
        Btree(new)
    }
    fn fork_kernel(&self) -> Self {
        self.fork_map()
    }
    fn visit(&self, mut f: impl FnMut(u64, u64, u64)) {
        for (a, b, v) in self.0.iter() {
            f(a, b, v);
        }
    }
}

/// The three contenders, each built its own way by [`build`], all alive (the read rows).
struct Trio(Exclusive, Rcu, Btree);

trait Pick: Contender {
    fn of(t: &Trio) -> &Self;
}
impl Pick for Exclusive {
    fn of(t: &Trio) -> &Self {
        &t.0
    }
}
impl Pick for Rcu {
    fn of(t: &Trio) -> &Self {
        &t.1
    }
}
impl Pick for Btree {
    fn of(t: &Trio) -> &Self {
        &t.2
    }
}

impl Trio {
    fn build(n: u64) -> Trio {
        Trio(build(n), build(n), build(n))
    }
}

/// The benches' tree of ranges `[10i, 10i+5]` = `i`, `i < n`, built in order.
fn build<C: Contender>(n: u64) -> C {
    let mut t = C::empty();
    for i in 0..n {
        let (a, b) = shape(i);
        t.push(a, b, i);
    }
    t
}

// ----- timing ------------------------------------------------------------------------------------

/// A workload's timed call, written once for every contender (`round` numbers the round, so
/// that the three contenders of one round can share their random input).
trait Work {
    /// One timed call for contender `C`: the time of its measured part.
    fn run<C: Pick>(&mut self, round: usize) -> Duration;
}

/// One row: a workload at one size, `ops` operations per timed call.
struct Row {
    workload: &'static str,
    n: u64,
    ops: u64,
    /// Per round: (exclusive, RCU, BTreeMap) time of one call.
    rounds: Vec<[Duration; 3]>,
}

impl Row {
    /// The rounds' ratios of contender `a` to contender `b`, sorted.
    fn ratios(&self, a: usize, b: usize) -> Vec<f64> {
        let mut r: Vec<f64> = self
            .rounds
            .iter()
            .map(|d| d[a].as_secs_f64() / d[b].as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        r
    }
    /// (median, min, max) of the rounds' ratios of `a` to `b`.
    fn ratio(&self, a: usize, b: usize) -> (f64, f64, f64) {
        let r = self.ratios(a, b);
        (r[r.len() / 2], r[0], r[r.len() - 1])
    }
    /// Each contender's best round, ns per operation.
    fn best_ns(&self) -> [f64; 3] {
        let per_op = |d: Duration| d.as_secs_f64() * 1e9 / self.ops as f64;
        [0, 1, 2].map(|k| per_op(self.rounds.iter().map(|r| r[k]).min().unwrap()))
    }
}

/// Times `work` for the three contenders over `rounds` rounds, in turn first.
fn alternate(workload: &'static str, n: u64, ops: u64, rounds: usize, mut work: impl Work) -> Row {
    let mut one = |k: usize, round: usize| match k {
        0 => work.run::<Exclusive>(round),
        1 => work.run::<Rcu>(round),
        _ => work.run::<Btree>(round),
    };
    // One untimed call of each: warm caches, fault in the allocator's memory.
    for k in 0..3 {
        one(k, 0);
    }
    let rounds = (1..=rounds)
        .map(|round| {
            let mut d = [Duration::ZERO; 3];
            for j in 0..3 {
                let k = (round + j) % 3;
                d[k] = one(k, round);
            }
            d
        })
        .collect();
    let row = Row {
        workload,
        n,
        ops,
        rounds,
    };
    let [e, r, b] = row.best_ns();
    let (rm, rlo, rhi) = row.ratio(1, 0);
    let (bm, blo, bhi) = row.ratio(0, 2);
    println!(
        "{workload:<14} {n:>9} {e:>9.1} {r:>9.1} {b:>9.1} {rm:>7.3} {rlo:>6.2}–{rhi:<5.2} {bm:>7.3} {blo:>6.2}–{bhi:.2}"
    );
    row
}

/// Trees per timed batch at `n` ranges: about 1,000 ranges' worth (one tree from 1,000 on).
fn batch(n: u64) -> usize {
    (1_000 / n.max(1)).max(1) as usize
}

/// Times `body` over batches of [`batch(n)`](batch) values from `setup`, until about `ops`
/// operations of `per` each were timed (setup and drop untimed); returns the summed time.
fn batched<S, T>(
    n: u64,
    calls: u64,
    mut setup: impl FnMut() -> S,
    mut body: impl FnMut(S) -> T,
) -> Duration {
    let per = batch(n);
    let mut total = Duration::ZERO;
    let mut left = calls as usize;
    let mut ins = Vec::with_capacity(per);
    let mut outs = Vec::with_capacity(per);
    while left > 0 {
        let k = per.min(left);
        ins.extend((0..k).map(|_| setup()));
        let t0 = Instant::now();
        outs.extend(ins.drain(..).map(&mut body));
        total += t0.elapsed();
        black_box(&mut outs).clear();
        left -= k;
    }
    total
}

/// Calls per round of a write row at `n` ranges: about `target` operations of `per_call`.
fn calls(target: u64, per_call: u64) -> u64 {
    (target / per_call.max(1)).max(1)
}

// ----- the workloads -----------------------------------------------------------------------------

/// Lookups at stored (`hit`) or gap indices, the same random indices for the three in a round.
struct Lookups {
    trees: Trio,
    n: u64,
    hit: bool,
    count: u64,
}
impl Work for Lookups {
    fn run<C: Pick>(&mut self, round: usize) -> Duration {
        let (n, hit) = (self.n, self.hit);
        let at = |x: u64| {
            let i = pick(x, n);
            let k = ((x & 0xffff) * if hit { 6 } else { 4 }) >> 16;
            if hit {
                10 * i + k
            } else {
                10 * i + 6 + k
            }
        };
        let seed = 42 + round as u64 * 0x9e37_79b9;
        let t = C::of(&self.trees);
        let t0 = Instant::now();
        let found = t.lookups(seed, self.count, at);
        let d = t0.elapsed();
        assert_eq!(found, if hit { self.count } else { 0 });
        d
    }
}

/// Full iterations, from the front or the back.
struct Iterate {
    trees: Trio,
    n: u64,
    passes: u64,
    rev: bool,
}
impl Work for Iterate {
    fn run<C: Pick>(&mut self, _: usize) -> Duration {
        let t = C::of(&self.trees);
        let t0 = Instant::now();
        for _ in 0..self.passes {
            assert_eq!(t.sum(self.rev), self.n * (self.n - 1) / 2);
        }
        t0.elapsed()
    }
}

/// `empty_area_rev` of size 3 in random windows `min(10,000, 10n)` wide.
struct GapRev {
    trees: Trio,
    n: u64,
    count: u64,
}
impl Work for GapRev {
    fn run<C: Pick>(&mut self, round: usize) -> Duration {
        let t = C::of(&self.trees);
        let width = (10 * self.n).min(10_000);
        let span = 10 * self.n - width;
        let mut rng = XorShift64(42 + round as u64 * 0x9e37_79b9);
        let t0 = Instant::now();
        for _ in 0..self.count {
            let lo = pick(rng.next_u64(), span + 1);
            let hi = lo + width - 1;
            let r = black_box(t.gap_rev(lo, hi, 3)).unwrap();
            // The free stretches are [10i+6, 10i+9]: the highest fit of 3 is within 13 of hi.
            debug_assert!((6..=7).contains(&(r % 10)) && r + 2 <= hi && r + 13 > hi);
        }
        t0.elapsed()
    }
}

/// In-order builds of `calls` trees of `n` ranges (the tree's creation timed, its drop not).
struct Build {
    n: u64,
    calls: u64,
}
impl Work for Build {
    fn run<C: Pick>(&mut self, _: usize) -> Duration {
        let n = self.n;
        batched(n, self.calls, || (), |_| build::<C>(n))
    }
}

/// Random ranges stored into `calls` fresh trees (creation timed, drop not).
struct RandomStore {
    ranges: Vec<(u64, u64)>,
    calls: u64,
}
impl Work for RandomStore {
    fn run<C: Pick>(&mut self, _: usize) -> Duration {
        let ranges = &self.ranges;
        batched(
            ranges.len() as u64,
            self.calls,
            || (),
            |_| {
                let mut t = C::empty();
                for (i, &(a, b)) in ranges.iter().enumerate() {
                    t.store(a, b, i as u64);
                }
                t
            },
        )
    }
}

/// Every second range erased from `calls` built trees (the builds and drops untimed); with
/// `take`, taken out with its entry ([`Contender::take`]).
struct EraseHalf {
    n: u64,
    calls: u64,
    take: bool,
}
impl Work for EraseHalf {
    fn run<C: Pick>(&mut self, _: usize) -> Duration {
        let (n, take) = (self.n, self.take);
        batched(
            n,
            self.calls,
            || build::<C>(n),
            |mut t| {
                let mut check = 0u64;
                for i in (0..n).step_by(2) {
                    let (a, b) = shape(i);
                    if take {
                        let (first, v) = t.take(a + (b - a) / 2);
                        check += (first == a && v == i) as u64;
                    } else {
                        t.erase(a, b);
                    }
                }
                assert!(!take || check == n.div_ceil(2));
                t
            },
        )
    }
}

/// Trees made and dropped: empty (`n` = 0) or with one range (`n` = 1); both timed.
struct CreateDrop {
    n: u64,
    calls: u64,
}
impl Work for CreateDrop {
    fn run<C: Pick>(&mut self, _: usize) -> Duration {
        let t0 = Instant::now();
        for i in 0..self.calls {
            let mut t = C::empty();
            if self.n == 1 {
                t.store(10, 15, i);
            }
            drop(black_box(t));
        }
        t0.elapsed()
    }
}

/// The forks of an `n`-range source: `fork_map` (one pass), `fork_kernel` (copy, then replace
/// every entry), `fork135_old` (a fresh tree filled in order); the copy's drop is not timed.
struct Fork {
    trees: Trio,
    calls: u64,
    form: &'static str,
}
impl Work for Fork {
    fn run<C: Pick>(&mut self, _: usize) -> Duration {
        let src = C::of(&self.trees);
        let form = self.form;
        let n = self.trees.2 .0.len() as u64;
        batched(
            n,
            self.calls,
            || (),
            |_| match form {
                "fork_map" => src.fork_map(),
                "fork_kernel" => src.fork_kernel(),
                _ => {
                    let mut t = C::empty();
                    src.visit(|a, b, v| t.push(a, b, v));
                    t
                }
            },
        )
    }
}

fn main() {
    let quick = support::quick();
    let sizes: Vec<u64> = match std::env::var("MAPLE_BENCH_SIZES") {
        Ok(s) if !s.is_empty() => s.split(',').map(|x| x.trim().parse().unwrap()).collect(),
        _ if quick => vec![10, 1_000, 100_000],
        _ => vec![10, 100, 1_000, 10_000, 100_000, 1_000_000],
    };
    // `MAPLE_BENCH_ROUNDS=k`: k rounds for every row (a loaded host wants more).
    let forced: Option<usize> = std::env::var("MAPLE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok());
    let rounds = |n: u64| {
        if let Some(k) = forced {
            k
        } else if quick {
            5
        } else if n >= 1_000_000 {
            7
        } else {
            15
        }
    };
    println!("\nmodes: exclusive, RCU and BTreeMap alternated in one process (best ns per op; ratios: median of rounds, range)");
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>9} {:>7} {:>11} {:>7} {:>11}",
        "workload", "n", "excl ns", "RCU ns", "btree ns", "RCU÷ex", "range", "ex÷bt", "range"
    );
    // `cargo bench` passes `--bench`; the first other argument filters rows by workload.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |w: &str| filter.as_deref().is_none_or(|f| w.contains(f));
    let mut rows = Vec::new();
    let read_rounds = forced.unwrap_or(if quick { 5 } else { 25 });
    for hit in [true, false] {
        let name = if hit { "lookup_hit" } else { "lookup_miss" };
        for &n in sizes.iter().filter(|_| wanted(name)) {
            let (trees, count) = (Trio::build(n), 200_000);
            let w = Lookups {
                trees,
                n,
                hit,
                count,
            };
            rows.push(alternate(name, n, count, read_rounds, w));
        }
    }
    for &n in sizes.iter().filter(|_| wanted("build")) {
        let c = calls(200_000, n);
        rows.push(alternate(
            "build",
            n,
            n * c,
            rounds(n),
            Build { n, calls: c },
        ));
    }
    for rev in [false, true] {
        let name = if rev { "iterate_rev" } else { "iterate" };
        for &n in sizes.iter().filter(|_| wanted(name)) {
            let passes = calls(1_000_000, n);
            let w = Iterate {
                trees: Trio::build(n),
                n,
                passes,
                rev,
            };
            rows.push(alternate(name, n, n * passes, read_rounds, w));
        }
    }
    for &n in sizes.iter().filter(|_| wanted("random_store")) {
        let c = calls(100_000, n);
        let w = RandomStore {
            ranges: support::random_ranges(n as usize),
            calls: c,
        };
        rows.push(alternate("random_store", n, n * c, rounds(n), w));
    }
    for take in [false, true] {
        let name = if take { "erase_entry" } else { "erase_half" };
        for &n in sizes.iter().filter(|_| wanted(name)) {
            let c = calls(100_000, n);
            let w = EraseHalf { n, calls: c, take };
            rows.push(alternate(name, n, n.div_ceil(2) * c, rounds(n), w));
        }
    }
    for &n in sizes.iter().filter(|_| wanted("gap_rev")) {
        let count = 100_000;
        let w = GapRev {
            trees: Trio::build(n),
            n,
            count,
        };
        rows.push(alternate("gap_rev", n, count, read_rounds, w));
    }
    if wanted("create_drop") {
        for n in [0, 1] {
            let c = 100_000;
            rows.push(alternate(
                "create_drop",
                n,
                c,
                15,
                CreateDrop { n, calls: c },
            ));
        }
    }
    let mut fork_sizes: Vec<u64> = sizes.iter().copied().filter(|&n| n <= 10_000).collect();
    fork_sizes.push(135);
    fork_sizes.sort_unstable();
    fork_sizes.dedup();
    for &n in fork_sizes.iter().filter(|_| wanted("fork_map")) {
        let c = calls(100_000, n);
        let w = Fork {
            trees: Trio::build(n),
            calls: c,
            form: "fork_map",
        };
        rows.push(alternate("fork_map", n, c, rounds(n), w));
    }
    for form in ["fork_kernel", "fork135_old"] {
        if wanted(form) {
            let w = Fork {
                trees: Trio::build(135),
                calls: 1_000,
                form,
            };
            rows.push(alternate(form, 135, 1_000, forced.unwrap_or(15), w));
        }
    }
    write_json(&rows);
}

/// `target/bench-results/modes.json`: one object per row (`ratio`: RCU ÷ exclusive;
/// `vs_btree`: exclusive ÷ BTreeMap; medians of the rounds', with their range).
fn write_json(rows: &[Row]) {
    let mut json = String::from("[\n");
    for (k, r) in rows.iter().enumerate() {
        let [e, rcu, bt] = r.best_ns();
        let (rm, rlo, rhi) = r.ratio(1, 0);
        let (bm, blo, bhi) = r.ratio(0, 2);
        json += &format!(
            "  {{\"workload\": \"{}\", \"n\": {}, \"exclusive_ns\": {e:.2}, \"rcu_ns\": {rcu:.2}, \"btree_ns\": {bt:.2}, \"ratio\": {rm:.4}, \"ratio_min\": {rlo:.4}, \"ratio_max\": {rhi:.4}, \"vs_btree\": {bm:.4}, \"vs_btree_min\": {blo:.4}, \"vs_btree_max\": {bhi:.4}, \"rounds\": {}}}{}\n",
            r.workload,
            r.n,
            r.rounds.len(),
            if k + 1 < rows.len() { "," } else { "" }
        );
    }
    json += "]\n";
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-results");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.json"), json).unwrap();
}
