//! Test-only switches that break the poll wake-up handshake or the file reference counts on
//! purpose, so that the loom models (`tests/loom_poll_wake.rs`, `tests/loom_file_ref.rs`) can show
//! they catch the bug (a model that cannot fail proves nothing).
//!
//! Compiled only under `cfg(loom)`. Every switch is off by default; a test that turns one on
//! must turn it off again (also when it panics): the switches are process-wide. [`reset`] turns
//! them all off.

use std::sync::atomic::{AtomicBool, Ordering as StdOrdering};

static POLL_BEFORE_WAIT: AtomicBool = AtomicBool::new(false);
static CLEAR_TRIGGERED_ON_ENTRY: AtomicBool = AtomicBool::new(false);
static FDGET_BORROW_SHARED: AtomicBool = AtomicBool::new(false);
static RELAXED_FPUT: AtomicBool = AtomicBool::new(false);

/// The eventfd's `->poll` reads its counter before `poll_wait` registers the poller on its wait
/// queue (a deliberate bug: a write between the read and the registration finds nobody to wake,
/// and the poller sleeps on a ready file).
pub fn set_poll_before_wait(on: bool) {
    POLL_BEFORE_WAIT.store(on, StdOrdering::SeqCst);
}

/// `poll_schedule_timeout` clears `triggered` before it sleeps instead of after (a deliberate
/// bug: the clear moves past the readiness check of the pass before it, which the kernel's
/// `smp_store_mb(pwq->triggered, 0)` forbids, and a wake-up that came in between is lost).
pub fn set_clear_triggered_on_entry(on: bool) {
    CLEAR_TRIGGERED_ON_ENTRY.store(on, StdOrdering::SeqCst);
}

/// `fdget` borrows the file even when the descriptor table is shared (a deliberate bug: no
/// reference is taken, so another thread's `close` can run `->release` while `->poll` is still
/// using the file; the kernel's `__fget_light` borrows only when `files->count == 1`).
pub fn set_fdget_borrow_shared(on: bool) {
    FDGET_BORROW_SHARED.store(on, StdOrdering::SeqCst);
}

/// `fput` decrements `f_count` `Relaxed` instead of `AcqRel` (a deliberate bug: the last `fput`
/// runs `->release` without having seen what the other holders did with the file).
pub fn set_relaxed_fput(on: bool) {
    RELAXED_FPUT.store(on, StdOrdering::SeqCst);
}

pub(crate) fn poll_before_wait() -> bool {
    POLL_BEFORE_WAIT.load(StdOrdering::SeqCst)
}

pub(crate) fn clear_triggered_on_entry() -> bool {
    CLEAR_TRIGGERED_ON_ENTRY.load(StdOrdering::SeqCst)
}

pub(crate) fn fdget_borrow_shared() -> bool {
    FDGET_BORROW_SHARED.load(StdOrdering::SeqCst)
}

pub(crate) fn relaxed_fput() -> bool {
    RELAXED_FPUT.load(StdOrdering::SeqCst)
}

/// Turns every switch off.
pub fn reset() {
    set_poll_before_wait(false);
    set_clear_triggered_on_entry(false);
    set_fdget_borrow_shared(false);
    set_relaxed_fput(false);
}
