//! The reference model: the test kit's range map (`tests/kit/ranges.rs`) of the occupied
//! ranges. Empty ranges are implicit, so they coalesce by construction; equal neighbours are
//! separate keys, so they never merge.

use std::collections::BTreeSet;

#[path = "../kit/ranges.rs"]
mod ranges;
use ranges::Ranges;

use maple_tree::Error;

/// What an occupied range holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    /// A tracked entry: its value and serial.
    Entry {
        /// The input's value.
        val: u64,
        /// The entry's serial (identity).
        serial: u64,
    },
    /// The reserved zero entry: occupied, but reads as empty.
    Zero,
}

impl Content {
    /// `Some((val, serial))` for an entry, `None` for the zero entry.
    pub fn entry(self) -> Option<(u64, u64)> {
        match self {
            Content::Entry { val, serial } => Some((val, serial)),
            Content::Zero => None,
        }
    }
}

/// One range of the total map: `(first, last, content)`, `None` meaning empty.
pub type Slot = (u64, u64, Option<Content>);

/// An entry as readers see it: `(first, last, val, serial)`.
pub type Seen = (u64, u64, u64, u64);

/// The model tree.
#[derive(Clone, Debug, Default)]
pub struct Model {
    map: Ranges<Content>,
}

impl Model {
    /// Overwrites `[first, last]` with `c` (`None` erases), trimming the neighbours.
    pub fn store(&mut self, first: u64, last: u64, c: Option<Content>) {
        assert!(first <= last, "model store with first > last");
        self.map.store(first, last, c);
    }

    /// No range is occupied.
    pub fn is_empty(&self) -> bool {
        self.map.0.is_empty()
    }

    /// The range (occupied or empty) containing `i`.
    pub fn slot(&self, i: u64) -> Slot {
        if let Some((&a, &(b, c))) = self.map.0.range(..=i).next_back() {
            if b >= i {
                return (a, b, Some(c));
            }
        }
        let lo = self
            .map
            .0
            .range(..i)
            .next_back()
            .map(|(_, &(b, _))| b + 1)
            .unwrap_or(0);
        let hi = self
            .map
            .0
            .range(i..)
            .next()
            .map(|(&a, _)| a - 1)
            .unwrap_or(u64::MAX);
        (lo, hi, None)
    }

    /// The entry at `i` as `load` reports it (the zero entry reads as empty).
    pub fn load(&self, i: u64) -> Option<Seen> {
        match self.slot(i) {
            (a, b, Some(Content::Entry { val, serial })) => Some((a, b, val, serial)),
            _ => None,
        }
    }

    /// Whether any index of `[first, last]` is occupied (zero entries count).
    pub fn occupied(&self, first: u64, last: u64) -> bool {
        self.map
            .0
            .range(..=last)
            .next_back()
            .is_some_and(|(_, &(l, _))| l >= first)
    }

    /// Every entry (zero entries skipped) in index order.
    pub fn entries(&self) -> Vec<Seen> {
        self.entries_in(0, u64::MAX)
    }

    /// Entries whose ranges intersect `[first, last]` (reported whole).
    pub fn entries_in(&self, first: u64, last: u64) -> Vec<Seen> {
        if first > last {
            return Vec::new();
        }
        let start = match self.map.0.range(..=first).next_back() {
            Some((&a, &(b, _))) if b >= first => a,
            _ => first,
        };
        self.map
            .0
            .range(start..=last)
            .filter_map(|(&a, &(b, c))| c.entry().map(|(v, s)| (a, b, v, s)))
            .collect()
    }

    /// The whole partition of `[0, u64::MAX]`, empty ranges included.
    pub fn partition(&self) -> Vec<Slot> {
        let mut out = Vec::with_capacity(self.map.0.len() * 2 + 1);
        let mut next = Some(0u64);
        for (&a, &(b, c)) in &self.map.0 {
            let n = next.expect("ranges after u64::MAX");
            if a > n {
                out.push((n, a - 1, None));
            }
            out.push((a, b, Some(c)));
            next = b.checked_add(1);
        }
        if let Some(n) = next {
            out.push((n, u64::MAX, None));
        }
        out
    }

    /// Serials of every entry held (each once).
    pub fn serials(&self) -> BTreeSet<u64> {
        self.map
            .0
            .values()
            .filter_map(|&(_, c)| c.entry().map(|(_, s)| s))
            .collect()
    }

    /// `mt_find`: the first entry whose range contains `index` or starts in `(index, max]`.
    pub fn find(&self, index: u64, max: u64) -> Option<Seen> {
        if index > max {
            return None;
        }
        self.entries_from(index).next().filter(|e| e.0 <= max)
    }

    /// Entries from the one containing `index` (or the next one) onwards.
    fn entries_from(&self, index: u64) -> impl Iterator<Item = Seen> + '_ {
        let start = match self.map.0.range(..=index).next_back() {
            Some((&a, &(b, _))) if b >= index => a,
            _ => index,
        };
        self.map
            .0
            .range(start..)
            .filter_map(|(&a, &(b, c))| c.entry().map(|(v, s)| (a, b, v, s)))
    }

    /// `mt_next`: the first entry after the range containing `index` that starts at or below `max`.
    pub fn next(&self, index: u64, max: u64) -> Option<Seen> {
        let (_, hi, _) = self.slot(index);
        let from = hi.checked_add(1)?;
        self.entries_from(from).next().filter(|e| e.0 <= max)
    }

    /// `mt_prev`: the last entry before the range containing `index` that ends at or above `min`.
    pub fn prev(&self, index: u64, min: u64) -> Option<Seen> {
        let (lo, _, _) = self.slot(index);
        let to = lo.checked_sub(1)?;
        self.map
            .0
            .range(..=to)
            .rev()
            .find_map(|(&a, &(b, c))| c.entry().map(|(v, s)| (a, b, v, s)))
            .filter(|e| e.1 >= min)
    }

    /// `mas_empty_area` / `mas_empty_area_rev` with the kernel's window rules (lib/maple_tree.c).
    pub fn empty_area(&self, min: u64, max: u64, size: u64, rev: bool) -> Result<u64, Error> {
        if min > max || size == 0 || max - min < size - 1 {
            return Err(Error::InvalidWindow);
        }
        let fits = |lo: u64, hi: u64| -> Option<u64> {
            let a = lo.max(min);
            let b = hi.min(max);
            (a <= b && b - a >= size - 1).then(|| if rev { b - (size - 1) } else { a })
        };
        if !rev {
            let mut cur = min;
            loop {
                let (lo, hi, c) = self.slot(cur);
                if c.is_none() {
                    if let Some(s) = fits(lo, hi) {
                        return Ok(s);
                    }
                }
                if hi >= max {
                    return Err(Error::NoRoom);
                }
                cur = hi + 1;
            }
        } else {
            let mut cur = max;
            loop {
                let (lo, hi, c) = self.slot(cur);
                if c.is_none() {
                    if let Some(s) = fits(lo, hi) {
                        return Ok(s);
                    }
                }
                if lo <= min {
                    return Err(Error::NoRoom);
                }
                cur = lo - 1;
            }
        }
    }
}

/// `mtree_alloc_cyclic`'s bookkeeping in the model: the wrapped flag lives in the tree.
#[derive(Clone, Copy, Debug, Default)]
pub struct CyclicModel {
    /// `MT_FLAGS_ALLOC_WRAPPED`.
    pub wrapped_flag: bool,
}

impl CyclicModel {
    /// Where `alloc_cyclic(lo, hi, next)` on `m` allocates: `Ok((index, searched_wrapped))`
    /// (the second search, from `lo`, was needed). The call reports
    /// [`reported`](Self::reported) and sets `next` to `index + 1` (wrapping).
    pub fn expect(&self, m: &Model, lo: u64, hi: u64, next: u64) -> Result<(u64, bool), Error> {
        if lo > hi {
            return Err(Error::InvalidWindow);
        }
        let from = lo.max(next);
        let first = if from <= hi {
            m.empty_area(from, hi, 1, false).ok()
        } else {
            None
        };
        match first {
            Some(i) => Ok((i, false)),
            None if from > lo => m.empty_area(lo, hi, 1, false).map(|i| (i, true)),
            None => Err(Error::NoRoom),
        }
    }

    /// The wrap report of a success whose own search did (not) wrap.
    pub fn reported(&self, searched_wrapped: bool) -> bool {
        searched_wrapped || self.wrapped_flag
    }

    /// Applies a success of [`expect`](Self::expect).
    pub fn apply(&mut self, index: u64, searched_wrapped: bool) {
        if !searched_wrapped {
            self.wrapped_flag = false;
        }
        if index == u64::MAX {
            self.wrapped_flag = true;
        }
    }
}
