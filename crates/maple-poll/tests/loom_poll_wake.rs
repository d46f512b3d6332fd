//! Loom model of poll's wake-up handshake (no lost wake-up): a poller runs `poll` with an
//! infinite timeout on an empty eventfd ([`Task::sys_poll`]: `do_sys_poll` → `do_poll` →
//! `do_pollfd` → `eventfd_poll`, which registers on the eventfd's wait queue with `poll_wait`
//! and then reads the counter; `poll_schedule_timeout` sleeps unless `triggered`), while a waker
//! writes the eventfd (`eventfd_write`: the counter, then `wake_up_poll`, whose `pollwake` sets
//! `triggered` and wakes the task).
//!
//! Checked in every interleaving: the poller returns 1 with `POLLIN` in the user's `revents`,
//! either because its first pass saw the counter raised or because it slept and was woken; a
//! poller that sleeps forever is a deadlock, which loom reports. Both outcomes must occur.
//!
//! A second model wakes through `->release`: the poller polls a pipe's read end while another
//! thread closes the only write end ([`FdTable::close`]: the last `fput` runs `pipe_release`,
//! which drops the writer count and wakes the queue). The poller must return `POLLHUP`, seen on
//! its first pass or after being woken (both must occur).
//!
//! The broken twins turn on one knob of `maple_poll::loom_knobs` each, and must fail (each runs
//! in a child process of the test binary, which must fail with loom's report: see
//! `loom_support::explore_twin`):
//! - `eventfd_poll` reads the counter before `poll_wait` registers the poller (a write in
//!   between finds an empty queue and wakes nobody);
//! - `poll_schedule_timeout` clears `triggered` before sleeping instead of after it, the
//!   reordering the kernel's `smp_store_mb(pwq->triggered, 0)` exists to forbid (a wake-up that
//!   came after the pass's readiness check is wiped out); in both models.
//!
//! Run: `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p maple-poll --test
//! loom_poll_wake` (`LOOM_MAX_PREEMPTIONS` bounds the exploration; default 3).
#![cfg(all(loom, target_os = "linux"))]

mod loom_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use maple_poll::{
    loom_knobs, FdTable, PollFd, PollMask, Task, UserMemory, WindowMode, POLLHUP, POLLIN,
};

use loom_support::{count_execution, explore, explore_twin, Defuse, Knob};

/// Outcomes over the exploration: ready on the first pass, woken from the sleep.
static READY_AT_ONCE: AtomicUsize = AtomicUsize::new(0);
static WOKEN: AtomicUsize = AtomicUsize::new(0);

/// Outcomes of the pipe model: hang-up seen on the first pass, woken by the release.
static HUP_AT_ONCE: AtomicUsize = AtomicUsize::new(0);
static HUP_WOKEN: AtomicUsize = AtomicUsize::new(0);

/// The shared shape of both models: a poller thread polls `fd` (made by `open`) for `POLLIN`
/// with an infinite timeout and must return 1 with `want` in `revents`, counting its outcome in
/// `outcomes` (ready on the first pass, woken from the sleep); this thread runs `wake` meanwhile.
fn poll_against(
    open: impl FnOnce(&FdTable) -> (i32, i32),
    want: PollMask,
    outcomes: [&'static AtomicUsize; 2],
    wake: impl FnOnce(&FdTable, i32),
) {
    count_execution();
    let files = Defuse::new(Arc::new(FdTable::new()));
    let (fd, other) = open(&files);
    let mm = Defuse::new(Arc::new(
        UserMemory::new(4096, WindowMode::Counted).expect("user memory"),
    ));
    let ufds = mm.base();
    mm.write_pollfds(ufds, &[PollFd::new(fd, POLLIN)])
        .expect("pollfd");

    let poller = {
        let (files, mm) = (Arc::clone(&files), Arc::clone(&mm));
        loom::thread::spawn(move || {
            let mut task = Defuse::new(Task::new(files, Arc::clone(&mm)));
            let mm = Defuse::new(mm);
            assert_eq!(task.sys_poll(ufds, 1, -1), Ok(1), "poll returned unready");
            let mut out = [PollFd::default()];
            mm.read_pollfds(ufds, &mut out).expect("revents");
            assert_eq!(out[0].revents, want, "revents");
            match task.calls().1 {
                1 => outcomes[0].fetch_add(1, Ordering::Relaxed),
                2 => outcomes[1].fetch_add(1, Ordering::Relaxed),
                n => panic!("{n} passes for one wake-up"),
            };
        })
    };

    wake(&files, other);
    poller.join().expect("poller");
}

/// Poll of an empty eventfd vs a write of it.
fn model() {
    poll_against(
        |files| {
            let efd = files.eventfd(0, false).expect("eventfd");
            (efd, efd)
        },
        POLLIN,
        [&READY_AT_ONCE, &WOKEN],
        |files, efd| {
            assert_eq!(
                files.write(efd, &1u64.to_ne_bytes()),
                Ok(8),
                "eventfd write"
            )
        },
    );
}

/// Poll of a pipe's read end vs the close of its only write end.
fn pipe_model() {
    poll_against(
        |files| {
            let [rfd, wfd] = files.pipe().expect("pipe");
            (rfd, wfd)
        },
        POLLHUP,
        [&HUP_AT_ONCE, &HUP_WOKEN],
        |files, wfd| files.close(wfd).expect("close"),
    );
}

#[test]
fn a_poller_sees_the_write_or_is_woken() {
    let _k = Knob::none();
    READY_AT_ONCE.store(0, Ordering::Relaxed);
    WOKEN.store(0, Ordering::Relaxed);
    let (n, d) = explore("poll vs eventfd write", model);
    let seen = [&READY_AT_ONCE, &WOKEN].map(|c| c.load(Ordering::Relaxed));
    eprintln!(
        "    outcomes: ready on the first pass {}, slept and woken {}",
        seen[0], seen[1]
    );
    assert!(
        seen.iter().all(|&c| c > 0),
        "both outcomes must occur: {seen:?}"
    );
    assert!(d.as_secs() < 60, "{n} executions took {d:?}");
}

#[test]
fn twin_reading_readiness_before_registering_fails() {
    explore_twin(
        "eventfd_poll reads before poll_wait",
        "twin_reading_readiness_before_registering_fails",
        &["deadlock"],
        loom_knobs::set_poll_before_wait,
        model,
    );
}

#[test]
fn twin_clearing_triggered_before_the_sleep_fails() {
    explore_twin(
        "triggered cleared before the sleep",
        "twin_clearing_triggered_before_the_sleep_fails",
        &["deadlock"],
        loom_knobs::set_clear_triggered_on_entry,
        model,
    );
}

#[test]
fn a_poller_of_a_pipe_sees_the_last_writer_close() {
    let _k = Knob::none();
    HUP_AT_ONCE.store(0, Ordering::Relaxed);
    HUP_WOKEN.store(0, Ordering::Relaxed);
    let (n, d) = explore("poll of a pipe vs close of its write end", pipe_model);
    let seen = [&HUP_AT_ONCE, &HUP_WOKEN].map(|c| c.load(Ordering::Relaxed));
    eprintln!(
        "    outcomes: hang-up on the first pass {}, slept and woken {}",
        seen[0], seen[1]
    );
    assert!(
        seen.iter().all(|&c| c > 0),
        "both outcomes must occur: {seen:?}"
    );
    assert!(d.as_secs() < 60, "{n} executions took {d:?}");
}

#[test]
fn twin_clearing_triggered_before_the_sleep_misses_the_hangup() {
    explore_twin(
        "triggered cleared before the sleep, pipe",
        "twin_clearing_triggered_before_the_sleep_misses_the_hangup",
        &["deadlock"],
        loom_knobs::set_clear_triggered_on_entry,
        pipe_model,
    );
}
