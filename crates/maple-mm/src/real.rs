//! A real userfaultfd on Linux, through rustix, to cross-check the model against the kernel
//! (`tests/uffd_real.rs`).
//!
//! The fd is created with the `userfaultfd(2)` syscall and `UFFD_USER_MODE_ONLY`, which needs no
//! privilege even with `vm.unprivileged_userfaultfd = 0`; the ioctls use the stable uapi layouts
//! declared here. Everything acts only on a [`RealMapping`] this module created, so the safe API
//! cannot be pointed at memory the program uses otherwise.
//!
//! ```no_run
//! use maple_mm::real::{RealMapping, RealUffd};
//! use maple_mm::uffd::{mode, UFFD_USER_MODE_ONLY, O_NONBLOCK, O_CLOEXEC};
//! let uffd = RealUffd::open(UFFD_USER_MODE_ONLY | O_NONBLOCK | O_CLOEXEC).expect("userfaultfd");
//! uffd.api(0).unwrap();
//! let m = RealMapping::new(4).unwrap();
//! uffd.register(&m, 0, 4 * 4096, mode::MISSING).unwrap();
//! ```

use std::ffi::c_void;
use std::io;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;

use rustix::ioctl::{ioctl, opcode, Opcode, Updater};
use rustix::mm::{MapFlags as RMapFlags, MprotectFlags, ProtFlags, UserfaultfdFlags};

use super::uffd::{UffdioApi, UFFD_API};
use super::{Prot, PAGE_SIZE};

#[repr(C)]
#[derive(Default)]
struct UffdioApiRaw {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Default)]
struct UffdioCopy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}

const UFFDIO_API: Opcode = opcode::read_write::<UffdioApiRaw>(0xAA, 0x3F);
const UFFDIO_REGISTER: Opcode = opcode::read_write::<UffdioRegister>(0xAA, 0x00);
const UFFDIO_UNREGISTER: Opcode = opcode::read::<UffdioRange>(0xAA, 0x01);
const UFFDIO_WAKE: Opcode = opcode::read::<UffdioRange>(0xAA, 0x02);
const UFFDIO_COPY: Opcode = opcode::read_write::<UffdioCopy>(0xAA, 0x03);

/// An anonymous private read-write mapping of whole pages, unmapped on drop.
pub struct RealMapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; it is only read through volatile
// single-byte loads and changed by the kernel (mprotect, UFFDIO_COPY) — no Rust reference to it
// exists, so sharing the handle between threads cannot create aliasing references.
unsafe impl Send for RealMapping {}
// SAFETY: as above.
unsafe impl Sync for RealMapping {}

impl RealMapping {
    /// Maps `pages` pages.
    pub fn new(pages: usize) -> io::Result<Self> {
        let len = pages
            .checked_mul(PAGE_SIZE as usize)
            .filter(|&l| l > 0)
            .ok_or(io::ErrorKind::InvalidInput)?;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing does not
        // overlap any memory the program uses.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                RMapFlags::PRIVATE,
            )
        }?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(io::ErrorKind::Other)?;
        Ok(RealMapping { ptr, len })
    }

    /// The first address.
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// Always `false`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, offset: u64, len: u64) -> io::Result<()> {
        if offset % PAGE_SIZE != 0
            || len == 0
            || len % PAGE_SIZE != 0
            || offset.checked_add(len).is_none_or(|e| e > self.len())
        {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        Ok(())
    }

    /// `mprotect` of `[offset, offset + len)` (page multiples inside the mapping).
    pub fn protect(&self, offset: u64, len: u64, prot: Prot) -> io::Result<()> {
        self.check(offset, len)?;
        let mut f = MprotectFlags::empty();
        if prot.bits() & 1 != 0 {
            f |= MprotectFlags::READ;
        }
        if prot.bits() & 2 != 0 {
            f |= MprotectFlags::WRITE;
        }
        if prot.bits() & 4 != 0 {
            f |= MprotectFlags::EXEC;
        }
        // SAFETY: the range lies inside this mapping (checked); no Rust reference to the memory
        // exists, so changing its protection cannot invalidate one.
        unsafe {
            rustix::mm::mprotect(
                self.ptr.as_ptr().add(offset as usize).cast::<c_void>(),
                len as usize,
                f,
            )
        }?;
        Ok(())
    }

    /// Reads the byte at `offset` as user code would (a page fault on a registered, missing
    /// page blocks until a handler resolves it; a fault on `PROT_NONE` kills the process, so
    /// `offset` must be readable).
    pub fn read_byte(&self, offset: u64) -> u8 {
        assert!(offset < self.len(), "offset outside the mapping");
        // SAFETY: in bounds (asserted) of a live mapping; a volatile load creates no reference
        // and tolerates the kernel filling the page concurrently.
        unsafe { self.ptr.as_ptr().add(offset as usize).read_volatile() }
    }
}

impl Drop for RealMapping {
    fn drop(&mut self) {
        // SAFETY: the whole mapping created in `new`, unmapped once.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast::<c_void>(), self.len) };
    }
}

/// A message read from a real userfaultfd (the first fields of `struct uffd_msg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RealMsg {
    /// The `event` byte (`0x12` page fault, ...).
    pub event: u8,
    /// Page-fault flags.
    pub flags: u64,
    /// Page-fault address (or the event's first argument).
    pub address: u64,
}

/// A real userfaultfd.
pub struct RealUffd {
    fd: OwnedFd,
}

impl RealUffd {
    /// `userfaultfd(flags)` (`O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY` bits).
    pub fn open(flags: u32) -> io::Result<Self> {
        let f = UserfaultfdFlags::from_bits_retain(flags);
        // SAFETY: creating the fd has no memory effect by itself; the fd is only ever used by
        // this type, on mappings it owns.
        let fd = unsafe { rustix::mm::userfaultfd(f) }?;
        Ok(RealUffd { fd })
    }

    /// `UFFDIO_API` with `features`.
    pub fn api(&self, features: u64) -> io::Result<UffdioApi> {
        let mut a = UffdioApiRaw {
            api: UFFD_API,
            features,
            ioctls: 0,
        };
        // SAFETY: `UFFDIO_API` reads and writes exactly a `struct uffdio_api`, which this
        // `#[repr(C)]` struct is.
        unsafe { ioctl(&self.fd, Updater::<UFFDIO_API, UffdioApiRaw>::new(&mut a)) }?;
        Ok(UffdioApi {
            features: a.features,
            ioctls: a.ioctls,
        })
    }

    /// `UFFDIO_REGISTER` of `[offset, offset + len)` of `m` in `mode`; returns the ioctls mask.
    pub fn register(&self, m: &RealMapping, offset: u64, len: u64, mode: u64) -> io::Result<u64> {
        m.check(offset, len)?;
        let mut r = UffdioRegister {
            range: UffdioRange {
                start: m.addr() + offset,
                len,
            },
            mode,
            ioctls: 0,
        };
        // SAFETY: a `struct uffdio_register` for a range of a mapping this program owns and only
        // reads through volatile loads.
        unsafe {
            ioctl(
                &self.fd,
                Updater::<UFFDIO_REGISTER, UffdioRegister>::new(&mut r),
            )
        }?;
        Ok(r.ioctls)
    }

    /// `UFFDIO_UNREGISTER` of `[offset, offset + len)` of `m`.
    pub fn unregister(&self, m: &RealMapping, offset: u64, len: u64) -> io::Result<()> {
        m.check(offset, len)?;
        let mut r = UffdioRange {
            start: m.addr() + offset,
            len,
        };
        // SAFETY: a `struct uffdio_range` inside a mapping this program owns.
        unsafe {
            ioctl(
                &self.fd,
                Updater::<UFFDIO_UNREGISTER, UffdioRange>::new(&mut r),
            )
        }?;
        Ok(())
    }

    /// `UFFDIO_WAKE` of `[offset, offset + len)` of `m`.
    pub fn wake(&self, m: &RealMapping, offset: u64, len: u64) -> io::Result<()> {
        m.check(offset, len)?;
        let mut r = UffdioRange {
            start: m.addr() + offset,
            len,
        };
        // SAFETY: as for `unregister`.
        unsafe { ioctl(&self.fd, Updater::<UFFDIO_WAKE, UffdioRange>::new(&mut r)) }?;
        Ok(())
    }

    /// `UFFDIO_COPY` of one page holding `data` (zero-padded) to `offset` of `m`.
    pub fn copy(&self, m: &RealMapping, offset: u64, data: &[u8]) -> io::Result<u64> {
        m.check(offset, PAGE_SIZE)?;
        let mut page = vec![0u8; PAGE_SIZE as usize];
        let n = data.len().min(page.len());
        page[..n].copy_from_slice(&data[..n]);
        let mut c = UffdioCopy {
            dst: m.addr() + offset,
            src: page.as_ptr() as u64,
            len: PAGE_SIZE,
            mode: 0,
            copy: 0,
        };
        // SAFETY: `src` is a live page-sized buffer; `dst` a page of a mapping this program owns
        // (the kernel only fills registered, missing pages of it).
        unsafe { ioctl(&self.fd, Updater::<UFFDIO_COPY, UffdioCopy>::new(&mut c)) }?;
        Ok(c.copy as u64)
    }

    /// Reads one message; `Ok(None)` when nothing is queued (the fd must be `O_NONBLOCK`).
    pub fn read_msg(&self) -> io::Result<Option<RealMsg>> {
        let mut buf = [0u8; 32];
        match rustix::io::read(&self.fd, &mut buf) {
            Ok(32) => {
                let u = |o: usize| u64::from_ne_bytes(buf[o..o + 8].try_into().unwrap_or([0; 8]));
                Ok(Some(RealMsg {
                    event: buf[0],
                    flags: u(8),
                    address: u(16),
                }))
            }
            Ok(_) => Err(io::ErrorKind::UnexpectedEof.into()),
            Err(rustix::io::Errno::AGAIN) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}
