//! Gaps: the largest NULL range per subtree (allocation trees track it in internal nodes), the
//! searches `empty_area`/`empty_area_rev` with the kernel's window rules (K§2.3), and allocation.
//!
//! A gap's size is the number of indices it covers, saturating at `u64::MAX` (the whole space has
//! `2^64` indices). Saturation is why a search with `max = u64::MAX` still finds gaps in the
//! leftmost subtree, unlike the 6.12 kernel (SPEC §1.1 quirk 3).

use crossbeam_epoch::Guard;

use crate::entry::{is_reserved_word, Entry};
use crate::error::Error;
use crate::sync::AtomicUsize;

use super::node::{Kind, NodeRef, RANGE_PIVOTS, RANGE_SLOTS};
use super::rebuild::node_slots;
use super::walk::root_node;
use super::write::WriteGuard;
use super::MapleTree;

/// Size of the NULL range `[lo, hi]`, saturating.
#[inline]
pub(crate) fn range_size(lo: u64, hi: u64) -> u64 {
    (hi - lo).saturating_add(1)
}

/// The largest NULL range of a leaf covering `[min, max]`.
pub(crate) fn leaf_max_gap(n: NodeRef<'_>, min: u64, max: u64) -> u64 {
    let mut best = 0;
    let mut lo = min;
    for i in 0..RANGE_SLOTS {
        let last = i == RANGE_PIVOTS;
        let hi = if last { max } else { n.range_pivot(i).min(max) };
        if n.range_slot(i) == 0 {
            best = best.max(range_size(lo, hi));
        }
        if last || hi >= max {
            break;
        }
        lo = hi + 1;
    }
    best
}

fn check_window(min: u64, max: u64, size: u64) -> Result<(), Error> {
    if min > max || size == 0 || max - min < size - 1 {
        Err(Error::InvalidWindow)
    } else {
        Ok(())
    }
}

/// Where a NULL range `[lo, hi]` admits `size` indices inside `[min, max]`, if it does.
#[inline]
fn fit(lo: u64, hi: u64, min: u64, max: u64, size: u64, rev: bool) -> Option<u64> {
    let a = lo.max(min);
    let b = hi.min(max);
    if a > b || b - a < size - 1 {
        return None;
    }
    Some(if rev { b - (size - 1) } else { a })
}

fn search(
    n: NodeRef<'_>,
    nmin: u64,
    nmax: u64,
    internal: Kind,
    (min, max, size, rev): (u64, u64, u64, bool),
) -> Option<u64> {
    let mut slots = [(0u64, 0u64, 0usize); 16];
    let mut len = 0;
    for s in node_slots(n, nmin, nmax) {
        slots[len] = s;
        len += 1;
    }
    let order = |i: usize| if rev { len - 1 - i } else { i };
    for k in 0..len {
        let i = order(k);
        let (lo, hi, w) = slots[i];
        if hi < min || lo > max {
            continue;
        }
        if n.is_leaf() {
            if w == 0 {
                if let Some(s) = fit(lo, hi, min, max, size, rev) {
                    return Some(s);
                }
            }
            continue;
        }
        // The child must be able to hold `size` inside the window at all.
        if hi.min(max) - lo.max(min) < size - 1 {
            continue;
        }
        if internal == Kind::ARange && n.gap(i) < size {
            continue;
        }
        // SAFETY-free: `child` decodes the slot under the caller's guard.
        let c = n.child(i, internal);
        if let Some(s) = search(c, lo, hi, internal, (min, max, size, rev)) {
            return Some(s);
        }
    }
    None
}

/// `mas_empty_area` (`rev = false`) and `mas_empty_area_rev` (`rev = true`).
pub(crate) fn empty_area_at(
    root: &AtomicUsize,
    internal: Kind,
    min: u64,
    max: u64,
    size: u64,
    rev: bool,
) -> Result<u64, Error> {
    check_window(min, max, size)?;
    let Some(r) = root_node(root, internal) else {
        return Ok(if rev { max - (size - 1) } else { min });
    };
    search(r, 0, u64::MAX, internal, (min, max, size, rev)).ok_or(Error::NoRoom)
}

/// [`empty_area_at`] on a tree, under a guard.
pub(crate) fn empty_area<E: Entry>(
    tree: &MapleTree<E>,
    min: u64,
    max: u64,
    size: u64,
    rev: bool,
    guard: &Guard,
) -> Result<u64, Error> {
    tree.check_guard(guard);
    empty_area_at(&tree.root, tree.internal, min, max, size, rev)
}

impl<E: Entry> WriteGuard<'_, E> {
    /// `mas_empty_area` under the writer: the lowest start of a free `size`-range in `[min, max]`.
    pub fn empty_area(&self, min: u64, max: u64, size: u64) -> Result<u64, Error> {
        empty_area_at(self.root, self.internal, min, max, size, false)
    }

    /// `mas_empty_area_rev` under the writer: the highest fit in `[min, max]`.
    pub fn empty_area_rev(&self, min: u64, max: u64, size: u64) -> Result<u64, Error> {
        empty_area_at(self.root, self.internal, min, max, size, true)
    }

    /// Converts an entry, refusing reserved words (a faulty `Entry` implementation).
    pub(crate) fn entry_word(entry: E) -> Result<usize, Error> {
        let w = entry.into_word();
        if is_reserved_word(w) {
            // SAFETY: `w` came from `into_word` just now; taking it back drops it once.
            drop(unsafe { E::from_word(w) });
            return Err(Error::Reserved);
        }
        Ok(w)
    }

    fn alloc_common(
        &mut self,
        entry: E,
        size: u64,
        min: u64,
        max: u64,
        rev: bool,
    ) -> Result<u64, Error> {
        if !self.is_alloc() {
            return Err(Error::NotAllocTree);
        }
        let start = empty_area_at(self.root, self.internal, min, max, size, rev)?;
        let w = Self::entry_word(entry)?;
        self.write(start, start + (size - 1), w);
        Ok(start)
    }

    /// `mtree_alloc_range`: inserts `entry` at the lowest free `[start, start + size - 1]` in
    /// `[min, max]`; returns `start`.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// assert_eq!(w.alloc_range(Value::new(1), 10, 100, 1000), Ok(100));
    /// assert_eq!(w.alloc_range(Value::new(2), 10, 100, 1000), Ok(110));
    /// assert_eq!(w.alloc_rrange(Value::new(3), 10, 100, 1000), Ok(991));
    /// ```
    pub fn alloc_range(&mut self, entry: E, size: u64, min: u64, max: u64) -> Result<u64, Error> {
        self.alloc_common(entry, size, min, max, false)
    }

    /// `mtree_alloc_rrange`: the highest fit.
    pub fn alloc_rrange(&mut self, entry: E, size: u64, min: u64, max: u64) -> Result<u64, Error> {
        self.alloc_common(entry, size, min, max, true)
    }

    /// `mtree_alloc_cyclic`: one index in `[lo, hi]`, searching from `*next` and then wrapping
    /// to `lo`. Returns the index and whether this allocation reports a wrap; `*next` becomes the
    /// index + 1 (wrapping to 0, which makes the next success report a wrap, as the kernel's
    /// `MT_FLAGS_ALLOC_WRAPPED` does).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut next = u64::MAX - 1;
    /// assert_eq!(tree.alloc_cyclic(Value::new(1), 2, u64::MAX, &mut next), Ok((u64::MAX - 1, false)));
    /// assert_eq!(tree.alloc_cyclic(Value::new(2), 2, u64::MAX, &mut next), Ok((u64::MAX, false)));
    /// assert_eq!(next, 0);
    /// assert_eq!(tree.alloc_cyclic(Value::new(3), 2, u64::MAX, &mut next), Ok((2, true)));
    /// ```
    pub fn alloc_cyclic(
        &mut self,
        entry: E,
        lo: u64,
        hi: u64,
        next: &mut u64,
    ) -> Result<(u64, bool), Error> {
        if !self.is_alloc() {
            return Err(Error::NotAllocTree);
        }
        if lo > hi {
            return Err(Error::InvalidWindow);
        }
        let from = lo.max(*next);
        let mut wrapped_search = false;
        let found = if from <= hi {
            empty_area_at(self.root, self.internal, from, hi, 1, false).ok()
        } else {
            None
        };
        let index = match found {
            Some(i) => i,
            None => {
                if from > lo {
                    wrapped_search = true;
                    empty_area_at(self.root, self.internal, lo, hi, 1, false)?
                } else {
                    return Err(Error::NoRoom);
                }
            }
        };
        let w = Self::entry_word(entry)?;
        self.write(index, index, w);
        *next = index.wrapping_add(1);
        let wrapped = if wrapped_search {
            true
        } else if self.st.cyclic_wrapped {
            self.st.cyclic_wrapped = false;
            true
        } else {
            false
        };
        if *next == 0 {
            self.st.cyclic_wrapped = true;
        }
        Ok((index, wrapped))
    }
}
