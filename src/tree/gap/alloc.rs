//! The write guard's gap searches and allocations (`mas_empty_area*` under the writer,
//! `mtree_alloc_range`, `mtree_alloc_rrange`, `mtree_alloc_cyclic`), on the searches of `gap`
//! and the writer's one allocation routine (`write::alloc`).

use core::ops::{RangeBounds, RangeInclusive};

use crate::entry::Entry;
use crate::error::Error;

use crate::tree::bounds::window as to_window;
use crate::tree::gap::{empty_area_aligned_at, empty_area_at};
use crate::tree::write::alloc::Want;
use crate::tree::write::{with_mode, WriteGuard};

/// The closure of an allocation given its entry up front.
fn given<E>(entry: E) -> impl FnOnce(RangeInclusive<u64>) -> Result<E, Error> {
    move |_| Ok(entry)
}

/// An infallible entry-building closure as a fallible one.
fn infallible<T, E>(f: impl FnOnce(T) -> E) -> impl FnOnce(T) -> Result<E, Error> {
    move |t| Ok(f(t))
}

impl<E: Entry> WriteGuard<'_, E> {
    /// [`MapleTree::empty_area`](crate::MapleTree::empty_area) under the writer
    /// (`mas_empty_area`): the lowest start of a free `size`-range inside `window`.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area`](crate::MapleTree::empty_area).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// w.store_range(0..10, Value::new(1)).unwrap();
    /// assert_eq!(w.empty_area(0..100, 5), Ok(10));
    /// ```
    pub fn empty_area(&self, window: impl RangeBounds<u64>, size: u64) -> Result<u64, Error> {
        let (min, max) = to_window(window)?;
        empty_area_at(self.view(), min, max, size, false)
    }

    /// [`MapleTree::empty_area_rev`](crate::MapleTree::empty_area_rev) under the writer
    /// (`mas_empty_area_rev`): the highest fit inside `window`.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area`](crate::MapleTree::empty_area).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let w = tree.lock();
    /// assert_eq!(w.empty_area_rev(0..100, 5), Ok(95));
    /// ```
    pub fn empty_area_rev(&self, window: impl RangeBounds<u64>, size: u64) -> Result<u64, Error> {
        let (min, max) = to_window(window)?;
        empty_area_at(self.view(), min, max, size, true)
    }

    /// [`MapleTree::empty_area_aligned`](crate::MapleTree::empty_area_aligned) under the writer.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area_aligned`](crate::MapleTree::empty_area_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// w.store_range(0..0x10, Value::new(1)).unwrap();
    /// assert_eq!(w.empty_area_aligned(.., 0x10, 0x100), Ok(0x100));
    /// ```
    pub fn empty_area_aligned(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
    ) -> Result<u64, Error> {
        let q = Want::new(window, size, align)?;
        empty_area_aligned_at(self.view(), q.min, q.max, q.size, q.align, false)
    }

    /// [`MapleTree::empty_area_rev_aligned`](crate::MapleTree::empty_area_rev_aligned) under the
    /// writer.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area_aligned`](crate::MapleTree::empty_area_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let w = tree.lock();
    /// assert_eq!(w.empty_area_rev_aligned(..0x1000, 0x10, 0x100), Ok(0xf00));
    /// ```
    pub fn empty_area_rev_aligned(
        &self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
    ) -> Result<u64, Error> {
        let q = Want::new(window, size, align)?;
        empty_area_aligned_at(self.view(), q.min, q.max, q.size, q.align, true)
    }

    /// `mtree_alloc_range`: stores `entry` at the lowest free `size`-range inside `window`;
    /// returns that range.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range`](crate::MapleTree::alloc_range).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// assert_eq!(w.alloc_range(100..=1000, 10, Value::new(1)), Ok(100..=109));
    /// assert_eq!(w.alloc_range(100..=1000, 10, Value::new(2)), Ok(110..=119));
    /// assert_eq!(w.alloc_rrange(100..=1000, 10, Value::new(3)), Ok(991..=1000));
    /// ```
    pub fn alloc_range(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, 1, false, given(entry))
    }

    /// `mtree_alloc_rrange`: as [`alloc_range`](Self::alloc_range), the highest fit.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range`](crate::MapleTree::alloc_range).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// assert_eq!(w.alloc_rrange(..100, 10, Value::new(1)), Ok(90..=99));
    /// ```
    pub fn alloc_rrange(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, 1, true, given(entry))
    }

    /// [`alloc_range`](Self::alloc_range) whose start is a multiple of `align`.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// w.store_range(0..=0x17ff, Value::new(1)).unwrap();
    /// assert_eq!(w.alloc_range_aligned(.., 0x1000, 0x1000, Value::new(2)), Ok(0x2000..=0x2fff));
    /// ```
    pub fn alloc_range_aligned(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, align, false, given(entry))
    }

    /// [`alloc_rrange`](Self::alloc_rrange) whose start is a multiple of `align`.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// assert_eq!(w.alloc_rrange_aligned(..=0xffff, 0x10, 0x100, Value::new(1)), Ok(0xff00..=0xff0f));
    /// ```
    pub fn alloc_rrange_aligned(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        entry: E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, align, true, given(entry))
    }

    /// [`alloc_range`](Self::alloc_range) with the entry built from the range allocated: `make`
    /// runs under the writer lock, after the search and before the store, so no reader ever
    /// sees another entry there (no placeholder). If `make` panics, nothing is written.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range`](crate::MapleTree::alloc_range); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// // An entry that records its own start.
    /// let r = w.alloc_range_with(10..100, 5, |r| Value::new(*r.start())).unwrap();
    /// assert_eq!(r, 10..=14);
    /// assert_eq!(w.load(12), Some(Value::new(10)));
    /// ```
    pub fn alloc_range_with(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, 1, false, infallible(make))
    }

    /// [`alloc_rrange`](Self::alloc_rrange) with the entry built from the range allocated (see
    /// [`alloc_range_with`](Self::alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range`](crate::MapleTree::alloc_range); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let r = w.alloc_rrange_with(..100, 10, |r| Value::new(*r.end())).unwrap();
    /// assert_eq!((r, w.load(95)), (90..=99, Some(Value::new(99))));
    /// ```
    pub fn alloc_rrange_with(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, 1, true, infallible(make))
    }

    /// [`alloc_range_aligned`](Self::alloc_range_aligned) with the entry built from the range
    /// allocated (see [`alloc_range_with`](Self::alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let r = w.alloc_range_aligned_with(1.., 0x10, 0x100, |r| Value::new(*r.start())).unwrap();
    /// assert_eq!(r, 0x100..=0x10f);
    /// ```
    pub fn alloc_range_aligned_with(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, align, false, infallible(make))
    }

    /// [`alloc_rrange_aligned`](Self::alloc_rrange_aligned) with the entry built from the range
    /// allocated (see [`alloc_range_with`](Self::alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let r = w.alloc_rrange_aligned_with(..0x1000, 0x10, 0x100, |r| Value::new(*r.start()));
    /// assert_eq!(r, Ok(0xf00..=0xf0f));
    /// ```
    pub fn alloc_rrange_aligned_with(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> E,
    ) -> Result<RangeInclusive<u64>, Error> {
        self.try_alloc_aligned(window, size, align, true, infallible(make))
    }

    /// [`alloc_range_with`](Self::alloc_range_with) whose entry may fail to build: `make`'s
    /// error is returned with nothing written. Any error type that a tree [`Error`] converts
    /// into (`Box<dyn std::error::Error>`, your own enum with a `From<Error>`).
    ///
    /// # Errors
    ///
    /// The tree's errors of [`MapleTree::alloc_range`](crate::MapleTree::alloc_range),
    /// converted, and `make`'s own.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let r: Result<_, Error> = w.try_alloc_range_with(0..100, 10, |_| Err(Error::Occupied));
    /// assert_eq!(r, Err(Error::Occupied));
    /// assert!(w.is_empty()); // nothing written
    /// ```
    pub fn try_alloc_range_with<X: From<Error>>(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.try_alloc_aligned(window, size, 1, false, make)
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
    /// let mut w = tree.lock();
    /// let r = w.try_alloc_rrange_with(0..100, 10, |r| Ok::<_, Error>(Value::new(*r.start())));
    /// assert_eq!(r, Ok(90..=99));
    /// ```
    pub fn try_alloc_rrange_with<X: From<Error>>(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.try_alloc_aligned(window, size, 1, true, make)
    }

    /// The fallible form of [`alloc_range_aligned_with`](Self::alloc_range_aligned_with) (see
    /// [`try_alloc_range_with`](Self::try_alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`try_alloc_range_with`](Self::try_alloc_range_with), and those of
    /// [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let r = w.try_alloc_range_aligned_with(.., 8, 3, |_| Ok::<_, Error>(Value::new(1)));
    /// assert_eq!(r, Err(Error::InvalidAlignment));
    /// ```
    pub fn try_alloc_range_aligned_with<X: From<Error>>(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.try_alloc_aligned(window, size, align, false, make)
    }

    /// The fallible form of [`alloc_rrange_aligned_with`](Self::alloc_rrange_aligned_with) (see
    /// [`try_alloc_range_with`](Self::try_alloc_range_with)).
    ///
    /// # Errors
    ///
    /// As [`try_alloc_range_aligned_with`](Self::try_alloc_range_aligned_with).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let r = w.try_alloc_rrange_aligned_with(..0x200, 8, 0x100, |_| Ok::<_, Error>(Value::new(1)));
    /// assert_eq!(r, Ok(0x100..=0x107));
    /// ```
    pub fn try_alloc_rrange_aligned_with<X: From<Error>>(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        self.try_alloc_aligned(window, size, align, true, make)
    }

    /// Every range allocation: the query checked, then [`Writer::alloc`].
    fn try_alloc_aligned<X: From<Error>>(
        &mut self,
        window: impl RangeBounds<u64>,
        size: u64,
        align: u64,
        rev: bool,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        // `NotAllocTree` before any check of the query, as `Writer::alloc` orders them.
        if self.internal != crate::tree::node::Kind::ARange {
            return Err(Error::NotAllocTree.into());
        }
        let q = Want::new(window, size, align)?;
        with_mode!(self.any_writer(), w => w.alloc(q, rev, make))
    }

    /// `mtree_alloc_cyclic`: one index inside `window`, searching from `*next` and then
    /// wrapping to the window's start. Returns the index and whether this allocation reports a
    /// wrap; `*next` becomes the index + 1 (wrapping to 0, which makes the next success report
    /// a wrap, as the kernel's `MT_FLAGS_ALLOC_WRAPPED` does). [`IdAllocator`](crate::IdAllocator)
    /// keeps `next` for you.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_cyclic`](crate::MapleTree::alloc_cyclic).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let mut next = u64::MAX - 1;
    /// assert_eq!(w.alloc_cyclic(2.., &mut next, Value::new(1)), Ok((u64::MAX - 1, false)));
    /// assert_eq!(w.alloc_cyclic(2.., &mut next, Value::new(2)), Ok((u64::MAX, false)));
    /// assert_eq!(next, 0);
    /// assert_eq!(w.alloc_cyclic(2.., &mut next, Value::new(3)), Ok((2, true)));
    /// ```
    pub fn alloc_cyclic(
        &mut self,
        window: impl RangeBounds<u64>,
        next: &mut u64,
        entry: E,
    ) -> Result<(u64, bool), Error> {
        self.try_alloc_cyclic_with(window, next, move |_| Ok(entry))
    }

    /// [`alloc_cyclic`](Self::alloc_cyclic) with the entry built from the index allocated,
    /// under the writer lock before the store: readers never see a placeholder.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_cyclic`](crate::MapleTree::alloc_cyclic); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let mut next = 0;
    /// let (id, _) = w.alloc_cyclic_with(1..=100, &mut next, |id| Value::new(id * 10)).unwrap();
    /// assert_eq!((id, w.load(1)), (1, Some(Value::new(10))));
    /// ```
    pub fn alloc_cyclic_with(
        &mut self,
        window: impl RangeBounds<u64>,
        next: &mut u64,
        make: impl FnOnce(u64) -> E,
    ) -> Result<(u64, bool), Error> {
        self.try_alloc_cyclic_with(window, next, infallible(make))
    }

    /// The fallible form of [`alloc_cyclic_with`](Self::alloc_cyclic_with): `make`'s error is
    /// returned with nothing written and `*next` unchanged.
    ///
    /// # Errors
    ///
    /// The tree's errors of [`MapleTree::alloc_cyclic`](crate::MapleTree::alloc_cyclic),
    /// converted, and `make`'s own.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// let mut next = 5;
    /// let r: Result<_, Error> = w.try_alloc_cyclic_with(.., &mut next, |_| Err(Error::Occupied));
    /// assert_eq!((r, next), (Err(Error::Occupied), 5));
    /// ```
    pub fn try_alloc_cyclic_with<X: From<Error>>(
        &mut self,
        window: impl RangeBounds<u64>,
        next: &mut u64,
        make: impl FnOnce(u64) -> Result<E, X>,
    ) -> Result<(u64, bool), X> {
        with_mode!(self.any_writer(), w => w.alloc_cyclic(window, next, make))
    }
}
