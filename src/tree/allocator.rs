//! An address-range allocator on an allocation tree, in the spirit of `vm-allocator`'s
//! `AddressAllocator`: aligned placement first-fit, last-fit or at an exact address, and frees
//! that must name an allocated range exactly.

use alloc::vec::Vec;
use core::ops::RangeInclusive;

use crate::entry::Value;
use crate::error::Error;

use super::MapleTree;

/// Where [`Allocator::allocate`] places a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Placement {
    /// The lowest aligned fit.
    FirstMatch,
    /// The highest aligned fit.
    LastMatch,
    /// Exactly at this start (which must be aligned and free for the whole size).
    ExactMatch(u64),
}

/// Allocates aligned, non-overlapping ranges of `[base, base + size - 1]` (see the module
/// documentation); each search is `O(log n)` in the number of allocations.
///
/// ```
/// use maple_tree::tree::{Allocator, Placement};
/// use maple_tree::Error;
/// # fn main() -> Result<(), Error> {
/// let mut a = Allocator::new(0x1000, 0x10000)?;
/// let r = a.allocate(0x100, 0x1000, Placement::FirstMatch)?;
/// assert_eq!(r, 0x1000..=0x10ff);
/// let top = a.allocate(0x100, 0x1000, Placement::LastMatch)?;
/// assert_eq!(top, 0x10000..=0x100ff);
/// assert_eq!(a.allocate(0x10, 0x10, Placement::ExactMatch(0x1080)), Err(Error::Occupied));
/// a.free(&r)?;
/// assert_eq!(a.free(&r), Err(Error::NotAllocated));
/// assert_eq!(a.allocate(0x10, 0x10, Placement::ExactMatch(0x1080))?, 0x1080..=0x108f);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Allocator {
    tree: MapleTree<Value>,
    first: u64,
    last: u64,
}

impl Allocator {
    /// An allocator of the `size` addresses from `base`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidWindow`] if `size` is 0 or `base + size - 1` overflows `u64`.
    ///
    /// ```
    /// use maple_tree::tree::Allocator;
    /// use maple_tree::Error;
    ///
    /// # fn main() -> Result<(), Error> {
    /// let a = Allocator::new(0x1000, 0x1000)?;
    /// assert_eq!(a.bounds(), 0x1000..=0x1fff);
    /// assert_eq!(Allocator::new(0x1000, 0).err(), Some(Error::InvalidWindow));
    /// assert_eq!(Allocator::new(u64::MAX, 2).err(), Some(Error::InvalidWindow));
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(base: u64, size: u64) -> Result<Self, Error> {
        if size == 0 {
            return Err(Error::InvalidWindow);
        }
        let last = base.checked_add(size - 1).ok_or(Error::InvalidWindow)?;
        Ok(Allocator {
            tree: MapleTree::new_alloc(),
            first: base,
            last,
        })
    }

    /// The managed addresses.
    ///
    /// ```
    /// use maple_tree::tree::Allocator;
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let a = Allocator::new(0, 1 << 20)?;
    /// assert_eq!(a.bounds(), 0..=0xf_ffff);
    /// # Ok(())
    /// # }
    /// ```
    pub fn bounds(&self) -> RangeInclusive<u64> {
        self.first..=self.last
    }

    /// Allocates `size` addresses starting at a multiple of `align` (a power of two), placed
    /// as `placement` says, and returns them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidWindow`] for `size == 0` or a size larger than the managed range;
    /// [`Error::InvalidAlignment`] unless `align` is a power of two, or for an
    /// [`ExactMatch`](Placement::ExactMatch) start that is not a multiple of it;
    /// [`Error::InvalidRange`] for an exact range that leaves the managed range;
    /// [`Error::Occupied`] if an exact range overlaps an allocation; [`Error::NoRoom`] if no
    /// aligned fit is free.
    ///
    /// ```
    /// use maple_tree::tree::{Allocator, Placement};
    /// use maple_tree::Error;
    ///
    /// # fn main() -> Result<(), Error> {
    /// let mut a = Allocator::new(0x1000, 0x10000)?;
    /// assert_eq!(a.allocate(0x100, 0x100, Placement::FirstMatch)?, 0x1000..=0x10ff);
    /// assert_eq!(a.allocate(0x100, 0x100, Placement::LastMatch)?, 0x10f00..=0x10fff);
    /// assert_eq!(a.allocate(0x100, 0x100, Placement::ExactMatch(0x2000))?, 0x2000..=0x20ff);
    /// assert_eq!(a.allocate(0x10, 0x10, Placement::ExactMatch(0x2080)), Err(Error::Occupied));
    /// assert_eq!(a.allocate(0x10, 3, Placement::FirstMatch), Err(Error::InvalidAlignment));
    /// assert_eq!(a.allocate(0x10000, 1, Placement::FirstMatch), Err(Error::NoRoom));
    /// # Ok(())
    /// # }
    /// ```
    pub fn allocate(
        &mut self,
        size: u64,
        align: u64,
        placement: Placement,
    ) -> Result<RangeInclusive<u64>, Error> {
        let (min, max) = (self.first, self.last);
        let mut w = self.tree.exclusive();
        match placement {
            Placement::FirstMatch => w.alloc_range_aligned(min..=max, size, align, Value::new(0)),
            Placement::LastMatch => w.alloc_rrange_aligned(min..=max, size, align, Value::new(0)),
            Placement::ExactMatch(start) => {
                if size == 0 {
                    return Err(Error::InvalidWindow);
                }
                if !align.is_power_of_two() || start & (align - 1) != 0 {
                    return Err(Error::InvalidAlignment);
                }
                let end = start.checked_add(size - 1).ok_or(Error::InvalidRange)?;
                if start < min || end > max {
                    return Err(Error::InvalidRange);
                }
                w.insert_range(start..=end, Value::new(0))?;
                Ok(start..=end)
            }
        }
    }

    /// Frees an allocation, which `range` must name exactly.
    ///
    /// # Errors
    ///
    /// [`Error::NotAllocated`] if `range` is not exactly one allocated range (nothing is freed
    /// then).
    ///
    /// ```
    /// use maple_tree::tree::{Allocator, Placement};
    /// use maple_tree::Error;
    ///
    /// # fn main() -> Result<(), Error> {
    /// let mut a = Allocator::new(0, 0x1000)?;
    /// let r = a.allocate(0x100, 1, Placement::FirstMatch)?;
    /// assert_eq!(a.free(&(0..=0x7f)), Err(Error::NotAllocated)); // only part of it
    /// a.free(&r)?;
    /// assert_eq!(a.free(&r), Err(Error::NotAllocated)); // freed already
    /// assert!(a.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn free(&mut self, range: &RangeInclusive<u64>) -> Result<(), Error> {
        let (a, b) = (*range.start(), *range.end());
        let mut w = self.tree.exclusive();
        let here = w.walker_range(a);
        if here != Some((a, b)) || range.is_empty() {
            return Err(Error::NotAllocated);
        }
        w.erase(a);
        Ok(())
    }

    /// The number of allocations.
    ///
    /// ```
    /// use maple_tree::tree::{Allocator, Placement};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let mut a = Allocator::new(0, 0x1000)?;
    /// a.allocate(0x100, 1, Placement::FirstMatch)?;
    /// a.allocate(0x100, 1, Placement::FirstMatch)?;
    /// assert_eq!(a.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether nothing is allocated.
    ///
    /// ```
    /// use maple_tree::tree::{Allocator, Placement};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let mut a = Allocator::new(0, 0x1000)?;
    /// assert!(a.is_empty());
    /// let r = a.allocate(0x100, 1, Placement::FirstMatch)?;
    /// assert!(!a.is_empty());
    /// a.free(&r)?;
    /// assert!(a.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// The allocated ranges, in address order.
    ///
    /// ```
    /// use maple_tree::tree::{Allocator, Placement};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let mut a = Allocator::new(0, 0x1000)?;
    /// a.allocate(0x100, 1, Placement::LastMatch)?;
    /// a.allocate(0x100, 1, Placement::FirstMatch)?;
    /// assert_eq!(a.allocations(), [0..=0xff, 0xf00..=0xfff]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn allocations(&self) -> Vec<RangeInclusive<u64>> {
        let guard = self.tree.pin();
        self.tree.iter(&guard).map(|(r, _)| r).collect()
    }
}
