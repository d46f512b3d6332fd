//! The context itself (`struct userfaultfd_ctx`) and what its users see of it without its
//! operations: the uapi constants, the messages, the poll bits. VMAs hold a context
//! (`vma::VmaDesc::uffd`), so this part sits below both the VMAs and the operations of
//! `uffd`, which act on VMAs.

use crate::sync::{Arc, AtomicBool, AtomicI32, AtomicU64, Condvar, IdCounter, Mutex, RwLock};
use std::collections::VecDeque;

/// `UFFD_API`: the only API version.
pub const UFFD_API: u64 = 0xAA;
/// `UFFD_USER_MODE_ONLY`: the context handles user-mode faults only (needs no privilege).
pub const UFFD_USER_MODE_ONLY: u32 = 1;
/// `O_NONBLOCK` (x86-64 value).
pub const O_NONBLOCK: u32 = 0o4000;
/// `O_CLOEXEC` (x86-64 value).
pub const O_CLOEXEC: u32 = 0o2000000;

/// `UFFD_FEATURE_*` bits (uapi), and the internal `UFFD_FEATURE_INITIALIZED`.
pub mod feature {
    /// `UFFD_FEATURE_PAGEFAULT_FLAG_WP`.
    pub const PAGEFAULT_FLAG_WP: u64 = 1 << 0;
    /// `UFFD_FEATURE_EVENT_FORK` (needs `CAP_SYS_PTRACE`).
    pub const EVENT_FORK: u64 = 1 << 1;
    /// `UFFD_FEATURE_EVENT_REMAP`.
    pub const EVENT_REMAP: u64 = 1 << 2;
    /// `UFFD_FEATURE_EVENT_REMOVE`.
    pub const EVENT_REMOVE: u64 = 1 << 3;
    /// `UFFD_FEATURE_MISSING_HUGETLBFS`.
    pub const MISSING_HUGETLBFS: u64 = 1 << 4;
    /// `UFFD_FEATURE_MISSING_SHMEM`.
    pub const MISSING_SHMEM: u64 = 1 << 5;
    /// `UFFD_FEATURE_EVENT_UNMAP`.
    pub const EVENT_UNMAP: u64 = 1 << 6;
    /// `UFFD_FEATURE_SIGBUS`: faults fail (SIGBUS) instead of blocking.
    pub const SIGBUS: u64 = 1 << 7;
    /// `UFFD_FEATURE_THREAD_ID`.
    pub const THREAD_ID: u64 = 1 << 8;
    /// `UFFD_FEATURE_MINOR_HUGETLBFS`.
    pub const MINOR_HUGETLBFS: u64 = 1 << 9;
    /// `UFFD_FEATURE_MINOR_SHMEM`.
    pub const MINOR_SHMEM: u64 = 1 << 10;
    /// `UFFD_FEATURE_EXACT_ADDRESS`.
    pub const EXACT_ADDRESS: u64 = 1 << 11;
    /// `UFFD_FEATURE_WP_HUGETLBFS_SHMEM`.
    pub const WP_HUGETLBFS_SHMEM: u64 = 1 << 12;
    /// `UFFD_FEATURE_WP_UNPOPULATED`.
    pub const WP_UNPOPULATED: u64 = 1 << 13;
    /// `UFFD_FEATURE_POISON`.
    pub const POISON: u64 = 1 << 14;
    /// `UFFD_FEATURE_WP_ASYNC` (implies `WP_UNPOPULATED`).
    pub const WP_ASYNC: u64 = 1 << 15;
    /// `UFFD_FEATURE_MOVE`.
    pub const MOVE: u64 = 1 << 16;
    /// Everything this model (like the 6.18 kernel measured here) supports: `0x1ffff`.
    pub const SUPPORTED: u64 = 0x1ffff;
    /// `UFFD_FEATURE_INITIALIZED` (internal): set by the handshake.
    pub const INITIALIZED: u64 = 1 << 31;
}

/// `UFFDIO_REGISTER_MODE_*`.
pub mod mode {
    /// `UFFDIO_REGISTER_MODE_MISSING`.
    pub const MISSING: u64 = 1;
    /// `UFFDIO_REGISTER_MODE_WP`.
    pub const WP: u64 = 2;
    /// `UFFDIO_REGISTER_MODE_MINOR`.
    pub const MINOR: u64 = 4;
}

/// Bits of the `ioctls` masks (`1 << _UFFDIO_*`).
pub mod ioctl {
    /// `_UFFDIO_REGISTER`.
    pub const REGISTER: u64 = 1 << 0x00;
    /// `_UFFDIO_UNREGISTER`.
    pub const UNREGISTER: u64 = 1 << 0x01;
    /// `_UFFDIO_WAKE`.
    pub const WAKE: u64 = 1 << 0x02;
    /// `_UFFDIO_COPY`.
    pub const COPY: u64 = 1 << 0x03;
    /// `_UFFDIO_ZEROPAGE`.
    pub const ZEROPAGE: u64 = 1 << 0x04;
    /// `_UFFDIO_MOVE`.
    pub const MOVE: u64 = 1 << 0x05;
    /// `_UFFDIO_WRITEPROTECT`.
    pub const WRITEPROTECT: u64 = 1 << 0x06;
    /// `_UFFDIO_CONTINUE`.
    pub const CONTINUE: u64 = 1 << 0x07;
    /// `_UFFDIO_POISON`.
    pub const POISON: u64 = 1 << 0x08;
    /// `_UFFDIO_API`.
    pub const API: u64 = 1 << 0x3F;
    /// `UFFD_API_IOCTLS`.
    pub const API_IOCTLS: u64 = REGISTER | UNREGISTER | API;
    /// `UFFD_API_RANGE_IOCTLS`.
    pub const RANGE_IOCTLS: u64 = WAKE | COPY | ZEROPAGE | MOVE | WRITEPROTECT | CONTINUE | POISON;
    /// `UFFD_API_RANGE_IOCTLS_BASIC` (hugetlb).
    pub const RANGE_IOCTLS_BASIC: u64 = WAKE | COPY | WRITEPROTECT | CONTINUE | POISON;
}

/// `UFFD_PAGEFAULT_FLAG_WRITE`.
pub const UFFD_PAGEFAULT_FLAG_WRITE: u64 = 1;

/// Huge page size for hugetlb alignment rules (2 MiB).
pub const HPAGE_SIZE: u64 = 2 << 20;

/// What `UFFDIO_API` writes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UffdioApi {
    /// Every feature the kernel supports.
    pub features: u64,
    /// `UFFD_API_IOCTLS`.
    pub ioctls: u64,
}

/// A message read from a context (`struct uffd_msg`).
#[derive(Clone, Debug)]
pub enum UffdMsg {
    /// `UFFD_EVENT_PAGEFAULT` (0x12).
    Pagefault {
        /// `UFFD_PAGEFAULT_FLAG_*`.
        flags: u64,
        /// The faulting address, page aligned unless `EXACT_ADDRESS`.
        address: u64,
    },
    /// `UFFD_EVENT_FORK` (0x13): the child's context (the kernel hands out a new fd for it).
    Fork {
        /// The child's context.
        ctx: Arc<UffdCtx>,
    },
    /// `UFFD_EVENT_REMAP` (0x14).
    Remap {
        /// Old address.
        from: u64,
        /// New address.
        to: u64,
        /// Length moved.
        len: u64,
    },
    /// `UFFD_EVENT_REMOVE` (0x15).
    Remove {
        /// First address.
        start: u64,
        /// One past the last address.
        end: u64,
    },
    /// `UFFD_EVENT_UNMAP` (0x16).
    Unmap {
        /// First address.
        start: u64,
        /// One past the last address.
        end: u64,
    },
}

impl UffdMsg {
    /// The `event` byte of the uapi message.
    pub fn event(&self) -> u8 {
        match self {
            UffdMsg::Pagefault { .. } => 0x12,
            UffdMsg::Fork { .. } => 0x13,
            UffdMsg::Remap { .. } => 0x14,
            UffdMsg::Remove { .. } => 0x15,
            UffdMsg::Unmap { .. } => 0x16,
        }
    }
}

/// `poll()` result bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PollEvents {
    /// `EPOLLIN`: a fault or event is queued.
    pub input: bool,
    /// `EPOLLERR`: not initialised, or the context was not created `O_NONBLOCK`.
    pub err: bool,
    /// `EPOLLHUP`: released.
    pub hup: bool,
}

/// A thread blocked in a missing-page fault.
#[derive(Debug)]
pub(super) struct FaultWaiter {
    pub(super) address: u64,
    pub(super) flags: u64,
    pub(super) woken: AtomicBool,
}

/// A generator blocked until its event is read.
#[derive(Debug)]
pub(super) struct EventWaiter {
    pub(super) msg: UffdMsg,
    pub(super) done: AtomicBool,
}

#[derive(Debug, Default)]
pub(super) struct Queues {
    pub(super) fault_pending: VecDeque<Arc<FaultWaiter>>,
    pub(super) fault_read: Vec<Arc<FaultWaiter>>,
    pub(super) events: VecDeque<Arc<EventWaiter>>,
}

pub(super) static NEXT_CTX_ID: IdCounter = IdCounter::new(1);

/// A userfaultfd context (`struct userfaultfd_ctx`). VMAs hold it in an
/// `arc_swap::ArcSwapOption`; two VMAs may merge only if they hold the same `Arc`.
///
/// ```
/// use maple_mm::uffd::{feature, mode, UffdCtx, UffdMsg, UFFD_API, UFFD_USER_MODE_ONLY, O_NONBLOCK};
/// use maple_mm::{MapFlags, MapSource, Mm, MmError, Prot, PAGE_SIZE};
/// use std::sync::Arc;
///
/// let mm = Arc::new(Mm::new());
/// let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::READ | Prot::WRITE, MapFlags::PRIVATE, MapSource::Anon).unwrap();
/// let ctx = UffdCtx::new(&mm, UFFD_USER_MODE_ONLY | O_NONBLOCK, false).unwrap();
/// ctx.api(UFFD_API, 0).unwrap();
/// ctx.register(&mm, a + PAGE_SIZE, 2 * PAGE_SIZE, mode::MISSING).unwrap();
/// assert_eq!(mm.map_count(), 3); // split around the registered pages
///
/// // A fault on a registered, unpopulated page blocks until the monitor resolves it.
/// let faulter = { let mm = Arc::clone(&mm); std::thread::spawn(move || {
///     let mut b = [0u8; 2];
///     mm.read_bytes(a + PAGE_SIZE, &mut b).unwrap();
///     b
/// })};
/// let msg = loop {
///     match ctx.read(false) { Ok(m) => break m, Err(MmError::Again) => std::thread::yield_now(), Err(e) => panic!("{e}") }
/// };
/// let UffdMsg::Pagefault { address, .. } = msg else { panic!() };
/// assert_eq!(address, a + PAGE_SIZE);
/// ctx.copy(&mm, address, b"hi", false).unwrap();
/// assert_eq!(&faulter.join().unwrap(), b"hi");
///
/// ctx.release(Some(&mm)); // closing the fd: registrations cleared, VMAs merged again
/// assert_eq!(mm.map_count(), 1);
/// ```
pub struct UffdCtx {
    pub(super) id: u64,
    pub(super) mm_id: u64,
    pub(super) flags: u32,
    /// `CAP_SYS_PTRACE` of the creator (checked by `UFFDIO_API` for `EVENT_FORK`).
    pub(super) privileged: bool,
    pub(super) features: AtomicU64,
    pub(super) released: AtomicBool,
    pub(super) mmap_changing: AtomicI32,
    pub(super) map_changing_lock: RwLock<()>,
    pub(super) q: Mutex<Queues>,
    /// `fd_wqh`: readers waiting for a message.
    pub(super) readers: Condvar,
    /// `fault_wqh` and `event_wqh`: faulting threads and event generators.
    pub(super) waiters: Condvar,
}

impl std::fmt::Debug for UffdCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UffdCtx")
            .field("id", &self.id)
            .field("mm_id", &self.mm_id)
            .field("features", &format_args!("{:#x}", self.features()))
            .field("released", &self.is_released())
            .field("mmap_changing", &self.mmap_changing())
            .finish()
    }
}
