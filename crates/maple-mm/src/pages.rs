//! A small page table: which pages of an address space are populated and with what.
//!
//! Frames are shared by `Arc`: fork copies the table entries of every VMA it copies (unless the
//! VMA is `WIPEONFORK`), a private write to a frame that another table also references copies
//! it first (copy-on-write), and a shared VMA writes into the frame itself.

use crate::sync::{Arc, Mutex};
use std::collections::BTreeMap;

use super::uffd::{FaultWaiterHandle, UffdCtx};
use super::{is_page_aligned, AnonVma, Mm, MmError, VmFlags, Vma, VmaKind, PAGE_SIZE};

/// One page of memory.
pub struct PageFrame {
    data: Mutex<Box<[u8; PAGE_SIZE as usize]>>,
}

impl std::fmt::Debug for PageFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageFrame")
    }
}

impl PageFrame {
    /// A zero-filled page.
    pub fn zeroed() -> Arc<Self> {
        Arc::new(PageFrame {
            data: Mutex::new(Box::new([0u8; PAGE_SIZE as usize])),
        })
    }

    /// A page holding `bytes` (zero-padded; at most one page is used).
    pub fn from_bytes(bytes: &[u8]) -> Arc<Self> {
        let mut b = Box::new([0u8; PAGE_SIZE as usize]);
        let n = bytes.len().min(PAGE_SIZE as usize);
        b[..n].copy_from_slice(&bytes[..n]);
        Arc::new(PageFrame {
            data: Mutex::new(b),
        })
    }

    /// Copies `out.len()` bytes from offset `off`.
    ///
    /// # Errors
    ///
    /// [`MmError::Fault`] if `[off, off + out.len())` does not lie inside the page; nothing is
    /// copied then.
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result<(), MmError> {
        let r = Self::span(off, out.len())?;
        out.copy_from_slice(&self.data.lock()[r]);
        Ok(())
    }

    /// Writes `bytes` at offset `off`.
    ///
    /// # Errors
    ///
    /// [`MmError::Fault`] if `[off, off + bytes.len())` does not lie inside the page; nothing is
    /// written then.
    pub fn write(&self, off: usize, bytes: &[u8]) -> Result<(), MmError> {
        let r = Self::span(off, bytes.len())?;
        self.data.lock()[r].copy_from_slice(bytes);
        Ok(())
    }

    fn span(off: usize, len: usize) -> Result<core::ops::Range<usize>, MmError> {
        match off.checked_add(len) {
            Some(end) if end <= PAGE_SIZE as usize => Ok(off..end),
            _ => Err(MmError::Fault),
        }
    }

    fn duplicate(&self) -> Arc<Self> {
        Arc::new(PageFrame {
            data: Mutex::new(self.data.lock().clone()),
        })
    }
}

/// What a page access does next.
enum Step {
    Done,
    Wait(Arc<UffdCtx>, FaultWaiterHandle),
}

/// Page-aligned address → frame.
#[derive(Default)]
pub(crate) struct PageTable {
    map: BTreeMap<u64, Arc<PageFrame>>,
}

impl PageTable {
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn get(&self, addr: u64) -> Option<&Arc<PageFrame>> {
        self.map.get(&addr)
    }

    pub(crate) fn insert(&mut self, addr: u64, frame: Arc<PageFrame>) {
        self.map.insert(addr, frame);
    }

    /// Drops the entries of `[lo, hi)` (`zap_page_range`).
    pub(crate) fn zap(&mut self, lo: u64, hi: u64) {
        if lo >= hi || self.map.is_empty() {
            return;
        }
        let keys: Vec<u64> = self.map.range(lo..hi).map(|(&k, _)| k).collect();
        for k in keys {
            self.map.remove(&k);
        }
    }

    /// Copies the entries of `[lo, hi)` into `child` (`copy_page_range`).
    pub(crate) fn copy_range_to(&self, child: &mut PageTable, lo: u64, hi: u64) {
        for (&k, f) in self.map.range(lo..hi) {
            child.map.insert(k, Arc::clone(f));
        }
    }

    /// Moves the entries of `[lo, hi)` to start at `to` (`move_page_tables`).
    pub(crate) fn move_range(&mut self, lo: u64, hi: u64, to: u64) {
        let moved: Vec<(u64, Arc<PageFrame>)> = self
            .map
            .range(lo..hi)
            .map(|(&k, f)| (k, Arc::clone(f)))
            .collect();
        self.zap(lo, hi);
        for (k, f) in moved {
            self.map.insert(k - lo + to, f);
        }
    }
}

impl Mm {
    /// Reads `buf.len()` bytes at `addr` as a user access would: every page must lie in a
    /// readable VMA (else `EFAULT`); pages never written read as zeros.
    pub fn read_bytes(&self, addr: u64, buf: &mut [u8]) -> Result<(), MmError> {
        self.access(addr, buf.len(), false, |frame, off, range| match frame {
            // `access` hands out in-page spans only.
            Some(f) => {
                let _ = f.read(off, &mut buf[range]);
            }
            None => buf[range].fill(0),
        })
    }

    /// Writes `data` at `addr` as a user access would: every page must lie in a writable VMA
    /// (else `EFAULT`); missing pages are allocated, shared-with-a-fork private pages copied.
    ///
    /// ```
    /// use maple_mm::{MapFlags, MapSource, Mm, Prot, PAGE_SIZE};
    /// let mm = Mm::new();
    /// let a = mm.mmap(0, 2 * PAGE_SIZE, Prot::READ | Prot::WRITE, MapFlags::PRIVATE, MapSource::Anon).unwrap();
    /// mm.write_bytes(a + PAGE_SIZE - 2, b"hello").unwrap();
    /// let child = mm.fork().unwrap();
    /// mm.write_bytes(a + PAGE_SIZE - 2, b"HE").unwrap(); // copy-on-write: the child keeps its copy
    /// let mut buf = [0u8; 5];
    /// child.read_bytes(a + PAGE_SIZE - 2, &mut buf).unwrap();
    /// assert_eq!(&buf, b"hello");
    /// mm.read_bytes(a + PAGE_SIZE - 2, &mut buf).unwrap();
    /// assert_eq!(&buf, b"HEllo");
    /// ```
    pub fn write_bytes(&self, addr: u64, data: &[u8]) -> Result<(), MmError> {
        self.access(addr, data.len(), true, |frame, off, range| {
            if let Some(f) = frame {
                // `access` hands out in-page spans only.
                let _ = f.write(off, &data[range]);
            }
        })
    }

    /// Number of populated pages.
    pub fn resident_pages(&self) -> usize {
        self.pages.lock().len()
    }

    /// Whether the page containing `addr` is populated.
    pub fn is_populated(&self, addr: u64) -> bool {
        self.pages.lock().get(addr & !(PAGE_SIZE - 1)).is_some()
    }

    /// Walks `[addr, addr + len)` page by page, with each page's VMA locked the way the fault
    /// path locks it, calling `f(frame, offset in page, range in the caller's buffer)`.
    fn access(
        &self,
        addr: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(Option<&Arc<PageFrame>>, usize, core::ops::Range<usize>),
    ) -> Result<(), MmError> {
        let end = addr.checked_add(len as u64).ok_or(MmError::Fault)?;
        let mut pos = addr;
        while pos < end {
            let page = pos & !(PAGE_SIZE - 1);
            let chunk_end = (page + PAGE_SIZE).min(end);
            let off = (pos - page) as usize;
            let range = (pos - addr) as usize..(chunk_end - addr) as usize;
            let step = self.with_vma(pos, |vma| -> Result<Step, MmError> {
                let vma = vma.ok_or(MmError::Fault)?;
                let need = if write { VmFlags::WRITE } else { VmFlags::READ };
                if !vma.flags().contains(need) {
                    return Err(MmError::Fault);
                }
                let mut pt = self.pages.lock();
                if pt.get(page).is_none() && vma.flags().contains(VmFlags::UFFD_MISSING) {
                    // handle_userfault: queue the fault while the VMA is still locked, sleep
                    // after it is released.
                    // A released context (its VMAs about to be cleared) no longer takes faults:
                    // the kernel retries until the VMA is cleared, which ends as the normal fault
                    // below.
                    if let Some(ctx) = vma.uffd() {
                        if let Some(h) = ctx.queue_fault(pos, write)? {
                            return Ok(Step::Wait(ctx, h));
                        }
                    }
                }
                if write {
                    if !vma.flags().contains(VmFlags::MAYSHARE) {
                        self.anon_vma_prepare(vma);
                    }
                    let frame = self.frame_for_write(&mut pt, vma, page);
                    f(Some(&frame), off, range.clone());
                } else {
                    f(pt.get(page), off, range.clone());
                }
                Ok(Step::Done)
            })?;
            match step {
                Step::Done => pos = chunk_end,
                // VM_FAULT_RETRY: the fault starts over once resolved (or released).
                Step::Wait(ctx, h) => ctx.wait_fault(&h),
            }
        }
        Ok(())
    }

    /// `__anon_vma_prepare` on a private write fault: a VMA without an `anon_vma` reuses its
    /// next (then previous) neighbour's when the two could have been one VMA apart from their
    /// protection and that neighbour's chain is singular (`find_mergeable_anon_vma`), else gets
    /// a new one. Called with the page-table lock held and the VMA read-locked.
    fn anon_vma_prepare(&self, vma: &Vma) {
        if vma.anon_vma().is_some() {
            return;
        }
        let guard = self.tree.pin();
        // anon_vma_compatible(a, b) and reusable_anon_vma(old, a, b).
        let compatible = |a: &Vma, b: &Vma| {
            let same_file = match (a.kind(), b.kind()) {
                (VmaKind::Anon(_), VmaKind::Anon(_)) => true,
                (VmaKind::File(x), VmaKind::File(y)) => Arc::ptr_eq(x, y),
                _ => false,
            };
            a.end() == b.start()
                && same_file
                && (a.flags().bits() ^ b.flags().bits()) & !VmFlags::PROT_MASK.bits() == 0
                && b.pgoff() == a.pgoff().wrapping_add(a.pages())
        };
        let reusable = |old: &Vma, a: &Vma, b: &Vma| {
            if compatible(a, b) {
                old.anon_vma().filter(|x| !x.forked)
            } else {
                None
            }
        };
        let next = self
            .tree
            .load(vma.end(), &guard)
            .and_then(|n| reusable(n, vma, n));
        let found = next.or_else(|| {
            let p = self.tree.load(vma.start().checked_sub(1)?, &guard)?;
            reusable(p, p, vma)
        });
        vma.set_anon_vma(Some(found.unwrap_or_else(|| AnonVma::fresh(false))));
    }

    fn frame_for_write(&self, pt: &mut PageTable, vma: &Vma, page: u64) -> Arc<PageFrame> {
        debug_assert!(is_page_aligned(page));
        match pt.get(page) {
            // Private mapping and another table holds the frame: break the sharing.
            Some(fr) if !vma.flags().contains(VmFlags::MAYSHARE) && Arc::strong_count(fr) > 1 => {
                let copy = fr.duplicate();
                pt.insert(page, Arc::clone(&copy));
                copy
            }
            Some(fr) => Arc::clone(fr),
            None => {
                let fr = PageFrame::zeroed();
                pt.insert(page, Arc::clone(&fr));
                fr
            }
        }
    }
}
