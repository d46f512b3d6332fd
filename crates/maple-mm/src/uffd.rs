//! The userfaultfd-context model (`fs/userfaultfd.c` and `mm/userfaultfd.c`, v6.10–v6.12
//! semantics).
//!
//! - [`UffdCtx::new`] is the `userfaultfd(2)` syscall; [`UffdCtx::api`] the `UFFDIO_API`
//!   handshake (features set once; `EVENT_FORK` needs `CAP_SYS_PTRACE`).
//! - [`UffdCtx::register`] / [`UffdCtx::unregister`] tag VMAs over a range with the split/merge
//!   rules and error codes of `userfaultfd_register` / `userfaultfd_unregister`;
//!   [`UffdCtx::release`] (closing the fd) clears every VMA
//!   of the context, re-merging, and wakes every waiter.
//! - A missing-page fault (a [`Mm::read_bytes`]/[`Mm::write_bytes`] of a page that is not
//!   populated in a `VM_UFFD_MISSING` VMA) queues a page-fault message and blocks until
//!   [`UffdCtx::copy`], [`UffdCtx::zeropage`] or [`UffdCtx::wake`] resolves it; the monitor gets
//!   the messages from [`UffdCtx::read`] (FIFO, blocking or not) and [`UffdCtx::poll`].
//! - Non-cooperative events: fork ([`DupUffd`], the `dup_userfaultfd` hook of
//!   [`Mm::fork_with`]), mremap (REMAP), madvise `DONTNEED` (REMOVE) and munmap (UNMAP), each
//!   raising `mmap_changing` (which makes the fill ioctls fail with `EAGAIN`) until the monitor
//!   has read the event; the call that generated it blocks until then.
//! - The seed patch "userfaultfd: early return in dup_userfaultfd()" is a switch of
//!   [`DupUffd`]; deterministic counters ([`ForkCounters`]) show what it saves.
//!
//! Only missing-page faults are modelled; WP and MINOR registrations are tracked in the VMA flags
//! (and take part in every rule) but never fault.
//!
//! ```
//! use maple_mm::uffd::{mode, UffdCtx, UFFD_API, UFFD_USER_MODE_ONLY};
//! use maple_mm::{MapFlags, MapSource, Mm, MmError, Prot, PAGE_SIZE};
//!
//! let mm = Mm::new();
//! let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::READ | Prot::WRITE, MapFlags::PRIVATE, MapSource::Anon).unwrap();
//! // userfaultfd(UFFD_USER_MODE_ONLY) needs no privilege; then the UFFDIO_API handshake.
//! let ctx = UffdCtx::new(&mm, UFFD_USER_MODE_ONLY, false).unwrap();
//! ctx.api(UFFD_API, 0).unwrap();
//! ctx.register(&mm, a, 2 * PAGE_SIZE, mode::MISSING).unwrap();
//! assert_eq!(mm.map_count(), 2); // the VMA is split at the end of the registered range
//!
//! // Another context cannot take VMAs that are registered to this one.
//! let other = UffdCtx::new(&mm, UFFD_USER_MODE_ONLY, false).unwrap();
//! other.api(UFFD_API, 0).unwrap();
//! assert_eq!(other.register(&mm, a, PAGE_SIZE, mode::MISSING), Err(MmError::Busy));
//!
//! ctx.unregister(&mm, a, 2 * PAGE_SIZE).unwrap();
//! assert_eq!(mm.map_count(), 1); // merged again
//! ```

use crate::sync::{Arc, AtomicBool, AtomicI32, AtomicU64, Condvar, Mutex, Ordering, RwLock};

use super::mmap::Change;
use super::{is_page_aligned, Mm, MmError, MmWriteGuard, VmFlags, Vma, VmaKind, PAGE_SIZE};
use crate::fork::{ForkEnv, ForkHook};

pub(crate) mod ctx;

pub use ctx::{
    feature, ioctl, mode, PollEvents, UffdCtx, UffdMsg, UffdioApi, HPAGE_SIZE, O_CLOEXEC,
    O_NONBLOCK, UFFD_API, UFFD_PAGEFAULT_FLAG_WRITE, UFFD_USER_MODE_ONLY,
};
use ctx::{EventWaiter, FaultWaiter, Queues, NEXT_CTX_ID};

impl UffdCtx {
    /// `userfaultfd(flags)`: a context for `mm`. Flags other than
    /// `O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY`: `EINVAL`. Without
    /// `UFFD_USER_MODE_ONLY` the caller needs `CAP_SYS_PTRACE` (`privileged`), as with
    /// `vm.unprivileged_userfaultfd = 0`: else `EPERM`.
    pub fn new(mm: &Mm, flags: u32, privileged: bool) -> Result<Arc<Self>, MmError> {
        if flags & !(O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY) != 0 {
            return Err(MmError::Inval);
        }
        if flags & UFFD_USER_MODE_ONLY == 0 && !privileged {
            return Err(MmError::Perm);
        }
        Ok(Arc::new(Self::raw(mm.id(), flags, privileged, 0)))
    }

    fn raw(mm_id: u64, flags: u32, privileged: bool, features: u64) -> Self {
        UffdCtx {
            id: NEXT_CTX_ID.next(),
            mm_id,
            flags,
            privileged,
            features: AtomicU64::new(features),
            released: AtomicBool::new(false),
            mmap_changing: AtomicI32::new(0),
            map_changing_lock: RwLock::new(()),
            q: Mutex::new(Queues::default()),
            readers: Condvar::new(),
            waiters: Condvar::new(),
        }
    }

    /// A context whose handshake already installed `features` (for tests and benchmarks),
    /// bound to `mm`, created `O_NONBLOCK | UFFD_USER_MODE_ONLY`.
    pub fn with_features(mm: &Mm, features: u64) -> Arc<Self> {
        Arc::new(Self::raw(
            mm.id(),
            O_NONBLOCK | UFFD_USER_MODE_ONLY,
            true,
            features | feature::INITIALIZED,
        ))
    }

    /// A unique id (for messages and tests).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The id of the mm this context serves.
    pub fn mm_id(&self) -> u64 {
        self.mm_id
    }

    /// The creation flags.
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// The installed features, `INITIALIZED` included (0 before the handshake).
    pub fn features(&self) -> u64 {
        // ORDERING: M4
        self.features.load(Ordering::Acquire)
    }

    /// Whether the handshake has been done.
    pub fn is_initialized(&self) -> bool {
        self.features() & feature::INITIALIZED != 0
    }

    fn has(&self, f: u64) -> bool {
        self.features() & f != 0
    }

    /// Whether the fd was closed.
    pub fn is_released(&self) -> bool {
        // ORDERING: M5
        self.released.load(Ordering::Acquire)
    }

    /// Non-cooperative events in flight.
    pub fn mmap_changing(&self) -> i32 {
        // ORDERING: M6
        self.mmap_changing.load(Ordering::Acquire)
    }

    /// `UFFDIO_API`: the handshake. `api != UFFD_API`: `EINVAL`; `EVENT_FORK` without
    /// `CAP_SYS_PTRACE`: `EPERM`; unsupported bits or a second handshake: `EINVAL`.
    pub fn api(&self, api: u64, features: u64) -> Result<UffdioApi, MmError> {
        if api != UFFD_API {
            return Err(MmError::Inval);
        }
        if features & feature::EVENT_FORK != 0 && !self.privileged {
            return Err(MmError::Perm);
        }
        let mut requested = features;
        if requested & feature::WP_ASYNC != 0 {
            requested |= feature::WP_UNPOPULATED;
        }
        if requested & !feature::SUPPORTED != 0 {
            return Err(MmError::Inval);
        }
        // ORDERING: M4
        self.features
            .compare_exchange(
                0,
                requested | feature::INITIALIZED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map_err(|_| MmError::Inval)?;
        Ok(UffdioApi {
            features: feature::SUPPORTED,
            ioctls: ioctl::API_IOCTLS,
        })
    }

    fn check_ready(&self, mm: &Mm) -> Result<(), MmError> {
        if !self.is_initialized() || self.is_released() {
            return Err(MmError::Inval);
        }
        if mm.id() != self.mm_id {
            return Err(MmError::Srch);
        }
        Ok(())
    }

    /// Range rules of register/unregister: page-aligned start, non-zero page-multiple length,
    /// no wrap, inside `TASK_SIZE`.
    fn check_range(mm: &Mm, start: u64, len: u64) -> Result<u64, MmError> {
        if !is_page_aligned(start) || len == 0 || !is_page_aligned(len) {
            return Err(MmError::Inval);
        }
        match start.checked_add(len) {
            Some(end) if end <= mm.config().task_size => Ok(end),
            _ => Err(MmError::Inval),
        }
    }

    /// `vma_can_userfault`.
    fn can_userfault(&self, v: &Vma, wanted: VmFlags) -> bool {
        let f = v.flags();
        if f.contains(VmFlags::DROPPABLE) {
            return false;
        }
        let kind = v.kind();
        let hugetlb = kind.is_hugetlb() || f.contains(VmFlags::HUGETLB);
        if wanted.contains(VmFlags::UFFD_MINOR) && !(hugetlb || kind.is_shmem()) {
            return false;
        }
        if wanted == VmFlags::UFFD_WP && self.has(feature::WP_ASYNC) {
            return true;
        }
        matches!(kind, VmaKind::Anon(_)) || hugetlb || kind.is_shmem()
    }

    fn same(ctx: &Option<Arc<UffdCtx>>, me: &UffdCtx) -> bool {
        ctx.as_ref().is_some_and(|c| core::ptr::eq(&**c, me))
    }

    /// `UFFDIO_REGISTER` of `[start, start + len)` in `mode` (`userfaultfd_register`). Returns the `ioctls` mask.
    ///
    /// Errors: bad mode or range, no VMA in the range, a VMA that cannot be registered in that
    /// mode, hugetlb misalignment: `EINVAL`; a VMA without `VM_MAYWRITE`: `EPERM`; a VMA
    /// registered to another context: `EBUSY`; too many maps: `ENOMEM`; not initialised or
    /// released: `EINVAL`; `mm` is not this context's: `ESRCH`. Holes are allowed. VMAs already
    /// registered here with every requested bit are left alone; others get their uffd bits
    /// *replaced* by the requested ones, split at the range ends and merged where possible.
    pub fn register(
        self: &Arc<Self>,
        mm: &Mm,
        start: u64,
        len: u64,
        mode: u64,
    ) -> Result<u64, MmError> {
        self.check_ready(mm)?;
        if mode == 0 || mode & !(mode::MISSING | mode::WP | mode::MINOR) != 0 {
            return Err(MmError::Inval);
        }
        let mut wanted = VmFlags::NONE;
        if mode & mode::MISSING != 0 {
            wanted |= VmFlags::UFFD_MISSING;
        }
        if mode & mode::WP != 0 {
            wanted |= VmFlags::UFFD_WP;
        }
        if mode & mode::MINOR != 0 {
            wanted |= VmFlags::UFFD_MINOR;
        }
        let end = Self::check_range(mm, start, len)?;
        let mut w = mm.write();
        let mut any_hugetlb = false;
        {
            let mut vmas = w.vmas_in(start, end).peekable();
            let first = vmas.peek().ok_or(MmError::Inval)?;
            if is_hugetlb(first) && start % HPAGE_SIZE != 0 {
                return Err(MmError::Inval);
            }
            for v in vmas {
                debug_assert_eq!(
                    v.has_uffd(),
                    v.flags().intersects(VmFlags::UFFD_FLAGS),
                    "I1"
                );
                if !self.can_userfault(v, wanted) {
                    return Err(MmError::Inval);
                }
                if !v.flags().contains(VmFlags::MAYWRITE) {
                    return Err(MmError::Perm);
                }
                if is_hugetlb(v) && v.end() > end && v.start() < end && end % HPAGE_SIZE != 0 {
                    return Err(MmError::Inval);
                }
                let ctx = v.uffd();
                if ctx.is_some() && !Self::same(&ctx, self) {
                    return Err(MmError::Busy);
                }
                any_hugetlb |= is_hugetlb(v);
            }
        }
        w.apply(start, end, None, |v| {
            if Self::same(&v.uffd(), self) && v.flags().contains(wanted) {
                return Change::Keep;
            }
            let mut d = v.desc();
            d.flags = d.flags.without(VmFlags::UFFD_FLAGS) | wanted;
            d.uffd = Some(Arc::clone(self));
            Change::Set(d)
        })?;
        let mut ioctls = if any_hugetlb {
            ioctl::RANGE_IOCTLS_BASIC
        } else {
            ioctl::RANGE_IOCTLS
        };
        if mode & mode::WP == 0 {
            ioctls &= !ioctl::WRITEPROTECT;
        }
        if mode & mode::MINOR == 0 {
            ioctls &= !ioctl::CONTINUE;
        }
        Ok(ioctls)
    }

    /// `UFFDIO_UNREGISTER` of `[start, start + len)` (`userfaultfd_unregister`): clears this context from every VMA
    /// in the range (splitting and merging), waking faults waiting there. Errors: bad range, no
    /// VMA in the range, a VMA registered to another context, a VMA that could not be
    /// registered at all (e.g. a regular file): `EINVAL`; too many maps: `ENOMEM`.
    pub fn unregister(self: &Arc<Self>, mm: &Mm, start: u64, len: u64) -> Result<(), MmError> {
        self.check_ready(mm)?;
        let end = Self::check_range(mm, start, len)?;
        let mut w = mm.write();
        {
            let mut vmas = w.vmas_in(start, end).peekable();
            let first = vmas.peek().ok_or(MmError::Inval)?;
            if is_hugetlb(first) && start % HPAGE_SIZE != 0 {
                return Err(MmError::Inval);
            }
            for v in vmas {
                let ctx = v.uffd();
                if ctx.is_some() && !Self::same(&ctx, self) {
                    return Err(MmError::Inval);
                }
                if !self.can_userfault(v, v.flags() & VmFlags::UFFD_FLAGS) {
                    return Err(MmError::Inval);
                }
            }
        }
        self.clear_range(&mut w, start, end)?;
        Ok(())
    }

    /// `userfaultfd_clear_vma` over a range: wake faults of MISSING VMAs, drop the context.
    fn clear_range(
        self: &Arc<Self>,
        w: &mut MmWriteGuard<'_>,
        start: u64,
        end: u64,
    ) -> Result<(), MmError> {
        let mut wake = Vec::new();
        w.apply(start, end, None, |v| {
            if !Self::same(&v.uffd(), self) {
                return Change::Keep;
            }
            if v.flags().contains(VmFlags::UFFD_MISSING) {
                wake.push((v.start().max(start), v.end().min(end)));
            }
            let mut d = v.desc();
            d.flags = d.flags.without(VmFlags::UFFD_FLAGS);
            d.uffd = None;
            Change::Set(d)
        })?;
        for (s, e) in wake {
            self.wake_range(s, e - s);
        }
        Ok(())
    }

    /// Closing the fd (`userfaultfd_release`): marks the context released, clears it from every
    /// VMA of `mm` (if given; re-merging), and wakes every waiting fault, event generator and
    /// reader.
    pub fn release(self: &Arc<Self>, mm: Option<&Mm>) {
        // ORDERING: M5
        self.released.store(true, Ordering::Release);
        if let Some(mm) = mm.filter(|m| m.id() == self.mm_id) {
            let mut w = mm.write();
            let top = mm.config().task_size;
            // Failing here would need max_map_count hit by a merge-only change: cannot happen.
            let r = self.clear_range(&mut w, 0, top);
            debug_assert!(r.is_ok());
        }
        let mut q = self.q.lock();
        let q = &mut *q;
        for f in q.fault_pending.drain(..).chain(q.fault_read.drain(..)) {
            // ORDERING: M7
            f.woken.store(true, Ordering::Release);
        }
        self.waiters.notify_all();
        self.readers.notify_all();
    }

    /// `poll()`: `EPOLLERR` before the handshake or for a blocking fd, `EPOLLIN` when a fault or
    /// event is queued, `EPOLLHUP` after release.
    pub fn poll(&self) -> PollEvents {
        let q = self.q.lock();
        PollEvents {
            err: !self.is_initialized() || self.flags & O_NONBLOCK == 0,
            input: !q.fault_pending.is_empty() || !q.events.is_empty(),
            hup: self.is_released(),
        }
    }

    /// `read()`: the oldest unread fault (moved to the read queue), else the oldest event (which
    /// completes it: its generator is woken). Nothing queued: `EAGAIN` if `nonblock` or the
    /// context is `O_NONBLOCK`, else waits. Not initialised: `EINVAL`; released with nothing
    /// queued: `EINVAL` (the fd is gone).
    pub fn read(&self, nonblock: bool) -> Result<UffdMsg, MmError> {
        if !self.is_initialized() {
            return Err(MmError::Inval);
        }
        let mut q = self.q.lock();
        loop {
            if let Some(f) = q.fault_pending.pop_front() {
                let msg = UffdMsg::Pagefault {
                    flags: f.flags,
                    address: f.address,
                };
                q.fault_read.push(f);
                return Ok(msg);
            }
            if let Some(e) = q.events.pop_front() {
                // ORDERING: M7
                e.done.store(true, Ordering::Release);
                let msg = e.msg.clone();
                drop(q);
                self.waiters.notify_all();
                return Ok(msg);
            }
            if self.is_released() {
                return Err(MmError::Inval);
            }
            if nonblock || self.flags & O_NONBLOCK != 0 {
                return Err(MmError::Again);
            }
            self.readers.wait(&mut q);
        }
    }

    /// Number of faults queued and not yet read, and read but not yet resolved.
    pub fn queued_faults(&self) -> (usize, usize) {
        let q = self.q.lock();
        (q.fault_pending.len(), q.fault_read.len())
    }

    /// Number of events queued and not yet read.
    pub fn queued_events(&self) -> usize {
        self.q.lock().events.len()
    }

    /// `wake_userfault`: wakes the faults waiting in `[start, start + len)` (`len == 0`: all).
    fn wake_range(&self, start: u64, len: u64) {
        let hit = |f: &FaultWaiter| len == 0 || (f.address >= start && f.address - start < len);
        let mut q = self.q.lock();
        let mut woke = false;
        q.fault_pending.retain(|f| {
            let h = hit(f);
            if h {
                // ORDERING: M7
                f.woken.store(true, Ordering::Release);
                woke = true;
            }
            !h
        });
        q.fault_read.retain(|f| {
            let h = hit(f);
            if h {
                // ORDERING: M7
                f.woken.store(true, Ordering::Release);
                woke = true;
            }
            !h
        });
        drop(q);
        if woke {
            self.waiters.notify_all();
        }
    }

    /// `UFFDIO_WAKE`: wakes the faults waiting in the range (they retry).
    pub fn wake(&self, mm: &Mm, start: u64, len: u64) -> Result<(), MmError> {
        if !self.is_initialized() {
            return Err(MmError::Inval);
        }
        Self::check_range(mm, start, len)?;
        self.wake_range(start, len);
        Ok(())
    }

    /// `UFFDIO_COPY`: fills the pages at `dst` with `data` (zero-padded to whole pages) and,
    /// unless `dontwake`, wakes the faults waiting there. Returns the bytes copied. While a
    /// non-cooperative event is in flight: `EAGAIN`. Unaligned `dst` or empty `data`: `EINVAL`;
    /// `dst` outside a VMA registered to this context: `ENOENT`; a page already populated:
    /// `EEXIST` (pages before it stay filled, as the kernel's partial copy).
    pub fn copy(&self, mm: &Mm, dst: u64, data: &[u8], dontwake: bool) -> Result<u64, MmError> {
        self.fill(mm, dst, data.len() as u64, Some(data), dontwake)
    }

    /// `UFFDIO_ZEROPAGE`: as [`copy`](Self::copy) with zeros over `len` bytes (page multiple).
    pub fn zeropage(&self, mm: &Mm, dst: u64, len: u64, dontwake: bool) -> Result<u64, MmError> {
        if !is_page_aligned(len) {
            return Err(MmError::Inval);
        }
        self.fill(mm, dst, len, None, dontwake)
    }

    fn fill(
        &self,
        mm: &Mm,
        dst: u64,
        len: u64,
        data: Option<&[u8]>,
        dontwake: bool,
    ) -> Result<u64, MmError> {
        self.check_ready(mm)?;
        if !is_page_aligned(dst) || len == 0 {
            return Err(MmError::Inval);
        }
        let pages = len.div_ceil(PAGE_SIZE);
        dst.checked_add(pages * PAGE_SIZE)
            .filter(|&e| e <= mm.config().task_size)
            .ok_or(MmError::Inval)?;
        let mut done = 0u64;
        let res = self.fill_gate(|| {
            let r = mm.read();
            for i in 0..pages {
                let page = dst + i * PAGE_SIZE;
                let v = r.vma_lookup(page).ok_or(MmError::NoEnt)?;
                if !Self::same(&v.uffd(), self) {
                    return Err(MmError::NoEnt);
                }
                let mut pt = mm.pages.lock();
                if pt.get(page).is_some() {
                    return Err(MmError::Exist);
                }
                let frame = match data {
                    Some(d) => {
                        let off = (i * PAGE_SIZE) as usize;
                        super::PageFrame::from_bytes(&d[off..d.len().min(off + PAGE_SIZE as usize)])
                    }
                    None => super::PageFrame::zeroed(),
                };
                pt.insert(page, frame);
                done += PAGE_SIZE;
            }
            Ok(())
        });
        if !dontwake && done > 0 {
            self.wake_range(dst, done);
        }
        res.map(|()| len)
    }

    /// The fill ioctls' guard against non-cooperative events (`mfill_atomic`): with
    /// `map_changing_lock` read-held, `mmap_changing > 0` fails with `EAGAIN`; otherwise `f` runs
    /// with the lock still held, so an event's prep (which takes it written) waits for the fill.
    fn fill_gate<R>(&self, f: impl FnOnce() -> Result<R, MmError>) -> Result<R, MmError> {
        #[cfg(loom)]
        let locked = !crate::loom_knobs::fill_without_lock();
        #[cfg(not(loom))]
        let locked = true;
        let _changing = locked.then(|| self.map_changing_lock.read());
        if self.mmap_changing() > 0 {
            return Err(MmError::Again);
        }
        f()
    }

    // ----- faults ---------------------------------------------------------------------------

    /// `handle_userfault` up to the sleep: decides, and queues the fault (called with the VMA
    /// locked and the page table checked). `Ok(None)`: released; handle it as a normal fault.
    pub(crate) fn queue_fault(
        &self,
        address: u64,
        write: bool,
    ) -> Result<Option<FaultWaiterHandle>, MmError> {
        if self.has(feature::SIGBUS) {
            return Err(MmError::Fault);
        }
        if self.is_released() {
            return Ok(None);
        }
        let flags = if write { UFFD_PAGEFAULT_FLAG_WRITE } else { 0 };
        let address = if self.has(feature::EXACT_ADDRESS) {
            address
        } else {
            address & !(PAGE_SIZE - 1)
        };
        let w = Arc::new(FaultWaiter {
            address,
            flags,
            woken: AtomicBool::new(false),
        });
        self.q.lock().fault_pending.push_back(Arc::clone(&w));
        self.readers.notify_all();
        Ok(Some(FaultWaiterHandle(w)))
    }

    /// The sleep of `handle_userfault` (after the VMA lock was dropped): until woken or released.
    pub(crate) fn wait_fault(&self, h: &FaultWaiterHandle) {
        let mut q = self.q.lock();
        // ORDERING: M7
        while !h.0.woken.load(Ordering::Acquire) && !self.is_released() {
            self.waiters.wait(&mut q);
        }
    }

    // ----- non-cooperative events --------------------------------------------------------------

    /// The prep half of every event: a reference and `mmap_changing += 1`.
    fn event_prep(&self) {
        let _w = self.map_changing_lock.write();
        // ORDERING: M6
        self.mmap_changing.fetch_add(1, Ordering::AcqRel);
    }

    /// The complete half (after the mmap lock is dropped): posts `msg`, waits until it is read
    /// (or the context is released), then `mmap_changing -= 1`. Returns whether it was read.
    fn event_complete(&self, msg: UffdMsg) -> bool {
        let e = Arc::new(EventWaiter {
            msg,
            done: AtomicBool::new(false),
        });
        let mut q = self.q.lock();
        q.events.push_back(Arc::clone(&e));
        self.readers.notify_all();
        #[cfg(loom)]
        let wait = !crate::loom_knobs::event_no_wait();
        #[cfg(not(loom))]
        let wait = true;
        // ORDERING: M7
        while wait && !e.done.load(Ordering::Acquire) && !self.is_released() {
            self.waiters.wait(&mut q);
        }
        // ORDERING: M7
        if wait && !e.done.load(Ordering::Acquire) {
            q.events.retain(|x| !Arc::ptr_eq(x, &e));
        }
        drop(q);
        let _w = self.map_changing_lock.write();
        // ORDERING: M6
        self.mmap_changing.fetch_sub(1, Ordering::AcqRel);
        // ORDERING: M7
        e.done.load(Ordering::Acquire)
    }
}

/// The halves of the event handshake and the fill gate, for the loom models only (not part of
/// the API): `tests/loom_uffd_event.rs` runs them as a generator (`mremap`, `fork`, ...) and a
/// monitor do.
#[cfg(loom)]
#[doc(hidden)]
impl UffdCtx {
    /// The prep half of an event (`mremap_userfaultfd_prep` and friends).
    pub fn loom_event_prep(&self) {
        self.event_prep();
    }

    /// The complete half: posts `msg` and waits until it is read; whether it was.
    pub fn loom_event_complete(&self, msg: UffdMsg) -> bool {
        self.event_complete(msg)
    }

    /// Runs `f` as a fill ioctl runs its copy: behind the `mmap_changing` gate.
    pub fn loom_fill<R>(&self, f: impl FnOnce() -> R) -> Result<R, MmError> {
        self.fill_gate(|| Ok(f()))
    }
}

/// A queued fault, handed from [`UffdCtx::queue_fault`] to [`UffdCtx::wait_fault`].
#[derive(Debug)]
pub(crate) struct FaultWaiterHandle(Arc<FaultWaiter>);

fn is_hugetlb(v: &Vma) -> bool {
    v.kind().is_hugetlb() || v.flags().contains(VmFlags::HUGETLB)
}

/// Non-cooperative events collected under the mmap write lock and completed after it is
/// released (see [`MmWriteGuard`]'s field order).
#[derive(Default)]
pub(crate) struct PendingEvents {
    list: Vec<(Arc<UffdCtx>, UffdMsg)>,
}

impl PendingEvents {
    /// `*_prep`: if `ctx` has `feat`, raise its `mmap_changing` and remember the event
    /// (de-duplicated). Returns whether the context takes the event.
    pub(crate) fn prep(&mut self, ctx: &Arc<UffdCtx>, feat: u64, msg: UffdMsg) -> bool {
        if !ctx.has(feat) || ctx.is_released() {
            return false;
        }
        let dup = self
            .list
            .iter()
            .any(|(c, m)| Arc::ptr_eq(c, ctx) && same_range(m, &msg));
        if !dup {
            ctx.event_prep();
            self.list.push((Arc::clone(ctx), msg));
        }
        true
    }

    /// Takes the events out (to complete them elsewhere).
    pub(crate) fn take(&mut self) -> Vec<(Arc<UffdCtx>, UffdMsg)> {
        std::mem::take(&mut self.list)
    }

    /// Completes every event in order, each waiting for the monitor.
    pub(crate) fn complete_all(events: Vec<(Arc<UffdCtx>, UffdMsg)>) {
        for (ctx, msg) in events {
            ctx.event_complete(msg);
        }
    }
}

impl Drop for PendingEvents {
    fn drop(&mut self) {
        Self::complete_all(self.take());
    }
}

fn same_range(a: &UffdMsg, b: &UffdMsg) -> bool {
    match (a, b) {
        (UffdMsg::Unmap { start: s1, end: e1 }, UffdMsg::Unmap { start: s2, end: e2 })
        | (UffdMsg::Remove { start: s1, end: e1 }, UffdMsg::Remove { start: s2, end: e2 }) => {
            s1 == s2 && e1 == e2
        }
        _ => false,
    }
}

// ----- fork --------------------------------------------------------------------------------------

/// The cost setting of the fork model. Without the `bench-internals` feature there is only the
/// kernel's ([`CostSetting::Faithful`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CostSetting {
    /// As the kernel: the child VMA is write-locked for the `VM_LOCKED_MASK` clear in
    /// `dup_mmap` (`vm_flags_clear`, which calls `vma_start_write`) whether or not
    /// `dup_userfaultfd` locked it, so the early return only moves the lock acquisition.
    Faithful,
    /// An experiment knob (feature `bench-internals`): the `VM_LOCKED_MASK` clear does not take
    /// the VMA lock, so the early return saves the whole acquisition (makes the effect visible;
    /// not what the kernel does).
    #[cfg(feature = "bench-internals")]
    Amplified,
}

/// Deterministic counters of one fork (what the seed patch, kernel commit "userfaultfd: early
/// return in dup_userfaultfd()", saves).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForkCounters {
    /// `vma_start_write` calls made by `dup_userfaultfd` (the pre-patch path for VMAs without a
    /// context, and the reset of VMAs whose context lacks `EVENT_FORK`).
    pub dup_uffd_start_write_calls: u64,
    /// Writes of a VMA's uffd context and flags by `dup_userfaultfd`.
    pub uffd_flag_writes: u64,
    /// Child contexts created (one per parent context with `EVENT_FORK`).
    pub child_contexts: u64,
}

struct ForkCtx {
    orig: Arc<UffdCtx>,
    new: Arc<UffdCtx>,
}

/// The userfaultfd fork hook: `dup_userfaultfd` per VMA, then `dup_userfaultfd_complete` or
/// `_fail`. Outcomes per parent VMA:
///
/// - no context: the child VMA is identical (with [`seed_patch`](Self::seed_patch) on, this
///   costs a load and a branch; off, it takes the pre-v6.10 path: write-lock, clear, store);
/// - a context without `EVENT_FORK`: the child VMA loses the context and its uffd flags;
/// - `EVENT_FORK`: one new context per parent context, shared by all child VMAs that came
///   from it (flags kept); the parent's `mmap_changing` rises by one per child context until the
///   monitor reads the FORK event, and the fork does not return until then — or, if the monitor
///   closes the parent's fd first, the child's VMAs are reset.
///
/// ```
/// use maple_mm::uffd::{feature, mode, DupUffd, UffdCtx, CostSetting};
/// use maple_mm::{DupMode, MapFlags, MapSource, Mm, Prot, VmFlags, PAGE_SIZE};
/// let mm = Mm::new();
/// for i in 0..4u64 {
///     let prot = if i % 2 == 0 { Prot::READ | Prot::WRITE } else { Prot::READ };
///     mm.mmap(0x1000_0000 + i * PAGE_SIZE, PAGE_SIZE, prot, MapFlags::PRIVATE | MapFlags::FIXED, MapSource::Anon).unwrap();
/// }
/// let ctx = UffdCtx::with_features(&mm, 0); // no EVENT_FORK
/// ctx.register(&mm, 0x1000_0000, PAGE_SIZE, mode::MISSING).unwrap();
/// for (seed, expect) in [(true, 1), (false, 4)] {
///     let mut hook = DupUffd::new(seed, CostSetting::Faithful);
///     let child = mm.fork_with(DupMode::Dup, &mut hook).unwrap();
///     // Before the patch every VMA takes the write-lock path; after it only the registered one.
///     assert_eq!(hook.counters().dup_uffd_start_write_calls, expect);
///     assert!(child.snapshot().iter().all(|v| v.desc.uffd.is_none() && !v.desc.flags.intersects(VmFlags::UFFD_FLAGS)));
/// }
/// assert!(mm.snapshot()[0].desc.uffd.is_some()); // the parent is untouched
/// ```
pub struct DupUffd {
    seed_patch: bool,
    cost: CostSetting,
    fcs: Vec<ForkCtx>,
    counters: ForkCounters,
    /// FORK events that were read by the monitor, per completed fork.
    delivered: u64,
}

impl DupUffd {
    /// A hook with the seed patch on or off and the given cost setting.
    pub fn new(seed_patch: bool, cost: CostSetting) -> Self {
        DupUffd {
            seed_patch,
            cost,
            fcs: Vec::new(),
            counters: ForkCounters::default(),
            delivered: 0,
        }
    }

    /// Whether the early return is on.
    pub fn seed_patch(&self) -> bool {
        self.seed_patch
    }

    /// The counters accumulated so far.
    pub fn counters(&self) -> ForkCounters {
        self.counters
    }

    /// FORK events the monitor read (across forks run with this hook).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// `userfaultfd_reset_ctx`: write-lock, no context, no uffd flags.
    fn reset(&mut self, env: &ForkEnv<'_>, vma: &Vma) {
        vma.start_write(env.child_locks);
        self.counters.dup_uffd_start_write_calls += 1;
        vma.set_uffd(None);
        vma.set_flags(vma.flags().without(VmFlags::UFFD_FLAGS));
        self.counters.uffd_flag_writes += 1;
    }
}

impl ForkHook for DupUffd {
    fn dup_vma(&mut self, env: &ForkEnv<'_>, vma: &Vma) -> Result<(), MmError> {
        // The early return: a load and a branch.
        if self.seed_patch && !vma.has_uffd() {
            return Ok(());
        }
        let Some(octx) = vma.uffd() else {
            self.reset(env, vma);
            return Ok(());
        };
        if !octx.has(feature::EVENT_FORK) {
            self.reset(env, vma);
            return Ok(());
        }
        let new = match self.fcs.iter().find(|f| Arc::ptr_eq(&f.orig, &octx)) {
            Some(f) => Arc::clone(&f.new),
            None => {
                let new = Arc::new(UffdCtx::raw(
                    env.child_id,
                    octx.flags,
                    octx.privileged,
                    octx.features(),
                ));
                octx.event_prep();
                self.fcs.push(ForkCtx {
                    orig: Arc::clone(&octx),
                    new: Arc::clone(&new),
                });
                self.counters.child_contexts += 1;
                new
            }
        };
        vma.set_uffd(Some(new));
        Ok(())
    }

    fn locked_clear_write_locks(&self) -> bool {
        self.cost == CostSetting::Faithful
    }

    fn complete(&mut self, child: &Mm) {
        for f in std::mem::take(&mut self.fcs) {
            let read = f.orig.event_complete(UffdMsg::Fork {
                ctx: Arc::clone(&f.new),
            });
            if read {
                self.delivered += 1;
            } else {
                // userfaultfd_release_new: the monitor went away; reset the child's VMAs.
                f.new.release(Some(child));
            }
        }
    }

    fn fail(&mut self) {
        for f in std::mem::take(&mut self.fcs) {
            let _w = f.orig.map_changing_lock.write();
            // ORDERING: M6
            f.orig.mmap_changing.fetch_sub(1, Ordering::AcqRel);
            // ORDERING: M5
            f.new.released.store(true, Ordering::Release);
        }
    }
}

/// One measured configuration of the fork+exit workload (through [`DupUffd`]), for demos
/// and reports: timing next to the deterministic counters (feature `bench-internals`).
#[cfg(feature = "bench-internals")]
#[derive(Clone, Copy, Debug)]
pub struct ForkExitRun {
    /// Mean wall-clock time of one fork+exit.
    pub mean: std::time::Duration,
    /// The hook's counters for one fork.
    pub counters: ForkCounters,
    /// Real per-VMA lock acquisitions in the child, for one fork.
    pub child_lock_acquisitions: u64,
    /// `vma_start_write` calls on the child's VMAs, for one fork.
    pub child_start_write_calls: u64,
}

/// Times `reps` fork+exit of `mm` (the new `dup_mmap`) with the seed patch on or off under
/// `cost`, after one untimed fork that provides the counters.
///
/// ```
/// use maple_mm::uffd::{fork_exit_run, CostSetting};
/// use maple_mm::{MapFlags, MapSource, Mm, Prot, PAGE_SIZE};
/// let mm = Mm::new();
/// for i in 0..8u64 {
///     let prot = if i % 2 == 0 { Prot::READ } else { Prot::READ | Prot::WRITE };
///     mm.mmap(0x1000_0000 + i * PAGE_SIZE, PAGE_SIZE, prot, MapFlags::PRIVATE | MapFlags::FIXED, MapSource::Anon).unwrap();
/// }
/// let before = fork_exit_run(&mm, false, CostSetting::Faithful, 3).unwrap();
/// let after = fork_exit_run(&mm, true, CostSetting::Faithful, 3).unwrap();
/// assert_eq!((before.counters.dup_uffd_start_write_calls, after.counters.dup_uffd_start_write_calls), (8, 0));
/// assert_eq!((before.child_lock_acquisitions, after.child_lock_acquisitions), (8, 8));
/// ```
#[cfg(feature = "bench-internals")]
pub fn fork_exit_run(
    mm: &Mm,
    seed_patch: bool,
    cost: CostSetting,
    reps: u32,
) -> Result<ForkExitRun, MmError> {
    let mut hook = DupUffd::new(seed_patch, cost);
    let child = mm.fork_with(crate::DupMode::Dup, &mut hook)?;
    let counters = hook.counters();
    let child_lock_acquisitions = child.lock_state().lock_acquisitions();
    let child_start_write_calls = child.lock_state().start_write_calls();
    drop(child);
    let reps = reps.max(1);
    let t = std::time::Instant::now();
    for _ in 0..reps {
        let mut hook = DupUffd::new(seed_patch, cost);
        mm.fork_with(crate::DupMode::Dup, &mut hook)?.exit();
    }
    Ok(ForkExitRun {
        mean: t.elapsed() / reps,
        counters,
        child_lock_acquisitions,
        child_start_write_calls,
    })
}
