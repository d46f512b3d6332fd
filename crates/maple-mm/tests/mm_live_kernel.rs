//! `Mm` against the running Linux kernel, op by op.
//!
//! A forked child process reserves a `PROT_NONE` region at a fixed address and runs a seeded
//! random sequence of real syscalls inside it — mmap (fixed, fixed-noreplace, hinted; anonymous
//! private and shared, private and shared maps of a temp file through a read-write and a
//! read-only descriptor, at varying offsets), munmap, mprotect, madvise (DONTNEED, DONTFORK,
//! DOFORK, WIPEONFORK, KEEPONFORK), mremap (shrink, grow in place, may-move, MAYMOVE|FIXED with
//! and without a size change, several VMAs at once), page writes and fork (continuing in the
//! child or in the parent) — applying the same op to an [`Mm`] after each one. After every op it
//! reads `/proc/self/smaps` and compares the region's VMAs (bounds, permissions, backing, file
//! offset and the `VmFlags` the crate models) and the call's result with the model's.
//!
//! A mismatch is recorded and both sides are reset (the region re-reserved, a fresh `Mm`), so
//! one difference does not hide the following ops. Results go through a pipe to the test,
//! which prints the agreement per op kind and the first mismatches, and fails unless every op
//! agreed. Where `fork` or the fixed reservation is refused, the test prints why and passes.
//!
//! Environment: `MM_LIVE_SEEDS` (number of seeds, default 4), `MM_LIVE_OPS` (ops per seed,
//! default 400), `MM_LIVE_SEED0` (first seed, default 1), `MM_LIVE_REPORT_ONLY=1` (print, do
//! not fail), `MM_LIVE_RESET_EVERY` (reset both sides every that many ops: short histories
//! for the mismatches). Seeds with an even number touch pages; odd ones never do.
#![cfg(target_os = "linux")]

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::fmt::Write as _;
use std::sync::Arc;

use maple_mm::uffd::{CostSetting, DupUffd, UffdCtx, O_CLOEXEC, O_NONBLOCK};
use maple_mm::uffd::{UFFD_API, UFFD_USER_MODE_ONLY};
use maple_mm::{
    Advice, DupMode, FileKind, MapFlags, MapSource, MappedFile, Mm, MmError, MremapFlags, Prot,
    VmFlags, VmaKind,
};

const P: u64 = 4096;
/// Pages in the region.
const W: u64 = 64;
/// Pages of the temp file.
const FILE_PAGES: u64 = 256;
/// Candidate region bases (far below `mmap_base`, so unhinted placements never land there).
const BASES: [u64; 3] = [0x6000_0000_0000, 0x5000_0000_0000, 0x4000_0000_0000];
/// Mismatches kept for the report.
const KEEP: usize = 25;

/// The `VmFlags` mnemonics compared, with the model's bits.
const FLAGS: &[(&str, VmFlags)] = &[
    ("rd", VmFlags::READ),
    ("wr", VmFlags::WRITE),
    ("ex", VmFlags::EXEC),
    ("sh", VmFlags::SHARED),
    ("mr", VmFlags::MAYREAD),
    ("mw", VmFlags::MAYWRITE),
    ("me", VmFlags::MAYEXEC),
    ("ms", VmFlags::MAYSHARE),
    ("gd", VmFlags::GROWSDOWN),
    ("lo", VmFlags::LOCKED),
    ("dc", VmFlags::DONTCOPY),
    ("de", VmFlags::DONTEXPAND),
    ("ac", VmFlags::ACCOUNT),
    ("nr", VmFlags::NORESERVE),
    ("wf", VmFlags::WIPEONFORK),
    ("um", VmFlags::UFFD_MISSING),
    ("uw", VmFlags::UFFD_WP),
];

/// One VMA as both sides describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct V {
    start: u64,
    end: u64,
    perms: String,
    /// `a` anonymous, `f` the temp file, `z` shared anonymous (shmem), `o` anything else.
    kind: char,
    /// File offset in bytes (0 for anonymous memory, as the maps file shows it).
    off: u64,
    flags: Vec<&'static str>,
}

impl std::fmt::Display for V {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{:#x},{:#x}) {} {} off={:#x} {}",
            self.start,
            self.end,
            self.perms,
            self.kind,
            self.off,
            self.flags.join(" ")
        )
    }
}

fn vlist(v: &[V]) -> String {
    let mut s = String::new();
    for x in v {
        let _ = writeln!(s, "      {x}");
    }
    s
}

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// A syscall's result: the returned value or the errno (positive).
type Res = Result<u64, i32>;

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn sys(r: libc::c_long) -> Res {
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r as u64)
    }
}

fn real_mmap(addr: u64, len: u64, prot: u32, flags: u32, fd: i32, off: u64) -> Res {
    // SAFETY: the raw mmap syscall; MAP_FIXED is only ever used inside the region this process
    // reserved (see `Live::op_mmap`), so no memory the program uses is replaced.
    sys(unsafe {
        libc::syscall(
            libc::SYS_mmap,
            addr,
            len,
            prot as libc::c_long,
            flags as libc::c_long,
            fd as libc::c_long,
            off,
        )
    })
}

fn real_munmap(addr: u64, len: u64) -> Res {
    // SAFETY: only called on the reserved region or on mappings this test created.
    sys(unsafe { libc::syscall(libc::SYS_munmap, addr, len) })
}

fn real_mprotect(addr: u64, len: u64, prot: u32) -> Res {
    // SAFETY: only called on the reserved region.
    sys(unsafe { libc::syscall(libc::SYS_mprotect, addr, len, prot as libc::c_long) })
}

fn real_madvise(addr: u64, len: u64, advice: i32) -> Res {
    // SAFETY: only called on the reserved region.
    sys(unsafe { libc::syscall(libc::SYS_madvise, addr, len, advice as libc::c_long) })
}

fn real_mremap(old: u64, old_len: u64, new_len: u64, flags: u32, new: u64) -> Res {
    // SAFETY: the source and any fixed destination lie in the reserved region; a moved mapping
    // placed by the kernel is unmapped again right after the op.
    sys(unsafe {
        libc::syscall(
            libc::SYS_mremap,
            old,
            old_len,
            new_len,
            flags as libc::c_long,
            new,
        )
    })
}

/// The region's VMAs from `/proc/self/smaps`.
fn real_vmas(lo: u64, hi: u64, file_path: &str) -> Vec<V> {
    let text = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut out: Vec<V> = Vec::new();
    let mut cur: Option<V> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("VmFlags:") {
            if let Some(mut v) = cur.take() {
                let have: Vec<&str> = rest.split_whitespace().collect();
                v.flags = FLAGS
                    .iter()
                    .filter(|(m, _)| have.contains(m))
                    .map(|(m, _)| *m)
                    .collect();
                out.push(v);
            }
            continue;
        }
        let mut it = line.split_whitespace();
        let Some(range) = it.next() else { continue };
        let Some((s, e)) = range.split_once('-') else {
            continue;
        };
        let (Ok(s), Ok(e)) = (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16)) else {
            continue;
        };
        if e <= lo || s >= hi {
            cur = None;
            continue;
        }
        let perms = it.next().unwrap_or("").to_owned();
        let off = u64::from_str_radix(it.next().unwrap_or("0"), 16).unwrap_or(0);
        let _dev = it.next();
        let _ino = it.next();
        let name: Vec<&str> = it.collect();
        let name = name.join(" ");
        let kind = if name.is_empty() {
            'a'
        } else if name == file_path {
            'f'
        } else if name.starts_with("/dev/zero") {
            'z'
        } else {
            'o'
        };
        cur = Some(V {
            start: s,
            end: e,
            perms,
            kind,
            off,
            flags: Vec::new(),
        });
    }
    out
}

/// The model's VMAs intersecting `[lo, hi)`.
fn model_vmas(mm: &Mm, lo: u64, hi: u64) -> Vec<V> {
    let mut out = Vec::new();
    for s in mm.snapshot() {
        if s.end <= lo || s.start >= hi {
            continue;
        }
        let f = s.desc.flags;
        let c = |flag: VmFlags, ch: char| if f.contains(flag) { ch } else { '-' };
        let perms: String = [
            c(VmFlags::READ, 'r'),
            c(VmFlags::WRITE, 'w'),
            c(VmFlags::EXEC, 'x'),
            if f.contains(VmFlags::MAYSHARE) {
                's'
            } else {
                'p'
            },
        ]
        .iter()
        .collect();
        let (kind, off) = match &s.desc.kind {
            VmaKind::Anon(_) => ('a', 0),
            VmaKind::File(file) if file.kind() == FileKind::Shmem => ('z', s.desc.pgoff * P),
            VmaKind::File(_) => ('f', s.desc.pgoff * P),
        };
        out.push(V {
            start: s.start,
            end: s.end,
            perms,
            kind,
            off,
            flags: FLAGS
                .iter()
                .filter(|(_, b)| f.contains(*b))
                .map(|(m, _)| *m)
                .collect(),
        });
    }
    out
}

fn model_res(r: Result<u64, MmError>) -> Res {
    r.map_err(|e| -e.errno())
}

/// Agreement counts per op kind.
#[derive(Default, Clone)]
struct Stats {
    kinds: BTreeMap<&'static str, (u64, u64)>,
    mismatches: Vec<String>,
    /// The kernel's VMAs after each scripted reproducer.
    states: Vec<String>,
    seeds: u64,
}

/// One live run: the real region and its model.
struct Live {
    base: u64,
    mm: Mm,
    rw: Arc<MappedFile>,
    ro: Arc<MappedFile>,
    fd_rw: i32,
    fd_ro: i32,
    path: String,
    /// Size in pages of each shared anonymous object of the model (by inode), so that touches
    /// stay inside the object (a touch beyond it would be SIGBUS).
    shmem_pages: HashMap<u64, u64>,
    stats: Stats,
    /// The scripted reproducer running, if any (its name keys the statistics).
    script: Option<&'static str>,
    /// The ops since the last reset, printed with a mismatch.
    history: Vec<String>,
    /// Forks this worker continued in (each leaves a parent waiting for it).
    depth: u32,
    /// The real userfaultfd and its model, if the kernel grants one.
    uffd: Option<(i32, Arc<UffdCtx>)>,
}

/// At most this many waiting ancestors: later forks continue in the parent. (Ancestors stay
/// alive, so the kernel never reuses an ancestor's `anon_vma` in a fork, which the model does
/// not do either.)
const MAX_DEPTH: u32 = 48;

/// What an mmap of the live test maps.
#[derive(Clone, Copy, Debug)]
enum Src {
    Anon,
    SharedAnon,
    /// The temp file through the read-only or the read-write descriptor, at page `off`.
    File {
        ro: bool,
        shared: bool,
        off: u64,
    },
}

/// One op of a live run (pages relative to the region).
#[derive(Clone, Copy, Debug)]
enum LOp {
    Mmap {
        page: u64,
        n: u64,
        prot: u32,
        src: Src,
        noreplace: bool,
        noreserve: bool,
        /// Bytes added to the address (an unaligned fixed address).
        unaligned: u64,
    },
    Hint {
        page: u64,
        n: u64,
        prot: u32,
        shared: bool,
        unaligned: u64,
    },
    Munmap {
        page: u64,
        n: u64,
    },
    Mprotect {
        page: u64,
        n: u64,
        prot: u32,
    },
    Madvise {
        page: u64,
        n: u64,
        /// Index into [`ADVICE`].
        advice: usize,
    },
    Mremap {
        page: u64,
        n: u64,
        new_n: u64,
        /// `MREMAP_*` bits.
        flags: u32,
        /// Destination page for `MREMAP_FIXED`.
        to: u64,
    },
    Touch {
        page: u64,
        off: u64,
    },
    Fork {
        in_child: bool,
    },
    /// `UFFDIO_REGISTER` (mode bits 1..=7) on the worker's userfaultfd.
    Register {
        page: u64,
        n: u64,
        mode: u64,
    },
    /// `UFFDIO_UNREGISTER`.
    Unregister {
        page: u64,
        n: u64,
    },
    /// Closing the userfaultfd (its release clears every registration), then a new one.
    UffdClose,
}

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

const UFFDIO_API: libc::c_ulong = 0xc018_aa3f;
const UFFDIO_REGISTER: libc::c_ulong = 0xc020_aa00;
const UFFDIO_UNREGISTER: libc::c_ulong = 0x8010_aa01;

/// A real userfaultfd (`UFFD_USER_MODE_ONLY`, no features) after its handshake.
fn real_uffd_open() -> Option<i32> {
    let flags = (UFFD_USER_MODE_ONLY | O_NONBLOCK | O_CLOEXEC) as libc::c_long;
    // SAFETY: the userfaultfd syscall with plain flags.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
    if fd < 0 {
        return None;
    }
    let fd = fd as i32;
    let mut api = UffdioApi {
        api: UFFD_API,
        features: 0,
        ioctls: 0,
    };
    // SAFETY: UFFDIO_API with a live `struct uffdio_api`.
    if unsafe { libc::ioctl(fd, UFFDIO_API, &mut api as *mut UffdioApi) } != 0 {
        // SAFETY: closing the descriptor just opened.
        unsafe { libc::close(fd) };
        return None;
    }
    Some(fd)
}

const PROTS: [u32; 6] = [0, 1, 3, 3, 5, 7];
const ADVICE: [(i32, Advice, &str); 5] = [
    (libc::MADV_DONTNEED, Advice::DontNeed, "DONTNEED"),
    (libc::MADV_DONTFORK, Advice::DontFork, "DONTFORK"),
    (libc::MADV_DOFORK, Advice::DoFork, "DOFORK"),
    (libc::MADV_WIPEONFORK, Advice::WipeOnFork, "WIPEONFORK"),
    (libc::MADV_KEEPONFORK, Advice::KeepOnFork, "KEEPONFORK"),
];

impl Live {
    fn region(&self) -> (u64, u64) {
        (self.base, self.base + W * P)
    }

    fn a(&self, page: u64) -> u64 {
        self.base + page * P
    }

    /// Re-reserves the region in both (everything in it replaced by one `PROT_NONE` VMA).
    fn reset(&mut self) -> Result<(), String> {
        let (lo, hi) = self.region();
        let r = real_mmap(
            lo,
            hi - lo,
            0,
            (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED) as u32,
            -1,
            0,
        );
        if r != Ok(lo) {
            return Err(format!("re-reserving the region: {r:?}"));
        }
        // Nothing may stick out of the region (the guard pages on each side stay free).
        let _ = real_munmap(lo - 16 * P, 16 * P);
        let _ = real_munmap(hi, 16 * P);
        self.mm = Mm::new();
        self.shmem_pages.clear();
        self.history.clear();
        self.new_uffd();
        self.mm
            .mmap(
                lo,
                hi - lo,
                Prot::NONE,
                MapFlags::PRIVATE | MapFlags::FIXED,
                MapSource::Anon,
            )
            .map_err(|e| format!("model reservation: {e}"))?;
        Ok(())
    }

    /// Records one op's outcome; on a mismatch, resets both sides.
    fn record(&mut self, kind: &'static str, what: &str, real: Res, model: Res) {
        let (lo, hi) = self.region();
        let norm = |r: Res| match r {
            Ok(a) if kind.starts_with("mmap") || kind.starts_with("mremap") => {
                if a >= lo && a < hi {
                    Ok(a)
                } else {
                    Ok(u64::MAX) // placed outside the region
                }
            }
            x => x,
        };
        let rv = real_vmas(lo, hi, &self.path);
        let mv = model_vmas(&self.mm, lo, hi);
        let ok = norm(real) == norm(model) && rv == mv;
        let mut h = format!("{what} -> {real:?}");
        if std::env::var("MM_LIVE_TRACE").is_ok_and(|v| v == "1") {
            for v in self.mm.snapshot() {
                if v.end > lo && v.start < hi {
                    let _ = write!(
                        h,
                        "\n        model [{:#x},{:#x}) {:?} pgoff {:#x} anon {:?}",
                        v.start, v.end, v.desc.flags, v.desc.pgoff, v.desc.anon_vma
                    );
                }
            }
            for v in &rv {
                let _ = write!(h, "\n        real  {v}");
            }
        }
        self.history.push(h);
        let key = self.script.unwrap_or(kind);
        let e = self.stats.kinds.entry(key).or_insert((0, 0));
        e.0 += 1;
        if ok {
            e.1 += 1;
            return;
        }
        if self.stats.mismatches.len() < KEEP {
            self.stats.mismatches.push(format!(
                "{key}: {what}\n    real {real:?} model {model:?}\n    real VMAs:\n{}    model VMAs:\n{}    since the last reset:\n{}",
                vlist(&rv),
                vlist(&mv),
                self.history
                    .iter()
                    .map(|h| format!("      {h}\n"))
                    .collect::<String>()
            ));
        }
        let _ = self.reset();
    }

    /// Unmaps what an op placed outside the region, on both sides.
    fn drop_outside(&mut self, real: Res, model: Res, len: u64) {
        let (lo, hi) = self.region();
        if let Ok(a) = real {
            if a < lo || a >= hi {
                let _ = real_munmap(a, len);
            }
        }
        if let Ok(a) = model {
            if a < lo || a >= hi {
                let _ = self.mm.munmap(a, len);
            }
        }
    }

    /// Replaces the userfaultfd pair by a new one for the current `Mm` (the old real descriptor
    /// is closed, which releases it unless a forked relative still holds it).
    fn new_uffd(&mut self) {
        if let Some((fd, _)) = self.uffd.take() {
            // SAFETY: closing this worker's own descriptor.
            unsafe { libc::close(fd) };
        }
        let Some(fd) = real_uffd_open() else { return };
        let flags = UFFD_USER_MODE_ONLY | O_NONBLOCK | O_CLOEXEC;
        let Ok(ctx) = UffdCtx::new(&self.mm, flags, false) else {
            // SAFETY: closing the descriptor just opened.
            unsafe { libc::close(fd) };
            return;
        };
        if ctx.api(UFFD_API, 0).is_err() {
            // SAFETY: as above.
            unsafe { libc::close(fd) };
            return;
        }
        self.uffd = Some((fd, ctx));
    }

    fn op_uffd(&mut self, op: &LOp) {
        let Some((fd, ctx)) = self.uffd.clone() else {
            return;
        };
        match *op {
            LOp::Register { page, n, mode } => {
                let (start, len) = (self.a(page), n * P);
                let mut r = UffdioRegister {
                    range: UffdioRange { start, len },
                    mode,
                    ioctls: 0,
                };
                // SAFETY: UFFDIO_REGISTER over the reserved region with a live struct; pages
                // registered for missing faults are never touched afterwards (`op_touch`).
                let rc = unsafe { libc::ioctl(fd, UFFDIO_REGISTER, &mut r as *mut UffdioRegister) };
                let real = if rc == 0 { Ok(0) } else { Err(last_errno()) };
                let model = model_res(ctx.register(&self.mm, start, len, mode).map(|_| 0));
                let what = format!("UFFDIO_REGISTER({start:#x}, {n}p, mode {mode})");
                self.record("uffd_register", &what, real, model);
            }
            LOp::Unregister { page, n } => {
                let (start, len) = (self.a(page), n * P);
                let mut r = UffdioRange { start, len };
                // SAFETY: UFFDIO_UNREGISTER over the reserved region with a live struct.
                let rc = unsafe { libc::ioctl(fd, UFFDIO_UNREGISTER, &mut r as *mut UffdioRange) };
                let real = if rc == 0 { Ok(0) } else { Err(last_errno()) };
                let model = model_res(ctx.unregister(&self.mm, start, len).map(|_| 0));
                let what = format!("UFFDIO_UNREGISTER({start:#x}, {n}p)");
                self.record("uffd_unregister", &what, real, model);
            }
            _ => {
                // close(): the last reference goes, userfaultfd_release clears the VMAs.
                // SAFETY: closing this worker's own descriptor.
                unsafe { libc::close(fd) };
                ctx.release(Some(&self.mm));
                self.uffd = None;
                self.record("uffd_close", "close(userfaultfd)", Ok(0), Ok(0));
                self.new_uffd();
            }
        }
    }

    fn pick_range(rng: &mut Rng, max: u64) -> (u64, u64) {
        let p = rng.below(W);
        let n = 1 + rng.below(max.min(W - p));
        (p, n)
    }

    /// A random op (see the module docs for the mix).
    fn random_op(&self, rng: &mut Rng, touch: bool) -> LOp {
        if self.uffd.is_some() && rng.chance(8) {
            let (page, n) = Self::pick_range(rng, 12);
            return match rng.below(10) {
                0..=5 => LOp::Register {
                    page,
                    n,
                    mode: 1 + rng.below(7),
                },
                6..=8 => LOp::Unregister { page, n },
                _ => LOp::UffdClose,
            };
        }
        let k = rng.below(100);
        let prot = |rng: &mut Rng| PROTS[rng.below(PROTS.len() as u64) as usize];
        match k {
            0..=21 => {
                let (page, n) = Self::pick_range(rng, 8);
                let src = match rng.below(100) {
                    0..=49 => Src::Anon,
                    50..=61 => Src::SharedAnon,
                    _ => {
                        let off = if rng.chance(50) { page } else { rng.below(24) };
                        let ro = rng.chance(30);
                        Src::File {
                            ro,
                            shared: rng.chance(45),
                            off,
                        }
                    }
                };
                LOp::Mmap {
                    page,
                    n,
                    prot: prot(rng),
                    src,
                    noreplace: rng.chance(25),
                    noreserve: rng.chance(10),
                    unaligned: if rng.chance(3) {
                        1 + rng.below(P - 1)
                    } else {
                        0
                    },
                }
            }
            22..=27 => {
                let (page, n) = Self::pick_range(rng, 8);
                LOp::Hint {
                    page,
                    n,
                    prot: prot(rng),
                    shared: rng.chance(15),
                    unaligned: if rng.chance(30) {
                        1 + rng.below(P - 1)
                    } else {
                        0
                    },
                }
            }
            28..=37 => {
                let (page, n) = Self::pick_range(rng, 12);
                LOp::Munmap { page, n }
            }
            38..=55 => {
                let (page, n) = Self::pick_range(rng, 12);
                LOp::Mprotect {
                    page,
                    n,
                    prot: prot(rng),
                }
            }
            56..=67 => {
                let (page, n) = Self::pick_range(rng, 12);
                LOp::Madvise {
                    page,
                    n,
                    advice: rng.below(ADVICE.len() as u64) as usize,
                }
            }
            68..=85 => {
                let (page, n) = Self::pick_range(rng, 8);
                let room = W - page; // growth stays inside the region
                let how = rng.below(100);
                let (new_n, flags, to) = if how < 20 {
                    (rng.below(n + 1).max(1), 0, 0)
                } else if how < 25 {
                    (n, 0, 0)
                } else if how < 45 {
                    ((n + 1 + rng.below(6)).min(room), 0, 0)
                } else if how < 60 {
                    ((n + 1 + rng.below(6)).min(room), 1, 0)
                } else {
                    let new_n = if rng.chance(60) { n } else { 1 + rng.below(8) };
                    (new_n, 3, rng.below(W - new_n + 1))
                };
                LOp::Mremap {
                    page,
                    n,
                    new_n,
                    flags,
                    to,
                }
            }
            86..=97 if touch => {
                // Mostly a page of a writable VMA of the model, so that touches happen.
                let writable: Vec<u64> = model_vmas(&self.mm, self.base, self.base + W * P)
                    .iter()
                    .filter(|v| v.perms.as_bytes()[1] == b'w')
                    .flat_map(|v| (v.start - self.base) / P..(v.end - self.base) / P)
                    .collect();
                let page = if writable.is_empty() || rng.chance(10) {
                    rng.below(W)
                } else {
                    writable[rng.below(writable.len() as u64) as usize]
                };
                LOp::Touch {
                    page,
                    off: rng.below(P),
                }
            }
            86..=97 => {
                let (page, n) = Self::pick_range(rng, 12);
                LOp::Mprotect {
                    page,
                    n,
                    prot: prot(rng),
                }
            }
            _ => LOp::Fork {
                in_child: rng.chance(50),
            },
        }
    }

    /// Runs one op on both sides and records the outcome.
    fn exec(&mut self, op: &LOp) -> Result<(), String> {
        match *op {
            LOp::Mmap {
                page,
                n,
                prot,
                src,
                noreplace,
                noreserve,
                unaligned,
            } => self.op_mmap(page, n, prot, src, noreplace, noreserve, unaligned),
            LOp::Hint {
                page,
                n,
                prot,
                shared,
                unaligned,
            } => self.op_hint(page, n, prot, shared, unaligned),
            LOp::Munmap { page, n } => {
                let (addr, len) = (self.a(page), n * P);
                let real = real_munmap(addr, len);
                let model = model_res(self.mm.munmap(addr, len).map(|_| 0));
                self.record("munmap", &format!("munmap({addr:#x}, {n}p)"), real, model);
            }
            LOp::Mprotect { page, n, prot } => {
                let (addr, len) = (self.a(page), n * P);
                let real = real_mprotect(addr, len, prot);
                let model = model_res(
                    self.mm
                        .mprotect(addr, len, Prot::from_bits(prot))
                        .map(|_| 0),
                );
                let what = format!("mprotect({addr:#x}, {n}p, {prot})");
                self.record("mprotect", &what, real, model);
            }
            LOp::Madvise { page, n, advice } => {
                let (adv, madv, name) = ADVICE[advice];
                let (addr, len) = (self.a(page), n * P);
                let real = real_madvise(addr, len, adv);
                let model = model_res(self.mm.madvise(addr, len, madv).map(|_| 0));
                let what = format!("madvise({addr:#x}, {n}p, {name})");
                self.record("madvise", &what, real, model);
            }
            LOp::Mremap {
                page,
                n,
                new_n,
                flags,
                to,
            } => {
                let addr = self.a(page);
                let to = if flags & 2 != 0 { self.a(to) } else { 0 };
                let kind = match (flags, new_n.cmp(&n)) {
                    (3, _) => "mremap_fixed",
                    (1, _) => "mremap_maymove",
                    (_, std::cmp::Ordering::Less) => "mremap_shrink",
                    (_, std::cmp::Ordering::Equal) => "mremap_same",
                    _ => "mremap_grow",
                };
                let real = real_mremap(addr, n * P, new_n * P, flags, to);
                let model = model_res(self.mm.mremap(
                    addr,
                    n * P,
                    new_n * P,
                    MremapFlags::from_bits(flags),
                    to,
                ));
                let what = format!("mremap({addr:#x}, {n}p, {new_n}p, flags {flags}, to {to:#x})");
                self.record(kind, &what, real, model);
                self.drop_outside(real, model, new_n * P);
            }
            LOp::Touch { page, off } => self.op_touch(page, off),
            LOp::Fork { in_child } => self.op_fork(in_child)?,
            LOp::Register { .. } | LOp::Unregister { .. } | LOp::UffdClose => self.op_uffd(op),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn op_mmap(
        &mut self,
        p: u64,
        n: u64,
        prot: u32,
        src: Src,
        noreplace: bool,
        noreserve: bool,
        unaligned: u64,
    ) {
        let mut flags: u32 = if noreplace {
            libc::MAP_FIXED_NOREPLACE as u32
        } else {
            libc::MAP_FIXED as u32
        };
        let mut mflags = if noreplace {
            MapFlags::FIXED_NOREPLACE
        } else {
            MapFlags::FIXED
        };
        if noreserve {
            flags |= libc::MAP_NORESERVE as u32;
            mflags = mflags | MapFlags::NORESERVE;
        }
        let (fd, off, msrc, shared, what) = match src {
            Src::Anon => (-1, 0, MapSource::Anon, false, "anon".to_owned()),
            Src::SharedAnon => (-1, 0, MapSource::Anon, true, "shared anon".to_owned()),
            Src::File { ro, shared, off } => {
                let file = if ro { &self.ro } else { &self.rw };
                (
                    if ro { self.fd_ro } else { self.fd_rw },
                    off * P,
                    MapSource::File {
                        file: Arc::clone(file),
                        offset: off * P,
                    },
                    shared,
                    format!(
                        "file {} {} off {off}p",
                        if ro { "ro" } else { "rw" },
                        if shared { "shared" } else { "private" }
                    ),
                )
            }
        };
        if fd < 0 {
            flags |= libc::MAP_ANONYMOUS as u32;
            mflags = mflags | MapFlags::ANONYMOUS;
        }
        flags |= if shared {
            libc::MAP_SHARED as u32
        } else {
            libc::MAP_PRIVATE as u32
        };
        mflags = mflags
            | if shared {
                MapFlags::SHARED
            } else {
                MapFlags::PRIVATE
            };
        let addr = self.a(p) + unaligned;
        let len = n * P;
        let real = real_mmap(addr, len, prot, flags, fd, off);
        let model = model_res(
            self.mm
                .mmap(addr, len, Prot::from_bits(prot), mflags, msrc.clone()),
        );
        self.note_shmem(model, shared && fd < 0, n);
        let kind = if noreplace {
            "mmap_noreplace"
        } else {
            "mmap_fixed"
        };
        let what = format!(
            "mmap({addr:#x}, {n}p, prot {prot}, {what}{})",
            if noreserve { ", noreserve" } else { "" }
        );
        self.record(kind, &what, real, model);
    }

    fn note_shmem(&mut self, model: Res, shmem: bool, n: u64) {
        if let (true, Ok(a)) = (shmem, model) {
            if let Some(v) = self.mm.vma_lookup(a) {
                if let VmaKind::File(f) = &v.desc.kind {
                    self.shmem_pages.insert(f.inode(), n);
                }
            }
        }
    }

    fn op_hint(&mut self, p: u64, n: u64, prot: u32, shared: bool, unaligned: u64) {
        let hint = self.a(p) + unaligned;
        let (flags, mflags) = if shared {
            (libc::MAP_SHARED, MapFlags::SHARED)
        } else {
            (libc::MAP_PRIVATE, MapFlags::PRIVATE)
        };
        let len = n * P;
        let real = real_mmap(hint, len, prot, (flags | libc::MAP_ANONYMOUS) as u32, -1, 0);
        let model = model_res(self.mm.mmap(
            hint,
            len,
            Prot::from_bits(prot),
            mflags | MapFlags::ANONYMOUS,
            MapSource::Anon,
        ));
        self.note_shmem(model, shared, n);
        let what = format!("mmap(hint {hint:#x}, {n}p, prot {prot}, shared {shared})");
        self.record("mmap_hint", &what, real, model);
        self.drop_outside(real, model, len);
    }

    /// Writes one byte where both sides have a writable VMA (and the page is backed).
    fn op_touch(&mut self, p: u64, off: u64) {
        let addr = self.a(p) + off;
        let (lo, hi) = self.region();
        let rv = real_vmas(lo, hi, &self.path);
        let Some(v) = self.mm.vma_lookup(addr) else {
            return;
        };
        if !v.desc.flags.contains(VmFlags::WRITE) || v.desc.flags.intersects(VmFlags::UFFD_FLAGS) {
            return;
        }
        let pgoff = v.desc.pgoff + (addr - v.start) / P;
        let backed = match &v.desc.kind {
            VmaKind::File(f) if f.kind() == FileKind::Shmem => {
                pgoff < self.shmem_pages.get(&f.inode()).copied().unwrap_or(0)
            }
            VmaKind::File(_) => pgoff < FILE_PAGES,
            VmaKind::Anon(_) => true,
        };
        if !backed {
            return;
        }
        if !rv
            .iter()
            .any(|r| r.start <= addr && addr < r.end && r.perms.as_bytes()[1] == b'w')
        {
            return;
        }
        let byte = (off % 255) as u8 + 1;
        // SAFETY: `addr` lies in a writable VMA of the reserved region according to both the
        // kernel's maps and the model, and inside its backing object, so the write cannot fault
        // fatally or touch memory the program uses.
        unsafe { std::ptr::write_volatile(addr as *mut u8, byte) };
        let model = model_res(self.mm.write_bytes(addr, &[byte]).map(|_| 0));
        self.record("touch", &format!("write {addr:#x}"), Ok(0), model);
    }

    /// fork: continue in the child (the parent waits and exits with its status) or in the
    /// parent (the child exits at once).
    fn op_fork(&mut self, in_child: bool) -> Result<(), String> {
        let in_child = in_child && self.depth < MAX_DEPTH;
        // SAFETY: fork in a process with a single thread (this worker is itself a fork child).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: errno {}", last_errno()));
        }
        if pid == 0 {
            if !in_child {
                // SAFETY: leaving the child without running destructors (the parent owns them).
                unsafe { libc::_exit(0) };
            }
            self.depth += 1;
            // dup_userfaultfd: a context without EVENT_FORK does not follow the child.
            let mut hook = DupUffd::new(true, CostSetting::Faithful);
            match self.mm.fork_with(DupMode::Dup, &mut hook) {
                Ok(c) => {
                    self.mm = c;
                    // The inherited descriptor serves the parent's mm: use a new one here.
                    // (Closing the copy does not release the parent's context.)
                    if let Some((fd, _)) = self.uffd.take() {
                        // SAFETY: closing this process's copy of the descriptor.
                        unsafe { libc::close(fd) };
                    }
                    self.new_uffd();
                    self.record("fork", "fork (child continues)", Ok(0), Ok(0));
                }
                Err(e) => self.record("fork", "fork", Ok(0), model_res(Err(e))),
            }
            return Ok(());
        }
        let mut status = 0;
        // SAFETY: waiting for the child just forked.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        if in_child {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                101
            };
            // SAFETY: the child carries on (and reports); this process only relays its status.
            unsafe { libc::_exit(code) };
        }
        self.record("fork", "fork (parent continues)", Ok(0), Ok(0));
        Ok(())
    }

    fn run_seed(&mut self, seed: u64, ops: u64) -> Result<(), String> {
        let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let touch = seed % 2 == 0;
        self.reset()?;
        let every = env_u64("MM_LIVE_RESET_EVERY", 0);
        for i in 0..ops {
            if every != 0 && i % every == every - 1 {
                self.reset()?;
            }
            let op = self.random_op(&mut rng, touch);
            self.exec(&op)?;
        }
        self.stats.seeds += 1;
        Ok(())
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Reserves the region at one of [`BASES`], with a free page on each side.
fn reserve() -> Option<u64> {
    for &b in &BASES {
        let r = real_mmap(
            b - P,
            (W + 2) * P,
            0,
            (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE) as u32,
            -1,
            0,
        );
        if r == Ok(b - P) {
            let _ = real_munmap(b - P, P);
            let _ = real_munmap(b + W * P, P);
            return Some(b);
        }
        if let Ok(a) = r {
            let _ = real_munmap(a, (W + 2) * P);
        }
    }
    None
}

fn report(stats: &Stats) -> String {
    let mut s = String::new();
    let (mut t, mut a) = (0, 0);
    for (k, (total, agree)) in &stats.kinds {
        t += total;
        a += agree;
        let _ = writeln!(s, "KIND {k} {total} {agree}");
    }
    let _ = writeln!(s, "TOTAL {t} {a} seeds {}", stats.seeds);
    for m in &stats.states {
        s.push_str(m);
    }
    for m in &stats.mismatches {
        let _ = writeln!(s, "MISMATCH {m}");
    }
    s
}

/// The worker (in a fork child of the test): runs every seed and writes the report to `out`.
/// What a worker runs.
enum Job {
    /// Random sequences: these seeds, this many ops each.
    Seeds(std::ops::Range<u64>, u64),
    /// The scripted reproducers of [`scripts`].
    Scripts,
}

fn worker(out: i32, path: &str, job: Job) -> ! {
    let send = |text: &str| {
        let b = text.as_bytes();
        let mut done = 0;
        while done < b.len() {
            // SAFETY: writing from a live buffer to the pipe this process owns.
            let n = unsafe { libc::write(out, b[done..].as_ptr().cast(), b.len() - done) };
            if n <= 0 {
                break;
            }
            done += n as usize;
        }
    };
    let Some(base) = reserve() else {
        send("SKIP no free fixed region for the reservation\n");
        // SAFETY: leaving the worker process.
        unsafe { libc::_exit(0) };
    };
    let cpath = CString::new(path).unwrap_or_default();
    // SAFETY: opening the temp file by a NUL-terminated path.
    let fd_rw = unsafe { libc::open(cpath.as_ptr(), libc::O_RDWR) };
    // SAFETY: as above.
    let fd_ro = unsafe { libc::open(cpath.as_ptr(), libc::O_RDONLY) };
    if fd_rw < 0 || fd_ro < 0 {
        send("SKIP cannot open the temp file\n");
        // SAFETY: leaving the worker process.
        unsafe { libc::_exit(0) };
    }
    let meta = std::fs::metadata(path).ok();
    let ino = meta.as_ref().map_or(0, std::os::unix::fs::MetadataExt::ino);
    let rw = MappedFile::new(path, (0, 0), ino, FileKind::Regular, true);
    let ro = MappedFile::new(path, (0, 0), ino, FileKind::Regular, false);
    let mut live = Live {
        base,
        mm: Mm::new(),
        rw,
        ro,
        fd_rw,
        fd_ro,
        path: path.to_owned(),
        shmem_pages: HashMap::new(),
        stats: Stats::default(),
        script: None,
        history: Vec::new(),
        depth: 0,
        uffd: None,
    };
    let res = match job {
        Job::Seeds(seeds, ops) => seeds.into_iter().try_for_each(|s| live.run_seed(s, ops)),
        Job::Scripts => scripts().into_iter().try_for_each(|(name, ops)| {
            live.script = Some(name);
            live.reset()?;
            ops.iter().try_for_each(|op| live.exec(op))?;
            let (lo, hi) = live.region();
            let mut state = format!("STATE {name}\n");
            for v in real_vmas(lo, hi, &live.path) {
                let _ = writeln!(state, "      {v}");
            }
            live.stats.states.push(state);
            Ok(())
        }),
    };
    if let Err(e) = res {
        send(&format!("SKIP {e}\n"));
        // SAFETY: leaving the worker process.
        unsafe { libc::_exit(0) };
    }
    send(&report(&live.stats));
    // SAFETY: leaving the worker process (the last of a chain of forks writes the report).
    unsafe { libc::_exit(0) };
}

/// Runs `job` in a forked worker; `None` (with the reason printed) where the syscalls are
/// refused. Returns the report and whether the worker exited cleanly.
fn run_worker(job: Job) -> Option<(String, i32)> {
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        "mm-live-kernel-{}-{}.bin",
        std::process::id(),
        matches!(job, Job::Scripts) as u8
    ));
    if std::fs::write(&path, vec![0u8; (FILE_PAGES * P) as usize]).is_err() {
        println!("skipped: cannot create a temp file in {}", dir.display());
        return None;
    }
    let path_s = path.to_string_lossy().into_owned();
    let mut fds = [0i32; 2];
    // SAFETY: pipe() writes two descriptors into the array.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        println!("skipped: pipe refused");
        let _ = std::fs::remove_file(&path);
        return None;
    }
    // SAFETY: the child only uses async-signal-safe calls plus the allocator (glibc's is
    // fork-safe) and leaves with `_exit`; it never returns into the test harness.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        println!("skipped: fork refused (errno {})", last_errno());
        let _ = std::fs::remove_file(&path);
        return None;
    }
    if pid == 0 {
        // SAFETY: closing the read end in the child.
        unsafe { libc::close(fds[0]) };
        worker(fds[1], &path_s, job);
    }
    // SAFETY: closing the write end in the parent so that EOF arrives when the workers exit.
    unsafe { libc::close(fds[1]) };
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: reading into a live buffer from the pipe's read end.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        text.extend_from_slice(&buf[..n as usize]);
    }
    let mut status = 0;
    // SAFETY: reaping the worker.
    unsafe {
        libc::waitpid(pid, &mut status, 0);
        libc::close(fds[0]);
    }
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&text).into_owned();
    if let Some(reason) = text.lines().find_map(|l| l.strip_prefix("SKIP ")) {
        println!("skipped: {reason}");
        return None;
    }
    Some((text, status))
}

/// Prints the report; returns (ops, agreeing ops).
fn print_report(text: &str) -> (u64, u64) {
    let mut total = (0, 0);
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("KIND ") {
            let f: Vec<&str> = rest.rsplitn(3, ' ').collect();
            if let [a, t, k] = f[..] {
                let (t, a): (u64, u64) = (t.parse().unwrap_or(0), a.parse().unwrap_or(0));
                println!(
                    "  {k:<24} {a:>6}/{t:<6} {:6.2}%",
                    100.0 * a as f64 / t.max(1) as f64
                );
            }
        } else if let Some(rest) = l.strip_prefix("TOTAL ") {
            let f: Vec<&str> = rest.split(' ').collect();
            total = (f[0].parse().unwrap_or(0), f[1].parse().unwrap_or(0));
        }
    }
    println!(
        "  {:<24} {:>6}/{:<6} {:6.2}%",
        "all",
        total.1,
        total.0,
        100.0 * total.1 as f64 / (total.0 as f64).max(1.0)
    );
    for m in text.split("MISMATCH ").skip(1) {
        println!("MISMATCH {m}");
    }
    total
}

#[test]
fn mm_agrees_with_the_running_kernel() {
    let seeds = env_u64("MM_LIVE_SEEDS", 4);
    let ops = env_u64("MM_LIVE_OPS", 400);
    let seed0 = env_u64("MM_LIVE_SEED0", 1);
    let report_only = std::env::var("MM_LIVE_REPORT_ONLY").is_ok_and(|v| v == "1");
    let Some((text, status)) = run_worker(Job::Seeds(seed0..seed0 + seeds, ops)) else {
        return;
    };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "worker died (status {status:#x}); output so far:\n{text}"
    );
    println!(
        "live-kernel differential: seeds {seed0}..{} x {ops} ops",
        seed0 + seeds
    );
    let total = print_report(&text);
    assert!(total.0 > 0, "no ops ran:\n{text}");
    if !report_only {
        assert_eq!(total.0, total.1, "the model and the kernel disagree");
    }
}

#[test]
fn issue_reproducers_agree_with_the_running_kernel() {
    let Some((text, status)) = run_worker(Job::Scripts) else {
        return;
    };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "worker died (status {status:#x}); output so far:\n{text}"
    );
    println!("live-kernel reproducers (one per class of difference found):");
    let total = print_report(&text);
    for l in text.lines() {
        if l.starts_with("STATE ") || l.starts_with("      [") {
            println!("{l}");
        }
    }
    let want: u64 = scripts().iter().map(|(_, ops)| ops.len() as u64).sum();
    assert_eq!(total.0, want, "every scripted op ran:\n{text}");
    assert_eq!(total.0, total.1, "the model and the kernel disagree");
}

const RW: u32 = 3;
const R: u32 = 1;

fn map(page: u64, n: u64, prot: u32, src: Src) -> LOp {
    LOp::Mmap {
        page,
        n,
        prot,
        src,
        noreplace: false,
        noreserve: false,
        unaligned: 0,
    }
}

fn remap(page: u64, n: u64, new_n: u64, flags: u32, to: u64) -> LOp {
    LOp::Mremap {
        page,
        n,
        new_n,
        flags,
        to,
    }
}

/// The reproducers of the differences the live differential found, one script per case (pages relative to the region; every
/// script starts from a fresh `PROT_NONE` reservation).
fn scripts() -> Vec<(&'static str, Vec<LOp>)> {
    use LOp::*;
    let ro_shared = |off| Src::File {
        ro: true,
        shared: true,
        off,
    };
    let rw_shared = |off| Src::File {
        ro: false,
        shared: true,
        off,
    };
    let rw_private = |off| Src::File {
        ro: false,
        shared: false,
        off,
    };
    vec![
        (
            "1 mprotect ENOMEM partial",
            vec![
                map(0, 4, RW, Src::Anon),
                Munmap { page: 2, n: 1 },
                Mprotect {
                    page: 0,
                    n: 4,
                    prot: R,
                },
            ],
        ),
        (
            "1 madvise hole partial",
            vec![
                map(0, 4, RW, Src::Anon),
                Munmap { page: 2, n: 1 },
                Madvise {
                    page: 0,
                    n: 4,
                    advice: 1,
                },
            ],
        ),
        (
            "1 mprotect EACCES partial",
            vec![
                map(0, 2, R, Src::Anon),
                map(2, 2, R, ro_shared(2)),
                Mprotect {
                    page: 0,
                    n: 4,
                    prot: RW,
                },
            ],
        ),
        (
            "1 wipeonfork EINVAL partial",
            vec![
                map(0, 2, RW, Src::Anon),
                map(2, 2, RW, Src::SharedAnon),
                Madvise {
                    page: 0,
                    n: 4,
                    advice: 3,
                },
            ],
        ),
        (
            "2 madvise EINVAL before ENOMEM",
            vec![
                map(0, 2, RW, rw_shared(0)),
                Munmap { page: 0, n: 1 },
                Madvise {
                    page: 0,
                    n: 2,
                    advice: 3,
                },
            ],
        ),
        (
            "2 mprotect EACCES before ENOMEM",
            vec![
                map(0, 2, R, ro_shared(0)),
                Munmap { page: 1, n: 1 },
                Mprotect {
                    page: 0,
                    n: 2,
                    prot: RW,
                },
            ],
        ),
        (
            "2 mmap EEXIST/EINVAL before EACCES",
            vec![
                map(0, 2, R, Src::Anon),
                Mmap {
                    page: 0,
                    n: 2,
                    prot: RW,
                    src: ro_shared(0),
                    noreplace: true,
                    noreserve: false,
                    unaligned: 0,
                },
                Mmap {
                    page: 0,
                    n: 2,
                    prot: RW,
                    src: ro_shared(0),
                    noreplace: false,
                    noreserve: false,
                    unaligned: 0x10,
                },
            ],
        ),
        (
            "3 mremap across two VMAs",
            vec![
                map(0, 2, RW, Src::Anon),
                map(2, 2, R, Src::Anon),
                remap(0, 4, 4, 0, 0),
                remap(0, 4, 1, 0, 0),
            ],
        ),
        (
            "3 multi-VMA move (6.17)",
            vec![
                map(10, 2, RW, Src::Anon),
                map(12, 2, R, Src::Anon),
                Munmap { page: 14, n: 1 },
                map(15, 1, RW, Src::Anon),
                remap(10, 6, 6, 3, 30),
                map(40, 2, RW, Src::Anon),
                Munmap { page: 39, n: 1 },
                remap(39, 3, 3, 3, 50),
            ],
        ),
        (
            "4 unfaulted move merges",
            vec![
                map(0, 4, RW, Src::Anon),
                map(20, 2, RW, Src::Anon),
                remap(20, 2, 2, 3, 4),
                map(30, 4, RW, Src::Anon),
                map(40, 2, RW, Src::Anon),
                Touch { page: 40, off: 0 },
                remap(40, 2, 2, 3, 34),
            ],
        ),
        (
            "6 unaligned hint rounds down",
            vec![
                Munmap { page: 0, n: W },
                Hint {
                    page: 8,
                    n: 9,
                    prot: RW,
                    shared: false,
                    unaligned: 0x849,
                },
            ],
        ),
        (
            "8 VM_ACCOUNT",
            vec![
                map(20, 2, R, rw_private(20)),
                map(22, 2, RW, rw_private(22)),
                Mprotect {
                    page: 22,
                    n: 2,
                    prot: R,
                },
                map(30, 2, R, Src::Anon),
                map(32, 2, RW, Src::Anon),
                Mprotect {
                    page: 32,
                    n: 2,
                    prot: R,
                },
                map(40, 2, R, Src::Anon),
                map(42, 2, RW, Src::Anon),
                Touch { page: 42, off: 0 },
                Mprotect {
                    page: 42,
                    n: 2,
                    prot: R,
                },
            ],
        ),
        (
            "8 unchanged protection keeps VM_ACCOUNT",
            vec![
                map(3, 2, RW, Src::Anon),
                Touch { page: 3, off: 0 },
                Mprotect {
                    page: 3,
                    n: 2,
                    prot: 0,
                },
                Madvise {
                    page: 3,
                    n: 2,
                    advice: 3,
                },
                Fork { in_child: true },
                Mprotect {
                    page: 4,
                    n: 1,
                    prot: 0,
                },
                Mprotect {
                    page: 4,
                    n: 1,
                    prot: R,
                },
            ],
        ),
        (
            "9 anon_vma blocks a merge",
            vec![
                map(0, 2, RW, Src::Anon),
                Touch { page: 0, off: 0 },
                map(3, 2, RW, Src::Anon),
                Touch { page: 3, off: 0 },
                map(2, 1, RW, Src::Anon),
            ],
        ),
        (
            "9 anon_vma reused from a neighbour",
            vec![
                map(0, 2, RW, Src::Anon),
                Touch { page: 0, off: 0 },
                map(2, 2, R, Src::Anon),
                Mprotect {
                    page: 2,
                    n: 2,
                    prot: RW,
                },
                map(10, 2, RW, Src::Anon),
                Mprotect {
                    page: 11,
                    n: 1,
                    prot: R,
                },
                Touch { page: 10, off: 0 },
                Mprotect {
                    page: 11,
                    n: 1,
                    prot: RW,
                },
            ],
        ),
        (
            "9 anon_vma in a fork child",
            vec![
                map(0, 4, RW, Src::Anon),
                Touch { page: 0, off: 0 },
                Mprotect {
                    page: 1,
                    n: 1,
                    prot: R,
                },
                Fork { in_child: true },
                Mprotect {
                    page: 1,
                    n: 1,
                    prot: RW,
                },
                map(4, 1, RW, Src::Anon),
                map(10, 2, RW, Src::Anon),
                Madvise {
                    page: 10,
                    n: 2,
                    advice: 3,
                },
                Touch { page: 10, off: 0 },
                Fork { in_child: true },
                Madvise {
                    page: 10,
                    n: 2,
                    advice: 4,
                },
                map(12, 1, RW, Src::Anon),
            ],
        ),
        (
            // copy_vma tries the merge while the new VMA still has the old one's context (so
            // the unregistered neighbour is not mergeable); mremap_userfaultfd_prep then drops
            // the context (no UFFD_FEATURE_EVENT_REMAP) without another merge attempt: the
            // moved page stays a VMA of its own next to an identical neighbour.
            "10 uffd context dropped by a move after the merge",
            vec![
                Munmap { page: 0, n: W },
                map(17, 6, 0, Src::Anon),
                remap(22, 1, 3, 0, 0),
                Register {
                    page: 20,
                    n: 5,
                    mode: 1,
                },
                remap(20, 1, 1, 3, 16),
            ],
        ),
        (
            // The same move into a hole whose neighbour has the moved VMA's context merges
            // with it, and the merged VMA loses the context as a whole.
            "10 uffd move merges with a registered neighbour",
            vec![
                Munmap { page: 0, n: W },
                map(17, 6, 0, Src::Anon),
                remap(22, 1, 3, 0, 0),
                Register {
                    page: 17,
                    n: 8,
                    mode: 1,
                },
                Munmap { page: 17, n: 1 },
                remap(21, 1, 1, 3, 17),
            ],
        ),
        (
            // dup_userfaultfd drops a context without EVENT_FORK VMA by VMA in the child,
            // without merging: the child keeps the parent's boundaries.
            "10 fork child keeps the boundaries of a dropped context",
            vec![
                Munmap { page: 0, n: W },
                map(26, 5, 0, Src::Anon),
                Register {
                    page: 24,
                    n: 3,
                    mode: 1,
                },
                Fork { in_child: true },
                Mprotect {
                    page: 26,
                    n: 2,
                    prot: 0,
                },
            ],
        ),
        (
            // ... until a vma_modify that changes the flags there tries the merge.
            "10 a changed VMA merges across a dropped context's boundary",
            vec![
                Munmap { page: 0, n: W },
                map(26, 5, 0, Src::Anon),
                Register {
                    page: 24,
                    n: 3,
                    mode: 1,
                },
                Fork { in_child: true },
                Mprotect {
                    page: 26,
                    n: 1,
                    prot: R,
                },
                Mprotect {
                    page: 26,
                    n: 1,
                    prot: 0,
                },
            ],
        ),
    ]
}
