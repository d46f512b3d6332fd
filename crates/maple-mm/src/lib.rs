//! A mini VMA manager on the maple tree: the kernel's own use of the tree, in userspace
//! (`mm/mmap.c`, `mm/vma.c`, `mm/mremap.c`, `kernel/fork.c` and the userfaultfd contexts of
//! `fs/userfaultfd.c`).
//!
//! An [`Mm`] is an address space: an allocation tree of [`Vma`]s stored over
//! `[start, end - 1]`, an mmap lock (reader/writer), per-VMA locks with the kernel's
//! sequence-count scheme, and a small page table so that fork's copy and `WIPEONFORK` have
//! something to act on.
//!
//! - Writers ([`MmWriteGuard`], from [`Mm::write`]) do mmap (fixed, fixed-noreplace, hinted and
//!   unhinted top-down or bottom-up placement), munmap, mprotect, madvise (fork flags), mremap,
//!   merging compatible neighbours and splitting partial VMAs. The tree is written in RCU mode,
//!   so lock-free readers stay correct throughout. A failing call leaves the `Mm` unchanged,
//!   except where the kernel itself stops half-way (see below).
//! - Readers either hold the mmap read lock ([`MmReadGuard`]: `find_vma`, `vma_lookup`,
//!   `find_vma_prev`, range iteration) or go lock-free: [`Mm::lock_vma_under_rcu`] finds a VMA
//!   under an epoch guard and read-locks it, failing (so that the caller falls back to the mmap
//!   lock) when it races with a writer.
//! - [`Mm::fork`] duplicates an address space the old way (in-order appends into a fresh tree)
//!   or the new way (`dup` of the tree, then an exact-fit replacement of every entry), with a
//!   [`ForkHook`] per VMA where the userfaultfd model plugs in.
//! - [`Mm::render_maps`] and [`Mm::from_maps`] write and read `/proc/PID/maps` text.
//!
//! # The kernel modelled
//!
//! The VMA rules are those of Linux 6.18 on x86-64 (with the 6.17 rewrite of mremap), and are
//! checked against the running kernel op by op by `tests/mm_live_kernel.rs` (real syscalls in a
//! reserved region of a forked child, userfaultfd registration included, `/proc/self/smaps`
//! compared after every op; the long run is `scripts/mm-live-kernel.sh`). In particular:
//!
//! - **Stopping half-way.** mprotect changes the VMAs in address order and stops at the first
//!   hole (`ENOMEM`) or the first VMA whose `VM_MAY*` bits refuse the protection (`EACCES`),
//!   the VMAs before it changed (`do_mprotect_pkey`). madvise skips holes, advising every piece
//!   in the range, and reports `ENOMEM` at the end, or stops at the first VMA that refuses the
//!   advice (`EINVAL`) (`madvise_walk_vmas`). A multi-VMA mremap move stops at the VMA it cannot
//!   move, the ones before it moved.
//! - **Merging.** Only a changed piece merges, with the neighbours it touches
//!   (`vma_merge_existing_range`, `vma_merge_new_range`); two untouched VMAs never merge. The
//!   merge rule compares flags (`VM_ACCOUNT` included), backing, offsets, the userfaultfd
//!   context and the `anon_vma`.
//! - **`anon_vma`** ([`AnonVma`]): assigned on the first private write fault, reusing a
//!   compatible neighbour's (`find_mergeable_anon_vma`), inherited by the pieces of a split,
//!   fresh per VMA in a fork child (`anon_vma_fork`; none for `VM_WIPEONFORK`). Two VMAs with
//!   different `anon_vma`s, or a fork child's VMA and one without, do not merge.
//! - **`VM_ACCOUNT`**: set on private writable mappings (`accountable_mapping`) and when mprotect
//!   first makes private memory writable; cleared when mprotect changes a never-written private
//!   anonymous VMA to a protection without `PROT_WRITE` (`mprotect_fixup`).
//! - **mremap** (6.17, `do_mremap`): a shrink or an unchanged size without `MREMAP_FIXED` may
//!   span several VMAs; `MREMAP_FIXED` with an unchanged size moves every VMA of the range,
//!   keeping the gaps between them (`remap_move`); a moved VMA that never had a page written
//!   takes the page offset of its new address (`copy_vma`), so it can merge there; without
//!   `EVENT_REMAP`, the VMA the copy merged into loses its userfaultfd registration
//!   (`mremap_userfaultfd_prep`), registered neighbours included; a registered VMA moves only
//!   alone (`vma_multi_allowed`).
//! - **Placement**: a hint is rounded down to its page (`round_hint_to_min`); 2 MiB-multiple
//!   private anonymous maps without a hint are placed THP-aligned
//!   (`thp_get_unmapped_area_vmflags`).
//! - **errno order**: as `do_mmap`, `do_mprotect_pkey`, `madvise_walk_vmas` and `do_mremap`
//!   check (e.g. `EEXIST` for `MAP_FIXED_NOREPLACE` and `EINVAL` for an unaligned fixed address
//!   come before `EACCES` for a shared writable map of a read-only file).
//!
//! Remaining simplifications (none is reached by the live differential):
//!
//! - Files are [`MappedFile`] objects: no file size (no `SIGBUS` model), no `noexec` mounts, no
//!   per-filesystem `get_unmapped_area` (so no THP alignment of large file maps, and every file
//!   allows a multi-VMA mremap), no `VM_SOFTDIRTY`, no NUMA policies, no anonymous VMA names in
//!   `anon_vma_compatible`.
//! - No rlimits (`RLIMIT_AS`, `RLIMIT_MEMLOCK`), no commit-limit accounting (`VM_ACCOUNT` is a
//!   flag only; `vm.overcommit_memory` is taken as not "never", so `MAP_NORESERVE` is always
//!   honoured), no mseal, no protection keys, no `MAP_HUGETLB`/`MAP_DROPPABLE`/`MAP_SYNC`,
//!   no `MREMAP_DONTUNMAP`, no `old_len == 0` duplication of shared mappings (`EINVAL`), no
//!   `PROT_GROWSDOWN`. Unknown flag or protection bits are refused with `EINVAL` even where the
//!   kernel ignores them.
//! - `max_map_count` is checked per engine step (an op that would exceed it fails before that
//!   step writes anything), which matches the kernel's bounds only approximately.
//! - Read faults do not allocate pages (the zero page); only writes assign an `anon_vma`, and a
//!   userfaultfd copy does not.
//! - [`Mm::from_maps`] cannot see `anon_vma`s, `MAP_NORESERVE` or a past `PROT_WRITE`: replayed
//!   VMAs have no `anon_vma` and private writable ones are charged.
//!
//! ```
//! use maple_mm::{MapFlags, MapSource, Mm, Prot, PAGE_SIZE};
//!
//! let mm = Mm::new();
//! let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::READ | Prot::WRITE, MapFlags::PRIVATE, MapSource::Anon).unwrap();
//! mm.mprotect(a + PAGE_SIZE, PAGE_SIZE, Prot::READ).unwrap(); // splits into three VMAs
//! assert_eq!(mm.map_count(), 3);
//! mm.mprotect(a + PAGE_SIZE, PAGE_SIZE, Prot::READ | Prot::WRITE).unwrap(); // merges back
//! assert_eq!(mm.map_count(), 1);
//! let child = mm.fork().unwrap();
//! assert_eq!(child.render_maps(), mm.render_maps());
//! mm.munmap(a, 4 * PAGE_SIZE).unwrap();
//! assert_eq!(mm.map_count(), 0);
//! assert_eq!(child.map_count(), 1); // independent
//! ```
//!
//! ## Tour: the VMA manager
//!
//! An [`Mm`] is an address space: an allocation tree of VMAs over `[start, end - 1]`, an
//! mmap lock, per-VMA locks and a small page table. Its calls take the kernel's arguments and
//! return the kernel's errors ([`MmError`], with [`errno`](MmError::errno)); a failing
//! call changes nothing. [`Mm::fork`](Mm::fork) duplicates it the way v6.8+ does (`dup` of
//! the tree, then an exact-fit store per VMA), [`fork_with`](Mm::fork_with) the old way too;
//! [`render_maps`](Mm::render_maps) / [`from_maps`](Mm::from_maps) write and read
//! `/proc/PID/maps` text, so a real layout can be replayed.
//!
//! ```
//! use maple_mm::{MapFlags, MapSource, Mm, MmError, Prot, PAGE_SIZE};
//!
//! let mm = Mm::new();
//! let rw = Prot::READ | Prot::WRITE;
//! let fixed = MapFlags::PRIVATE | MapFlags::FIXED;
//! let a = mm.mmap(0x1000_0000, 4 * PAGE_SIZE, rw, fixed, MapSource::Anon).unwrap();
//! assert_eq!(a, 0x1000_0000);
//! let noreplace = MapFlags::PRIVATE | MapFlags::FIXED_NOREPLACE;
//! assert_eq!(mm.mmap(a, PAGE_SIZE, rw, noreplace, MapSource::Anon), Err(MmError::Exist));
//!
//! // mprotect of the middle splits the VMA in three; find_vma / vma_lookup as in the kernel.
//! mm.mprotect(a + PAGE_SIZE, PAGE_SIZE, Prot::READ).unwrap();
//! assert_eq!(mm.map_count(), 3);
//! let v = mm.vma_lookup(a + PAGE_SIZE).unwrap();
//! assert_eq!((v.start, v.end), (a + PAGE_SIZE, a + 2 * PAGE_SIZE));
//! assert_eq!(mm.find_vma(a - 1).unwrap().start, a); // the first VMA ending above the address
//! assert!(mm.vma_lookup(a - 1).is_none());
//!
//! // munmap of the first two pages; the maps text shows what is left.
//! mm.munmap(a, 2 * PAGE_SIZE).unwrap();
//! assert_eq!(mm.render_maps(), "10002000-10004000 rw-p 00000000 00:00 0 \n");
//!
//! // fork copies every VMA; the two address spaces are independent afterwards.
//! let child = mm.fork().unwrap();
//! assert_eq!(child.render_maps(), mm.render_maps());
//! mm.munmap(a + 2 * PAGE_SIZE, PAGE_SIZE).unwrap();
//! assert_eq!((mm.map_count(), child.map_count()), (1, 1));
//! assert_eq!(child.find_vma(0).unwrap().start, a + 2 * PAGE_SIZE);
//! assert_eq!(child.exit(), 1); // exit_mmap: tears down, returns the VMA count
//! mm.validate().unwrap();
//! ```
//!
//! ## Tour: userfaultfd contexts ([`uffd`])
//!
//! A [`UffdCtx`](uffd::UffdCtx) is a userfaultfd context bound to one `Mm`:
//! [`register`](uffd::UffdCtx::register) / [`unregister`](uffd::UffdCtx::unregister)
//! tag VMAs over a range (splitting and merging them), missing-page faults and the
//! non-cooperative events (fork, remap, remove, unmap) are queued for
//! [`read`](uffd::UffdCtx::read). [`DupUffd`](uffd::DupUffd) is the fork hook
//! (`dup_userfaultfd`); its first argument switches the seed patch "userfaultfd: early return
//! in dup_userfaultfd()" on or off, and its [`counters`](uffd::DupUffd::counters) show
//! what the early return saves.
//!
//! ```
//! use maple_mm::uffd::{feature, mode, CostSetting, DupUffd, UffdCtx, UffdMsg};
//! use maple_mm::{DupMode, MapFlags, MapSource, Mm, MmError, Prot, PAGE_SIZE};
//! use std::sync::Arc;
//!
//! let mm = Arc::new(Mm::new());
//! let fixed = MapFlags::PRIVATE | MapFlags::FIXED;
//! let base = mm.mmap(0x1000_0000, 8 * PAGE_SIZE, Prot::READ | Prot::WRITE, fixed, MapSource::Anon).unwrap();
//!
//! // A context past its UFFDIO_API handshake that wants UNMAP events (but not FORK events).
//! let ctx = UffdCtx::with_features(&mm, feature::EVENT_UNMAP);
//! ctx.register(&mm, base + 2 * PAGE_SIZE, 2 * PAGE_SIZE, mode::MISSING).unwrap();
//! assert_eq!(mm.map_count(), 3); // split around the registered pages
//!
//! // fork with the early return off, then on: without it every VMA takes the write-lock path
//! // of dup_userfaultfd; with it only the registered one does. Without EVENT_FORK the child's
//! // VMAs lose the context either way.
//! for (early_return, write_locks) in [(false, 3), (true, 1)] {
//!     let mut hook = DupUffd::new(early_return, CostSetting::Faithful);
//!     let child = mm.fork_with(DupMode::Dup, &mut hook).unwrap();
//!     assert_eq!(hook.counters().dup_uffd_start_write_calls, write_locks);
//!     assert!(child.snapshot().iter().all(|v| v.desc.uffd.is_none()));
//! }
//!
//! // munmap of a registered page blocks until the monitor has read the UNMAP event.
//! let unmapper = {
//!     let mm = Arc::clone(&mm);
//!     std::thread::spawn(move || mm.munmap(base + 3 * PAGE_SIZE, PAGE_SIZE))
//! };
//! let msg = loop {
//!     match ctx.read(false) {
//!         Ok(msg) => break msg,
//!         Err(MmError::Again) => std::thread::yield_now(), // nothing queued yet
//!         Err(e) => panic!("{e}"),
//!     }
//! };
//! assert!(matches!(msg, UffdMsg::Unmap { start, end }
//!     if (start, end) == (base + 3 * PAGE_SIZE, base + 4 * PAGE_SIZE)));
//! unmapper.join().unwrap().unwrap();
//!
//! // Unregistering the last registered page merges it back into its neighbour.
//! ctx.unregister(&mm, base + 2 * PAGE_SIZE, PAGE_SIZE).unwrap();
//! let spans: Vec<_> = mm.snapshot().iter().map(|v| (v.start - base, v.end - base)).collect();
//! assert_eq!(spans, [(0, 3 * PAGE_SIZE), (4 * PAGE_SIZE, 8 * PAGE_SIZE)]);
//! ```
//!
//! [`real`] drives the real `userfaultfd(2)` where the system allows it.
//!
//! Cargo feature `bench-internals` (off by default; the crate's own tests and benches and the
//! seeds demo turn it on): experiment knobs that are not the kernel's behaviour, the fork cost
//! model's amplified setting (`uffd::CostSetting::Amplified`) and the fork+exit timing harness
//! (`uffd::fork_exit_run`). Under `--cfg loom --cfg crossbeam_loom` every atomic and lock is
//! loom's (the `sync` module) and `tests/loom_*.rs` model the per-VMA lock and the userfaultfd
//! event handshake.
//!

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

mod error;
mod fork;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_knobs;
mod maps;
mod mmap;
mod pages;
#[cfg(target_os = "linux")]
pub mod real;
mod sync;
pub mod uffd;
mod vma;

use maple_tree::Guard;
use sync::{Arc, AtomicU64, IdCounter, Mutex, Ordering, RwLock, RwLockReadGuard, RwLockWriteGuard};

use maple_tree::{Iter, MapleTree, Stats, TreeGuard, ValidateError};

pub use error::MmError;
pub use fork::{DupMode, ForkEnv, ForkHook, NoHook};
pub use maps::MapsError;
pub use mmap::{Advice, MapFlags, MapSource, MremapFlags, Prot, UnmappedAreaInfo};
pub use pages::PageFrame;
pub use vma::{
    AnonVma, FileKind, MappedFile, MmLockState, VmFlags, Vma, VmaDesc, VmaKind, VmaSnapshot,
};

use pages::PageTable;

/// Bytes per page.
pub const PAGE_SIZE: u64 = 4096;
/// `log2(PAGE_SIZE)`.
pub const PAGE_SHIFT: u32 = 12;

/// Rounds `x` up to a page boundary; `None` on overflow.
#[inline]
pub const fn page_align(x: u64) -> Option<u64> {
    match x.checked_add(PAGE_SIZE - 1) {
        Some(v) => Some(v & !(PAGE_SIZE - 1)),
        None => None,
    }
}

/// Whether `x` is page aligned.
#[inline]
pub const fn is_page_aligned(x: u64) -> bool {
    x & (PAGE_SIZE - 1) == 0
}

/// Address-space parameters (x86-64 defaults).
#[derive(Clone, Debug)]
pub struct MmConfig {
    /// `TASK_SIZE`: one past the highest user address.
    pub task_size: u64,
    /// `vm.mmap_min_addr`: nothing is placed below it; fixed mappings below it fail with `EPERM`.
    pub mmap_min_addr: u64,
    /// `mm->mmap_base`: where top-down placement starts (below the stack area).
    pub mmap_base: u64,
    /// `TASK_UNMAPPED_BASE`: where bottom-up placement (and the top-down fallback) starts.
    pub unmapped_base: u64,
    /// Bottom-up placement (`mmap_legacy_base` layout) instead of top-down.
    pub bottom_up: bool,
    /// `stack_guard_gap`: the gap kept below `VM_GROWSDOWN` VMAs.
    pub stack_guard_gap: u64,
    /// `vm.max_map_count`: operations that would leave more VMAs fail with `ENOMEM`.
    pub max_map_count: usize,
}

impl Default for MmConfig {
    fn default() -> Self {
        let task_size = (1u64 << 47) - PAGE_SIZE;
        MmConfig {
            task_size,
            mmap_min_addr: 0x10000,
            mmap_base: task_size - (128 << 20),
            unmapped_base: (task_size / 3) & !(PAGE_SIZE - 1),
            bottom_up: false,
            stack_guard_gap: 256 * PAGE_SIZE,
            max_map_count: 65530,
        }
    }
}

/// How lock-free lookups went (see [`Mm::with_vma`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LookupStats {
    /// Lookups that found and read-locked a VMA without the mmap lock.
    pub lockless: u64,
    /// Lock-free attempts that failed because the VMA was write-locked (`VMA_LOCK_MISS`).
    pub miss_locked: u64,
    /// Lock-free attempts that read-locked a VMA that had been detached or no longer covered the
    /// address, and retried (`VMA_LOCK_RETRY`).
    pub retried: u64,
    /// Lookups that ended under the mmap read lock.
    pub fallback: u64,
}

#[derive(Default)]
struct LookupCounters {
    lockless: AtomicU64,
    miss_locked: AtomicU64,
    retried: AtomicU64,
    fallback: AtomicU64,
}

/// Writer-side state protected by the mmap lock.
#[derive(Debug, Default)]
struct MmState {
    map_count: usize,
}

static NEXT_MM_ID: IdCounter = IdCounter::new(1);

/// The VMA tree: an allocation tree on the default epoch collector; under loom on a collector of
/// its own (no thread-local epoch handles, which loom tears down before a failed model's
/// destructors run; guards of one `Mm` then do not fit another's tree).
fn new_tree() -> MapleTree<Arc<Vma>> {
    #[cfg(not(loom))]
    return MapleTree::new_alloc();
    #[cfg(loom)]
    return MapleTree::with_options(
        maple_tree::Options::new()
            .alloc(true)
            .collector(maple_tree::Collector::new()),
    );
}

/// An address space (`struct mm_struct`). Share it between threads with an `Arc`; every method
/// takes `&self` and locks what it needs.
pub struct Mm {
    id: u64,
    cfg: MmConfig,
    tree: MapleTree<Arc<Vma>>,
    mmap_lock: RwLock<MmState>,
    locks: MmLockState,
    pages: Mutex<PageTable>,
    lookups: LookupCounters,
    /// The gate VMA (`[vsyscall]`): shown last in the maps text, outside the tree.
    gate: Option<VmaSnapshot>,
}

impl Default for Mm {
    fn default() -> Self {
        Self::with_config(MmConfig::default())
    }
}

impl std::fmt::Debug for Mm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mm")
            .field("id", &self.id)
            .field("map_count", &self.map_count())
            .finish()
    }
}

impl Mm {
    /// An empty address space with the default (x86-64) configuration.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty address space.
    pub fn with_config(cfg: MmConfig) -> Self {
        Mm {
            id: NEXT_MM_ID.next(),
            cfg,
            tree: new_tree(),
            mmap_lock: RwLock::new(MmState::default()),
            locks: MmLockState::new(),
            pages: Mutex::new(PageTable::default()),
            lookups: LookupCounters::default(),
            gate: None,
        }
    }

    /// A process-wide unique id of this address space.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The configuration.
    pub fn config(&self) -> &MmConfig {
        &self.cfg
    }

    /// A read-only view of the VMA tree (lock-free reads, statistics, validation). Writes go
    /// through the mmap write lock ([`Mm::write`]) only.
    pub fn tree(&self) -> VmaTree<'_> {
        VmaTree(&self.tree)
    }

    /// The per-VMA lock sequence and its counters.
    pub fn lock_state(&self) -> &MmLockState {
        &self.locks
    }

    /// `mmap_read_lock`.
    pub fn read(&self) -> MmReadGuard<'_> {
        MmReadGuard {
            mm: self,
            state: self.mmap_lock.read(),
            guard: self.tree.pin(),
        }
    }

    /// `mmap_write_lock`. Dropping the guard is `mmap_write_unlock`: it ends the write lock of
    /// every VMA locked under it.
    pub fn write(&self) -> MmWriteGuard<'_> {
        MmWriteGuard {
            mm: self,
            state: self.mmap_lock.write(),
            guard: self.tree.pin(),
            events: uffd::PendingEvents::default(),
        }
    }

    /// Pins an epoch guard for [`Mm::lock_vma_under_rcu`].
    pub fn pin(&self) -> TreeGuard<'_> {
        self.tree.pin()
    }

    /// Number of VMAs (takes the mmap read lock).
    pub fn map_count(&self) -> usize {
        self.mmap_lock.read().map_count
    }

    /// The gate VMA, if this address space was parsed from a maps text that had one.
    pub fn gate(&self) -> Option<&VmaSnapshot> {
        self.gate.as_ref()
    }

    /// Snapshots of every VMA in address order (takes the mmap read lock).
    pub fn snapshot(&self) -> Vec<VmaSnapshot> {
        self.read().vmas().map(Vma::snapshot).collect()
    }

    /// Checks the tree's invariants, that every entry covers exactly its VMA's bounds, that no
    /// VMA in the tree is detached, and that the map count matches.
    pub fn validate(&self) -> Result<(), String> {
        let r = self.read();
        self.tree
            .validate()
            .map_err(|e: ValidateError| format!("tree: {e:?}"))?;
        let mut n = 0usize;
        let mut last_end = 0u64;
        for (range, v) in self.tree.iter(&r.guard) {
            n += 1;
            let (first, last) = (*range.start(), *range.end());
            if first != v.start() || last != v.end() - 1 {
                return Err(format!("entry [{first:#x}, {last:#x}] holds {v:?}"));
            }
            if v.is_detached() {
                return Err(format!("detached VMA in the tree: {v:?}"));
            }
            if !is_page_aligned(v.start()) || !is_page_aligned(v.end()) || v.start() < last_end {
                return Err(format!("bad bounds: {v:?}"));
            }
            if v.end() > self.cfg.task_size {
                return Err(format!("VMA beyond TASK_SIZE: {v:?}"));
            }
            let uffd_flags = v.flags().intersects(VmFlags::UFFD_FLAGS);
            if uffd_flags != v.has_uffd() {
                return Err(format!(
                    "invariant I1 (context iff uffd flags) broken: {v:?}"
                ));
            }
            last_end = v.end();
        }
        if n != r.state.map_count {
            return Err(format!(
                "map_count {} but {} VMAs in the tree",
                r.state.map_count, n
            ));
        }
        Ok(())
    }

    // ----- lock-free lookup -----------------------------------------------------------------

    /// `lock_vma_under_rcu`: finds the VMA containing `addr` without the mmap lock and
    /// read-locks it. Fails — the caller then falls back to the mmap read lock — when there is
    /// no VMA at `addr`, when the VMA is write-locked by a writer, or when the VMA found was
    /// detached or moved before it could be locked.
    ///
    /// ```
    /// use maple_mm::{MapFlags, MapSource, Mm, Prot, VmaLockMiss, PAGE_SIZE};
    /// let mm = Mm::new();
    /// let a = mm.mmap(0, PAGE_SIZE, Prot::READ, MapFlags::PRIVATE, MapSource::Anon).unwrap();
    /// let guard = mm.pin();
    /// let vma = mm.lock_vma_under_rcu(a, &guard).unwrap();
    /// assert_eq!(vma.start(), a);
    /// drop(vma);
    /// assert_eq!(mm.lock_vma_under_rcu(a + PAGE_SIZE, &guard).err(), Some(VmaLockMiss::NoVma));
    /// let w = mm.write();
    /// // A VMA the writer locked cannot be read-locked until the mmap write lock is released.
    /// w.vma_lookup(a).unwrap().start_write(mm.lock_state());
    /// assert_eq!(mm.lock_vma_under_rcu(a, &guard).err(), Some(VmaLockMiss::Locked));
    /// drop(w);
    /// assert!(mm.lock_vma_under_rcu(a, &guard).is_ok());
    /// ```
    pub fn lock_vma_under_rcu<'g>(
        &'g self,
        addr: u64,
        guard: &'g Guard,
    ) -> Result<VmaReadGuard<'g>, VmaLockMiss> {
        let Some(vma) = self.tree.load(addr, guard) else {
            return Err(VmaLockMiss::NoVma);
        };
        if !vma.start_read(&self.locks) {
            return Err(VmaLockMiss::Locked);
        }
        #[cfg(loom)]
        if crate::loom_knobs::skip_detached_check() {
            return Ok(VmaReadGuard { vma });
        }
        // Found before a writer detached or shrank it, locked after the writer was done.
        if vma.is_detached() || !vma.contains(addr) {
            vma.end_read();
            return Err(VmaLockMiss::Stale);
        }
        Ok(VmaReadGuard { vma })
    }

    /// Runs `f` on the VMA containing `addr` (or `None`), the way the page-fault path finds it:
    /// lock-free first ([`Mm::lock_vma_under_rcu`], retried a few times when the VMA found was
    /// stale), then under the mmap read lock. The VMA cannot change while `f` runs.
    pub fn with_vma<R>(&self, addr: u64, f: impl FnOnce(Option<&Vma>) -> R) -> R {
        {
            let guard = self.pin();
            for _ in 0..3 {
                match self.lock_vma_under_rcu(addr, &guard) {
                    Ok(v) => {
                        self.lookups.lockless.fetch_add(1, Ordering::Relaxed);
                        return f(Some(&v));
                    }
                    Err(VmaLockMiss::Stale) => {
                        self.lookups.retried.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Err(VmaLockMiss::Locked) => {
                        self.lookups.miss_locked.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                    Err(VmaLockMiss::NoVma) => break,
                }
            }
        }
        self.lookups.fallback.fetch_add(1, Ordering::Relaxed);
        let r = self.read();
        f(r.vma_lookup(addr))
    }

    /// Counters of [`Mm::with_vma`].
    pub fn lookup_stats(&self) -> LookupStats {
        LookupStats {
            lockless: self.lookups.lockless.load(Ordering::Relaxed),
            miss_locked: self.lookups.miss_locked.load(Ordering::Relaxed),
            retried: self.lookups.retried.load(Ordering::Relaxed),
            fallback: self.lookups.fallback.load(Ordering::Relaxed),
        }
    }

    // ----- one-call façade (each takes the mmap write lock) ----------------------------------

    /// [`MmWriteGuard::mmap`] under its own write lock.
    pub fn mmap(
        &self,
        addr: u64,
        len: u64,
        prot: Prot,
        flags: MapFlags,
        src: MapSource,
    ) -> Result<u64, MmError> {
        self.write().mmap(addr, len, prot, flags, src)
    }

    /// [`MmWriteGuard::munmap`] under its own write lock.
    pub fn munmap(&self, addr: u64, len: u64) -> Result<Vec<VmaSnapshot>, MmError> {
        self.write().munmap(addr, len)
    }

    /// [`MmWriteGuard::mprotect`] under its own write lock.
    pub fn mprotect(&self, addr: u64, len: u64, prot: Prot) -> Result<(), MmError> {
        self.write().mprotect(addr, len, prot)
    }

    /// [`MmWriteGuard::madvise`] under its own write lock. For `MADV_DONTNEED` on VMAs whose
    /// userfaultfd context wants REMOVE events, the events are delivered (and waited for) with
    /// the lock dropped *before* the pages go, as `userfaultfd_remove` does; the range is then
    /// zapped under a new lock.
    pub fn madvise(&self, addr: u64, len: u64, advice: Advice) -> Result<(), MmError> {
        if advice != Advice::DontNeed {
            return self.write().madvise(addr, len, advice);
        }
        let events = {
            let mut w = self.write();
            let (stop, _) = w.madvise_walk(addr, len, advice)?;
            w.remove_events(addr, stop);
            w.take_events()
        };
        if events.is_empty() {
            return self.write().madvise(addr, len, advice);
        }
        uffd::PendingEvents::complete_all(events);
        // The lock was dropped: walk the range again, then zap without new events.
        let w = self.write();
        let (stop, res) = w.madvise_walk(addr, len, advice)?;
        self.pages.lock().zap(addr, stop);
        res
    }

    /// [`MmWriteGuard::mremap`] under its own write lock.
    pub fn mremap(
        &self,
        old_addr: u64,
        old_len: u64,
        new_len: u64,
        flags: MremapFlags,
        new_addr: u64,
    ) -> Result<u64, MmError> {
        self.write()
            .mremap(old_addr, old_len, new_len, flags, new_addr)
    }

    /// [`MmReadGuard::find_vma`] as a snapshot.
    pub fn find_vma(&self, addr: u64) -> Option<VmaSnapshot> {
        self.read().find_vma(addr).map(Vma::snapshot)
    }

    /// [`MmReadGuard::vma_lookup`] as a snapshot.
    pub fn vma_lookup(&self, addr: u64) -> Option<VmaSnapshot> {
        self.read().vma_lookup(addr).map(Vma::snapshot)
    }
}

/// Why [`Mm::lock_vma_under_rcu`] gave up (the kernel returns NULL in every case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmaLockMiss {
    /// No VMA contains the address (as far as a lock-free walk can tell).
    NoVma,
    /// The VMA is write-locked: a writer is changing it.
    Locked,
    /// The VMA was detached or no longer covers the address by the time it was locked.
    Stale,
}

/// A read-only view of an [`Mm`]'s VMA tree ([`Mm::tree`]): the maple tree's read side only
/// (each VMA is stored over `[start, end - 1]`).
///
/// ```
/// use maple_mm::{MapFlags, MapSource, Mm, Prot, PAGE_SIZE};
/// let mm = Mm::new();
/// let a = mm.mmap(0, 2 * PAGE_SIZE, Prot::READ, MapFlags::PRIVATE, MapSource::Anon).unwrap();
/// let t = mm.tree();
/// let g = t.pin();
/// assert_eq!(t.load(a + PAGE_SIZE, &g).map(|v| v.start()), Some(a));
/// assert_eq!(t.iter(&g).count(), 1);
/// t.validate().unwrap();
/// ```
#[derive(Clone, Copy)]
pub struct VmaTree<'a>(&'a MapleTree<Arc<Vma>>);

impl<'a> VmaTree<'a> {
    /// Pins a guard for the reads below.
    pub fn pin(&self) -> TreeGuard<'a> {
        self.0.pin()
    }

    /// The VMA containing `addr`.
    pub fn load<'g>(&self, addr: u64, guard: &'g Guard) -> Option<&'g Vma>
    where
        'a: 'g,
    {
        self.0.load(addr, guard)
    }

    /// Every VMA in address order, as `(range, vma)` with `range = start..=end - 1`.
    pub fn iter<'g>(&self, guard: &'g Guard) -> Iter<'g, Arc<Vma>>
    where
        'a: 'g,
    {
        self.0.iter(guard)
    }

    /// The VMAs overlapping the address range `r`, in address order.
    pub fn range<'g>(
        &self,
        r: impl std::ops::RangeBounds<u64>,
        guard: &'g Guard,
    ) -> Iter<'g, Arc<Vma>>
    where
        'a: 'g,
    {
        self.0.range(r, guard)
    }

    /// Number of VMAs stored.
    pub fn count(&self) -> usize {
        self.0.count()
    }

    /// Height of the tree.
    pub fn height(&self) -> usize {
        self.0.height()
    }

    /// The tree's write-path statistics.
    pub fn stats(&self) -> Stats {
        self.0.stats()
    }

    /// Checks the tree's invariants.
    pub fn validate(&self) -> Result<(), ValidateError> {
        self.0.validate()
    }

    /// A text dump of the nodes (for debugging).
    pub fn dump(&self) -> String {
        self.0.dump()
    }
}

impl std::fmt::Debug for VmaTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VmaTree")
            .field("height", &self.height())
            .finish_non_exhaustive()
    }
}

/// A VMA read-locked by [`Mm::lock_vma_under_rcu`]; unlocks on drop. While it lives, no writer
/// changes or detaches the VMA.
pub struct VmaReadGuard<'g> {
    vma: &'g Vma,
}

impl std::ops::Deref for VmaReadGuard<'_> {
    type Target = Vma;
    fn deref(&self) -> &Vma {
        self.vma
    }
}

impl std::fmt::Debug for VmaReadGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("VmaReadGuard").field(self.vma).finish()
    }
}

impl Drop for VmaReadGuard<'_> {
    fn drop(&mut self) {
        self.vma.end_read();
    }
}

/// Read-side queries shared by both guards.
macro_rules! vma_reads {
    () => {
        /// `find_vma`: the first VMA that ends above `addr` (contains it or lies above it).
        pub fn find_vma(&self, addr: u64) -> Option<&Vma> {
            let mut idx = addr;
            self.mm.tree.find(&mut idx, u64::MAX, &self.guard)
        }

        /// `vma_lookup`: the VMA containing `addr`.
        pub fn vma_lookup(&self, addr: u64) -> Option<&Vma> {
            self.mm.tree.load(addr, &self.guard)
        }

        /// `find_vma_prev`: [`find_vma`](Self::find_vma) and the VMA before it (or, when no VMA
        /// ends above `addr`, the last VMA).
        pub fn find_vma_prev(&self, addr: u64) -> (Option<&Vma>, Option<&Vma>) {
            let vma = self.find_vma(addr);
            let from = vma.map_or(addr, |v| v.start());
            let prev = self.mm.tree.prev(from, 0, &self.guard).map(|(_, v)| v);
            (vma, prev)
        }

        /// Every VMA in address order (`for_each_vma`).
        pub fn vmas(&self) -> impl DoubleEndedIterator<Item = &Vma> + '_ {
            self.mm.tree.iter(&self.guard).map(|(_, v)| v)
        }

        /// The VMAs that intersect `[start, end)` (`for_each_vma_range`).
        pub fn vmas_in(&self, start: u64, end: u64) -> impl DoubleEndedIterator<Item = &Vma> + '_ {
            let last = end.saturating_sub(1);
            let empty = start >= end;
            self.mm
                .tree
                .range(start..=last, &self.guard)
                .filter(move |_| !empty)
                .map(|(_, v)| v)
        }

        /// Number of VMAs.
        pub fn map_count(&self) -> usize {
            self.state.map_count
        }

        /// The address space this guard locks.
        pub fn mm(&self) -> &Mm {
            self.mm
        }
    };
}

/// The mmap lock held for reading (`mmap_read_lock`).
pub struct MmReadGuard<'a> {
    mm: &'a Mm,
    state: RwLockReadGuard<'a, MmState>,
    guard: TreeGuard<'a>,
}

impl MmReadGuard<'_> {
    vma_reads!();

    /// The maps text (see [`Mm::render_maps`]).
    pub fn render_maps(&self) -> String {
        maps::render(self.vmas(), self.mm.gate.as_ref())
    }
}

/// The mmap lock held for writing (`mmap_write_lock`). Dropping it is `mmap_write_unlock`,
/// which first ends the write lock of every VMA locked under it (`vma_end_write_all`).
pub struct MmWriteGuard<'a> {
    mm: &'a Mm,
    state: RwLockWriteGuard<'a, MmState>,
    guard: TreeGuard<'a>,
    /// userfaultfd events prepared under the lock. Declared after `state`, so they complete
    /// (each waiting for its monitor) after the mmap lock has been released.
    events: uffd::PendingEvents,
}

impl MmWriteGuard<'_> {
    vma_reads!();

    /// The maps text.
    pub fn render_maps(&self) -> String {
        maps::render(self.vmas(), self.mm.gate.as_ref())
    }
}

impl Drop for MmWriteGuard<'_> {
    fn drop(&mut self) {
        // vma_end_write_all, then the mmap lock itself is released when `state` drops.
        self.mm.locks.end_write_all();
    }
}

impl Drop for Mm {
    fn drop(&mut self) {
        // exit_mmap: detach every VMA (their holders, e.g. userfaultfd bookkeeping, see it), then
        // tear down the tree and the page table.
        let mut w = self.tree.exclusive();
        {
            let mut it = w.iter();
            for (_, v) in it.by_ref() {
                v.mark_detached();
            }
        }
        w.clear();
    }
}

#[cfg(test)]
mod tests;
