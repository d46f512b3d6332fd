//! Tests of the poll model: window counts, results across strategies and against the real
//! `poll(2)`, the concurrent-modification clobber, EFAULT paths, do_poll semantics, the
//! descriptor table, protection-key enforcement and the will-it-scale drivers.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::EventfdFlags;
use rustix::pipe::PipeFlags;

#[cfg(feature = "bench-internals")]
use super::will_it_scale::{self, Config, Testcase};
use super::*;

/// The `nfds` of the issue and the `poll_list` chunks the kernel builds for each (`do_sys_poll`'s
/// `N_STACK_PPS` = 30 on the stack, then `POLLFD_PER_PAGE` = 510 per page): 30+0, 30, 30+1, 30+98, 30+480, 30+481, 30+510+460.
const NFDS_CHUNKS: [(u64, u64); 7] = [
    (1, 1),
    (30, 1),
    (31, 2),
    (128, 2),
    (510, 2),
    (511, 2),
    (1000, 3),
];

/// Window modes every behavioural test runs under: counted, and real protection keys where
/// this machine has them (so a window bug would fault for real).
fn modes() -> Vec<WindowMode> {
    let mut m = vec![WindowMode::Counted];
    match pkeys_available() {
        Ok(_) => m.push(WindowMode::Pkey),
        Err(why) => eprintln!("protection keys unavailable, testing the model only: {why}"),
    }
    m
}

fn table_with_regular(n: usize) -> (Arc<FdTable>, Vec<i32>) {
    let files = Arc::new(FdTable::new());
    let fds = (0..n).map(|_| files.open_regular().unwrap()).collect();
    (files, fds)
}

fn read_back(mm: &UserMemory, addr: u64, n: usize) -> Vec<PollFd> {
    let mut out = vec![PollFd::default(); n];
    mm.read_pollfds(addr, &mut out).unwrap();
    out
}

// ----- window counts ----------------------------------------------------------------------------

#[test]
fn window_counts_exact_per_strategy() {
    // Under Miri, the sizes up to 128 (two chunks) only.
    let sizes = if cfg!(miri) { 4 } else { NFDS_CHUNKS.len() };
    for mode in modes() {
        let (files, fds) = table_with_regular(NFDS_CHUNKS[sizes - 1].0 as usize);
        let mm = Arc::new(UserMemory::new(8 * 1024, mode).unwrap());
        for &(n, c) in &NFDS_CHUNKS[..sizes] {
            // The expected copy-out windows per strategy: n, c, c, 1.
            for (s, out) in [
                (CopyOut::PerFdPutUser, n),
                (CopyOut::PerChunkUnsafe, c),
                (CopyOut::PerChunkCopyToUser, c),
                (CopyOut::SingleWindowUnsafe, 1),
            ] {
                let pfds: Vec<PollFd> = fds[..n as usize]
                    .iter()
                    .map(|&fd| PollFd::new(fd, POLLOUT))
                    .collect();
                mm.write_pollfds(mm.base(), &pfds).unwrap();
                let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
                task.set_copy_out(s);
                assert_eq!(
                    task.sys_poll(mm.base(), n, 0),
                    Ok(n as usize),
                    "{s:?} n={n}"
                );
                let st = task.last_call();
                assert_eq!(st.read_windows, c, "copy-in windows, {s:?} n={n}");
                assert_eq!(st.write_windows, out, "copy-out windows, {s:?} n={n}");
                assert_eq!(
                    st.windows_closed,
                    c + out,
                    "every window closed, {s:?} n={n}"
                );
                assert_eq!(st.bytes_in, 8 * n);
                let per_fd = if s == CopyOut::PerChunkCopyToUser {
                    8
                } else {
                    2
                };
                assert_eq!(st.bytes_out, per_fd * n, "{s:?} n={n}");
                assert_eq!((st.faults, st.access_ok_failures), (0, 0));
                // The closed-form helpers agree with the table.
                assert_eq!(
                    (CopyOut::copy_in_windows(n), s.copy_out_windows(n)),
                    (c, out)
                );
                assert!(read_back(&mm, mm.base(), n as usize)
                    .iter()
                    .all(|p| p.revents == POLLOUT));
                // Timeout 0: one pass, nothing registered.
                assert_eq!(task.calls(), (1, 1));
                assert_eq!(task.last_wait_table(), (0, 0));
                if let Some(allowed) = mm.access_allowed_here() {
                    assert!(!allowed, "a window was left open");
                }
            }
        }
    }
}

#[test]
fn poll1_and_poll2_window_totals() {
    // poll2 (n = 128, c = 2) uses 130 / 4 / 4 / 3 windows; poll1 uses 2 with every
    // strategy.
    let (files, fds) = table_with_regular(128);
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    for (s, poll2) in CopyOut::ALL.into_iter().zip([130, 4, 4, 3]) {
        for (n, want) in [(128u64, poll2), (1, 2)] {
            let pfds: Vec<PollFd> = fds[..n as usize]
                .iter()
                .map(|&fd| PollFd::new(fd, POLLOUT))
                .collect();
            mm.write_pollfds(mm.base(), &pfds).unwrap();
            let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
            task.set_copy_out(s);
            task.sys_poll(mm.base(), n, 0).unwrap();
            assert_eq!(task.stats().windows(), want, "{s:?} n={n}");
        }
    }
}

#[test]
fn zero_nfds() {
    // No copy-in at all (the head chunk is empty); copy-out: nothing per fd, the one empty head
    // chunk for the per-chunk strategies, one (empty) window for the merged one.
    let files = Arc::new(FdTable::new());
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    for (s, out) in CopyOut::ALL.into_iter().zip([0, 1, 1, 1]) {
        let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
        task.set_copy_out(s);
        assert_eq!(task.sys_poll(mm.base(), 0, 0), Ok(0));
        assert_eq!(
            (task.stats().read_windows, task.stats().write_windows),
            (0, out),
            "{s:?}"
        );
        assert_eq!(task.stats().windows_closed, out);
    }
}

// ----- results ------------------------------------------------------------------------------------

/// A mixed table over several chunks, with the revents each entry must get.
fn mixed_entries(files: &FdTable) -> Vec<(PollFd, u16)> {
    let reg = files.open_regular().unwrap();
    let ev0 = files.eventfd(0, false).unwrap();
    let ev5 = files.eventfd(5, false).unwrap();
    let [r, w] = files.pipe().unwrap();
    let [hr, hw] = files.pipe().unwrap();
    files.write(hw, b"x").unwrap();
    files.close(hw).unwrap(); // hr: data and hang-up
    let [er, ew] = files.pipe().unwrap();
    files.close(er).unwrap(); // ew: error, no reader
    let closed = files.open_regular().unwrap();
    files.close(closed).unwrap();
    let patterns = [
        (PollFd::new(reg, POLLIN | POLLOUT), POLLIN | POLLOUT),
        (PollFd::new(reg, 0), 0),
        (PollFd::new(ev0, POLLIN), 0),
        (PollFd::new(ev0, POLLIN | POLLOUT), POLLOUT),
        (PollFd::new(ev5, POLLIN | POLLRDNORM), POLLIN),
        (PollFd::new(r, POLLIN), 0),
        (PollFd::new(w, POLLOUT | POLLWRNORM), POLLOUT | POLLWRNORM),
        (PollFd::new(hr, POLLIN), POLLIN | POLLHUP),
        (PollFd::new(hr, 0), POLLHUP),
        (PollFd::new(ew, 0), POLLERR),
        (PollFd::new(ew, POLLOUT), POLLOUT | POLLERR),
        (PollFd::new(closed, POLLIN), POLLNVAL),
        (PollFd::new(100_000, POLLIN), POLLNVAL),
        (PollFd::new(-1, POLLIN), 0),
        (PollFd::new(-42, 0), 0),
    ];
    (0..if cfg!(miri) { 64 } else { 1000 })
        .map(|i| patterns[(i * 7) % patterns.len()])
        .collect()
}

#[test]
fn results_identical_across_strategies() {
    for mode in modes() {
        let files = Arc::new(FdTable::new());
        let entries = mixed_entries(&files);
        let pfds: Vec<PollFd> = entries.iter().map(|e| e.0).collect();
        let want: Vec<u16> = entries.iter().map(|e| e.1).collect();
        let want_count = want.iter().filter(|&&r| r != 0).count();
        let mm = Arc::new(UserMemory::new(8 * 1024, mode).unwrap());
        let mut results = Vec::new();
        for s in CopyOut::ALL {
            mm.write_pollfds(mm.base(), &pfds).unwrap();
            let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
            task.set_copy_out(s);
            let n = task.sys_poll(mm.base(), pfds.len() as u64, 0).unwrap();
            let back = read_back(&mm, mm.base(), pfds.len());
            assert_eq!(n, want_count, "{s:?}");
            assert_eq!(
                back.iter().map(|p| p.revents).collect::<Vec<_>>(),
                want,
                "{s:?}"
            );
            // Nobody changed fd/events, so even the whole-entry copy leaves them as they were.
            assert!(back
                .iter()
                .zip(&pfds)
                .all(|(b, p)| (b.fd, b.events) == (p.fd, p.events)));
            results.push((n, back));
        }
        assert!(results.windows(2).all(|w| w[0] == w[1]));
    }
}

fn real_tmpfile() -> OwnedFd {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("maple-poll-{}-{seq}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    OwnedFd::from(f)
}

fn real_pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC).unwrap()
}

/// Model objects and real descriptors driven through the same operations; every operation's
/// result must agree too.
struct Mirror {
    files: Arc<FdTable>,
    model: Vec<PollFd>,
    adaptor: Vec<PollFd>,
    real: Vec<PollFd>,
    keep: Vec<OwnedFd>,
}

impl Mirror {
    fn write(&self, mfd: i32, real: &OwnedFd, data: &[u8]) -> Result<usize, Errno> {
        let m = self.files.write(mfd, data);
        let r = rustix::io::write(real.as_fd(), data).map_err(Errno::from_io);
        assert_eq!(m, r, "write of {} bytes", data.len());
        m
    }

    fn read(&self, mfd: i32, real: &OwnedFd, n: usize) -> Result<usize, Errno> {
        let mut a = vec![0u8; n];
        let mut b = vec![0u8; n];
        let m = self.files.read(mfd, &mut a);
        let r = rustix::io::read(real.as_fd(), &mut b[..]).map_err(Errno::from_io);
        assert_eq!(m, r, "read of {n} bytes");
        assert_eq!(a, b);
        m
    }

    fn fill(&self, mfd: i32, real: &OwnedFd, chunk: usize) -> usize {
        let data = vec![7u8; chunk];
        let mut writes = 0;
        while self.write(mfd, real, &data).is_ok() {
            writes += 1;
            assert!(writes < 100_000);
        }
        writes
    }

    /// Polls `mfd` (model), an adaptor over a duplicate of `real`, and `real` itself with each
    /// of `events`.
    fn watch(&mut self, mfd: i32, real: &OwnedFd, adaptor: bool, events: &[u16]) {
        let afd = if adaptor {
            self.files.install_real(real.try_clone().unwrap()).unwrap()
        } else {
            -1
        };
        for &e in events {
            self.model.push(PollFd::new(mfd, e));
            self.adaptor
                .push(PollFd::new(if adaptor { afd } else { mfd }, e));
            self.real
                .push(PollFd::new(rustix::fd::AsRawFd::as_raw_fd(real), e));
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "real files, eventfds and pipes polled with poll(2)")]
fn results_identical_to_real_poll() {
    let files = Arc::new(FdTable::new());
    let mut m = Mirror {
        files: Arc::clone(&files),
        model: vec![],
        adaptor: vec![],
        real: vec![],
        keep: vec![],
    };
    let all = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
    let evs = [
        all,
        POLLIN,
        POLLOUT,
        0,
        POLLPRI,
        POLLIN | POLLRDNORM,
        POLLOUT | POLLWRBAND,
        u16::MAX,
    ];

    // Regular file: no ->poll, DEFAULT_POLLMASK.
    let t = real_tmpfile();
    let reg = files.open_regular().unwrap();
    m.watch(reg, &t, true, &evs);
    m.keep.push(t);

    // eventfd at 0, at 5, and at u64::MAX - 1 (readable, not writable; one more write: EAGAIN).
    for (init_writes, extra) in [
        (vec![], None),
        (vec![5u64], None),
        (vec![u64::MAX - 1], Some(1u64)),
    ] {
        let real =
            rustix::event::eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC).unwrap();
        let mfd = files.eventfd(0, false).unwrap();
        for v in init_writes {
            assert_eq!(m.write(mfd, &real, &v.to_ne_bytes()), Ok(8));
        }
        if let Some(v) = extra {
            assert_eq!(m.write(mfd, &real, &v.to_ne_bytes()), Err(Errno::EAGAIN));
        }
        m.watch(mfd, &real, true, &evs);
        m.keep.push(real);
    }
    // eventfd read back to 0 after a write.
    {
        let real =
            rustix::event::eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC).unwrap();
        let mfd = files.eventfd(0, false).unwrap();
        m.write(mfd, &real, &3u64.to_ne_bytes()).unwrap();
        assert_eq!(m.read(mfd, &real, 8), Ok(8));
        assert_eq!(m.read(mfd, &real, 8), Err(Errno::EAGAIN));
        m.watch(mfd, &real, true, &evs);
        m.keep.push(real);
    }

    // Pipes in many states; the page-slot ring must match the kernel's byte for byte.
    type Setup = fn(&Mirror, i32, &OwnedFd, i32, &OwnedFd);
    let states: [(&str, Setup); 9] = [
        ("empty", |_, _, _, _, _| {}),
        ("some data", |m, _, _, w, rw| {
            assert_eq!(m.write(w, rw, b"hello"), Ok(5));
        }),
        ("full in pages", |m, _, _, w, rw| {
            assert_eq!(m.fill(w, rw, 4096), 16);
        }),
        ("full, 100 bytes read", |m, r, rr, w, rw| {
            m.fill(w, rw, 4096);
            assert_eq!(m.read(r, rr, 100), Ok(100));
        }),
        ("full, a page's worth read", |m, r, rr, w, rw| {
            m.fill(w, rw, 4096);
            m.read(r, rr, 100).unwrap();
            assert_eq!(m.read(r, rr, 4096), Ok(4096));
        }),
        ("3000-byte writes", |m, _, _, w, rw| {
            assert_eq!(m.fill(w, rw, 3000), 16);
        }),
        ("1000-byte writes merge", |m, _, _, w, rw| {
            assert_eq!(m.fill(w, rw, 1000), 64);
        }),
        ("4097-byte writes", |m, _, _, w, rw| {
            m.fill(w, rw, 4097);
        }),
        ("one-byte writes", |m, r, rr, w, rw| {
            for _ in 0..5000 {
                m.write(w, rw, b"z").unwrap();
            }
            m.read(r, rr, 4500).unwrap();
        }),
    ];
    for (name, setup) in states {
        let (rr, rw) = real_pipe();
        let [r, w] = files.pipe().unwrap();
        setup(&m, r, &rr, w, &rw);
        let before = m.model.len();
        m.watch(r, &rr, true, &evs);
        m.watch(w, &rw, true, &evs);
        assert!(m.model.len() > before, "{name}");
        m.keep.push(rr);
        m.keep.push(rw);
    }
    // Hang-up: the writer closed (with and without data left); error: the reader closed. No
    // adaptor on the end that is closed (its duplicate would keep the real end open).
    for with_data in [false, true] {
        let (rr, rw) = real_pipe();
        let [r, w] = files.pipe().unwrap();
        if with_data {
            m.write(w, &rw, b"bye").unwrap();
        }
        files.close(w).unwrap();
        drop(rw);
        m.watch(r, &rr, true, &evs);
        m.keep.push(rr);
    }
    {
        let (rr, rw) = real_pipe();
        let [r, w] = files.pipe().unwrap();
        files.close(r).unwrap();
        drop(rr);
        m.watch(w, &rw, true, &evs);
        assert_eq!(m.write(w, &rw, b"x"), Err(Errno::EPIPE));
        m.keep.push(rw);
    }
    // Negative and closed descriptors.
    for e in [POLLIN, 0] {
        m.model.push(PollFd::new(-1, e));
        m.adaptor.push(PollFd::new(-1, e));
        m.real.push(PollFd::new(-1, e));
        m.model.push(PollFd::new(900_000, e));
        m.adaptor.push(PollFd::new(900_000, e));
        m.real.push(PollFd::new(999_999, e));
    }

    let mut real = m.real.clone();
    let real_count = os_poll(&mut real, 0).unwrap();
    let real_revents: Vec<u16> = real.iter().map(|p| p.revents).collect();
    assert!(real_count > 0 && real_count < real.len());
    let n = m.model.len();
    let mm = Arc::new(UserMemory::new(n * 8, WindowMode::Counted).unwrap());
    for s in CopyOut::ALL {
        for (what, table) in [
            ("model objects", &m.model),
            ("real-descriptor adaptor", &m.adaptor),
        ] {
            mm.write_pollfds(mm.base(), table).unwrap();
            let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
            task.set_copy_out(s);
            let got = task.sys_poll(mm.base(), n as u64, 0).unwrap();
            let back: Vec<u16> = read_back(&mm, mm.base(), n)
                .iter()
                .map(|p| p.revents)
                .collect();
            for (i, (g, r)) in back.iter().zip(&real_revents).enumerate() {
                assert_eq!(
                    g, r,
                    "{what}, {s:?}: entry {i} {:?} got {g:#x}, poll(2) says {r:#x}",
                    table[i]
                );
            }
            assert_eq!(got, real_count, "{what}, {s:?}");
        }
    }
}

// ----- the concurrent-modification test -----------------------------------------------------------

#[test]
fn only_whole_entry_copy_clobbers_concurrent_changes() {
    for mode in modes() {
        for s in CopyOut::ALL {
            let files = Arc::new(FdTable::new());
            let [r, w] = files.pipe().unwrap();
            let efd = files.eventfd(0, false).unwrap();
            let mm = Arc::new(UserMemory::new(4096, mode).unwrap());
            let ufds = mm.base();
            mm.write_pollfds(ufds, &[PollFd::new(r, POLLIN), PollFd::new(efd, POLLIN)])
                .unwrap();
            let pipe_wq = Arc::clone(files.fget(r).unwrap().wait_queue().unwrap());

            let poller = {
                let (files, mm) = (Arc::clone(&files), Arc::clone(&mm));
                std::thread::spawn(move || {
                    let mut task = Task::new(files, mm);
                    task.set_copy_out(s);
                    let n = task.sys_poll(ufds, 2, 10_000);
                    (n, task.calls().1)
                })
            };
            // Wait until the poller sleeps in do_poll (registered on the pipe): it has copied
            // the array in. Then, as another user thread, "close" the eventfd entry (fd = -1)
            // and widen the pipe entry's events, and only then make the pipe readable.
            let t = Instant::now();
            while !pipe_wq.waitqueue_active() {
                assert!(t.elapsed() < Duration::from_secs(10), "poller never slept");
                std::thread::yield_now();
            }
            mm.write_fd(ufds + 8, -1).unwrap();
            mm.write_events(ufds, POLLIN | POLLPRI).unwrap();
            files.write(w, b"wake").unwrap();
            let (n, passes) = poller.join().unwrap();
            assert_eq!(n, Ok(1), "{s:?}");
            // One pass and a sleep, then the pass that sees the pipe (or, if the write landed
            // between the pipe's registration and its readiness check, the first pass sees it).
            assert!((1..=2).contains(&passes), "{s:?}: {passes} passes");
            let back = read_back(&mm, ufds, 2);
            assert_eq!((back[0].revents, back[1].revents), (POLLIN, 0), "{s:?}");
            if s == CopyOut::PerChunkCopyToUser {
                // Seed v2 wrote the kernel's stale copy back: the user's changes are lost.
                assert_eq!(
                    (back[0].events, back[1].fd),
                    (POLLIN, efd),
                    "{s:?} should clobber"
                );
            } else {
                assert_eq!(
                    (back[0].events, back[1].fd),
                    (POLLIN | POLLPRI, -1),
                    "{s:?} must not clobber"
                );
            }
        }
    }
}

// ----- EFAULT and EINVAL ------------------------------------------------------------------------------

fn assert_closed(mm: &UserMemory, st: UaccessStats) {
    assert_eq!(
        st.windows(),
        st.windows_closed,
        "a window was left open: {st:?}"
    );
    if let Some(allowed) = mm.access_allowed_here() {
        assert!(!allowed, "PKRU still allows access after the error path");
    }
}

#[test]
fn efault_on_copy_in() {
    for mode in modes() {
        let (files, fds) = table_with_regular(40);
        let mm = Arc::new(UserMemory::new(2 * 4096, mode).unwrap());
        let pfds: Vec<PollFd> = fds.iter().map(|&fd| PollFd::new(fd, POLLOUT)).collect();
        for s in CopyOut::ALL {
            let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
            task.set_copy_out(s);

            // access_ok fails (beyond TASK_SIZE, or wrapping): no window is opened at all.
            for ufds in [u64::MAX - 15, UserMemory::TASK_SIZE - 8] {
                assert_eq!(task.sys_poll(ufds, 2, 0), Err(Errno::EFAULT));
                let st = task.last_call();
                assert_eq!(
                    (st.access_ok_failures, st.windows(), st.windows_closed),
                    (1, 0, 0),
                    "{s:?}"
                );
                assert_closed(&mm, st);
            }

            // The buffer is too short: the head chunk runs off the mapping after 10 entries.
            let ufds = mm.end() - 10 * 8;
            mm.write_pollfds(ufds, &pfds[..10]).unwrap();
            assert_eq!(task.sys_poll(ufds, 40, 0), Err(Errno::EFAULT));
            let st = task.last_call();
            assert_eq!(
                (st.read_windows, st.write_windows, st.faults),
                (1, 0, 1),
                "{s:?}"
            );
            assert_closed(&mm, st);

            // The second chunk is unmapped: 40 entries = 30 + 10, the page after the head is gone.
            let ufds = mm.base() + 4096 - 30 * 8;
            mm.write_pollfds(mm.base() + 4096 - 30 * 8, &pfds[..30])
                .unwrap();
            mm.munmap(mm.base() + 4096, 4096).unwrap();
            assert_eq!(task.sys_poll(ufds, 40, 0), Err(Errno::EFAULT));
            let st = task.last_call();
            assert_eq!(
                (st.read_windows, st.write_windows, st.faults),
                (2, 0, 1),
                "{s:?}"
            );
            assert_closed(&mm, st);
            mm.remap(mm.base() + 4096, 4096).unwrap();
            mm.write_pollfds(ufds, &pfds).unwrap();
            assert_eq!(task.sys_poll(ufds, 40, 0), Ok(40));
        }
    }
}

#[test]
fn efault_on_copy_out_after_concurrent_munmap() {
    for mode in modes() {
        // Revents already written before the fault, and windows opened, per strategy: the
        // array is 8 entries, 4 in each of two pages; page two disappears while the poller sleeps.
        for (s, windows_out) in [
            (CopyOut::PerFdPutUser, 5),
            (CopyOut::PerChunkUnsafe, 1),
            (CopyOut::PerChunkCopyToUser, 1),
            (CopyOut::SingleWindowUnsafe, 1),
        ] {
            let files = Arc::new(FdTable::new());
            let [r, w] = files.pipe().unwrap();
            let idle: Vec<i32> = (0..7).map(|_| files.eventfd(0, false).unwrap()).collect();
            let mm = Arc::new(UserMemory::new(2 * 4096, mode).unwrap());
            let ufds = mm.base() + 4096 - 4 * 8;
            let mut pfds = vec![PollFd::new(r, POLLIN)];
            pfds.extend(idle.iter().map(|&fd| PollFd::new(fd, POLLIN)));
            mm.write_pollfds(ufds, &pfds).unwrap();
            let wq = Arc::clone(files.fget(r).unwrap().wait_queue().unwrap());
            let poller = {
                let (files, mm) = (Arc::clone(&files), Arc::clone(&mm));
                std::thread::spawn(move || {
                    let mut task = Task::new(files, Arc::clone(&mm));
                    task.set_copy_out(s);
                    let r = task.sys_poll(ufds, 8, 10_000);
                    let closed = mm.access_allowed_here().is_none_or(|a| !a);
                    (r, task.last_call(), closed)
                })
            };
            let t = Instant::now();
            while !wq.waitqueue_active() {
                assert!(t.elapsed() < Duration::from_secs(10), "poller never slept");
                std::thread::yield_now();
            }
            mm.munmap(mm.base() + 4096, 4096).unwrap();
            files.write(w, b"x").unwrap();
            let (res, st, closed) = poller.join().unwrap();
            assert_eq!(res, Err(Errno::EFAULT), "{s:?}");
            assert_eq!(
                (st.read_windows, st.write_windows),
                (1, windows_out),
                "{s:?}"
            );
            assert_eq!(st.windows_closed, st.windows(), "{s:?}");
            assert_eq!(st.faults, 1, "{s:?}");
            assert!(closed, "{s:?}: PKRU left open on the poller's thread");
            mm.remap(mm.base() + 4096, 4096).unwrap();
            let back = read_back(&mm, ufds, 8);
            // Entries before the fault were written (the kernel does not undo partial copies).
            assert_eq!(back[0].revents, POLLIN, "{s:?}");
        }
    }
}

#[test]
fn einval_above_rlimit_nofile() {
    let files = Arc::new(FdTable::new());
    files.set_rlimit_nofile(16).unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    let mut task = Task::new(Arc::clone(&files), mm);
    assert_eq!(task.sys_poll(0x1000_0000, 17, 0), Err(Errno::EINVAL));
    assert_eq!(task.last_call().windows(), 0);
    assert_eq!(task.sys_poll(0x1000_0000, 16, 0), Ok(16)); // all zeroed entries: fd 0 is closed
    assert_eq!(
        files.set_rlimit_nofile(FdTable::NR_OPEN + 1),
        Err(Errno::EINVAL)
    );
}

// ----- do_poll semantics --------------------------------------------------------------------------

#[test]
fn negative_closed_and_always_reported_events() {
    let files = Arc::new(FdTable::new());
    let [r, w] = files.pipe().unwrap();
    let [r2, w2] = files.pipe().unwrap();
    files.close(w).unwrap();
    files.close(r2).unwrap();
    let gone = files.open_regular().unwrap();
    files.close(gone).unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    // events = 0 still reports POLLHUP and POLLERR; a closed fd is counted with POLLNVAL; a
    // negative fd is skipped and its revents cleared even if the user left garbage there.
    let mut garbage = PollFd::new(-5, POLLIN);
    garbage.revents = 0xffff;
    mm.write_pollfds(
        mm.base(),
        &[
            PollFd::new(r, 0),
            PollFd::new(w2, 0),
            PollFd::new(gone, 0),
            garbage,
        ],
    )
    .unwrap();
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    assert_eq!(task.sys_poll(mm.base(), 4, 0), Ok(3));
    let back = read_back(&mm, mm.base(), 4);
    assert_eq!(
        back.iter().map(|p| p.revents).collect::<Vec<_>>(),
        [POLLHUP, POLLERR, POLLNVAL, 0]
    );
}

#[test]
fn huge_timeout_is_infinite_and_readiness_still_returns() {
    let files = Arc::new(FdTable::new());
    let reg = files.open_regular().unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    mm.write_pollfds(mm.base(), &[PollFd::new(reg, POLLOUT)])
        .unwrap();
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    let r = task.do_sys_poll(mm.base(), 1, PollTimeout::After(Duration::MAX));
    assert_eq!(r, Ok(1));
}

#[test]
fn blocking_poll_times_out_then_passes_once_more() {
    let files = Arc::new(FdTable::new());
    let efd = files.eventfd(0, false).unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    mm.write_pollfds(mm.base(), &[PollFd::new(efd, POLLIN)])
        .unwrap();
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    let t = Instant::now();
    assert_eq!(task.sys_poll(mm.base(), 1, 60), Ok(0));
    assert!(t.elapsed() >= Duration::from_millis(60));
    assert_eq!(
        task.calls(),
        (1, 2),
        "a pass, the timed-out sleep, the final pass"
    );
    assert_eq!(task.last_wait_table(), (1, 0));
    let ev = files.fget(efd).unwrap();
    assert!(
        !ev.wait_queue().unwrap().waitqueue_active(),
        "poll_freewait left an entry"
    );
}

#[test]
fn blocking_poll_wakes_on_readiness_change() {
    let files = Arc::new(FdTable::new());
    let efds: Vec<i32> = (0..100).map(|_| files.eventfd(0, false).unwrap()).collect();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    let pfds: Vec<PollFd> = efds.iter().map(|&fd| PollFd::new(fd, POLLIN)).collect();
    mm.write_pollfds(mm.base(), &pfds).unwrap();
    let last = files.fget(efds[99]).unwrap();
    let poller = {
        let (files, mm) = (Arc::clone(&files), Arc::clone(&mm));
        std::thread::spawn(move || {
            let mut task = Task::new(files, Arc::clone(&mm));
            let t = Instant::now();
            let n = task.sys_poll(mm.base(), 100, -1);
            (n, t.elapsed(), task.calls(), task.last_wait_table())
        })
    };
    let t = Instant::now();
    while !last.wait_queue().unwrap().waitqueue_active() {
        assert!(t.elapsed() < Duration::from_secs(10));
        std::thread::yield_now();
    }
    // A wake-up whose key does not intersect the waiters' (POLLOUT on a POLLIN waiter) is
    // filtered by pollwake; the eventfd write (POLLIN) wakes.
    last.wait_queue().unwrap().wake_up_poll(POLLOUT);
    files.write(efds[42], &1u64.to_ne_bytes()).unwrap();
    let (n, _elapsed, calls, table) = poller.join().unwrap();
    assert_eq!(n, Ok(1));
    assert_eq!(calls, (1, 2));
    // 100 registrations: 9 inline, then pages of 63: 2 pages.
    assert_eq!(table, (100, 2));
    let back = read_back(&mm, mm.base(), 100);
    assert!(back
        .iter()
        .enumerate()
        .all(|(i, p)| p.revents == if i == 42 { POLLIN } else { 0 }));
    assert!(!last.wait_queue().unwrap().waitqueue_active());
}

#[test]
fn registration_stops_once_something_is_ready() {
    let files = Arc::new(FdTable::new());
    let efd = files.eventfd(0, false).unwrap();
    let reg = files.open_regular().unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    // The eventfd is polled before the ready file: it registers; after the ready one, not.
    for (pfds, entries) in [
        ([PollFd::new(efd, POLLIN), PollFd::new(reg, POLLOUT)], 1),
        ([PollFd::new(reg, POLLOUT), PollFd::new(efd, POLLIN)], 0),
    ] {
        mm.write_pollfds(mm.base(), &pfds).unwrap();
        assert_eq!(task.sys_poll(mm.base(), 2, 1000), Ok(1));
        assert_eq!(task.last_wait_table(), (entries, 0));
    }
    // Timeout 0 never registers.
    mm.write_pollfds(mm.base(), &[PollFd::new(efd, POLLIN)])
        .unwrap();
    assert_eq!(task.sys_poll(mm.base(), 1, 0), Ok(0));
    assert_eq!(task.last_wait_table(), (0, 0));
}

#[test]
fn pipe_hangs_up_only_when_the_last_writer_closes() {
    let files = Arc::new(FdTable::new());
    let [r, w] = files.pipe().unwrap();
    let w2 = files.dup(w).unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    mm.write_pollfds(mm.base(), &[PollFd::new(r, POLLIN)])
        .unwrap();
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    files.close(w).unwrap();
    assert_eq!(task.sys_poll(mm.base(), 1, 0), Ok(0));
    // A sleeping poller is woken by the hang-up.
    let closer = {
        let files = Arc::clone(&files);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            files.close(w2).unwrap();
        })
    };
    assert_eq!(task.sys_poll(mm.base(), 1, 10_000), Ok(1));
    closer.join().unwrap();
    assert_eq!(read_back(&mm, mm.base(), 1)[0].revents, POLLHUP);
}

#[test]
#[cfg_attr(miri, ignore = "real pipe polled with poll(2)")]
fn blocking_on_real_descriptors() {
    let files = Arc::new(FdTable::new());
    let (rr, rw) = real_pipe();
    let afd = files.install_real(rr).unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    mm.write_pollfds(mm.base(), &[PollFd::new(afd, POLLIN)])
        .unwrap();
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    // Times out in the OS's poll.
    let t = Instant::now();
    assert_eq!(task.sys_poll(mm.base(), 1, 40), Ok(0));
    assert!(t.elapsed() >= Duration::from_millis(40));
    // Woken by the OS when the real pipe becomes readable.
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        rustix::io::write(&rw, b"x").unwrap();
        rw
    });
    let t = Instant::now();
    assert_eq!(task.sys_poll(mm.base(), 1, 10_000), Ok(1));
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(read_back(&mm, mm.base(), 1)[0].revents, POLLIN);
    let rw = writer.join().unwrap(); // kept open: no hang-up below
                                     // A model wake-up also ends a sleep that includes real descriptors.
    let mut buf = [0u8; 8];
    files.read(afd, &mut buf).unwrap();
    let efd = files.eventfd(0, false).unwrap();
    mm.write_pollfds(
        mm.base(),
        &[PollFd::new(afd, POLLIN), PollFd::new(efd, POLLIN)],
    )
    .unwrap();
    let poker = {
        let files = Arc::clone(&files);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            files.write(efd, &1u64.to_ne_bytes()).unwrap();
        })
    };
    assert_eq!(task.sys_poll(mm.base(), 2, 10_000), Ok(1));
    poker.join().unwrap();
    assert_eq!(
        read_back(&mm, mm.base(), 2)
            .iter()
            .map(|p| p.revents)
            .collect::<Vec<_>>(),
        [0, POLLIN]
    );
    drop(rw);
}

// ----- the descriptor table --------------------------------------------------------------------

#[test]
fn fd_allocation_is_lowest_free_via_gap_search() {
    let (files, fds) = table_with_regular(300);
    assert_eq!(fds, (0..300).collect::<Vec<i32>>());
    let holes = [299, 3, 150, 0, 77, 78, 79, 200];
    for &h in &holes {
        files.close(h).unwrap();
    }
    let mut sorted = holes;
    sorted.sort_unstable();
    for want in sorted {
        assert_eq!(files.open_regular(), Ok(want));
    }
    assert_eq!(files.open_regular(), Ok(300));
    assert_eq!(files.count(), 301);
}

#[test]
fn fd_allocation_matches_a_lowest_free_model() {
    // Random opens, dups and closes over a few thousand descriptors (a tree of several levels):
    // every new descriptor is the lowest free one, as a set model says.
    let files = FdTable::new();
    files.set_rlimit_nofile(6000).unwrap();
    let mut open = std::collections::BTreeSet::new();
    let mut x: u64 = 42;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for step in 0..if cfg!(miri) { 1_000 } else { 40_000u64 } {
        let r = next();
        let lowest = (0..).find(|fd| !open.contains(fd)).unwrap();
        if r % 3 != 0 || open.is_empty() {
            let fd = if r % 7 == 0 && !open.is_empty() {
                let src = *open.iter().nth((r as usize / 7) % open.len()).unwrap();
                files.dup(src)
            } else {
                files.open_regular()
            };
            if lowest >= 6000 {
                assert_eq!(fd, Err(Errno::EMFILE));
                continue;
            }
            assert_eq!(fd, Ok(lowest), "step {step}");
            open.insert(lowest);
        } else {
            let victim = *open.iter().nth((r as usize) % open.len()).unwrap();
            files.close(victim).unwrap();
            open.remove(&victim);
        }
        if step % 5000 == 0 {
            files.validate().unwrap();
        }
    }
    assert_eq!(files.count(), open.len());
    files.validate().unwrap();
}

#[test]
#[cfg_attr(
    miri,
    ignore = "timed stress: 300 ms of polling against two writer threads"
)]
fn fd_table_under_concurrent_open_close_and_poll() {
    // Writers open and close descriptors while a poller keeps polling some of them lock-free:
    // every poll sees each entry either open (POLLOUT) or closed (POLLNVAL), nothing else.
    let files = Arc::new(FdTable::new());
    files.set_rlimit_nofile(4096).unwrap();
    let stable: Vec<i32> = (0..64).map(|_| files.open_regular().unwrap()).collect();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|_| {
            let (files, stop) = (Arc::clone(&files), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut rounds = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || rounds < 20 {
                    let fds: Vec<i32> = (0..200).map(|_| files.open_regular().unwrap()).collect();
                    for fd in fds {
                        files.close(fd).unwrap();
                    }
                    rounds += 1;
                }
            })
        })
        .collect();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    let mut pfds: Vec<PollFd> = stable.iter().map(|&fd| PollFd::new(fd, POLLOUT)).collect();
    pfds.extend((64..192).map(|fd| PollFd::new(fd, POLLOUT)));
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(300) {
        mm.write_pollfds(mm.base(), &pfds).unwrap();
        task.sys_poll(mm.base(), pfds.len() as u64, 0).unwrap();
        let back = read_back(&mm, mm.base(), pfds.len());
        assert!(back[..64].iter().all(|p| p.revents == POLLOUT));
        assert!(back[64..]
            .iter()
            .all(|p| p.revents == POLLOUT || p.revents == POLLNVAL));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(files.count(), 64);
    files.validate().unwrap();
    // Everything above the stable ones is free again: the next descriptor is 64.
    assert_eq!(files.open_regular(), Ok(64));
}

#[test]
fn fd_table_errors() {
    let files = FdTable::new();
    files.set_rlimit_nofile(3).unwrap();
    let a = files.open_regular().unwrap();
    files.eventfd(0, false).unwrap();
    // Only one descriptor left: a pipe needs two, fails whole, and leaves nothing behind.
    assert_eq!(files.pipe(), Err(Errno::EMFILE));
    assert_eq!(files.count(), 2);
    files.open_regular().unwrap();
    assert_eq!(files.open_regular(), Err(Errno::EMFILE));
    assert_eq!(files.dup(a), Err(Errno::EMFILE));
    assert_eq!(
        files.fget(a).unwrap().f_count(),
        1,
        "a failed dup gives its reference back"
    );
    assert_eq!(files.close(-1), Err(Errno::EBADF));
    assert_eq!(files.close(7), Err(Errno::EBADF));
    assert_eq!(files.dup(7), Err(Errno::EBADF));
    assert_eq!(files.write(7, b"x"), Err(Errno::EBADF));
    files.set_rlimit_nofile(0).unwrap();
    assert_eq!(files.open_regular(), Err(Errno::EMFILE));
    // Regular files read back what was written; eventfd rejects short buffers and u64::MAX.
    let files = FdTable::new();
    let f = files.open_regular().unwrap();
    assert_eq!(files.write(f, b"abc"), Ok(3));
    let mut b = [0u8; 3];
    assert_eq!(
        files.read(f, &mut b),
        Ok(0),
        "one shared position, at the end"
    );
    let e = files.eventfd(0, true).unwrap();
    assert_eq!(files.write(e, b"short"), Err(Errno::EINVAL));
    assert_eq!(files.write(e, &u64::MAX.to_ne_bytes()), Err(Errno::EINVAL));
    files.write(e, &2u64.to_ne_bytes()).unwrap();
    let mut v = [0u8; 8];
    files.read(e, &mut v).unwrap();
    assert_eq!(u64::from_ne_bytes(v), 1, "EFD_SEMAPHORE reads take one");
}

#[test]
fn user_memory_bad_input() {
    let mm = UserMemory::new(4096, WindowMode::Counted).unwrap();
    assert_eq!(mm.munmap(mm.base() + 1, 4096), Err(Errno::EINVAL));
    assert_eq!(mm.munmap(mm.base(), 0), Err(Errno::EINVAL));
    assert_eq!(mm.munmap(mm.base(), 8192), Err(Errno::EINVAL));
    assert_eq!(mm.munmap(0, 4096), Err(Errno::EINVAL));
    assert_eq!(
        mm.write_pollfds(mm.end(), &[PollFd::default()]),
        Err(Errno::EFAULT)
    );
    assert_eq!(mm.write_fd(u64::MAX - 1, 0), Err(Errno::EFAULT));
    assert_eq!(
        UserMemory::new(usize::MAX, WindowMode::Counted).err(),
        Some(Errno::ENOMEM)
    );
    #[cfg(feature = "bench-internals")]
    {
        assert!(WindowCost::for_speedup(f64::NAN, 1.0, 10).is_err());
        assert!(WindowCost::for_speedup(1.2, 0.0, 10).is_err());
        assert!(WindowCost::for_speedup(1.2, 10.0, 1).is_err());
    }
    // A window refuses accesses outside its own range.
    let mut ua = mm.uaccess();
    let mut w = ua.user_write_access_begin(mm.base(), 8).unwrap();
    assert_eq!(w.unsafe_put_user_u16(1, mm.base() + 8), Err(Errno::EFAULT));
    assert_eq!(w.unsafe_put_user_u16(1, mm.base() + 6), Ok(()));
    drop(w);
    assert_eq!(ua.stats().faults, 1);
    assert_eq!(ua.stats().windows_closed, 1);
}

// ----- protection keys ------------------------------------------------------------------------------

#[test]
fn pkey_window_is_enforced() {
    let key = match pkeys_available() {
        Ok(k) => k,
        Err(why) => {
            eprintln!("SKIPPED pkey_window_is_enforced: {why}");
            return;
        }
    };
    let mm = UserMemory::new(4096, WindowMode::Pkey).unwrap();
    assert!(mm.is_enforcing());
    assert_eq!(mm.enforcement(), &Enforcement::Pkey { key });
    // A forked child stores outside a window: SIGSEGV with SEGV_PKUERR; inside: completes.
    assert_eq!(mm.verify_enforcement(), Ok(true));
    // Kernel mode outside a window, open inside, closed again after.
    let mut ua = mm.uaccess();
    assert_eq!(mm.access_allowed_here(), Some(false));
    {
        let _w = ua.user_read_access_begin(mm.base(), 8).unwrap();
        assert_eq!(mm.access_allowed_here(), Some(true));
    }
    assert_eq!(mm.access_allowed_here(), Some(false));
    // The user program's own accesses work and leave the thread as they found it.
    mm.write_pollfds(mm.base(), &[PollFd::new(1, 2)]).unwrap();
    assert_eq!(mm.access_allowed_here(), Some(false));
}

#[test]
fn pkey_unavailable_falls_back_to_the_model_and_says_why() {
    let mm = UserMemory::new(4096, WindowMode::Counted).unwrap();
    assert!(!mm.is_enforcing());
    assert!(mm.verify_enforcement().is_err());
    assert_eq!(mm.access_allowed_here(), None);
    let mm = UserMemory::new(4096, WindowMode::Pkey).unwrap();
    match pkeys_available() {
        Ok(_) => assert!(mm.is_enforcing()),
        Err(why) => {
            assert!(!mm.is_enforcing());
            assert_eq!(
                mm.enforcement(),
                &Enforcement::Model {
                    cost: WindowCost::SMAP,
                    fallback_reason: Some(why)
                }
            );
        }
    }
}

// ----- will-it-scale -----------------------------------------------------------------------------

#[cfg(feature = "bench-internals")]
#[test]
#[cfg_attr(
    miri,
    ignore = "timed benchmark driver (samples of 20-40 ms per strategy)"
)]
fn will_it_scale_drivers() {
    let mut bad = Config::new(Testcase::Poll2, CopyOut::PerFdPutUser);
    bad.tasks = 0;
    assert_eq!(will_it_scale::run(&bad).err(), Some(Errno::EINVAL));
    bad.tasks = will_it_scale::MAX_TASKS + 1;
    assert_eq!(will_it_scale::run(&bad).err(), Some(Errno::EINVAL));
    bad.tasks = 1;
    bad.samples = 0;
    assert_eq!(will_it_scale::run(&bad).err(), Some(Errno::EINVAL));

    for (s, out) in CopyOut::ALL.into_iter().zip([128.0, 2.0, 2.0, 1.0]) {
        // Short samples; on a machine so loaded that no call completes in them, longer ones
        // (the counts per call asserted below do not depend on the duration).
        let r = [40, 400, 4000]
            .into_iter()
            .map(|ms| {
                let mut cfg = Config::new(Testcase::Poll2, s).lasting(Duration::from_millis(ms));
                cfg.tasks = 2;
                cfg.window = WindowMode::Counted;
                will_it_scale::run(&cfg).unwrap()
            })
            .find(|r| r.calls > 0)
            .expect("no poll call completed in 4 s samples");
        assert!(r.ops_per_sec > 0.0 && r.calls > 0, "{s:?}");
        assert_eq!(r.samples.len(), 4);
        assert_eq!(
            (r.read_windows_per_call, r.write_windows_per_call),
            (2.0, out),
            "{s:?}"
        );
        let bytes = if s == CopyOut::PerChunkCopyToUser {
            8.0
        } else {
            2.0
        } * 128.0;
        assert_eq!(r.bytes_out_per_call, bytes);
    }
    let rows = will_it_scale::compare_strategies(
        Testcase::Poll1,
        Duration::from_millis(20),
        WindowMode::default(),
    )
    .unwrap();
    assert!(rows
        .iter()
        .all(|r| r.read_windows_per_call == 1.0 && r.write_windows_per_call == 1.0));
}

/// A file whose `->release` is counted and which reports whether `->poll` ran on it after its
/// release.
struct ReleaseProbe {
    released: Arc<std::sync::atomic::AtomicUsize>,
}

impl FileOperations for ReleaseProbe {
    fn poll(&self, _pt: &mut PollTable<'_>) -> PollMask {
        if self.released.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            POLLIN
        } else {
            POLLERR
        }
    }
    fn release(&self) {
        self.released
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn name(&self) -> &'static str {
        "release-probe"
    }
}

#[test]
fn fdget_borrows_on_a_private_table_and_references_on_a_shared_one() {
    let released = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let files = FdTable::new();
    let fd = files
        .install(ReleaseProbe {
            released: Arc::clone(&released),
        })
        .unwrap();
    let guard = files.pin();
    let f = files.fdget(fd, false, &guard).unwrap();
    assert!(!f.is_counted());
    assert_eq!(f.f_count(), 1);
    drop(f);
    assert_eq!(files.fget(fd).unwrap().f_count(), 1);

    // __fget_light on a shared table: a reference, so a close meanwhile cannot release.
    let f = files.fdget(fd, true, &guard).unwrap();
    assert!(f.is_counted());
    assert_eq!(f.f_count(), 2);
    files.close(fd).unwrap();
    assert_eq!(released.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert_eq!(
        f.f_op().poll(&mut PollTable {
            qproc: None,
            key: 0
        }),
        POLLIN
    );
    drop(f); // fdput: the last reference, ->release now
    assert_eq!(released.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert!(files.fdget(fd, true, &guard).is_none());
    assert!(files.lookup_fd_rcu(fd, &guard).is_none());
}

#[test]
fn poll_puts_every_reference_it_takes() {
    let files = Arc::new(FdTable::new());
    let fd = files.open_regular().unwrap();
    let mm = Arc::new(UserMemory::new(4096, WindowMode::Counted).unwrap());
    mm.write_pollfds(mm.base(), &[PollFd::new(fd, POLLOUT)])
        .unwrap();
    // Shared (this test holds a handle too): `do_pollfd`'s `fdget` references the file and its
    // `fdput` puts the reference (the loom model `loom_file_ref` checks the ordering).
    let mut task = Task::new(Arc::clone(&files), Arc::clone(&mm));
    assert_eq!(task.sys_poll(mm.base(), 1, 0), Ok(1));
    assert_eq!(files.fget(fd).unwrap().f_count(), 1);
    drop(task);
    // Private (the task holds the only handle): borrowed.
    let probe = Arc::clone(&files);
    let mut task = Task::new(files, Arc::clone(&mm));
    drop(probe);
    assert_eq!(task.sys_poll(mm.base(), 1, 0), Ok(1));
    assert_eq!(task.files().fget(fd).unwrap().f_count(), 1);
}
