//! Test-only switches that break the per-VMA lock or the userfaultfd event handshake on purpose,
//! so that the loom models (`tests/loom_vma_lock.rs`, `tests/loom_uffd_event.rs`) can show they
//! catch the bug (a model that cannot fail proves nothing).
//!
//! Compiled only under `cfg(loom)`. Every switch is off by default; a test that turns one on
//! must turn it off again (also when it panics): the switches are process-wide. [`reset`] turns
//! them all off.

use std::sync::atomic::{AtomicBool, Ordering as StdOrdering};

static SKIP_READ_RECHECK: AtomicBool = AtomicBool::new(false);
static RELAXED_END_WRITE_ALL: AtomicBool = AtomicBool::new(false);
static FILL_WITHOUT_LOCK: AtomicBool = AtomicBool::new(false);
static SKIP_DETACHED_CHECK: AtomicBool = AtomicBool::new(false);
static EVENT_NO_WAIT: AtomicBool = AtomicBool::new(false);

/// `vma_start_read` skips its second `vm_lock_seq == mm_lock_seq` check, the one made with the
/// reader count held (a deliberate bug: a reader whose first check ran before the writer's
/// stamp locks a VMA that is write-locked by its stamp alone).
pub fn set_skip_read_recheck(on: bool) {
    SKIP_READ_RECHECK.store(on, StdOrdering::SeqCst);
}

/// `vma_end_write_all` increments `mm_lock_seq` `Relaxed` instead of `AcqRel` (a deliberate bug:
/// a reader that sees the new sequence does not see the writer's changes to the VMA).
pub fn set_relaxed_end_write_all(on: bool) {
    RELAXED_END_WRITE_ALL.store(on, StdOrdering::SeqCst);
}

/// The fill ioctls check `mmap_changing` without holding `map_changing_lock` (a deliberate bug,
/// the race kernel commit 5e4c24a57b0c closed: a fill that saw no event in flight runs on while
/// an event's change is made).
pub fn set_fill_without_lock(on: bool) {
    FILL_WITHOUT_LOCK.store(on, StdOrdering::SeqCst);
}

/// `lock_vma_under_rcu` skips its check, made with the read lock held, that the VMA it found is
/// still attached and still covers the address (a deliberate bug: a reader that found a VMA
/// before an munmap and locked it after the mmap write lock was released returns a detached
/// VMA).
pub fn set_skip_detached_check(on: bool) {
    SKIP_DETACHED_CHECK.store(on, StdOrdering::SeqCst);
}

/// An event's completion posts the message and drops `mmap_changing` at once, without waiting
/// for the monitor to read it (a deliberate bug: a fill can run on the changed layout while the
/// event is still unread, and the generator returns before its event was delivered).
pub fn set_event_no_wait(on: bool) {
    EVENT_NO_WAIT.store(on, StdOrdering::SeqCst);
}

pub(crate) fn event_no_wait() -> bool {
    EVENT_NO_WAIT.load(StdOrdering::SeqCst)
}

pub(crate) fn skip_detached_check() -> bool {
    SKIP_DETACHED_CHECK.load(StdOrdering::SeqCst)
}

pub(crate) fn skip_read_recheck() -> bool {
    SKIP_READ_RECHECK.load(StdOrdering::SeqCst)
}

pub(crate) fn relaxed_end_write_all() -> bool {
    RELAXED_END_WRITE_ALL.load(StdOrdering::SeqCst)
}

pub(crate) fn fill_without_lock() -> bool {
    FILL_WITHOUT_LOCK.load(StdOrdering::SeqCst)
}

/// Turns every switch off.
pub fn reset() {
    set_skip_read_recheck(false);
    set_relaxed_end_write_all(false);
    set_fill_without_lock(false);
    set_skip_detached_check(false);
    set_event_no_wait(false);
}
