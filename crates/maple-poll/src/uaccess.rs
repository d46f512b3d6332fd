//! "User memory" and the user-access window (the kernel's `user_access_begin`/`_end`,
//! `access_ok`, `copy_from_user`, `copy_to_user`, `put_user`, `unsafe_put_user`).
//!
//! [`UserMemory`] is the user address space of the model: one mapping at [`UserMemory::base`]
//! inside `[0, TASK_SIZE)`. The user program reads and writes it freely through the
//! `UserMemory::*_pollfds` methods. Kernel-side code goes through a [`Uaccess`], which may touch
//! user memory only inside a [`UserWindow`]: `begin(range)` does `access_ok` on the whole range
//! (failure: `EFAULT`, no window opened), opens the window (x86 `stac`), and the guard closes it
//! (`clac`) when dropped — on the error paths too. A store to an unmapped page is a fault that
//! the accessor turns into `EFAULT`, like the kernel's exception-table fixup.
//!
//! What a window costs is the [`WindowMode`]: counted only, a calibrated spin (the default,
//! [`WindowCost::SMAP`]), or real x86 protection keys: the mapping is tagged with a
//! key whose access is disabled in "kernel mode", `WRPKRU` opens and closes the window, and any
//! kernel-side access outside a window faults for real (`SIGSEGV`, `SEGV_PKUERR`).

use crate::sync::{AtomicBool, OnceLock, Ordering};
use core::marker::PhantomData;
use core::ops::{AddAssign, Sub};
use std::time::Instant;

use super::sys::{self, Mapping, Pkey, PAGE_SIZE};
use super::{Errno, PollFd};

/// The cost of opening and closing one user-access window in the calibrated model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowCost {
    /// Nanoseconds spent when a window opens (`stac`).
    pub open_ns: f64,
    /// Nanoseconds spent when a window closes (`clac`).
    pub close_ns: f64,
}

impl WindowCost {
    /// The cost is the whole marginal cost of a window: the model's own bookkeeping per window
    /// (measured once, [`window_bookkeeping_ns`](super::window_bookkeeping_ns)) is subtracted
    /// and the rest is spun.
    ///
    /// x86 SMAP, calibrated on the proposed patch "fs/select.c: batch user writes in do_sys_poll", which
    /// measured ~1.25x on poll2 (n = 128 windows → 1)
    /// with a kernel `poll()` of T_new ≈ 1.74 µs, so `C_win = (S − 1)·T_new/(n − 1)` ≈ 3.4 ns per
    /// `stac`+`clac` pair (≈ 9 cycles at 2.5 GHz), split evenly.
    pub const SMAP: WindowCost = WindowCost {
        open_ns: 1.7,
        close_ns: 1.7,
    };
    /// powerpc Book3S-64 KUAP on this machine's time base (S ≈ 1.49 → ≈ 6.7 ns per pair).
    pub const KUAP: WindowCost = WindowCost {
        open_ns: 3.35,
        close_ns: 3.35,
    };
    /// No cost: windows are only counted.
    pub const FREE: WindowCost = WindowCost {
        open_ns: 0.0,
        close_ns: 0.0,
    };

    /// The per-pair cost that makes going from `n` windows to one a speed-up of `speedup` when a
    /// call with one window takes `t_new_ns`: `C_win = (S − 1)·T_new/(n − 1)`, split evenly.
    /// `EINVAL` unless `speedup ≥ 1`, `t_new_ns > 0` (both finite) and `n ≥ 2`.
    ///
    /// A calibration helper for experiments (feature `bench-internals`).
    ///
    /// ```
    /// use maple_poll::WindowCost;
    /// let c = WindowCost::for_speedup(1.25, 1740.0, 128).unwrap();
    /// assert!((c.pair_ns() - 3.43).abs() < 0.01);
    /// assert!(WindowCost::for_speedup(0.5, 1740.0, 128).is_err());
    /// ```
    #[cfg(feature = "bench-internals")]
    pub fn for_speedup(speedup: f64, t_new_ns: f64, n: u32) -> Result<Self, Errno> {
        if !speedup.is_finite()
            || !t_new_ns.is_finite()
            || speedup < 1.0
            || t_new_ns <= 0.0
            || n < 2
        {
            return Err(Errno::EINVAL);
        }
        let pair = (speedup - 1.0) * t_new_ns / f64::from(n - 1);
        Ok(WindowCost {
            open_ns: pair / 2.0,
            close_ns: pair / 2.0,
        })
    }

    /// The cost of one open + close pair.
    pub fn pair_ns(&self) -> f64 {
        self.open_ns + self.close_ns
    }
}

impl Default for WindowCost {
    fn default() -> Self {
        WindowCost::SMAP
    }
}

/// How user-access windows are realised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WindowMode {
    /// Windows are counted and cost nothing.
    Counted,
    /// Windows are counted and each open/close spins for the calibrated time (the default,
    /// with [`WindowCost::SMAP`]).
    Model(WindowCost),
    /// Real, enforcing windows with x86 protection keys where the CPU and kernel support them
    /// (detected at run time); otherwise [`UserMemory::new`] falls back to the SMAP model and
    /// [`UserMemory::enforcement`] says why.
    Pkey,
}

impl Default for WindowMode {
    /// `Model(WindowCost::SMAP)`.
    fn default() -> Self {
        WindowMode::Model(WindowCost::SMAP)
    }
}

/// How this memory's windows are enforced, as resolved at creation.
#[derive(Clone, Debug, PartialEq)]
pub enum Enforcement {
    /// Protection key `key` tags the mapping: an access outside a window faults.
    Pkey {
        /// The key number.
        key: u32,
    },
    /// Not enforced; windows are counted and costed by the model.
    Model {
        /// The cost per window.
        cost: WindowCost,
        /// Why protection keys are not in use, if they were asked for.
        fallback_reason: Option<String>,
    },
}

static PKEY: OnceLock<Result<Pkey, String>> = OnceLock::new();

/// Whether real enforcing windows (x86 protection keys) work here: `Ok(key number)`, or why not.
/// One key is allocated for the whole process on first use. Setting the environment variable
/// `MAPLE_POLL_PKEYS=0` turns them off.
pub fn pkeys_available() -> Result<u32, String> {
    global_pkey().map(Pkey::number)
}

fn global_pkey() -> Result<&'static Pkey, String> {
    PKEY.get_or_init(|| {
        if std::env::var_os("MAPLE_POLL_PKEYS").is_some_and(|v| v == "0") {
            return Err("protection keys disabled by MAPLE_POLL_PKEYS=0".into());
        }
        sys::pkey_alloc()
    })
    .as_ref()
    .map_err(Clone::clone)
}

#[inline(always)]
fn spin(iters: u64) {
    for i in 0..iters {
        core::hint::black_box(i);
    }
}

/// Spin-loop iterations per nanosecond on this machine (measured once, best of several runs).
fn spin_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        const N: u64 = 200_000;
        let best = (0..9)
            .map(|_| {
                let t = Instant::now();
                spin(N);
                t.elapsed().as_nanos().max(1) as f64
            })
            .fold(f64::INFINITY, f64::min);
        N as f64 / best
    })
}

/// Spin iterations for `ns` nanoseconds, rounded (a fixed count per window keeps the loop's
/// exit branch predictable, so the cost is what the count says).
fn iters_for(ns: f64) -> u64 {
    if ns <= 0.0 || !ns.is_finite() {
        return 0;
    }
    (ns * spin_per_ns()).round().clamp(0.0, 1e12) as u64
}

enum Backend {
    Counted,
    /// Spin iterations per open and per close.
    Model {
        open: u64,
        close: u64,
    },
    Pkey(&'static Pkey),
}

/// A user address space holding one mapping, touched by kernel-side code only inside windows.
///
/// ```
/// use maple_poll::{Errno, PollFd, UaccessStats, UserMemory, WindowMode};
///
/// let mm = UserMemory::new(4096, WindowMode::Counted).unwrap();
/// let a = mm.base();
/// mm.write_pollfds(a, &[PollFd::new(3, 1)]).unwrap();
///
/// let mut ua = mm.uaccess();
/// let mut buf = [PollFd::default(); 1];
/// ua.copy_from_user(&mut buf, a).unwrap();
/// assert_eq!(buf[0].fd, 3);
/// // access_ok fails past TASK_SIZE: EFAULT, and no window was opened.
/// assert_eq!(ua.copy_from_user(&mut buf, u64::MAX - 3), Err(Errno::EFAULT));
/// // Inside TASK_SIZE but unmapped: the window opens, faults, and is closed again.
/// assert_eq!(ua.copy_from_user(&mut buf, mm.end()), Err(Errno::EFAULT));
/// let st: UaccessStats = ua.stats();
/// assert_eq!((st.read_windows, st.windows_closed, st.access_ok_failures, st.faults), (2, 2, 1, 1));
/// ```
pub struct UserMemory {
    map: Mapping,
    base: u64,
    mapped: Box<[AtomicBool]>,
    backend: Backend,
    enforcement: Enforcement,
}

impl UserMemory {
    /// `TASK_SIZE_MAX` on x86-64 with 4-level paging: `access_ok` fails for ranges beyond it.
    pub const TASK_SIZE: u64 = 0x7fff_ffff_f000;
    /// The user address of the mapping's first byte.
    pub const BASE: u64 = 0x1000_0000;

    /// [`UserMemory::new`] with the model's bookkeeping per window given by `bookkeeping_ns`
    /// (asked only for a costed model; `new` passes the measured
    /// [`window_bookkeeping_ns`](crate::window_bookkeeping_ns)).
    pub(crate) fn with_bookkeeping(
        len: usize,
        mode: WindowMode,
        bookkeeping_ns: impl Fn() -> f64,
    ) -> Result<Self, Errno> {
        if len as u64 > Self::TASK_SIZE - Self::BASE {
            return Err(Errno::ENOMEM);
        }
        let map = Mapping::new(len).ok_or(Errno::ENOMEM)?;
        let pages = map.len() / PAGE_SIZE;
        let mapped = (0..pages).map(|_| AtomicBool::new(true)).collect();
        let model = |cost: WindowCost, fallback_reason: Option<String>| {
            (
                if cost == WindowCost::FREE {
                    Backend::Counted
                } else {
                    let half = bookkeeping_ns() / 2.0;
                    Backend::Model {
                        open: iters_for(cost.open_ns - half),
                        close: iters_for(cost.close_ns - half),
                    }
                },
                Enforcement::Model {
                    cost,
                    fallback_reason,
                },
            )
        };
        let (backend, enforcement) = match mode {
            WindowMode::Counted => (
                Backend::Counted,
                Enforcement::Model {
                    cost: WindowCost::FREE,
                    fallback_reason: None,
                },
            ),
            WindowMode::Model(cost) => model(cost, None),
            WindowMode::Pkey => match global_pkey() {
                Ok(key) => match map.pkey_mprotect(key) {
                    Ok(()) => {
                        // Kernel mode on this thread from now on; other threads are put into it
                        // at their first `uaccess()`.
                        key.deny();
                        (Backend::Pkey(key), Enforcement::Pkey { key: key.number() })
                    }
                    Err(e) => model(
                        WindowCost::SMAP,
                        Some(format!("pkey_mprotect failed: errno {e}")),
                    ),
                },
                Err(why) => model(WindowCost::SMAP, Some(why)),
            },
        };
        Ok(UserMemory {
            map,
            base: Self::BASE,
            mapped,
            backend,
            enforcement,
        })
    }

    /// How windows are enforced (and, if protection keys were asked for but are unavailable,
    /// why).
    pub fn enforcement(&self) -> &Enforcement {
        &self.enforcement
    }

    /// Whether windows are enforced by protection keys.
    pub fn is_enforcing(&self) -> bool {
        matches!(self.backend, Backend::Pkey(_))
    }

    /// With protection keys, whether this thread can touch the memory right now (a window is
    /// open, or the thread is in user mode): `Some(false)` in kernel mode outside a window.
    /// `None` when windows are not enforced.
    pub fn access_allowed_here(&self) -> Option<bool> {
        match self.backend {
            Backend::Pkey(key) => Some(key.is_allowed()),
            _ => None,
        }
    }

    /// The user address of the first byte of the mapping.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }

    /// Always `false`: a mapping has at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// One past the mapping's last byte (still below `TASK_SIZE`, so `access_ok` passes there but
    /// accesses fault).
    pub fn end(&self) -> u64 {
        self.base + self.len()
    }

    fn page_range(&self, addr: u64, len: u64) -> Result<core::ops::Range<usize>, Errno> {
        let ps = PAGE_SIZE as u64;
        let off = addr.checked_sub(self.base).ok_or(Errno::EINVAL)?;
        let end = off.checked_add(len).ok_or(Errno::EINVAL)?;
        if off % ps != 0 || len == 0 || end > self.len() {
            return Err(Errno::EINVAL);
        }
        Ok((off / ps) as usize..end.div_ceil(ps) as usize)
    }

    /// `munmap` in the model: the pages of `[addr, addr + len)` become unmapped, so accesses
    /// there fault (`EFAULT` for the kernel, `EFAULT` from the user accessors). `EINVAL` if
    /// `addr` is not page-aligned, `len` is 0, or the range leaves the mapping.
    pub fn munmap(&self, addr: u64, len: u64) -> Result<(), Errno> {
        for p in self.page_range(addr, len)? {
            // ORDERING: M10
            self.mapped[p].store(false, Ordering::Release);
        }
        Ok(())
    }

    /// Maps the pages of `[addr, addr + len)` back (same rules as [`munmap`](Self::munmap));
    /// their contents are what they were.
    pub fn remap(&self, addr: u64, len: u64) -> Result<(), Errno> {
        for p in self.page_range(addr, len)? {
            // ORDERING: M10
            self.mapped[p].store(true, Ordering::Release);
        }
        Ok(())
    }

    /// The first address of `[addr, end)` that is not mapped (outside the mapping, or in an
    /// unmapped page), or `end` if all of it is mapped. Accessors check this once per window or
    /// per batch, not per entry, as the MMU costs nothing per access.
    #[inline(always)]
    fn mapped_end(&self, addr: u64, end: u64) -> u64 {
        if addr >= end {
            return end;
        }
        let Some(off) = addr.checked_sub(self.base) else {
            return addr;
        };
        if off >= self.len() {
            return addr;
        }
        let lim = (end - self.base).min(self.len());
        let mut page = off as usize / PAGE_SIZE;
        // The common case, a range inside one mapped page.
        if lim <= ((page + 1) * PAGE_SIZE) as u64 && self.mapped[page].load(Ordering::Relaxed) {
            return self.base + lim;
        }
        let mut ok = off;
        while ok < lim && self.mapped[page].load(Ordering::Relaxed) {
            page += 1;
            ok = (page * PAGE_SIZE) as u64;
        }
        self.base + ok.min(lim)
    }

    /// How many of the `n` entries at `addr` are mapped, from the first on.
    #[inline]
    fn mapped_entries(&self, addr: u64, n: usize) -> usize {
        let Some(end) = addr.checked_add(n as u64 * PollFd::SIZE) else {
            return 0;
        };
        let ok_end = self.mapped_end(addr, end);
        ((ok_end - addr.min(ok_end)) / PollFd::SIZE) as usize
    }

    /// Loads the entry at mapping offset `off` (already known to be mapped).
    #[inline]
    fn load_pollfd_at(&self, off: usize) -> Option<PollFd> {
        Some(PollFd {
            fd: self.map.load_i32(off)?,
            events: self.map.load_u16(off + 4)?,
            revents: self.map.load_u16(off + 6)?,
        })
    }

    /// Stores a whole entry at mapping offset `off` (already known to be mapped).
    #[inline]
    fn store_pollfd_at(&self, off: usize, p: PollFd) -> Option<()> {
        (self.map.store_i32(off, p.fd)
            && self.map.store_u16(off + 4, p.events)
            && self.map.store_u16(off + 6, p.revents))
        .then_some(())
    }

    /// The mapping offset of `[addr, addr + size)` if all of it is mapped.
    #[inline]
    fn translate(&self, addr: u64, size: u64) -> Option<usize> {
        let end = addr.checked_add(size)?;
        (self.mapped_end(addr, end) == end).then(|| (addr - self.base) as usize)
    }

    // ----- the user program's own accesses -------------------------------------------------

    /// Runs `f` as the user program: with protection keys, access is allowed on this thread for
    /// the duration and restored afterwards (user code is not subject to SMAP).
    fn as_user<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.backend {
            Backend::Pkey(key) => {
                let was = key.is_allowed();
                key.allow();
                let r = f();
                if !was {
                    key.deny();
                }
                r
            }
            _ => f(),
        }
    }

    /// The user program stores `pfds` at `addr` (for example its `pollfd` array before calling
    /// `poll`). `EFAULT` (where a real program would get `SIGSEGV`) if any of it is unmapped;
    /// entries before the fault are written.
    pub fn write_pollfds(&self, addr: u64, pfds: &[PollFd]) -> Result<(), Errno> {
        self.as_user(|| {
            let n = pfds.len();
            let ok = self.mapped_entries(addr, n);
            let stored = ok == 0
                || self
                    .map
                    .store_pollfds((addr - self.base) as usize, &pfds[..ok]);
            if stored && ok == n {
                Ok(())
            } else {
                Err(Errno::EFAULT)
            }
        })
    }

    /// The user program reads `out.len()` entries at `addr`. `EFAULT` if any is unmapped.
    pub fn read_pollfds(&self, addr: u64, out: &mut [PollFd]) -> Result<(), Errno> {
        self.as_user(|| {
            let n = out.len();
            let ok = self.mapped_entries(addr, n);
            let loaded = ok == 0
                || self
                    .map
                    .load_pollfds((addr - self.base) as usize, &mut out[..ok]);
            if loaded && ok == n {
                Ok(())
            } else {
                Err(Errno::EFAULT)
            }
        })
    }

    /// The user program rewrites only the `fd` field of the entry at `entry_addr` (say, to −1
    /// after closing it on another thread).
    pub fn write_fd(&self, entry_addr: u64, fd: i32) -> Result<(), Errno> {
        self.as_user(|| {
            let off = self.translate(entry_addr, 4).ok_or(Errno::EFAULT)?;
            self.map
                .store_i32(off, fd)
                .then_some(())
                .ok_or(Errno::EFAULT)
        })
    }

    /// The user program rewrites only the `events` field of the entry at `entry_addr`.
    pub fn write_events(&self, entry_addr: u64, events: u16) -> Result<(), Errno> {
        self.as_user(|| {
            let off = self
                .translate(entry_addr.wrapping_add(PollFd::EVENTS_OFFSET), 2)
                .ok_or(Errno::EFAULT)?;
            self.map
                .store_u16(off, events)
                .then_some(())
                .ok_or(Errno::EFAULT)
        })
    }

    // ----- kernel side -----------------------------------------------------------------------

    /// Enters the kernel on this thread: returns the accessor kernel-side code must use. With
    /// protection keys, this thread's access to user memory is disabled from here on (SMAP is
    /// on in kernel mode) until a window opens.
    pub fn uaccess(&self) -> Uaccess<'_> {
        if let Backend::Pkey(key) = self.backend {
            if key.is_allowed() {
                key.deny();
            }
        }
        Uaccess {
            mem: self,
            stats: UaccessStats::default(),
            _not_send: PhantomData,
        }
    }

    /// Checks that protection keys really enforce the window: a forked child stores into this
    /// memory once outside a window (it must die of `SEGV_PKUERR`) and once inside (it must
    /// complete). `Ok(true)` when both hold, `Ok(false)` if a store outside the window went
    /// through, `Err(why)` if this memory is not pkey-enforced or the probe could not run.
    pub fn verify_enforcement(&self) -> Result<bool, String> {
        let Backend::Pkey(key) = self.backend else {
            return Err(match &self.enforcement {
                Enforcement::Model {
                    fallback_reason: Some(r),
                    ..
                } => format!("not enforcing: {r}"),
                _ => "not enforcing: this memory uses the window model".into(),
            });
        };
        let outside =
            sys::probe_store_in_child(&self.map, PollFd::REVENTS_OFFSET as usize, key, false)?;
        let inside =
            sys::probe_store_in_child(&self.map, PollFd::REVENTS_OFFSET as usize, key, true)?;
        match (outside, inside) {
            (sys::ChildOutcome::Faulted(sys::SEGV_PKUERR), sys::ChildOutcome::Completed) => {
                Ok(true)
            }
            (sys::ChildOutcome::Completed, _) => Ok(false),
            other => Err(format!("unexpected probe outcome {other:?}")),
        }
    }
}

impl core::fmt::Debug for UserMemory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("UserMemory")
            .field("base", &format_args!("{:#x}", self.base))
            .field("len", &self.len())
            .field("enforcement", &self.enforcement)
            .finish()
    }
}

/// Counters of one [`Uaccess`]: windows opened and closed, bytes moved, failures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UaccessStats {
    /// Windows opened for reading (`user_read_access_begin`, `copy_from_user`).
    pub read_windows: u64,
    /// Windows opened for writing (`user_write_access_begin`, `copy_to_user`, `put_user`).
    pub write_windows: u64,
    /// Windows closed; equal to `read_windows + write_windows` whenever no window is open.
    pub windows_closed: u64,
    /// Bytes read from user memory.
    pub bytes_in: u64,
    /// Bytes written to user memory.
    pub bytes_out: u64,
    /// `access_ok` failures (`EFAULT` with no window opened).
    pub access_ok_failures: u64,
    /// Faults inside a window (unmapped page, or an access outside the window's range).
    pub faults: u64,
}

impl UaccessStats {
    /// All windows opened.
    pub fn windows(&self) -> u64 {
        self.read_windows + self.write_windows
    }
}

impl AddAssign for UaccessStats {
    fn add_assign(&mut self, o: Self) {
        self.read_windows += o.read_windows;
        self.write_windows += o.write_windows;
        self.windows_closed += o.windows_closed;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.access_ok_failures += o.access_ok_failures;
        self.faults += o.faults;
    }
}

impl Sub for UaccessStats {
    type Output = UaccessStats;
    fn sub(self, o: Self) -> Self {
        UaccessStats {
            read_windows: self.read_windows - o.read_windows,
            write_windows: self.write_windows - o.write_windows,
            windows_closed: self.windows_closed - o.windows_closed,
            bytes_in: self.bytes_in - o.bytes_in,
            bytes_out: self.bytes_out - o.bytes_out,
            access_ok_failures: self.access_ok_failures - o.access_ok_failures,
            faults: self.faults - o.faults,
        }
    }
}

/// Kernel-side access to one [`UserMemory`] on one thread (from [`UserMemory::uaccess`]). Not
/// `Send`: with protection keys the window state is per thread (PKRU), like SMAP's `EFLAGS.AC`.
pub struct Uaccess<'m> {
    mem: &'m UserMemory,
    stats: UaccessStats,
    _not_send: PhantomData<*const ()>,
}

impl<'m> Uaccess<'m> {
    /// The memory this accessor reaches.
    pub fn memory(&self) -> &'m UserMemory {
        self.mem
    }

    /// Counters since this accessor was created.
    pub fn stats(&self) -> UaccessStats {
        self.stats
    }

    #[inline(always)]
    fn charge(&mut self, iters: u64) {
        spin(iters);
    }

    #[inline]
    fn open_window(&mut self) {
        match self.mem.backend {
            Backend::Counted => {}
            Backend::Model { open, .. } => self.charge(open),
            Backend::Pkey(key) => key.allow(),
        }
    }

    #[inline]
    fn close_window(&mut self) {
        match self.mem.backend {
            Backend::Counted => {}
            Backend::Model { close, .. } => self.charge(close),
            Backend::Pkey(key) => key.deny(),
        }
    }

    /// `access_ok(addr, size)`: the range lies below `TASK_SIZE` (without wrapping). Whether it is
    /// mapped is only known when it is touched.
    #[inline]
    pub fn access_ok(&self, addr: u64, size: u64) -> bool {
        size <= UserMemory::TASK_SIZE && addr <= UserMemory::TASK_SIZE - size
    }

    #[inline(always)]
    fn begin(&mut self, addr: u64, size: u64, write: bool) -> Result<UserWindow<'_, 'm>, Errno> {
        if !self.access_ok(addr, size) {
            self.stats.access_ok_failures += 1;
            return Err(Errno::EFAULT);
        }
        if write {
            self.stats.write_windows += 1;
        } else {
            self.stats.read_windows += 1;
        }
        self.open_window();
        let end = addr + size;
        let ok_end = self.mem.mapped_end(addr, end);
        let base = self.mem.base;
        Ok(UserWindow {
            ua: self,
            start: addr,
            ok_end,
            base,
        })
    }

    /// `user_read_access_begin`: `access_ok` on `[addr, addr + size)`, then opens a window
    /// (`EFAULT` without opening one if `access_ok` fails). The window closes when the guard
    /// drops.
    #[inline]
    pub fn user_read_access_begin(
        &mut self,
        addr: u64,
        size: u64,
    ) -> Result<UserWindow<'_, 'm>, Errno> {
        self.begin(addr, size, false)
    }

    /// `user_write_access_begin`: as [`user_read_access_begin`](Self::user_read_access_begin),
    /// for stores.
    #[inline]
    pub fn user_write_access_begin(
        &mut self,
        addr: u64,
        size: u64,
    ) -> Result<UserWindow<'_, 'm>, Errno> {
        self.begin(addr, size, true)
    }

    /// `copy_from_user`: one read window over `dst.len()` entries at `src`. `EFAULT` if
    /// `access_ok` fails or any entry is unmapped (the window is closed either way).
    #[inline]
    pub fn copy_from_user(&mut self, dst: &mut [PollFd], src: u64) -> Result<(), Errno> {
        let size = dst.len() as u64 * PollFd::SIZE;
        let mut w = self.user_read_access_begin(src, size)?;
        let ok = (((w.ok_end - src.min(w.ok_end)) / PollFd::SIZE) as usize).min(dst.len());
        if ok > 0
            && !w
                .ua
                .mem
                .map
                .load_pollfds((src - w.base) as usize, &mut dst[..ok])
        {
            return Err(w.fault());
        }
        w.ua.stats.bytes_in += ok as u64 * PollFd::SIZE;
        if ok < dst.len() {
            return Err(w.fault());
        }
        Ok(())
    }

    /// `copy_to_user`: one write window storing whole entries (fd, events and revents) at `dst`.
    #[inline]
    pub fn copy_to_user(&mut self, dst: u64, src: &[PollFd]) -> Result<(), Errno> {
        let size = src.len() as u64 * PollFd::SIZE;
        let mut w = self.user_write_access_begin(dst, size)?;
        let ok = (((w.ok_end - dst.min(w.ok_end)) / PollFd::SIZE) as usize).min(src.len());
        if ok > 0
            && !w
                .ua
                .mem
                .map
                .store_pollfds((dst - w.base) as usize, &src[..ok])
        {
            return Err(w.fault());
        }
        w.ua.stats.bytes_out += ok as u64 * PollFd::SIZE;
        if ok < src.len() {
            return Err(w.fault());
        }
        Ok(())
    }

    /// `put_user` of a `u16` (`__put_user` before v5.11: one window per store).
    #[inline]
    pub fn put_user_u16(&mut self, v: u16, addr: u64) -> Result<(), Errno> {
        let mut w = self.user_write_access_begin(addr, 2)?;
        w.unsafe_put_user_u16(v, addr)
    }
}

/// An open user-access window over `[start, end)`; closed when dropped (`user_access_end`).
///
/// The `unsafe_*` accessors keep the kernel's names (`unsafe_put_user`: no `access_ok` of its
/// own, the window's covers it); they are safe functions here. An access outside the window's
/// range or to an unmapped page is a fault: `EFAULT`, counted, and the caller's `?` drops the
/// guard, closing the window, as the kernel's `Efault:` label does.
///
/// Which pages are mapped is sampled when the window opens (a page unmapped while a window is
/// open is still reached through it).
pub struct UserWindow<'a, 'm> {
    ua: &'a mut Uaccess<'m>,
    start: u64,
    /// The end of the window's range, cut at the first unmapped byte.
    ok_end: u64,
    base: u64,
}

impl UserWindow<'_, '_> {
    /// The mapping offset of `[addr, addr + size)` if the window covers it and it is mapped.
    #[inline]
    fn offset(&self, addr: u64, size: u64) -> Option<usize> {
        if addr >= self.start && addr.checked_add(size)? <= self.ok_end {
            Some((addr - self.base) as usize)
        } else {
            None
        }
    }

    #[cold]
    fn fault(&mut self) -> Errno {
        self.ua.stats.faults += 1;
        Errno::EFAULT
    }

    /// `unsafe_put_user` of a `u16` at `addr` (a `revents` field).
    #[inline]
    pub fn unsafe_put_user_u16(&mut self, v: u16, addr: u64) -> Result<(), Errno> {
        match self.offset(addr, 2) {
            Some(off) if self.ua.mem.map.store_u16(off, v) => {
                self.ua.stats.bytes_out += 2;
                Ok(())
            }
            _ => Err(self.fault()),
        }
    }

    /// `unsafe_put_user` of a whole `pollfd` at `addr` (8 bytes: fd, events, revents).
    #[inline]
    pub fn unsafe_put_pollfd(&mut self, p: PollFd, addr: u64) -> Result<(), Errno> {
        match self
            .offset(addr, PollFd::SIZE)
            .and_then(|off| self.ua.mem.store_pollfd_at(off, p))
        {
            Some(()) => {
                self.ua.stats.bytes_out += PollFd::SIZE;
                Ok(())
            }
            None => Err(self.fault()),
        }
    }

    /// `unsafe_get_user` of a whole `pollfd` at `addr`.
    #[inline]
    pub fn unsafe_get_pollfd(&mut self, addr: u64) -> Result<PollFd, Errno> {
        match self
            .offset(addr, PollFd::SIZE)
            .and_then(|off| self.ua.mem.load_pollfd_at(off))
        {
            Some(p) => {
                self.ua.stats.bytes_in += PollFd::SIZE;
                Ok(p)
            }
            None => Err(self.fault()),
        }
    }
}

impl Drop for UserWindow<'_, '_> {
    #[inline]
    fn drop(&mut self) {
        self.ua.close_window();
        self.ua.stats.windows_closed += 1;
    }
}
