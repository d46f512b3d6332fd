//! The one place that names std's or loom's synchronisation primitives.
//!
//! Everything in the crate that a concurrent reader may observe goes through these re-exports, so
//! that `RUSTFLAGS="--cfg loom --cfg crossbeam_loom"` runs the whole tree — and crossbeam-epoch,
//! through its own loom support — on loom's model checker. The selector is a cfg, never a Cargo
//! feature, so `--all-features` cannot switch loom on by accident.

#[cfg(all(loom, not(feature = "loom")))]
compile_error!("loom builds of maple-tree need its `loom` feature (loom-tests/ enables it)");

#[cfg(all(loom, not(crossbeam_loom)))]
compile_error!(
    "loom builds need both cfgs: RUSTFLAGS=\"--cfg loom --cfg crossbeam_loom\" \
     (without crossbeam_loom the epoch collector is invisible to loom and the models check nothing)"
);

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
/// Lets another thread run (loom's under loom, where it lets the model schedule another
/// thread): a reader that found the writer in the middle of a write gives it the CPU rather
/// than spinning, which on an oversubscribed machine could outlast its retries.
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

pub(crate) use mutex::{Mutex, MutexGuard};

/// The writer lock: std's mutex (loom's under loom), without poisoning. A writer that panics
/// (an entry's `Drop` may) leaves the tree consistent — writes are panic-safe — so the next
/// writer goes on rather than failing on a poisoned lock.
mod mutex {
    #[cfg(loom)]
    use loom::sync as imp;
    #[cfg(not(loom))]
    use std::sync as imp;

    pub(crate) struct Mutex<T>(imp::Mutex<T>);
    pub(crate) type MutexGuard<'a, T> = imp::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(v: T) -> Self {
            Mutex(imp::Mutex::new(v))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
        /// The lock if no one holds it now (a poisoned lock is taken as it is).
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            match self.0.try_lock() {
                Ok(g) => Some(g),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        }
        pub(crate) fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().unwrap_or_else(|e| e.into_inner())
        }
    }
}

/// Allocation tracking for loom: each node carries one, so a node that is never freed is reported
/// as "Allocation leaked" at the end of the execution.
#[cfg(loom)]
pub(crate) type Track = loom::alloc::Track<()>;

/// Under loom: a liveness word in loom's `UnsafeCell`. Every node access reads it and a node's
/// `Drop` writes [`POISON`] into it, so loom reports an access that races with the free (a
/// use-after-free in the real world) as a causality violation.
#[cfg(loom)]
pub(crate) type PoisonCell = loom::cell::UnsafeCell<u64>;

/// The liveness word of a node that is allocated.
#[cfg(loom)]
pub(crate) const ALIVE: u64 = 0xa11e_a11e_a11e_a11e;

/// The liveness word of a node that was freed.
#[cfg(loom)]
pub(crate) const POISON: u64 = 0xdead_dead_dead_dead;

/// The loom models' switches for the broken twins of the algorithms above the node layer:
/// `crate::loom_knobs` under loom, constant `false` (compiled away) in every other build, so
/// that the call sites carry no `cfg`.
#[cfg(loom)]
pub(crate) use crate::loom_knobs as knobs;

/// The loom models' switches: all off outside loom.
#[cfg(not(loom))]
pub(crate) mod knobs {
    /// Read paths trust a re-walk's range.
    #[inline(always)]
    pub(crate) const fn trust_rewalk() -> bool {
        false
    }
    /// A reader's gap search trusts its first `NoRoom`.
    #[inline(always)]
    pub(crate) const fn trust_no_room() -> bool {
        false
    }
    /// Seals are ignored.
    #[inline(always)]
    pub(crate) const fn ignore_seals() -> bool {
        false
    }
    /// The seals of lowered pivots are ignored.
    #[inline(always)]
    pub(crate) const fn ignore_repoint_seals() -> bool {
        false
    }
}

/// Reads an atomic word through `&mut` and leaves zero (std's `get_mut`; loom's `with_mut`).
#[cfg(not(loom))]
pub(crate) fn atomic_take(a: &mut AtomicUsize) -> usize {
    core::mem::take(a.get_mut())
}

/// Reads an atomic word through `&mut` and leaves zero (std's `get_mut`; loom's `with_mut`).
#[cfg(loom)]
pub(crate) fn atomic_take(a: &mut AtomicUsize) -> usize {
    a.with_mut(core::mem::take)
}
