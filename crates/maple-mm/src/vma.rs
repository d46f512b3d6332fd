//! Virtual memory areas: flags, backing, the VMA itself and its per-VMA lock.
//!
//! A [`Vma`] covers `[start, end)` (page aligned, `start < end`) and is stored in the mm's tree
//! over `[start, end - 1]`. Its bounds, backing and file offset never change after creation:
//! splitting, merging or moving a VMA replaces it with new `Vma`s and detaches the old one. Its
//! flags and userfaultfd context may change in place, but only while the VMA is write-locked.
//!
//! The per-VMA lock follows the kernel's sequence-count scheme (v6.4–v6.12): the mm keeps a
//! sequence number `mm_lock_seq`; [`Vma::start_write`] takes the VMA's lock once and stamps the
//! VMA with the current `mm_lock_seq`, which keeps it write-locked until the mmap write lock is
//! released (that release increments `mm_lock_seq` and so unlocks every VMA at once). A
//! lock-free reader ([`Vma::start_read`]) fails, instead of blocking, while the stamps match.

use crate::sync::{
    backoff, Arc, ArcSlot, AtomicBool, AtomicI64, AtomicU32, AtomicU64, IdCounter, Ordering,
};
use core::fmt;
use core::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, Not};

use super::PAGE_SHIFT;
use crate::uffd::ctx::UffdCtx;

/// VMA flags (`vm_flags_t`), with the kernel's bit values where the kernel has them.
///
/// ```
/// use maple_mm::VmFlags;
/// let f = VmFlags::READ | VmFlags::WRITE | VmFlags::MAYREAD | VmFlags::MAYWRITE;
/// assert!(f.contains(VmFlags::READ | VmFlags::WRITE));
/// assert!(!f.intersects(VmFlags::EXEC));
/// assert_eq!((f & !VmFlags::WRITE).bits(), 0x31);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct VmFlags(u64);

impl VmFlags {
    /// No flags.
    pub const NONE: VmFlags = VmFlags(0);
    /// `VM_READ`: readable.
    pub const READ: VmFlags = VmFlags(0x1);
    /// `VM_WRITE`: writable.
    pub const WRITE: VmFlags = VmFlags(0x2);
    /// `VM_EXEC`: executable.
    pub const EXEC: VmFlags = VmFlags(0x4);
    /// `VM_SHARED`: a shared, writable-capable mapping (writes reach the file / other mappers).
    pub const SHARED: VmFlags = VmFlags(0x8);
    /// `VM_MAYREAD`: `PROT_READ` may be set by mprotect.
    pub const MAYREAD: VmFlags = VmFlags(0x10);
    /// `VM_MAYWRITE`: `PROT_WRITE` may be set by mprotect (also needed for userfaultfd).
    pub const MAYWRITE: VmFlags = VmFlags(0x20);
    /// `VM_MAYEXEC`: `PROT_EXEC` may be set by mprotect.
    pub const MAYEXEC: VmFlags = VmFlags(0x40);
    /// `VM_MAYSHARE`: a `MAP_SHARED` mapping (shown as `s` in `/proc/PID/maps`).
    pub const MAYSHARE: VmFlags = VmFlags(0x80);
    /// `VM_GROWSDOWN`: a stack; keeps a guard gap below it.
    pub const GROWSDOWN: VmFlags = VmFlags(0x100);
    /// `VM_UFFD_MISSING`: registered with userfaultfd for missing-page faults.
    pub const UFFD_MISSING: VmFlags = VmFlags(0x200);
    /// `VM_PFNMAP`: raw page frames (never merged).
    pub const PFNMAP: VmFlags = VmFlags(0x400);
    /// `VM_UFFD_WP`: registered with userfaultfd for write-protect faults.
    pub const UFFD_WP: VmFlags = VmFlags(0x1000);
    /// `VM_LOCKED`: mlocked (cleared in the child on fork).
    pub const LOCKED: VmFlags = VmFlags(0x2000);
    /// `VM_IO`: memory-mapped I/O (never merged).
    pub const IO: VmFlags = VmFlags(0x4000);
    /// `VM_DONTCOPY`: not inherited by fork (`MADV_DONTFORK`).
    pub const DONTCOPY: VmFlags = VmFlags(0x20000);
    /// `VM_DONTEXPAND`: cannot be grown by mremap (never merged).
    pub const DONTEXPAND: VmFlags = VmFlags(0x40000);
    /// `VM_LOCKONFAULT`: lock pages as they are faulted in (cleared in the child on fork).
    pub const LOCKONFAULT: VmFlags = VmFlags(0x80000);
    /// `VM_ACCOUNT`: charged against the commit limit.
    pub const ACCOUNT: VmFlags = VmFlags(0x100000);
    /// `VM_NORESERVE`: not charged (`MAP_NORESERVE`).
    pub const NORESERVE: VmFlags = VmFlags(0x200000);
    /// `VM_HUGETLB`: a hugetlbfs mapping.
    pub const HUGETLB: VmFlags = VmFlags(0x400000);
    /// `VM_WIPEONFORK`: the child gets this range empty (`MADV_WIPEONFORK`).
    pub const WIPEONFORK: VmFlags = VmFlags(0x2000000);
    /// `VM_DONTDUMP`: left out of core dumps.
    pub const DONTDUMP: VmFlags = VmFlags(0x4000000);
    /// `VM_MIXEDMAP`: mixed page frames (never merged).
    pub const MIXEDMAP: VmFlags = VmFlags(0x10000000);
    /// `VM_UFFD_MINOR`: registered with userfaultfd for minor faults.
    pub const UFFD_MINOR: VmFlags = VmFlags(1 << 38);
    /// `VM_DROPPABLE`: can never be registered with userfaultfd.
    pub const DROPPABLE: VmFlags = VmFlags(1 << 40);

    /// `VM_READ | VM_WRITE | VM_EXEC`: the bits mprotect changes.
    pub const PROT_MASK: VmFlags = VmFlags(0x7);
    /// `__VM_UFFD_FLAGS`: every userfaultfd mode bit.
    pub const UFFD_FLAGS: VmFlags = VmFlags(0x200 | 0x1000 | (1 << 38));
    /// `VM_LOCKED_MASK`: what fork clears in the child.
    pub const LOCKED_MASK: VmFlags = VmFlags(0x2000 | 0x80000);
    /// `VM_SPECIAL`: VMAs with any of these are never merged.
    pub const SPECIAL: VmFlags = VmFlags(0x4000 | 0x40000 | 0x400 | 0x10000000);
    /// `VM_MAYREAD | VM_MAYWRITE | VM_MAYEXEC`: the default `VM_MAY*` bits of a new mapping.
    pub const MAY_RWX: VmFlags = VmFlags(0x10 | 0x20 | 0x40);

    /// The raw bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Flags from raw bits (every bit is kept).
    pub const fn from_bits(bits: u64) -> Self {
        VmFlags(bits)
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: VmFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether any bit of `other` is set.
    pub const fn intersects(self, other: VmFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `self` with the bits of `other` cleared.
    pub const fn without(self, other: VmFlags) -> VmFlags {
        VmFlags(self.0 & !other.0)
    }
}

impl BitOr for VmFlags {
    type Output = VmFlags;
    fn bitor(self, rhs: VmFlags) -> VmFlags {
        VmFlags(self.0 | rhs.0)
    }
}
impl BitOrAssign for VmFlags {
    fn bitor_assign(&mut self, rhs: VmFlags) {
        self.0 |= rhs.0;
    }
}
impl BitAnd for VmFlags {
    type Output = VmFlags;
    fn bitand(self, rhs: VmFlags) -> VmFlags {
        VmFlags(self.0 & rhs.0)
    }
}
impl BitAndAssign for VmFlags {
    fn bitand_assign(&mut self, rhs: VmFlags) {
        self.0 &= rhs.0;
    }
}
impl Not for VmFlags {
    type Output = VmFlags;
    fn not(self) -> VmFlags {
        VmFlags(!self.0)
    }
}

impl fmt::Debug for VmFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: &[(VmFlags, &str)] = &[
            (VmFlags::READ, "READ"),
            (VmFlags::WRITE, "WRITE"),
            (VmFlags::EXEC, "EXEC"),
            (VmFlags::SHARED, "SHARED"),
            (VmFlags::MAYREAD, "MAYREAD"),
            (VmFlags::MAYWRITE, "MAYWRITE"),
            (VmFlags::MAYEXEC, "MAYEXEC"),
            (VmFlags::MAYSHARE, "MAYSHARE"),
            (VmFlags::GROWSDOWN, "GROWSDOWN"),
            (VmFlags::UFFD_MISSING, "UFFD_MISSING"),
            (VmFlags::PFNMAP, "PFNMAP"),
            (VmFlags::UFFD_WP, "UFFD_WP"),
            (VmFlags::LOCKED, "LOCKED"),
            (VmFlags::IO, "IO"),
            (VmFlags::DONTCOPY, "DONTCOPY"),
            (VmFlags::DONTEXPAND, "DONTEXPAND"),
            (VmFlags::LOCKONFAULT, "LOCKONFAULT"),
            (VmFlags::ACCOUNT, "ACCOUNT"),
            (VmFlags::NORESERVE, "NORESERVE"),
            (VmFlags::HUGETLB, "HUGETLB"),
            (VmFlags::WIPEONFORK, "WIPEONFORK"),
            (VmFlags::DONTDUMP, "DONTDUMP"),
            (VmFlags::MIXEDMAP, "MIXEDMAP"),
            (VmFlags::UFFD_MINOR, "UFFD_MINOR"),
            (VmFlags::DROPPABLE, "DROPPABLE"),
        ];
        let mut rest = self.0;
        let mut first = true;
        for &(flag, name) in NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
                rest &= !flag.0;
            }
        }
        if rest != 0 || first {
            if !first {
                f.write_str("|")?;
            }
            write!(f, "{rest:#x}")?;
        }
        Ok(())
    }
}

/// What kind of object backs a file mapping (decides what userfaultfd may register).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file (page cache).
    Regular,
    /// shmem/tmpfs, including shared anonymous memory (`/dev/zero (deleted)`).
    Shmem,
    /// hugetlbfs.
    Hugetlb,
}

/// An open file that can be mapped. Two mappings are of "the same file" (and may merge) only if
/// they share the same `Arc<MappedFile>`, as the kernel compares `struct file` pointers.
///
/// ```
/// use maple_mm::{FileKind, MappedFile};
/// let f = MappedFile::new("/usr/lib/libc.so.6", (0xfe, 0), 1234, FileKind::Regular, false);
/// assert_eq!(f.path(), "/usr/lib/libc.so.6");
/// assert!(!f.writable());
/// ```
#[derive(Debug)]
pub struct MappedFile {
    path: String,
    dev: (u32, u32),
    inode: u64,
    kind: FileKind,
    writable: bool,
}

impl MappedFile {
    /// A file at `path` on device `dev` (major, minor) with inode number `inode`; `writable`
    /// says whether it was opened for writing (a shared writable mapping needs it).
    pub fn new(
        path: &str,
        dev: (u32, u32),
        inode: u64,
        kind: FileKind,
        writable: bool,
    ) -> Arc<Self> {
        Arc::new(MappedFile {
            path: path.to_owned(),
            dev,
            inode,
            kind,
            writable,
        })
    }

    /// The path shown in `/proc/PID/maps`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Device (major, minor).
    pub fn dev(&self) -> (u32, u32) {
        self.dev
    }

    /// Inode number.
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// The backing kind.
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// Whether the file was opened for writing.
    pub fn writable(&self) -> bool {
        self.writable
    }
}

/// What backs a VMA.
#[derive(Clone, Debug)]
pub enum VmaKind {
    /// Anonymous memory, with an optional name as `/proc/PID/maps` shows it (`[heap]`,
    /// `[stack]`, `[vdso]`, `[anon:NAME]`, ...). Names take part in the merge rule.
    Anon(Option<Arc<str>>),
    /// A file mapping (including shmem and hugetlbfs).
    File(Arc<MappedFile>),
}

impl VmaKind {
    /// Anonymous memory without a name.
    pub const fn anon() -> Self {
        VmaKind::Anon(None)
    }

    /// Anonymous memory with a name.
    pub fn named(name: &str) -> Self {
        VmaKind::Anon(Some(Arc::from(name)))
    }

    /// Whether two kinds may merge: both anonymous with equal names, or the same file object.
    pub fn same(&self, other: &VmaKind) -> bool {
        match (self, other) {
            (VmaKind::Anon(a), VmaKind::Anon(b)) => a == b,
            (VmaKind::File(a), VmaKind::File(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Whether this is anonymous memory.
    pub fn is_anon(&self) -> bool {
        matches!(self, VmaKind::Anon(_))
    }

    /// The mapped file, if any.
    pub fn file(&self) -> Option<&Arc<MappedFile>> {
        match self {
            VmaKind::File(f) => Some(f),
            VmaKind::Anon(_) => None,
        }
    }

    /// shmem backing (userfaultfd MINOR mode needs shmem or hugetlb).
    pub fn is_shmem(&self) -> bool {
        matches!(self, VmaKind::File(f) if f.kind == FileKind::Shmem)
    }

    /// hugetlbfs backing.
    pub fn is_hugetlb(&self) -> bool {
        matches!(self, VmaKind::File(f) if f.kind == FileKind::Hugetlb)
    }
}

/// Whether two userfaultfd slots hold the same context (pointer identity, as the kernel's
/// `is_mergeable_vm_userfaultfd_ctx`).
pub(crate) fn same_ctx(a: &Option<Arc<UffdCtx>>, b: &Option<Arc<UffdCtx>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// The identity of an `anon_vma`: the object that anonymous pages of a VMA hang off once the
/// first page was written (`__anon_vma_prepare`). Pieces of a split VMA share it; a fork child
/// gets a fresh one per VMA, chained to its parent's (`anon_vma_fork`), which `forked` records:
/// such a VMA's `anon_vma_chain` is not singular, so it cannot merge with a VMA without an
/// `anon_vma` (`vma_had_uncowed_parents`), nor lend its `anon_vma` to a neighbour
/// (`reusable_anon_vma`).
///
/// ```
/// use maple_mm::AnonVma;
/// let a = AnonVma::fresh(false);
/// assert_ne!(a, AnonVma::fresh(false));
/// assert!(AnonVma::mergeable(None, Some(a)));
/// assert!(!AnonVma::mergeable(Some(a), Some(AnonVma::fresh(false))));
/// assert!(!AnonVma::mergeable(None, Some(AnonVma::fresh(true))));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AnonVma {
    /// A process-wide unique number.
    pub id: u64,
    /// Whether the VMA's chain also links a parent's `anon_vma` (a fork child's copy).
    pub forked: bool,
}

static NEXT_ANON_VMA: IdCounter = IdCounter::new(1);

impl AnonVma {
    /// A new `anon_vma` (`anon_vma_alloc`).
    pub fn fresh(forked: bool) -> Self {
        AnonVma {
            id: NEXT_ANON_VMA.next(),
            forked,
        }
    }

    /// `is_mergeable_anon_vma`: two VMAs may merge if they share the `anon_vma`, or one has none
    /// and the other's chain is singular.
    pub fn mergeable(a: Option<AnonVma>, b: Option<AnonVma>) -> bool {
        match (a, b) {
            (None, None) => true,
            (None, Some(x)) | (Some(x), None) => !x.forked,
            (Some(x), Some(y)) => x.id == y.id,
        }
    }

    fn pack(a: Option<AnonVma>) -> u64 {
        a.map_or(0, |a| (a.id << 1) | a.forked as u64)
    }

    fn unpack(w: u64) -> Option<AnonVma> {
        (w != 0).then_some(AnonVma {
            id: w >> 1,
            forked: w & 1 != 0,
        })
    }
}

/// The attributes of a VMA apart from its bounds: what mmap asks for, what mprotect and
/// userfaultfd change, what the merge rule compares.
#[derive(Clone, Debug)]
pub struct VmaDesc {
    /// The flags.
    pub flags: VmFlags,
    /// The backing.
    pub kind: VmaKind,
    /// The file offset of the VMA's first page, in pages (`vm_pgoff`). Anonymous VMAs start with
    /// `start >> PAGE_SHIFT` as the kernel does, so the merge rule's contiguity check is uniform.
    pub pgoff: u64,
    /// The userfaultfd context, if registered.
    pub uffd: Option<Arc<UffdCtx>>,
    /// The `anon_vma`, once a private page was written (see [`AnonVma`]).
    pub anon_vma: Option<AnonVma>,
}

impl VmaDesc {
    /// An anonymous descriptor for a VMA starting at `start`.
    pub fn anon(flags: VmFlags, start: u64) -> Self {
        VmaDesc {
            flags,
            kind: VmaKind::anon(),
            pgoff: start >> PAGE_SHIFT,
            uffd: None,
            anon_vma: None,
        }
    }

    /// The same descriptor for a piece starting `delta` bytes (page aligned) further in.
    pub(crate) fn advanced(&self, delta: u64) -> Self {
        let mut d = self.clone();
        d.pgoff = d.pgoff.wrapping_add(delta >> PAGE_SHIFT);
        d
    }

    /// Whether `self` covering `[.., boundary)` of `len_pages` pages may merge with `next`, which
    /// starts at the boundary: equal flags (`VM_ACCOUNT` included), same backing and name,
    /// contiguous file offsets, the same userfaultfd context, compatible `anon_vma`s
    /// ([`AnonVma::mergeable`]), and neither special (`VM_SPECIAL`).
    pub fn can_merge_with(&self, len_pages: u64, next: &VmaDesc) -> bool {
        self.flags == next.flags
            && !self.flags.intersects(VmFlags::SPECIAL)
            && self.kind.same(&next.kind)
            && self.pgoff.wrapping_add(len_pages) == next.pgoff
            && same_ctx(&self.uffd, &next.uffd)
            && AnonVma::mergeable(self.anon_vma, next.anon_vma)
    }
}

/// The mm side of the per-VMA locks: the sequence number and the lock counters that the
/// userfaultfd model's tests assert ([`ForkCounters`](crate::uffd::ForkCounters)).
#[derive(Debug)]
pub struct MmLockState {
    seq: AtomicI64,
    start_write_calls: AtomicU64,
    lock_acquisitions: AtomicU64,
}

impl MmLockState {
    pub(crate) fn new() -> Self {
        MmLockState {
            seq: AtomicI64::new(0),
            start_write_calls: AtomicU64::new(0),
            lock_acquisitions: AtomicU64::new(0),
        }
    }

    /// The current `mm_lock_seq`.
    pub fn seq(&self) -> i64 {
        // ORDERING: M2
        self.seq.load(Ordering::Acquire)
    }

    /// `vma_end_write_all`: called when the mmap write lock is released; unlocks every VMA that
    /// was write-locked under it.
    pub(crate) fn end_write_all(&self) {
        #[cfg(loom)]
        if crate::loom_knobs::relaxed_end_write_all() {
            self.seq.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // ORDERING: M2 (the release of every VMA write-locked in this period).
        self.seq.fetch_add(1, Ordering::AcqRel);
    }

    /// Calls of [`Vma::start_write`] so far.
    pub fn start_write_calls(&self) -> u64 {
        self.start_write_calls.load(Ordering::Relaxed)
    }

    /// Real per-VMA lock acquisitions so far (a `start_write` on a VMA not yet write-locked in
    /// this mmap-lock period).
    pub fn lock_acquisitions(&self) -> u64 {
        self.lock_acquisitions.load(Ordering::Relaxed)
    }
}

const WRITER: u32 = 1 << 31;

/// A VMA: bounds, descriptor, userfaultfd slot and per-VMA lock.
pub struct Vma {
    start: u64,
    end: u64,
    pgoff: u64,
    kind: VmaKind,
    flags: AtomicU64,
    uffd: ArcSlot<UffdCtx>,
    /// The packed `anon_vma` (0: none); set in place by the first private write fault.
    anon_vma: AtomicU64,
    /// The lock word: readers count in the low bits, [`WRITER`] while a writer holds it.
    lock: AtomicU32,
    /// `vm_lock_seq`: the `mm_lock_seq` under which this VMA was last write-locked.
    lock_seq: AtomicI64,
    detached: AtomicBool,
}

impl fmt::Debug for Vma {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vma")
            .field("start", &format_args!("{:#x}", self.start))
            .field("end", &format_args!("{:#x}", self.end))
            .field("flags", &self.flags())
            .field("pgoff", &self.pgoff)
            .field("kind", &self.kind)
            .field("uffd", &self.uffd().map(|c| Arc::as_ptr(&c)))
            .field("detached", &self.is_detached())
            .finish()
    }
}

impl Vma {
    /// A new VMA over `[start, end)` with `lock_seq` as its initial `vm_lock_seq` (`-1`:
    /// unlocked, as `vm_area_alloc` leaves it; the current `mm_lock_seq`: write-locked from
    /// birth, for VMAs a writer creates before publishing them).
    pub(crate) fn new(start: u64, end: u64, desc: VmaDesc, lock_seq: i64) -> Self {
        debug_assert!(start < end);
        Vma {
            start,
            end,
            pgoff: desc.pgoff,
            kind: desc.kind,
            flags: AtomicU64::new(desc.flags.bits()),
            uffd: ArcSlot::new(desc.uffd),
            anon_vma: AtomicU64::new(AnonVma::pack(desc.anon_vma)),
            lock: AtomicU32::new(0),
            lock_seq: AtomicI64::new(lock_seq),
            detached: AtomicBool::new(false),
        }
    }

    /// `vm_area_dup` plus `anon_vma_fork`: a copy for a fork child, context and uffd flags
    /// included, with a fresh lock (`vm_lock_seq = -1`). A parent VMA with an `anon_vma` gives
    /// the child a new one chained to it (none for `VM_WIPEONFORK`, which starts clean).
    pub(crate) fn dup(&self) -> Self {
        let mut d = self.desc();
        d.anon_vma = match d.anon_vma {
            Some(_) if !d.flags.contains(VmFlags::WIPEONFORK) => Some(AnonVma::fresh(true)),
            _ => None,
        };
        Vma::new(self.start, self.end, d, -1)
    }

    /// First address.
    #[inline]
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last address.
    #[inline]
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Always `false` (a VMA covers at least one page); here for clippy's `len` convention.
    #[inline]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Length in pages.
    #[inline]
    pub fn pages(&self) -> u64 {
        (self.end - self.start) >> PAGE_SHIFT
    }

    /// Whether `addr` lies in `[start, end)`.
    #[inline]
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    /// File offset of the first page, in pages.
    #[inline]
    pub fn pgoff(&self) -> u64 {
        self.pgoff
    }

    /// The backing.
    #[inline]
    pub fn kind(&self) -> &VmaKind {
        &self.kind
    }

    /// The flags.
    #[inline]
    pub fn flags(&self) -> VmFlags {
        // ORDERING: M3
        VmFlags(self.flags.load(Ordering::Acquire))
    }

    /// The userfaultfd context (a clone of the slot's `Arc`).
    pub fn uffd(&self) -> Option<Arc<UffdCtx>> {
        self.uffd.load_full()
    }

    /// Whether a userfaultfd context is attached (a load and a branch; no reference taken).
    #[inline]
    pub fn has_uffd(&self) -> bool {
        self.uffd.is_some()
    }

    /// The descriptor (flags, kind, pgoff, context).
    pub fn desc(&self) -> VmaDesc {
        VmaDesc {
            flags: self.flags(),
            kind: self.kind.clone(),
            pgoff: self.pgoff,
            uffd: self.uffd(),
            anon_vma: self.anon_vma(),
        }
    }

    /// The `anon_vma`, if a private page of this VMA was ever written.
    pub fn anon_vma(&self) -> Option<AnonVma> {
        // ORDERING: M3
        AnonVma::unpack(self.anon_vma.load(Ordering::Acquire))
    }

    /// Sets the `anon_vma` in place (the fault path, under the page-table lock, or a writer
    /// holding the VMA's write lock).
    pub(crate) fn set_anon_vma(&self, a: Option<AnonVma>) {
        // ORDERING: M3
        self.anon_vma.store(AnonVma::pack(a), Ordering::Release);
    }

    /// An owned copy of everything visible.
    pub fn snapshot(&self) -> VmaSnapshot {
        VmaSnapshot {
            start: self.start,
            end: self.end,
            desc: self.desc(),
        }
    }

    /// Whether the VMA has been removed from its mm (unmapped, replaced, or its mm torn down).
    #[inline]
    pub fn is_detached(&self) -> bool {
        // ORDERING: M3
        self.detached.load(Ordering::Acquire)
    }

    /// Marks the VMA detached. Must be write-locked.
    pub(crate) fn mark_detached(&self) {
        // ORDERING: M3
        self.detached.store(true, Ordering::Release);
    }

    /// Replaces the flags in place. The VMA must be write-locked (or not yet published).
    pub(crate) fn set_flags(&self, flags: VmFlags) {
        // ORDERING: M3
        self.flags.store(flags.bits(), Ordering::Release);
    }

    /// Replaces the userfaultfd context in place. The VMA must be write-locked (or unpublished).
    /// Storing "none" over "none" is a load: the kernel's store of a NULL context is one plain
    /// word store, while an `ArcSwap` store also waits out its readers' debts, a cost that
    /// belongs to this data structure, not to the modelled code path.
    pub(crate) fn set_uffd(&self, ctx: Option<Arc<UffdCtx>>) {
        if ctx.is_none() && !self.has_uffd() {
            return;
        }
        self.uffd.store(ctx);
    }

    /// `vm_lock_seq` (for tests and the fork model).
    pub fn lock_seq(&self) -> i64 {
        // ORDERING: M2
        self.lock_seq.load(Ordering::Acquire)
    }

    /// Whether the VMA is write-locked in the current period of `mm`'s mmap write lock.
    pub fn is_write_locked(&self, mm: &MmLockState) -> bool {
        self.lock_seq() == mm.seq()
    }

    /// `vma_start_write`: write-locks the VMA until the mmap write lock of its mm is released.
    /// The first call in a period takes the VMA's lock for real (waiting for lock-free readers
    /// to leave) and stamps the VMA; later calls only compare the stamp. Returns whether the
    /// lock was taken for real. The caller must hold the mmap write lock of `mm`.
    pub fn start_write(&self, mm: &MmLockState) -> bool {
        mm.start_write_calls.fetch_add(1, Ordering::Relaxed);
        let seq = mm.seq.load(Ordering::Relaxed);
        if self.lock_seq.load(Ordering::Relaxed) == seq {
            return false;
        }
        // down_write: keep new readers out, then wait for the current ones to leave.
        let mut spins = 0u32;
        loop {
            let s = self.lock.load(Ordering::Relaxed);
            // ORDERING: M1
            if s & WRITER == 0
                && self
                    .lock
                    .compare_exchange_weak(s, s | WRITER, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break;
            }
            backoff(&mut spins);
        }
        // ORDERING: M1
        while self.lock.load(Ordering::Acquire) != WRITER {
            backoff(&mut spins);
        }
        self.lock_seq.store(seq, Ordering::Relaxed);
        // up_write: publishes the stamp to every later reader.
        // ORDERING: M1
        self.lock.store(0, Ordering::Release);
        mm.lock_acquisitions.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// `vma_start_read`: tries to read-lock the VMA without blocking. Fails while the VMA is
    /// write-locked (its stamp equals `mm_lock_seq`) or a writer holds the lock word. On success
    /// the caller must call [`Vma::end_read`] (or use [`VmaReadGuard`](super::VmaReadGuard)).
    pub fn start_read(&self, mm: &MmLockState) -> bool {
        // Cheap check first; a stale answer here is corrected after locking.
        // ORDERING: M2
        if self.lock_seq.load(Ordering::Acquire) == mm.seq.load(Ordering::Acquire) {
            return false;
        }
        let mut s = self.lock.load(Ordering::Relaxed);
        loop {
            if s & WRITER != 0 {
                return false;
            }
            // ORDERING: M1
            match self
                .lock
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        #[cfg(loom)]
        if crate::loom_knobs::skip_read_recheck() {
            return true;
        }
        // With the lock held the stamp cannot change, and an mm_lock_seq read now is at least the
        // one under which any stamp we can see was written.
        // ORDERING: M2
        if self.lock_seq.load(Ordering::Acquire) == mm.seq.load(Ordering::Acquire) {
            self.end_read();
            return false;
        }
        true
    }

    /// `vma_end_read`: drops a read lock taken by [`Vma::start_read`].
    pub fn end_read(&self) {
        // ORDERING: M1
        let prev = self.lock.fetch_sub(1, Ordering::Release);
        debug_assert!(prev & !WRITER > 0, "end_read without start_read");
    }
}

/// An owned copy of a VMA's visible state.
#[derive(Clone, Debug)]
pub struct VmaSnapshot {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Flags, backing, offset and context.
    pub desc: VmaDesc,
}

impl VmaSnapshot {
    /// Whether two snapshots describe the same mapping: bounds, flags, offset, backing
    /// (same file object or equal anonymous names) and context identity.
    pub fn same_as(&self, other: &VmaSnapshot) -> bool {
        self.start == other.start
            && self.end == other.end
            && self.desc.flags == other.desc.flags
            && self.desc.pgoff == other.desc.pgoff
            && self.desc.kind.same(&other.desc.kind)
            && same_ctx(&self.desc.uffd, &other.desc.uffd)
    }
}
