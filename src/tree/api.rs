//! The std-convention surface of the tree: `len`, `first`/`last`, owned removal, range-bound
//! arguments, gap iteration, `Debug`/`FromIterator`/`Extend`, memory held back by readers.

use core::fmt;
use core::iter::FusedIterator;
use core::ops::{RangeBounds, RangeInclusive};

use super::bounds::inclusive;

use crossbeam_epoch::Guard;

use crate::entry::Entry;
use crate::error::Error;

use super::cursor::{Cursor, CursorMut};
use super::iter::Iter;
use super::node::{Loaded, RootRef};
use super::pending::PendingFrees;
use super::walk::Walker;
use super::write::{AnyWriter, WriteGuard};
use super::MapleTree;

impl<E: Entry> MapleTree<E> {
    /// The number of ranges stored, in `O(1)`: the writer keeps the count. Ranges holding the
    /// reserved zero entry ([`WriteGuard::store_zero_range`]) count, although iteration skips
    /// them; otherwise this is `iter(&guard).count()` whenever no write runs.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store_range(3..=4, Value::new(2))?; // splits [0, 9] in three
    /// assert_eq!(tree.len(), 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.len.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the tree holds nothing: no entry and no zero entry (`len() == 0`).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// assert!(tree.is_empty());
    /// tree.store_range(0..=9, Value::new(1))?;
    /// assert!(!tree.is_empty());
    /// tree.erase(5);
    /// assert!(tree.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lowest range holding an entry, with its entry.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(20..=29, Value::new(2))?;
    /// tree.store_range(10..=19, Value::new(1))?;
    /// let guard = tree.pin();
    /// assert_eq!(tree.first(&guard), Some((10..=19, Value::new(1))));
    /// assert_eq!(tree.last(&guard), Some((20..=29, Value::new(2))));
    /// # Ok(())
    /// # }
    /// ```
    pub fn first<'g>(&'g self, guard: &'g Guard) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        self.iter(guard).next()
    }

    /// The highest range holding an entry, with its entry (see [`first`](Self::first)).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// let tree: MapleTree<Value> = [(0..=9, Value::new(1)), (20..=29, Value::new(2))]
    ///     .into_iter()
    ///     .collect();
    /// let guard = tree.pin();
    /// assert_eq!(tree.last(&guard), Some((20..=29, Value::new(2))));
    /// ```
    pub fn last<'g>(&'g self, guard: &'g Guard) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        self.iter(guard).next_back()
    }

    /// Iterates over the empty ranges (holding nothing; the reserved zero entry counts as
    /// occupied, as for gap search) that intersect `r`, clipped to `r`; double-ended.
    ///
    /// Under a concurrent writer each yielded gap was empty at some moment of the iteration,
    /// gaps come out strictly increasing (or decreasing from the back) and no index is yielded
    /// twice.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] for an empty or inverted range (`5..5`, `9..=3`; see
    /// [`inclusive`]); [`range`](Self::range), by contrast, yields nothing for one. Neither
    /// panics.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// let gaps: Vec<_> = tree.gaps(5..=50, &guard)?.collect();
    /// assert_eq!(gaps, [5..=9, 20..=29, 40..=50]);
    /// let last = tree.gaps(.., &guard)?.next_back();
    /// assert_eq!(last, Some(40..=u64::MAX));
    /// # Ok(())
    /// # }
    /// ```
    pub fn gaps<'g>(
        &'g self,
        r: impl RangeBounds<u64>,
        guard: &'g Guard,
    ) -> Result<Gaps<'g>, Error> {
        let root = self.reader(guard);
        let (first, last) = inclusive(r)?;
        Ok(Gaps::new(root.unbranded(), first, last))
    }

    /// Memory retired by RCU-mode writes and not freed yet: nodes replaced and entries released
    /// while some guard pinned before the write may still read them. A long-pinned guard holds
    /// everything retired after it back; once it is dropped the counts fall as the epoch
    /// collector runs the deferred frees (in batches, on threads that pin, and on RCU-mode
    /// writers once they have deferred 64 frees; [`Guard::flush`] hurries it).
    ///
    /// RCU-mode writers hand retired nodes to the collector 32 at a time (8 KiB, one deferred
    /// free for the batch), so a tree written through the lock keeps up to 31 retired nodes
    /// queued between writes; they count here. This call hands such a partial batch on (unless
    /// a writer holds the lock then), so that the counts fall to zero once the guards are gone;
    /// an exclusive-mode write (`&mut`) frees the queue at once, and so does the tree's drop.
    ///
    /// [`reclaim`](Self::reclaim) frees what no guard holds back at a point of your choosing.
    /// Freed memory goes back to the allocator, not necessarily to the system: glibc's `malloc`
    /// may keep freed pages in the process (resident) until they are reused or `malloc_trim(0)`
    /// is called, so RSS can stay high after these counts fall to zero.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Box<u64>>::new();
    /// let reader = tree.pin(); // a reader that stays pinned
    /// for i in 0..100 {
    ///     tree.store_range(0..=9, Box::new(i))?; // each store releases the previous box
    /// }
    /// assert!(tree.pending_frees().entries >= 99);
    /// drop(reader);
    /// # Ok(())
    /// # }
    /// ```
    pub fn pending_frees(&self) -> PendingFrees {
        // Hand a partial batch of retired nodes on, unless a writer holds the lock (that
        // writer, or a later one, will).
        if let Some(mut l) = self.root.try_lock() {
            let cell = core::cell::OnceCell::new();
            super::write::flush_retired(&mut l, &cell, &self.pending);
        }
        self.pending.snapshot(E::HEAP_SIZE)
    }
}

impl<E: Entry> MapleTree<E> {
    /// Removes the range containing `index` if it holds an entry, and returns the range and the
    /// owned entry (`&mut self`: no reader can still borrow it).
    ///
    /// An entry whose range a store split in two (a store strictly inside it keeps the same
    /// entry on both sides) is one entry held by several ranges: `remove` then takes it out of
    /// every range holding it and returns the range containing `index`. An entry type without
    /// drop glue (such as [`Value`](crate::Value)) is a plain copy in each range instead: only
    /// the range containing `index` is removed.
    ///
    /// ```
    /// use maple_tree::MapleTree;
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let mut tree = MapleTree::<Box<String>>::new();
    /// tree.store_range(10..=19, Box::new("a".to_string()))?;
    /// let (range, entry) = tree.remove(15).ok_or(maple_tree::Error::NoRoom)?;
    /// assert_eq!((range, *entry), (10..=19, "a".to_string()));
    /// assert_eq!(tree.remove(15), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn remove(&mut self, index: u64) -> Option<(RangeInclusive<u64>, E)> {
        self.exclusive().take(index)
    }

    /// Removes the lowest range holding an entry and returns it with the owned entry (see
    /// [`remove`](Self::remove)).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let mut tree: MapleTree<Value> = [(0..=9, Value::new(1)), (20..=29, Value::new(2))]
    ///     .into_iter()
    ///     .collect();
    /// assert_eq!(tree.pop_first(), Some((0..=9, Value::new(1))));
    /// assert_eq!(tree.pop_last(), Some((20..=29, Value::new(2))));
    /// assert_eq!(tree.pop_first(), None);
    /// assert!(tree.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn pop_first(&mut self) -> Option<(RangeInclusive<u64>, E)> {
        let mut w = self.exclusive();
        let at = w.iter().next_raw().map(|(a, _, _)| a)?;
        w.take(at)
    }

    /// Removes the highest range holding an entry and returns it with the owned entry.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// let mut tree: MapleTree<Value> = [(0..=9, Value::new(1)), (20..=29, Value::new(2))]
    ///     .into_iter()
    ///     .collect();
    /// assert_eq!(tree.pop_last(), Some((20..=29, Value::new(2))));
    /// assert_eq!(tree.pop_last(), Some((0..=9, Value::new(1))));
    /// assert_eq!(tree.pop_last(), None);
    /// ```
    pub fn pop_last(&mut self) -> Option<(RangeInclusive<u64>, E)> {
        let mut w = self.exclusive();
        let at = w.iter().next_back_raw().map(|(a, _, _)| a)?;
        w.take(at)
    }

    /// Stores every `(range, entry)` in order, with [`store_range`](WriteGuard::store_range)
    /// semantics, stopping at the first error (the items before it stay stored; the failing
    /// item's entry is dropped).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] for an empty or inverted range, [`Error::Reserved`] for an
    /// entry whose word is reserved.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let mut tree = MapleTree::<Value>::new();
    /// assert_eq!(tree.try_extend([(0..=9, Value::new(1))]), Ok(()));
    /// #[allow(clippy::reversed_empty_ranges)]
    /// let bad = [(20..=29, Value::new(2)), (9..=5, Value::new(3))];
    /// assert_eq!(tree.try_extend(bad), Err(Error::InvalidRange));
    /// assert_eq!(tree.len(), 2);
    /// ```
    pub fn try_extend<I>(&mut self, iter: I) -> Result<(), Error>
    where
        I: IntoIterator<Item = (RangeInclusive<u64>, E)>,
    {
        let mut w = self.exclusive();
        for (r, e) in iter {
            if r.is_empty() {
                return Err(Error::InvalidRange);
            }
            let (a, b) = r.into_inner();
            w.store_range(a..=b, e)?;
        }
        Ok(())
    }
}

impl<E: Entry> WriteGuard<'_, E> {
    /// The range holding an entry (not the zero entry) that contains `index`.
    pub(crate) fn walker_range(&self, index: u64) -> Option<(u64, u64)> {
        let mut wk = Walker::new(self.view());
        wk.walk(index)?;
        wk.word.is_entry().then_some((wk.lo, wk.hi))
    }
}

impl<E: Entry> WriteGuard<'_, E> {
    /// The exclusive writer's `take` (in `write::take`) through a guard of [`MapleTree::exclusive`].
    fn take(&mut self, index: u64) -> Option<(RangeInclusive<u64>, E)> {
        match self.any_writer() {
            AnyWriter::Exclusive(mut w) => w.take(index),
            AnyWriter::Rcu(_) => unreachable!("`MapleTree::exclusive` makes exclusive guards"),
        }
    }
}

/// Iterator over the empty ranges of a tree inside a window (see [`MapleTree::gaps`]).
pub struct Gaps<'g> {
    front: Walker<'g>,
    back: Walker<'g>,
    front_started: bool,
    back_started: bool,
    /// Next index the front may yield from (inclusive).
    front_pos: u64,
    /// Last index the back may yield up to (inclusive).
    back_pos: u64,
    done: bool,
}

impl<'g> Gaps<'g> {
    fn new(root: RootRef<'g>, first: u64, last: u64) -> Self {
        Gaps {
            front: Walker::new(root),
            back: Walker::new(root),
            front_started: false,
            back_started: false,
            front_pos: first,
            back_pos: last,
            done: first > last,
        }
    }

    /// The window left: everything (the tree was empty when walked).
    fn whole(&mut self) -> Option<RangeInclusive<u64>> {
        self.done = true;
        Some(self.front_pos..=self.back_pos)
    }
}

impl Iterator for Gaps<'_> {
    type Item = RangeInclusive<u64>;

    fn next(&mut self) -> Option<RangeInclusive<u64>> {
        if self.done {
            return None;
        }
        if !self.front_started {
            self.front_started = true;
            if self.front.walk(self.front_pos).is_none() {
                return self.whole();
            }
        } else if self.front.next_slot().is_none() {
            self.done = true;
            return None;
        }
        // Skip occupied slots and, after a walker restart, ranges already passed.
        while self.front.word != Loaded::NONE || self.front.hi < self.front_pos {
            if self.front.next_slot().is_none() {
                self.done = true;
                return None;
            }
        }
        if self.front.lo > self.back_pos {
            self.done = true;
            return None;
        }
        let lo = self.front.lo.max(self.front_pos);
        let hi = self.front.hi.min(self.back_pos);
        if hi == self.back_pos {
            self.done = true;
        } else {
            self.front_pos = hi + 1;
        }
        Some(lo..=hi)
    }
}

impl DoubleEndedIterator for Gaps<'_> {
    fn next_back(&mut self) -> Option<RangeInclusive<u64>> {
        if self.done {
            return None;
        }
        if !self.back_started {
            self.back_started = true;
            if self.back.walk(self.back_pos).is_none() {
                return self.whole();
            }
        } else if self.back.prev_slot().is_none() {
            self.done = true;
            return None;
        }
        while self.back.word != Loaded::NONE || self.back.lo > self.back_pos {
            if self.back.prev_slot().is_none() {
                self.done = true;
                return None;
            }
        }
        if self.back.hi < self.front_pos {
            self.done = true;
            return None;
        }
        let lo = self.back.lo.max(self.front_pos);
        let hi = self.back.hi.min(self.back_pos);
        if lo == self.front_pos {
            self.done = true;
        } else {
            self.back_pos = lo - 1;
        }
        Some(lo..=hi)
    }
}

impl FusedIterator for Gaps<'_> {}

impl fmt::Debug for Gaps<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gaps")
            .field("front", &self.front_pos)
            .field("back", &self.back_pos)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<'g, E: Entry + 'g> FusedIterator for Iter<'g, E> {}

impl<E: Entry> fmt::Debug for Iter<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (front, back, done) = self.positions();
        f.debug_struct("Iter")
            .field("front", &front)
            .field("back", &back)
            .field("done", &done)
            .finish_non_exhaustive()
    }
}

impl<'g, E: Entry + 'g> fmt::Debug for Cursor<'g, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cursor")
            .field("index", &self.index())
            .field("last", &self.last())
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl<'t, E: Entry + 't> fmt::Debug for CursorMut<'_, 't, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CursorMut")
            .field("index", &self.index())
            .field("last", &self.last())
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl<E: Entry> fmt::Debug for WriteGuard<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteGuard")
            .field("exclusive", &self.is_exclusive())
            .field("alloc", &self.is_alloc())
            .field("len", &self.len())
            .field("height", &self.height())
            .finish_non_exhaustive()
    }
}

/// Lists the ranges holding an entry and their entries, like `BTreeMap`'s `Debug`:
/// `{10..=19: Value(1), 30..=39: Value(3)}`. Pins a guard while it formats.
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Value>::new();
/// tree.store_range(10..=19, Value::new(1))?;
/// assert_eq!(format!("{tree:?}"), "{10..=19: Value(1)}");
/// # Ok(())
/// # }
/// ```
impl<E: Entry> fmt::Debug for MapleTree<E>
where
    for<'a> E::Borrowed<'a>: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let guard = self.pin();
        f.debug_map().entries(self.iter(&guard)).finish()
    }
}

/// Builds a tree by storing each `(range, entry)` in order ([`store_range`](MapleTree::store_range)
/// semantics: later items overwrite and trim earlier ones).
///
/// # Panics
///
/// On an empty or inverted range (`5..=4`), or an entry whose word is reserved; use
/// [`MapleTree::try_extend`] to get an [`Error`] instead.
impl<E: Entry> FromIterator<(RangeInclusive<u64>, E)> for MapleTree<E> {
    fn from_iter<I: IntoIterator<Item = (RangeInclusive<u64>, E)>>(iter: I) -> Self {
        let mut tree = MapleTree::new();
        tree.extend(iter);
        tree
    }
}

/// Stores each `(range, entry)` in order ([`store_range`](MapleTree::store_range) semantics).
///
/// # Panics
///
/// On an empty or inverted range (`5..=4`), or an entry whose word is reserved; use
/// [`MapleTree::try_extend`] to get an [`Error`] instead.
impl<E: Entry> Extend<(RangeInclusive<u64>, E)> for MapleTree<E> {
    fn extend<I: IntoIterator<Item = (RangeInclusive<u64>, E)>>(&mut self, iter: I) {
        if let Err(e) = self.try_extend(iter) {
            panic!("MapleTree::extend: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::inclusive;
    use crate::Error;
    use core::ops::Bound::{self, Excluded, Included, Unbounded};

    fn conv(a: Bound<u64>, b: Bound<u64>) -> Result<(u64, u64), Error> {
        inclusive((a, b))
    }

    #[test]
    fn every_bound_kind() {
        // The nine start/end combinations on an ordinary window.
        assert_eq!(conv(Included(3), Included(7)), Ok((3, 7)));
        assert_eq!(conv(Included(3), Excluded(7)), Ok((3, 6)));
        assert_eq!(conv(Included(3), Unbounded), Ok((3, u64::MAX)));
        assert_eq!(conv(Excluded(3), Included(7)), Ok((4, 7)));
        assert_eq!(conv(Excluded(3), Excluded(7)), Ok((4, 6)));
        assert_eq!(conv(Excluded(3), Unbounded), Ok((4, u64::MAX)));
        assert_eq!(conv(Unbounded, Included(7)), Ok((0, 7)));
        assert_eq!(conv(Unbounded, Excluded(7)), Ok((0, 6)));
        assert_eq!(conv(Unbounded, Unbounded), Ok((0, u64::MAX)));
        // The std range types.
        assert_eq!(inclusive(3..=7), Ok((3, 7)));
        assert_eq!(inclusive(3..7), Ok((3, 6)));
        assert_eq!(inclusive(..=7), Ok((0, 7)));
        assert_eq!(inclusive(..7), Ok((0, 6)));
        assert_eq!(inclusive(3..), Ok((3, u64::MAX)));
        assert_eq!(inclusive(..), Ok((0, u64::MAX)));
    }

    #[test]
    fn single_index_and_empty() {
        assert_eq!(inclusive(5..=5), Ok((5, 5)));
        assert_eq!(inclusive(5..6), Ok((5, 5)));
        assert_eq!(conv(Excluded(4), Included(5)), Ok((5, 5)));
        assert_eq!(conv(Excluded(4), Excluded(6)), Ok((5, 5)));
        assert_eq!(inclusive(5..5), Err(Error::InvalidRange));
        assert_eq!(inclusive(0..0), Err(Error::InvalidRange));
        assert_eq!(conv(Excluded(5), Excluded(6)), Err(Error::InvalidRange));
        assert_eq!(conv(Excluded(5), Included(5)), Err(Error::InvalidRange));
        #[allow(clippy::reversed_empty_ranges)]
        let inverted = 9..=3;
        assert_eq!(inclusive(inverted), Err(Error::InvalidRange));
        #[allow(clippy::reversed_empty_ranges)]
        let inverted = 9..3;
        assert_eq!(inclusive(inverted), Err(Error::InvalidRange));
    }

    #[test]
    fn overflow_edges() {
        // Excluded(u64::MAX) as a start and Excluded(0) as an end leave nothing, without
        // overflowing.
        assert_eq!(
            conv(Excluded(u64::MAX), Unbounded),
            Err(Error::InvalidRange)
        );
        assert_eq!(
            conv(Excluded(u64::MAX), Included(u64::MAX)),
            Err(Error::InvalidRange)
        );
        assert_eq!(conv(Unbounded, Excluded(0)), Err(Error::InvalidRange));
        assert_eq!(conv(Included(0), Excluded(0)), Err(Error::InvalidRange));
        assert_eq!(inclusive(..0), Err(Error::InvalidRange));
        // The extremes that are not empty.
        assert_eq!(inclusive(u64::MAX..), Ok((u64::MAX, u64::MAX)));
        assert_eq!(inclusive(u64::MAX..=u64::MAX), Ok((u64::MAX, u64::MAX)));
        assert_eq!(inclusive(..=0), Ok((0, 0)));
        assert_eq!(inclusive(0..1), Ok((0, 0)));
        assert_eq!(inclusive(0..u64::MAX), Ok((0, u64::MAX - 1)));
        assert_eq!(inclusive(5..=u64::MAX), Ok((5, u64::MAX)));
        assert_eq!(inclusive(5..u64::MAX), Ok((5, u64::MAX - 1)));
        assert_eq!(
            conv(Excluded(u64::MAX - 1), Unbounded),
            Ok((u64::MAX, u64::MAX))
        );
        assert_eq!(conv(Excluded(0), Excluded(2)), Ok((1, 1)));
        assert_eq!(conv(Unbounded, Excluded(1)), Ok((0, 0)));
    }
}
