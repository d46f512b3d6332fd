//! The writer's gap searches and allocations (`mas_empty_area*` under the writer,
//! `mtree_alloc_range`, `mtree_alloc_rrange`, `mtree_alloc_cyclic`), on the searches of `gap`.

use crate::entry::{Entry, Owned};
use crate::error::Error;

use super::gap::{empty_area_aligned_at, empty_area_at};
use super::node::Mode;
use super::write::{with_mode, WriteGuard, Writer};

impl<E: Entry, M: Mode> Writer<'_, E, M> {
    fn alloc_common(
        &mut self,
        entry: E,
        size: u64,
        min: u64,
        max: u64,
        rev: bool,
    ) -> Result<u64, Error> {
        self.alloc_aligned(entry, (min, max, size, 1), rev)
    }

    /// Allocation of `q = (min, max, size, align)`.
    fn alloc_aligned(
        &mut self,
        entry: E,
        q: (u64, u64, u64, u64),
        rev: bool,
    ) -> Result<u64, Error> {
        if !self.is_alloc() {
            return Err(Error::NotAllocTree);
        }
        let (min, max, size, align) = q;
        let start = empty_area_aligned_at(self.view(), min, max, size, align, rev)?;
        let w = Owned::new(entry)?.into_word();
        self.write(start, start + (size - 1), w);
        Ok(start)
    }

    /// See [`WriteGuard::alloc_range`].
    pub(crate) fn alloc_range(
        &mut self,
        entry: E,
        size: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, Error> {
        self.alloc_common(entry, size, min, max, false)
    }

    /// See [`WriteGuard::alloc_rrange`].
    pub(crate) fn alloc_rrange(
        &mut self,
        entry: E,
        size: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, Error> {
        self.alloc_common(entry, size, min, max, true)
    }

    /// See [`WriteGuard::alloc_range_aligned`].
    pub(crate) fn alloc_range_aligned(
        &mut self,
        entry: E,
        size: u64,
        align: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, Error> {
        self.alloc_aligned(entry, (min, max, size, align), false)
    }

    /// See [`WriteGuard::alloc_rrange_aligned`].
    pub(crate) fn alloc_rrange_aligned(
        &mut self,
        entry: E,
        size: u64,
        align: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, Error> {
        self.alloc_aligned(entry, (min, max, size, align), true)
    }

    /// See [`WriteGuard::alloc_cyclic`].
    pub(crate) fn alloc_cyclic(
        &mut self,
        entry: E,
        lo: u64,
        hi: u64,
        next: &mut u64,
    ) -> Result<(u64, bool), Error> {
        if !self.is_alloc() {
            return Err(Error::NotAllocTree);
        }
        if lo > hi {
            return Err(Error::InvalidWindow);
        }
        let from = lo.max(*next);
        let mut wrapped_search = false;
        let found = if from <= hi {
            empty_area_at(self.view(), from, hi, 1, false).ok()
        } else {
            None
        };
        let index = match found {
            Some(i) => i,
            None => {
                if from > lo {
                    wrapped_search = true;
                    empty_area_at(self.view(), lo, hi, 1, false)?
                } else {
                    return Err(Error::NoRoom);
                }
            }
        };
        let w = Owned::new(entry)?.into_word();
        self.write(index, index, w);
        *next = index.wrapping_add(1);
        let wrapped = if wrapped_search {
            true
        } else if self.st.cyclic_wrapped {
            self.st.cyclic_wrapped = false;
            true
        } else {
            false
        };
        if *next == 0 {
            self.st.cyclic_wrapped = true;
        }
        Ok((index, wrapped))
    }
}

impl<E: Entry> WriteGuard<'_, E> {
    /// `mas_empty_area` under the writer: the lowest start of a free `size`-range in `[min, max]`.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area`](crate::MapleTree::empty_area).
    pub fn empty_area(&self, min: u64, max: u64, size: u64) -> Result<u64, Error> {
        empty_area_at(self.view(), min, max, size, false)
    }

    /// `mas_empty_area_rev` under the writer: the highest fit in `[min, max]`.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area`](crate::MapleTree::empty_area).
    pub fn empty_area_rev(&self, min: u64, max: u64, size: u64) -> Result<u64, Error> {
        empty_area_at(self.view(), min, max, size, true)
    }

    /// [`MapleTree::empty_area_aligned`](crate::MapleTree::empty_area_aligned) under the writer.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area_aligned`](crate::MapleTree::empty_area_aligned).
    pub fn empty_area_aligned(
        &self,
        min: u64,
        max: u64,
        size: u64,
        align: u64,
    ) -> Result<u64, Error> {
        empty_area_aligned_at(self.view(), min, max, size, align, false)
    }

    /// [`MapleTree::empty_area_rev_aligned`](crate::MapleTree::empty_area_rev_aligned) under the writer.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::empty_area_aligned`](crate::MapleTree::empty_area_aligned).
    pub fn empty_area_rev_aligned(
        &self,
        min: u64,
        max: u64,
        size: u64,
        align: u64,
    ) -> Result<u64, Error> {
        empty_area_aligned_at(self.view(), min, max, size, align, true)
    }

    /// `mtree_alloc_range`: inserts `entry` at the lowest free `[start, start + size - 1]` in
    /// `[min, max]`; returns `start`.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range`](crate::MapleTree::alloc_range).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// assert_eq!(w.alloc_range(Value::new(1), 10, 100, 1000), Ok(100));
    /// assert_eq!(w.alloc_range(Value::new(2), 10, 100, 1000), Ok(110));
    /// assert_eq!(w.alloc_rrange(Value::new(3), 10, 100, 1000), Ok(991));
    /// ```
    pub fn alloc_range(&mut self, entry: E, size: u64, min: u64, max: u64) -> Result<u64, Error> {
        with_mode!(self.any_writer(), w => w.alloc_range(entry, size, min, max))
    }

    /// `mtree_alloc_rrange`: the highest fit.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range`](crate::MapleTree::alloc_range).
    pub fn alloc_rrange(&mut self, entry: E, size: u64, min: u64, max: u64) -> Result<u64, Error> {
        with_mode!(self.any_writer(), w => w.alloc_rrange(entry, size, min, max))
    }

    /// [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned) under the writer.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned).
    pub fn alloc_range_aligned(
        &mut self,
        entry: E,
        size: u64,
        align: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, Error> {
        with_mode!(self.any_writer(), w => w.alloc_range_aligned(entry, size, align, min, max))
    }

    /// [`MapleTree::alloc_rrange_aligned`](crate::MapleTree::alloc_rrange_aligned) under the writer.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_range_aligned`](crate::MapleTree::alloc_range_aligned).
    pub fn alloc_rrange_aligned(
        &mut self,
        entry: E,
        size: u64,
        align: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, Error> {
        with_mode!(self.any_writer(), w => w.alloc_rrange_aligned(entry, size, align, min, max))
    }

    /// `mtree_alloc_cyclic`: one index in `[lo, hi]`, searching from `*next` and then wrapping
    /// to `lo`. Returns the index and whether this allocation reports a wrap; `*next` becomes the
    /// index + 1 (wrapping to 0, which makes the next success report a wrap, as the kernel's
    /// `MT_FLAGS_ALLOC_WRAPPED` does).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::alloc_cyclic`](crate::MapleTree::alloc_cyclic).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut next = u64::MAX - 1;
    /// assert_eq!(tree.alloc_cyclic(Value::new(1), 2, u64::MAX, &mut next), Ok((u64::MAX - 1, false)));
    /// assert_eq!(tree.alloc_cyclic(Value::new(2), 2, u64::MAX, &mut next), Ok((u64::MAX, false)));
    /// assert_eq!(next, 0);
    /// assert_eq!(tree.alloc_cyclic(Value::new(3), 2, u64::MAX, &mut next), Ok((2, true)));
    /// ```
    pub fn alloc_cyclic(
        &mut self,
        entry: E,
        lo: u64,
        hi: u64,
        next: &mut u64,
    ) -> Result<(u64, bool), Error> {
        with_mode!(self.any_writer(), w => w.alloc_cyclic(entry, lo, hi, next))
    }
}
