//! The std-collection conveniences: `get_range`, `Clone`, an owned `IntoIterator`, `retain`,
//! `drain`, `split_off`, `IntoIterator for &WriteGuard`, and `reclaim`.
//!
//! Everything that removes entries runs in exclusive mode (`&mut self`), where entries are
//! handed back at once, through the exclusive writer's removals in `write::take`.

use alloc::vec::Vec;
use core::fmt;
use core::iter::FusedIterator;
use core::ops::{RangeBounds, RangeInclusive};

use crate::entry::Entry;
use crate::error::Error;

use super::bounds::inclusive;
use super::iter::Iter;
use super::node::Exclusive;
use super::pending::PendingFrees;
use super::write::{AnyWriter, WriteGuard, Writer};
use super::{walk, MapleTree, Options};

/// Rounds of [`MapleTree::reclaim`] in a row that may free nothing before it gives up.
const RECLAIM_IDLE_ROUNDS: usize = 64;

impl<E: Entry> WriteGuard<'_, E> {
    /// The exclusive writer of a guard from [`MapleTree::exclusive`].
    fn exclusive_writer(&mut self) -> Writer<'_, E, Exclusive> {
        match self.any_writer() {
            AnyWriter::Exclusive(w) => w,
            AnyWriter::Rcu(_) => unreachable!("`MapleTree::exclusive` makes exclusive guards"),
        }
    }

    /// An empty tree with this tree's options and settings: the same kind (allocation or
    /// range tree), huge-page setting, collector (when not the default one, as `dup` does),
    /// append and leaf-split settings.
    fn empty_like(&self) -> MapleTree<E> {
        let mut opts = Options::new()
            .alloc(self.is_alloc())
            .huge_pages(self.huge_pages());
        let view = self.view();
        if !view.is_default_collector() {
            opts = opts.collector(view.collector().clone());
        }
        let mut new = MapleTree::with_options(opts);
        let st = new.root.state_mut();
        st.append = self.state().append;
        st.leaf_split = self.state().leaf_split;
        new
    }
}

impl<E: Entry> MapleTree<E> {
    /// The range containing `index` and a clone of its entry, if it holds one (pins
    /// internally, like [`get`](Self::get)). For `Arc` entries this bumps a count; for
    /// [`Value`](crate::Value) it copies. The zero entry reads as `None`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use maple_tree::MapleTree;
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Arc<String>>::new();
    /// tree.store_range(0x1000..=0x1fff, Arc::new("text".to_string()))?;
    /// let (range, name) = tree.get_range(0x1234).expect("stored");
    /// assert_eq!(range, 0x1000..=0x1fff);
    /// assert_eq!(*name, "text");
    /// assert_eq!(tree.get_range(0x2000), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_range(&self, index: u64) -> Option<(RangeInclusive<u64>, E)>
    where
        E: Clone,
    {
        let guard = self.pin();
        let (lo, hi, w) = walk::walk_range(self.reader(&guard), index)?;
        w.cloned().map(|e| (lo..=hi, e))
    }

    /// Keeps only the ranges for which `f(range, &entry)` is true; the others are erased and
    /// their entries dropped (exclusive mode: at once). Ranges are visited in index order.
    /// Ranges holding the zero entry are kept and `f` is not called for them.
    ///
    /// An entry that a store split over several ranges is seen once per range; it is dropped
    /// when the last range holding it is erased.
    ///
    /// If `f` panics, the tree is left unchanged.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let mut tree: MapleTree<Value> = (0..10u64)
    ///     .map(|i| (i * 10..=i * 10 + 9, Value::new(i)))
    ///     .collect();
    /// tree.retain(|range, v| v.get() % 2 == 0 && *range.start() < 60);
    /// let guard = tree.pin();
    /// let kept: Vec<_> = tree.iter(&guard).map(|(r, v)| (*r.start(), v.get())).collect();
    /// assert_eq!(kept, [(0, 0), (20, 2), (40, 4)]);
    /// ```
    pub fn retain(&mut self, f: impl FnMut(RangeInclusive<u64>, &E) -> bool) {
        self.exclusive().exclusive_writer().retain_with(f);
    }

    /// Removes what is stored in `range` and returns the removed ranges with their entries,
    /// in index order, trimmed to `range` as [`erase_range`](Self::erase_range) trims.
    ///
    /// A stored range lying inside `range` is removed and its entry moved out. A stored range
    /// sticking out of `range` on either side keeps its outside part (and the entry) in the
    /// tree; its inside part is yielded with a *clone* of the entry, hence `E: Clone` (a count
    /// bump for `Arc`). The same holds for an entry that a store split over several ranges
    /// (one entry shared by them): each of its ranges inside `range` is yielded with a clone,
    /// and the tree's copy is dropped once no range holds it. Ranges holding the zero entry
    /// are erased and not yielded.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] for an empty or inverted `range` (`5..5`, `9..=3`; see
    /// [`inclusive`]); nothing is removed then.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// # fn main() -> Result<(), Error> {
    /// let mut tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store_range(10..=19, Value::new(2))?;
    /// tree.store_range(20..=29, Value::new(3))?;
    /// let drained = tree.drain(5..25)?;
    /// assert_eq!(
    ///     drained,
    ///     [(5..=9, Value::new(1)), (10..=19, Value::new(2)), (20..=24, Value::new(3))]
    /// );
    /// let guard = tree.pin();
    /// let left: Vec<_> = tree.iter(&guard).map(|(r, _)| r).collect();
    /// assert_eq!(left, [0..=4, 25..=29]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn drain(
        &mut self,
        range: impl RangeBounds<u64>,
    ) -> Result<Vec<(RangeInclusive<u64>, E)>, Error>
    where
        E: Clone,
    {
        let (first, last) = inclusive(range)?;
        Ok(self
            .exclusive()
            .exclusive_writer()
            .drain_window(first, last)
            .0)
    }

    /// Splits the tree at `at`: everything at and after `at` moves to the returned tree,
    /// everything before it stays (as [`BTreeMap::split_off`](alloc::collections::BTreeMap::split_off)).
    /// A range straddling `at` is split in two: `[start, at - 1]` stays with the entry, and
    /// `[at, end]` moves with a clone of it (hence `E: Clone`). Ranges holding the zero entry
    /// move too.
    ///
    /// The returned tree has this tree's options: the same kind (allocation or range tree),
    /// huge-page setting, collector (a tree on its own collector gives one on that collector;
    /// a tree on the default collector, one on the default collector), append and leaf-split
    /// settings.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let mut low: MapleTree<Value> =
    ///     [(0..=9, Value::new(1)), (10..=19, Value::new(2))].into_iter().collect();
    /// let high = low.split_off(15);
    /// let (g, h) = (low.pin(), high.pin());
    /// let low_ranges: Vec<_> = low.iter(&g).map(|(r, v)| (r, v.get())).collect();
    /// let high_ranges: Vec<_> = high.iter(&h).map(|(r, v)| (r, v.get())).collect();
    /// assert_eq!(low_ranges, [(0..=9, 1), (10..=14, 2)]);
    /// assert_eq!(high_ranges, [(15..=19, 2)]);
    /// ```
    pub fn split_off(&mut self, at: u64) -> MapleTree<E>
    where
        E: Clone,
    {
        let mut new = self.exclusive().empty_like();
        if at == 0 {
            // Everything moves: swap the whole tree out.
            core::mem::swap(self, &mut new);
            return new;
        }
        let (moved, zeros) = self
            .exclusive()
            .exclusive_writer()
            .drain_window(at, u64::MAX);
        let mut w = new.exclusive();
        for (r, e) in moved {
            w.store_range(r, e)
                .expect("an entry from a tree stores in a tree of its kind");
        }
        for r in zeros {
            w.store_zero_range(r)
                .expect("a range from a tree is a valid range");
        }
        drop(w);
        new
    }

    /// Frees what this tree retired before the call, as far as the guards allow: pins this
    /// tree's collector and flushes it (hurrying the deferred frees of this thread and of the
    /// collector's global queue), round after round, until
    /// [`pending_frees`](Self::pending_frees) reports no node and no entry left or
    /// 64 rounds in a row free nothing; returns what is still pending (hands a partial batch of
    /// retired nodes on first, as `pending_frees` does).
    ///
    /// A guard pinned before the call and still alive holds back everything retired after it
    /// was pinned: `reclaim` cannot free that (it returns nonzero counts), and frees it when
    /// called again after the guard is dropped. Memory deferred on *other* threads' handles of
    /// the default collector (their local bags) is freed when those threads pin again.
    ///
    /// Freed memory goes back to the allocator; glibc's `malloc` may keep it in the process
    /// (resident) until `malloc_trim(0)` is called or it is reused, so the process's RSS need
    /// not fall at once.
    ///
    /// ```
    /// use maple_tree::MapleTree;
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Box<u64>>::new();
    /// for i in 0..1000 {
    ///     tree.store_range(0..=9, Box::new(i))?; // each store retires the previous box
    /// }
    /// let left = tree.reclaim();
    /// assert_eq!((left.nodes, left.entries), (0, 0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn reclaim(&self) -> PendingFrees {
        let mut left = self.pending_frees();
        let mut idle = 0;
        while (left.nodes != 0 || left.entries != 0) && idle < RECLAIM_IDLE_ROUNDS {
            let guard = self.root.pin();
            guard.flush();
            drop(guard);
            let now = self.pending_frees();
            if now.nodes < left.nodes || now.entries < left.entries {
                idle = 0;
            } else {
                idle += 1;
            }
            left = now;
        }
        left
    }
}

/// A structural copy, in one pass ([`MapleTree::dup`]): same shape, every entry cloned; the
/// copy has the same options (an allocation tree's clone is an allocation tree) and the same
/// collector setting. Takes the writer lock (so it waits for a writer holding it; do not call
/// it while this thread holds a [`WriteGuard`] of the tree).
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Value>::new_alloc();
/// tree.store_range(0..=9, Value::new(1))?;
/// let copy = tree.clone();
/// tree.store_range(0..=9, Value::new(2))?;
/// assert_eq!(copy.get(5), Some(Value::new(1)));
/// assert!(copy.is_alloc());
/// # Ok(())
/// # }
/// ```
impl<E: Entry + Clone> Clone for MapleTree<E> {
    fn clone(&self) -> Self {
        self.lock().dup()
    }
}

/// The owned iterator of a [`MapleTree`] ([`IntoIterator`]): yields each stored range with its
/// owned entry, in index order (from the back with `next_back`). Entries not yet yielded are
/// dropped with the iterator.
///
/// An entry that a store split over several ranges (one entry, several ranges) is yielded
/// once, with the first of its ranges met (the lowest from the front, the highest from the
/// back); its other ranges are not yielded. Ranges holding the zero entry are skipped.
pub struct IntoIter<E> {
    tree: MapleTree<E>,
}

/// Consumes the tree, yielding `(range, entry)` pairs in index order; see [`IntoIter`].
///
/// ```
/// use maple_tree::MapleTree;
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Box<&str>>::new();
/// tree.store_range(20..=29, Box::new("b"))?;
/// tree.store_range(0..=9, Box::new("a"))?;
/// let all: Vec<_> = tree.into_iter().map(|(r, e)| (r, *e)).collect();
/// assert_eq!(all, [(0..=9, "a"), (20..=29, "b")]);
/// # Ok(())
/// # }
/// ```
impl<E: Entry> IntoIterator for MapleTree<E> {
    type Item = (RangeInclusive<u64>, E);
    type IntoIter = IntoIter<E>;

    fn into_iter(self) -> IntoIter<E> {
        IntoIter { tree: self }
    }
}

impl<E: Entry> Iterator for IntoIter<E> {
    type Item = (RangeInclusive<u64>, E);

    fn next(&mut self) -> Option<Self::Item> {
        self.tree.pop_first()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // `len` counts zero-entry ranges (skipped) and every range of a shared entry (yielded
        // once): an upper bound only.
        (0, Some(self.tree.len()))
    }
}

impl<E: Entry> DoubleEndedIterator for IntoIter<E> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.tree.pop_last()
    }
}

impl<E: Entry> FusedIterator for IntoIter<E> {}

impl<E: Entry> fmt::Debug for IntoIter<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter")
            .field("len", &self.tree.len())
            .finish_non_exhaustive()
    }
}

/// Iterates under the writer, as [`WriteGuard::iter`].
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Value>::new();
/// let mut w = tree.lock();
/// w.store_range(0..=9, Value::new(1))?;
/// w.store_range(10..=19, Value::new(2))?;
/// let mut sum = 0;
/// for (_range, v) in &w {
///     sum += v.get();
/// }
/// assert_eq!(sum, 3);
/// # Ok(())
/// # }
/// ```
impl<'a, 't, E: Entry> IntoIterator for &'a WriteGuard<'t, E> {
    type Item = (RangeInclusive<u64>, E::Borrowed<'a>);
    type IntoIter = Iter<'a, E>;

    fn into_iter(self) -> Iter<'a, E> {
        self.iter()
    }
}
