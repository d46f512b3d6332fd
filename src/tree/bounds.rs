//! Range-bound arguments as inclusive `[first, last]` bounds: the one conversion behind every
//! method taking `impl RangeBounds<u64>`, and its form for search windows. Below the surface
//! (`api`, `read`, `one_call`) and the writer (`write`), which all use it.

use core::ops::{Bound, RangeBounds};

use crate::error::Error;

/// Converts range bounds over `u64` to an inclusive `[first, last]`: the one conversion behind
/// every method taking `impl RangeBounds<u64>` ([`MapleTree::store_range`](crate::MapleTree::store_range),
/// [`MapleTree::insert_range`](crate::MapleTree::insert_range), [`MapleTree::erase_range`](crate::MapleTree::erase_range), [`MapleTree::range`](crate::MapleTree::range),
/// [`MapleTree::gaps`](crate::MapleTree::gaps) and the [`WriteGuard`](crate::WriteGuard) forms).
///
/// An unbounded start is `0`, an unbounded end `u64::MAX`; `Excluded(a)` as a start is `a + 1`
/// and `Excluded(b)` as an end is `b - 1`, without overflow.
///
/// # Errors
///
/// [`Error::InvalidRange`] for an empty range (`5..5`, `..0`), an inverted one (`5..=4`) or an
/// excluded bound that leaves nothing (`(Bound::Excluded(u64::MAX), ..)`, `..0`).
///
/// ```
/// use maple_tree::tree::inclusive;
/// use maple_tree::Error;
/// assert_eq!(inclusive(0x1000..0x2000), Ok((0x1000, 0x1fff)));
/// assert_eq!(inclusive(..=9), Ok((0, 9)));
/// assert_eq!(inclusive(5..), Ok((5, u64::MAX)));
/// assert_eq!(inclusive(5..5), Err(Error::InvalidRange));
/// ```
pub fn inclusive(r: impl RangeBounds<u64>) -> Result<(u64, u64), Error> {
    let first = match r.start_bound() {
        Bound::Included(&a) => a,
        Bound::Excluded(&a) => a.checked_add(1).ok_or(Error::InvalidRange)?,
        Bound::Unbounded => 0,
    };
    let last = match r.end_bound() {
        Bound::Included(&b) => b,
        Bound::Excluded(&b) => b.checked_sub(1).ok_or(Error::InvalidRange)?,
        Bound::Unbounded => u64::MAX,
    };
    if first > last {
        return Err(Error::InvalidRange);
    }
    Ok((first, last))
}

/// A search window's bounds as an inclusive `[min, max]`: as [`inclusive`], but an empty or
/// inverted window is [`Error::InvalidWindow`] (the kernel's `-EINVAL` for `min > max`).
pub(crate) fn window(r: impl RangeBounds<u64>) -> Result<(u64, u64), Error> {
    inclusive(r).map_err(|_| Error::InvalidWindow)
}
