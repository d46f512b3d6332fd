//! fork (`dup_mmap`) the old way and the new way (`__mt_dup`, kernel commit "fork: use
//! __mt_dup() to duplicate maple tree in dup_mmap()"), with a per-VMA hook (where
//! `dup_userfaultfd` plugs in).
//!
//! For every parent VMA, in address order, both ways do what the kernel does:
//!
//! 1. write-lock the parent VMA (`vma_start_write(mpnt)`);
//! 2. `VM_DONTCOPY`: leave it out of the child;
//! 3. `vm_area_dup`: a copy with the parent's flags and userfaultfd context and a fresh lock
//!    (`vm_lock_seq = -1`, while the child mm starts at `mm_lock_seq = 0`);
//! 4. the hook (`dup_userfaultfd`);
//! 5. `vm_flags_clear(tmp, VM_LOCKED_MASK)`, which write-locks the child VMA first;
//! 6. store the child VMA — old way: appended to a fresh tree; new way: over the parent's entry
//!    in a `dup` of the parent's tree, an exact fit that cannot fail;
//! 7. copy the page-table entries unless `VM_WIPEONFORK`.
//!
//! No VMAs are merged during fork. Afterwards both mmap write locks are released (the child's
//! first, as `mm_lock_seq` moves on the VMAs unlock) and the hook's `complete` runs — or its
//! `fail`, if the hook refused a VMA, in which case the child is torn down and the parent is
//! unchanged.

use crate::sync::Arc;

use super::{Mm, MmError, MmLockState, VmFlags, Vma};

/// How `dup_mmap` builds the child's tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DupMode {
    /// v6.1–v6.7: a fresh tree filled by in-order stores (each one the three-way append).
    Append,
    /// v6.8+: `__mt_dup` of the parent's tree, then every entry replaced by the child's VMA
    /// (exact fits), `DONTCOPY` ranges cleared.
    Dup,
}

/// What a [`ForkHook`] may use of the child.
pub struct ForkEnv<'a> {
    /// The child's id ([`Mm::id`]).
    pub child_id: u64,
    /// The child's per-VMA lock state: `start_write` on child VMAs goes through it.
    pub child_locks: &'a MmLockState,
    /// The parent.
    pub parent: &'a Mm,
}

/// Per-VMA fork hook: where the userfaultfd model's `dup_userfaultfd` plugs in.
pub trait ForkHook {
    /// Called on each child VMA after `vm_area_dup`, before it is stored (`dup_userfaultfd`).
    /// An error aborts the fork: the child is torn down, [`ForkHook::fail`] runs.
    fn dup_vma(&mut self, env: &ForkEnv<'_>, child: &Vma) -> Result<(), MmError>;

    /// Whether the `VM_LOCKED_MASK` clear after the hook write-locks the child VMA, as the
    /// kernel's `vm_flags_clear` does (the faithful cost setting). `false` models the
    /// "amplified" experiment setting (`uffd::CostSetting`, feature `bench-internals`).
    fn locked_clear_write_locks(&self) -> bool {
        true
    }

    /// After a successful fork, with both mmap locks released (`dup_userfaultfd_complete`).
    fn complete(&mut self, _child: &Mm) {}

    /// After a failed fork, with both mmap locks released (`dup_userfaultfd_fail`).
    fn fail(&mut self) {}
}

/// A hook that does nothing (a kernel without userfaultfd).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHook;

impl ForkHook for NoHook {
    fn dup_vma(&mut self, _env: &ForkEnv<'_>, _child: &Vma) -> Result<(), MmError> {
        Ok(())
    }
}

impl Mm {
    /// fork's `dup_mmap` the new way ([`DupMode::Dup`]) without a hook.
    pub fn fork(&self) -> Result<Mm, MmError> {
        self.fork_with(DupMode::Dup, &mut NoHook)
    }

    /// fork's `dup_mmap`: a child address space with a copy of every VMA except `DONTCOPY`
    /// ones (same bounds, flags minus `VM_LOCKED_MASK`, backing, offset and context as the
    /// hook leaves it) and the parent's pages (shared copy-on-write; none for `WIPEONFORK`).
    ///
    /// ```
    /// use maple_mm::{Advice, DupMode, MapFlags, MapSource, Mm, NoHook, Prot, PAGE_SIZE};
    /// let mm = Mm::new();
    /// let a = mm.mmap(0, 3 * PAGE_SIZE, Prot::READ | Prot::WRITE, MapFlags::PRIVATE, MapSource::Anon).unwrap();
    /// mm.madvise(a, PAGE_SIZE, Advice::DontFork).unwrap();
    /// for mode in [DupMode::Append, DupMode::Dup] {
    ///     let child = mm.fork_with(mode, &mut NoHook).unwrap();
    ///     assert_eq!(child.map_count(), 1);
    ///     assert_eq!(child.find_vma(0).unwrap().start, a + PAGE_SIZE);
    ///     child.validate().unwrap();
    /// }
    /// ```
    pub fn fork_with<H: ForkHook>(&self, mode: DupMode, hook: &mut H) -> Result<Mm, MmError> {
        let parent = self.write();
        let mut child = Mm::with_config(self.cfg.clone());
        child.gate = self.gate.clone();
        let res = match mode {
            DupMode::Append => dup_append(self, &mut child, hook),
            DupMode::Dup => dup_tree(self, &mut child, hook),
        };
        // mmap_write_unlock(child), then mmap_write_unlock(parent).
        child.locks.end_write_all();
        drop(parent);
        match res {
            Ok(count) => {
                child.mmap_lock.get_mut().map_count = count;
                hook.complete(&child);
                Ok(child)
            }
            Err(e) => {
                hook.fail();
                drop(child);
                Err(e)
            }
        }
    }

    /// exit_mmap: tears the address space down and returns how many VMAs it had. (Dropping an
    /// `Mm` does the same.)
    pub fn exit(self) -> usize {
        self.mmap_lock.read().map_count
    }
}

/// Steps 3–5 for one parent VMA: the child's copy, hooked and with the locked bits cleared.
fn dup_one<H: ForkHook>(
    parent: &Mm,
    child_id: u64,
    child_locks: &MmLockState,
    hook: &mut H,
    v: &Vma,
) -> Result<Vma, MmError> {
    let tmp = v.dup();
    let env = ForkEnv {
        child_id,
        child_locks,
        parent,
    };
    hook.dup_vma(&env, &tmp)?;
    // vm_flags_clear(tmp, VM_LOCKED_MASK): always write-locks the child VMA first.
    if hook.locked_clear_write_locks() {
        tmp.start_write(child_locks);
    }
    tmp.set_flags(tmp.flags().without(VmFlags::LOCKED_MASK));
    Ok(tmp)
}

/// The old way: a fresh tree, one in-order store per copied VMA.
fn dup_append<H: ForkHook>(parent: &Mm, child: &mut Mm, hook: &mut H) -> Result<usize, MmError> {
    let child_id = child.id;
    let Mm {
        tree,
        locks: child_locks,
        pages: child_pages,
        ..
    } = child;
    let child_pages = child_pages.get_mut();
    let ppages = parent.pages.lock();
    let copy_pages = !ppages.is_empty();
    let guard = parent.tree.pin();
    let mut w = tree.exclusive();
    let mut count = 0;
    for (_, v) in parent.tree.iter(&guard) {
        v.start_write(&parent.locks);
        if v.flags().contains(VmFlags::DONTCOPY) {
            continue;
        }
        let tmp = dup_one(parent, child_id, child_locks, hook, v)?;
        let (start, end, wipe) = (
            tmp.start(),
            tmp.end(),
            tmp.flags().contains(VmFlags::WIPEONFORK),
        );
        let r = w.store_range(start..end, Arc::new(tmp));
        debug_assert!(r.is_ok());
        count += 1;
        if copy_pages && !wipe {
            ppages.copy_range_to(child_pages, start, end);
        }
    }
    Ok(count)
}

/// The new way: `dup` the parent's tree, then replace each entry with the child's VMA.
fn dup_tree<H: ForkHook>(parent: &Mm, child: &mut Mm, hook: &mut H) -> Result<usize, MmError> {
    let child_id = child.id;
    child.tree = parent.tree.dup();
    let Mm {
        tree,
        locks: child_locks,
        pages: child_pages,
        ..
    } = child;
    let child_pages = child_pages.get_mut();
    let ppages = parent.pages.lock();
    let copy_pages = !ppages.is_empty();
    let mut w = tree.exclusive();
    let mut c = w.cursor(0);
    let mut count = 0;
    let mut failed = None;
    loop {
        // The entry is still the parent's VMA (an `Arc` clone made by `dup`).
        let (tmp, dontcopy) = match c.find(u64::MAX) {
            None => break,
            Some(v) => {
                v.start_write(&parent.locks);
                if v.flags().contains(VmFlags::DONTCOPY) {
                    (None, true)
                } else {
                    match dup_one(parent, child_id, child_locks, hook, v) {
                        Ok(tmp) => (Some(tmp), false),
                        Err(e) => {
                            failed = Some((v.start(), e));
                            break;
                        }
                    }
                }
            }
        };
        if dontcopy {
            // vma_iter_clear_gfp: a NULL store over the range; the cursor moves to the widened
            // empty range and the next find continues after it.
            let r = c.store_null();
            debug_assert!(r.is_ok());
            continue;
        }
        let Some(tmp) = tmp else { break };
        let (start, end, wipe) = (
            tmp.start(),
            tmp.end(),
            tmp.flags().contains(VmFlags::WIPEONFORK),
        );
        debug_assert_eq!((c.index(), c.last()), (start, end - 1));
        // vma_iter_bulk_store: an exact fit over the parent's entry.
        let r = c.store(Arc::new(tmp));
        debug_assert!(r.is_ok());
        count += 1;
        if copy_pages && !wipe {
            ppages.copy_range_to(child_pages, start, end);
        }
    }

    if let Some((at, e)) = failed {
        // The entries from the failing VMA on still hold the parent's VMAs: take them out, so
        // that tearing the child down only touches the child's own VMAs (what newer kernels do
        // instead of the old XA_ZERO_ENTRY marker).
        let r = w.erase_range(at..=u64::MAX);
        debug_assert!(r.is_ok());
        return Err(e);
    }
    Ok(count)
}
