//! Target `poll_ops`: `poll` (`maple_poll`) with random descriptor sets — open, closed,
//! negative and out-of-range descriptors, duplicates (the same descriptor several times, and
//! `dup`s of one file), random `events`, counts around the `poll_list` chunk boundaries (30 on
//! the stack, then 510 per page) — and every copy-out strategy ([`CopyOut::ALL`]).
//!
//! A descriptor model (lowest-free allocation, regular files, eventfds with their counter, pipes
//! with their data and their reader/writer ends, reference counts through `dup`/`close`)
//! predicts each entry's `revents` and the count. For every `poll` all four strategies run on the
//! same array (with garbage in `revents` beforehand) and must agree with each other and with the
//! model on the result and on the array written back (`fd` and `events` unchanged); on success
//! the window counts are the documented ones. Placements of the array that run off the user
//! mapping, cross an unmapped page, or exceed `RLIMIT_NOFILE` must fail the same way for all.

use std::collections::BTreeMap;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use maple_poll::{
    CopyOut, Errno, FdTable, PollFd, PollMask, Task, UserMemory, WindowMode, DEFAULT_POLLMASK,
    POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, POLLRDNORM, POLLWRNORM,
};

/// Operations decoded from one input at most.
const MAX_POLL_OPS: usize = 48;
/// Entries of a pattern at most.
const MAX_PATTERN: usize = 24;
/// Pages of user memory.
const PAGES: u64 = 4;
/// Interesting `nfds`: around the chunk boundaries (30, 30 + 510, 30 + 1020).
const EDGES: [u64; 12] = [0, 1, 2, 29, 30, 31, 32, 539, 540, 541, 1050, 1051];

/// Which descriptor an entry names.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Fd {
    /// The `k % open`th open descriptor (or -1 when none is open).
    Open(u8),
    /// A raw value (negative, closed or beyond the table).
    Raw(i16),
    /// A large descriptor.
    Big(u32),
}

/// One `pollfd` of a pattern.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Entry {
    /// The descriptor.
    pub fd: Fd,
    /// Requested events.
    pub events: u16,
}

/// Where the array goes.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Place {
    /// `k` entries after the start of the mapping.
    Start(u8),
    /// So that the array ends `k` entries past the end of the mapping (`k == 0`: exactly at the
    /// end).
    End(u8),
    /// At the start, with page `1 + k % 3` unmapped during the call.
    Hole(u8),
    /// Beyond `TASK_SIZE` (`access_ok` fails).
    Kernel,
}

/// How many entries.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Count {
    /// One of [`EDGES`].
    Edge(u8),
    /// `0..=255`.
    Small(u8),
    /// Near a chunk boundary: `30 + 510 * (k % 3) + d`.
    Near(u8, i8),
}

/// One step.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// `open` of a regular file.
    Regular,
    /// `eventfd(init % 3 * 2, sem)`.
    EventFd { init: u8, sem: bool },
    /// `pipe()`.
    Pipe,
    /// `close` of the `k % open`th open descriptor, or of a raw one.
    Close(Fd),
    /// `dup` of the `k % open`th open descriptor, or of a raw one.
    Dup(Fd),
    /// `write` of one byte (pipe write ends) or of 8 bytes `1` (eventfds).
    Write(u8),
    /// `read` until empty (pipe read ends), or one read (eventfds).
    Read(u8),
    /// `RLIMIT_NOFILE` for the following polls (`0`: the default).
    Rlimit(u16),
    /// `poll`: `count` entries cycling through `pattern` with `stride`.
    Poll {
        count: Count,
        stride: u8,
        place: Place,
        pattern: Vec<Entry>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Regular,
    Event { count: u64, sem: bool },
    PipeR(usize),
    PipeW(usize),
}

#[derive(Clone, Copy, Debug, Default)]
struct PipeSt {
    readers: bool,
    writers: bool,
    data: bool,
}

/// The descriptor model.
#[derive(Default)]
struct FdModel {
    /// fd → object.
    fds: BTreeMap<i32, usize>,
    /// Objects: kind and descriptor count.
    objs: Vec<(Kind, usize)>,
    pipes: Vec<PipeSt>,
    /// `RLIMIT_NOFILE`.
    limit: u64,
}

impl FdModel {
    /// The lowest free descriptor at or above `from`.
    fn free_from(&self, from: i32) -> i32 {
        let mut want = from;
        for &fd in self.fds.range(from..).map(|(k, _)| k) {
            if fd != want {
                break;
            }
            want += 1;
        }
        want
    }

    /// What allocating a descriptor gives: the lowest free one, or `EMFILE` at the limit.
    fn next_fd(&self) -> Result<i32, Errno> {
        let fd = self.lowest_free();
        if u64::try_from(fd).expect("non-negative") >= self.limit {
            Err(Errno::EMFILE)
        } else {
            Ok(fd)
        }
    }

    fn lowest_free(&self) -> i32 {
        let mut want = 0;
        for &fd in self.fds.keys() {
            if fd != want {
                break;
            }
            want += 1;
        }
        want
    }

    fn nth_open(&self, k: u8) -> Option<i32> {
        if self.fds.is_empty() {
            return None;
        }
        self.fds
            .keys()
            .nth(usize::from(k) % self.fds.len())
            .copied()
    }

    fn fd(&self, f: Fd) -> i32 {
        match f {
            Fd::Open(k) => self.nth_open(k).unwrap_or(-1),
            Fd::Raw(v) => i32::from(v),
            Fd::Big(v) => v as i32,
        }
    }

    fn install(&mut self, fd: i32, kind: Kind) {
        assert_eq!(fd, self.lowest_free(), "lowest free descriptor");
        self.objs.push((kind, 1));
        self.fds.insert(fd, self.objs.len() - 1);
    }

    fn close(&mut self, fd: i32) -> Result<(), Errno> {
        let o = self.fds.remove(&fd).ok_or(Errno::EBADF)?;
        self.objs[o].1 -= 1;
        if self.objs[o].1 == 0 {
            match self.objs[o].0 {
                Kind::PipeR(p) => self.pipes[p].readers = false,
                Kind::PipeW(p) => self.pipes[p].writers = false,
                _ => {}
            }
        }
        Ok(())
    }

    /// The full readiness mask of `fd` (`None`: not open).
    fn mask(&self, fd: i32) -> Option<PollMask> {
        let &o = self.fds.get(&fd)?;
        Some(match self.objs[o].0 {
            Kind::Regular => DEFAULT_POLLMASK,
            Kind::Event { count, .. } => {
                let mut m = 0;
                if count > 0 {
                    m |= POLLIN;
                }
                if count < u64::MAX - 1 {
                    m |= POLLOUT;
                }
                m
            }
            Kind::PipeR(p) => {
                let st = self.pipes[p];
                let mut m = 0;
                if st.data {
                    m |= POLLIN | POLLRDNORM;
                }
                if !st.writers {
                    m |= POLLHUP;
                }
                m
            }
            Kind::PipeW(p) => {
                let st = self.pipes[p];
                let mut m = POLLOUT | POLLWRNORM;
                if !st.readers {
                    m |= POLLERR;
                }
                m
            }
        })
    }

    /// `do_pollfd` on the model.
    fn revents(&self, p: &PollFd) -> PollMask {
        if p.fd < 0 {
            return 0;
        }
        match self.mask(p.fd) {
            None => POLLNVAL,
            Some(m) => m & (p.events | POLLERR | POLLHUP),
        }
    }
}

/// Decodes up to [`MAX_POLL_OPS`] steps.
pub fn decode(data: &[u8]) -> Vec<Op> {
    let mut u = Unstructured::new(data);
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_POLL_OPS {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    ops
}

/// The decoded input.
pub fn describe(data: &[u8]) -> String {
    format!("{:#?}", decode(data))
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops = decode(data);
    let files = Arc::new(FdTable::new());
    let mm = Arc::new(
        UserMemory::new((PAGES * 4096) as usize, WindowMode::Counted).expect("user memory"),
    );
    let default_rlimit = files.rlimit_nofile();
    let mut m = FdModel {
        limit: default_rlimit,
        ..FdModel::default()
    };
    for op in &ops {
        match *op {
            Op::Regular => {
                let got = files.open_regular();
                assert_eq!(got, m.next_fd(), "open");
                if let Ok(fd) = got {
                    m.install(fd, Kind::Regular);
                }
            }
            Op::EventFd { init, sem } => {
                let count = u64::from(init % 3) * 2;
                let got = files.eventfd(count, sem);
                assert_eq!(got, m.next_fd(), "eventfd");
                if let Ok(fd) = got {
                    m.install(fd, Kind::Event { count, sem });
                }
            }
            Op::Pipe => {
                let got = files.pipe();
                let want = m.next_fd().and_then(|r| {
                    let w = m.free_from(r + 1);
                    if u64::try_from(w).expect("non-negative") >= m.limit {
                        Err(Errno::EMFILE)
                    } else {
                        Ok([r, w])
                    }
                });
                assert_eq!(got, want, "pipe");
                let Ok([r, w]) = got else { continue };
                m.pipes.push(PipeSt {
                    readers: true,
                    writers: true,
                    data: false,
                });
                let p = m.pipes.len() - 1;
                m.install(r, Kind::PipeR(p));
                m.install(w, Kind::PipeW(p));
            }
            Op::Close(f) => {
                let fd = m.fd(f);
                let want = m.close(fd);
                assert_eq!(files.close(fd), want, "close({fd})");
            }
            Op::Dup(f) => {
                let fd = m.fd(f);
                let got = files.dup(fd);
                match m.fds.get(&fd).copied() {
                    None => assert_eq!(got, Err(Errno::EBADF), "dup({fd})"),
                    Some(o) => {
                        assert_eq!(got, m.next_fd(), "dup");
                        let Ok(new) = got else { continue };
                        m.objs[o].1 += 1;
                        m.fds.insert(new, o);
                    }
                }
            }
            Op::Write(k) => {
                let Some(fd) = m.nth_open(k) else { continue };
                let o = m.fds[&fd];
                match m.objs[o].0 {
                    Kind::PipeW(p) => {
                        let got = files.write(fd, b"x");
                        if m.pipes[p].readers {
                            assert_eq!(got, Ok(1), "pipe write");
                            m.pipes[p].data = true;
                        } else {
                            assert_eq!(got, Err(Errno::EPIPE), "pipe write without readers");
                        }
                    }
                    Kind::Event { ref mut count, .. } => {
                        let got = files.write(fd, &1u64.to_ne_bytes());
                        assert_eq!(got, Ok(8), "eventfd write");
                        *count += 1;
                    }
                    _ => {}
                }
            }
            Op::Read(k) => {
                let Some(fd) = m.nth_open(k) else { continue };
                let o = m.fds[&fd];
                let mut buf = [0u8; 4096];
                match m.objs[o].0 {
                    Kind::PipeR(p) => {
                        let st = m.pipes[p];
                        let got = files.read(fd, &mut buf);
                        if st.data {
                            assert!(matches!(got, Ok(n) if n > 0), "pipe read: {got:?}");
                            while files.read(fd, &mut buf).is_ok_and(|n| n > 0) {}
                            m.pipes[p].data = false;
                        } else if st.writers {
                            assert_eq!(got, Err(Errno::EAGAIN), "empty pipe read");
                        } else {
                            assert_eq!(got, Ok(0), "pipe read at end of file");
                        }
                    }
                    Kind::Event { ref mut count, sem } => {
                        let got = files.read(fd, &mut buf[..8]);
                        if *count == 0 {
                            assert_eq!(got, Err(Errno::EAGAIN), "eventfd read at 0");
                        } else {
                            assert_eq!(got, Ok(8), "eventfd read");
                            let v = u64::from_ne_bytes(buf[..8].try_into().expect("8 bytes"));
                            let want = if sem { 1 } else { *count };
                            assert_eq!(v, want, "eventfd value");
                            *count -= want;
                        }
                    }
                    _ => {}
                }
            }
            Op::Rlimit(r) => {
                let r = if r == 0 { default_rlimit } else { u64::from(r) };
                // Lowering below an open descriptor is allowed for the limit (it only
                // constrains new descriptors and nfds).
                files.set_rlimit_nofile(r).expect("rlimit");
                m.limit = r;
            }
            Op::Poll {
                count,
                stride,
                place,
                ref pattern,
            } => poll(&files, &mm, &m, count, stride, place, pattern),
        }
    }
}

fn nfds(c: Count) -> u64 {
    match c {
        Count::Edge(k) => EDGES[usize::from(k) % EDGES.len()],
        Count::Small(k) => u64::from(k),
        Count::Near(k, d) => {
            let b = 30 + 510 * i64::from(k % 3) + i64::from(d % 8);
            b.max(0) as u64
        }
    }
}

fn poll(
    files: &Arc<FdTable>,
    mm: &Arc<UserMemory>,
    m: &FdModel,
    count: Count,
    stride: u8,
    place: Place,
    pattern: &[Entry],
) {
    let n = nfds(count);
    let pattern: Vec<PollFd> = pattern
        .iter()
        .take(MAX_PATTERN)
        .map(|e| PollFd {
            fd: m.fd(e.fd),
            events: e.events,
            revents: 0xa5a5,
        })
        .collect();
    let pfds: Vec<PollFd> = if pattern.is_empty() {
        vec![PollFd::new(-1, 0); n as usize]
    } else {
        let s = usize::from(stride).max(1);
        (0..n as usize)
            .map(|i| pattern[(i * s) % pattern.len()])
            .collect()
    };
    let bytes = n * PollFd::SIZE;
    let (addr, hole) = match place {
        Place::Start(k) => (mm.base() + u64::from(k) * PollFd::SIZE, None),
        Place::End(k) => (
            (mm.end() + u64::from(k % 8) * PollFd::SIZE).saturating_sub(bytes),
            None,
        ),
        Place::Hole(k) => (mm.base(), Some(mm.base() + 4096 * (1 + u64::from(k) % 3))),
        Place::Kernel => (UserMemory::TASK_SIZE - 8, None),
    };
    let addr = addr.max(mm.base()).min(UserMemory::TASK_SIZE - 8);
    let in_map = |a: u64, len: u64| a >= mm.base() && a + len <= mm.end();
    // What the model expects.
    let fits = in_map(addr, bytes);
    let hole_hit = hole.is_some_and(|h| n > 0 && addr < h + 4096 && h < addr + bytes);
    let want: Result<usize, Errno> = if n > files.rlimit_nofile() {
        Err(Errno::EINVAL)
    } else if n > 0 && (!fits || hole_hit) {
        Err(Errno::EFAULT)
    } else {
        Ok(pfds.iter().filter(|p| m.revents(p) != 0).count())
    };
    let mut seen: Option<(Result<usize, Errno>, Vec<PollFd>)> = None;
    for s in CopyOut::ALL {
        let writable = if fits { n } else { 0 };
        if writable > 0 {
            mm.write_pollfds(addr, &pfds).expect("write the array");
        }
        if let Some(h) = hole {
            mm.munmap(h, 4096).expect("munmap");
        }
        let mut task = Task::new(Arc::clone(files), Arc::clone(mm));
        task.set_copy_out(s);
        let got = task.sys_poll(addr, n, 0);
        if let Some(h) = hole {
            mm.remap(h, 4096).expect("remap");
        }
        assert_eq!(got, want, "{s:?}: poll of {n} at {addr:#x}");
        let mut back = vec![PollFd::default(); writable as usize];
        if writable > 0 {
            mm.read_pollfds(addr, &mut back).expect("read back");
        }
        if got.is_ok() {
            for (i, (b, p)) in back.iter().zip(&pfds).enumerate() {
                assert_eq!(
                    (b.fd, b.events),
                    (p.fd, p.events),
                    "{s:?}: entry {i} changed"
                );
                assert_eq!(
                    b.revents,
                    m.revents(p),
                    "{s:?}: revents of entry {i} ({p:?})"
                );
            }
            let st = task.last_call();
            assert_eq!(
                st.read_windows,
                CopyOut::copy_in_windows(n),
                "{s:?}: copy-in"
            );
            assert_eq!(st.write_windows, s.copy_out_windows(n), "{s:?}: copy-out");
            assert_eq!(st.windows_closed, st.windows(), "{s:?}: windows closed");
        }
        match &seen {
            None => seen = Some((got, back)),
            Some((g, b)) => {
                assert_eq!(
                    (&got, &back),
                    (g, b),
                    "{s:?} disagrees with per-fd put_user"
                );
            }
        }
    }
}
