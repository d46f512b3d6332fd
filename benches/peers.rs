//! The workloads of BENCHMARKS.md's goals against the crates people use today, at 1,000 / 100,000 /
//! 1,000,000 ranges `[10i, 10i + 5]` = `i` (iteration at 10^4 … 10^7), random indices from
//! xorshift64 seeded 42.
//!
//! Peers: std `BTreeMap` as a real range map (`support::btree_range`: stores trim and split),
//! `rangemap::RangeInclusiveMap`, and — for the workloads that need no range semantics (build,
//! lookup, iteration) — `scc::TreeIndex` and `crossbeam_skiplist::SkipMap`, keyed by range start
//! with a floor lookup. Every peer runs the same generic body through the [`Peer`] and
//! [`RangePeer`] traits, so the rows line up.
//!
//! Maple rows: `maple` is an allocation tree (gap tracking, as the kernel's VMA tree) written
//! through [`MapleTree::exclusive`] (the kernel's non-RCU mode); `maple-rcu` writes through the
//! tree's lock with readers allowed; `maple-range` is a plain range tree (16-way internal nodes).
//!
//! Run: `cargo bench --bench peers` (`MAPLE_BENCH_QUICK=1` for a smoke run).

mod support;

use std::hint::black_box;
use std::ops::Bound;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use criterion::{measurement::WallTime, SamplingMode, Throughput};
use maple_tree::{MapleTree, Options, Value};
use support::btree_range::BTreeRangeMap;
use support::{pick, shape, XorShift64};

// ----- the peers ---------------------------------------------------------------------------------

/// A read handle: whatever guard or borrow the peer's lookups need, taken once per batch.
trait Reader {
    fn get(&self, index: u64) -> Option<u64>;
}

/// What every peer can do.
trait Peer: Sized {
    const NAME: &'static str;
    type R<'a>: Reader
    where
        Self: 'a;
    fn empty() -> Self;
    /// Stores `[a, b]` = `v` after everything stored so far.
    fn push(&mut self, a: u64, b: u64, v: u64);
    fn reader(&self) -> Self::R<'_>;
    /// Visits every range in order.
    fn visit(&self, f: impl FnMut(u64, u64, u64));
    /// `(count, sum of values)` of a full iteration.
    fn sum(&self) -> (u64, u64) {
        let (mut n, mut s) = (0, 0);
        self.visit(|_, _, v| {
            n += 1;
            s += v;
        });
        (n, s)
    }
    /// A copy for the fork workload (`dup` plus the exact-fit pass for the maple tree).
    fn fork(&self) -> Self;
}

/// Peers with range semantics.
trait RangePeer: Peer {
    /// Stores `[a, b]` = `v` over whatever is there (trim, split).
    fn store(&mut self, a: u64, b: u64, v: u64);
    fn erase(&mut self, a: u64, b: u64);
    /// The highest start of `size` free indices inside `[min, max]`.
    fn gap_rev(&self, min: u64, max: u64, size: u64) -> Option<u64>;
}

/// The maple tree: `ALLOC` picks an allocation tree, `RCU` writes through the lock, `HUGE` puts
/// its nodes in huge-page chunks (`Options::huge_pages`).
struct Maple<const ALLOC: bool, const RCU: bool, const HUGE: bool = false>(MapleTree<Value>);

struct MapleReader<'a>(&'a MapleTree<Value>, maple_tree::TreeGuard<'a>);
impl Reader for MapleReader<'_> {
    #[inline]
    fn get(&self, index: u64) -> Option<u64> {
        self.0.load(index, &self.1).map(Value::get)
    }
}

impl<const ALLOC: bool, const RCU: bool, const HUGE: bool> Peer for Maple<ALLOC, RCU, HUGE> {
    const NAME: &'static str = match (ALLOC, RCU, HUGE) {
        (true, false, false) => "maple",
        (true, true, false) => "maple-rcu",
        (false, false, false) => "maple-range",
        (false, true, false) => "maple-range-rcu",
        (true, false, true) => "maple-huge",
        (_, _, true) => "maple-other-huge",
    };
    type R<'a> = MapleReader<'a>;
    fn empty() -> Self {
        Maple(MapleTree::with_options(
            Options::new().alloc(ALLOC).huge_pages(HUGE),
        ))
    }
    #[inline]
    fn push(&mut self, a: u64, b: u64, v: u64) {
        self.store(a, b, v)
    }
    fn reader(&self) -> MapleReader<'_> {
        MapleReader(&self.0, self.0.pin())
    }
    fn visit(&self, mut f: impl FnMut(u64, u64, u64)) {
        let g = self.0.pin();
        for (r, v) in self.0.iter(&g) {
            f(*r.start(), *r.end(), v.get());
        }
    }
    fn fork(&self) -> Self {
        let mut new = self.0.dup();
        {
            let mut w = new.exclusive();
            let mut c = w.cursor(0);
            while let Some(x) = c.find(u64::MAX) {
                c.store(x).unwrap();
            }
        }
        Maple(new)
    }
}

impl<const ALLOC: bool, const RCU: bool, const HUGE: bool> RangePeer for Maple<ALLOC, RCU, HUGE> {
    #[inline]
    fn store(&mut self, a: u64, b: u64, v: u64) {
        if RCU {
            self.0.store_range(a..=b, Value::new(v)).unwrap()
        } else {
            self.0
                .exclusive()
                .store_range(a..=b, Value::new(v))
                .unwrap()
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
    fn gap_rev(&self, min: u64, max: u64, size: u64) -> Option<u64> {
        self.0.empty_area_rev(min..=max, size).ok()
    }
}

type MapleAlloc = Maple<true, false>;
type MapleRcu = Maple<true, true>;
type MapleRange = Maple<false, false>;
/// The allocation tree with its nodes in huge-page chunks (lookup rows only).
type MapleHuge = Maple<true, false, true>;

struct Btree(BTreeRangeMap);
impl Reader for &BTreeRangeMap {
    #[inline]
    fn get(&self, index: u64) -> Option<u64> {
        BTreeRangeMap::get(self, index)
    }
}
impl Peer for Btree {
    const NAME: &'static str = "btreemap";
    type R<'a> = &'a BTreeRangeMap;
    fn empty() -> Self {
        Btree(BTreeRangeMap::new())
    }
    #[inline]
    fn push(&mut self, a: u64, b: u64, v: u64) {
        self.0.push(a, b, v)
    }
    fn reader(&self) -> &BTreeRangeMap {
        &self.0
    }
    fn visit(&self, mut f: impl FnMut(u64, u64, u64)) {
        for (a, b, v) in self.0.iter() {
            f(a, b, v);
        }
    }
    fn fork(&self) -> Self {
        Btree(self.0.clone())
    }
}
impl RangePeer for Btree {
    #[inline]
    fn store(&mut self, a: u64, b: u64, v: u64) {
        self.0.store(a, b, v)
    }
    #[inline]
    fn erase(&mut self, a: u64, b: u64) {
        self.0.erase(a, b)
    }
    fn gap_rev(&self, min: u64, max: u64, size: u64) -> Option<u64> {
        self.0.empty_area_rev(min, max, size)
    }
}

struct RangeMap(rangemap::RangeInclusiveMap<u64, u64>);
impl Reader for &rangemap::RangeInclusiveMap<u64, u64> {
    #[inline]
    fn get(&self, index: u64) -> Option<u64> {
        rangemap::RangeInclusiveMap::get(self, &index).copied()
    }
}
impl Peer for RangeMap {
    const NAME: &'static str = "rangemap";
    type R<'a> = &'a rangemap::RangeInclusiveMap<u64, u64>;
    fn empty() -> Self {
        RangeMap(rangemap::RangeInclusiveMap::new())
    }
    #[inline]
    fn push(&mut self, a: u64, b: u64, v: u64) {
        self.0.insert(a..=b, v)
    }
    fn reader(&self) -> Self::R<'_> {
        &self.0
    }
    fn visit(&self, mut f: impl FnMut(u64, u64, u64)) {
        for (r, &v) in self.0.iter() {
            f(*r.start(), *r.end(), v);
        }
    }
    fn fork(&self) -> Self {
        RangeMap(self.0.clone())
    }
}
impl RangePeer for RangeMap {
    #[inline]
    fn store(&mut self, a: u64, b: u64, v: u64) {
        self.0.insert(a..=b, v)
    }
    #[inline]
    fn erase(&mut self, a: u64, b: u64) {
        self.0.remove(a..=b)
    }
    fn gap_rev(&self, min: u64, max: u64, size: u64) -> Option<u64> {
        // Gaps come in ascending order only: keep the last that fits.
        let mut best = None;
        for g in self.0.gaps(&(min..=max)) {
            if g.end() - g.start() >= size - 1 {
                best = Some(g.end() - size + 1);
            }
        }
        best
    }
}

/// `scc::TreeIndex` keyed by range start, value `(last, value)`; lookups are floor searches
/// (`locate`) checked against `last`.
struct Scc(scc::TreeIndex<u64, (u64, u64)>);
struct SccReader<'a>(&'a scc::TreeIndex<u64, (u64, u64)>, scc::Guard);
impl Reader for SccReader<'_> {
    #[inline]
    fn get(&self, index: u64) -> Option<u64> {
        use scc::tree_index::Proximity;
        let floor = match self.0.locate(&index, &self.1) {
            Proximity::Exact(it) | Proximity::Between(it) => it.get(),
            Proximity::Smaller(it) => it.get_back(),
            Proximity::Larger(_) | Proximity::Empty => None,
        };
        match floor {
            Some((_, &(e, v))) if e >= index => Some(v),
            _ => None,
        }
    }
}
impl Peer for Scc {
    const NAME: &'static str = "scc";
    type R<'a> = SccReader<'a>;
    fn empty() -> Self {
        Scc(scc::TreeIndex::new())
    }
    #[inline]
    fn push(&mut self, a: u64, b: u64, v: u64) {
        self.0.insert_sync(a, (b, v)).unwrap()
    }
    fn reader(&self) -> SccReader<'_> {
        SccReader(&self.0, scc::Guard::new())
    }
    fn visit(&self, mut f: impl FnMut(u64, u64, u64)) {
        let g = scc::Guard::new();
        for (&a, &(b, v)) in self.0.iter(&g) {
            f(a, b, v);
        }
    }
    fn fork(&self) -> Self {
        Scc(self.0.clone())
    }
}

/// `crossbeam_skiplist::SkipMap` keyed by range start; lookups are `upper_bound` floors.
struct Skip(crossbeam_skiplist::SkipMap<u64, (u64, u64)>);
impl Reader for &crossbeam_skiplist::SkipMap<u64, (u64, u64)> {
    #[inline]
    fn get(&self, index: u64) -> Option<u64> {
        let e = self.upper_bound(Bound::Included(&index))?;
        let &(last, v) = e.value();
        (last >= index).then_some(v)
    }
}
impl Peer for Skip {
    const NAME: &'static str = "skiplist";
    type R<'a> = &'a crossbeam_skiplist::SkipMap<u64, (u64, u64)>;
    fn empty() -> Self {
        Skip(crossbeam_skiplist::SkipMap::new())
    }
    #[inline]
    fn push(&mut self, a: u64, b: u64, v: u64) {
        self.0.insert(a, (b, v));
    }
    fn reader(&self) -> Self::R<'_> {
        &self.0
    }
    fn visit(&self, mut f: impl FnMut(u64, u64, u64)) {
        for e in self.0.iter() {
            let &(b, v) = e.value();
            f(*e.key(), b, v);
        }
    }
    fn fork(&self) -> Self {
        let new = crossbeam_skiplist::SkipMap::new();
        for e in self.0.iter() {
            new.insert(*e.key(), *e.value());
        }
        Skip(new)
    }
}

// ----- the workloads -----------------------------------------------------------------------------

fn sizes() -> &'static [u64] {
    if support::quick() {
        &[1_000, 100_000]
    } else {
        &[1_000, 100_000, 1_000_000]
    }
}

/// The iteration row's sizes: per-range cost across four orders of magnitude, where caches
/// stop holding the tree (10^7 ranges is about 340 MB of maple nodes, 490 MB of `BTreeMap`).
fn iterate_sizes() -> &'static [u64] {
    if support::quick() {
        &[10_000, 100_000]
    } else {
        &[10_000, 100_000, 1_000_000, 10_000_000]
    }
}

fn build<P: Peer>(n: u64) -> P {
    let mut p = P::empty();
    for i in 0..n {
        let (a, b) = shape(i);
        p.push(a, b, i);
    }
    p
}

fn check_built<P: Peer>(p: &P, n: u64) {
    assert_eq!(p.sum(), (n, n * (n - 1) / 2), "{}", P::NAME);
}

/// Criterion settings for a group whose iterations may take a second.
fn heavy(g: &mut BenchmarkGroup<'_, WallTime>, n: u64) {
    if n >= 100_000 {
        g.sampling_mode(SamplingMode::Flat).sample_size(10);
    }
}

/// Times `body` on a fresh value from `setup` per iteration (setup and drop untimed).
fn timed_batches<S, T>(
    iters: u64,
    mut setup: impl FnMut() -> S,
    mut body: impl FnMut(S) -> T,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let s = setup();
        let t0 = Instant::now();
        let out = body(s);
        total += t0.elapsed();
        drop(black_box(out));
    }
    total
}

fn lookup<P: Peer>(c: &mut Criterion, n: u64) {
    let p: P = build(n);
    check_built(&p, n);
    for hit in [true, false] {
        let mut g = c.benchmark_group(if hit {
            "peers/lookup_hit"
        } else {
            "peers/lookup_miss"
        });
        g.throughput(Throughput::Elements(1));
        let r = p.reader();
        let mut rng = XorShift64::new();
        let (mut found, mut calls) = (0u64, 0u64);
        g.bench_with_input(BenchmarkId::new(P::NAME, n), &n, |b, &n| {
            b.iter(|| {
                let x = rng.next_u64();
                let i = pick(x, n);
                let k = ((x & 0xffff) * if hit { 6 } else { 4 }) >> 16;
                let got = if hit {
                    r.get(10 * i + k)
                } else {
                    r.get(10 * i + 6 + k)
                };
                found += got.is_some() as u64;
                calls += 1;
                debug_assert_eq!(got, hit.then_some(i));
                got
            })
        });
        // Cheap correctness: every hit found, every miss missed.
        assert_eq!(found, if hit { calls } else { 0 }, "{} lookups", P::NAME);
        g.finish();
    }
}

fn build_in_order<P: Peer>(c: &mut Criterion, n: u64) {
    let mut g = c.benchmark_group("peers/build");
    check_built(&build::<P>(n), n);
    heavy(&mut g, n);
    g.throughput(Throughput::Elements(n));
    g.bench_with_input(BenchmarkId::new(P::NAME, n), &n, |b, &n| {
        b.iter_custom(|iters| timed_batches(iters, || (), |_| build::<P>(n)))
    });
    g.finish();
}

fn iterate<P: Peer>(c: &mut Criterion, n: u64) {
    let mut g = c.benchmark_group("peers/iterate");
    let p: P = build(n);
    heavy(&mut g, n);
    g.throughput(Throughput::Elements(n));
    g.bench_with_input(BenchmarkId::new(P::NAME, n), &n, |b, &n| {
        b.iter(|| assert_eq!(p.sum(), (n, n * (n - 1) / 2)))
    });
    g.finish();
}

fn random_store<P: RangePeer>(c: &mut Criterion, n: u64) {
    let mut g = c.benchmark_group("peers/random_store");
    let ranges = support::random_ranges(n as usize);
    let run = || {
        let mut p = P::empty();
        for (i, &(a, b)) in ranges.iter().enumerate() {
            p.store(a, b, i as u64);
        }
        p
    };
    // The last range stored is intact.
    let (a, b) = *ranges.last().unwrap();
    let r = run();
    assert_eq!(r.reader().get(a), Some(n - 1));
    assert_eq!(r.reader().get(b), Some(n - 1));
    drop(r);
    heavy(&mut g, n);
    g.throughput(Throughput::Elements(n));
    g.bench_with_input(BenchmarkId::new(P::NAME, n), &n, |b, _| {
        b.iter_custom(|iters| timed_batches(iters, || (), |_| run()))
    });
    g.finish();
}

fn erase_half<P: RangePeer>(c: &mut Criterion, n: u64) {
    let mut g = c.benchmark_group("peers/erase_half");
    let run = |mut p: P| {
        for i in (0..n).step_by(2) {
            let (a, b) = shape(i);
            p.erase(a, b);
        }
        p
    };
    let p = run(build(n));
    assert_eq!(p.sum().0, n / 2, "{}", P::NAME);
    assert_eq!(p.reader().get(15), Some(1));
    assert_eq!(p.reader().get(5), None);
    drop(p);
    heavy(&mut g, n);
    g.throughput(Throughput::Elements(n / 2));
    g.bench_with_input(BenchmarkId::new(P::NAME, n), &n, |b, &n| {
        b.iter_custom(|iters| timed_batches(iters, || build::<P>(n), run))
    });
    g.finish();
}

fn gap_search<P: RangePeer>(c: &mut Criterion, n: u64) {
    let mut g = c.benchmark_group("peers/gap_rev");
    g.throughput(Throughput::Elements(1));
    let p: P = build(n);
    let mut rng = XorShift64::new();
    let span = 10 * n - 10_000;
    g.bench_with_input(BenchmarkId::new(P::NAME, n), &n, |b, _| {
        b.iter(|| {
            let lo = pick(rng.next_u64(), span + 1);
            let hi = lo + 9_999;
            let r = p.gap_rev(lo, hi, 3).unwrap();
            // The free stretches are [10i+6, 10i+9]: the highest fit of 3 is within 13 of hi.
            assert!((6..=7).contains(&(r % 10)) && r + 2 <= hi && r + 13 > hi);
            r
        })
    });
    g.finish();
}

/// SPEC's fork rows at 135 entries: the old form (a fresh map filled in order from the source)
/// and the new one (the maple tree's `dup` plus an exact-fit store of every entry; the others'
/// `clone()`); the drop is timed, there is no validation (the kernel bench's own rows are in
/// `benches/kernel.rs`).
fn fork135<P: Peer>(c: &mut Criterion) {
    let src: P = build(135);
    let copy = |src: &P| {
        let mut new = P::empty();
        src.visit(|a, b, v| new.push(a, b, v));
        new
    };
    check_built(&copy(&src), 135);
    check_built(&src.fork(), 135);
    let mut g = c.benchmark_group("peers/fork135");
    g.bench_function(BenchmarkId::new("old", P::NAME), |b| b.iter(|| copy(&src)));
    g.bench_function(BenchmarkId::new("new", P::NAME), |b| b.iter(|| src.fork()));
    g.finish();
}

/// Runs `$f::<P>(c, n)` for each peer listed.
macro_rules! each {
    ($f:ident, $c:expr, $n:expr; $($p:ty),*) => { $( $f::<$p>($c, $n); )* };
}

/// Every workload, each size, every peer one after the other, so that drifts in the machine's
/// load hit the rows of one table alike.
fn peers(c: &mut Criterion) {
    for &n in sizes() {
        // `maple-rcu` reads a tree built through the lock (RCU mode): the read rows of an
        // RCU-built tree against an exclusive-built one.
        each!(lookup, c, n; MapleAlloc, MapleRcu, MapleRange, MapleHuge, Btree, RangeMap, Scc, Skip);
    }
    for &n in sizes() {
        each!(build_in_order, c, n; MapleAlloc, MapleRcu, MapleRange, Btree, RangeMap, Scc, Skip);
    }
    for &n in iterate_sizes() {
        each!(iterate, c, n; MapleAlloc, MapleRcu, Btree, RangeMap, Scc, Skip);
    }
    for &n in sizes() {
        each!(random_store, c, n; MapleAlloc, MapleRcu, Btree, RangeMap);
    }
    for &n in sizes() {
        each!(erase_half, c, n; MapleAlloc, MapleRcu, Btree, RangeMap);
    }
    for &n in sizes() {
        each!(gap_search, c, n; MapleAlloc, Btree, RangeMap);
    }
    fork135::<MapleAlloc>(c);
    fork135::<MapleRcu>(c);
    fork135::<Btree>(c);
    fork135::<RangeMap>(c);
}

criterion_group! {
    name = benches;
    config = support::config();
    targets = peers
}
criterion_main!(benches);
