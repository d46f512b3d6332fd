//! Typed errors of the tree API (the kernel's `-EINVAL`, `-EEXIST`, `-EBUSY`, ...).

use alloc::string::String;
use core::fmt;

/// Why a tree operation was refused. Nothing is written when an operation returns an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Error {
    /// An empty or inverted range: `first > last` once the bounds are made inclusive (`5..5`,
    /// `9..=3`, `..0`; see [`tree::inclusive`](crate::tree::inclusive)) (`-EINVAL`).
    InvalidRange,
    /// An index of the range already holds an entry (insert; `-EEXIST`).
    Occupied,
    /// No free range of the requested size in the window (`-EBUSY`).
    NoRoom,
    /// Bad search window: `min > max`, size 0, or a size larger than the window (`-EINVAL`).
    InvalidWindow,
    /// Allocation on a tree created without gap tracking (`-EINVAL`).
    NotAllocTree,
    /// A reserved entry where it is not allowed (`-EINVAL`).
    Reserved,
    /// `dup` into a tree that is not empty or has other attributes (`-EINVAL`).
    DupMismatch,
    /// `store_prealloc` without a `preallocate` of the cursor's current range (`-EINVAL`).
    NotPreallocated,
    /// An alignment that is not a power of two (`-EINVAL`).
    InvalidAlignment,
    /// Nothing is allocated at that range (a free of an allocator range;
    /// `-ENOENT`).
    NotAllocated,
    /// A broken structural invariant, from a [`ValidateError`] converted by `?` (`-EINVAL`).
    ///
    /// Carries no message, so that `Error` stays `Copy`: call
    /// [`MapleTree::validate`](crate::MapleTree::validate) directly to read which invariant broke
    /// and where.
    Invalid,
}

impl Error {
    /// The kernel's negative errno for this error.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// let tree = MapleTree::<Value>::new();
    /// let err = tree.alloc_range(0..=9, 1, Value::new(1)).unwrap_err();
    /// assert_eq!(err, Error::NotAllocTree);
    /// assert_eq!(err.errno(), -22); // -EINVAL
    /// assert_eq!(Error::Occupied.errno(), -17); // -EEXIST
    /// ```
    pub const fn errno(self) -> i32 {
        match self {
            Error::Occupied => -17,    // EEXIST
            Error::NoRoom => -16,      // EBUSY
            Error::NotAllocated => -2, // ENOENT
            _ => -22,                  // EINVAL
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::InvalidRange => "invalid range: empty or first > last",
            Error::Occupied => "range is occupied",
            Error::NoRoom => "no free range of that size in the window",
            Error::InvalidWindow => "invalid search window",
            Error::NotAllocTree => "allocation needs a tree with gap tracking",
            Error::Reserved => "reserved entry not allowed here",
            Error::DupMismatch => "dup target must be empty and of the same kind",
            Error::NotPreallocated => "store_prealloc without preallocate of this range",
            Error::InvalidAlignment => "alignment is not a power of two",
            Error::NotAllocated => "nothing is allocated at that range",
            Error::Invalid => "a tree invariant is broken (see MapleTree::validate)",
        })
    }
}

impl core::error::Error for Error {}

/// A broken invariant becomes [`Error::Invalid`], so that `?` on
/// [`MapleTree::validate`](crate::MapleTree::validate) works in a function returning
/// [`Error`]. The message is not kept (`Error` is `Copy`).
///
/// ```
/// use maple_tree::{Error, MapleTree, Value};
///
/// fn checked(tree: &MapleTree<Value>) -> Result<usize, Error> {
///     tree.validate()?;
///     Ok(tree.len())
/// }
/// let tree = MapleTree::new();
/// tree.store_range(0..=9, Value::new(1))?;
/// assert_eq!(checked(&tree), Ok(1));
/// # Ok::<(), Error>(())
/// ```
impl From<ValidateError> for Error {
    fn from(_: ValidateError) -> Self {
        Error::Invalid
    }
}

/// A broken invariant, with where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValidateError(pub(crate) String);

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "maple tree invalid: {}", self.0)
    }
}

impl core::error::Error for ValidateError {}
