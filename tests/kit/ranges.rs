//! The reference range map every test of the tree checks against: the non-empty ranges,
//! `first -> (last, value)`, kept in a `BTreeMap`. A store trims or removes what it covers and
//! equal neighbours stay apart (the maple tree's rules); empty ranges are implicit.
//!
//! One file, included with `#[path]` by the unit tests (`src/tree/tests.rs`), the integration
//! and stress tests (`tests/`), the fuzz targets' model (`tests/fuzz_support/`) and the loom
//! models (`loom-tests/`), so that no test has its own copy of the trimming logic to get wrong.
#![allow(dead_code)]

use std::collections::BTreeMap;

/// The non-empty ranges of a tree with their values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranges<V = u64>(pub BTreeMap<u64, (u64, V)>);

impl<V> Default for Ranges<V> {
    fn default() -> Self {
        Ranges(BTreeMap::new())
    }
}

impl<V: Copy + PartialEq> Ranges<V> {
    /// Stores `v` (or nothing: an erase) over `[first, last]`, trimming what was there. An
    /// inverted range stores nothing.
    pub fn store(&mut self, first: u64, last: u64, v: Option<V>) {
        if first > last {
            return;
        }
        let over: Vec<(u64, u64, V)> = self
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

    /// The range holding `i`, if any.
    pub fn at(&self, i: u64) -> Option<(u64, u64, V)> {
        self.0
            .range(..=i)
            .next_back()
            .filter(|(_, &(l, _))| l >= i)
            .map(|(&a, &(b, v))| (a, b, v))
    }

    /// The value at `i`.
    pub fn load(&self, i: u64) -> Option<V> {
        self.at(i).map(|r| r.2)
    }

    /// Whether `(first, last, v)` is exactly one of the ranges.
    pub fn has(&self, r: (u64, u64, V)) -> bool {
        self.0.get(&r.0) == Some(&(r.1, r.2))
    }

    /// Whether any index of `[first, last]` is taken.
    pub fn occupied(&self, first: u64, last: u64) -> bool {
        self.0
            .range(..=last)
            .next_back()
            .is_some_and(|(_, &(l, _))| l >= first)
    }

    /// All ranges in order.
    pub fn list(&self) -> Vec<(u64, u64, V)> {
        self.0.iter().map(|(&a, &(b, v))| (a, b, v)).collect()
    }

    /// The ranges that overlap `[lo, hi]`, whole, in order.
    pub fn within(&self, lo: u64, hi: u64) -> Vec<(u64, u64, V)> {
        let start = self.at(lo).map_or(lo, |r| r.0);
        self.0
            .range(start..=hi)
            .map(|(&a, &(b, v))| (a, b, v))
            .collect()
    }

    /// The empty ranges inside `[lo, hi]`, clipped to it, in order.
    pub fn gaps(&self, lo: u64, hi: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut next = Some(lo);
        for (a, b, _) in self.within(lo, hi) {
            let Some(n) = next else { break };
            if a > n {
                out.push((n, a - 1));
            }
            next = b.checked_add(1).filter(|&x| x <= hi);
        }
        if let Some(n) = next {
            if n <= hi {
                out.push((n, hi));
            }
        }
        out
    }

    /// The range holding `i`, or the gap around it: `(first, last, value or None)`.
    pub fn slot(&self, i: u64) -> (u64, u64, Option<V>) {
        if let Some((a, b, v)) = self.at(i) {
            return (a, b, Some(v));
        }
        let lo = self
            .0
            .range(..i)
            .next_back()
            .map_or(0, |(_, &(b, _))| b + 1);
        let hi = self.0.range(i..).next().map_or(u64::MAX, |(&a, _)| a - 1);
        (lo, hi, None)
    }

    /// The end of the last range (0 if none).
    pub fn last_end(&self) -> u64 {
        self.0.iter().next_back().map_or(0, |(_, &(b, _))| b)
    }

    /// The number of ranges.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no range.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod kit_tests {
    use super::Ranges;

    #[test]
    fn store_trims_and_keeps_equal_neighbours_apart() {
        let mut m = Ranges::default();
        m.store(10, 19, Some(1));
        m.store(20, 29, Some(1));
        m.store(15, 24, Some(2));
        assert_eq!(m.list(), [(10, 14, 1), (15, 24, 2), (25, 29, 1)]);
        m.store(12, 12, None);
        assert_eq!(
            m.list(),
            [(10, 11, 1), (13, 14, 1), (15, 24, 2), (25, 29, 1)]
        );
        assert_eq!(m.at(20), Some((15, 24, 2)));
        assert_eq!(m.gaps(0, 40), [(0, 9), (12, 12), (30, 40)]);
        assert_eq!(m.within(14, 15), [(13, 14, 1), (15, 24, 2)]);
        m.store(0, u64::MAX, Some(7));
        assert_eq!(m.list(), [(0, u64::MAX, 7)]);
        assert_eq!(m.gaps(0, u64::MAX), []);
        m.store(u64::MAX, u64::MAX, None);
        assert_eq!(m.gaps(5, u64::MAX), [(u64::MAX, u64::MAX)]);
    }
}
