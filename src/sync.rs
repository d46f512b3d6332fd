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

// ===== Node memory under loom ===================================================================
//
// The node layer's switches between the shipping build, where a node is 256 bytes of plain
// atomics in the tree's slab, and the loom build, where each node is a `Box` of loom atomics that
// carries its allocation tracking and a liveness word. The node layer names only these items and
// carries no `cfg(loom)` of its own in its layout and handles.

/// Whether a node is plain memory (`repr(C)` atomics only, copied and zeroed as bytes, whose
/// words are read through `&mut` directly): true in every build but loom's, whose atomics are
/// model objects. A constant: the branch it selects is compiled away.
pub(crate) const PLAIN_NODES: bool = !cfg!(loom);

/// Applies `f` to an atomic word reached through `&mut` (std's `get_mut`; loom's `with_mut`)
/// and returns what it returns.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn with_word_mut<R>(a: &mut AtomicU64, f: impl FnOnce(&mut u64) -> R) -> R {
    f(a.get_mut())
}

/// Applies `f` to an atomic word reached through `&mut` (std's `get_mut`; loom's `with_mut`)
/// and returns what it returns.
#[cfg(loom)]
#[inline(always)]
pub(crate) fn with_word_mut<R>(a: &mut AtomicU64, f: impl FnOnce(&mut u64) -> R) -> R {
    a.with_mut(f)
}

pub(crate) use liveness::Liveness;

/// A node's liveness: outside loom nothing at all (zero-sized, [`Liveness::check`] a no-op).
#[cfg(not(loom))]
mod liveness {
    /// Nothing outside loom.
    pub(crate) struct Liveness;

    impl Liveness {
        /// The liveness of a node just allocated.
        #[inline(always)]
        pub(crate) const fn new() -> Self {
            Liveness
        }

        /// Nothing outside loom.
        #[inline(always)]
        pub(crate) fn check(&self) {}
    }
}

/// A node's liveness under loom: allocation tracking (a node never freed is reported as
/// "Allocation leaked" at the end of the execution) and a liveness word. Every node access
/// calls [`Liveness::check`], a read of loom's cell, and the node's drop poisons it, a write
/// of the cell: loom reports an access that does not happen-before the free (a use-after-free
/// in the real world) as a causality violation, and an access ordered after it finds the poison
/// and panics. A cell access is not a scheduling point, so this costs no interleavings
/// (poisoning the 31 atomic words would add 31 of them); the word itself is a plain std atomic,
/// which loom does not model.
#[cfg(loom)]
mod liveness {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The liveness word of a node that is allocated.
    const ALIVE: u64 = 0xa11e_a11e_a11e_a11e;

    /// The liveness word of a node that was freed.
    const POISON: u64 = 0xdead_dead_dead_dead;

    /// See the module.
    pub(crate) struct Liveness {
        _track: loom::alloc::Track<()>,
        cell: loom::cell::UnsafeCell<()>,
        word: AtomicU64,
    }

    impl Liveness {
        /// The liveness of a node just allocated.
        pub(crate) fn new() -> Self {
            Liveness {
                _track: loom::alloc::Track::new(()),
                cell: loom::cell::UnsafeCell::new(()),
                word: AtomicU64::new(ALIVE),
            }
        }

        /// Asserts the node is not freed, and records a read of its liveness cell, so that a
        /// free that does not happen-after this access is reported as a causality violation.
        #[inline]
        pub(crate) fn check(&self) {
            self.cell.with(|_| ());
            assert_eq!(
                self.word.load(Ordering::Relaxed),
                ALIVE,
                "maple tree node used after it was freed"
            );
        }
    }

    impl Drop for Liveness {
        /// Poisons: a write of the cell, ordered by loom against every reader's `check`.
        fn drop(&mut self) {
            self.cell.with_mut(|_| ());
            let w = self.word.get_mut();
            assert_eq!(*w, ALIVE, "maple tree node freed twice");
            *w = POISON;
        }
    }
}

// ===== end of node memory under loom ============================================================
