//! `fs/select.c`'s poll: `do_sys_poll` (chunked copy-in, `do_poll`, copy-out by one of four
//! strategies), `do_poll` and `do_pollfd`.

use crate::sync::Arc;
use std::time::{Duration, Instant};

use super::fdtable::FdTable;
use super::uaccess::{Uaccess, UaccessStats, UserMemory};
use super::wait::{PollTable, PollWqueues};
use super::{demangle_poll, mangle_poll, Errno, PollFd, PollMask, POLLERR, POLLHUP, POLLNVAL};

pub use super::wait::N_INLINE_POLL_ENTRIES;

/// Entries of the `poll_list` head kept on the stack: (`POLL_STACK_ALLOC` 256 − 16-byte header)
/// / 8.
pub const N_STACK_PPS: usize = 30;
/// Entries per further `poll_list` chunk (`POLLFD_PER_PAGE`): (4096 − 16) / 8.
pub const POLLFD_PER_PAGE: usize = 510;

/// How `do_sys_poll` writes results back to user memory (per descriptor as before, or batched as
/// in "fs/select.c: batch user writes in do_sys_poll").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CopyOut {
    /// Up to v5.10: `__put_user(revents)` per descriptor, each its own window: `n` windows.
    PerFdPutUser,
    /// Seed 002 v1 (Axtens, Aug 2020): per chunk, one window and `unsafe_put_user(revents)` per
    /// entry: `c` windows, 2 bytes per descriptor.
    PerChunkUnsafe,
    /// Seed 002 v2 (the posted seed): per chunk, `copy_to_user` of the whole kernel copy: `c`
    /// windows, 8 bytes per descriptor, **overwriting `fd` and `events`** that another thread may
    /// have changed meanwhile.
    PerChunkCopyToUser,
    /// What Linux merged (ef0ba05538, v5.11): one window over the whole array,
    /// `unsafe_put_user(revents)` per entry: 1 window.
    #[default]
    SingleWindowUnsafe,
}

impl CopyOut {
    /// All four, oldest first.
    pub const ALL: [CopyOut; 4] = [
        CopyOut::PerFdPutUser,
        CopyOut::PerChunkUnsafe,
        CopyOut::PerChunkCopyToUser,
        CopyOut::SingleWindowUnsafe,
    ];

    /// A short label.
    pub const fn name(self) -> &'static str {
        match self {
            CopyOut::PerFdPutUser => "per-fd __put_user (<=5.10)",
            CopyOut::PerChunkUnsafe => "per-chunk unsafe_put_user (seed v1)",
            CopyOut::PerChunkCopyToUser => "per-chunk copy_to_user (seed v2)",
            CopyOut::SingleWindowUnsafe => "single window (merged ef0ba05538)",
        }
    }

    /// Copy-out windows for `nfds` entries: `n`, `c`, `c` or 1, where `c` is the number of
    /// `poll_list` chunks ([`chunks`](Self::chunks)).
    ///
    /// ```
    /// use maple_poll::CopyOut;
    /// let w: Vec<u64> = CopyOut::ALL.iter().map(|s| s.copy_out_windows(128)).collect();
    /// assert_eq!(w, [128, 2, 2, 1]);
    /// assert_eq!(CopyOut::chunks(1000), 3);
    /// ```
    pub const fn copy_out_windows(self, nfds: u64) -> u64 {
        match self {
            CopyOut::PerFdPutUser => nfds,
            CopyOut::PerChunkUnsafe | CopyOut::PerChunkCopyToUser => Self::chunks(nfds),
            CopyOut::SingleWindowUnsafe => 1,
        }
    }

    /// `poll_list` chunks for `nfds` entries: the stack head (always there, even when empty),
    /// then one per 510 further entries.
    pub const fn chunks(nfds: u64) -> u64 {
        let n = N_STACK_PPS as u64;
        if nfds <= n {
            1
        } else {
            1 + (nfds - n).div_ceil(POLLFD_PER_PAGE as u64)
        }
    }

    /// Copy-in windows for `nfds` entries: one `copy_from_user` per non-empty chunk.
    pub const fn copy_in_windows(nfds: u64) -> u64 {
        if nfds == 0 {
            0
        } else {
            Self::chunks(nfds)
        }
    }
}

/// The `poll` timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollTimeout {
    /// Negative milliseconds: wait until something is ready.
    Infinite,
    /// Wait at most this long; zero means exactly one pass with no wait-queue registration.
    After(Duration),
}

impl PollTimeout {
    /// From `poll`'s `int timeout_msecs`.
    pub fn from_msecs(ms: i32) -> Self {
        match u64::try_from(ms) {
            Ok(ms) => PollTimeout::After(Duration::from_millis(ms)),
            Err(_) => PollTimeout::Infinite,
        }
    }
}

/// `struct poll_list` as do_sys_poll builds it: the head's 30 entries inline (the kernel's
/// `stack_pps`), then heap chunks of at most 510.
struct PollList {
    head_len: usize,
    head: [PollFd; N_STACK_PPS],
    more: Vec<Vec<PollFd>>,
}

impl PollList {
    fn chunks(&self) -> impl Iterator<Item = &[PollFd]> {
        core::iter::once(&self.head[..self.head_len]).chain(self.more.iter().map(Vec::as_slice))
    }

    fn chunks_mut(&mut self) -> impl Iterator<Item = &mut [PollFd]> {
        core::iter::once(&mut self.head[..self.head_len])
            .chain(self.more.iter_mut().map(Vec::as_mut_slice))
    }
}

/// The polling task's descriptor table (`current->files`) and whether another task shares it
/// (`files->count > 1`), which decides whether `fdget` takes a reference.
#[derive(Clone, Copy)]
struct Files<'a> {
    fdt: &'a FdTable,
    shared: bool,
}

/// `do_pollfd`: the readiness of one entry, filtered by its events plus `ERR | HUP`. The file
/// is held from `fdget` to `fdput` (the end of this function), across `->poll`.
#[inline]
fn do_pollfd(
    pfd: &PollFd,
    pt: &mut PollTable<'_>,
    files: Files<'_>,
    guard: &maple_tree::Guard,
) -> PollMask {
    // One copy per case, so that the private table's (poll2's) has no reference to put.
    if files.shared {
        do_pollfd_in::<true>(pfd, pt, files.fdt, guard)
    } else {
        do_pollfd_in::<false>(pfd, pt, files.fdt, guard)
    }
}

/// `do_pollfd`'s body for a table that is shared or not (a constant, so that each copy has one
/// path: the private one puts no reference, the shared one always does).
#[inline(always)]
fn do_pollfd_in<const SHARED: bool>(
    pfd: &PollFd,
    pt: &mut PollTable<'_>,
    fdt: &FdTable,
    guard: &maple_tree::Guard,
) -> PollMask {
    let fd = pfd.fd;
    if fd < 0 {
        return 0;
    }
    let Some(file) = fdt.fdget(fd, SHARED, guard) else {
        return POLLNVAL;
    };
    let filter = demangle_poll(pfd.events) | POLLERR | POLLHUP;
    pt.key = filter;
    file.vfs_poll(pt) & filter
}

/// What one `do_poll` did besides counting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PollRun {
    passes: u64,
    wait_entries: usize,
    wait_pages: usize,
}

/// `do_poll`: passes over every entry until something is ready, the timeout expires, or (zero
/// timeout) after exactly one pass. Writes each entry's `revents` into the kernel copy.
fn do_poll(
    list: &mut PollList,
    wait: &mut PollWqueues,
    files: Files<'_>,
    end_time: Option<Instant>,
    zero: bool,
) -> (Result<usize, Errno>, PollRun) {
    let mut run = PollRun::default();
    let mut registering = !zero;
    let mut timed_out = zero;
    loop {
        let mut count = 0usize;
        {
            let guard = files.fdt.pin();
            for chunk in list.chunks_mut() {
                for pfd in chunk.iter_mut() {
                    let mut pt = PollTable {
                        qproc: if registering { Some(&mut *wait) } else { None },
                        key: 0,
                    };
                    let mask = do_pollfd(pfd, &mut pt, files, &guard);
                    pfd.revents = mangle_poll(mask);
                    if mask != 0 {
                        count += 1;
                        registering = false;
                    }
                }
            }
        }
        run.passes += 1;
        registering = false;
        let result = if count == 0 {
            match wait.error {
                Some(e) => Err(e),
                None => Ok(0),
            }
        } else {
            Ok(count)
        };
        if count != 0 || timed_out || result.is_err() {
            run.wait_entries = wait.entries();
            run.wait_pages = wait.pages();
            return (result, run);
        }
        if !wait.schedule_timeout(end_time) {
            timed_out = true;
        }
    }
}

/// The polling task (`current`): its descriptor table, its user memory, the copy-out strategy
/// and counters.
///
/// ```
/// use maple_poll::{CopyOut, FdTable, PollFd, Task, UserMemory, WindowMode, POLLOUT};
/// use std::sync::Arc;
///
/// let files = Arc::new(FdTable::new());
/// let mm = Arc::new(UserMemory::new(64 * 1024, WindowMode::Counted).unwrap());
/// let fds: Vec<PollFd> = (0..128).map(|_| PollFd::new(files.open_regular().unwrap(), POLLOUT)).collect();
/// mm.write_pollfds(mm.base(), &fds).unwrap();
///
/// // poll2's call, with each copy-out strategy: 2 copy-in windows (30 + 98), then n, c, c or 1.
/// for (s, out) in CopyOut::ALL.into_iter().zip([128, 2, 2, 1]) {
///     let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
///     task.set_copy_out(s);
///     assert_eq!(task.sys_poll(mm.base(), 128, 0), Ok(128));
///     assert_eq!((task.stats().read_windows, task.stats().write_windows), (2, out));
/// }
/// ```
pub struct Task {
    files: Arc<FdTable>,
    mm: Arc<UserMemory>,
    copy_out: CopyOut,
    stats: UaccessStats,
    last: UaccessStats,
    calls: u64,
    passes: u64,
    last_wait_entries: usize,
    last_wait_pages: usize,
}

impl Task {
    /// A task with this descriptor table and user memory, copying out with the merged strategy.
    pub fn new(files: Arc<FdTable>, mm: Arc<UserMemory>) -> Self {
        Task {
            files,
            mm,
            copy_out: CopyOut::default(),
            stats: UaccessStats::default(),
            last: UaccessStats::default(),
            calls: 0,
            passes: 0,
            last_wait_entries: 0,
            last_wait_pages: 0,
        }
    }

    /// The descriptor table.
    pub fn files(&self) -> &Arc<FdTable> {
        &self.files
    }

    /// The user memory.
    pub fn mm(&self) -> &Arc<UserMemory> {
        &self.mm
    }

    /// The copy-out strategy used by the next calls.
    pub fn copy_out(&self) -> CopyOut {
        self.copy_out
    }

    /// Selects the copy-out strategy.
    pub fn set_copy_out(&mut self, s: CopyOut) {
        self.copy_out = s;
    }

    /// Window and byte counters summed over every call.
    pub fn stats(&self) -> UaccessStats {
        self.stats
    }

    /// Counters of the last call only.
    pub fn last_call(&self) -> UaccessStats {
        self.last
    }

    /// Calls made, and `do_poll` passes made over all calls.
    pub fn calls(&self) -> (u64, u64) {
        (self.calls, self.passes)
    }

    /// Wait-table entries and extra pages the last call registered (0 with a zero timeout).
    pub fn last_wait_table(&self) -> (usize, usize) {
        (self.last_wait_entries, self.last_wait_pages)
    }

    /// Clears the counters.
    pub fn reset_stats(&mut self) {
        self.stats = UaccessStats::default();
        self.last = UaccessStats::default();
        self.calls = 0;
        self.passes = 0;
    }

    /// `poll(ufds, nfds, timeout_msecs)`: a negative timeout waits forever, 0 makes one pass.
    pub fn sys_poll(&mut self, ufds: u64, nfds: u64, timeout_msecs: i32) -> Result<usize, Errno> {
        self.do_sys_poll(ufds, nfds, PollTimeout::from_msecs(timeout_msecs))
    }

    /// `do_sys_poll`: `EINVAL` if `nfds` exceeds `RLIMIT_NOFILE`; copy-in chunk by chunk (one
    /// window each; `EFAULT`/`ENOMEM`); `do_poll`; copy-out with [`copy_out`](Self::copy_out)
    /// (`EFAULT` with the window closed if it faults); the number of ready entries.
    pub fn do_sys_poll(
        &mut self,
        ufds: u64,
        nfds: u64,
        timeout: PollTimeout,
    ) -> Result<usize, Errno> {
        // poll_select_set_timeout: the end time is fixed before anything else.
        let (end_time, zero) = match timeout {
            PollTimeout::Infinite => (None, false),
            PollTimeout::After(d) if d.is_zero() => (None, true),
            // A timeout too large for the clock is as good as none.
            PollTimeout::After(d) => (Instant::now().checked_add(d), false),
        };
        // `files->count == 1`: no other handle on the table, so nobody can close meanwhile.
        let shared = Arc::get_mut(&mut self.files).is_none();
        let mm = Arc::clone(&self.mm);
        let mut ua = mm.uaccess();
        let files = Files {
            fdt: &self.files,
            shared,
        };
        let (r, run) = do_sys_poll(&mut ua, files, ufds, nfds, end_time, zero, self.copy_out);
        self.last = ua.stats();
        self.stats += self.last;
        self.calls += 1;
        self.passes += run.passes;
        self.last_wait_entries = run.wait_entries;
        self.last_wait_pages = run.wait_pages;
        r
    }
}

impl core::fmt::Debug for Task {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Task")
            .field("copy_out", &self.copy_out)
            .field("calls", &self.calls)
            .field("stats", &self.stats)
            .finish()
    }
}

fn do_sys_poll(
    ua: &mut Uaccess<'_>,
    files: Files<'_>,
    ufds: u64,
    nfds: u64,
    end_time: Option<Instant>,
    zero: bool,
    copy_out: CopyOut,
) -> (Result<usize, Errno>, PollRun) {
    let none = PollRun::default();
    if nfds > files.fdt.rlimit_nofile() {
        return (Err(Errno::EINVAL), none);
    }
    let mut list = PollList {
        head_len: 0,
        head: [PollFd::default(); N_STACK_PPS],
        more: Vec::new(),
    };
    let mut todo = nfds as usize;
    let mut addr = ufds;

    // Build the chunk list: one copy_from_user (one window) per chunk.
    let len = todo.min(N_STACK_PPS);
    list.head_len = len;
    if len > 0 {
        if let Err(e) = ua.copy_from_user(&mut list.head[..len], addr) {
            return (Err(e), none);
        }
        todo -= len;
        addr = addr.wrapping_add(len as u64 * PollFd::SIZE);
        if todo > 0
            && list
                .more
                .try_reserve_exact(todo.div_ceil(POLLFD_PER_PAGE))
                .is_err()
        {
            return (Err(Errno::ENOMEM), none);
        }
        while todo > 0 {
            let len = todo.min(POLLFD_PER_PAGE);
            let mut chunk = Vec::new();
            if chunk.try_reserve_exact(len).is_err() {
                return (Err(Errno::ENOMEM), none);
            }
            chunk.resize(len, PollFd::default());
            if let Err(e) = ua.copy_from_user(&mut chunk, addr) {
                return (Err(e), none);
            }
            list.more.push(chunk);
            todo -= len;
            addr = addr.wrapping_add(len as u64 * PollFd::SIZE);
        }
    }

    let (fdcount, run) = {
        let mut table = PollWqueues::new(); // poll_initwait
        do_poll(&mut list, &mut table, files, end_time, zero)
        // poll_freewait when `table` drops
    };

    if let Err(e) = copy_out_results(ua, &list, ufds, nfds, copy_out) {
        return (Err(e), run);
    }
    (fdcount, run)
}

#[inline]
fn copy_out_results(
    ua: &mut Uaccess<'_>,
    list: &PollList,
    ufds: u64,
    nfds: u64,
    how: CopyOut,
) -> Result<(), Errno> {
    let mut a = ufds;
    match how {
        CopyOut::PerFdPutUser => {
            for chunk in list.chunks() {
                for p in chunk {
                    ua.put_user_u16(p.revents, a.wrapping_add(PollFd::REVENTS_OFFSET))?;
                    a = a.wrapping_add(PollFd::SIZE);
                }
            }
        }
        CopyOut::PerChunkUnsafe => {
            for chunk in list.chunks() {
                let mut w = ua.user_write_access_begin(a, chunk.len() as u64 * PollFd::SIZE)?;
                for p in chunk {
                    w.unsafe_put_user_u16(p.revents, a.wrapping_add(PollFd::REVENTS_OFFSET))?;
                    a = a.wrapping_add(PollFd::SIZE);
                }
            }
        }
        CopyOut::PerChunkCopyToUser => {
            for chunk in list.chunks() {
                ua.copy_to_user(a, chunk)?;
                a = a.wrapping_add(chunk.len() as u64 * PollFd::SIZE);
            }
        }
        CopyOut::SingleWindowUnsafe => {
            let mut w = ua.user_write_access_begin(ufds, nfds * PollFd::SIZE)?;
            for chunk in list.chunks() {
                for p in chunk {
                    w.unsafe_put_user_u16(p.revents, a.wrapping_add(PollFd::REVENTS_OFFSET))?;
                    a = a.wrapping_add(PollFd::SIZE);
                }
            }
        }
    }
    Ok(())
}
