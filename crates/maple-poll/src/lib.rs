//! The kernel side of `poll(2)` in userspace, on the maple tree: the proposed patch "fs/select.c:
//! batch user writes in do_sys_poll" and what Linux merged instead, side by side.
//!
//! - A **file table** on an allocation tree ([`FdTable`]): descriptors are allocated lowest-free
//!   by gap search, like `get_unused_fd_flags`; `close`, `dup`. Pollable objects sit behind
//!   [`FileOperations`]: an in-memory regular file (no `->poll`: [`DEFAULT_POLLMASK`]), an
//!   [`EventFd`], a pipe ([`pipe`]: both ends, `POLLHUP`/`POLLERR` when the peer closes) and a
//!   [`RealFile`] adaptor that asks the OS through `poll(2)`.
//! - **User memory** ([`UserMemory`]): the caller's `pollfd` array lives in a mapping that
//!   kernel-side code ([`Uaccess`]) may touch only inside a user-access window
//!   ([`Uaccess::user_write_access_begin`] → [`UserWindow`]), after `access_ok` on the whole
//!   range, with `EFAULT` and the window closed on every error path. Windows are counted and
//!   costed ([`WindowMode`]): a calibrated model by default ([`WindowCost::SMAP`]), or real,
//!   enforcing windows with x86 protection keys where the CPU and kernel have them.
//! - **`do_sys_poll`** ([`Task::do_sys_poll`]): copy-in by chunks as the kernel builds its
//!   `poll_list` ([`N_STACK_PPS`] = 30 entries inline, then chunks of [`POLLFD_PER_PAGE`] = 510),
//!   `do_poll`/`do_pollfd` semantics (negative fd ignored, closed fd → `POLLNVAL`, `ERR|HUP`
//!   always in the filter, timeout 0 = one pass, real blocking with wake-ups), and the four
//!   copy-out strategies of [`CopyOut`].
//! - **will-it-scale** drivers for poll1 and poll2 (`will_it_scale`, an experiment harness
//!   behind the `bench-internals` feature).
//!
//! ```
//! use maple_poll::{CopyOut, FdTable, PollFd, Task, UserMemory, WindowMode, POLLIN, POLLOUT};
//! use std::sync::Arc;
//!
//! let files = Arc::new(FdTable::new());
//! let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
//! let [rfd, wfd] = files.pipe().unwrap();
//! let efd = files.eventfd(0, false).unwrap();
//!
//! // The "user program" fills its pollfd array in its own memory.
//! let ufds = mm.base();
//! mm.write_pollfds(ufds, &[PollFd::new(rfd, POLLIN), PollFd::new(wfd, POLLOUT), PollFd::new(efd, POLLIN)])
//!     .unwrap();
//!
//! let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
//! task.set_copy_out(CopyOut::SingleWindowUnsafe);
//! assert_eq!(task.sys_poll(ufds, 3, 0), Ok(1)); // only the pipe's write end is ready
//! let mut out = [PollFd::default(); 3];
//! mm.read_pollfds(ufds, &mut out).unwrap();
//! assert_eq!(out.map(|p| p.revents), [0, POLLOUT, 0]);
//!
//! // Windows: one copy-in (one chunk), one copy-out (the merged single window).
//! let st = task.stats();
//! assert_eq!((st.read_windows, st.write_windows), (1, 1));
//! ```
//!
//! ## Tour: the copy-out strategies
//!
//! The kernel side of `poll(2)` on a descriptor table that is a maple tree: a
//! [`Task`] copies the caller's `pollfd` array in from [`UserMemory`]
//! by chunks (30 entries inline, then 510 per chunk), polls every descriptor, and copies the
//! results out through user-access windows. How many windows that takes is the subject of the
//! seed patch "fs/select.c: batch user writes in do_sys_poll": [`CopyOut`]
//! selects one window per descriptor (before), one per chunk (the seed, in two variants) or one
//! for the whole array (what Linux merged). Window counts are deterministic; their cost is a
//! calibrated model by default or real protection-key windows where the CPU has them
//! ([`WindowMode`]).
//!
//! ```
//! # #[cfg(target_os = "linux")] {
//! use maple_poll::{CopyOut, FdTable, PollFd, Task, UserMemory, WindowMode, POLLOUT};
//! use std::sync::Arc;
//!
//! let files = Arc::new(FdTable::new());
//! let fds: Vec<PollFd> = (0..100)
//!     .map(|_| PollFd::new(files.eventfd(0, false).unwrap(), POLLOUT))
//!     .collect();
//! assert_eq!(fds[0].fd, 0); // lowest free descriptor, found by gap search
//! let mem = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
//! let ufds = mem.base();
//! mem.write_pollfds(ufds, &fds).unwrap();
//!
//! let mut task = Task::new(Arc::clone(&files), Arc::clone(&mem));
//! let mut windows = vec![];
//! for strategy in CopyOut::ALL {
//!     task.set_copy_out(strategy);
//!     task.reset_stats();
//!     assert_eq!(task.sys_poll(ufds, 100, 0), Ok(100)); // every eventfd is writable
//!     let st = task.stats();
//!     assert_eq!(st.read_windows, 2); // copy-in: 30 inline + one chunk of 70
//!     assert_eq!(st.write_windows, strategy.copy_out_windows(100));
//!     windows.push(st.write_windows);
//! }
//! // per descriptor, per chunk (revents only), per chunk (whole entries), one window
//! assert_eq!(windows, [100, 2, 2, 1]);
//! # }
//! ```
//!

// The model drives real descriptors and mappings through Linux system calls.
#![cfg(target_os = "linux")]

mod calibrate;
mod fdtable;
mod file;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_knobs;
mod select;
mod sync;
mod sys;
mod uaccess;
mod wait;
#[cfg(feature = "bench-internals")]
pub mod will_it_scale;

#[cfg(test)]
mod tests;

use core::fmt;

pub use calibrate::window_bookkeeping_ns;
pub use fdtable::{Fd, FdTable};
pub use file::{
    pipe, EventFd, File, FileOperations, PipeReader, PipeWriter, RealFile, RegularFile,
};
pub use select::{CopyOut, PollTimeout, Task, N_INLINE_POLL_ENTRIES, N_STACK_PPS, POLLFD_PER_PAGE};
pub use uaccess::{
    pkeys_available, Enforcement, Uaccess, UaccessStats, UserMemory, UserWindow, WindowCost,
    WindowMode,
};
pub use wait::{PollTable, WaitQueueHead};

/// A poll event mask (the kernel's `__poll_t`, restricted to the 16 bits `pollfd` carries).
pub type PollMask = u16;

/// There is data to read.
pub const POLLIN: PollMask = 0x0001;
/// There is urgent data to read.
pub const POLLPRI: PollMask = 0x0002;
/// Writing now will not block.
pub const POLLOUT: PollMask = 0x0004;
/// Error condition (always reported, whatever `events` asks).
pub const POLLERR: PollMask = 0x0008;
/// Hung up (always reported, whatever `events` asks).
pub const POLLHUP: PollMask = 0x0010;
/// Invalid request: the descriptor is not open.
pub const POLLNVAL: PollMask = 0x0020;
/// Normal data may be read.
pub const POLLRDNORM: PollMask = 0x0040;
/// Priority band data may be read.
pub const POLLRDBAND: PollMask = 0x0080;
/// Normal data may be written.
pub const POLLWRNORM: PollMask = 0x0100;
/// Priority band data may be written.
pub const POLLWRBAND: PollMask = 0x0200;
/// The peer shut down its writing half (sockets).
pub const POLLRDHUP: PollMask = 0x2000;

/// What `vfs_poll` returns for a file without `->poll` (regular files on ext4 or tmpfs):
/// `POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM`.
pub const DEFAULT_POLLMASK: PollMask = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;

/// `demangle_poll`: user `events` bits to the kernel's mask. The identity on x86-64, where the
/// `POLL*` and `EPOLL*` values coincide.
#[inline]
pub const fn demangle_poll(events: u16) -> PollMask {
    events
}

/// `mangle_poll`: the kernel's mask to user `revents` bits (the identity on x86-64).
#[inline]
pub const fn mangle_poll(mask: PollMask) -> u16 {
    mask
}

/// `struct pollfd`: 8 bytes, `revents` at offset 6. `events`/`revents` are C `short`s, kept
/// unsigned here because they are bit masks; the layout is identical.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PollFd {
    /// The descriptor; negative entries are ignored (their `revents` become 0).
    pub fd: i32,
    /// Requested events.
    pub events: u16,
    /// Returned events, written by the kernel.
    pub revents: u16,
}

impl PollFd {
    /// `sizeof(struct pollfd)`.
    pub const SIZE: u64 = 8;
    /// Offset of `events` in the structure.
    pub const EVENTS_OFFSET: u64 = 4;
    /// Offset of `revents` in the structure.
    pub const REVENTS_OFFSET: u64 = 6;

    /// An entry asking for `events` on `fd`, with `revents` cleared.
    pub const fn new(fd: i32, events: PollMask) -> Self {
        PollFd {
            fd,
            events,
            revents: 0,
        }
    }
}

/// The kernel errors this model returns, by their errno names.
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Errno {
    /// Bad address: a user range failed `access_ok` or touched an unmapped page.
    EFAULT,
    /// Invalid argument (for `poll`: `nfds` above `RLIMIT_NOFILE`).
    EINVAL,
    /// Out of memory (a `poll_list` chunk or wait-table page could not be allocated).
    ENOMEM,
    /// Bad file descriptor.
    EBADF,
    /// Too many open files: no free descriptor below `RLIMIT_NOFILE`.
    EMFILE,
    /// Try again: a non-blocking read or write would block.
    EAGAIN,
    /// Broken pipe: writing to a pipe with no reader.
    EPIPE,
    /// Another OS error from a real descriptor (the positive errno).
    Os(i32),
}

impl Errno {
    /// The kernel's negative return value for this error.
    pub const fn errno(self) -> i32 {
        match self {
            Errno::EFAULT => -14,
            Errno::EINVAL => -22,
            Errno::ENOMEM => -12,
            Errno::EBADF => -9,
            Errno::EMFILE => -24,
            Errno::EAGAIN => -11,
            Errno::EPIPE => -32,
            Errno::Os(e) => -e,
        }
    }

    pub(crate) fn from_io(e: rustix::io::Errno) -> Self {
        match e {
            rustix::io::Errno::AGAIN => Errno::EAGAIN,
            rustix::io::Errno::BADF => Errno::EBADF,
            rustix::io::Errno::FAULT => Errno::EFAULT,
            rustix::io::Errno::INVAL => Errno::EINVAL,
            rustix::io::Errno::NOMEM => Errno::ENOMEM,
            rustix::io::Errno::MFILE => Errno::EMFILE,
            rustix::io::Errno::PIPE => Errno::EPIPE,
            other => Errno::Os(other.raw_os_error()),
        }
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Errno::EFAULT => f.write_str("EFAULT: bad address"),
            Errno::EINVAL => f.write_str("EINVAL: invalid argument"),
            Errno::ENOMEM => f.write_str("ENOMEM: out of memory"),
            Errno::EBADF => f.write_str("EBADF: bad file descriptor"),
            Errno::EMFILE => f.write_str("EMFILE: too many open files"),
            Errno::EAGAIN => f.write_str("EAGAIN: resource temporarily unavailable"),
            Errno::EPIPE => f.write_str("EPIPE: broken pipe"),
            Errno::Os(e) => write!(f, "OS error {e}"),
        }
    }
}

impl std::error::Error for Errno {}

/// The real `poll(2)` of the running kernel on real descriptors, for comparison with the model:
/// the same `pollfd` layout, negative descriptors ignored, closed ones `POLLNVAL`. Retries on
/// `EINTR`; other failures are returned as [`Errno`].
///
/// ```
/// use maple_poll::{os_poll, PollFd, POLLNVAL};
/// let mut fds = [PollFd::new(-1, 0), PollFd::new(999_999, 0)];
/// assert_eq!(os_poll(&mut fds, 0), Ok(1));
/// assert_eq!((fds[0].revents, fds[1].revents), (0, POLLNVAL));
/// ```
pub fn os_poll(fds: &mut [PollFd], timeout_msecs: i32) -> Result<usize, Errno> {
    loop {
        match sys::os_poll(fds, timeout_msecs) {
            Ok(n) => return Ok(n),
            Err(e) if e == libc::EINTR => continue,
            Err(e) => return Err(Errno::from_io(rustix::io::Errno::from_raw_os_error(e))),
        }
    }
}
