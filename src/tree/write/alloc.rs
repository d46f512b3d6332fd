//! The writer's allocations (`mtree_alloc_range`, `mtree_alloc_rrange`, `mtree_alloc_cyclic`
//! under the writer), on the gap searches of `gap`.
//!
//! Every allocation is one routine, [`Writer::alloc`]: search, then build the entry from the
//! range found (a closure, run under the writer lock before anything is stored), then store it.
//! A reader never sees anything but the final entry at the allocated range, and a failing
//! search or closure writes nothing.

use core::ops::{RangeBounds, RangeInclusive};

use crate::entry::{Entry, Owned};
use crate::error::Error;

use super::WriteMode;
use super::Writer;
use crate::tree::bounds::window as to_window;
use crate::tree::gap::{empty_area_aligned_at, empty_area_at};

/// A gap-search query: the window `[min, max]`, the size, the alignment.
#[derive(Clone, Copy)]
pub(crate) struct Want {
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) size: u64,
    pub(crate) align: u64,
}

impl Want {
    /// `window`, `size` and `align`, the window converted (an empty or inverted one is
    /// [`Error::InvalidWindow`], as `mas_empty_area` answers `min > max`).
    pub(crate) fn new(window: impl RangeBounds<u64>, size: u64, align: u64) -> Result<Self, Error> {
        let (min, max) = to_window(window)?;
        Ok(Want {
            min,
            max,
            size,
            align,
        })
    }
}

impl<E: Entry, M: WriteMode> Writer<'_, E, M> {
    /// Allocates a range for `q` (the lowest fit, or the highest with `rev`), builds its entry
    /// with `make` from the range found, and stores it there; returns the range. On any error
    /// (no allocation tree, no fit, `make`'s error, a reserved entry word) nothing is written.
    pub(crate) fn alloc<X: From<Error>>(
        &mut self,
        q: Want,
        rev: bool,
        make: impl FnOnce(RangeInclusive<u64>) -> Result<E, X>,
    ) -> Result<RangeInclusive<u64>, X> {
        if !self.is_alloc() {
            return Err(Error::NotAllocTree.into());
        }
        let start = empty_area_aligned_at(self.view(), q.min, q.max, q.size, q.align, rev)?;
        let last = start + (q.size - 1);
        let w = Owned::new(make(start..=last)?)?.into_word();
        self.write(start, last, w);
        Ok(start..=last)
    }

    /// `mtree_alloc_cyclic` with the entry built from its index: see
    /// [`WriteGuard::try_alloc_cyclic_with`].
    pub(crate) fn alloc_cyclic<X: From<Error>>(
        &mut self,
        window: impl RangeBounds<u64>,
        next: &mut u64,
        make: impl FnOnce(u64) -> Result<E, X>,
    ) -> Result<(u64, bool), X> {
        if !self.is_alloc() {
            return Err(Error::NotAllocTree.into());
        }
        let (lo, hi) = to_window(window)?;
        let from = lo.max(*next);
        let mut wrapped_search = false;
        let found = if from <= hi {
            empty_area_at(self.view(), from, hi, 1, false).ok()
        } else {
            None
        };
        let index = match found {
            Some(i) => i,
            None if from > lo => {
                wrapped_search = true;
                empty_area_at(self.view(), lo, hi, 1, false)?
            }
            None => return Err(Error::NoRoom.into()),
        };
        let w = Owned::new(make(index)?)?.into_word();
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
