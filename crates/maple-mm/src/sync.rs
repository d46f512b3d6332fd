//! The one place that names the synchronisation primitives of the crate: std's atomics,
//! `parking_lot`'s locks and `arc-swap` normally, loom's under `cfg(loom)`.
//!
//! Every other file takes its atomics, locks and the VMA's context slot from here, so that
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom"` runs the per-VMA lock and the userfaultfd event
//! handshake on loom's model checker (`tests/loom_vma_lock.rs`, `tests/loom_uffd_event.rs`).
//! The selector is a cfg, never a Cargo feature. Under loom the locks are loom's, wrapped to
//! `parking_lot`'s shape (no poisoning; `Condvar::wait` takes `&mut guard`), and the context
//! slot — `arc-swap` has no loom support — is an `RwLock<Option<Arc<T>>>` with the same three
//! operations.
//!
//! Not modelled, std under loom too: the process-wide id counters ([`IdCounter`], `static`s
//! that hand out unique ids with `Relaxed` increments) and `Arc` itself.
//!
//! # Ordering table
//!
//! Every `Release`, `Acquire`, `AcqRel` or `SeqCst` access in `maple-mm` and `maple-poll`
//! cites its row (`// ORDERING: Mn`). `Relaxed` accesses are counters or values read under a
//! lock (they cite nothing).
//!
//! | row | atomic | writer side | reader side | what the edge carries |
//! |-----|--------|-------------|-------------|-----------------------|
//! | M1 | `Vma::lock` (reader count / `WRITER` bit) | `vma_start_write`: CAS `WRITER` (Acquire), waits for the count to drain (Acquire); `up_write` store 0 (Release) | `vma_start_read`: CAS count + 1 (Acquire); `vma_end_read`: `fetch_sub` (Release) | reader critical sections happen before the writer's lock; the writer's stamp (`vm_lock_seq`) is visible to every reader that locks after it |
//! | M2 | `Vma::lock_seq` (`vm_lock_seq`) and `MmLockState::seq` (`mm_lock_seq`) | stamp stored under M1 (Relaxed, published by M1's Release); `vma_end_write_all`: `seq.fetch_add` (AcqRel) | both loaded Acquire before and after the reader takes M1 | a reader that sees the incremented `mm_lock_seq` sees everything the writer did to the VMAs it locked (`vma_end_write_all` is the release of all of them) |
//! | M3 | `Vma::flags`, `Vma::anon_vma`, `Vma::detached` | stored Release by a writer holding the VMA write-locked (or before publication) | loaded Acquire by lock-free lookups | a reader that sees a new value sees the writes before it (values change only under M1/M2, which carry the real exclusion) |
//! | M4 | `UffdCtx::features` | `UFFDIO_API` CAS 0 → features (AcqRel) | loaded Acquire | the handshake's features are seen whole, once |
//! | M5 | `UffdCtx::released` | `userfaultfd_release` store `true` (Release) before waking everyone | loaded Acquire in every wait loop and before queueing | a waiter that sees `released` sees the release's clearing of the VMAs |
//! | M6 | `UffdCtx::mmap_changing` | event prep `fetch_add` / event completion `fetch_sub` (AcqRel), both under `map_changing_lock` written | fill ioctls load Acquire under `map_changing_lock` read | a fill either finishes before the prep or sees the event in flight (`EAGAIN`); kernel commit 5e4c24a57b0c ("userfaultfd: protect mmap_changing with rw_sem in userfaulfd_ctx") |
//! | M7 | `EventWaiter::done`, `FaultWaiter::woken` | stored `true` (Release) under the queue lock by the reader / the waker | loaded Acquire by the waiting generator / faulting thread, in and after its wait loop | the generator that sees its event read (and the faulting thread that sees its wake-up) sees what the reader did before |
//! | M8 | `maple-poll` `File::f_count` | `fdget` on a shared table, `dup`: `fetch_update` (AcqRel, not from 0); `fput` (and `fdput`): `fetch_sub` (AcqRel) | loaded Acquire | the last `fput` sees every earlier user's writes before the file is torn down (`->release`); `tests/loom_file_ref.rs` |
//! | M9 | `maple-poll` `WaitQueueHead::active` (`waitqueue_active`) | stored Release under the entries lock by `add`/`remove` | loaded Acquire, lock-free, by wakers (`wake_up_poll`) and `len` | a waker that sees the count of the last `add` or `remove` before it sees that call's entries once it takes the lock; one that sees 0 skips the lock (the kernel's `waitqueue_active` pairing) |
//! | M10 | `maple-poll` `UserSpace::mapped[page]` | `munmap`/`mmap` of a page: store (Release) | the user-copy probe loads Relaxed (a fault is a value, not a publication) | the mapped state of a page after the call that changed it |

#[cfg(all(loom, not(crossbeam_loom)))]
compile_error!(
    "loom builds need both cfgs: RUSTFLAGS=\"--cfg loom --cfg crossbeam_loom\" \
     (the maple tree's epoch collector is otherwise invisible to loom)"
);

pub(crate) use std::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering,
};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering,
};

/// A process-wide unique-id counter (a `static`, so std's even under loom: ids are not
/// modelled). Incremented `Relaxed`.
pub(crate) struct IdCounter(std::sync::atomic::AtomicU64);

impl IdCounter {
    /// A counter whose first id is `first`.
    pub(crate) const fn new(first: u64) -> Self {
        IdCounter(std::sync::atomic::AtomicU64::new(first))
    }

    /// The next id.
    pub(crate) fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Spin-wait hint: a spin-loop hint, then a yield (loom's yield under loom, where a spinning
/// thread must let the others run).
pub(crate) fn backoff(spins: &mut u32) {
    *spins += 1;
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    if *spins < 64 {
        core::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(not(loom))]
pub(crate) use parking_lot::{Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

#[cfg(loom)]
pub(crate) use loom_locks::{Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// loom's locks in `parking_lot`'s shape.
#[cfg(loom)]
mod loom_locks {
    use core::ops::{Deref, DerefMut};

    /// A mutex without poisoning.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// Its guard (an `Option` so that [`Condvar::wait`] can pass it through loom's by-value
    /// wait).
    pub(crate) struct MutexGuard<'a, T>(Option<loom::sync::MutexGuard<'a, T>>);

    impl<T> Mutex<T> {
        pub(crate) fn new(v: T) -> Self {
            Mutex(loom::sync::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard(Some(self.0.lock().unwrap_or_else(|e| e.into_inner())))
        }
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(|e| e.into_inner())
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.0.as_ref().expect("guard present")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.0.as_mut().expect("guard present")
        }
    }

    /// A condition variable whose `wait` re-locks the guard in place.
    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }
        pub(crate) fn wait<T>(&self, g: &mut MutexGuard<'_, T>) {
            let inner = g.0.take().expect("guard present");
            g.0 = Some(self.0.wait(inner).unwrap_or_else(|e| e.into_inner()));
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// A reader-writer lock without poisoning.
    #[derive(Debug)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

    pub(crate) type RwLockReadGuard<'a, T> = loom::sync::RwLockReadGuard<'a, T>;
    pub(crate) type RwLockWriteGuard<'a, T> = loom::sync::RwLockWriteGuard<'a, T>;

    impl<T> RwLock<T> {
        pub(crate) fn new(v: T) -> Self {
            RwLock(loom::sync::RwLock::new(v))
        }
        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().unwrap_or_else(|e| e.into_inner())
        }
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(|e| e.into_inner())
        }
    }
}

/// The VMA's userfaultfd slot: an `arc_swap::ArcSwapOption` (lock-free loads), or under loom an
/// `RwLock<Option<Arc<T>>>` with the same operations.
pub(crate) struct ArcSlot<T>(
    #[cfg(not(loom))] arc_swap::ArcSwapOption<T>,
    #[cfg(loom)] RwLock<Option<Arc<T>>>,
);

impl<T> ArcSlot<T> {
    pub(crate) fn new(v: Option<Arc<T>>) -> Self {
        #[cfg(not(loom))]
        return ArcSlot(arc_swap::ArcSwapOption::new(v));
        #[cfg(loom)]
        return ArcSlot(RwLock::new(v));
    }

    /// A clone of the current `Arc`.
    pub(crate) fn load_full(&self) -> Option<Arc<T>> {
        #[cfg(not(loom))]
        return self.0.load_full();
        #[cfg(loom)]
        return self.0.read().clone();
    }

    /// Whether the slot holds an `Arc` (no reference taken).
    pub(crate) fn is_some(&self) -> bool {
        #[cfg(not(loom))]
        return self.0.load().is_some();
        #[cfg(loom)]
        return self.0.read().is_some();
    }

    /// Replaces the `Arc`.
    pub(crate) fn store(&self, v: Option<Arc<T>>) {
        #[cfg(not(loom))]
        self.0.store(v);
        #[cfg(loom)]
        {
            *self.0.write() = v;
        }
    }
}
