//! Shared by the benchmark targets: quick mode, the criterion configuration, the xorshift64
//! generator the SPEC's workloads are defined with, and the `BTreeMap` range map.

#![allow(dead_code)]

pub mod btree_range;

use std::time::Duration;

use criterion::Criterion;

/// `MAPLE_BENCH_QUICK=1` (anything but empty or `0`): a few hundred milliseconds per benchmark,
/// and the 1,000,000-range sizes left out, for smoke runs.
pub fn quick() -> bool {
    std::env::var("MAPLE_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Criterion's settings: short and few samples in quick mode; 10 samples of ~2 s otherwise (the
/// machine has two cores shared with other work, so long runs buy little precision).
pub fn config() -> Criterion {
    let c = Criterion::default().without_plots();
    if quick() {
        c.warm_up_time(Duration::from_millis(50))
            .measurement_time(Duration::from_millis(200))
            .sample_size(10)
    } else {
        c.warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sample_size(20)
    }
}

/// The SPEC's generator: xorshift64 (13, 7, 17), seeded 42.
#[derive(Clone, Debug)]
pub struct XorShift64(pub u64);

impl XorShift64 {
    /// Seeded 42, as every SPEC workload.
    pub fn new() -> Self {
        XorShift64(42)
    }

    /// The next value.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value below `n`.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

impl Default for XorShift64 {
    fn default() -> Self {
        Self::new()
    }
}

/// A uniform value below `n` from one xorshift output (multiply-shift: no division).
#[inline]
pub fn pick(x: u64, n: u64) -> u64 {
    ((x as u128 * n as u128) >> 64) as u64
}

/// The SPEC's shape: range `i` is `[10i, 10i + 5]` with value `i`.
#[inline]
pub fn shape(i: u64) -> (u64, u64) {
    (10 * i, 10 * i + 5)
}

/// The random-range workload: `n` ranges of length 1–64 starting in `[0, 2^32 - 64)`.
pub fn random_ranges(n: usize) -> Vec<(u64, u64)> {
    let mut rng = XorShift64::new();
    (0..n)
        .map(|_| {
            let a = rng.below((1 << 32) - 64);
            let len = 1 + rng.below(64);
            (a, a + len - 1)
        })
        .collect()
}
