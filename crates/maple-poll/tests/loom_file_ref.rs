//! Loom model of a file's lifetime across `poll`: a poller runs a one-pass `poll` (timeout 0)
//! on one descriptor ([`Task::sys_poll`]: `do_pollfd` takes the file with `fdget` from the
//! maple-tree descriptor table, which the poller shares with the closer, so a reference is
//! taken; `->poll` runs; `fdput` drops the reference), while another thread closes the
//! descriptor ([`FdTable::close`]: the entry is erased, then `fput`; the last `fput` runs
//! `->release`).
//!
//! The file's state is a loom `UnsafeCell` that `->release` overwrites (the file is torn down:
//! the kernel's `__fput`), so loom reports a `->poll` read that is not ordered before the
//! release (a causality violation); `->poll` also asserts it never sees the released state.
//! Checked in every interleaving: `->release` runs exactly once, after the poller's `fput` when
//! the poller held the last reference, and the poller sees either `POLLNVAL` (closed before its
//! `fdget`) or the live file's mask. Every outcome (closed first, released by the closer,
//! released by the poller's `fput`) must occur.
//!
//! The broken twins turn on one knob of `maple_poll::loom_knobs` each, and must fail (each runs
//! in a child process of the test binary, which must fail with loom's report: see
//! `loom_support::explore_twin`):
//! - `fdget` borrows the file even though the table is shared (no reference: the close can run
//!   `->release` while `->poll` is in the file; the kernel's `__fget_light` borrows only when
//!   `files->count == 1`);
//! - `fput` decrements `f_count` `Relaxed` (the last `fput` releases the file without having
//!   seen the poller's use of it).
//!
//! Run: `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p maple-poll --test
//! loom_file_ref` (`LOOM_MAX_PREEMPTIONS` bounds the exploration; default 3).
#![cfg(all(loom, target_os = "linux"))]

mod loom_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use loom::cell::UnsafeCell;
use maple_poll::{
    loom_knobs, FdTable, FileOperations, PollFd, PollMask, PollTable, Task, UserMemory, WindowMode,
    POLLIN, POLLNVAL,
};

use loom_support::{count_execution, explore, explore_twin, Defuse, Knob};

/// The file's state while it is open.
const LIVE: u64 = 0x11fe;
/// What `->release` leaves behind.
const RELEASED: u64 = 0xdead;

/// A pollable file whose state `->poll` reads and `->release` overwrites.
struct Probe(UnsafeCell<u64>);

// SAFETY: the cell is accessed only through loom's `UnsafeCell` checks, which report unordered
// accesses (the very thing the model checks).
unsafe impl Sync for Probe {}
// SAFETY: as above; the cell holds a plain integer.
unsafe impl Send for Probe {}

/// `->release` calls in the current execution.
static RELEASES: AtomicUsize = AtomicUsize::new(0);

impl FileOperations for Probe {
    fn poll(&self, _pt: &mut PollTable<'_>) -> PollMask {
        // SAFETY: a read of the file's state (loom checks it is ordered before the release).
        let state = self.0.with(|p| unsafe { *p });
        assert_eq!(state, LIVE, "->poll ran on a released file");
        POLLIN
    }

    fn release(&self) {
        RELEASES.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the teardown (loom checks it is ordered after every use of the file).
        self.0.with_mut(|p| unsafe { *p = RELEASED });
    }

    fn name(&self) -> &'static str {
        "probe"
    }
}

/// Outcomes over the exploration: `POLLNVAL`, polled and released by the closer's `fput`,
/// polled and released by the poller's `fput`.
static NVAL: AtomicUsize = AtomicUsize::new(0);
static BY_CLOSER: AtomicUsize = AtomicUsize::new(0);
static BY_POLLER: AtomicUsize = AtomicUsize::new(0);

fn model() {
    count_execution();
    RELEASES.store(0, Ordering::Relaxed);
    let files = Defuse::new(Arc::new(FdTable::new()));
    let fd = files
        .install(Probe(UnsafeCell::new(LIVE)))
        .expect("install");
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
            assert_eq!(task.sys_poll(ufds, 1, 0), Ok(1), "poll");
            let mut out = [PollFd::default()];
            mm.read_pollfds(ufds, &mut out).expect("revents");
            out[0].revents
        })
    };

    files.close(fd).expect("close");
    let released_by_close = RELEASES.load(Ordering::Relaxed) == 1;
    let revents = poller.join().expect("poller");
    assert_eq!(
        RELEASES.load(Ordering::Relaxed),
        1,
        "->release must run exactly once"
    );
    match revents {
        POLLNVAL => {
            assert!(released_by_close, "closed before fdget, released after");
            &NVAL
        }
        POLLIN if released_by_close => &BY_CLOSER,
        POLLIN => &BY_POLLER,
        r => panic!("revents {r:#x}"),
    }
    .fetch_add(1, Ordering::Relaxed);
}

#[test]
fn a_closed_file_is_released_once_after_the_pollers_fput() {
    let _k = Knob::none();
    for c in [&NVAL, &BY_CLOSER, &BY_POLLER] {
        c.store(0, Ordering::Relaxed);
    }
    let (n, d) = explore("poll vs close", model);
    let seen = [&NVAL, &BY_CLOSER, &BY_POLLER].map(|c| c.load(Ordering::Relaxed));
    eprintln!(
        "    outcomes: closed first {}, released by the close {}, released by the poller's fput {}",
        seen[0], seen[1], seen[2]
    );
    assert!(
        seen.iter().all(|&c| c > 0),
        "every outcome must occur: {seen:?}"
    );
    assert!(d.as_secs() < 60, "{n} executions took {d:?}");
}

#[test]
fn twin_borrowing_a_shared_file_fails() {
    explore_twin(
        "fdget without a reference on a shared table",
        "twin_borrowing_a_shared_file_fails",
        &["Causality violation", "released file"],
        loom_knobs::set_fdget_borrow_shared,
        model,
    );
}

#[test]
fn twin_with_a_relaxed_fput_fails() {
    explore_twin(
        "fput Relaxed",
        "twin_with_a_relaxed_fput_fails",
        &["Causality violation", "released file"],
        loom_knobs::set_relaxed_fput,
        model,
    );
}
