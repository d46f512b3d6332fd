//! The one place that names the synchronisation primitives of the crate: std's atomics and
//! `parking_lot`'s locks normally, loom's (in `parking_lot`'s shape, without poisoning) under
//! `cfg(loom)`, so that the wait queues, the file reference counts and the descriptor table can
//! be put on loom's model checker (`tests/loom_poll_wake.rs`: the wake-up handshake;
//! `tests/loom_file_ref.rs`: a file's lifetime across poll; their broken twins are switched on
//! by `loom_knobs`). Every `Release`/`Acquire` access cites its row of the ordering table in
//! `maple-mm`'s `sync` module (rows M8–M10).
//!
//! Std's under loom too: the process-wide id counter ([`IdCounter`]), the atomics laid over real
//! user memory (`sys`: [`UserAtomicI32`], [`UserAtomicU16`], built with `from_ptr` on mmap'd
//! pages) and the will-it-scale harness's stop flags and counters ([`bench`]), which run on real
//! OS threads.

pub(crate) use std::sync::{Arc, OnceLock};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

pub(crate) use core::sync::atomic::{
    AtomicI32 as UserAtomicI32, AtomicU16 as UserAtomicU16, Ordering as UserOrdering,
};

/// The will-it-scale harness's primitives (real OS threads: std's even under loom).
#[cfg(feature = "bench-internals")]
pub(crate) mod bench {
    pub(crate) use parking_lot::Mutex;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    pub(crate) use std::sync::{Arc, Barrier};
}

/// Takes the value of an atomic the caller owns (`&mut`: no other access), leaving 0.
pub(crate) fn atomic_take(a: &mut AtomicUsize) -> usize {
    #[cfg(not(loom))]
    return std::mem::take(a.get_mut());
    #[cfg(loom)]
    return a.with_mut(std::mem::take);
}

/// A process-wide unique-id counter (a `static`, so std's even under loom). Incremented
/// `Relaxed`.
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

#[cfg(not(loom))]
pub(crate) use parking_lot::{Condvar, Mutex};

#[cfg(loom)]
pub(crate) use loom_locks::{Condvar, Mutex};

/// loom's locks in `parking_lot`'s shape.
#[cfg(loom)]
mod loom_locks {
    use core::ops::{Deref, DerefMut};
    use std::time::Instant;

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

    /// Whether a timed wait timed out.
    pub(crate) struct WaitTimeoutResult(bool);

    impl WaitTimeoutResult {
        pub(crate) fn timed_out(&self) -> bool {
            self.0
        }
    }

    /// A condition variable whose waits re-lock the guard in place.
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
        /// loom 0.7 does not model time-outs: this waits for a notification.
        pub(crate) fn wait_until<T>(
            &self,
            g: &mut MutexGuard<'_, T>,
            deadline: Instant,
        ) -> WaitTimeoutResult {
            let inner = g.0.take().expect("guard present");
            let left = deadline.saturating_duration_since(Instant::now());
            let (inner, r) = self
                .0
                .wait_timeout(inner, left)
                .unwrap_or_else(|e| e.into_inner());
            g.0 = Some(inner);
            WaitTimeoutResult(r.timed_out())
        }
        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
