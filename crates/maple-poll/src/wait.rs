//! Wait queues and the poll table: `wait_queue_head_t`, `poll_table`, `poll_wqueues`,
//! `__pollwait`, `pollwake`, `poll_schedule_timeout` and `poll_freewait`.
//!
//! A file's `->poll` calls [`PollTable::poll_wait`] with its wait queue; while the poll table
//! still registers (the first pass of a blocking `poll`, until something is ready), that adds an
//! entry pointing at the polling task's waiter. A wake-up on the queue whose key intersects the
//! entry's key sets the waiter's `triggered` and wakes the task. Real descriptors
//! ([`RealFile`](super::RealFile)) register with [`PollTable::poll_wait_os`]: the task then sleeps
//! in the OS's `poll(2)` on those descriptors plus an eventfd that model wake-ups write.

use crate::sync::{Arc, AtomicUsize, Condvar, IdCounter, Mutex, Ordering};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Instant;

use rustix::event::{EventfdFlags, PollFd as OsPollFd, PollFlags, Timespec};

use super::{Errno, PollMask};

/// Entries of a `poll_wqueues` kept inline (`N_INLINE_POLL_ENTRIES`: 576 / 64 on x86-64).
pub const N_INLINE_POLL_ENTRIES: usize = 9;
/// Entries per further "page" of the poll table ((4096 − 16) / 64).
pub(crate) const POLL_TABLE_PAGE_ENTRIES: usize = 63;

static NEXT_ID: IdCounter = IdCounter::new(1);

struct WaitQueueEntry {
    id: u64,
    key: PollMask,
    waiter: Arc<Waiter>,
}

/// A wait queue head (`wait_queue_head_t`): the tasks polling one object.
#[derive(Default)]
pub struct WaitQueueHead {
    entries: Mutex<Vec<WaitQueueEntry>>,
    active: AtomicUsize,
}

impl WaitQueueHead {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// `waitqueue_active`: whether any task is waiting.
    pub fn waitqueue_active(&self) -> bool {
        // ORDERING: M9
        self.active.load(Ordering::Acquire) != 0
    }

    /// Number of waiting entries.
    pub fn len(&self) -> usize {
        // ORDERING: M9
        self.active.load(Ordering::Acquire)
    }

    /// Whether no task is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `wake_up_poll(head, key)`: wakes every entry whose key intersects `key` (all of them if
    /// `key` is 0), as `pollwake` filters.
    pub fn wake_up_poll(&self, key: PollMask) {
        if !self.waitqueue_active() {
            return;
        }
        let entries = self.entries.lock();
        for e in entries.iter() {
            if key == 0 || e.key & key != 0 {
                e.waiter.wake();
            }
        }
    }

    fn add(&self, key: PollMask, waiter: Arc<Waiter>) -> u64 {
        let id = NEXT_ID.next();
        let mut entries = self.entries.lock();
        entries.push(WaitQueueEntry { id, key, waiter });
        // ORDERING: M9
        self.active.store(entries.len(), Ordering::Release);
        id
    }

    fn remove(&self, id: u64) {
        let mut entries = self.entries.lock();
        entries.retain(|e| e.id != id);
        // ORDERING: M9
        self.active.store(entries.len(), Ordering::Release);
    }
}

impl core::fmt::Debug for WaitQueueHead {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WaitQueueHead")
            .field("waiters", &self.len())
            .finish()
    }
}

struct WaiterState {
    triggered: bool,
    /// Written by `wake` while the task sleeps in the OS's poll (real descriptors registered).
    efd: Option<Arc<OwnedFd>>,
}

/// The polling task as wait queues see it (`poll_wqueues.triggered` + the task to wake).
pub(crate) struct Waiter {
    state: Mutex<WaiterState>,
    cv: Condvar,
}

impl Waiter {
    fn new() -> Self {
        Waiter {
            state: Mutex::new(WaiterState {
                triggered: false,
                efd: None,
            }),
            cv: Condvar::new(),
        }
    }

    /// `pollwake` after the key filter: set `triggered`, wake the task.
    fn wake(&self) {
        let mut st = self.state.lock();
        st.triggered = true;
        if let Some(efd) = &st.efd {
            // A full counter (EAGAIN) is still a pending wake-up; nothing else can fail here.
            let _ = rustix::io::write(efd.as_fd(), &1u64.to_ne_bytes());
        }
        drop(st);
        self.cv.notify_all();
    }

    /// `poll_schedule_timeout` with no real descriptor registered: sleeps until `triggered` (or
    /// `deadline`), then clears it. `false` if it timed out without a wake-up.
    ///
    /// `triggered` is cleared only after the sleep, with the waiter's lock held: the clear cannot
    /// move before the readiness check of the pass that came before (the kernel's
    /// `smp_store_mb(pwq->triggered, 0)`), so a wake-up between that check and this sleep is
    /// seen here.
    fn sleep_until_triggered(&self, deadline: Option<Instant>) -> bool {
        let mut st = self.state.lock();
        #[cfg(loom)]
        if crate::loom_knobs::clear_triggered_on_entry() {
            st.triggered = false;
        }
        while !st.triggered {
            match deadline {
                None => self.cv.wait(&mut st),
                Some(d) => {
                    if self.cv.wait_until(&mut st, d).timed_out() && !st.triggered {
                        return false;
                    }
                }
            }
        }
        st.triggered = false;
        true
    }
}

struct PollTableEntry {
    head: Arc<WaitQueueHead>,
    id: u64,
}

/// `struct poll_wqueues`: the registrations of one `poll` call, torn down when it is dropped
/// (`poll_freewait`).
pub(crate) struct PollWqueues {
    waiter: Option<Arc<Waiter>>,
    inline_entries: Vec<PollTableEntry>,
    pages: Vec<Vec<PollTableEntry>>,
    os: Vec<(Arc<OwnedFd>, PollMask)>,
    /// `pwq->error`: a table page could not be allocated (`ENOMEM`).
    pub(crate) error: Option<Errno>,
}

impl PollWqueues {
    /// `poll_initwait`: nothing is allocated until the first registration.
    pub(crate) fn new() -> Self {
        PollWqueues {
            waiter: None,
            inline_entries: Vec::new(),
            pages: Vec::new(),
            os: Vec::new(),
            error: None,
        }
    }

    fn waiter(&mut self) -> Arc<Waiter> {
        Arc::clone(self.waiter.get_or_insert_with(|| Arc::new(Waiter::new())))
    }

    /// Wait-table entries in use (inline and in pages).
    pub(crate) fn entries(&self) -> usize {
        self.inline_entries.len() + self.pages.iter().map(Vec::len).sum::<usize>()
    }

    /// Wait-table pages allocated beyond the inline entries.
    pub(crate) fn pages(&self) -> usize {
        self.pages.len()
    }

    /// `__pollwait`: one table entry (inline first, then pages), added to `head`.
    fn pollwait(&mut self, head: &Arc<WaitQueueHead>, key: PollMask) {
        let waiter = self.waiter();
        let entry = PollTableEntry {
            head: Arc::clone(head),
            id: 0,
        };
        let slot = if self.inline_entries.len() < N_INLINE_POLL_ENTRIES {
            if self.inline_entries.capacity() == 0
                && self
                    .inline_entries
                    .try_reserve_exact(N_INLINE_POLL_ENTRIES)
                    .is_err()
            {
                self.error = Some(Errno::ENOMEM);
                return;
            }
            self.inline_entries.push(entry);
            self.inline_entries.last_mut()
        } else {
            if self
                .pages
                .last()
                .is_none_or(|p| p.len() == POLL_TABLE_PAGE_ENTRIES)
            {
                let mut page = Vec::new();
                if page.try_reserve_exact(POLL_TABLE_PAGE_ENTRIES).is_err()
                    || self.pages.try_reserve(1).is_err()
                {
                    self.error = Some(Errno::ENOMEM);
                    return;
                }
                self.pages.push(page);
            }
            let page = self.pages.last_mut().expect("a page was just ensured");
            page.push(entry);
            page.last_mut()
        };
        if let Some(e) = slot {
            e.id = head.add(key, waiter);
        }
    }

    /// Sleeps until a registered wake-up, readiness of a registered real descriptor, or
    /// `deadline` (`poll_schedule_timeout`). Returns `false` if it timed out without a wake-up.
    /// Clears `triggered` before returning.
    pub(crate) fn schedule_timeout(&mut self, deadline: Option<Instant>) -> bool {
        let waiter = self.waiter();
        if self.os.is_empty() {
            return waiter.sleep_until_triggered(deadline);
        }
        let mut st = waiter.state.lock();
        if st.triggered {
            st.triggered = false;
            return true;
        }
        if st.efd.is_none() {
            match rustix::event::eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC) {
                Ok(fd) => st.efd = Some(Arc::new(fd)),
                Err(_) => {
                    // No eventfd: fall back to short sleeps that re-check the real descriptors.
                    let slice = Instant::now() + std::time::Duration::from_millis(1);
                    let d = deadline.map_or(slice, |d| d.min(slice));
                    let _ = waiter.cv.wait_until(&mut st, d);
                    let woke = st.triggered || deadline.is_none_or(|dl| Instant::now() < dl);
                    st.triggered = false;
                    return woke;
                }
            }
        }
        let efd = Arc::clone(st.efd.as_ref().expect("efd was just ensured"));
        drop(st);
        let mut fds = Vec::with_capacity(1 + self.os.len());
        fds.push(OsPollFd::from_borrowed_fd(efd.as_fd(), PollFlags::IN));
        for (fd, key) in &self.os {
            fds.push(OsPollFd::from_borrowed_fd(
                fd.as_fd(),
                // `as _`: `u16` bits with rustix's linux_raw backend, `c_short` with libc (Miri).
                PollFlags::from_bits_retain(*key as _),
            ));
        }
        let timeout = deadline.map(|d| {
            let left = d.saturating_duration_since(Instant::now());
            Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            }
        });
        let n = rustix::event::poll(&mut fds, timeout.as_ref()).unwrap_or(1);
        drop(fds);
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(efd.as_fd(), &mut buf);
        let mut st = waiter.state.lock();
        let woke = n > 0 || st.triggered;
        st.triggered = false;
        woke
    }
}

impl Drop for PollWqueues {
    /// `poll_freewait`: every entry leaves its queue.
    fn drop(&mut self) {
        for e in self
            .inline_entries
            .iter()
            .chain(self.pages.iter().flatten())
        {
            e.head.remove(e.id);
        }
    }
}

/// The `poll_table` a file's `->poll` receives: the key (the events the caller filters on, with
/// `POLLERR | POLLHUP`) and, while the call still registers waiters, the queue proc.
pub struct PollTable<'a> {
    pub(crate) qproc: Option<&'a mut PollWqueues>,
    pub(crate) key: PollMask,
}

impl PollTable<'_> {
    /// `poll_requested_events`: the key.
    pub fn key(&self) -> PollMask {
        self.key
    }

    /// Whether a registration would happen (the table's `_qproc` is set).
    pub fn registers(&self) -> bool {
        self.qproc.is_some()
    }

    /// `poll_wait`: registers the polling task on `head` with this table's key, if the table
    /// still registers.
    pub fn poll_wait(&mut self, head: &Arc<WaitQueueHead>) {
        let key = self.key;
        if let Some(q) = self.qproc.as_deref_mut() {
            q.pollwait(head, key);
        }
    }

    /// Registers a real descriptor: if the task sleeps, it sleeps in the OS's `poll(2)` on it
    /// (with this table's key) among the others.
    pub fn poll_wait_os(&mut self, fd: &Arc<OwnedFd>) {
        let key = self.key;
        if let Some(q) = self.qproc.as_deref_mut() {
            q.os.push((Arc::clone(fd), key));
        }
    }
}
