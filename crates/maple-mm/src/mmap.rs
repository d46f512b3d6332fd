//! The writers: mmap, munmap, mprotect, madvise, mremap, and the split/merge engine they share;
//! plus `get_unmapped_area` (`mm/mmap.c`, `mm/vma.c`).
//!
//! Every change to the VMAs of a range goes through one engine, in two phases:
//!
//! 1. **plan** (nothing changes yet): gather the VMAs that intersect the range and the two
//!    neighbours that touch it; cut the first and last at the range ends; transform the pieces
//!    inside (keep, remove, new attributes) or fill the whole range with a new mapping; merge
//!    adjacent compatible pieces where at least one of the two changed (two untouched VMAs are
//!    never merged, as in the kernel); match the result against the old VMAs (same bounds: reuse,
//!    updating flags in place if needed; otherwise a new `Vma`). The new map count is known here,
//!    so `max_map_count` is checked before anything is touched.
//! 2. **commit**: write-lock every VMA that goes away or changes (`vma_start_write`) and mark the
//!    leaving ones detached; then write the tree in address order in RCU mode — one store per new
//!    VMA and one NULL store per hole that had VMAs in it (munmap's single spanning empty store).
//!    Each index goes from its old entry to its new one in one store, so lock-free readers see
//!    one or the other; new VMAs are born write-locked, so lock-free lookups of them fall back to
//!    the mmap lock until the writer is done.

use crate::sync::{Arc, IdCounter};
use core::fmt;
use core::ops::BitOr;

use maple_tree::Guard;

use super::vma::same_ctx;
use super::{
    is_page_aligned, page_align, FileKind, MappedFile, Mm, MmError, MmWriteGuard, VmFlags, Vma,
    VmaDesc, VmaKind, VmaSnapshot, PAGE_SHIFT, PAGE_SIZE,
};
use crate::uffd::ctx::{feature, UffdCtx, UffdMsg};

/// Inode numbers of the shmem objects behind shared anonymous mappings.
static SHMEM_INO: IdCounter = IdCounter::new(1);

/// Memory protection (`PROT_*`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Prot(u32);

impl Prot {
    /// `PROT_NONE`.
    pub const NONE: Prot = Prot(0);
    /// `PROT_READ`.
    pub const READ: Prot = Prot(1);
    /// `PROT_WRITE`.
    pub const WRITE: Prot = Prot(2);
    /// `PROT_EXEC`.
    pub const EXEC: Prot = Prot(4);

    /// Raw bits (any bits; unknown ones are refused with `EINVAL` by the calls).
    pub const fn from_bits(bits: u32) -> Self {
        Prot(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The `VM_READ | VM_WRITE | VM_EXEC` bits (`calc_vm_prot_bits`), or `EINVAL` for unknown bits.
    pub fn vm_flags(self) -> Result<VmFlags, MmError> {
        if self.0 & !7 != 0 {
            return Err(MmError::Inval);
        }
        Ok(VmFlags::from_bits(self.0 as u64))
    }
}

impl BitOr for Prot {
    type Output = Prot;
    fn bitor(self, rhs: Prot) -> Prot {
        Prot(self.0 | rhs.0)
    }
}

impl fmt::Debug for Prot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = if self.0 & 1 != 0 { 'r' } else { '-' };
        let w = if self.0 & 2 != 0 { 'w' } else { '-' };
        let x = if self.0 & 4 != 0 { 'x' } else { '-' };
        write!(f, "Prot({r}{w}{x}")?;
        if self.0 & !7 != 0 {
            write!(f, "+{:#x}", self.0 & !7)?;
        }
        f.write_str(")")
    }
}

/// mmap flags (`MAP_*`, Linux values).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct MapFlags(u32);

impl MapFlags {
    /// `MAP_SHARED`.
    pub const SHARED: MapFlags = MapFlags(0x01);
    /// `MAP_PRIVATE`.
    pub const PRIVATE: MapFlags = MapFlags(0x02);
    /// `MAP_SHARED_VALIDATE` (treated as `MAP_SHARED`; unknown bits are refused anyway).
    pub const SHARED_VALIDATE: MapFlags = MapFlags(0x03);
    /// `MAP_FIXED`: exactly at `addr`, replacing what is there.
    pub const FIXED: MapFlags = MapFlags(0x10);
    /// `MAP_ANONYMOUS`: informational here; the [`MapSource`] decides the backing.
    pub const ANONYMOUS: MapFlags = MapFlags(0x20);
    /// `MAP_GROWSDOWN`: a stack (`VM_GROWSDOWN`; anonymous only).
    pub const GROWSDOWN: MapFlags = MapFlags(0x100);
    /// `MAP_LOCKED` (`VM_LOCKED`).
    pub const LOCKED: MapFlags = MapFlags(0x2000);
    /// `MAP_NORESERVE` (`VM_NORESERVE`).
    pub const NORESERVE: MapFlags = MapFlags(0x4000);
    /// `MAP_POPULATE`: accepted and ignored.
    pub const POPULATE: MapFlags = MapFlags(0x8000);
    /// `MAP_FIXED_NOREPLACE`: exactly at `addr`, `EEXIST` if anything is mapped there.
    pub const FIXED_NOREPLACE: MapFlags = MapFlags(0x100000);

    const KNOWN: u32 = 0x03 | 0x10 | 0x20 | 0x100 | 0x2000 | 0x4000 | 0x8000 | 0x100000;

    /// Raw bits (any bits; unknown ones are refused with `EINVAL`).
    pub const fn from_bits(bits: u32) -> Self {
        MapFlags(bits)
    }

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: MapFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for MapFlags {
    type Output = MapFlags;
    fn bitor(self, rhs: MapFlags) -> MapFlags {
        MapFlags(self.0 | rhs.0)
    }
}

/// What a new mapping maps.
#[derive(Clone, Debug)]
pub enum MapSource {
    /// Anonymous memory (shared anonymous memory gets a fresh shmem object).
    Anon,
    /// A file at a byte offset (page aligned).
    File {
        /// The open file.
        file: Arc<MappedFile>,
        /// Byte offset of the mapping's first page in the file.
        offset: u64,
    },
}

/// mremap flags (`MREMAP_*`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct MremapFlags(u32);

impl MremapFlags {
    /// No flags: resize in place only.
    pub const NONE: MremapFlags = MremapFlags(0);
    /// `MREMAP_MAYMOVE`.
    pub const MAYMOVE: MremapFlags = MremapFlags(1);
    /// `MREMAP_FIXED` (needs `MAYMOVE`).
    pub const FIXED: MremapFlags = MremapFlags(2);

    /// Raw bits (unknown ones, `MREMAP_DONTUNMAP` included, are refused with `EINVAL`).
    pub const fn from_bits(bits: u32) -> Self {
        MremapFlags(bits)
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: MremapFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for MremapFlags {
    type Output = MremapFlags;
    fn bitor(self, rhs: MremapFlags) -> MremapFlags {
        MremapFlags(self.0 | rhs.0)
    }
}

/// madvise advice that this model implements.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Advice {
    /// `MADV_DONTNEED`: drop the pages (they read as zeros afterwards).
    DontNeed,
    /// `MADV_DONTFORK`: set `VM_DONTCOPY`.
    DontFork,
    /// `MADV_DOFORK`: clear `VM_DONTCOPY`.
    DoFork,
    /// `MADV_WIPEONFORK`: set `VM_WIPEONFORK` (private anonymous memory only, else `EINVAL`).
    WipeOnFork,
    /// `MADV_KEEPONFORK`: clear `VM_WIPEONFORK`.
    KeepOnFork,
}

/// The request of `vm_unmapped_area` (`struct vm_unmapped_area_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnmappedAreaInfo {
    /// Bytes needed.
    pub length: u64,
    /// Lowest acceptable address (raised to `mmap_min_addr`).
    pub low_limit: u64,
    /// One past the highest acceptable end.
    pub high_limit: u64,
    /// The start must satisfy `(start - align_offset) & align_mask == 0`.
    pub align_mask: u64,
    /// See `align_mask`.
    pub align_offset: u64,
    /// Extra room kept free below the mapping (bottom-up only, as the kernel).
    pub start_gap: u64,
    /// Search from the top (`VM_UNMAPPED_AREA_TOPDOWN`).
    pub topdown: bool,
}

/// What happens to the piece of an existing VMA inside a modified range.
pub(crate) enum Change {
    /// Left as it is.
    Keep,
    /// Unmapped.
    Remove,
    /// Given these attributes (`pgoff` as for the whole old VMA; the engine adjusts it).
    Set(VmaDesc),
}

/// A piece of the result of a plan.
#[derive(Clone)]
struct Seg {
    start: u64,
    end: u64,
    desc: VmaDesc,
    /// Whether the last piece that went into this segment is one the operation changed (a
    /// merged segment stays "changed" only at its changed end: untouched VMAs never merge).
    touched: bool,
}

enum Act {
    /// An old VMA stays as it is.
    Keep,
    /// An old VMA keeps its bounds and gets new flags / context in place.
    Update(usize, VmaDesc),
    /// A new VMA.
    New(Seg),
}

/// A computed change of the VMAs in `[lo, hi)`; nothing has been written yet.
pub(crate) struct Plan<'g> {
    lo: u64,
    hi: u64,
    old: Vec<&'g Vma>,
    reused: Vec<bool>,
    acts: Vec<(u64, u64, Act)>,
    removed: Vec<VmaSnapshot>,
    created: usize,
    dropped: usize,
}

impl Plan<'_> {
    /// Whether anything changes.
    fn is_noop(&self) -> bool {
        self.created == 0
            && self.dropped == 0
            && !self
                .acts
                .iter()
                .any(|(_, _, a)| matches!(a, Act::Update(..)))
    }
}

/// Phase 1: see the module docs. `fill` replaces all of `[lo, hi)`; otherwise `f` decides per VMA.
pub(crate) fn plan<'g>(
    mm: &'g Mm,
    g: &'g Guard,
    lo: u64,
    hi: u64,
    fill: Option<VmaDesc>,
    mut f: impl FnMut(&Vma) -> Change,
) -> Plan<'g> {
    debug_assert!(lo < hi && is_page_aligned(lo) && is_page_aligned(hi));
    let tree = &mm.tree;
    let mut old: Vec<&'g Vma> = Vec::new();
    let mut segs: Vec<Seg> = Vec::new();
    let mut removed = Vec::new();

    if lo > 0 {
        if let Some(p) = tree.load(lo - 1, g) {
            if p.end() == lo {
                old.push(p);
                segs.push(Seg {
                    start: p.start(),
                    end: p.end(),
                    desc: p.desc(),
                    touched: false,
                });
            }
        }
    }
    let mut tail: Option<Seg> = None;
    let mut middles: Vec<Seg> = Vec::new();
    for (_, v) in tree.range(lo..hi, g) {
        let v: &'g Vma = v;
        old.push(v);
        let vd = v.desc();
        let set = match if fill.is_some() { Change::Remove } else { f(v) } {
            Change::Keep => {
                // Left whole: not split at the range ends.
                middles.push(Seg {
                    start: v.start(),
                    end: v.end(),
                    desc: vd,
                    touched: false,
                });
                continue;
            }
            Change::Remove => None,
            Change::Set(d) => Some(d),
        };
        if v.start() < lo {
            segs.push(Seg {
                start: v.start(),
                end: lo,
                desc: vd.clone(),
                touched: false,
            });
        }
        let (a, b) = (v.start().max(lo), v.end().min(hi));
        let piece = |d: &VmaDesc| d.advanced(a - v.start());
        match set {
            None => removed.push(VmaSnapshot {
                start: a,
                end: b,
                desc: piece(&vd),
            }),
            Some(d) => middles.push(Seg {
                start: a,
                end: b,
                desc: piece(&d),
                touched: true,
            }),
        }
        if v.end() > hi {
            tail = Some(Seg {
                start: hi,
                end: v.end(),
                desc: vd.advanced(hi - v.start()),
                touched: false,
            });
        }
    }
    match fill {
        Some(d) => segs.push(Seg {
            start: lo,
            end: hi,
            desc: d,
            touched: true,
        }),
        None => segs.extend(middles),
    }
    segs.extend(tail);
    if let Some(n) = tree.load(hi, g) {
        if n.start() == hi {
            old.push(n);
            segs.push(Seg {
                start: n.start(),
                end: n.end(),
                desc: n.desc(),
                touched: false,
            });
        }
    }

    // Merge adjacent compatible pieces where at least one changed.
    let mut merged: Vec<Seg> = Vec::with_capacity(segs.len());
    for s in segs {
        if let Some(l) = merged.last_mut() {
            if l.end == s.start
                && (l.touched || s.touched)
                && l.desc
                    .can_merge_with((l.end - l.start) >> PAGE_SHIFT, &s.desc)
            {
                // vma_merge_existing_range / vma_merge_new_range: the changed piece merges with
                // the neighbour it touches, never further (commit the merged VMA and stop).
                l.end = s.end;
                l.touched = s.touched;
                l.desc.anon_vma = l.desc.anon_vma.or(s.desc.anon_vma);
                continue;
            }
        }
        merged.push(s);
    }

    // Match against the old VMAs: same bounds and backing → reuse.
    let mut reused = vec![false; old.len()];
    let mut acts = Vec::with_capacity(merged.len());
    let mut created = 0;
    let mut j = 0;
    for s in merged {
        while j < old.len() && old[j].start() < s.start {
            j += 1;
        }
        let same = j < old.len()
            && old[j].start() == s.start
            && old[j].end() == s.end
            && old[j].pgoff() == s.desc.pgoff
            && old[j].kind().same(&s.desc.kind);
        let act = if same {
            reused[j] = true;
            let v = old[j];
            if v.flags() == s.desc.flags
                && same_ctx(&v.uffd(), &s.desc.uffd)
                && v.anon_vma() == s.desc.anon_vma
            {
                Act::Keep
            } else {
                Act::Update(j, s.desc.clone())
            }
        } else {
            created += 1;
            Act::New(s.clone())
        };
        acts.push((s.start, s.end, act));
    }
    let dropped = reused.iter().filter(|r| !**r).count();
    let lo = old.first().map_or(lo, |v| v.start().min(lo));
    let hi = old.last().map_or(hi, |v| v.end().max(hi));
    Plan {
        lo,
        hi,
        old,
        reused,
        acts,
        removed,
        created,
        dropped,
    }
}

/// Phase 2: see the module docs. Returns the removed pieces.
pub(crate) fn commit(mm: &Mm, plan: Plan<'_>) -> Vec<VmaSnapshot> {
    if plan.is_noop() {
        return plan.removed;
    }
    let locks = &mm.locks;
    for (i, v) in plan.old.iter().enumerate() {
        if !plan.reused[i] {
            v.start_write(locks);
            v.mark_detached();
        }
    }
    for (_, _, act) in &plan.acts {
        if let Act::Update(i, d) = act {
            let v = plan.old[*i];
            v.start_write(locks);
            v.set_flags(d.flags);
            v.set_uffd(d.uffd.clone());
            v.set_anon_vma(d.anon_vma);
        }
    }
    let seq = locks.seq();
    let old = &plan.old;
    let reused = &plan.reused;
    // Whether a VMA that is going away intersects [a, b); `k` sweeps forwards.
    let mut k = 0;
    let mut leaving_in = |a: u64, b: u64| -> bool {
        while k < old.len() && old[k].end() <= a {
            k += 1;
        }
        let mut i = k;
        while i < old.len() && old[i].start() < b {
            if !reused[i] {
                return true;
            }
            i += 1;
        }
        false
    };
    let mut w = mm.tree.lock();
    let mut pos = plan.lo;
    for (s, e, act) in plan.acts {
        if pos < s && leaving_in(pos, s) {
            let r = w.erase_range(pos..s);
            debug_assert!(r.is_ok());
        }
        if let Act::New(seg) = act {
            let vma = Arc::new(Vma::new(s, e, seg.desc, seq));
            let r = w.store_range(s..e, vma);
            debug_assert!(r.is_ok());
        }
        pos = e;
    }
    if pos < plan.hi && leaving_in(pos, plan.hi) {
        let r = w.erase_range(pos..plan.hi);
        debug_assert!(r.is_ok());
    }
    plan.removed
}

/// `vm_start_gap`: a stack's start minus its guard gap.
fn vm_start_gap(mm: &Mm, v: &Vma) -> u64 {
    if v.flags().contains(VmFlags::GROWSDOWN) {
        v.start().saturating_sub(mm.cfg.stack_guard_gap)
    } else {
        v.start()
    }
}

/// `vm_end_gap` (no `VM_GROWSUP` on this architecture).
fn vm_end_gap(v: &Vma) -> u64 {
    v.end()
}

impl MmWriteGuard<'_> {
    /// Runs the engine over `[lo, hi)` and checks `max_map_count`; the `Mm` is unchanged on error.
    pub(crate) fn apply(
        &mut self,
        lo: u64,
        hi: u64,
        fill: Option<VmaDesc>,
        f: impl FnMut(&Vma) -> Change,
    ) -> Result<Vec<VmaSnapshot>, MmError> {
        let mm = self.mm;
        let p = plan(mm, &self.guard, lo, hi, fill, f);
        let count = self.state.map_count + p.created - p.dropped;
        if count > mm.cfg.max_map_count {
            return Err(MmError::NoMem);
        }
        let removed = commit(mm, p);
        self.state.map_count = count;
        Ok(removed)
    }

    /// `vm_unmapped_area`: the kernel's placement search over the gap-tracking tree
    /// (`unmapped_area_topdown` with `empty_area_rev`, or `unmapped_area` with `empty_area`),
    /// honouring length, alignment and the stack guard gap of `VM_GROWSDOWN` neighbours.
    ///
    /// ```
    /// use maple_mm::{Mm, UnmappedAreaInfo, PAGE_SIZE};
    /// let mm = Mm::new();
    /// let w = mm.write();
    /// let info = UnmappedAreaInfo {
    ///     length: 3 * PAGE_SIZE, low_limit: 0, high_limit: 1 << 40,
    ///     align_mask: (1 << 21) - 1, topdown: true, ..Default::default()
    /// };
    /// let a = w.vm_unmapped_area(&info).unwrap();
    /// assert_eq!(a % (1 << 21), 0);
    /// assert!(a + 3 * PAGE_SIZE <= 1 << 40);
    /// ```
    pub fn vm_unmapped_area(&self, info: &UnmappedAreaInfo) -> Result<u64, MmError> {
        let mm = self.mm;
        let tree = &mm.tree;
        let length = info
            .length
            .checked_add(info.align_mask)
            .and_then(|l| l.checked_add(if info.topdown { 0 } else { info.start_gap }))
            .ok_or(MmError::NoMem)?;
        if info.length == 0 {
            return Err(MmError::Inval);
        }
        let mut low = info.low_limit.max(mm.cfg.mmap_min_addr);
        let mut high = info.high_limit;
        loop {
            if high <= low || high - low < length {
                return Err(MmError::NoMem);
            }
            if info.topdown {
                let start = tree
                    .empty_area_rev(low..high, length)
                    .map_err(|_| MmError::NoMem)?;
                let gap_end = start + length;
                let mut gap = gap_end - info.length;
                gap -= gap.wrapping_sub(info.align_offset) & info.align_mask;
                match self.find_vma(gap_end) {
                    Some(n) if n.flags().contains(VmFlags::GROWSDOWN) => {
                        let sg = vm_start_gap(mm, n);
                        if sg < gap_end {
                            high = sg;
                            continue;
                        }
                    }
                    _ => {
                        let (_, prev) = self.find_vma_prev(gap);
                        if let Some(p) = prev {
                            if vm_end_gap(p) > gap {
                                high = p.start();
                                continue;
                            }
                        }
                    }
                }
                return Ok(gap);
            } else {
                let start = tree
                    .empty_area(low..high, length)
                    .map_err(|_| MmError::NoMem)?;
                let mut gap = start + info.start_gap;
                gap += info.align_offset.wrapping_sub(gap) & info.align_mask;
                match self.find_vma(start) {
                    Some(n) if n.flags().contains(VmFlags::GROWSDOWN) => {
                        if vm_start_gap(mm, n) < gap + info.length {
                            low = n.end();
                            continue;
                        }
                    }
                    _ => {
                        let (_, prev) = self.find_vma_prev(start);
                        if let Some(p) = prev {
                            if vm_end_gap(p) > gap {
                                low = vm_end_gap(p);
                                continue;
                            }
                        }
                    }
                }
                return Ok(gap);
            }
        }
    }

    /// `get_unmapped_area` for a non-fixed request of `len` bytes (page aligned), as x86-64's
    /// `arch_get_unmapped_area_topdown` does it: a hint is rounded down to its page
    /// (`round_hint_to_min` first raises a hint below `mmap_min_addr` to it) and taken if that
    /// range is free, guard gaps included; otherwise a top-down search below `mmap_base`
    /// falling back to bottom-up, or bottom-up only when the config says so.
    ///
    /// ```
    /// use maple_mm::{Mm, PAGE_SIZE};
    /// let mm = Mm::new();
    /// let w = mm.write();
    /// assert_eq!(w.get_unmapped_area(0x6000_0008_f849, 9 * PAGE_SIZE), Ok(0x6000_0008_f000));
    /// ```
    pub fn get_unmapped_area(&self, addr: u64, len: u64) -> Result<u64, MmError> {
        self.unmapped_area(round_hint_to_min(&self.mm.cfg, addr), len, false)
    }

    /// [`get_unmapped_area`](Self::get_unmapped_area) for an already rounded hint; `thp` asks
    /// for the THP alignment of `__get_unmapped_area` (private anonymous memory of a multiple
    /// of 2 MiB without a hint: `thp_get_unmapped_area_vmflags`).
    fn unmapped_area(&self, addr: u64, len: u64, thp: bool) -> Result<u64, MmError> {
        let cfg = &self.mm.cfg;
        if len == 0 || len > cfg.task_size - cfg.mmap_min_addr {
            return Err(MmError::NoMem);
        }
        if addr != 0 {
            let a = addr & !(PAGE_SIZE - 1);
            if a <= cfg.task_size - len {
                let next = self.find_vma(a);
                if next.is_none_or(|n| a + len <= vm_start_gap(self.mm, n)) {
                    return Ok(a);
                }
            }
        }
        if thp && addr == 0 && len % PMD_SIZE == 0 {
            // __thp_get_unmapped_area: search for len + 2 MiB, then align inside it (a top-down
            // result that is already aligned moves up by a whole 2 MiB).
            if let Some(padded) = len.checked_add(PMD_SIZE) {
                if let Ok(ret) = self.search_area(padded) {
                    let off_sub = ret.wrapping_neg() & (PMD_SIZE - 1);
                    if !cfg.bottom_up && off_sub == 0 {
                        return Ok(ret + PMD_SIZE);
                    }
                    return Ok(ret + off_sub);
                }
            }
        }
        self.search_area(len)
    }

    /// The unhinted search of `arch_get_unmapped_area{,_topdown}`.
    fn search_area(&self, len: u64) -> Result<u64, MmError> {
        let cfg = &self.mm.cfg;
        let bottom_up = UnmappedAreaInfo {
            length: len,
            low_limit: cfg.unmapped_base,
            high_limit: cfg.task_size,
            ..Default::default()
        };
        if cfg.bottom_up {
            return self.vm_unmapped_area(&bottom_up);
        }
        let top_down = UnmappedAreaInfo {
            length: len,
            low_limit: PAGE_SIZE,
            high_limit: cfg.mmap_base,
            topdown: true,
            ..Default::default()
        };
        self.vm_unmapped_area(&top_down)
            .or_else(|_| self.vm_unmapped_area(&bottom_up))
    }

    /// `mmap`: maps `len` bytes (rounded up to pages) with protection `prot`, checking in
    /// `do_mmap`'s order:
    ///
    /// 1. a file offset that is not page aligned: `EINVAL` (the syscall); unknown flag or
    ///    protection bits: `EINVAL` (the crate refuses what it does not model); `len == 0`:
    ///    `EINVAL`; `len` overflowing when rounded: `ENOMEM`; offset plus length overflowing:
    ///    `EOVERFLOW`; more than `max_map_count` maps: `ENOMEM`;
    /// 2. the address: `MAP_FIXED` and `MAP_FIXED_NOREPLACE` take `addr` exactly (beyond
    ///    `TASK_SIZE`: `ENOMEM`, then not page aligned: `EINVAL`); otherwise `addr` is a hint
    ///    ([`get_unmapped_area`](Self::get_unmapped_area); 2 MiB-multiple private anonymous
    ///    maps without a hint are placed THP-aligned); below `mmap_min_addr`: `EPERM`;
    /// 3. `MAP_FIXED_NOREPLACE` over a mapping: `EEXIST`;
    /// 4. the mapping type (exactly one of `MAP_SHARED`/`MAP_PRIVATE`, else `EINVAL`), the file
    ///    (mapped bytes beyond `MAX_LFS_FILESIZE`: `EOVERFLOW`; a shared writable mapping of a
    ///    file not open for writing: `EACCES`), `MAP_GROWSDOWN` of a file or shared memory:
    ///    `EINVAL`.
    ///
    /// A private writable mapping without `MAP_NORESERVE` is charged (`VM_ACCOUNT`,
    /// `accountable_mapping`). `MAP_FIXED` replaces what was mapped (those pages are dropped).
    /// The new VMA merges with compatible neighbours. Returns the address.
    pub fn mmap(
        &mut self,
        addr: u64,
        len: u64,
        prot: Prot,
        flags: MapFlags,
        src: MapSource,
    ) -> Result<u64, MmError> {
        let cfg = self.mm.cfg.clone();
        if let MapSource::File { offset, .. } = &src {
            if !is_page_aligned(*offset) {
                return Err(MmError::Inval);
            }
        }
        let prot_flags = prot.vm_flags()?;
        if flags.bits() & !MapFlags::KNOWN != 0 {
            return Err(MmError::Inval);
        }
        if len == 0 {
            return Err(MmError::Inval);
        }
        let fixed = flags.contains(MapFlags::FIXED) || flags.contains(MapFlags::FIXED_NOREPLACE);
        let hint = if fixed {
            addr
        } else {
            round_hint_to_min(&cfg, addr)
        };
        let len = page_align(len).ok_or(MmError::NoMem)?;
        let file_pgoff = match &src {
            MapSource::File { offset, .. } => Some(offset >> PAGE_SHIFT),
            MapSource::Anon => None,
        };
        if file_pgoff.is_some_and(|p| p.checked_add(len >> PAGE_SHIFT).is_none()) {
            return Err(MmError::Overflow);
        }
        if self.state.map_count > cfg.max_map_count {
            return Err(MmError::NoMem);
        }
        let shared = match flags.bits() & 0x3 {
            0x1 | 0x3 => Some(true),
            0x2 => Some(false),
            _ => None,
        };
        // __get_unmapped_area
        if len > cfg.task_size {
            return Err(MmError::NoMem);
        }
        let addr = if fixed {
            if hint > cfg.task_size - len {
                return Err(MmError::NoMem);
            }
            if !is_page_aligned(hint) {
                return Err(MmError::Inval);
            }
            hint
        } else {
            let thp = matches!(src, MapSource::Anon) && shared == Some(false);
            self.unmapped_area(hint, len, thp)?
        };
        if addr < cfg.mmap_min_addr {
            return Err(MmError::Perm); // security_mmap_addr
        }
        if flags.contains(MapFlags::FIXED_NOREPLACE)
            && self.vmas_in(addr, addr + len).next().is_some()
        {
            return Err(MmError::Exist);
        }
        let shared = shared.ok_or(MmError::Inval)?;
        let mut vm_flags = prot_flags | VmFlags::MAY_RWX;
        if flags.contains(MapFlags::LOCKED) {
            vm_flags |= VmFlags::LOCKED;
        }
        let (kind, pgoff) = match &src {
            MapSource::File { file, offset } => {
                // file_mmap_ok: the mapped bytes must lie below MAX_LFS_FILESIZE (i64::MAX).
                if offset.checked_add(len).is_none_or(|e| e > i64::MAX as u64) {
                    return Err(MmError::Overflow);
                }
                if shared {
                    if prot_flags.contains(VmFlags::WRITE) && !file.writable() {
                        return Err(MmError::Access);
                    }
                    vm_flags |= VmFlags::SHARED | VmFlags::MAYSHARE;
                    if !file.writable() {
                        vm_flags = vm_flags.without(VmFlags::MAYWRITE | VmFlags::SHARED);
                    }
                }
                if flags.contains(MapFlags::GROWSDOWN) {
                    return Err(MmError::Inval);
                }
                if file.kind() == FileKind::Hugetlb {
                    vm_flags |= VmFlags::HUGETLB;
                }
                (VmaKind::File(Arc::clone(file)), offset >> PAGE_SHIFT)
            }
            MapSource::Anon if shared => {
                if flags.contains(MapFlags::GROWSDOWN) {
                    return Err(MmError::Inval);
                }
                vm_flags |= VmFlags::SHARED | VmFlags::MAYSHARE;
                // shmem_zero_setup: a fresh shmem object per mapping.
                let ino = SHMEM_INO.next();
                let f = MappedFile::new("/dev/zero (deleted)", (0, 1), ino, FileKind::Shmem, true);
                (VmaKind::File(f), 0)
            }
            MapSource::Anon => {
                if flags.contains(MapFlags::GROWSDOWN) {
                    vm_flags |= VmFlags::GROWSDOWN;
                }
                (VmaKind::anon(), addr >> PAGE_SHIFT)
            }
        };
        if flags.contains(MapFlags::NORESERVE) {
            vm_flags |= VmFlags::NORESERVE;
        }
        // accountable_mapping: private writable memory is charged (hugetlb accounts itself).
        if !vm_flags.contains(VmFlags::HUGETLB)
            && (vm_flags & (VmFlags::NORESERVE | VmFlags::SHARED | VmFlags::WRITE))
                == VmFlags::WRITE
        {
            vm_flags |= VmFlags::ACCOUNT;
        }
        let desc = VmaDesc {
            flags: vm_flags,
            kind,
            pgoff,
            uffd: None,
            anon_vma: None,
        };
        let removed = self.apply(addr, addr + len, Some(desc), |_| Change::Keep)?;
        self.zap(&removed);
        self.unmap_events(&removed, addr, addr + len);
        Ok(addr)
    }

    /// Inserts a VMA exactly as given, without merging (`insert_vm_struct`; used to replay real
    /// layouts). `EINVAL` for an empty, unaligned or out-of-range span, `EEXIST` if it overlaps
    /// a VMA, `ENOMEM` at `max_map_count`.
    pub fn insert_vma(&mut self, start: u64, end: u64, desc: VmaDesc) -> Result<(), MmError> {
        if start >= end
            || !is_page_aligned(start)
            || !is_page_aligned(end)
            || end > self.mm.cfg.task_size
        {
            return Err(MmError::Inval);
        }
        if desc.flags.intersects(VmFlags::UFFD_FLAGS) != desc.uffd.is_some() {
            return Err(MmError::Inval);
        }
        if self.vmas_in(start, end).next().is_some() {
            return Err(MmError::Exist);
        }
        if self.state.map_count >= self.mm.cfg.max_map_count {
            return Err(MmError::NoMem);
        }
        let vma = Arc::new(Vma::new(start, end, desc, self.mm.locks.seq()));
        self.mm
            .tree
            .lock()
            .insert_range(start..end, vma)
            .map_err(|_| MmError::Exist)?;
        self.state.map_count += 1;
        Ok(())
    }

    /// Validates `[addr, addr + len)` for munmap-like calls: page-aligned start, non-zero
    /// length, no wrap, inside `TASK_SIZE`. Returns the page-aligned end.
    fn check_range(&self, addr: u64, len: u64, err: MmError) -> Result<u64, MmError> {
        if !is_page_aligned(addr) || len == 0 {
            return Err(MmError::Inval);
        }
        let len = page_align(len).ok_or(err)?;
        match addr.checked_add(len) {
            Some(end) if end <= self.mm.cfg.task_size => Ok(end),
            _ => Err(err),
        }
    }

    /// `userfaultfd_unmap_prep` for every context of the removed pieces that wants UNMAP
    /// events: one event per context for the whole unmapped range, completed after unlock.
    fn unmap_events(&mut self, removed: &[VmaSnapshot], start: u64, end: u64) {
        for r in removed {
            if let Some(ctx) = &r.desc.uffd {
                self.events
                    .prep(ctx, feature::EVENT_UNMAP, UffdMsg::Unmap { start, end });
            }
        }
    }

    /// `madvise_walk_vmas` without the visits: checks the range (unaligned `addr`, or a length
    /// that wraps: `EINVAL`) and then each VMA in it in address order the way the visit for
    /// `advice` would. Returns `stop`, the address up to which the advice is applied (the whole
    /// range, or the start of the first VMA that refuses it), and the call's result: that
    /// VMA's error (`EINVAL`), else `ENOMEM` if the range had holes (which are skipped).
    pub(crate) fn madvise_walk(
        &self,
        addr: u64,
        len: u64,
        advice: Advice,
    ) -> Result<(u64, Result<(), MmError>), MmError> {
        if !is_page_aligned(addr) {
            return Err(MmError::Inval);
        }
        let alen = page_align(len).ok_or(MmError::Inval)?;
        let end = addr.checked_add(alen).ok_or(MmError::Inval)?;
        if end == addr {
            return Ok((addr, Ok(())));
        }
        let mut pos = addr;
        let mut holes = false;
        for v in self.vmas_in(addr, end) {
            if v.start() > pos {
                holes = true;
            }
            let f = v.flags();
            let refused = match advice {
                Advice::DontNeed => f.intersects(VmFlags::LOCKED | VmFlags::PFNMAP),
                Advice::WipeOnFork => !v.kind().is_anon() || f.contains(VmFlags::SHARED),
                Advice::DoFork => f.contains(VmFlags::IO),
                Advice::KeepOnFork => f.contains(VmFlags::DROPPABLE),
                Advice::DontFork => false,
            };
            if refused {
                return Ok((v.start().max(addr), Err(MmError::Inval)));
            }
            pos = v.end().min(end);
        }
        if pos < end {
            holes = true;
        }
        Ok((end, if holes { Err(MmError::NoMem) } else { Ok(()) }))
    }

    /// `userfaultfd_remove` for each registered VMA in the range whose context wants REMOVE
    /// events (the range clipped to the VMA).
    pub(crate) fn remove_events(&mut self, addr: u64, end: u64) {
        if addr >= end {
            return;
        }
        let ctxs: Vec<(Arc<UffdCtx>, u64, u64)> = self
            .vmas_in(addr, end)
            .filter_map(|v| v.uffd().map(|c| (c, v.start().max(addr), v.end().min(end))))
            .collect();
        for (c, s, e) in ctxs {
            self.events.prep(
                &c,
                feature::EVENT_REMOVE,
                UffdMsg::Remove { start: s, end: e },
            );
        }
    }

    /// Takes the userfaultfd events prepared so far (to complete them once the lock is gone).
    pub(crate) fn take_events(&mut self) -> Vec<(Arc<UffdCtx>, UffdMsg)> {
        self.events.take()
    }

    fn zap(&self, removed: &[VmaSnapshot]) {
        if removed.is_empty() {
            return;
        }
        let mut pt = self.mm.pages.lock();
        for r in removed {
            pt.zap(r.start, r.end);
        }
    }

    /// `munmap`: unmaps `[addr, addr + len)`, splitting VMAs that stick out of the range and
    /// removing the rest with one NULL store; drops their pages. Returns the removed pieces in
    /// address order. Unaligned `addr`, `len == 0` or a range outside `TASK_SIZE`: `EINVAL`; a
    /// split beyond `max_map_count`: `ENOMEM`. Unmapping a hole is not an error.
    pub fn munmap(&mut self, addr: u64, len: u64) -> Result<Vec<VmaSnapshot>, MmError> {
        let end = self.check_range(addr, len, MmError::Inval)?;
        let removed = self.apply(addr, end, None, |_| Change::Remove)?;
        self.zap(&removed);
        self.unmap_events(&removed, addr, end);
        Ok(removed)
    }

    /// `mprotect` (`do_mprotect_pkey`): sets the protection of `[addr, addr + len)`, splitting
    /// and re-merging. Unaligned `addr`: `EINVAL`; `len == 0`: nothing; a wrapping range:
    /// `ENOMEM`; unknown protection bits: `EINVAL`; no VMA at `addr`: `ENOMEM`. The VMAs are then
    /// changed in address order as the kernel's loop does, and the call stops at the first hole
    /// (`ENOMEM`) or the first VMA whose `VM_MAY*` bits forbid the protection (`EACCES`), with
    /// the VMAs before that point already changed. Making private memory writable charges it
    /// (`VM_ACCOUNT`); changing the protection of a never-written private anonymous VMA to
    /// one without `PROT_WRITE` uncharges it (`mprotect_fixup`; an unchanged protection leaves
    /// the charge).
    pub fn mprotect(&mut self, addr: u64, len: u64, prot: Prot) -> Result<(), MmError> {
        if !is_page_aligned(addr) {
            return Err(MmError::Inval);
        }
        if len == 0 {
            return Ok(());
        }
        let len = page_align(len).ok_or(MmError::NoMem)?;
        let end = addr.checked_add(len).ok_or(MmError::NoMem)?;
        let newprot = prot.vm_flags()?;
        let mut pos = addr;
        let mut err = Ok(());
        for v in self.vmas_in(addr, end) {
            if v.start() > pos {
                err = Err(MmError::NoMem);
                break;
            }
            let may = VmFlags::from_bits((v.flags().bits() >> 4) & 0x7);
            if !may.contains(newprot) {
                err = Err(MmError::Access);
                break;
            }
            pos = v.end().min(end);
        }
        if err.is_ok() && pos < end {
            err = Err(MmError::NoMem);
        }
        if pos > addr {
            self.apply(addr, pos, None, |v| {
                let old = v.flags();
                let mut flags = old.without(VmFlags::PROT_MASK) | newprot;
                // mprotect_fixup returns before the accounting when nothing changes.
                if flags == old {
                    return Change::Keep;
                }
                if flags.contains(VmFlags::WRITE) {
                    if !old.intersects(
                        VmFlags::ACCOUNT
                            | VmFlags::WRITE
                            | VmFlags::HUGETLB
                            | VmFlags::SHARED
                            | VmFlags::NORESERVE,
                    ) {
                        flags |= VmFlags::ACCOUNT;
                    }
                } else if old.contains(VmFlags::ACCOUNT)
                    && v.kind().is_anon()
                    && v.anon_vma().is_none()
                {
                    flags = flags.without(VmFlags::ACCOUNT);
                }
                if flags == old {
                    Change::Keep
                } else {
                    let mut d = v.desc();
                    d.flags = flags;
                    Change::Set(d)
                }
            })?;
        }
        err
    }

    /// `madvise` for the fork flags and `MADV_DONTNEED`, walking the range as
    /// `madvise_walk_vmas` does: unaligned `addr` or a wrapping length: `EINVAL`; `len == 0`:
    /// nothing. Holes are skipped (the call then returns `ENOMEM`, after advising every VMA
    /// piece in the range); a VMA that refuses the advice (`WIPEONFORK` on anything but private
    /// anonymous memory, `DONTNEED` on locked or PFN-mapped VMAs, `DOFORK` on `VM_IO`) stops
    /// the walk with `EINVAL`, the pieces before it advised.
    pub fn madvise(&mut self, addr: u64, len: u64, advice: Advice) -> Result<(), MmError> {
        let (stop, res) = self.madvise_walk(addr, len, advice)?;
        if stop == addr {
            return res;
        }
        let (set, clear) = match advice {
            Advice::DontNeed => {
                self.remove_events(addr, stop);
                self.mm.pages.lock().zap(addr, stop);
                return res;
            }
            Advice::DontFork => (VmFlags::DONTCOPY, VmFlags::NONE),
            Advice::DoFork => (VmFlags::NONE, VmFlags::DONTCOPY),
            Advice::WipeOnFork => (VmFlags::WIPEONFORK, VmFlags::NONE),
            Advice::KeepOnFork => (VmFlags::NONE, VmFlags::WIPEONFORK),
        };
        self.apply(addr, stop, None, |v| {
            let flags = v.flags().without(clear) | set;
            if flags == v.flags() {
                Change::Keep
            } else {
                let mut d = v.desc();
                d.flags = flags;
                Change::Set(d)
            }
        })?;
        res
    }

    /// `mremap` as of Linux 6.17 (`do_mremap`): resizes or moves `[old_addr, old_addr +
    /// old_len)` to `new_len` bytes. Returns the new address.
    ///
    /// - Parameters (`check_mremap_params`): unknown flags (`MREMAP_DONTUNMAP` is not
    ///   modelled), unaligned `old_addr`, `new_len == 0` or beyond `TASK_SIZE`: `EINVAL`; with
    ///   `MREMAP_FIXED` also a `new_addr` that is unaligned or leaves `TASK_SIZE`, a missing
    ///   `MREMAP_MAYMOVE`, or overlapping ranges: `EINVAL`.
    /// - `MREMAP_FIXED` with `old_len == new_len` moves every VMA of the range (`remap_move`),
    ///   splitting the first and last, keeping the gaps between them; a hole at the start, or
    ///   a userfaultfd-registered VMA that is not alone in the range: `EFAULT`, the VMAs before
    ///   it moved.
    /// - Otherwise `old_addr` must be in a VMA (`EFAULT`); `old_len == 0` (duplicating a
    ///   mapping) is refused with `EINVAL`. A shrink or an unchanged size without
    ///   `MREMAP_FIXED` may span several VMAs (the tail is unmapped); a grow or a fixed move
    ///   needs the old range inside the VMA (`EFAULT`) and no `VM_DONTEXPAND`/`VM_PFNMAP`
    ///   when growing (`EFAULT`). A grow extends in place when the range ends the VMA and the
    ///   space after it is free, else moves (`MREMAP_MAYMOVE`; without it `ENOMEM`).
    ///   `MREMAP_FIXED` first unmaps `[new_addr, new_addr + new_len)`.
    /// - A moved VMA that never had a page written (no `anon_vma`) takes the page offset of its
    ///   new address, so it can merge there (`copy_vma`). Pages move with the mapping. Without
    ///   `UFFD_FEATURE_EVENT_REMAP` the VMA the copy ends up in loses its userfaultfd
    ///   registration, including any registered neighbour it merged with.
    pub fn mremap(
        &mut self,
        old_addr: u64,
        old_len: u64,
        new_len: u64,
        flags: MremapFlags,
        new_addr: u64,
    ) -> Result<u64, MmError> {
        let cfg = self.mm.cfg.clone();
        if flags.0 & !3 != 0 || !is_page_aligned(old_addr) {
            return Err(MmError::Inval);
        }
        let old_len = page_align(old_len).ok_or(MmError::Inval)?;
        let new_len = page_align(new_len).ok_or(MmError::Inval)?;
        if new_len == 0 || new_len > cfg.task_size {
            return Err(MmError::Inval);
        }
        let fixed = flags.contains(MremapFlags::FIXED);
        let maymove = flags.contains(MremapFlags::MAYMOVE);
        if fixed {
            if new_addr > cfg.task_size - new_len || !is_page_aligned(new_addr) || !maymove {
                return Err(MmError::Inval);
            }
            if old_addr.saturating_add(old_len) > new_addr && new_addr + new_len > old_addr {
                return Err(MmError::Inval);
            }
            if old_len == new_len {
                return self.remap_move(old_addr, old_len, new_addr);
            }
        }
        let (vstart, vend, vflags, pgoff) = {
            let v = self.vma_lookup(old_addr).ok_or(MmError::Fault)?;
            (v.start(), v.end(), v.flags(), v.pgoff())
        };
        // check_prep_vma
        let expand = new_len > old_len;
        if expand || fixed {
            if old_len == 0 {
                return Err(MmError::Inval);
            }
            let span = old_len.min(new_len);
            if span > vend - old_addr {
                return Err(MmError::Fault);
            }
            if expand {
                let first = pgoff.wrapping_add((old_addr - vstart) >> PAGE_SHIFT);
                if first.checked_add(new_len >> PAGE_SHIFT).is_none() {
                    return Err(MmError::Inval);
                }
                if vflags.intersects(VmFlags::DONTEXPAND | VmFlags::PFNMAP) {
                    return Err(MmError::Fault);
                }
            }
        }
        if fixed {
            return self.mremap_to(old_addr, old_len, new_len, new_addr);
        }
        // mremap_at
        if new_len == old_len {
            return Ok(old_addr);
        }
        if new_len < old_len {
            self.munmap(old_addr + new_len, old_len - new_len)?;
            return Ok(old_addr);
        }
        // expand_vma: in place if the range ends the VMA and the space after it is free.
        let old_end = old_addr + old_len;
        if old_end == vend {
            let want = vend
                .checked_add(new_len - old_len)
                .filter(|&e| e <= cfg.task_size);
            if let Some(new_end) = want {
                if self.vmas_in(vend, new_end).next().is_none() {
                    let fill = self
                        .vma_lookup(old_addr)
                        .map(|v| v.desc().advanced(vend - vstart))
                        .ok_or(MmError::Fault)?;
                    self.apply(vend, new_end, Some(fill), |_| Change::Keep)?;
                    return Ok(old_addr);
                }
            }
        }
        if !maymove {
            return Err(MmError::NoMem);
        }
        // vrm_set_new_addr: get_unmapped_area(file, 0, new_len, ...).
        let thp = !vflags.contains(VmFlags::MAYSHARE)
            && self
                .vma_lookup(old_addr)
                .is_some_and(|v| v.kind().is_anon());
        let dest = self.unmapped_area(0, new_len, thp)?;
        self.move_vma(old_addr, old_len, new_len, dest)
    }

    /// `mremap_to`: unmap the destination, shrink the source if asked, then move.
    fn mremap_to(
        &mut self,
        old_addr: u64,
        old_len: u64,
        new_len: u64,
        new_addr: u64,
    ) -> Result<u64, MmError> {
        self.munmap(new_addr, new_len)?;
        if self.vma_lookup(old_addr).is_none() {
            return Err(MmError::Fault);
        }
        let mut old_len = old_len;
        if new_len < old_len {
            self.munmap(old_addr + new_len, old_len - new_len)?;
            old_len = new_len;
        }
        self.move_vma(old_addr, old_len, new_len, new_addr)
    }

    /// `remap_move` (6.17): moves each VMA of `[start, start + len)` in turn, the first to
    /// `new_addr` and each later one after the previous by the gap between them.
    fn remap_move(&mut self, start: u64, len: u64, new_addr: u64) -> Result<u64, MmError> {
        let end = start.saturating_add(len);
        let mut res = Err(MmError::Fault);
        let mut seen = false;
        let mut allowed = true;
        let mut target = new_addr;
        let mut last_end = 0;
        let mut pos = start;
        while pos < end {
            let Some((vs, ve, ok)) = self.find_vma(pos).filter(|v| v.start() < end).map(|v| {
                (
                    v.start(),
                    v.end(),
                    !v.flags().intersects(VmFlags::UFFD_FLAGS),
                )
            }) else {
                break;
            };
            let a = vs.max(start);
            let l = ve.min(end) - a;
            if !allowed || (!seen && start < vs) {
                return Err(MmError::Fault);
            }
            let offset = if seen { vs - last_end } else { 0 };
            last_end = ve;
            // vma_multi_allowed: a userfaultfd-armed VMA moves only alone (the notification
            // would drop the mmap lock): not after another one, nor with the range going on
            // past it (measured on 6.18: nothing moves then).
            allowed = ok;
            if !allowed && (seen || ve < end) {
                return Err(MmError::Fault);
            }
            let r = self.mremap_to(a, l, l, target + offset)?;
            if !seen {
                res = Ok(r);
            }
            seen = true;
            target = r + l;
            pos = ve.min(end);
        }
        res
    }

    /// `move_vma`: a copy of the source piece at `dest` (`copy_vma`), the pages moved, the
    /// source unmapped.
    fn move_vma(
        &mut self,
        old_addr: u64,
        old_len: u64,
        new_len: u64,
        dest: u64,
    ) -> Result<u64, MmError> {
        let cfg = self.mm.cfg.clone();
        if self.state.map_count + 3 > cfg.max_map_count {
            return Err(MmError::NoMem);
        }
        let old_end = old_addr + old_len;
        let mut piece = {
            let v = self.vma_lookup(old_addr).ok_or(MmError::Fault)?;
            v.desc().advanced(old_addr - v.start())
        };
        // copy_vma: a never-faulted anonymous VMA takes the offset of its new address.
        if piece.kind.is_anon() && piece.anon_vma.is_none() {
            piece.pgoff = dest >> PAGE_SHIFT;
        }
        // mremap_userfaultfd_prep: with EVENT_REMAP the moved mapping stays registered and a
        // REMAP event follows; without it the new VMA is reset, after the copy merged it with
        // its neighbours, so a registered neighbour it merged with (the source included) is
        // reset with it.
        let mut reset = false;
        if let Some(ctx) = piece.uffd.clone() {
            let msg = UffdMsg::Remap {
                from: old_addr,
                to: dest,
                len: old_len,
            };
            reset = !self.events.prep(&ctx, feature::EVENT_REMAP, msg);
        }
        self.apply(dest, dest + new_len, Some(piece), |_| Change::Keep)?;
        if reset {
            if let Some(v) = self.vma_lookup(dest) {
                v.start_write(&self.mm.locks);
                v.set_uffd(None);
                v.set_flags(v.flags().without(VmFlags::UFFD_FLAGS));
            }
        }
        {
            let mut pt = self.mm.pages.lock();
            pt.move_range(old_addr, old_addr + old_len.min(new_len), dest);
            pt.zap(old_addr, old_end);
        }
        let removed = self.apply(old_addr, old_end, None, |_| Change::Remove)?;
        self.unmap_events(&removed, old_addr, old_end);
        Ok(dest)
    }
}

/// `PMD_SIZE`: the THP size on x86-64.
const PMD_SIZE: u64 = 2 << 20;

/// `round_hint_to_min`: a hint is rounded down to its page; one below `mmap_min_addr` is
/// raised to it.
fn round_hint_to_min(cfg: &super::MmConfig, addr: u64) -> u64 {
    let hint = addr & !(PAGE_SIZE - 1);
    if hint != 0 && hint < cfg.mmap_min_addr {
        return page_align(cfg.mmap_min_addr).unwrap_or(cfg.mmap_min_addr);
    }
    hint
}

impl fmt::Debug for Seg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{:#x},{:#x}) {:?} touched={}",
            self.start, self.end, self.desc.flags, self.touched
        )
    }
}
