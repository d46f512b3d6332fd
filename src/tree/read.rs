//! The tree's reads under an explicit guard and the pin-for-you reads: `load`, `load_range`,
//! `find`, `next`/`prev`, iteration, cursors, `get`, `with`, `contains`, `count`.

use core::ops::{RangeBounds, RangeInclusive};

use crossbeam_epoch::Guard;

use crate::entry::Entry;

use super::cursor::Cursor;
use super::iter::Iter;
use super::MapleTree;

impl<E: Entry> MapleTree<E> {
    // ----- explicit-guard reads ----------------------------------------------------------------

    /// The entry at `index` (`mtree_load`). The zero entry reads as `None`.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::MapleTree;
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Box<String>>::new();
    /// tree.store_range(10..=19, Box::new("ten".to_string()))?;
    /// let guard = tree.pin();
    /// let s: &String = tree.load(15, &guard).unwrap(); // borrowed for as long as `guard` lives
    /// assert_eq!(s, "ten");
    /// assert_eq!(tree.load(20, &guard), None);
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn load<'g>(&'g self, index: u64, guard: &'g Guard) -> Option<E::Borrowed<'g>> {
        // Read under `guard`, which keeps the entry alive for 'g (entries are released through
        // the same collector).
        super::walk::load_word(self.reader(guard), index).entry()
    }

    /// The range containing `index` and its entry, if any (`mas_walk`, restricted to entries).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// let guard = tree.pin();
    /// assert_eq!(tree.load_range(15, &guard), Some((10..=19, Value::new(1))));
    /// assert_eq!(tree.load_range(20, &guard), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn load_range<'g>(
        &'g self,
        index: u64,
        guard: &'g Guard,
    ) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        let (lo, hi, w) = super::walk::walk_range(self.reader(guard), index)?;
        w.entry().map(|b| (lo..=hi, b))
    }

    /// `mt_find`: the first entry whose range contains `*index` or starts in `(*index, max]`;
    /// on success `*index` becomes the found range's `last + 1` (wrapping to 0). `None` leaves
    /// `*index` alone. Zero entries are skipped.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// let mut index = 0;
    /// let mut found = vec![];
    /// while let Some(v) = tree.find(&mut index, u64::MAX, &guard) {
    ///     found.push(v.get());
    /// }
    /// assert_eq!(found, [1, 3]);
    /// assert_eq!(index, 40); // one past the last range found
    /// # Ok(())
    /// # }
    /// ```
    pub fn find<'g>(
        &'g self,
        index: &mut u64,
        max: u64,
        guard: &'g Guard,
    ) -> Option<E::Borrowed<'g>> {
        let root = self.reader(guard);
        if *index > max {
            return None;
        }
        let mut w = super::walk::Walker::new(root);
        w.walk(*index)?;
        loop {
            if w.lo > max {
                return None;
            }
            if let Some(b) = w.word.entry() {
                *index = w.hi.wrapping_add(1);
                return Some(b);
            }
            w.next_slot()?;
        }
    }

    /// `mt_find_after`: like [`find`](Self::find) but `None` at once when `*index == 0` (which
    /// is how a wrapped index ends a `find` loop).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=u64::MAX, Value::new(1))?;
    /// let guard = tree.pin();
    /// let mut index = 0;
    /// assert_eq!(tree.find(&mut index, u64::MAX, &guard), Some(Value::new(1)));
    /// assert_eq!(index, 0); // wrapped past u64::MAX: `find` would start over
    /// assert_eq!(tree.find_after(&mut index, u64::MAX, &guard), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn find_after<'g>(
        &'g self,
        index: &mut u64,
        max: u64,
        guard: &'g Guard,
    ) -> Option<E::Borrowed<'g>> {
        if *index == 0 {
            return None;
        }
        self.find(index, max, guard)
    }

    /// `mt_next`: the first entry after the range containing `index` that starts at or below
    /// `max`, with its range. Beside a writer too, the range returned starts after `index`.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// assert_eq!(tree.next(12, u64::MAX, &guard), Some((30..=39, Value::new(3))));
    /// assert_eq!(tree.next(12, 29, &guard), None); // [30, 39] starts above `max`
    /// # Ok(())
    /// # }
    /// ```
    pub fn next<'g>(
        &'g self,
        index: u64,
        max: u64,
        guard: &'g Guard,
    ) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        let mut w = super::walk::Walker::new(self.reader(guard));
        w.walk(index)?;
        loop {
            w.next_slot()?;
            if w.lo > max {
                return None;
            }
            // Past a replaced node the walker re-walks from the root to the range holding
            // its old end + 1, which may now reach back over `index`: never returned.
            if w.lo <= index && super::walk::check_rewalk() {
                continue;
            }
            if let Some(b) = w.word.entry() {
                return Some((w.lo..=w.hi, b));
            }
        }
    }

    /// `mt_prev`: the last entry before the range containing `index` that ends at or above
    /// `min`, with its range. Beside a writer too, the range returned ends before `index`.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// assert_eq!(tree.prev(35, 0, &guard), Some((10..=19, Value::new(1))));
    /// assert_eq!(tree.prev(35, 20, &guard), None); // [10, 19] ends below `min`
    /// # Ok(())
    /// # }
    /// ```
    pub fn prev<'g>(
        &'g self,
        index: u64,
        min: u64,
        guard: &'g Guard,
    ) -> Option<(RangeInclusive<u64>, E::Borrowed<'g>)> {
        let mut w = super::walk::Walker::new(self.reader(guard));
        w.walk(index)?;
        loop {
            w.prev_slot()?;
            if w.hi < min {
                return None;
            }
            // As in `next`: a re-walk's range reaching forward over `index` is never returned.
            if w.hi >= index && super::walk::check_rewalk() {
                continue;
            }
            if let Some(b) = w.word.entry() {
                return Some((w.lo..=w.hi, b));
            }
        }
    }

    /// Iterates over every `(range, entry)` in index order; double-ended. Zero entries
    /// are skipped. Beside a writer, the front yields strictly increasing ranges and the back
    /// strictly decreasing ones, each a range of some state during the iteration; one iterator
    /// driven from both ends never yields an index twice (each end stops at what the other has
    /// yielded), and a range unchanged for the whole iteration is never skipped.
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
    /// let all: Vec<_> = tree.iter(&guard).collect();
    /// assert_eq!(all, [(0..=9, Value::new(1)), (20..=29, Value::new(2))]);
    /// assert_eq!(tree.iter(&guard).next_back(), Some((20..=29, Value::new(2))));
    /// ```
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Iter<'g, E> {
        Iter::new(self.reader(guard), 0, u64::MAX)
    }

    /// Iterates over the entries whose ranges intersect `r`, any range of `u64` (`a..=b`, `a..b`,
    /// `..=b`, `a..`, `..`). Ranges are reported whole, so the first may start before `r` and the
    /// last end after it.
    ///
    /// An empty or inverted `r` (`5..5`, `..0`, `9..=3`) yields nothing: unlike
    /// [`BTreeMap::range`](alloc::collections::BTreeMap::range) this does not panic. To tell such
    /// a range apart from an empty window, convert it first with
    /// [`inclusive`](crate::tree::inclusive), which returns
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for it.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..40, Value::new(3))?;
    /// let guard = tree.pin();
    /// let found: Vec<u64> = tree.range(..25, &guard).map(|(r, _)| *r.start()).collect();
    /// assert_eq!(found, [10]);
    /// assert_eq!(tree.range(35.., &guard).count(), 1);
    /// assert_eq!(tree.range(15..15, &guard).count(), 0); // empty: no panic
    /// # Ok(())
    /// # }
    /// ```
    pub fn range<'g>(&'g self, r: impl RangeBounds<u64>, guard: &'g Guard) -> Iter<'g, E> {
        let reader = self.reader(guard);
        match super::bounds::inclusive(r) {
            Ok((first, last)) => Iter::new(reader, first, last),
            // `first > last`: an iterator that has ended.
            Err(_) => Iter::new(reader, 1, 0),
        }
    }

    /// A read cursor (`ma_state`) at `index`, in status [`Status::Start`](crate::Status::Start).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector (take it from [`MapleTree::pin`]).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Status, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let guard = tree.pin();
    /// let mut c = tree.cursor(0, &guard);
    /// assert_eq!(c.status(), Status::Start);
    /// assert_eq!(c.find(u64::MAX), Some(Value::new(1)));
    /// assert_eq!(c.range(), 10..=19);
    /// assert_eq!(c.next(u64::MAX), Some(Value::new(3)));
    /// assert_eq!(c.range(), 30..=39);
    /// # Ok(())
    /// # }
    /// ```
    pub fn cursor<'g>(&'g self, index: u64, guard: &'g Guard) -> Cursor<'g, E> {
        Cursor::new(self.reader(guard), index)
    }

    // ----- pin-for-you façade ---------------------------------------------------------------------

    /// A clone of the entry at `index` (pins internally). For `Arc` entries this bumps a count;
    /// for [`Value`](crate::Value) it copies.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// assert_eq!(tree.get(19), Some(Value::new(1)));
    /// assert_eq!(tree.get(20), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get(&self, index: u64) -> Option<E>
    where
        E: Clone,
    {
        let guard = self.pin();
        super::walk::load_word(self.reader(&guard), index).cloned()
    }

    /// Calls `f` with the entry at `index` (pins internally).
    ///
    /// ```
    /// use maple_tree::MapleTree;
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let names = MapleTree::<Box<String>>::new();
    /// names.store_range(0..=9, Box::new("zero to nine".to_string()))?;
    /// assert_eq!(names.with(5, |s| s.map(|s| s.len())), Some(12));
    /// assert!(names.with(10, |s| s.is_none()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with<R>(&self, index: u64, f: impl FnOnce(Option<E::Borrowed<'_>>) -> R) -> R {
        let guard = self.pin();
        f(self.load(index, &guard))
    }

    /// Whether `index` holds an entry (the zero entry counts as absent, as for `load`).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..=19, Value::new(1))?;
    /// tree.lock().store_zero_range(20..=29)?;
    /// assert!(tree.contains(10) && tree.contains(19));
    /// assert!(!tree.contains(25)); // the zero entry
    /// assert!(!tree.contains(30));
    /// # Ok(())
    /// # }
    /// ```
    pub fn contains(&self, index: u64) -> bool {
        let guard = self.pin();
        super::walk::load_word(self.reader(&guard), index).is_entry()
    }

    /// Number of entries (ranges holding an entry; zero entries not counted). `O(n)`.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store_range(3..=4, Value::new(2))?; // splits [0, 9] in three
    /// tree.lock().store_zero_range(20..=29)?;
    /// assert_eq!(tree.count(), 3);
    /// assert_eq!(tree.len(), 4); // `len` counts the zero entry too
    /// # Ok(())
    /// # }
    /// ```
    pub fn count(&self) -> usize {
        let guard = self.pin();
        self.iter(&guard).count()
    }
}
