//! Open files and the pollable objects behind them: `struct file` with its `f_op`, an in-memory
//! regular file, eventfd, pipes and a real-descriptor adaptor.

use crate::sync::{atomic_take, Arc, AtomicUsize, Mutex, Ordering};
use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};

use rustix::event::{PollFd as OsPollFd, PollFlags, Timespec};

use super::sys::PAGE_SIZE;
use super::wait::{PollTable, WaitQueueHead};
use super::{
    Errno, PollMask, DEFAULT_POLLMASK, POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM,
};

/// The operations of an open file (`struct file_operations`), as far as poll needs them.
pub trait FileOperations: Send + Sync + 'static {
    /// `->poll`: the current readiness mask; may register on a wait queue through `pt`. The
    /// default is what `vfs_poll` returns for files without `->poll`: [`DEFAULT_POLLMASK`].
    fn poll(&self, pt: &mut PollTable<'_>) -> PollMask {
        let _ = pt;
        DEFAULT_POLLMASK
    }

    /// `->read` (non-blocking). Default: `EINVAL`.
    fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        let _ = buf;
        Err(Errno::EINVAL)
    }

    /// `->write` (non-blocking). Default: `EINVAL`.
    fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let _ = buf;
        Err(Errno::EINVAL)
    }

    /// `->release`: the last descriptor referring to the file was closed.
    fn release(&self) {}

    /// The wait queue `->poll` registers on, if the object has one (tests use it to wait until
    /// a poller sleeps: `waitqueue_active`).
    fn wait_queue(&self) -> Option<&Arc<WaitQueueHead>> {
        None
    }

    /// A short name for dumps (`"eventfd"`, `"pipe"`, ...).
    fn name(&self) -> &'static str;
}

/// An open file (`struct file`): its operations and the count of descriptors (and other holders)
/// referring to it (`f_count`). `->release` runs when that count drops to zero, at `close`, not
/// when the memory is reclaimed after the tree's grace period.
pub struct File {
    f_op: Box<dyn FileOperations>,
    f_count: AtomicUsize,
}

impl File {
    /// A new open file with one reference (the one [`FdTable::fd_install`](super::FdTable::fd_install)
    /// consumes).
    pub fn new(ops: impl FileOperations) -> Self {
        File {
            f_op: Box::new(ops),
            f_count: AtomicUsize::new(1),
        }
    }

    /// The file's operations.
    pub fn f_op(&self) -> &dyn FileOperations {
        &*self.f_op
    }

    /// The wait queue of the file's object, if it has one.
    pub fn wait_queue(&self) -> Option<&Arc<WaitQueueHead>> {
        self.f_op.wait_queue()
    }

    /// `vfs_poll`.
    #[inline]
    pub fn vfs_poll(&self, pt: &mut PollTable<'_>) -> PollMask {
        self.f_op.poll(pt)
    }

    /// References held (descriptors, mostly).
    pub fn f_count(&self) -> usize {
        // ORDERING: M8
        self.f_count.load(Ordering::Acquire)
    }

    /// `get_file` unless the file is already released: `false` if the count was zero.
    pub(crate) fn get_file_not_zero(&self) -> bool {
        // ORDERING: M8
        self.f_count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                if c == 0 {
                    None
                } else {
                    Some(c + 1)
                }
            })
            .is_ok()
    }

    /// `fput`: drops one reference; the last one calls `->release`.
    pub(crate) fn fput(&self) {
        // ORDERING: M8
        let order = Ordering::AcqRel;
        #[cfg(loom)]
        let order = if crate::loom_knobs::relaxed_fput() {
            Ordering::Relaxed
        } else {
            order
        };
        if self.f_count.fetch_sub(1, order) == 1 {
            self.f_op.release();
        }
    }
}

impl Drop for File {
    fn drop(&mut self) {
        // A file dropped with references left (never installed, or its table dropped) is
        // released now.
        if atomic_take(&mut self.f_count) > 0 {
            self.f_op.release();
        }
    }
}

impl core::fmt::Debug for File {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("File")
            .field("f_op", &self.f_op.name())
            .field("f_count", &self.f_count())
            .finish()
    }
}

// ----- regular file -------------------------------------------------------------------------

/// An in-memory regular file, like an unlinked tmpfile (poll2's `mkstemp` + `unlink`): no
/// `->poll`, so always [`DEFAULT_POLLMASK`]. Reads and writes share one position.
#[derive(Debug, Default)]
pub struct RegularFile {
    data: Mutex<(Vec<u8>, usize)>,
}

impl RegularFile {
    /// An empty file.
    pub fn new() -> Self {
        Self::default()
    }
}

impl FileOperations for RegularFile {
    fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut g = self.data.lock();
        let (data, pos) = &mut *g;
        let n = buf.len().min(data.len().saturating_sub(*pos));
        buf[..n].copy_from_slice(&data[*pos..*pos + n]);
        *pos += n;
        Ok(n)
    }

    fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let mut g = self.data.lock();
        let (data, pos) = &mut *g;
        let end = pos.checked_add(buf.len()).ok_or(Errno::EINVAL)?;
        if end > data.len() {
            data.try_reserve(end - data.len())
                .map_err(|_| Errno::ENOMEM)?;
            data.resize(end, 0);
        }
        data[*pos..end].copy_from_slice(buf);
        *pos = end;
        Ok(buf.len())
    }

    fn name(&self) -> &'static str {
        "regular"
    }
}

// ----- eventfd --------------------------------------------------------------------------------

/// An eventfd (non-blocking): a `u64` counter. `POLLIN` while the counter is above 0, `POLLOUT`
/// while it is below `u64::MAX − 1`, `POLLERR` at `u64::MAX` (as `eventfd_poll`; no
/// `RDNORM`/`WRNORM`).
#[derive(Debug)]
pub struct EventFd {
    count: Mutex<u64>,
    semaphore: bool,
    wqh: Arc<WaitQueueHead>,
}

impl EventFd {
    /// An eventfd with counter `initval`; `semaphore` is `EFD_SEMAPHORE` (reads take 1).
    pub fn new(initval: u64, semaphore: bool) -> Self {
        EventFd {
            count: Mutex::new(initval),
            semaphore,
            wqh: Arc::new(WaitQueueHead::new()),
        }
    }

    /// The wait queue (for tests that wait until a poller sleeps).
    pub fn wait_queue(&self) -> &Arc<WaitQueueHead> {
        &self.wqh
    }

    /// The current counter.
    pub fn count(&self) -> u64 {
        *self.count.lock()
    }

    /// The readiness mask of the counter now.
    fn events(&self) -> PollMask {
        let count = *self.count.lock();
        let mut events = 0;
        if count > 0 {
            events |= POLLIN;
        }
        if count == u64::MAX {
            events |= POLLERR;
        }
        if u64::MAX - 1 > count {
            events |= POLLOUT;
        }
        events
    }
}

impl FileOperations for EventFd {
    /// `eventfd_poll`: registers first, then reads the counter. A write that the read misses
    /// comes after the registration, so it finds the poller on the queue and wakes it; read
    /// before registering, a write in between would wake nobody.
    fn poll(&self, pt: &mut PollTable<'_>) -> PollMask {
        #[cfg(loom)]
        if crate::loom_knobs::poll_before_wait() {
            let events = self.events();
            pt.poll_wait(&self.wqh);
            return events;
        }
        pt.poll_wait(&self.wqh);
        self.events()
    }

    /// `eventfd_read`: 8 bytes; `EINVAL` if shorter, `EAGAIN` at 0.
    fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let mut c = self.count.lock();
        if *c == 0 {
            return Err(Errno::EAGAIN);
        }
        let v = if self.semaphore { 1 } else { *c };
        *c -= v;
        drop(c);
        buf[..8].copy_from_slice(&v.to_ne_bytes());
        self.wqh.wake_up_poll(POLLOUT);
        Ok(8)
    }

    /// `eventfd_write`: 8 bytes; `EINVAL` if shorter or `u64::MAX`, `EAGAIN` if it would
    /// overflow.
    fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let Some(bytes) = buf.get(..8) else {
            return Err(Errno::EINVAL);
        };
        let v = u64::from_ne_bytes(bytes.try_into().map_err(|_| Errno::EINVAL)?);
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        let mut c = self.count.lock();
        if u64::MAX - *c <= v {
            return Err(Errno::EAGAIN);
        }
        *c += v;
        drop(c);
        self.wqh.wake_up_poll(POLLIN);
        Ok(8)
    }

    fn wait_queue(&self) -> Option<&Arc<WaitQueueHead>> {
        Some(&self.wqh)
    }

    fn name(&self) -> &'static str {
        "eventfd"
    }
}

// ----- pipe -------------------------------------------------------------------------------------

/// Slots of a default pipe (`PIPE_DEF_BUFFERS`).
const PIPE_DEF_BUFFERS: usize = 16;

#[derive(Debug)]
struct PipeBuffer {
    data: Vec<u8>,
    offset: usize,
}

#[derive(Debug)]
struct PipeState {
    bufs: VecDeque<PipeBuffer>,
    readers: usize,
    writers: usize,
}

/// `struct pipe_inode_info`: a ring of 16 page buffers, as the kernel keeps it, so that
/// readiness matches a real pipe byte for byte (a write merges into the last page only if it
/// fits there; a page slot is freed only when read empty).
#[derive(Debug)]
struct PipeInode {
    state: Mutex<PipeState>,
    wqh: Arc<WaitQueueHead>,
}

/// The read end of a [`pipe`]: `POLLIN | POLLRDNORM` with data, `POLLHUP` once no writer is left.
#[derive(Debug)]
pub struct PipeReader(Arc<PipeInode>);

/// The write end of a [`pipe`]: `POLLOUT | POLLWRNORM` while a slot is free, `POLLERR` once no
/// reader is left.
#[derive(Debug)]
pub struct PipeWriter(Arc<PipeInode>);

/// A new pipe: its read and write ends (install them with
/// [`FdTable::install`](super::FdTable::install), or use [`FdTable::pipe`](super::FdTable::pipe)).
///
/// ```
/// use maple_poll::{pipe, FdTable, PollFd, Task, UserMemory, WindowMode, POLLHUP, POLLIN};
/// use std::sync::Arc;
///
/// let files = Arc::new(FdTable::new());
/// let (r, w) = pipe();
/// let rfd = files.install(r).unwrap();
/// let wfd = files.install(w).unwrap();
/// assert_eq!(files.write(wfd, b"hi"), Ok(2));
/// files.close(wfd).unwrap(); // the last writer: the reader sees data, then hang-up
///
/// let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
/// mm.write_pollfds(mm.base(), &[PollFd::new(rfd, POLLIN)]).unwrap();
/// let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
/// assert_eq!(task.sys_poll(mm.base(), 1, 0), Ok(1));
/// let mut out = [PollFd::default()];
/// mm.read_pollfds(mm.base(), &mut out).unwrap();
/// assert_eq!(out[0].revents, POLLIN | POLLHUP);
/// ```
pub fn pipe() -> (PipeReader, PipeWriter) {
    let inode = Arc::new(PipeInode {
        state: Mutex::new(PipeState {
            bufs: VecDeque::new(),
            readers: 1,
            writers: 1,
        }),
        wqh: Arc::new(WaitQueueHead::new()),
    });
    (PipeReader(Arc::clone(&inode)), PipeWriter(inode))
}

impl PipeReader {
    /// The pipe's wait queue (shared by both ends).
    pub fn wait_queue(&self) -> &Arc<WaitQueueHead> {
        &self.0.wqh
    }
}

impl PipeWriter {
    /// The pipe's wait queue (shared by both ends).
    pub fn wait_queue(&self) -> &Arc<WaitQueueHead> {
        &self.0.wqh
    }
}

const PIPE_RELEASE_KEY: PollMask = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM | POLLERR | POLLHUP;

impl FileOperations for PipeReader {
    fn poll(&self, pt: &mut PollTable<'_>) -> PollMask {
        pt.poll_wait(&self.0.wqh);
        let st = self.0.state.lock();
        let mut mask = 0;
        if !st.bufs.is_empty() {
            mask |= POLLIN | POLLRDNORM;
        }
        if st.writers == 0 {
            mask |= POLLHUP;
        }
        mask
    }

    /// `pipe_read`, non-blocking: `EAGAIN` when empty with writers left, 0 at end of file.
    fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut st = self.0.state.lock();
        if st.bufs.is_empty() {
            return if st.writers == 0 {
                Ok(0)
            } else {
                Err(Errno::EAGAIN)
            };
        }
        let was_full = st.bufs.len() >= PIPE_DEF_BUFFERS;
        let mut n = 0;
        while n < buf.len() {
            let Some(b) = st.bufs.front_mut() else { break };
            let take = (b.data.len() - b.offset).min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&b.data[b.offset..b.offset + take]);
            b.offset += take;
            n += take;
            if b.offset == b.data.len() {
                st.bufs.pop_front();
            }
        }
        let freed = was_full && st.bufs.len() < PIPE_DEF_BUFFERS;
        drop(st);
        if freed || n > 0 {
            self.0.wqh.wake_up_poll(POLLOUT | POLLWRNORM);
        }
        Ok(n)
    }

    fn release(&self) {
        self.0.state.lock().readers -= 1;
        self.0.wqh.wake_up_poll(PIPE_RELEASE_KEY);
    }

    fn wait_queue(&self) -> Option<&Arc<WaitQueueHead>> {
        Some(&self.0.wqh)
    }

    fn name(&self) -> &'static str {
        "pipe:r"
    }
}

impl FileOperations for PipeWriter {
    fn poll(&self, pt: &mut PollTable<'_>) -> PollMask {
        pt.poll_wait(&self.0.wqh);
        let st = self.0.state.lock();
        let mut mask = 0;
        if st.bufs.len() < PIPE_DEF_BUFFERS {
            mask |= POLLOUT | POLLWRNORM;
        }
        if st.readers == 0 {
            mask |= POLLERR;
        }
        mask
    }

    /// `pipe_write`, non-blocking: `EPIPE` without readers; the tail of a write smaller than a
    /// page merges into the last buffer when it fits; then whole pages while slots are free;
    /// `EAGAIN` if nothing could be written.
    fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let mut st = self.0.state.lock();
        if st.readers == 0 {
            return Err(Errno::EPIPE);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let total = buf.len();
        let chars = total & (PAGE_SIZE - 1);
        let mut written = 0;
        if chars != 0 {
            if let Some(last) = st.bufs.back_mut() {
                if last.data.len() + chars <= PAGE_SIZE {
                    last.data.extend_from_slice(&buf[..chars]);
                    written = chars;
                }
            }
        }
        while written < total && st.bufs.len() < PIPE_DEF_BUFFERS {
            let n = (total - written).min(PAGE_SIZE);
            let mut data = Vec::new();
            data.try_reserve_exact(PAGE_SIZE)
                .map_err(|_| Errno::ENOMEM)?;
            data.extend_from_slice(&buf[written..written + n]);
            st.bufs.push_back(PipeBuffer { data, offset: 0 });
            written += n;
        }
        drop(st);
        if written == 0 {
            return Err(Errno::EAGAIN);
        }
        self.0.wqh.wake_up_poll(POLLIN | POLLRDNORM);
        Ok(written)
    }

    fn release(&self) {
        self.0.state.lock().writers -= 1;
        self.0.wqh.wake_up_poll(PIPE_RELEASE_KEY);
    }

    fn wait_queue(&self) -> Option<&Arc<WaitQueueHead>> {
        Some(&self.0.wqh)
    }

    fn name(&self) -> &'static str {
        "pipe:w"
    }
}

// ----- real descriptor ------------------------------------------------------------------------

/// A real OS descriptor: `->poll` asks the OS with `poll(2)` (timeout 0, the table's key as
/// `events`); a sleeping `poll` on it sleeps in the OS. The descriptor is closed when the file's
/// memory is reclaimed (after `close` and the tree's grace period).
#[derive(Debug)]
pub struct RealFile {
    fd: Arc<OwnedFd>,
}

impl RealFile {
    /// Wraps `fd`.
    pub fn new(fd: OwnedFd) -> Self {
        RealFile { fd: Arc::new(fd) }
    }
}

impl FileOperations for RealFile {
    fn poll(&self, pt: &mut PollTable<'_>) -> PollMask {
        pt.poll_wait_os(&self.fd);
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // `as _`: `PollFlags` bits are `u16` with rustix's linux_raw backend but `c_short` with
        // its libc backend (the one Miri builds), so cast both ways.
        let mut fds = [OsPollFd::from_borrowed_fd(
            self.fd.as_fd(),
            PollFlags::from_bits_retain(pt.key() as _),
        )];
        loop {
            match rustix::event::poll(&mut fds, Some(&zero)) {
                Ok(_) => return fds[0].revents().bits() as _,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return POLLERR,
            }
        }
    }

    fn read(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        rustix::io::read(self.fd.as_fd(), buf).map_err(Errno::from_io)
    }

    fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        rustix::io::write(self.fd.as_fd(), buf).map_err(Errno::from_io)
    }

    fn name(&self) -> &'static str {
        "real"
    }
}
