//! The tree's gap searches and one-call allocations (`mas_empty_area`,
//! `mtree_alloc_range`, `mtree_alloc_cyclic`, ...): windows first, as ranges; each allocation
//! takes the writer lock for one call.

use crate::entry::Entry;
use crate::error::Error;
use crate::tree::MapleTree;
use core::ops::{RangeBounds, RangeInclusive};

impl<E: Entry> MapleTree<E> {
    /// `mas_empty_area`: the lowest start of a free range of `size` indices inside `window`
    /// (any `RangeBounds<u64>`: `a..b`, `a..=b`, `..`, ...). The whole `size`-range must lie
    /// inside the window.
    ///
    /// Beside a writer, never `NoRoom` for a window that held a fitting hole for the whole
    /// search, whatever the writer does and however long it takes: one search, which never
    /// waits for the writer and never retries. An answer is a range that was free at some
    /// moment of the search.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidWindow`] for an empty or inverted window, `size == 0` or a window
    /// smaller than `size`; [`Error::NoRoom`] when no free range of `size` indices lies inside
    /// the window.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// tree.store_range(0..10, Value::new(1))?;
    /// assert_eq!(tree.empty_area(0..100, 5)?, 10);
    /// assert_eq!(tree.empty_area(0..10, 5), Err(Error::NoRoom));
    /// assert_eq!(tree.empty_area(5..5, 1), Err(Error::InvalidWindow));
    /// # Ok(())
    /// # }
    /// ```
    pub fn empty_area(&self, window: impl RangeBounds<u64>, size: u64) -> Result<u64, Error> {
        self.empty_area_rev_aligned_read(window, size, 1, false)
    }

    /// `mas_empty_area_rev`: the highest start of a free range of `size` indices inside
    /// `window`, placed as high as possible.
    ///
    /// # Errors
    ///
    /// As [`empty_area`](Self::empty_area). Beside a writer, never `NoRoom` for a window that
    /// held a fitting hole for the whole search (see [`empty_area`](Self::empty_area)).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// tree.store_range(90..100, Value::new(1))?;
    /// assert_eq!(tree.empty_area_rev(..100, 5)?, 85);
    /// # Ok(())
    /// # }
    /// ```
    pub fn empty_area_rev(&self, window: impl RangeBounds<u64>, size: u64) -> Result<u64, Error> {
        self.empty_area_rev_aligned_read(window, size, 1, true)
    }

    /// The lowest start `s` of a free range `[s, s + size - 1]` inside `window` with `s` a
    /// multiple of `align` (a power of two): `mas_empty_area` with an alignment. Exact-size
    /// aligned holes are found; in allocation trees the search is `O(log n)` as long as the
    /// large-enough gaps are aligned (a subtree is entered only if its largest gap is at least
    /// `size`, and left again if none of its gaps has an aligned fit).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidWindow`] for an empty or inverted window, `size == 0` or a window
    /// smaller than `size`; [`Error::InvalidAlignment`] unless `align` is a power of two;
    /// [`Error::NoRoom`] when no aligned fit exists.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// tree.store_range(0..=0xfff, Value::new(1))?;
    /// tree.store_range(0x2000..=0x2fff, Value::new(2))?;
    /// // The exact-size hole [0x1000, 0x1fff] is aligned: found.
    /// assert_eq!(tree.empty_area_aligned(.., 0x1000, 0x1000)?, 0x1000);
    /// // Aligned to 0x4000, the lowest fit is past the entries.
    /// assert_eq!(tree.empty_area_aligned(.., 0x1000, 0x4000)?, 0x4000);
    /// assert_eq!(tree.empty_area_rev_aligned(..=0x5fff, 0x1000, 0x2000)?, 0x4000);
    /// # Ok(())
    /// # }
    /// ```
    pub fn empty_area_aligned(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
    ) -> Result<u64, Error> {
        self.empty_area_rev_aligned_read(window, size, align, false)
    }

    /// The highest aligned fit (see [`empty_area_aligned`](Self::empty_area_aligned)):
    /// `mas_empty_area_rev` with an alignment.
    ///
    /// # Errors
    ///
    /// As [`empty_area_aligned`](Self::empty_area_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// assert_eq!(tree.empty_area_rev_aligned(..0x1000, 0x10, 0x100), Ok(0xf00));
    /// ```
    pub fn empty_area_rev_aligned(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
    ) -> Result<u64, Error> {
        self.empty_area_rev_aligned_read(window, size, align, true)
    }

    /// Every reader's gap search.
    fn empty_area_rev_aligned_read(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        rev: bool,
    ) -> Result<u64, Error> {
        let (min, max) = crate::tree::bounds::window(window)?;
        let guard = self.pin();
        super::empty_area_aligned_at(self.reader(&guard), min, max, size, align, rev)
    }
}

/// Allocation through the writer lock: each method takes the lock for one call, as
/// [`MapleTree::lock`] then the [`WriteGuard`](crate::WriteGuard) method of the same name.
impl<E: Entry + Send + Sync> MapleTree<E> {
    /// `mtree_alloc_range`: stores `entry` at the lowest free range of `size` indices inside
    /// `window` and returns that range.
    ///
    /// # Errors
    ///
    /// [`Error::NotAllocTree`] on a tree without gap tracking ([`MapleTree::new_alloc`] makes
    /// one), [`Error::Reserved`] for a reserved entry word, and the errors of
    /// [`empty_area`](Self::empty_area). Nothing is written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// assert_eq!(tree.alloc_range(100..=1000, 10, Value::new(1))?, 100..=109);
    /// assert_eq!(tree.alloc_range(100..=1000, 10, Value::new(2))?, 110..=119);
    /// assert_eq!(tree.get(115), Some(Value::new(2)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn alloc_range(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock().alloc_range(window, size, entry)
    }

    /// `mtree_alloc_rrange`: as [`alloc_range`](Self::alloc_range), but the highest fit.
    ///
    /// # Errors
    ///
    /// As [`alloc_range`](Self::alloc_range).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// assert_eq!(tree.alloc_rrange(100..=1000, 10, Value::new(3)), Ok(991..=1000));
    /// ```
    pub fn alloc_rrange(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock().alloc_rrange(window, size, entry)
    }

    /// Stores `entry` at the lowest free `[s, s + size - 1]` inside `window` with `s` a
    /// multiple of `align`, and returns that range (`mtree_alloc_range` with an alignment; see
    /// [`empty_area_aligned`](Self::empty_area_aligned)). On error nothing is written and
    /// `entry` is dropped.
    ///
    /// # Errors
    ///
    /// [`Error::NotAllocTree`] on a tree without gap tracking, [`Error::Reserved`] for a
    /// reserved entry word, and the errors of [`empty_area_aligned`](Self::empty_area_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// tree.store_range(0..=0x17ff, Value::new(1))?;
    /// assert_eq!(tree.alloc_range_aligned(.., 0x1000, 0x1000, Value::new(2))?, 0x2000..=0x2fff);
    /// # Ok(())
    /// # }
    /// ```
    pub fn alloc_range_aligned(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock().alloc_range_aligned(window, size, align, entry)
    }

    /// As [`alloc_range_aligned`](Self::alloc_range_aligned), but the highest aligned fit
    /// (`mtree_alloc_rrange` with an alignment).
    ///
    /// # Errors
    ///
    /// As [`alloc_range_aligned`](Self::alloc_range_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r = tree.alloc_rrange_aligned(..=0xffff, 0x10, 0x100, Value::new(3));
    /// assert_eq!(r, Ok(0xff00..=0xff0f));
    /// ```
    pub fn alloc_rrange_aligned(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock().alloc_rrange_aligned(window, size, align, entry)
    }

    /// [`alloc_range`](Self::alloc_range) with the entry built from the range allocated:
    /// `make` runs under the writer lock, after the search and before the store is published,
    /// so no reader ever sees anything but its entry there (no placeholder to overwrite).
    /// If `make` panics, nothing is written.
    ///
    /// # Errors
    ///
    /// As [`alloc_range`](Self::alloc_range); `make` is not called then.
    ///
    /// ```
    /// use std::ops::RangeInclusive;
    /// use std::sync::Arc;
    /// use maple_tree::MapleTree;
    ///
    /// struct Region { range: RangeInclusive<u64> }
    /// let tree = MapleTree::<Arc<Region>>::new_alloc();
    /// let r = tree.alloc_range_with(0x1000.., 0x100, |r| Arc::new(Region { range: r })).unwrap();
    /// assert_eq!(tree.get(0x1080).unwrap().range, r);
    /// ```
    pub fn alloc_range_with(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock().alloc_range_with(window, size, make)
    }

    /// [`alloc_rrange`](Self::alloc_rrange) with the entry built from the range allocated (see
    /// [`alloc_range_with`](Self::alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`alloc_range`](Self::alloc_range); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r = tree.alloc_rrange_with(..100, 10, |r| Value::new(*r.start())).unwrap();
    /// assert_eq!((r, tree.get(99)), (90..=99, Some(Value::new(90))));
    /// ```
    pub fn alloc_rrange_with(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock().alloc_rrange_with(window, size, make)
    }

    /// [`alloc_range_aligned`](Self::alloc_range_aligned) with the entry built from the range
    /// allocated (see [`alloc_range_with`](Self::alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`alloc_range_aligned`](Self::alloc_range_aligned); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r = tree.alloc_range_aligned_with(1.., 0x10, 0x100, |r| Value::new(*r.start()));
    /// assert_eq!(r, Ok(0x100..=0x10f));
    /// ```
    pub fn alloc_range_aligned_with(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock()
            .alloc_range_aligned_with(window, size, align, make)
    }

    /// [`alloc_rrange_aligned`](Self::alloc_rrange_aligned) with the entry built from the
    /// range allocated (see [`alloc_range_with`](Self::alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`alloc_range_aligned`](Self::alloc_range_aligned); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r = tree.alloc_rrange_aligned_with(..0x1000, 0x10, 0x100, |r| Value::new(*r.start()));
    /// assert_eq!(r, Ok(0xf00..=0xf0f));
    /// ```
    pub fn alloc_rrange_aligned_with(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.lock()
            .alloc_rrange_aligned_with(window, size, align, make)
    }

    /// [`alloc_range_with`](Self::alloc_range_with) whose entry may fail to build: `make`'s
    /// error comes back with nothing written. The error type is any that a tree [`Error`]
    /// converts into (`Box<dyn std::error::Error>`, or your own with a `From<Error>`).
    ///
    /// # Errors
    ///
    /// The errors of [`alloc_range`](Self::alloc_range), converted, and `make`'s own.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r: Result<_, Box<dyn std::error::Error>> =
    ///     tree.try_alloc_range_with(0..100, 10, |_| Err("out of handles".into()));
    /// assert_eq!(r.unwrap_err().to_string(), "out of handles");
    /// assert!(tree.is_empty()); // nothing written
    /// ```
    pub fn try_alloc_range_with<X: From<Error>>(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.lock().try_alloc_range_with(window, size, make)
    }

    /// The fallible form of [`alloc_rrange_with`](Self::alloc_rrange_with) (see
    /// [`try_alloc_range_with`](Self::try_alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`try_alloc_range_with`](Self::try_alloc_range_with).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r = tree.try_alloc_rrange_with(0..100, 10, |r| Ok::<_, Error>(Value::new(*r.end())));
    /// assert_eq!(r, Ok(90..=99));
    /// ```
    pub fn try_alloc_rrange_with<X: From<Error>>(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.lock().try_alloc_rrange_with(window, size, make)
    }

    /// The fallible form of [`alloc_range_aligned_with`](Self::alloc_range_aligned_with) (see
    /// [`try_alloc_range_with`](Self::try_alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`try_alloc_range_with`](Self::try_alloc_range_with), and those of
    /// [`alloc_range_aligned`](Self::alloc_range_aligned).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r = tree.try_alloc_range_aligned_with(.., 8, 0x10, |_| Ok::<_, Error>(Value::new(1)));
    /// assert_eq!(r, Ok(0..=7));
    /// ```
    pub fn try_alloc_range_aligned_with<X: From<Error>>(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.lock()
            .try_alloc_range_aligned_with(window, size, align, make)
    }

    /// The fallible form of [`alloc_rrange_aligned_with`](Self::alloc_rrange_aligned_with)
    /// (see [`try_alloc_range_with`](Self::try_alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`try_alloc_range_aligned_with`](Self::try_alloc_range_aligned_with).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let r = tree.try_alloc_rrange_aligned_with(..0x200, 8, 0x100, |_| Ok::<_, Error>(Value::new(1)));
    /// assert_eq!(r, Ok(0x100..=0x107));
    /// ```
    pub fn try_alloc_rrange_aligned_with<X: From<Error>>(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.lock()
            .try_alloc_rrange_aligned_with(window, size, align, make)
    }

    /// `mtree_alloc_cyclic`: allocates one index inside `window`, searching from `*next` first
    /// and wrapping to the window's start; returns `(index, wrapped)` and advances `*next`.
    /// [`IdAllocator`](crate::IdAllocator) keeps `next` for you, for any number of threads.
    ///
    /// # Errors
    ///
    /// [`Error::NotAllocTree`] on a tree without gap tracking, [`Error::InvalidWindow`] for an
    /// empty or inverted window, [`Error::NoRoom`] when every index of the window is taken,
    /// [`Error::Reserved`] for a reserved entry word. Nothing is written then, `*next` is
    /// unchanged and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut next = u64::MAX - 1;
    /// assert_eq!(tree.alloc_cyclic(2.., &mut next, Value::new(1)), Ok((u64::MAX - 1, false)));
    /// assert_eq!(tree.alloc_cyclic(2.., &mut next, Value::new(2)), Ok((u64::MAX, false)));
    /// assert_eq!(tree.alloc_cyclic(2.., &mut next, Value::new(3)), Ok((2, true)));
    /// ```
    pub fn alloc_cyclic(
        &self,
        window: impl RangeBounds<u64>,
        next: &mut u64,
        entry: E,
    ) -> Result<(u64, bool), Error> {
        self.lock().alloc_cyclic(window, next, entry)
    }

    /// [`alloc_cyclic`](Self::alloc_cyclic) with the entry built from the index allocated,
    /// under the writer lock before the store: readers never see a placeholder.
    ///
    /// # Errors
    ///
    /// As [`alloc_cyclic`](Self::alloc_cyclic); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut next = 0;
    /// let (id, _) = tree.alloc_cyclic_with(1..=100, &mut next, |id| Value::new(id)).unwrap();
    /// assert_eq!(tree.get(id), Some(Value::new(id)));
    /// ```
    pub fn alloc_cyclic_with(
        &self,
        window: impl RangeBounds<u64>,
        next: &mut u64,
        make: impl FnOnce(u64) -> E,
    ) -> Result<(u64, bool), Error> {
        self.lock().alloc_cyclic_with(window, next, make)
    }

    /// The fallible form of [`alloc_cyclic_with`](Self::alloc_cyclic_with): `make`'s error
    /// comes back with nothing written and `*next` unchanged.
    ///
    /// # Errors
    ///
    /// The errors of [`alloc_cyclic`](Self::alloc_cyclic), converted, and `make`'s own.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut next = 0;
    /// let r = tree.try_alloc_cyclic_with(.., &mut next, |id| Ok::<_, Error>(Value::new(id)));
    /// assert_eq!(r, Ok((0, false)));
    /// ```
    pub fn try_alloc_cyclic_with<X: From<Error>>(
        &self,
        window: impl RangeBounds<u64>,
        next: &mut u64,
        make: impl FnOnce(u64) -> Result<E, X>,
    ) -> Result<(u64, bool), X> {
        self.lock().try_alloc_cyclic_with(window, next, make)
    }
}
