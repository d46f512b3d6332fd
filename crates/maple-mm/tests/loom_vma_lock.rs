//! Loom model of the per-VMA sequence-count lock (`vma_start_read` / `vma_start_write` /
//! `vma_end_write_all` over `mm_lock_seq` and `vm_lock_seq`): a lock-free reader runs
//! [`Mm::lock_vma_under_rcu`] — the maple tree's RCU load, the lock, the detached check — while a
//! writer takes the mmap write lock, write-locks the same VMA with [`Vma::start_write`],
//! modifies it in two steps and releases the mmap lock (which is `vma_end_write_all`).
//!
//! The VMA's modifiable state is a loom `UnsafeCell` here, so loom reports any read by a reader
//! holding the read lock that is not ordered with the writer's modification (a causality
//! violation); the reader also asserts that it never sees the half-made state. Every outcome
//! (locked before the writer, refused while write-locked, locked after it) must occur.
//!
//! A second model runs the same reader against an `munmap` of the VMA (the writer write-locks
//! it, marks it detached and erases it from the tree under the mmap write lock): the reader may
//! find the old VMA through the tree's RCU read and lock it once the write lock is gone, so it
//! must re-check `detached` with the lock held and never return a detached VMA.
//!
//! The broken twins turn on one knob of `maple_mm::loom_knobs` each, and must fail:
//! - the reader skips its second `vm_lock_seq == mm_lock_seq` check (made with the reader count
//!   held), so it can lock a VMA that is write-locked by its stamp alone;
//! - `vma_end_write_all` increments `mm_lock_seq` `Relaxed`, so a reader that sees the new
//!   sequence does not see the writer's modification;
//! - (second model) `lock_vma_under_rcu` skips the detached / bounds re-check.
//!
//! Run: `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p maple-mm --test
//! loom_vma_lock` (`LOOM_MAX_PREEMPTIONS` bounds the exploration; default 3, at most 2 for
//! the munmap model).
#![cfg(loom)]

mod loom_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use loom::cell::UnsafeCell;
use maple_mm::{loom_knobs, MapFlags, MapSource, Mm, Prot, VmaLockMiss, PAGE_SIZE};

use loom_support::{
    count_execution, explore, explore_capped, explore_twin, explore_twin_capped, Defuse, Knob,
};

/// Preemption bound of the munmap model (its tree erase multiplies the interleavings: bound 3
/// is 2.1 million executions, over 3 minutes; bound 2 is about 100,000, 9 s).
const MUNMAP_PREEMPTIONS: usize = 2;

/// The VMA's state the writer modifies under the VMA write lock: 0, then 1 (half made), then 2.
struct VmaState(UnsafeCell<u64>);

// SAFETY: accessed only through loom's `UnsafeCell` checks, which report unordered accesses.
unsafe impl Sync for VmaState {}

/// Outcomes seen by the reader over the exploration: locked and saw 0, refused, locked and saw 2.
static SAW_OLD: AtomicUsize = AtomicUsize::new(0);
static REFUSED: AtomicUsize = AtomicUsize::new(0);
static SAW_NEW: AtomicUsize = AtomicUsize::new(0);

fn model() {
    count_execution();
    let mm = Defuse::new(Arc::new(Mm::new()));
    let a = mm
        .mmap(0, PAGE_SIZE, Prot::READ, MapFlags::PRIVATE, MapSource::Anon)
        .expect("mmap");
    let state = Defuse::new(Arc::new(VmaState(UnsafeCell::new(0))));

    let reader = {
        let (mm, state) = (Arc::clone(&mm), Arc::clone(&state));
        loom::thread::spawn(move || {
            let (mm, state) = (Defuse::new(mm), Defuse::new(state));
            let guard = Defuse::new(mm.pin());
            match mm.lock_vma_under_rcu(a, &guard) {
                Ok(vma) => {
                    let vma = Defuse::new(vma);
                    assert_eq!(vma.start(), a);
                    // SAFETY: a read under the VMA read lock (loom checks it is ordered).
                    let seen = state.0.with(|p| unsafe { *p });
                    assert_ne!(seen, 1, "a read-locked VMA was being modified");
                    if seen == 0 { &SAW_OLD } else { &SAW_NEW }.fetch_add(1, Ordering::Relaxed);
                }
                Err(VmaLockMiss::Locked) => {
                    REFUSED.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("lock_vma_under_rcu: {e:?}"),
            };
        })
    };

    {
        let w = Defuse::new(mm.write());
        let vma = w.vma_lookup(a).expect("the VMA");
        assert!(
            vma.start_write(mm.lock_state()),
            "the first start_write locks"
        );
        // SAFETY: writes under the VMA write lock (loom checks they are ordered with readers).
        state.0.with_mut(|p| unsafe { *p = 1 });
        // SAFETY: as above.
        state.0.with_mut(|p| unsafe { *p = 2 });
        // Dropping the mmap write lock is vma_end_write_all.
    }
    reader.join().expect("reader");
}

/// Outcomes of the munmap model: locked before the munmap, refused or stale, no VMA.
static BEFORE: AtomicUsize = AtomicUsize::new(0);
static MISSED: AtomicUsize = AtomicUsize::new(0);
static GONE: AtomicUsize = AtomicUsize::new(0);

fn munmap_model() {
    count_execution();
    let mm = Defuse::new(Arc::new(Mm::new()));
    let a = mm
        .mmap(0, PAGE_SIZE, Prot::READ, MapFlags::PRIVATE, MapSource::Anon)
        .expect("mmap");
    let reader = {
        let mm = Arc::clone(&mm);
        loom::thread::spawn(move || {
            let mm = Defuse::new(mm);
            let guard = Defuse::new(mm.pin());
            match mm.lock_vma_under_rcu(a, &guard) {
                Ok(vma) => {
                    let vma = Defuse::new(vma);
                    assert!(
                        !vma.is_detached(),
                        "lock_vma_under_rcu returned a detached VMA"
                    );
                    BEFORE.fetch_add(1, Ordering::Relaxed);
                }
                Err(VmaLockMiss::Locked | VmaLockMiss::Stale) => {
                    MISSED.fetch_add(1, Ordering::Relaxed);
                }
                Err(VmaLockMiss::NoVma) => {
                    GONE.fetch_add(1, Ordering::Relaxed);
                }
            };
        })
    };
    let removed = Defuse::new(mm.munmap(a, PAGE_SIZE).expect("munmap"));
    assert_eq!(removed.len(), 1);
    reader.join().expect("reader");
}

#[test]
fn reader_never_returns_an_unmapped_vma() {
    let _k = Knob::none();
    for c in [&BEFORE, &MISSED, &GONE] {
        c.store(0, Ordering::Relaxed);
    }
    let (n, d) = explore_capped(
        "lock_vma_under_rcu vs munmap",
        MUNMAP_PREEMPTIONS,
        munmap_model,
    );
    let seen = [&BEFORE, &MISSED, &GONE].map(|c| c.load(Ordering::Relaxed));
    eprintln!(
        "    outcomes: locked before {}, refused or stale {}, no VMA {}",
        seen[0], seen[1], seen[2]
    );
    assert!(
        seen.iter().all(|&c| c > 0),
        "every outcome must occur: {seen:?}"
    );
    assert!(d.as_secs() < 60, "{n} executions took {d:?}");
}

#[test]
fn twin_without_the_detached_check_fails() {
    let msg = explore_twin_capped(
        "lock_vma_under_rcu without the detached check",
        MUNMAP_PREEMPTIONS,
        loom_knobs::set_skip_detached_check,
        munmap_model,
    );
    assert!(msg.contains("detached VMA"), "unexpected failure: {msg}");
}

#[test]
fn reader_never_locks_a_vma_being_modified() {
    let _k = Knob::none();
    for c in [&SAW_OLD, &REFUSED, &SAW_NEW] {
        c.store(0, Ordering::Relaxed);
    }
    let (n, d) = explore("lock_vma_under_rcu vs start_write/end_write_all", model);
    let seen = [&SAW_OLD, &REFUSED, &SAW_NEW].map(|c| c.load(Ordering::Relaxed));
    eprintln!(
        "    outcomes: locked before {}, refused {}, locked after {}",
        seen[0], seen[1], seen[2]
    );
    assert!(
        seen.iter().all(|&c| c > 0),
        "every outcome must occur: {seen:?}"
    );
    assert!(d.as_secs() < 60, "{n} executions took {d:?}");
}

#[test]
fn twin_without_the_read_recheck_fails() {
    let msg = explore_twin(
        "lock_vma_under_rcu without the second seq check",
        loom_knobs::set_skip_read_recheck,
        model,
    );
    assert!(
        msg.contains("Causality violation") || msg.contains("being modified"),
        "unexpected failure: {msg}"
    );
}

#[test]
fn twin_with_a_relaxed_end_write_all_fails() {
    let msg = explore_twin(
        "end_write_all Relaxed",
        loom_knobs::set_relaxed_end_write_all,
        model,
    );
    assert!(
        msg.contains("Causality violation") || msg.contains("being modified"),
        "unexpected failure: {msg}"
    );
}
