//! Typed errors of the VMA manager, mirroring the kernel's errno values.

use core::fmt;

/// Why an `Mm` operation was refused. A failing operation leaves the `Mm` as it was, except
/// mprotect, madvise and a multi-VMA mremap move, which (as in the kernel) keep the changes made
/// before the failing point.
///
/// ```
/// use maple_mm::MmError;
/// assert_eq!(MmError::Inval.errno(), -22);
/// assert_eq!(MmError::Exist.to_string(), "EEXIST: range already mapped");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmError {
    /// `-EINVAL`: bad alignment, zero length, unknown flag bits, a range that wraps or leaves the
    /// address space, or an operation the VMA type does not support.
    Inval,
    /// `-ENOMEM`: no room for the mapping, too many maps (`max_map_count`), or (mprotect/mremap)
    /// a range that is not fully mapped.
    NoMem,
    /// `-EEXIST`: `MAP_FIXED_NOREPLACE` over an existing mapping.
    Exist,
    /// `-EBUSY`: a VMA is registered to another userfaultfd context.
    Busy,
    /// `-EPERM`: an operation needs a permission the VMA lacks (`VM_MAYWRITE` for userfaultfd,
    /// a fixed mapping below `mmap_min_addr`, a privileged feature).
    Perm,
    /// `-EACCES`: the protection asked for is not allowed by the VMA's `VM_MAY*` bits.
    Access,
    /// `-EAGAIN`: try again later (userfaultfd's `mmap_changing`, a non-blocking read with
    /// nothing queued).
    Again,
    /// `-EFAULT`: an access outside every VMA, or not permitted by its protection (the SIGSEGV
    /// case), or an mremap source that does not lie in one VMA.
    Fault,
    /// `-EOVERFLOW`: a file offset plus the length overflows.
    Overflow,
    /// `-ESRCH`: the address space is not the one a userfaultfd context serves.
    Srch,
    /// `-ENOENT`: a userfaultfd fill outside a VMA registered to that context.
    NoEnt,
}

impl MmError {
    /// The kernel's negative errno for this error.
    pub const fn errno(self) -> i32 {
        match self {
            MmError::Perm => -1,
            MmError::NoEnt => -2,
            MmError::Srch => -3,
            MmError::Again => -11,
            MmError::NoMem => -12,
            MmError::Access => -13,
            MmError::Fault => -14,
            MmError::Busy => -16,
            MmError::Exist => -17,
            MmError::Inval => -22,
            MmError::Overflow => -75,
        }
    }
}

impl fmt::Display for MmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MmError::Inval => "EINVAL: invalid argument",
            MmError::NoMem => "ENOMEM: no room or range not mapped",
            MmError::Exist => "EEXIST: range already mapped",
            MmError::Busy => "EBUSY: registered to another userfaultfd",
            MmError::Perm => "EPERM: operation not permitted",
            MmError::Access => "EACCES: protection not allowed",
            MmError::Again => "EAGAIN: try again",
            MmError::Fault => "EFAULT: bad address",
            MmError::Overflow => "EOVERFLOW: offset overflows",
            MmError::Srch => "ESRCH: not this context's address space",
            MmError::NoEnt => "ENOENT: not a registered VMA",
        })
    }
}

impl std::error::Error for MmError {}
