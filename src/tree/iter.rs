//! Double-ended iteration over `(first, last, entry)`, lock-free.
//!
//! Each direction keeps its own walker (path), so a step is `O(1)` amortised. Under a concurrent
//! writer, each yielded range existed at some moment of the iteration, ranges come out strictly
//! increasing (or decreasing), and a range unchanged for the whole iteration is never skipped.

use core::marker::PhantomData;

use crate::entry::Entry;

use super::node::{Loaded, NodeRef, RootRef, RANGE_PIVOTS};
use super::walk::Walker;

/// Iterator over the entries of a tree (see [`MapleTree::iter`](crate::MapleTree::iter) and [`MapleTree::range`](crate::MapleTree::range)).
pub struct Iter<'g, E> {
    front: Walker<'g>,
    back: Walker<'g>,
    front_started: bool,
    back_started: bool,
    /// Something was yielded from that end (later ranges must not overlap it).
    front_yielded: bool,
    back_yielded: bool,
    /// Next index the front may yield from (inclusive).
    front_pos: u64,
    /// Last index the back may yield up to (inclusive).
    back_pos: u64,
    done: bool,
    /// The front's leaf, for the in-leaf loop of `next`: while it is `Some`, the front's current
    /// slot is `front_off` of it, covering `[front_lo, front_hi]`, in a leaf whose max is
    /// `front_max`, and the walker's own record of its leaf offset and slot is stale (written
    /// back by `sync_front` before the walker moves). `None`: the walker is authoritative.
    front_leaf: Option<NodeRef<'g>>,
    front_max: u64,
    front_off: usize,
    front_lo: u64,
    front_hi: u64,
    _e: PhantomData<&'g E>,
}

impl<'g, E: Entry> Iter<'g, E> {
    pub(crate) fn new(root: RootRef<'g>, first: u64, last: u64) -> Self {
        Iter {
            front: Walker::new(root),
            back: Walker::new(root),
            front_started: false,
            back_started: false,
            front_yielded: false,
            back_yielded: false,
            front_pos: first,
            back_pos: last,
            done: first > last,
            front_leaf: None,
            front_max: 0,
            front_off: 0,
            front_lo: 0,
            front_hi: 0,
            _e: PhantomData,
        }
    }

    /// The window left to yield from, and whether the iterator has ended (for `Debug`).
    pub(crate) fn positions(&self) -> (u64, u64, bool) {
        (self.front_pos, self.back_pos, self.done)
    }
}

impl<'g, E: Entry + 'g> Iter<'g, E> {
    /// Yields the entry `w` of the fast path's slot `front_off`, `[lo, hi]`.
    #[inline(always)]
    fn yield_front(
        &mut self,
        lo: u64,
        hi: u64,
        w: Loaded<'g>,
    ) -> Option<(u64, u64, E::Borrowed<'g>)> {
        self.front_lo = lo;
        self.front_hi = hi;
        if hi >= self.back_pos {
            // The last range the front may yield (`lo > back_pos` implies `hi > back_pos`).
            self.done = true;
            if lo > self.back_pos {
                return None;
            }
        } else {
            self.front_pos = hi + 1;
        }
        debug_assert!(w.is_entry());
        // Read under the guard of 'g that created this iterator; an entry (checked by the
        // caller).
        Some((lo, hi, w.entry::<E>()?))
    }

    /// The front's fast path at the last slot of its leaf (`front_off`, `[front_lo, front_hi]`):
    /// across to the parent's next child (`Walker::next_sibling_leaf`, the checks of
    /// `next_leaf`) and on through that leaf, or through [`next_slow`](Self::next_slow).
    #[inline(never)]
    fn next_cross(&mut self) -> Option<(u64, u64, E::Borrowed<'g>)> {
        loop {
            let hi = self.front_hi;
            if hi == u64::MAX {
                self.done = true;
                return None;
            }
            let Some((n, max)) = self.front.enter_next_sibling_leaf(hi) else {
                break;
            };
            self.front_leaf = Some(n);
            self.front_max = max;
            let (mut i, mut lo) = (0, hi + 1);
            loop {
                let hi = if i < RANGE_PIVOTS {
                    let p = n.range_pivot(i);
                    if p < max {
                        p
                    } else {
                        max
                    }
                } else {
                    max
                };
                let w = n.range_word(i);
                if w.is_entry() {
                    self.front_off = i;
                    return self.yield_front(lo, hi, w);
                }
                if hi >= max {
                    self.front_off = i;
                    self.front_lo = lo;
                    self.front_hi = hi;
                    break;
                }
                i += 1;
                lo = hi + 1;
            }
        }
        let (lo, hi, w) = self.next_slow()?;
        // Read under the guard of 'g that created this iterator.
        let b = w.entry::<E>()?;
        Some((lo, hi, b))
    }

    /// The front's step through the walker (first step, leaf crossings, restarts): moves to the
    /// next entry, applies the overlap and end checks, and caches the leaf for the fast path.
    #[inline(never)]
    fn next_slow(&mut self) -> Option<(u64, u64, Loaded<'g>)> {
        let step = if self.front_started {
            if let Some(n) = self.front_leaf.take() {
                // Hand the position the fast path reached back to the walker.
                let w = n.range_word(self.front_off);
                self.front
                    .set_leaf_slot(self.front_off, self.front_lo, self.front_hi, w);
            }
            self.front.next_entry()
        } else {
            self.front_started = true;
            self.front.walk(self.front_pos).and_then(|()| {
                let w = self.front.word;
                if w.is_entry() {
                    Some(())
                } else {
                    self.front.next_entry()
                }
            })
        };
        if step.is_none() {
            self.done = true;
            return None;
        }
        // A walker that restarted from the root (it met a replaced node) lands on the range
        // containing its next index, which may have been created since and start before it:
        // skip such a range rather than yield an overlap.
        while self.front_yielded && self.front.lo < self.front_pos {
            if self.front.next_entry().is_none() {
                self.done = true;
                return None;
            }
        }
        if self.front.lo > self.back_pos {
            self.done = true;
            return None;
        }
        self.front_yielded = true;
        let (lo, hi) = (self.front.lo, self.front.hi);
        if hi >= self.back_pos {
            self.done = true;
        } else {
            self.front_pos = hi + 1;
            let leaf = self.front.leaf();
            self.front_leaf = Some(leaf.node);
            self.front_max = leaf.max;
            self.front_off = leaf.offset;
            self.front_lo = lo;
            self.front_hi = hi;
        }
        Some((lo, hi, self.front.word))
    }
}

impl<'g, E: Entry + 'g> Iterator for Iter<'g, E> {
    type Item = (u64, u64, E::Borrowed<'g>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        // Fast path: the next entry in the same leaf, as `Walker::next_entry` finds it (each
        // slot's bound is its pivot, read once, clamped to the leaf's max), without touching the
        // walker. No overlap check is needed: `lo` follows the last yielded range.
        if let Some(n) = self.front_leaf {
            let max = self.front_max;
            let (mut i, mut lo, mut hi) = (self.front_off, 0, self.front_hi);
            while hi < max {
                i += 1;
                lo = hi + 1;
                hi = if i < RANGE_PIVOTS {
                    let p = n.range_pivot(i);
                    if p < max {
                        p
                    } else {
                        max
                    }
                } else {
                    max
                };
                let w = n.range_word(i);
                if w.is_entry() {
                    self.front_off = i;
                    return self.yield_front(lo, hi, w);
                }
            }
            if i != self.front_off {
                self.front_off = i;
                self.front_lo = lo;
                self.front_hi = hi;
            }
            return self.next_cross();
        }
        let (lo, hi, w) = self.next_slow()?;
        // Read under the guard of 'g that created this iterator.
        let b = w.entry::<E>()?;
        Some((lo, hi, b))
    }
}

impl<'g, E: Entry + 'g> DoubleEndedIterator for Iter<'g, E> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = if self.back_started {
            self.back.prev_slot()
        } else {
            self.back_started = true;
            self.back.walk(self.back_pos)
        };
        if step.is_none() {
            self.done = true;
            return None;
        }
        loop {
            if self.back.hi < self.front_pos {
                self.done = true;
                return None;
            }
            // As in `next`: after a restart, skip a range that reaches past what was yielded.
            if self.back.lo <= self.back_pos
                && (!self.back_yielded || self.back.hi <= self.back_pos)
            {
                if let Some(b) = self.back.word.entry::<E>() {
                    let (lo, hi) = (self.back.lo, self.back.hi);
                    self.back_yielded = true;
                    if lo <= self.front_pos || lo == 0 {
                        self.done = true;
                    } else {
                        self.back_pos = lo - 1;
                    }
                    return Some((lo, hi, b));
                }
            }
            if self.back.prev_slot().is_none() {
                self.done = true;
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::{MapleTree, Value};

    /// Irregular ranges and gaps over several levels (both tree kinds), then every way of
    /// walking them: forward, backward, alternating ends, and bounded ranges, against a model.
    #[test]
    fn fast_path_matches_model() {
        for alloc in [false, true] {
            let tree = if alloc {
                MapleTree::<Value>::new_alloc()
            } else {
                MapleTree::<Value>::new()
            };
            let mut model = BTreeMap::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut at = 0u64;
            for i in 0..3000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let len = x % 7;
                let gap = (x >> 8) % 4;
                tree.store_range(at..=at + len, Value::new(i)).unwrap();
                model.insert(at, (at + len, i));
                at += len + 1 + gap;
            }
            let all: Vec<_> = model.iter().map(|(&a, &(b, v))| (a, b, v)).collect();
            let g = tree.pin();
            let got: Vec<_> = tree.iter(&g).map(|(a, b, v)| (a, b, v.get())).collect();
            assert_eq!(got, all);
            let mut back: Vec<_> = tree
                .iter(&g)
                .rev()
                .map(|(a, b, v)| (a, b, v.get()))
                .collect();
            back.reverse();
            assert_eq!(back, all);
            // Alternating ends meet in the middle without overlap or loss.
            let mut it = tree.iter(&g);
            let (mut front, mut rear) = (Vec::new(), Vec::new());
            for k in 0.. {
                let step = if k % 3 == 2 {
                    it.next_back()
                } else {
                    it.next()
                };
                let Some((a, b, v)) = step else { break };
                if k % 3 == 2 {
                    rear.push((a, b, v.get()));
                } else {
                    front.push((a, b, v.get()));
                }
            }
            rear.reverse();
            front.extend(rear);
            assert_eq!(front, all);
            // Bounded ranges, edges inside entries and inside gaps.
            for (first, last) in [(0, 0), (5, 97), (1234, 1234), (100, 9000), (7000, u64::MAX)] {
                let want: Vec<_> = all
                    .iter()
                    .copied()
                    .filter(|&(a, b, _)| b >= first && a <= last)
                    .collect();
                let got: Vec<_> = tree
                    .range(first..=last, &g)
                    .map(|(a, b, v)| (a, b, v.get()))
                    .collect();
                assert_eq!(got, want, "range {first}..={last}");
            }
        }
    }
}
