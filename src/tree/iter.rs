//! Double-ended iteration over `(first, last, entry)`, lock-free.
//!
//! Each direction keeps its own walker (path), so a step is `O(1)` amortised. Under a concurrent
//! writer, each yielded range existed at some moment of the iteration, ranges come out strictly
//! increasing (or decreasing), and a range unchanged for the whole iteration is never skipped.

use core::marker::PhantomData;

use crate::entry::{Entry, ZERO_WORD};

use super::node::{Kind, Root};
use super::walk::Walker;
use super::{borrow_word, MapleTree};

/// Iterator over the entries of a tree (see [`MapleTree::iter`] and [`MapleTree::range`]).
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
    _e: PhantomData<&'g E>,
}

impl<'g, E: Entry> Iter<'g, E> {
    pub(crate) fn new(tree: &'g MapleTree<E>, first: u64, last: u64) -> Self {
        Self::from_parts(&tree.root, tree.internal, first, last)
    }

    pub(crate) fn from_parts(root: &'g Root, internal: Kind, first: u64, last: u64) -> Self {
        Iter {
            front: Walker::from_parts(root, internal),
            back: Walker::from_parts(root, internal),
            front_started: false,
            back_started: false,
            front_yielded: false,
            back_yielded: false,
            front_pos: first,
            back_pos: last,
            done: first > last,
            _e: PhantomData,
        }
    }

    /// The window left to yield from, and whether the iterator has ended (for `Debug`).
    pub(crate) fn positions(&self) -> (u64, u64, bool) {
        (self.front_pos, self.back_pos, self.done)
    }
}

impl<'g, E: Entry + 'g> Iterator for Iter<'g, E> {
    type Item = (u64, u64, E::Borrowed<'g>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = if self.front_started {
            self.front.next_entry()
        } else {
            self.front_started = true;
            self.front.walk(self.front_pos).and_then(|()| {
                let w = self.front.word;
                if w != 0 && w != ZERO_WORD {
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
        if hi >= self.back_pos || hi == u64::MAX {
            self.done = true;
        } else {
            self.front_pos = hi + 1;
        }
        // SAFETY: the word was read under the guard of 'g that created this iterator, and it is
        // an entry (next_entry skips empty and zero slots).
        let b = unsafe { borrow_word::<E>(self.front.word) }?;
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
                // SAFETY: as in `next`.
                if let Some(b) = unsafe { borrow_word::<E>(self.back.word) } {
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
