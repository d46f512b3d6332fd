//! The one place that names std's, core's or loom's synchronisation primitives.
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

/// The spin lock's word (without std).
#[cfg(not(feature = "std"))]
pub(crate) use core::sync::atomic::AtomicBool;
#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicUsize, Ordering};

/// 64-bit atomics: core's where the target has them; on targets without (32-bit
/// microcontrollers such as `thumbv7em-none-eabihf`, `riscv32imac-unknown-none-elf`),
/// portable-atomic's, which are lock-based there (a global table of seqlocks: a store takes one
/// of its spin locks, a load retries while it is held, so readers there are not lock-free).
#[cfg(all(not(loom), target_has_atomic = "64"))]
pub(crate) use core::sync::atomic::AtomicU64;
#[cfg(all(not(loom), not(target_has_atomic = "64")))]
pub(crate) use portable_atomic::AtomicU64;

/// A 64-bit atomic that loom never models (the id allocator's cursor): core's, or
/// portable-atomic's on targets without 64-bit atomics.
#[cfg(target_has_atomic = "64")]
pub(crate) use core::sync::atomic::AtomicU64 as PlainAtomicU64;
#[cfg(not(target_has_atomic = "64"))]
pub(crate) use portable_atomic::AtomicU64 as PlainAtomicU64;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(feature = "std")]
pub(crate) use mutex::{Mutex, MutexGuard};

/// The writer lock: std's mutex (loom's under loom), without poisoning. A writer that panics
/// (an entry's `Drop` may) leaves the tree consistent — writes are panic-safe — so the next
/// writer goes on rather than failing on a poisoned lock.
///
/// Without std the node layer's test-and-test-and-set spin lock (`tree::node::SpinMutex`, in
/// the node layer because its cell is `unsafe`) takes its place, with the same interface. Why
/// one lock type chosen by the `std` feature and not a `lock_api::RawMutex` type parameter on
/// `MapleTree` (as `lock_api` users do): the parameter would reach every public type that
/// borrows the tree (`WriteGuard`, cursors, iterators, `TreeGuard`, ...) and every user's
/// signatures, for a lock that is held only for one write — the tree's writers are short and
/// never sleep with it held (no allocation waits, no I/O) — and a kernel that wants its own
/// sleeping lock can serialise its writers outside the tree (`exclusive()` on `&mut`, or its
/// own lock around `tree.lock()`, which then never spins). A spin lock needs no OS, and
/// test-and-test-and-set keeps a waiting CPU on its own cache line until the holder lets go.
#[cfg(feature = "std")]
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

/// A panic's payload, for [`catch_unwind`]'s callers to resume once their clean-up is done.
/// Uninhabited without std, where panics are not caught.
#[cfg(feature = "std")]
pub(crate) type PanicPayload = alloc::boxed::Box<dyn core::any::Any + Send>;
/// Without std: no panic is caught (see [`catch_unwind`]).
#[cfg(not(feature = "std"))]
pub(crate) enum PanicPayload {}

/// Runs `f`, catching a panic (an entry's `Drop` or `Clone`) so that the caller can finish its
/// clean-up and go on with [`resume_unwind`], or contain it. Without std panics cannot be
/// caught (core has no `catch_unwind`): a panic goes on at once, and the clean-up after it does
/// not happen (what is not dropped leaks; nothing is freed twice or used after its free).
/// Most `no_std` targets abort on panic anyway.
#[inline]
pub(crate) fn catch_unwind<R>(f: impl FnOnce() -> R) -> Result<R, PanicPayload> {
    #[cfg(feature = "std")]
    {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
    }
    #[cfg(not(feature = "std"))]
    {
        Ok(f())
    }
}

/// Goes on with a panic [`catch_unwind`] caught.
pub(crate) fn resume_unwind(p: PanicPayload) -> ! {
    #[cfg(feature = "std")]
    {
        std::panic::resume_unwind(p)
    }
    #[cfg(not(feature = "std"))]
    match p {}
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
    /// A reader's gap search prunes a right-edge child by its gap without re-reading its path.
    #[inline(always)]
    pub(crate) const fn trust_edge_gap() -> bool {
        false
    }
    /// The append split's climb lowers the shrunk children's gaps before the shrink.
    #[inline(always)]
    pub(crate) const fn early_gap_lowering() -> bool {
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
    /// Retired nodes an RCU-mode writer queues before it hands them to the collector (see
    /// `retire_batch`): 32 outside loom.
    #[inline(always)]
    pub(crate) const fn retire_batch() -> usize {
        32
    }
    /// Retired nodes are freed at once, without a grace period.
    #[inline(always)]
    pub(crate) const fn free_at_once() -> bool {
        false
    }
}

/// Whether this is a loom build: the collector's pacing is off there (the models check the
/// protocol, not the collector's pace).
pub(crate) const LOOM: bool = cfg!(loom);

/// Whether the writer's per-thread bookkeeping (std's thread-locals: the writer locks a thread
/// holds, its postponed entry drops) is on: std builds outside loom, whose model threads share
/// one OS thread (a std thread-local would be shared between them).
#[cfg(feature = "std")]
pub(crate) const THREAD_LOCALS: bool = !LOOM;

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

/// Whether every node is a `Box` of its own instead of a node of the tree's chunked slab (the
/// node layer's `slab` picks its backend by this constant): under loom, whose nodes carry
/// allocation tracking, and in a `--cfg maple_tree_box_nodes` build (what the sanitizers need
/// to see a use of one freed node). False in every shipping build.
pub(crate) const BOX_NODES: bool = cfg!(any(loom, maple_tree_box_nodes));

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
