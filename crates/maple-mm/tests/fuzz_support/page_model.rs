//! The page-granular model of the VMA manager, shared by the property test `tests/mm_model.rs`
//! and the fuzz target `mm_ops` (`tests/fuzz_support/mm_ops.rs`).
//!
//! The model is a `BTreeMap<page, attributes>` (flags, backing, file page offset, userfaultfd
//! context id) plus the first byte of every written page. Every operation — mmap (fixed,
//! fixed-noreplace, hinted; anonymous, shared anonymous, private and shared file), munmap,
//! mprotect, madvise, mremap, writes and fork (both ways, with the userfaultfd hook, seed patch on
//! or off, continuing with the parent or the child), and userfaultfd
//! register/unregister/release/copy on two contexts — is applied to both, with the model
//! predicting errors (`EEXIST`, `ENOMEM` for holes and for `max_map_count`, `EINVAL`, `EBUSY`,
//! `ENOENT`, `EFAULT`). [`check`] compares them: the tree validates, the VMAs expand to exactly
//! the model's pages, the number of VMAs equals the number of maximal runs of the model
//! (merging is maximal, except at the boundaries the kernel leaves unmerged: see
//! [`Model::stuck`]), and the populated pages hold the model's bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use maple_mm::uffd::{feature, CostSetting, DupUffd, UffdCtx};
use maple_mm::{
    Advice, DupMode, FileKind, MapFlags, MapSource, MappedFile, Mm, MmConfig, MmError, MremapFlags,
    Prot, VmFlags, Vma, VmaKind, VmaLockMiss, VmaSnapshot, PAGE_SHIFT, PAGE_SIZE,
};

pub const BASE: u64 = 0x1000_0000;
pub const WINDOW: u64 = 48;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub flags: u64,
    /// 0: anonymous; otherwise the file's inode.
    pub backing: u64,
    pub pgoff: u64,
    /// 0: not registered; otherwise the userfaultfd context's id.
    pub ctx: u64,
    /// 0: no `anon_vma`; otherwise the `anon_vma`'s id (learnt from the `Mm` when it is
    /// created, predicted when it is reused).
    pub anon: u64,
    /// Whether that `anon_vma` is a fork child's (its chain is not singular).
    pub forked: bool,
}

#[derive(Clone, Default, Debug)]
pub struct Model {
    pub pages: BTreeMap<u64, Attr>,
    pub data: BTreeMap<u64, u8>,
    /// Pages where a VMA starts although the page before it is compatible: boundaries the
    /// kernel left without a merge attempt after the attributes became equal. Two sources:
    /// `mremap_userfaultfd_prep` dropping the context of a moved VMA after `copy_vma`'s merge
    /// attempt, and `dup_userfaultfd` dropping it VMA by VMA in a fork child. Such a boundary
    /// lasts until an operation that tries a merge there: one that rewrites the page on either
    /// side of it (an mmap or a move onto it, or a `vma_modify` that changes its flags or
    /// context; a change that leaves them equal is skipped and tries nothing).
    pub stuck: BTreeSet<u64>,
    /// Pages (re)mapped by the current operation whatever their attributes (`vma_merge_new_range`
    /// tries the neighbours of every new VMA).
    pub fresh: BTreeSet<u64>,
    /// Boundaries made stuck by the current operation (kept by its settling).
    pub new_stuck: BTreeSet<u64>,
}

/// `is_mergeable_anon_vma` on the model's attributes.
pub fn anon_ok(a: &Attr, b: &Attr) -> bool {
    match (a.anon, b.anon) {
        (0, 0) => true,
        (0, _) => !b.forked,
        (_, 0) => !a.forked,
        (x, y) => x == y,
    }
}

/// Whether page `b` may follow page `a` in one VMA (the `anon_vma` of the whole run is checked
/// by [`Model::run_list`]).
pub fn compatible(a: &Attr, b: &Attr) -> bool {
    a.flags == b.flags
        && a.backing == b.backing
        && a.pgoff + 1 == b.pgoff
        && a.ctx == b.ctx
        && anon_ok(a, b)
}

impl Model {
    /// The VMAs the model predicts: maximal runs of compatible pages, built from the left (a
    /// page joins the run before it if it is compatible with the run's last page and with the
    /// run's `anon_vma`), as `(first page, end page, the run's anon_vma attributes)`.
    pub fn run_list(&self) -> Vec<(u64, u64, Attr)> {
        let mut out: Vec<(u64, u64, Attr)> = Vec::new();
        let mut last: Option<(u64, Attr)> = None;
        for (&p, a) in &self.pages {
            let joins = match (&last, out.last()) {
                (Some((q, b)), Some((_, _, run))) => {
                    *q + 1 == p && compatible(b, a) && anon_ok(run, a) && !self.stuck.contains(&p)
                }
                _ => false,
            };
            if joins {
                let r = out.last_mut().expect("run");
                r.1 = p + 1;
                if r.2.anon == 0 && a.anon != 0 {
                    r.2.anon = a.anon;
                    r.2.forked = a.forked;
                }
            } else {
                out.push((p, p + 1, *a));
            }
            last = Some((p, *a));
        }
        out
    }

    /// Gives every page the `anon_vma` of its run (a merge keeps the one `anon_vma` there is).
    pub fn normalise(&mut self) {
        for (s, e, run) in self.run_list() {
            for (_, a) in self.pages.range_mut(s..e) {
                a.anon = run.anon;
                a.forked = run.forked;
            }
        }
    }

    pub fn runs(&self) -> usize {
        self.run_list().len()
    }

    /// Whether `p` starts a VMA only because of a stuck boundary.
    fn stuck_matters(&self, p: u64) -> bool {
        match (self.pages.get(&(p - 1)), self.pages.get(&p)) {
            (Some(a), Some(b)) => compatible(a, b),
            _ => false,
        }
    }

    /// After an operation: the stuck boundaries next to a page it rewrote are gone (the kernel
    /// tried the merge there), the ones it made are added, and those that no longer separate
    /// compatible pages are dropped.
    pub fn settle(&mut self, before: &BTreeMap<u64, Attr>) {
        let key = |a: &Attr| (a.flags, a.backing, a.pgoff, a.ctx);
        let mut tried: BTreeSet<u64> = std::mem::take(&mut self.fresh);
        for (&p, a) in &self.pages {
            if before.get(&p).map(key) != Some(key(a)) {
                tried.insert(p);
            }
        }
        for p in tried {
            self.stuck.remove(&p);
            self.stuck.remove(&(p + 1));
        }
        let made = std::mem::take(&mut self.new_stuck);
        self.stuck.extend(made);
        let keep: BTreeSet<u64> = self
            .stuck
            .iter()
            .copied()
            .filter(|&p| p > 0 && self.stuck_matters(p))
            .collect();
        self.stuck = keep;
    }

    pub fn any_mapped(&self, p: u64, n: u64) -> bool {
        self.pages.range(p..p + n).next().is_some()
    }

    pub fn all_mapped(&self, p: u64, n: u64) -> bool {
        self.pages.range(p..p + n).count() as u64 == n
    }

    pub fn unmap(&mut self, p: u64, n: u64) {
        let keys: Vec<u64> = self.pages.range(p..p + n).map(|(&k, _)| k).collect();
        for k in keys {
            self.pages.remove(&k);
            self.data.remove(&k);
        }
    }

    /// The highest page `a` with `[a, a + n)` free, `lo <= a` and `a + n <= hi`.
    pub fn highest_fit(&self, lo: u64, hi: u64, n: u64) -> Option<u64> {
        if lo >= hi {
            return None;
        }
        let mut end = hi;
        for (&q, _) in self.pages.range(lo..hi).rev() {
            if end - (q + 1) >= n {
                return Some(end - n);
            }
            end = q;
        }
        (end >= lo && end - lo >= n).then(|| end - n)
    }

    /// The lowest page `a` with `[a, a + n)` free, `lo <= a` and `a + n <= hi`.
    pub fn lowest_fit(&self, lo: u64, hi: u64, n: u64) -> Option<u64> {
        if lo >= hi {
            return None;
        }
        let mut start = lo;
        for (&q, _) in self.pages.range(lo..hi) {
            if q - start >= n {
                return Some(start);
            }
            start = q + 1;
        }
        (hi >= start && hi - start >= n).then_some(start)
    }

    /// Where an unhinted mmap of `n` pages goes (`get_unmapped_area` without guard gaps:
    /// top-down below `mmap_base` falling back to bottom-up from `TASK_UNMAPPED_BASE`, or
    /// bottom-up only).
    pub fn placement(&self, cfg: &MmConfig, n: u64) -> Option<u64> {
        let min = cfg.mmap_min_addr >> PAGE_SHIFT;
        let up = || {
            self.lowest_fit(
                (cfg.unmapped_base >> PAGE_SHIFT).max(min),
                cfg.task_size >> PAGE_SHIFT,
                n,
            )
        };
        if cfg.bottom_up {
            return up();
        }
        self.highest_fit(
            (PAGE_SIZE >> PAGE_SHIFT).max(min),
            cfg.mmap_base >> PAGE_SHIFT,
            n,
        )
        .or_else(up)
    }

    /// The run (VMA) containing page `p`: `[start, end)`.
    pub fn run_of(&self, p: u64) -> Option<(u64, u64)> {
        self.pages.get(&p)?;
        self.run_list()
            .into_iter()
            .find(|&(s, e, _)| s <= p && p < e)
            .map(|(s, e, _)| (s, e))
    }
}

#[derive(Clone, Debug)]
pub enum Src {
    Anon,
    SharedAnon,
    File { id: u64, off: u64, shared: bool },
}

#[derive(Clone, Debug)]
pub enum Op {
    Map {
        page: u64,
        n: u64,
        prot: u32,
        src: Src,
        noreplace: bool,
    },
    MapHint {
        page: u64,
        n: u64,
        prot: u32,
    },
    Unmap {
        page: u64,
        n: u64,
    },
    Protect {
        page: u64,
        n: u64,
        prot: u32,
    },
    Advise {
        page: u64,
        n: u64,
        advice: u8,
    },
    Remap {
        page: u64,
        old: u64,
        new: u64,
        how: u8,
        to: u64,
    },
    Write {
        page: u64,
        byte: u8,
    },
    /// mmap without a hint: placed by the configured top-down or bottom-up search (`page` is
    /// unused).
    MapAnywhere {
        page: u64,
        n: u64,
        prot: u32,
    },
    /// `find_vma`, `vma_lookup`, `find_vma_prev`, `vmas_in` and the lock-free lookup
    /// (`lock_vma_under_rcu`, `with_vma`) at a page, checked against the model's runs.
    Lookup {
        page: u64,
        n: u64,
    },
    Fork {
        dup: bool,
        keep_child: bool,
        seed: bool,
    },
    Register {
        page: u64,
        n: u64,
        mode: u64,
        which: usize,
    },
    Unregister {
        page: u64,
        n: u64,
        which: usize,
    },
    Release {
        which: usize,
    },
    Copy {
        page: u64,
        which: usize,
        byte: u8,
    },
}

pub const fn addr(page: u64) -> u64 {
    page << PAGE_SHIFT
}

pub const fn wpage(p: u64) -> u64 {
    (BASE >> PAGE_SHIFT) + p
}

pub struct World {
    pub mm: Mm,
    pub model: Model,
    pub files: Vec<Arc<MappedFile>>,
    pub max: usize,
    /// Two userfaultfd contexts of `mm` (no EVENT_* features; SIGBUS, so that nothing blocks).
    pub ctxs: Vec<Arc<UffdCtx>>,
    /// Inodes of the shmem objects (shared anonymous mappings).
    pub shmem: BTreeSet<u64>,
}

/// Three regular files the model maps (distinct inodes).
pub fn files() -> Vec<Arc<MappedFile>> {
    (0..3u64)
        .map(|i| {
            MappedFile::new(
                &format!("/f{i}"),
                (8, 1),
                (1 << 40) + i,
                FileKind::Regular,
                true,
            )
        })
        .collect()
}

pub const UFFD_BITS: u64 = VmFlags::UFFD_FLAGS.bits();
/// `VM_ACCOUNT`.
pub const ACCOUNT: u64 = VmFlags::ACCOUNT.bits();

pub fn new_ctx(mm: &Mm) -> Arc<UffdCtx> {
    UffdCtx::with_features(mm, feature::SIGBUS)
}

pub fn mode_flags(mode: u64) -> u64 {
    let mut f = 0;
    if mode & 1 != 0 {
        f |= VmFlags::UFFD_MISSING.bits();
    }
    if mode & 2 != 0 {
        f |= VmFlags::UFFD_WP.bits();
    }
    if mode & 4 != 0 {
        f |= VmFlags::UFFD_MINOR.bits();
    }
    f
}

impl World {
    pub fn new(max: usize, files: Vec<Arc<MappedFile>>) -> Self {
        let cfg = MmConfig {
            max_map_count: max,
            ..MmConfig::default()
        };
        Self::with_config(cfg, files)
    }

    /// A world whose address space has `cfg` (its `max_map_count` is the model's limit).
    pub fn with_config(cfg: MmConfig, files: Vec<Arc<MappedFile>>) -> Self {
        let max = cfg.max_map_count;
        let mm = Mm::with_config(cfg);
        let ctxs = (0..2).map(|_| new_ctx(&mm)).collect();
        World {
            mm,
            model: Model::default(),
            files,
            max,
            ctxs,
            shmem: BTreeSet::new(),
        }
    }

    /// `vma_can_userfault` on the model's backing kinds (anonymous, shmem, regular files).
    pub fn can_userfault(&self, a: &Attr, wanted: u64) -> bool {
        let shmem = a.backing != 0 && self.shmem.contains(&a.backing);
        if wanted & VmFlags::UFFD_MINOR.bits() != 0 && !shmem {
            return false;
        }
        a.backing == 0 || shmem
    }

    /// UFFDIO_REGISTER / UNREGISTER against the model.
    pub fn uffd_step(&mut self, op: &Op) {
        match *op {
            Op::Register {
                page,
                n,
                mode,
                which,
            } => {
                let p = wpage(page);
                let c = Arc::clone(&self.ctxs[which]);
                let got = c.register(&self.mm, addr(p), addr(n), mode);
                if !self.model.any_mapped(p, n) {
                    return self.expect(got, MmError::Inval, "register without a VMA");
                }
                let wanted = mode_flags(mode);
                for (_, a) in self.model.pages.range(p..p + n) {
                    if !self.can_userfault(a, wanted) {
                        return self.expect(got, MmError::Inval, "register: cannot userfault");
                    }
                    if a.ctx != 0 && a.ctx != c.id() {
                        return self.expect(got, MmError::Busy, "register: another context");
                    }
                }
                let mut next = self.model.clone();
                for (_, a) in next.pages.range_mut(p..p + n) {
                    if a.ctx == c.id() && a.flags & wanted == wanted {
                        continue;
                    }
                    a.flags = (a.flags & !UFFD_BITS) | wanted;
                    a.ctx = c.id();
                }
                match self.within_limit(&next) {
                    Ok(()) => {
                        got.expect("register");
                        self.model = next;
                    }
                    Err(e) => self.expect(got, e, "register beyond the limit"),
                }
            }
            Op::Unregister { page, n, which } => {
                let p = wpage(page);
                let c = Arc::clone(&self.ctxs[which]);
                let got = c.unregister(&self.mm, addr(p), addr(n));
                if !self.model.any_mapped(p, n) {
                    return self.expect(got, MmError::Inval, "unregister without a VMA");
                }
                for (_, a) in self.model.pages.range(p..p + n) {
                    if a.ctx != 0 && a.ctx != c.id() {
                        return self.expect(got, MmError::Inval, "unregister: another context");
                    }
                    if !self.can_userfault(a, a.flags & UFFD_BITS) {
                        return self.expect(got, MmError::Inval, "unregister: cannot userfault");
                    }
                }
                let mut next = self.model.clone();
                for (_, a) in next.pages.range_mut(p..p + n) {
                    if a.ctx == c.id() {
                        a.flags &= !UFFD_BITS;
                        a.ctx = 0;
                    }
                }
                match self.within_limit(&next) {
                    Ok(()) => {
                        got.expect("unregister");
                        self.model = next;
                    }
                    Err(e) => self.expect(got, e, "unregister beyond the limit"),
                }
            }
            Op::Release { which } => {
                let c = std::mem::replace(&mut self.ctxs[which], new_ctx(&self.mm));
                c.release(Some(&self.mm));
                for a in self.model.pages.values_mut() {
                    if a.ctx == c.id() {
                        a.flags &= !UFFD_BITS;
                        a.ctx = 0;
                    }
                }
            }
            Op::Copy { page, which, byte } => {
                let p = wpage(page);
                let c = Arc::clone(&self.ctxs[which]);
                let got = c.copy(&self.mm, addr(p), &[byte], false);
                match self.model.pages.get(&p) {
                    Some(a) if a.ctx == c.id() => {
                        if let std::collections::btree_map::Entry::Vacant(e) =
                            self.model.data.entry(p)
                        {
                            assert_eq!(got, Ok(1));
                            e.insert(byte);
                        } else {
                            self.expect(got, MmError::Exist, "copy over a populated page");
                        }
                    }
                    _ => self.expect(got, MmError::NoEnt, "copy outside the registration"),
                }
            }
            _ => unreachable!("not a userfaultfd op"),
        }
    }
}

impl World {
    pub fn expect<T: std::fmt::Debug>(&self, got: Result<T, MmError>, want: MmError, what: &str) {
        assert_eq!(got.err(), Some(want), "{what}");
    }

    /// Applies `next` as the model's new state if it respects `max_map_count`; `Err(NoMem)` else.
    pub fn within_limit(&self, next: &Model) -> Result<(), MmError> {
        // The `Mm` checks the VMA count the operation ends with: settle the stuck boundaries
        // first.
        let mut settled = next.clone();
        settled.settle(&self.model.pages);
        if settled.runs() > self.max {
            Err(MmError::NoMem)
        } else {
            Ok(())
        }
    }

    /// Applies `op` to both and updates the model (see the module docs).
    pub fn step(&mut self, op: &Op) {
        let before = self.model.pages.clone();
        self.model.fresh.clear();
        self.model.new_stuck.clear();
        self.step_inner(op);
        if matches!(op, Op::Fork { .. }) {
            // The parent is unchanged; a child's model was settled against the parent's.
            let same = self.model.pages.clone();
            self.model.settle(&same);
        } else {
            self.model.settle(&before);
        }
        self.model.normalise();
    }

    fn step_inner(&mut self, op: &Op) {
        let m = &self.mm;
        match op.clone() {
            Op::Register { .. } | Op::Unregister { .. } | Op::Release { .. } | Op::Copy { .. } => {
                self.uffd_step(op)
            }
            Op::Map {
                page,
                n,
                prot,
                src,
                noreplace,
            } => {
                let p = wpage(page);
                let flags = if noreplace {
                    MapFlags::FIXED_NOREPLACE
                } else {
                    MapFlags::FIXED
                };
                let vm_prot = prot as u64 | VmFlags::MAY_RWX.bits();
                // accountable_mapping: private writable memory is charged.
                let account = if prot & 2 != 0 { ACCOUNT } else { 0 };
                let (mflags, source, attr) = match src {
                    Src::Anon => (
                        MapFlags::PRIVATE,
                        MapSource::Anon,
                        Attr {
                            flags: vm_prot | account,
                            backing: 0,
                            pgoff: p,
                            ctx: 0,
                            anon: 0,
                            forked: false,
                        },
                    ),
                    Src::SharedAnon => (
                        MapFlags::SHARED,
                        MapSource::Anon,
                        Attr {
                            flags: vm_prot | 0x88,
                            backing: u64::MAX,
                            pgoff: 0,
                            ctx: 0,
                            anon: 0,
                            forked: false,
                        },
                    ),
                    Src::File { id, off, shared } => {
                        let f = Arc::clone(&self.files[id as usize]);
                        let extra = if shared { 0x88 } else { account };
                        let mf = if shared {
                            MapFlags::SHARED
                        } else {
                            MapFlags::PRIVATE
                        };
                        (
                            mf,
                            MapSource::File {
                                file: Arc::clone(&f),
                                offset: addr(off),
                            },
                            Attr {
                                flags: vm_prot | extra,
                                backing: f.inode(),
                                pgoff: off,
                                ctx: 0,
                                anon: 0,
                                forked: false,
                            },
                        )
                    }
                };
                let got = m.mmap(
                    addr(p),
                    addr(n),
                    Prot::from_bits(prot),
                    mflags | flags,
                    source,
                );
                if noreplace && self.model.any_mapped(p, n) {
                    return self.expect(got, MmError::Exist, "noreplace over a mapping");
                }
                let mut next = self.model.clone();
                next.unmap(p, n);
                next.fresh.extend(p..p + n);
                let backing = if attr.backing == u64::MAX {
                    // A fresh shmem object: learn its inode from the result (if any).
                    match &got {
                        Ok(a) => match m.vma_lookup(*a).expect("mapped").desc.kind {
                            VmaKind::File(f) => {
                                self.shmem.insert(f.inode());
                                f.inode()
                            }
                            VmaKind::Anon(_) => panic!("shared anonymous memory must be shmem"),
                        },
                        Err(_) => 1 << 62,
                    }
                } else {
                    attr.backing
                };
                for i in 0..n {
                    next.pages.insert(
                        p + i,
                        Attr {
                            backing,
                            pgoff: attr.pgoff + i,
                            ..attr
                        },
                    );
                }
                match self.within_limit(&next) {
                    Ok(()) => {
                        assert_eq!(got, Ok(addr(p)));
                        self.model = next;
                    }
                    Err(e) => self.expect(got, e, "mmap beyond max_map_count"),
                }
            }
            Op::MapHint { page, n, prot } | Op::MapAnywhere { page, n, prot } => {
                let hint = match op {
                    Op::MapHint { .. } => wpage(page),
                    _ => 0,
                };
                let got = m.mmap(
                    addr(hint),
                    addr(n),
                    Prot::from_bits(prot),
                    MapFlags::PRIVATE,
                    MapSource::Anon,
                );
                match got {
                    Ok(a) => {
                        let p = a >> PAGE_SHIFT;
                        assert!(
                            !self.model.any_mapped(p, n),
                            "hinted mmap over a mapping at {a:#x}"
                        );
                        if hint != 0 && !self.model.any_mapped(hint, n) {
                            assert_eq!(p, hint, "a free hint must be taken");
                        } else {
                            let want = self.model.placement(self.mm.config(), n);
                            assert_eq!(Some(p), want, "placement of {n} pages (hint {hint:#x})");
                        }
                        self.model.fresh.extend(p..p + n);
                        for i in 0..n {
                            self.model.pages.insert(
                                p + i,
                                Attr {
                                    flags: prot as u64
                                        | 0x70
                                        | if prot & 2 != 0 { ACCOUNT } else { 0 },
                                    backing: 0,
                                    pgoff: p + i,
                                    ctx: 0,
                                    anon: 0,
                                    forked: false,
                                },
                            );
                        }
                    }
                    Err(e) => {
                        assert_eq!(e, MmError::NoMem);
                        assert!(
                            self.model.runs() + 1 > self.max,
                            "hinted mmap refused below the limit"
                        );
                    }
                }
            }
            Op::Unmap { page, n } => {
                let p = wpage(page);
                let got = m.munmap(addr(p), addr(n));
                let mut next = self.model.clone();
                next.unmap(p, n);
                match self.within_limit(&next) {
                    Ok(()) => {
                        let removed = got.expect("munmap");
                        let pages: u64 = removed
                            .iter()
                            .map(|v| (v.end - v.start) >> PAGE_SHIFT)
                            .sum();
                        assert_eq!(pages as usize, self.model.pages.range(p..p + n).count());
                        assert!(removed
                            .iter()
                            .all(|v| v.start >= addr(p) && v.end <= addr(p + n)));
                        self.model = next;
                    }
                    Err(e) => self.expect(got, e, "munmap split beyond the limit"),
                }
            }
            Op::Protect { page, n, prot } => {
                let p = wpage(page);
                let got = m.mprotect(addr(p), addr(n), Prot::from_bits(prot));
                // do_mprotect_pkey: the VMAs up to the first hole change, then ENOMEM.
                let stop = (p..p + n)
                    .find(|q| !self.model.pages.contains_key(q))
                    .unwrap_or(p + n);
                let mut next = self.model.clone();
                for (_, a) in next.pages.range_mut(p..stop) {
                    let old = a.flags;
                    let mut f = (old & !7) | prot as u64;
                    if f == old {
                        continue; // mprotect_fixup: nothing changes, nothing is uncharged
                    }
                    let no_charge =
                        ACCOUNT | 2 | VmFlags::HUGETLB.bits() | 8 | VmFlags::NORESERVE.bits();
                    if f & 2 != 0 {
                        if old & no_charge == 0 {
                            f |= ACCOUNT;
                        }
                    } else if old & ACCOUNT != 0 && a.backing == 0 && a.anon == 0 {
                        f &= !ACCOUNT;
                    }
                    a.flags = f;
                }
                match self.within_limit(&next) {
                    Ok(()) if stop < p + n => {
                        self.expect(got, MmError::NoMem, "mprotect over a hole");
                        self.model = next;
                    }
                    Ok(()) => {
                        got.expect("mprotect");
                        self.model = next;
                    }
                    Err(e) => self.expect(got, e, "mprotect beyond the limit"),
                }
            }
            Op::Advise { page, n, advice } => {
                let p = wpage(page);
                let advice = [
                    Advice::DontNeed,
                    Advice::DontFork,
                    Advice::DoFork,
                    Advice::WipeOnFork,
                    Advice::KeepOnFork,
                ][advice as usize];
                let got = m.madvise(addr(p), addr(n), advice);
                // madvise_walk_vmas: holes are skipped (ENOMEM at the end); WIPEONFORK stops at
                // the first file page (EINVAL), the pages before it advised.
                let holes = !self.model.all_mapped(p, n);
                let stop = match advice {
                    Advice::WipeOnFork => self
                        .model
                        .pages
                        .range(p..p + n)
                        .find(|(_, a)| a.backing != 0)
                        .map(|(&k, _)| k),
                    _ => None,
                };
                let want = if stop.is_some() {
                    Err(MmError::Inval)
                } else if holes {
                    Err(MmError::NoMem)
                } else {
                    Ok(())
                };
                let stop = stop.unwrap_or(p + n);
                let mut next = self.model.clone();
                let (set, clear) = match advice {
                    Advice::DontNeed => {
                        assert_eq!(got, want, "dontneed");
                        let keys: Vec<u64> =
                            self.model.data.range(p..stop).map(|(&k, _)| k).collect();
                        for k in keys {
                            self.model.data.remove(&k);
                        }
                        return;
                    }
                    Advice::DontFork => (VmFlags::DONTCOPY.bits(), 0),
                    Advice::DoFork => (0, VmFlags::DONTCOPY.bits()),
                    Advice::WipeOnFork => (VmFlags::WIPEONFORK.bits(), 0),
                    Advice::KeepOnFork => (0, VmFlags::WIPEONFORK.bits()),
                };
                for (_, a) in next.pages.range_mut(p..stop) {
                    a.flags = (a.flags & !clear) | set;
                }
                match self.within_limit(&next) {
                    Ok(()) => {
                        assert_eq!(got, want, "madvise");
                        self.model = next;
                    }
                    Err(e) => self.expect(got, e, "madvise beyond the limit"),
                }
            }
            Op::Remap {
                page,
                old,
                new,
                how,
                to,
            } => self.remap(wpage(page), old, new, how, wpage(to)),
            Op::Lookup { page, n } => self.lookup(wpage(page), n),
            Op::Write { page, byte } => {
                let p = wpage(page);
                let got = m.write_bytes(addr(p), &[byte]);
                match self.model.pages.get(&p) {
                    Some(a)
                        if a.flags & 2 != 0
                            && a.flags & VmFlags::UFFD_MISSING.bits() != 0
                            && !self.model.data.contains_key(&p) =>
                    {
                        // The contexts have UFFD_FEATURE_SIGBUS: the fault fails at once.
                        self.expect(got, MmError::Fault, "missing fault with SIGBUS")
                    }
                    Some(a) if a.flags & 2 != 0 => {
                        got.expect("write");
                        self.model.data.insert(p, byte);
                        if a.flags & 0x80 == 0 && a.anon == 0 {
                            self.learn_anon_vma(p);
                        }
                    }
                    _ => self.expect(got, MmError::Fault, "write to an unwritable page"),
                }
            }
            Op::Fork {
                dup,
                keep_child,
                seed,
            } => {
                let mode = if dup { DupMode::Dup } else { DupMode::Append };
                let mut hook = DupUffd::new(seed, CostSetting::Faithful);
                let child = m.fork_with(mode, &mut hook).expect("fork");
                let mut cm = self.model.clone();
                // (b): contexts without EVENT_FORK do not follow the child.
                for a in cm.pages.values_mut() {
                    a.flags &= !UFFD_BITS;
                    a.ctx = 0;
                }
                let gone: Vec<u64> = cm
                    .pages
                    .iter()
                    .filter(|(_, a)| a.flags & VmFlags::DONTCOPY.bits() != 0)
                    .map(|(&k, _)| k)
                    .collect();
                for k in gone {
                    cm.pages.remove(&k);
                    cm.data.remove(&k);
                }
                let wiped: Vec<u64> = cm
                    .pages
                    .iter()
                    .filter(|(_, a)| a.flags & VmFlags::WIPEONFORK.bits() != 0)
                    .map(|(&k, _)| k)
                    .collect();
                for k in wiped {
                    cm.data.remove(&k);
                }
                // The child is the parent minus DONTCOPY, VMA by VMA.
                let parent_vmas: Vec<_> = m
                    .snapshot()
                    .into_iter()
                    .filter(|v| !v.desc.flags.contains(VmFlags::DONTCOPY))
                    .collect();
                let child_vmas = child.snapshot();
                assert_eq!(parent_vmas.len(), child_vmas.len());
                for (a, b) in parent_vmas.iter().zip(&child_vmas) {
                    assert_eq!(
                        (a.start, a.end, a.desc.pgoff),
                        (b.start, b.end, b.desc.pgoff)
                    );
                    assert_eq!(a.desc.flags.without(VmFlags::UFFD_FLAGS), b.desc.flags);
                    assert!(b.desc.uffd.is_none());
                    assert!(a.desc.kind.same(&b.desc.kind));
                    if a.desc.uffd.is_none() {
                        assert!(a.same_as(b), "{a:?} vs {b:?}");
                    }
                }
                // anon_vma_fork: a fresh anon_vma per child VMA whose parent VMA had one,
                // none for WIPEONFORK.
                let mut ids = BTreeSet::new();
                for v in &child_vmas {
                    let s = v.start >> PAGE_SHIFT;
                    let parent = self.model.pages[&s];
                    let want = parent.anon != 0 && parent.flags & VmFlags::WIPEONFORK.bits() == 0;
                    assert_eq!(v.desc.anon_vma.is_some(), want, "child anon_vma of {v:?}");
                    if let Some(x) = v.desc.anon_vma {
                        assert!(
                            x.forked && ids.insert(x.id),
                            "a fresh anon_vma per child VMA"
                        );
                    }
                    for q in s..v.end >> PAGE_SHIFT {
                        if let Some(a) = cm.pages.get_mut(&q) {
                            a.anon = v.desc.anon_vma.map_or(0, |x| x.id);
                            a.forked = v.desc.anon_vma.is_some();
                        }
                    }
                }
                // Fork never merges: where dup_userfaultfd dropped a context the child keeps
                // the parent's VMA boundaries (stuck where the pages are now compatible).
                cm.stuck = self.model.run_list().iter().map(|r| r.0).collect();
                let same = cm.pages.clone();
                cm.settle(&same);
                check(&child, &cm, self.max);
                if keep_child {
                    let parent = std::mem::replace(&mut self.mm, child);
                    let runs = self.model.runs();
                    self.model = cm;
                    assert_eq!(parent.exit(), runs, "exit of the parent");
                    let mm = &self.mm;
                    self.ctxs = (0..2).map(|_| new_ctx(mm)).collect();
                } else {
                    // The parent is untouched by the child's teardown.
                    let count = child.map_count();
                    assert_eq!(child.exit(), count, "exit of the child");
                }
            }
        }
    }

    /// The VMA lookups at page `p` (and over `[p, p + n)`) against the model's runs.
    pub fn lookup(&mut self, p: u64, n: u64) {
        let m = &self.mm;
        let span = |v: &Vma| (v.start() >> PAGE_SHIFT, v.end() >> PAGE_SHIFT);
        let here = self.model.run_of(p);
        let next = self
            .model
            .pages
            .range(p..)
            .next()
            .and_then(|(&q, _)| self.model.run_of(q));
        let prev = self
            .model
            .pages
            .range(..p)
            .next_back()
            .and_then(|(&q, _)| self.model.run_of(q));
        let snap = |v: VmaSnapshot| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT);
        assert_eq!(m.vma_lookup(addr(p)).map(snap), here, "vma_lookup");
        assert_eq!(m.find_vma(addr(p)).map(snap), next, "find_vma");
        {
            let r = m.read();
            let (n_vma, p_vma) = r.find_vma_prev(addr(p));
            // find_vma_prev: the VMA at or after p, and the one before that.
            let before = match next {
                Some((s, _)) => self
                    .model
                    .pages
                    .range(..s)
                    .next_back()
                    .and_then(|(&q, _)| self.model.run_of(q)),
                None => prev.or(here),
            };
            assert_eq!(
                (n_vma.map(span), p_vma.map(span)),
                (next, before),
                "find_vma_prev"
            );
            let got: Vec<_> = r.vmas_in(addr(p), addr(p + n)).map(span).collect();
            let mut want = Vec::new();
            let mut q = p;
            while q < p + n {
                let Some((&k, _)) = self.model.pages.range(q..p + n).next() else {
                    break;
                };
                let run = self.model.run_of(k).expect("mapped");
                want.push(run);
                q = run.1;
            }
            assert_eq!(got, want, "vmas_in");
            assert_eq!(r.vmas().count(), self.model.runs(), "vmas");
        }
        {
            let guard = m.pin();
            let got = match m.lock_vma_under_rcu(addr(p), &guard) {
                Ok(v) => Ok(span(&v)),
                Err(e) => Err(e),
            };
            match got {
                Ok(s) => assert_eq!(Some(s), here, "lock_vma_under_rcu"),
                Err(e) => {
                    assert_eq!(e, VmaLockMiss::NoVma, "lock-free lookup missed");
                    assert_eq!(here, None, "lock_vma_under_rcu");
                }
            }
        }
        let before = m.lookup_stats();
        let got = m.with_vma(addr(p), |v| v.map(span));
        assert_eq!(got, here, "with_vma");
        let after = m.lookup_stats();
        if here.is_some() {
            assert_eq!(
                after.lockless,
                before.lockless + 1,
                "with_vma went lock-free"
            );
        } else {
            assert_eq!(after.fallback, before.fallback + 1, "with_vma fell back");
        }
    }

    /// Learns the `anon_vma` the `Mm` gave the run of page `p` on its first private write,
    /// checking the model's prediction (`find_mergeable_anon_vma`: the next run's, then the
    /// previous run's, if the two runs differ only in protection and that `anon_vma` is not a
    /// fork child's; else a new one).
    pub fn learn_anon_vma(&mut self, p: u64) {
        let (s, e) = self.model.run_of(p).expect("mapped");
        let first = self.model.pages[&s];
        let last = self.model.pages[&(e - 1)];
        let compat = |a: &Attr, b: &Attr| {
            (a.flags ^ b.flags) & !7 == 0 && a.backing == b.backing && a.pgoff + 1 == b.pgoff
        };
        let mut want = None;
        if let Some(nb) = self.model.pages.get(&e) {
            if compat(&last, nb) && nb.anon != 0 && !nb.forked {
                want = Some(nb.anon);
            }
        }
        if want.is_none() && s > 0 {
            if let Some(pb) = self.model.pages.get(&(s - 1)) {
                if compat(pb, &first) && pb.anon != 0 && !pb.forked {
                    want = Some(pb.anon);
                }
            }
        }
        let got = self
            .mm
            .vma_lookup(addr(p))
            .and_then(|v| v.desc.anon_vma)
            .expect("an anon_vma after a private write");
        assert!(!got.forked);
        match want {
            Some(id) => assert_eq!(got.id, id, "anon_vma reused from a neighbour"),
            None => assert!(
                self.model.pages.values().all(|a| a.anon != got.id),
                "a new anon_vma"
            ),
        }
        for (_, a) in self.model.pages.range_mut(s..e) {
            a.anon = got.id;
            a.forked = false;
        }
    }

    /// `move_vma` of pages `[p, p + old)` (one run) to `[dest, dest + new)` in the model, with
    /// the `Mm`'s limits: `Err` leaves `self.model` at the state the `Mm` is left in.
    fn move_pages(&mut self, p: u64, old: u64, new: u64, dest: u64) -> Result<(), MmError> {
        if self.model.runs() + 3 > self.max {
            return Err(MmError::NoMem);
        }
        let base = self.model.pages[&p];
        let mut next = self.model.clone();
        // copy_vma: a never-written anonymous VMA takes the offset of its new address.
        let pgoff = if base.backing == 0 && base.anon == 0 {
            dest
        } else {
            base.pgoff
        };
        for i in 0..new {
            next.pages.insert(
                dest + i,
                Attr {
                    pgoff: pgoff + i,
                    ..base
                },
            );
        }
        // copy_vma: the new VMA tries its neighbours (with the old VMA's context).
        next.fresh.extend(dest..dest + new);
        for q in dest..=dest + new {
            next.stuck.remove(&q);
        }
        self.within_limit(&next)?;
        next.normalise();
        // Without EVENT_REMAP the new VMA — merged with its neighbours by then — loses its
        // registration (mremap_userfaultfd_prep), and tries no merge after that: its ends
        // stay VMA boundaries even where the neighbour is now compatible.
        if base.ctx != 0 {
            let (s, e) = next.run_of(dest).expect("moved");
            for (_, a) in next.pages.range_mut(s..e) {
                a.flags &= !UFFD_BITS;
                a.ctx = 0;
            }
            next.new_stuck.insert(s);
            next.new_stuck.insert(e);
        }
        let moved: Vec<(u64, u8)> = self
            .model
            .data
            .range(p..p + old.min(new))
            .map(|(&k, &v)| (k, v))
            .collect();
        let keys: Vec<u64> = next.data.range(p..p + old).map(|(&k, _)| k).collect();
        for k in keys {
            next.data.remove(&k);
        }
        for (k, v) in moved {
            next.data.insert(k - p + dest, v);
        }
        self.model = next.clone();
        next.unmap(p, old);
        self.within_limit(&next)?;
        self.model = next;
        Ok(())
    }

    /// munmap in the model with the `Mm`'s limit.
    fn unmap_pages(&mut self, p: u64, n: u64) -> Result<(), MmError> {
        let mut next = self.model.clone();
        next.unmap(p, n);
        self.within_limit(&next)?;
        self.model = next;
        Ok(())
    }

    /// `mremap_to`: unmap the destination, shrink, move.
    fn remap_to(&mut self, p: u64, old: u64, new: u64, to: u64) -> Result<u64, MmError> {
        self.unmap_pages(to, new)?;
        let mut old = old;
        if new < old {
            self.unmap_pages(p + new, old - new)?;
            old = new;
        }
        self.move_pages(p, old, new, to)?;
        Ok(to)
    }

    pub fn remap(&mut self, p: u64, old: u64, new: u64, how: u8, to: u64) {
        let flags = match how {
            0 => MremapFlags::NONE,
            1 => MremapFlags::MAYMOVE,
            _ => MremapFlags::MAYMOVE | MremapFlags::FIXED,
        };
        let got = self
            .mm
            .mremap(addr(p), addr(old), addr(new), flags, addr(to));
        let fixed = how == 2;
        if fixed && to < p + old && p < to + new {
            return self.expect(got, MmError::Inval, "overlapping fixed mremap");
        }
        let got = got.map(|a| a >> PAGE_SHIFT);
        if fixed && old == new {
            // remap_move: every run of the range, the gaps between them kept; a registered run
            // only alone.
            let mut res = Err(MmError::Fault);
            let (mut seen, mut allowed, mut target, mut last_end) = (false, true, to, 0);
            let mut pos = p;
            while pos < p + old {
                let Some((&q, _)) = self.model.pages.range(pos..p + old).next() else {
                    break;
                };
                let (rs, re) = self.model.run_of(q).expect("mapped");
                let a = rs.max(p);
                let l = re.min(p + old) - a;
                if !allowed || (!seen && p < rs) {
                    res = Err(MmError::Fault);
                    break;
                }
                let offset = if seen { rs - last_end } else { 0 };
                last_end = re;
                allowed = self.model.pages[&q].ctx == 0;
                if !allowed && (seen || re < p + old) {
                    res = Err(MmError::Fault);
                    break;
                }
                match self.remap_to(a, l, l, target + offset) {
                    Ok(r) => {
                        if !seen {
                            res = Ok(r);
                        }
                        seen = true;
                        target = r + l;
                    }
                    Err(e) => {
                        res = Err(e);
                        break;
                    }
                }
                pos = re.min(p + old);
            }
            assert_eq!(got, res, "remap_move");
            return;
        }
        let Some((_, re)) = self.model.run_of(p) else {
            return self.expect(got, MmError::Fault, "mremap of a hole");
        };
        if (fixed || new > old) && old.min(new) > re - p {
            return self.expect(got, MmError::Fault, "mremap across VMAs");
        }
        if !fixed && new == old {
            return assert_eq!(got, Ok(p));
        }
        if !fixed && new < old {
            let r = self.unmap_pages(p + new, old - new).map(|_| p);
            return assert_eq!(got, r, "mremap shrink");
        }
        if !fixed && p + old == re && !self.model.any_mapped(re, p + new - re) {
            let last = self.model.pages[&(re - 1)];
            let mut next = self.model.clone();
            for i in 0..(p + new - re) {
                next.pages.insert(
                    re + i,
                    Attr {
                        pgoff: last.pgoff + 1 + i,
                        ..last
                    },
                );
            }
            // vma_merge_extend: the grown VMA tries the one after it.
            next.fresh.extend(re..p + new);
            match self.within_limit(&next) {
                Ok(()) => {
                    assert_eq!(got, Ok(p));
                    self.model = next;
                }
                Err(e) => self.expect(got, e, "mremap grow beyond the limit"),
            }
            return;
        }
        if how == 0 {
            return self.expect(got, MmError::NoMem, "mremap cannot grow in place");
        }
        if fixed {
            let r = self.remap_to(p, old, new, to);
            return assert_eq!(got, r, "mremap fixed");
        }
        // A may-move grow: the destination is the Mm's choice; it must have been free.
        if self.model.runs() + 3 > self.max {
            return self.expect(got, MmError::NoMem, "move_vma near the limit");
        }
        let dest = got.expect("mremap move");
        assert!(
            !self.model.any_mapped(dest, new),
            "mremap moved onto a mapping"
        );
        let r = self.move_pages(p, old, new, dest);
        assert_eq!(r, Ok(()), "mremap move");
    }
}

pub fn check(mm: &Mm, model: &Model, max: usize) {
    check_with(mm, model, max, true)
}

pub fn check_with(mm: &Mm, model: &Model, max: usize, maximal: bool) {
    mm.validate().unwrap();
    let mut pages = BTreeMap::new();
    for v in mm.snapshot() {
        let backing = match &v.desc.kind {
            VmaKind::Anon(_) => 0,
            VmaKind::File(f) => f.inode(),
        };
        for i in 0..(v.end - v.start) >> PAGE_SHIFT {
            pages.insert(
                (v.start >> PAGE_SHIFT) + i,
                Attr {
                    flags: v.desc.flags.bits(),
                    backing,
                    pgoff: v.desc.pgoff + i,
                    ctx: v.desc.uffd.as_ref().map_or(0, |c| c.id()),
                    anon: v.desc.anon_vma.map_or(0, |a| a.id),
                    forked: v.desc.anon_vma.is_some_and(|a| a.forked),
                },
            );
        }
    }
    assert_eq!(pages, model.pages);
    if maximal {
        assert_eq!(
            mm.map_count(),
            model.runs(),
            "VMAs are not the maximal runs:\n{}",
            mm.render_maps()
        );
    }
    assert!(mm.map_count() <= max);
    assert_eq!(mm.resident_pages(), model.data.len());
    for (&p, &b) in &model.data {
        assert!(mm.is_populated(addr(p)));
        if model.pages[&p].flags & 1 != 0 {
            let mut buf = [0u8];
            mm.read_bytes(addr(p), &mut buf).unwrap();
            assert_eq!(buf[0], b, "page {p:#x}");
        }
    }
}
