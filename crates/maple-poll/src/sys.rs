//! Every `unsafe` of the poll model, in one place: the "user memory" mapping (`mmap`) and its
//! naturally aligned atomic field accesses, x86 protection keys (`pkey_alloc`, `pkey_mprotect`,
//! `RDPKRU`/`WRPKRU`), and the forked-child probe that proves a store outside a user-access
//! window really faults.
//!
//! The rest of `crate::poll` is safe code built on the small safe API below. Each function keeps
//! its own invariants (bounds, alignment, "the key exists") so that no caller can misuse it into
//! undefined behaviour; the worst a misuse can do is a deliberate, enforced `SIGSEGV`, which is
//! the point of an enforcing window.

use crate::sync::{
    UserAtomicI32 as AtomicI32, UserAtomicU16 as AtomicU16, UserOrdering as Ordering,
};
use core::ptr::NonNull;

/// The page size the model uses for mappings, pipes and `poll_list` chunks (x86-64's).
pub(crate) const PAGE_SIZE: usize = 4096;

/// An anonymous, private, zero-filled mapping of whole pages; unmapped on drop.
///
/// All accesses go through naturally aligned relaxed atomics of the field's own width (`i32` for
/// `pollfd.fd`, `u16` for `events`/`revents`), so a "user" thread and "kernel" code may touch the
/// same `pollfd` concurrently, as in the kernel, without a data race in Rust's sense. Relaxed
/// atomic loads and stores of these widths compile to plain `mov`s on x86-64.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; every access is atomic.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared access only through atomics, never through references to plain data.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes rounded up to whole pages (at least one page). `None` if `mmap` fails.
    pub(crate) fn new(len: usize) -> Option<Self> {
        let len = len.max(1).checked_next_multiple_of(PAGE_SIZE)?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
        // existing memory; the result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        Some(Mapping {
            ptr: NonNull::new(p.cast::<u8>())?,
            len,
        })
    }

    /// Length in bytes (a multiple of [`PAGE_SIZE`]).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn field<T>(&self, off: usize) -> Option<*mut T> {
        let size = core::mem::size_of::<T>();
        if off % size != 0 || off.checked_add(size)? > self.len {
            return None;
        }
        // The offset is in bounds (checked above), so the pointer stays inside the mapping.
        Some(self.ptr.as_ptr().wrapping_add(off).cast::<T>())
    }

    /// Relaxed atomic load of the `i32` at `off` (`None` if out of bounds or misaligned).
    #[inline]
    pub(crate) fn load_i32(&self, off: usize) -> Option<i32> {
        let p = self.field::<i32>(off)?;
        // SAFETY: `p` is in bounds and 4-aligned (checked by `field`), the mapping lives as long
        // as `self`, and every access to this location is an atomic of the same width.
        Some(unsafe { AtomicI32::from_ptr(p) }.load(Ordering::Relaxed))
    }

    /// Relaxed atomic store of an `i32` at `off`; `false` if out of bounds or misaligned.
    #[inline]
    pub(crate) fn store_i32(&self, off: usize, v: i32) -> bool {
        let Some(p) = self.field::<i32>(off) else {
            return false;
        };
        // SAFETY: as in `load_i32`.
        unsafe { AtomicI32::from_ptr(p) }.store(v, Ordering::Relaxed);
        true
    }

    /// Relaxed atomic load of the `u16` at `off`.
    #[inline]
    pub(crate) fn load_u16(&self, off: usize) -> Option<u16> {
        let p = self.field::<u16>(off)?;
        // SAFETY: in bounds and 2-aligned (checked by `field`); same-width atomics only.
        Some(unsafe { AtomicU16::from_ptr(p) }.load(Ordering::Relaxed))
    }

    /// Relaxed atomic store of a `u16` at `off`; `false` if out of bounds or misaligned.
    #[inline]
    pub(crate) fn store_u16(&self, off: usize, v: u16) -> bool {
        let Some(p) = self.field::<u16>(off) else {
            return false;
        };
        // SAFETY: as in `load_u16`.
        unsafe { AtomicU16::from_ptr(p) }.store(v, Ordering::Relaxed);
        true
    }

    /// Base pointer of `n` `pollfd`s at `off`, if they lie in bounds and `off` is 8-aligned.
    #[inline]
    fn pollfds(&self, off: usize, n: usize) -> Option<*mut u8> {
        if off % 8 != 0 || off.checked_add(n.checked_mul(8)?)? > self.len {
            return None;
        }
        Some(self.ptr.as_ptr().wrapping_add(off))
    }

    /// Loads `out.len()` `pollfd`s at `off` field by field (relaxed atomics of each field's
    /// width); `false` (nothing loaded) if out of bounds or misaligned.
    #[inline]
    pub(crate) fn load_pollfds(&self, off: usize, out: &mut [super::PollFd]) -> bool {
        let Some(base) = self.pollfds(off, out.len()) else {
            return false;
        };
        for (i, p) in out.iter_mut().enumerate() {
            let e = base.wrapping_add(8 * i);
            // SAFETY: entry `i` lies in bounds (checked once by `pollfds` for all of them) and is
            // 8-aligned, so its fields at +0 (i32), +4 and +6 (u16) are naturally aligned; all
            // accesses to these locations are atomics of the same widths.
            unsafe {
                p.fd = AtomicI32::from_ptr(e.cast()).load(Ordering::Relaxed);
                p.events = AtomicU16::from_ptr(e.wrapping_add(4).cast()).load(Ordering::Relaxed);
                p.revents = AtomicU16::from_ptr(e.wrapping_add(6).cast()).load(Ordering::Relaxed);
            }
        }
        true
    }

    /// Stores `src` as `pollfd`s at `off` field by field; `false` (nothing stored) if out of
    /// bounds or misaligned.
    #[inline]
    pub(crate) fn store_pollfds(&self, off: usize, src: &[super::PollFd]) -> bool {
        let Some(base) = self.pollfds(off, src.len()) else {
            return false;
        };
        for (i, p) in src.iter().enumerate() {
            let e = base.wrapping_add(8 * i);
            // SAFETY: as in `load_pollfds`.
            unsafe {
                AtomicI32::from_ptr(e.cast()).store(p.fd, Ordering::Relaxed);
                AtomicU16::from_ptr(e.wrapping_add(4).cast()).store(p.events, Ordering::Relaxed);
                AtomicU16::from_ptr(e.wrapping_add(6).cast()).store(p.revents, Ordering::Relaxed);
            }
        }
        true
    }

    /// Tags the whole mapping with protection key `key` (`pkey_mprotect`, read/write).
    pub(crate) fn pkey_mprotect(&self, key: &Pkey) -> Result<(), i32> {
        // SAFETY: the range is exactly this mapping; protections stay read/write, only the key
        // changes, which affects nothing but accesses to this mapping.
        let r = unsafe {
            libc::syscall(
                libc::SYS_pkey_mprotect,
                self.ptr.as_ptr(),
                self.len,
                libc::PROT_READ | libc::PROT_WRITE,
                key.0 as libc::c_long,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what `mmap` returned; no reference into the mapping
        // outlives `self` (accesses are by value through the methods above).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

// ----- protection keys ----------------------------------------------------------------------

/// `si_code` of a protection-key fault (`SEGV_PKUERR`).
pub(crate) const SEGV_PKUERR: i32 = 4;

/// An allocated protection key. Its existence proves that the CPU has PKU and the kernel
/// enabled it (OSPKE), so `RDPKRU`/`WRPKRU` are legal instructions on every thread.
#[derive(Debug)]
pub(crate) struct Pkey(u32);

/// Why protection keys cannot be used here, or `Ok` if CPUID says PKU and OSPKE.
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) fn pku_cpuid() -> Result<(), String> {
    #[allow(unused_unsafe)]
    // SAFETY: CPUID is available on every x86-64 CPU; leaf 7 subleaf 0 is read-only information
    // (the intrinsic is a safe function on newer toolchains, hence the allow).
    let r = unsafe { core::arch::x86_64::__cpuid_count(7, 0) };
    let pku = r.ecx & (1 << 3) != 0;
    let ospke = r.ecx & (1 << 4) != 0;
    match (pku, ospke) {
        (false, _) => Err("the CPU has no protection keys (CPUID.7.0:ECX.PKU = 0)".into()),
        (true, false) => {
            Err("the kernel did not enable protection keys (CPUID.7.0:ECX.OSPKE = 0)".into())
        }
        (true, true) => Ok(()),
    }
}

/// Why protection keys cannot be used here.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn pku_cpuid() -> Result<(), String> {
    Err("protection keys (WRPKRU) are an x86-64 feature".into())
}

/// Why protection keys cannot be used here: Miri runs neither CPUID nor the pkey syscalls.
#[cfg(all(target_arch = "x86_64", miri))]
pub(crate) fn pku_cpuid() -> Result<(), String> {
    Err("Miri cannot execute CPUID, pkey_alloc or WRPKRU".into())
}

/// `pkey_alloc(0, PKEY_DISABLE_ACCESS)`: a fresh key whose access is disabled on this thread.
pub(crate) fn pkey_alloc() -> Result<Pkey, String> {
    pku_cpuid()?;
    // SAFETY: a plain syscall with integer arguments; it changes only this thread's PKRU bits
    // for the new key (access disabled), which no memory is tagged with yet.
    let r = unsafe { libc::syscall(libc::SYS_pkey_alloc, 0 as libc::c_long, 1 as libc::c_long) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("pkey_alloc failed: {e}"));
    }
    Ok(Pkey(r as u32))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdpkru() -> u32 {
    let eax: u32;
    // SAFETY: RDPKRU (0f 01 ee) reads this thread's PKRU; legal because a `Pkey` exists only
    // after pkey_alloc succeeded, i.e. with CR4.PKE set. ECX must be 0; EDX is clobbered.
    unsafe {
        core::arch::asm!(".byte 0x0f, 0x01, 0xee", in("ecx") 0u32, out("eax") eax, out("edx") _,
            options(nomem, nostack, preserves_flags));
    }
    eax
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn wrpkru(v: u32) {
    // SAFETY: WRPKRU (0f 01 ef) writes this thread's PKRU; legal with CR4.PKE set (see
    // `rdpkru`). ECX = EDX = 0 as required. Callers only change the bits of the model's own key,
    // so no other memory of the process loses access. Not `nomem`: the asm is a compiler
    // barrier, so user-memory accesses are not moved across a window's open or close (the CPU
    // itself orders later accesses after WRPKRU).
    unsafe {
        core::arch::asm!(".byte 0x0f, 0x01, 0xef", in("eax") v, in("ecx") 0u32, in("edx") 0u32,
            options(nostack, preserves_flags));
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdpkru() -> u32 {
    0
}
#[cfg(not(target_arch = "x86_64"))]
fn wrpkru(_v: u32) {}

impl Pkey {
    #[inline(always)]
    fn bits(&self) -> u32 {
        3 << (2 * self.0)
    }

    /// The key number.
    pub(crate) fn number(&self) -> u32 {
        self.0
    }

    /// Opens access to memory tagged with this key on this thread (the `stac` analogue).
    #[inline(always)]
    pub(crate) fn allow(&self) {
        wrpkru(rdpkru() & !self.bits());
    }

    /// Closes access (the `clac` analogue): reads and writes fault with `SEGV_PKUERR`.
    #[inline(always)]
    pub(crate) fn deny(&self) {
        wrpkru(rdpkru() | self.bits());
    }

    /// Whether this thread can currently access memory tagged with this key.
    #[inline(always)]
    pub(crate) fn is_allowed(&self) -> bool {
        rdpkru() & self.bits() == 0
    }
}

// ----- the enforcement probe ----------------------------------------------------------------

/// What happened to a forked child that stored into user memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChildOutcome {
    /// The store completed and the child exited normally.
    Completed,
    /// The store raised `SIGSEGV` with this `si_code` (`SEGV_PKUERR` = 4 for a key fault).
    Faulted(i32),
    /// Something else (exit status or signal as `waitpid` reported it).
    Other(i32),
}

extern "C" fn probe_segv_handler(
    _sig: libc::c_int,
    info: *mut libc::siginfo_t,
    _ctx: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler; `_exit` is
    // async-signal-safe and never returns.
    unsafe {
        let code = (*info).si_code;
        libc::_exit(64 + code.clamp(0, 63));
    }
}

/// Forks; the child installs a `SIGSEGV` handler, puts itself in "kernel mode" (access to `key`
/// denied), opens the window first if `open_window`, and stores a `u16` at `off` of `map`. The
/// parent waits and reports. The child runs only async-signal-safe code (no allocation, no
/// locks), so forking from a multi-threaded test process is sound.
pub(crate) fn probe_store_in_child(
    map: &Mapping,
    off: usize,
    key: &Pkey,
    open_window: bool,
) -> Result<ChildOutcome, String> {
    let target = map
        .field::<u16>(off)
        .ok_or_else(|| "probe offset outside the mapping".to_string())?;
    // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value to fill in.
    let mut sa: libc::sigaction = unsafe { core::mem::zeroed() };
    sa.sa_sigaction = probe_segv_handler as *const () as usize;
    sa.sa_flags = libc::SA_SIGINFO;
    // SAFETY: fork has no memory-safety preconditions; the child below only calls
    // async-signal-safe functions and leaves through `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork failed: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // Child.
        // SAFETY: installing a handler in the child affects only the child; the handler is
        // async-signal-safe.
        unsafe { libc::sigaction(libc::SIGSEGV, &sa, core::ptr::null_mut()) };
        key.deny();
        if open_window {
            key.allow();
        }
        // SAFETY: `target` is in bounds and aligned (checked by `field`); the store is atomic.
        // Without an open window the CPU raises SIGSEGV/SEGV_PKUERR here, by design.
        unsafe { AtomicU16::from_ptr(target) }.store(0x5a5a, Ordering::Relaxed);
        // SAFETY: `_exit` is async-signal-safe and never returns.
        unsafe { libc::_exit(0) };
    }
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waiting for our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("waitpid failed: {e}"));
        }
    }
    Ok(if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => ChildOutcome::Completed,
            c if c >= 64 => ChildOutcome::Faulted(c - 64),
            c => ChildOutcome::Other(c),
        }
    } else if libc::WIFSIGNALED(status) {
        ChildOutcome::Other(-libc::WTERMSIG(status))
    } else {
        ChildOutcome::Other(status)
    })
}

// ----- the real poll(2) ------------------------------------------------------------------------

/// The real `poll(2)` on `fds` (the model's [`PollFd`](super::PollFd) has `struct pollfd`'s
/// layout). Any descriptor number is allowed: negative ones are ignored and closed ones report
/// `POLLNVAL`, as the kernel defines. Returns the count or the positive errno.
pub(crate) fn os_poll(fds: &mut [super::PollFd], timeout_msecs: i32) -> Result<usize, i32> {
    const _: () =
        assert!(core::mem::size_of::<super::PollFd>() == core::mem::size_of::<libc::pollfd>());
    const _: () =
        assert!(core::mem::align_of::<super::PollFd>() == core::mem::align_of::<libc::pollfd>());
    // SAFETY: `fds` is a valid, exclusively borrowed array of `fds.len()` entries with the layout
    // of `struct pollfd` (checked above: `repr(C)` i32, u16, u16); the kernel writes only
    // `revents` inside it. Descriptor numbers are plain integers to poll(2), not memory.
    let r = unsafe {
        libc::poll(
            fds.as_mut_ptr().cast::<libc::pollfd>(),
            fds.len() as libc::nfds_t,
            timeout_msecs,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(r as usize)
    }
}
