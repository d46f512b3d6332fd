//! std `BTreeMap` used as a real range map: non-overlapping inclusive ranges keyed by their start,
//! where a store trims the neighbours it overlaps and splits a range it lands inside — the same
//! semantics as `MapleTree::store_range`. The peer the SPEC calls "btreemap".

use std::collections::BTreeMap;

/// Non-overlapping inclusive ranges `start -> (last, value)`.
#[derive(Clone, Debug, Default)]
pub struct BTreeRangeMap {
    map: BTreeMap<u64, (u64, u64)>,
}

impl BTreeRangeMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of stored ranges.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no range is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Stores `value` over `[first, last]`, trimming or splitting whatever overlaps.
    pub fn store(&mut self, first: u64, last: u64, value: u64) {
        self.clear_range(first, last);
        self.map.insert(first, (last, value));
    }

    /// Appends a range that starts after every stored range (no trimming needed): what an
    /// in-order build of a range map does. Falls back to `store` if the precondition fails.
    pub fn push(&mut self, first: u64, last: u64, value: u64) {
        match self.map.last_key_value() {
            Some((_, &(e, _))) if e >= first => self.store(first, last, value),
            _ => {
                self.map.insert(first, (last, value));
            }
        }
    }

    /// Empties `[first, last]`, trimming or splitting whatever overlaps.
    pub fn erase(&mut self, first: u64, last: u64) {
        self.clear_range(first, last);
    }

    fn clear_range(&mut self, first: u64, last: u64) {
        debug_assert!(first <= last);
        // A range starting before `first` that reaches into `[first, last]`: trim it, and if it
        // also sticks out past `last`, split off its tail.
        if first > 0 {
            if let Some((&s, &(e, v))) = self.map.range(..first).next_back() {
                if e >= first {
                    self.map.insert(s, (first - 1, v));
                    if e > last {
                        self.map.insert(last + 1, (e, v));
                        return;
                    }
                }
            }
        }
        // Ranges starting inside `[first, last]`: remove them; the last may keep its tail.
        while let Some((&s, &(e, v))) = self.map.range(first..=last).next() {
            self.map.remove(&s);
            if e > last {
                self.map.insert(last + 1, (e, v));
                break;
            }
        }
    }

    /// Takes out the range containing `index`: its start and value.
    pub fn take(&mut self, index: u64) -> Option<(u64, u64)> {
        let (&s, &(e, v)) = self.map.range(..=index).next_back()?;
        if e < index {
            return None;
        }
        self.map.remove(&s);
        Some((s, v))
    }

    /// Replaces every value `v` by `f(v)`, in place (after a `clone()`: the range map's fork
    /// with its entries mapped).
    pub fn map_values(&mut self, mut f: impl FnMut(u64) -> u64) {
        for (_, v) in self.map.values_mut() {
            *v = f(*v);
        }
    }

    /// The value at `index`.
    #[inline]
    pub fn get(&self, index: u64) -> Option<u64> {
        match self.map.range(..=index).next_back() {
            Some((_, &(e, v))) if e >= index => Some(v),
            _ => None,
        }
    }

    /// Every `(first, last, value)` in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64, u64)> + '_ {
        self.map.iter().map(|(&s, &(e, v))| (s, e, v))
    }

    /// `empty_area_rev`: the highest `start` such that `[start, start + size - 1]` lies inside
    /// `[min, max]` and holds nothing.
    pub fn empty_area_rev(&self, min: u64, max: u64, size: u64) -> Option<u64> {
        if size == 0 || max < min || max - min < size - 1 {
            return None;
        }
        // `hi`: the top of the free stretch being grown downwards.
        let mut hi = max;
        for (&s, &(e, _)) in self.map.range(..=max).rev() {
            if e < hi {
                let lo = (e + 1).max(min);
                if hi - lo >= size - 1 {
                    return Some(hi - (size - 1));
                }
            }
            if s <= min {
                return None;
            }
            hi = s - 1;
        }
        if hi >= min && hi - min >= size - 1 {
            Some(hi - (size - 1))
        } else {
            None
        }
    }
}
