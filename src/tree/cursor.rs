//! The cursor: the kernel's `ma_state` with its status machine (K§2.4).
//!
//! A cursor holds a requested or found range (`index`, `last`), a [`Status`], and a cached path
//! so that moving to a neighbouring range is `O(1)` amortised. [`Cursor`] reads lock-free under
//! a guard; [`CursorMut`] lives inside a [`WriteGuard`] and can also store and erase, with the
//! iteration staying correct after its own writes (K `check_iteration`).
//!
//! This tree never keeps an entry directly in the root pointer (the kernel's optional `ma_root`
//! case), so the `root` status does not occur. The reserved zero entry is skipped by the
//! entry-seeking moves (`find`, `next`, `prev`, ...) and reported by [`Cursor::is_zero`] on the
//! range moves.

use core::marker::PhantomData;

use crate::entry::{Entry, ZERO_WORD};
use crate::error::Error;

use super::node::{Kind, Root};
use super::walk::Walker;
use super::write::WriteGuard;
use super::{borrow_word, MapleTree};

/// Where a cursor stands (`enum maple_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The next operation walks from the root (`ma_start`).
    Start,
    /// Positioned on a range (`ma_active`).
    Active,
    /// Nothing there: the tree is empty (`ma_none`).
    None,
    /// Stale; resumes after `last` (forwards) or before `index` (backwards) (`ma_pause`).
    Pause,
    /// The last forward move hit its limit (`ma_overflow`).
    Overflow,
    /// The last backward move hit its limit (`ma_underflow`).
    Underflow,
}

/// Position logic shared by both cursors.
struct Core<'g> {
    w: Walker<'g>,
    /// The walker's position is current.
    valid: bool,
    index: u64,
    last: u64,
    status: Status,
}

impl<'g> Core<'g> {
    fn new(root: &'g Root, internal: Kind, index: u64) -> Self {
        Core {
            w: Walker::from_parts(root, internal),
            valid: false,
            index,
            last: index,
            status: Status::Start,
        }
    }

    fn is_entry(word: usize) -> bool {
        word != 0 && word != ZERO_WORD
    }

    /// Walks to `index`; sets the range to the slot's. `false` for an empty tree.
    fn walk_to(&mut self, index: u64) -> bool {
        if self.w.walk(index).is_none() {
            self.valid = false;
            self.status = Status::None;
            self.index = 0;
            self.last = u64::MAX;
            return false;
        }
        self.valid = true;
        self.take_pos();
        self.status = Status::Active;
        true
    }

    fn take_pos(&mut self) {
        self.index = self.w.lo;
        self.last = self.w.hi;
    }

    /// Makes sure the walker sits on `[index, last]` (after a pause or a write).
    fn ensure(&mut self) -> bool {
        if self.valid {
            return true;
        }
        let i = self.index;
        self.walk_to(i)
    }

    fn walk(&mut self) -> usize {
        let i = self.index;
        if self.walk_to(i) {
            self.w.word
        } else {
            0
        }
    }

    /// Forward scan from the current slot (exclusive) for an entry with `lo <= max`. On failure
    /// the range is the last slot inspected (never past `max`) and `fail` is the status.
    fn scan_next(&mut self, max: u64, fail: Status) -> usize {
        if max == u64::MAX {
            // No limit to stop at: the walker's tight entry loop (`find` to the end, as in
            // dup_mmap's loop); on failure it stands on the last slot.
            if self.w.next_entry().is_some() {
                self.take_pos();
                self.status = Status::Active;
                return self.w.word;
            }
            if self.w.depth > 0 {
                self.take_pos();
            }
            self.status = fail;
            return 0;
        }
        loop {
            if self.w.hi >= max || self.w.hi == u64::MAX {
                self.take_pos();
                self.status = fail;
                return 0;
            }
            let saved = (self.w.lo, self.w.hi);
            if self.w.next_slot().is_none() {
                self.status = fail;
                return 0;
            }
            if self.w.lo > max {
                // Should not happen (hi < max above); keep the previous range.
                self.index = saved.0;
                self.last = saved.1;
                self.valid = false;
                self.status = fail;
                return 0;
            }
            if Self::is_entry(self.w.word) {
                self.take_pos();
                self.status = Status::Active;
                return self.w.word;
            }
        }
    }

    fn scan_prev(&mut self, min: u64) -> usize {
        loop {
            if self.w.lo <= min || self.w.lo == 0 {
                self.take_pos();
                self.status = Status::Underflow;
                return 0;
            }
            if self.w.prev_slot().is_none() {
                self.status = Status::Underflow;
                return 0;
            }
            if Self::is_entry(self.w.word) {
                self.take_pos();
                self.status = Status::Active;
                return self.w.word;
            }
        }
    }

    fn find(&mut self, max: u64) -> usize {
        match self.status {
            Status::Start | Status::None | Status::Pause => {
                let from = if self.status == Status::Pause {
                    if self.last == u64::MAX {
                        return 0;
                    }
                    self.last + 1
                } else {
                    self.index
                };
                if from > max {
                    return 0;
                }
                if !self.walk_to(from) {
                    return 0;
                }
                if Self::is_entry(self.w.word) {
                    return self.w.word;
                }
                self.scan_next(max, Status::Active)
            }
            Status::Overflow | Status::Underflow => {
                if !self.ensure() {
                    return 0;
                }
                if Self::is_entry(self.w.word) && self.w.lo <= max {
                    self.status = Status::Active;
                    return self.w.word;
                }
                self.scan_next(max, Status::Active)
            }
            Status::Active => {
                if !self.ensure() {
                    return 0;
                }
                self.scan_next(max, Status::Active)
            }
        }
    }

    fn find_rev(&mut self, min: u64) -> usize {
        match self.status {
            Status::Start | Status::None | Status::Pause => {
                let from = if self.status == Status::Pause {
                    if self.index == 0 {
                        return 0;
                    }
                    self.index - 1
                } else {
                    self.index
                };
                if from < min {
                    self.status = Status::Underflow;
                    return 0;
                }
                if !self.walk_to(from) {
                    return 0;
                }
                if Self::is_entry(self.w.word) {
                    return self.w.word;
                }
                self.scan_prev(min)
            }
            // From overflow (as the kernel's find_rev setup) the cursor is active again and moves
            // to the previous entry.
            Status::Active | Status::Underflow | Status::Overflow => {
                if !self.ensure() {
                    return 0;
                }
                self.scan_prev(min)
            }
        }
    }

    fn next(&mut self, max: u64) -> usize {
        match self.status {
            Status::Start | Status::None | Status::Pause => {
                let i = self.index;
                if !self.walk_to(i) {
                    return 0;
                }
                self.scan_next(max, Status::Overflow)
            }
            // After underflow the entry at the current position comes first (kernel `mas_next`).
            Status::Underflow => {
                if !self.ensure() {
                    return 0;
                }
                if Self::is_entry(self.w.word) && self.w.lo <= max {
                    self.status = Status::Active;
                    return self.w.word;
                }
                self.scan_next(max, Status::Overflow)
            }
            _ => {
                if !self.ensure() {
                    return 0;
                }
                self.scan_next(max, Status::Overflow)
            }
        }
    }

    fn prev(&mut self, min: u64) -> usize {
        match self.status {
            Status::Start | Status::None | Status::Pause => {
                let i = self.index;
                if !self.walk_to(i) {
                    return 0;
                }
                self.scan_prev(min)
            }
            Status::Overflow => {
                if !self.ensure() {
                    return 0;
                }
                if Self::is_entry(self.w.word) && self.w.hi >= min {
                    self.status = Status::Active;
                    return self.w.word;
                }
                self.scan_prev(min)
            }
            _ => {
                if !self.ensure() {
                    return 0;
                }
                self.scan_prev(min)
            }
        }
    }

    /// `mas_next_range`: one slot forwards, NULL ranges included. Leaving underflow follows
    /// `mas_next_setup`: a range already ending at or past `max` overflows at once; otherwise
    /// the current range comes first if it is occupied (an entry or a zero entry), and an empty
    /// one is stepped over like an active cursor's.
    fn next_range(&mut self, max: u64) -> usize {
        if self.status == Status::Underflow {
            if self.last >= max {
                self.status = Status::Overflow;
                return 0;
            }
            if !self.ensure() {
                return 0;
            }
            self.take_pos();
            self.status = Status::Active;
            if self.w.word != 0 {
                return self.w.word;
            }
        }
        self.step_next_range(max)
    }

    /// One slot forwards, NULL ranges included.
    fn step_next_range(&mut self, max: u64) -> usize {
        if matches!(self.status, Status::Start | Status::None | Status::Pause) {
            let i = self.index;
            if !self.walk_to(i) {
                return 0;
            }
        } else if !self.ensure() {
            return 0;
        }
        if self.w.hi >= max || self.w.next_slot().is_none() {
            self.status = Status::Overflow;
            return 0;
        }
        self.take_pos();
        self.status = Status::Active;
        self.w.word
    }

    /// `mas_prev_range`: one slot backwards, NULL ranges included. Leaving overflow follows
    /// `mas_prev_setup`: a range already starting at or below `min` underflows at once;
    /// otherwise the current range comes first if it is occupied (an entry or a zero entry),
    /// and an empty one is stepped over like an active cursor's.
    fn prev_range(&mut self, min: u64) -> usize {
        if self.status == Status::Overflow {
            if self.index <= min {
                self.status = Status::Underflow;
                return 0;
            }
            if !self.ensure() {
                return 0;
            }
            self.take_pos();
            self.status = Status::Active;
            if self.w.word != 0 {
                return self.w.word;
            }
        }
        self.step_prev_range(min)
    }

    /// One slot backwards, NULL ranges included.
    fn step_prev_range(&mut self, min: u64) -> usize {
        if matches!(self.status, Status::Start | Status::None | Status::Pause) {
            let i = self.index;
            if !self.walk_to(i) {
                return 0;
            }
        } else if !self.ensure() {
            return 0;
        }
        if self.w.lo <= min || self.w.prev_slot().is_none() {
            self.status = Status::Underflow;
            return 0;
        }
        self.take_pos();
        self.status = Status::Active;
        self.w.word
    }

    fn find_range(&mut self, max: u64) -> usize {
        if matches!(self.status, Status::Start | Status::None | Status::Pause) {
            return self.find(max);
        }
        self.step_next_range(max)
    }

    fn find_range_rev(&mut self, min: u64) -> usize {
        if matches!(
            self.status,
            Status::Start | Status::None | Status::Pause | Status::Overflow
        ) {
            return self.find_rev(min);
        }
        self.prev_range(min)
    }
}

macro_rules! cursor_reads {
    ($lt:lifetime) => {
        /// The requested or found range's first index (`mas.index`).
        pub fn index(&self) -> u64 {
            self.core.index
        }

        /// The requested or found range's last index (`mas.last`).
        pub fn last(&self) -> u64 {
            self.core.last
        }

        /// The status.
        pub fn status(&self) -> Status {
            self.core.status
        }

        /// Whether the current range holds the reserved zero entry.
        pub fn is_zero(&self) -> bool {
            self.core.valid && self.core.w.word == ZERO_WORD
        }

        /// Sets the range to `[index, index]` and resets (`mas_set`).
        pub fn set(&mut self, index: u64) {
            self.set_range(index, index);
        }

        /// Sets the range and resets (`mas_set_range`).
        pub fn set_range(&mut self, first: u64, last: u64) {
            self.core.index = first;
            self.core.last = last;
            self.reset();
        }

        /// The next operation walks from the root (`mas_reset`).
        pub fn reset(&mut self) {
            self.core.status = Status::Start;
            self.core.valid = false;
        }

        /// Marks the cursor stale (`mas_pause`): the next move resumes after `last` (forwards) or
        /// before `index` (backwards), re-walking from the root.
        pub fn pause(&mut self) {
            self.core.status = Status::Pause;
            self.core.valid = false;
        }

        /// Re-walks to `index` and returns its entry (`mas_walk`); the range becomes the whole
        /// slot, empty or not.
        pub fn walk(&mut self) -> Option<E::Borrowed<$lt>> {
            let w = self.core.walk();
            // SAFETY: read under the guard (or writer) of this cursor's lifetime.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_find`: the entry at `index` or the next one starting at or below `max`; later
        /// calls move to the next entry.
        pub fn find(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.find(max);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_find_rev`: the entry at `index` or the previous one ending at or above `min`.
        pub fn find_rev(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.find_rev(min);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_find_range`: like `find` on the first call, then one range at a time, empty ones
        /// included (returning `None` for them while staying active).
        pub fn find_range(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.find_range(max);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_find_range_rev`.
        pub fn find_range_rev(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.find_range_rev(min);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_next`: the next entry after the current range that starts at or below `max`;
        /// `None` and [`Status::Overflow`] at the limit.
        pub fn next(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.next(max);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_prev`: the previous entry that ends at or above `min`; `None` and
        /// [`Status::Underflow`] at the limit.
        pub fn prev(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.prev(min);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_next_range`: one range forwards, empty or not.
        pub fn next_range(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.next_range(max);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }

        /// `mas_prev_range`: one range backwards, empty or not.
        pub fn prev_range(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w = self.core.prev_range(min);
            // SAFETY: as in `walk`.
            unsafe { borrow_word::<E>(w) }
        }
    };
}

/// A lock-free read cursor (see [`MapleTree::cursor`]).
///
/// ```
/// use maple_tree::{MapleTree, Value, Status};
/// let tree = MapleTree::<Value>::new();
/// for i in 0..10u64 {
///     tree.store_range(i * 10, i * 10 + 5, Value::new(i)).unwrap();
/// }
/// let guard = tree.pin();
/// let mut c = tree.cursor(0, &guard);
/// let mut seen = vec![];
/// while let Some(v) = c.find(u64::MAX) {
///     seen.push((c.index(), c.last(), v.get()));
/// }
/// assert_eq!(seen.len(), 10);
/// assert_eq!(seen[3], (30, 35, 3));
/// c.set(95);
/// assert_eq!(c.prev(0).map(|v| v.get()), Some(8));
/// assert_eq!(c.prev(86), None);
/// assert_eq!(c.status(), Status::Underflow);
/// ```
pub struct Cursor<'g, E: Entry> {
    core: Core<'g>,
    _e: PhantomData<&'g E>,
}

impl<'g, E: Entry + 'g> Cursor<'g, E> {
    pub(crate) fn new(tree: &'g MapleTree<E>, index: u64) -> Self {
        Cursor {
            core: Core::new(&tree.root, tree.internal, index),
            _e: PhantomData,
        }
    }

    cursor_reads!('g);
}

/// A cursor that can also write (from [`WriteGuard::cursor`]).
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// let tree = MapleTree::<Value>::new();
/// for i in 0..20u64 {
///     tree.store_range(i * 10, i * 10 + 9, Value::new(i)).unwrap();
/// }
/// let mut w = tree.lock();
/// let mut c = w.cursor(0);
/// while let Some(v) = c.find(u64::MAX) {
///     if v.get() % 2 == 1 {
///         c.erase(); // erase while iterating
///     }
/// }
/// drop(w);
/// assert_eq!(tree.count(), 10);
/// ```
pub struct CursorMut<'w, 't, E: Entry> {
    wg: &'w mut WriteGuard<'t, E>,
    core: Core<'t>,
    /// Preallocated range, checked by `store_prealloc`.
    prealloc: Option<(u64, u64)>,
}

impl<'w, 't, E: Entry + 't> CursorMut<'w, 't, E> {
    cursor_reads!('_);

    /// Stores `entry` over `[index, last]` (`mas_store`); afterwards the cursor is on the written
    /// range. Iteration carries on after it.
    pub fn store(&mut self, entry: E) -> Result<(), Error> {
        let w = WriteGuard::<E>::entry_word(entry)?;
        self.store_word(w)
    }

    fn store_word(&mut self, w: usize) -> Result<(), Error> {
        if self.core.index > self.core.last {
            if w != 0 {
                // SAFETY: `w` came from `into_word` and was not stored; take it back to drop it.
                drop(unsafe { E::from_word(w) });
            }
            return Err(Error::InvalidRange);
        }
        let (first, last) = (self.core.index, self.core.last);
        if self.core.valid && self.wg.exact_fit_at(&mut self.core.w, first, last, w) {
            // In place: the cursor's path is still the tree's, so it stays valid and a
            // following `next`/`find` moves on from here without a walk (dup_mmap's loop).
            self.core.status = Status::Active;
            self.wg.drop_released();
            return Ok(());
        }
        let (a, b) = self.wg.write(first, last, w);
        self.core.index = a;
        self.core.last = b;
        self.core.valid = false;
        self.core.status = Status::Active;
        Ok(())
    }

    /// Empties `[index, last]` (`mas_store(NULL)`); the range widens to the merged empty range.
    pub fn store_null(&mut self) -> Result<(), Error> {
        self.store_word(0)
    }

    /// Erases the range containing `index` (`mas_erase`); returns whether it held an entry.
    /// Afterwards the range is the (widened) empty range.
    pub fn erase(&mut self) -> bool {
        let i = self.core.index;
        if !self.core.walk_to(i) || self.core.w.word == 0 {
            return false;
        }
        let (lo, hi) = (self.core.w.lo, self.core.w.hi);
        let (a, b) = self.wg.write(lo, hi, 0);
        self.core.index = a;
        self.core.last = b;
        self.core.valid = false;
        self.core.status = Status::Active;
        true
    }

    /// Reserves what a store of `[index, last]` needs (`mas_preallocate`), so that
    /// [`store_prealloc`](Self::store_prealloc) cannot fail. Nodes come from the global
    /// allocator (which aborts rather than fails), so this only checks and records the range.
    pub fn preallocate(&mut self) -> Result<(), Error> {
        if self.core.index > self.core.last {
            return Err(Error::InvalidRange);
        }
        self.prealloc = Some((self.core.index, self.core.last));
        Ok(())
    }

    /// Stores after [`preallocate`](Self::preallocate) (`mas_store_prealloc`).
    pub fn store_prealloc(&mut self, entry: E) {
        debug_assert_eq!(
            self.prealloc.take(),
            Some((self.core.index, self.core.last))
        );
        // The range was checked by `preallocate`.
        let w = entry.into_word();
        let _ = self.store_word(w);
    }
}

impl<'t, E: Entry + 't> WriteGuard<'t, E> {
    /// A writing cursor at `index`, in status [`Status::Start`].
    pub fn cursor<'w>(&'w mut self, index: u64) -> CursorMut<'w, 't, E> {
        let core = Core::new(self.root, self.internal, index);
        CursorMut {
            wg: self,
            core,
            prealloc: None,
        }
    }
}
