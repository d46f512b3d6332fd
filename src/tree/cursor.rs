//! The cursor: the kernel's `ma_state` with its status machine.
//!
//! A cursor holds a requested or found range (`index`, `last`), a [`Status`], and a cached path
//! so that moving to a neighbouring range is `O(1)` amortised. [`Cursor`] reads lock-free under
//! a guard; [`CursorMut`] lives inside a [`WriteGuard`] and can also store and erase, with the
//! iteration staying correct after its own writes (the kernel's `check_iteration`).
//!
//! Every move is the kernel's, step for step; [`Cursor`] documents the semantics and the few
//! deliberate differences.

use core::marker::PhantomData;

use crate::entry::{Entry, ZERO_WORD};
use crate::error::Error;

use crate::entry::{Owned, Word};

use super::node::{Access, Loaded, NodeRef, Read, RootRef, Write, RANGE_PIVOTS};
use super::walk::Walker;
use super::write::{with_mode, AnyWriter, WriteGuard};

/// Where a cursor stands (`enum maple_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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

/// Position logic shared by both cursors: the kernel's `ma_state` moves (`mas_walk`,
/// `mas_find`, `mas_next`, ... with their `mas_*_setup` status handling and `mas_next_slot` /
/// `mas_prev_slot` stepping), on a [`Walker`] path.
struct Core<'g, A: Access = Read> {
    w: Walker<'g, A>,
    /// The walker's position is current (the kernel's `mas->node` is set and matches
    /// `index`/`last`).
    valid: bool,
    index: u64,
    last: u64,
    status: Status,
    /// Where the kernel's state would be `ma_root` on an empty tree (after a reverse find that
    /// found nothing, see [`find_rev_setup`](Self::find_rev_setup)); reported as
    /// [`Status::None`], but the next move leaves it as the kernel leaves `ma_root`.
    root: bool,
}

impl<'g, A: Access> Core<'g, A> {
    fn new(root: RootRef<'g, A>, index: u64) -> Self {
        Core {
            w: Walker::new(root),
            valid: false,
            index,
            last: index,
            status: Status::Start,
            root: false,
        }
    }

    /// An entry an entry-seeking move stops at (not empty, not the zero entry).
    fn is_entry(word: Loaded<'_>) -> bool {
        word.is_entry()
    }

    /// `mas_walk` from the root to `index`: the range becomes the slot's and the status active;
    /// an empty tree gives status none and the range `[0, u64::MAX]`. `false` for an empty tree.
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
        self.check_positioned();
    }

    /// After a step: a re-walk from the root that found the tree emptied under the cursor (a
    /// writer cleared it) leaves the walker without a path; the cursor then walks again before
    /// its next step instead of stepping on a path it no longer has.
    #[inline]
    fn check_positioned(&mut self) {
        if self.w.depth == 0 {
            self.valid = false;
        }
    }

    /// `mas_walk`: re-walks to `index` whatever the status; the returned word may be empty.
    fn walk(&mut self) -> Loaded<'g> {
        self.root = false;
        let i = self.index;
        if self.walk_to(i) {
            self.w.word
        } else {
            Loaded::NONE
        }
    }

    /// Makes the walker's position current before a step from an active, overflowed or
    /// underflowed state. Normally it already is. It is not after a write through the cursor
    /// (the range is the written one) or when the limit was hit before the cursor ever walked;
    /// then the cursor re-walks to `at` (`last` for forward steps, `index` for backward ones),
    /// as the kernel's `mas_rewalk` does for a node that died under a step. `false` if the
    /// tree is empty (status none).
    fn position(&mut self, at: u64) -> bool {
        if self.valid && !self.leaf_replaced() {
            return true;
        }
        self.walk_to(at)
    }

    /// Whether the writer replaced the leaf the cursor stands in since the cursor reached it:
    /// a move then re-walks to where the cursor was (`mas_rewalk`, as the kernel does when
    /// `ma_dead_node` says so after a slot read), so that it answers from a state after the
    /// previous move, never from the old leaf (which could miss a range made since and
    /// unchanged since that move).
    #[inline]
    fn leaf_replaced(&self) -> bool {
        self.w.depth > 0 && self.w.leaf().node.is_dead()
    }

    /// `mas_next_slot`: from the current slot, forwards to the next slot (`empty`) or the next
    /// entry (`!empty`) starting at or below `max`. A slot already ending at or past `max`
    /// overflows with the range unchanged; a scan that runs out of room overflows on the last
    /// empty slot it inspected.
    fn next_slot(&mut self, max: u64, empty: bool) -> Loaded<'g> {
        let at = self.last;
        if !self.position(at) {
            return Loaded::NONE;
        }
        if self.w.hi >= max {
            self.status = Status::Overflow;
            return Loaded::NONE;
        }
        if !empty && max == u64::MAX {
            // No limit to stop at: the walker's tight entry loop (`find` to the end, as in
            // dup_mmap's loop); on failure it stands on the last slot, which is empty.
            while self.w.next_entry().is_some() {
                // Past a replaced node the walker re-walks from the root, to the range that
                // holds `at + 1` now, which may reach back to `at`: on past it, as the
                // kernel's `mas_next_slot` re-walks to its saved point and moves on. A move
                // never returns a range ending at or before the previous one's end.
                if self.w.lo > at || !super::walk::check_rewalk() {
                    self.take_pos();
                    return self.w.word;
                }
            }
            self.take_pos();
            self.status = Status::Overflow;
            return Loaded::NONE;
        }
        loop {
            if self.w.next_slot().is_none() {
                // `hi < max` above, so a next slot exists, unless a re-walk found the tree
                // emptied under the cursor.
                self.check_positioned();
                self.status = Status::Overflow;
                return Loaded::NONE;
            }
            if self.w.lo <= at && super::walk::check_rewalk() {
                // A re-walk that reached back to `at` (see above): passed over, but it is the
                // slot inspected, so it is the one the limit applies to.
                if self.w.hi >= max {
                    self.status = Status::Overflow;
                    return Loaded::NONE;
                }
                continue;
            }
            self.take_pos();
            let word = self.w.word;
            if empty || Self::is_entry(word) {
                return word;
            }
            if self.last >= max {
                self.status = Status::Overflow;
                return Loaded::NONE;
            }
        }
    }

    /// `mas_prev_slot`: the mirror of [`next_slot`](Self::next_slot), towards `min`, with
    /// underflow.
    fn prev_slot(&mut self, min: u64, empty: bool) -> Loaded<'g> {
        let at = self.index;
        if !self.position(at) {
            return Loaded::NONE;
        }
        loop {
            if self.w.lo <= min {
                self.status = Status::Underflow;
                return Loaded::NONE;
            }
            if self.w.prev_slot().is_none() {
                // `lo > min` above, so a previous slot exists, unless a re-walk found the tree
                // emptied under the cursor.
                self.check_positioned();
                self.status = Status::Underflow;
                return Loaded::NONE;
            }
            if self.w.hi >= at && super::walk::check_rewalk() {
                continue; // a re-walk that reached forward to `at` (as in `next_slot`)
            }
            self.take_pos();
            let word = self.w.word;
            if empty || Self::is_entry(word) {
                return word;
            }
        }
    }

    /// `mas_next_setup`: `Some(answer)` if the move is decided here, `None` to step on.
    fn next_setup(&mut self, max: u64) -> Option<Loaded<'g>> {
        let root = core::mem::take(&mut self.root);
        if self.last >= max {
            self.status = Status::Overflow;
            return Some(Loaded::NONE);
        }
        if root {
            // `ma_root` of an empty tree: nothing above index 0.
            self.index = 1;
            self.last = u64::MAX;
            self.status = Status::None;
            return Some(Loaded::NONE);
        }
        match self.status {
            Status::Active => return None,
            Status::None | Status::Pause | Status::Start => {
                self.walk();
            }
            // Overflowed before, but the limit changed: step on from here.
            Status::Overflow => {
                self.status = Status::Active;
                return None;
            }
            // The caller expects the cursor one before where it is: the entry here first.
            Status::Underflow => {
                let word = self.walk();
                if word != Loaded::NONE {
                    return Some(word);
                }
            }
        }
        match self.status {
            Status::Active => None,
            _ => Some(Loaded::NONE), // the tree is empty
        }
    }

    /// `mas_prev_setup`: `Some(answer)` if the move is decided here, `None` to step on.
    fn prev_setup(&mut self, min: u64) -> Option<Loaded<'g>> {
        // From `ma_root` (index 0) the limit check below always underflows.
        self.root = false;
        if self.index <= min {
            self.status = Status::Underflow;
            return Some(Loaded::NONE);
        }
        match self.status {
            Status::Active => return None,
            Status::None | Status::Pause | Status::Start => {
                self.walk();
            }
            // Underflowed before, but the limit changed: step on from here.
            Status::Underflow => {
                self.status = Status::Active;
                return None;
            }
            // The caller expects the cursor one after where it is: the entry here first.
            Status::Overflow => {
                let word = self.walk();
                if word != Loaded::NONE {
                    return Some(word);
                }
            }
        }
        match self.status {
            Status::Active => None,
            _ => Some(Loaded::NONE), // the tree is empty
        }
    }

    /// `mas_find_setup`: `Some(answer)` if the move is decided here, `None` to step on.
    fn find_setup(&mut self, max: u64) -> Option<Loaded<'g>> {
        if core::mem::take(&mut self.root) {
            // `ma_root` of an empty tree: out of range of the (absent) root entry.
            self.index = 1;
            self.last = u64::MAX;
            self.status = Status::None;
            return Some(Loaded::NONE);
        }
        match self.status {
            Status::Active => {
                return if self.last < max {
                    None
                } else {
                    Some(Loaded::NONE)
                };
            }
            Status::Start => {}
            Status::Pause | Status::None => {
                if !self.find_setup_resume(max) {
                    return Some(Loaded::NONE);
                }
            }
            Status::Underflow | Status::Overflow => {
                if let Some(word) = self.find_setup_rewalk(max) {
                    return Some(word);
                }
            }
        }
        self.find_setup_walk(max)
    }

    /// [`find_setup`](Self::find_setup) from a paused cursor (it resumes after `last`) or one
    /// with nothing there (at `last`): `false` if that is past `max`, else the status becomes
    /// start.
    fn find_setup_resume(&mut self, max: u64) -> bool {
        if self.last >= max {
            return false;
        }
        if self.status == Status::Pause {
            self.last += 1;
        }
        self.index = self.last;
        self.status = Status::Start;
        true
    }

    /// [`find_setup`](Self::find_setup) after a limit was hit: an underflowed cursor points at
    /// the range before the one it could not go below, an overflowed one at the last range it
    /// reached. Either walks to `index` (unless already at `max`); the entry there is the answer.
    fn find_setup_rewalk(&mut self, max: u64) -> Option<Loaded<'g>> {
        if self.status == Status::Underflow {
            if self.index >= max {
                self.status = Status::Overflow;
                return Some(Loaded::NONE);
            }
        } else if self.last >= max {
            return Some(Loaded::NONE);
        }
        let word = self.walk();
        (word != Loaded::NONE).then_some(word)
    }

    /// The end of [`find_setup`](Self::find_setup): a cursor at its start walks to `index`
    /// (the first run, or a continuation); the entry there is the answer.
    fn find_setup_walk(&mut self, max: u64) -> Option<Loaded<'g>> {
        if self.status == Status::Start {
            if self.index > max {
                return Some(Loaded::NONE);
            }
            let word = self.walk();
            if word != Loaded::NONE {
                return Some(word);
            }
        }
        if self.status == Status::None || self.index == max {
            return Some(Loaded::NONE);
        }
        None
    }

    /// `mas_find_rev_setup`: `Some(answer)` if the move is decided here, `None` to step on.
    fn find_rev_setup(&mut self, min: u64) -> Option<Loaded<'g>> {
        if core::mem::take(&mut self.root) {
            // `ma_root` of an empty tree: nothing, and the kernel's status becomes none.
            return Some(Loaded::NONE);
        }
        match self.status {
            Status::Active | Status::Start => {}
            Status::Pause | Status::None => {
                if !self.find_rev_setup_resume(min) {
                    return Some(Loaded::NONE);
                }
            }
            // The caller expects the cursor one after (overflow) or one before (underflow)
            // where it is.
            Status::Overflow | Status::Underflow => {
                if self.index <= min {
                    self.status = Status::Underflow;
                    return Some(Loaded::NONE);
                }
                self.status = Status::Active;
            }
        }
        self.find_rev_setup_walk(min)
    }

    /// [`find_rev_setup`](Self::find_rev_setup) from a paused cursor (it resumes before
    /// `index`; at `min` it underflows) or one with nothing there (at `index`): `false` if that
    /// is below `min`, else the status becomes start.
    fn find_rev_setup_resume(&mut self, min: u64) -> bool {
        let pause = self.status == Status::Pause;
        if self.index <= min {
            if pause {
                self.status = Status::Underflow;
            }
            return false;
        }
        if pause {
            self.index -= 1;
        }
        self.last = self.index;
        self.status = Status::Start;
        true
    }

    /// The end of [`find_rev_setup`](Self::find_rev_setup): a cursor at its start walks to
    /// `index` (the first run, or a continuation); the entry there is the answer.
    fn find_rev_setup_walk(&mut self, min: u64) -> Option<Loaded<'g>> {
        if self.status == Status::Start {
            if self.index < min {
                return Some(Loaded::NONE);
            }
            let word = self.walk();
            if word != Loaded::NONE {
                return Some(word);
            }
            if self.status == Status::None {
                // Nothing at or below `index` of an empty tree. The kernel reports this with
                // its root status and the range `[0, 0]`; this tree has no root entry form.
                self.index = 0;
                self.last = 0;
                self.root = true;
                return Some(Loaded::NONE);
            }
        }
        if self.index < min {
            return Some(Loaded::NONE);
        }
        None
    }

    /// The common case of `find` and `next` (`mas_next_slot` staying in the node): active on a
    /// current position below `max`, the next entry within the same leaf, found by one scan of
    /// each slot's pivot (read once, clamped to the leaf's max) and then its word, as
    /// `Walker::next_entry` does, and on into the parent's next leaf ([`cross`](Self::cross)).
    /// `None` for everything else (an empty slot reaching `max`, a crossing that needs a climb
    /// or meets a dead node, the other statuses): the general move then decides from the last
    /// position recorded (the cursor's, or slot 0 of a leaf crossed into, as the walker would
    /// have left it).
    #[inline]
    fn step_in_leaf(&mut self, max: u64) -> Option<Loaded<'g>> {
        if self.status != Status::Active || !self.valid || self.root || self.last >= max {
            return None;
        }
        let leaf = *self.w.leaf();
        if leaf.node.is_dead() {
            return None; // the general step re-walks (see `leaf_replaced`)
        }
        let (mut n, mut lmax) = (leaf.node, leaf.max);
        let (mut i, mut hi) = (leaf.offset, self.w.hi);
        loop {
            if hi >= max {
                return None;
            }
            if hi >= lmax {
                let word = self.cross(n, hi)?;
                if Self::is_entry(word) {
                    return Some(word);
                }
                let leaf = *self.w.leaf();
                (n, lmax, i, hi) = (leaf.node, leaf.max, 0, self.w.hi);
                continue;
            }
            i += 1;
            let lo = hi + 1;
            hi = if i < RANGE_PIVOTS {
                n.range_pivot(i).min(lmax)
            } else {
                lmax
            };
            let word = n.range_word(i);
            if Self::is_entry(word) {
                self.w.set_leaf_slot(i, lo, hi, word);
                self.index = lo;
                self.last = hi;
                return Some(word);
            }
        }
    }

    /// From the last slot of leaf `n` (ending at `hi`) to slot 0 of its parent's next child, as
    /// `Walker::next_leaf` moves there: the leaf alive, not the parent's last child, the parent
    /// alive, the child slot non-empty, a leaf, and ending above `hi`. The walker and the range
    /// then stand on that slot; returns its word. `None`, nothing changed, otherwise.
    fn cross(&mut self, n: NodeRef<'g, A>, hi: u64) -> Option<Loaded<'g>> {
        let path = self.w.path();
        let p = *path.get(path.len().checked_sub(2)?)?;
        if n.is_dead() || hi >= p.max || p.node.is_dead() {
            return None;
        }
        let i = p.offset + 1;
        let max = p.node.slot_max(i, p.max);
        let c = p.node.try_child(i, p.node.kind())?;
        if !c.is_leaf() || max <= hi {
            return None;
        }
        self.w.set_parent_leaf(i, c, hi + 1, max);
        let (lo, hi0) = (hi + 1, c.slot_max(0, max));
        let word = c.leaf_word(0);
        self.w.set_leaf_slot(0, lo, hi0, word);
        self.index = lo;
        self.last = hi0;
        Some(word)
    }

    fn find(&mut self, max: u64) -> Loaded<'g> {
        if let Some(word) = self.step_in_leaf(max) {
            return word;
        }
        if let Some(word) = self.find_setup(max) {
            // The setup's walk may land on a reserved zero entry at `index`: `find` skips it,
            // as its steps do (the kernel's `mas_find` would return it to its own callers).
            if word.is_entry() || word == Loaded::NONE || self.status != Status::Active {
                return word;
            }
        }
        let word = self.next_slot(max, false);
        // `mas_find` ignores overflow.
        if self.status == Status::Overflow {
            self.status = Status::Active;
        }
        word
    }

    fn find_range(&mut self, max: u64) -> Loaded<'g> {
        if let Some(word) = self.find_setup(max) {
            return word;
        }
        self.next_slot(max, true)
    }

    fn find_rev(&mut self, min: u64) -> Loaded<'g> {
        if let Some(word) = self.find_rev_setup(min) {
            // As in `find`: a zero entry at `index` is stepped over.
            if word.is_entry() || word == Loaded::NONE || self.status != Status::Active {
                return word;
            }
        }
        self.prev_slot(min, false)
    }

    fn find_range_rev(&mut self, min: u64) -> Loaded<'g> {
        if let Some(word) = self.find_rev_setup(min) {
            return word;
        }
        self.prev_slot(min, true)
    }

    fn next(&mut self, max: u64) -> Loaded<'g> {
        if let Some(word) = self.step_in_leaf(max) {
            return word;
        }
        if let Some(word) = self.next_setup(max) {
            return word;
        }
        self.next_slot(max, false)
    }

    fn next_range(&mut self, max: u64) -> Loaded<'g> {
        if let Some(word) = self.next_setup(max) {
            return word;
        }
        self.next_slot(max, true)
    }

    fn prev(&mut self, min: u64) -> Loaded<'g> {
        if let Some(word) = self.prev_setup(min) {
            return word;
        }
        self.prev_slot(min, false)
    }

    fn prev_range(&mut self, min: u64) -> Loaded<'g> {
        if let Some(word) = self.prev_setup(min) {
            return word;
        }
        self.prev_slot(min, true)
    }
}

macro_rules! cursor_reads {
    ($lt:lifetime) => {
        /// The requested or found range's first index (`mas.index`).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(15, &guard);
        /// assert_eq!(c.index(), 15); // requested
        /// c.walk();
        /// assert_eq!(c.index(), 10); // found: [10, 19]
        /// # Ok(())
        /// # }
        /// ```
        pub fn index(&self) -> u64 {
            self.core.index
        }

        /// The requested or found range's last index (`mas.last`).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(15, &guard);
        /// assert_eq!(c.last(), 15); // requested
        /// c.walk();
        /// assert_eq!(c.last(), 19); // found: [10, 19]
        /// # Ok(())
        /// # }
        /// ```
        pub fn last(&self) -> u64 {
            self.core.last
        }

        /// The requested or found range, `index()..=last()`.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(25, &guard);
        /// assert_eq!(c.walk(), None);
        /// assert_eq!(c.range(), 20..=29); // the empty range between the entries
        /// # Ok(())
        /// # }
        /// ```
        pub fn range(&self) -> core::ops::RangeInclusive<u64> {
            self.core.index..=self.core.last
        }

        /// The status.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(0, &guard);
        /// assert_eq!(c.status(), Status::Start);
        /// assert_eq!(c.next(u64::MAX), Some(Value::new(1)));
        /// assert_eq!(c.status(), Status::Active);
        /// assert_eq!(c.next(20), None); // [30, 39] starts above the limit
        /// assert_eq!(c.status(), Status::Overflow);
        /// # Ok(())
        /// # }
        /// ```
        pub fn status(&self) -> Status {
            self.core.status
        }

        /// Whether the current range holds the reserved zero entry.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.lock().store_zero_range(10..=19)?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(15, &guard);
        /// assert_eq!(c.walk(), None); // the zero entry reads as nothing,
        /// assert!(c.is_zero()); // but it is there
        /// # Ok(())
        /// # }
        /// ```
        pub fn is_zero(&self) -> bool {
            self.core.valid && self.core.w.word.raw() == ZERO_WORD
        }

        /// Sets the range to `[index, index]` and resets (`mas_set`).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(0, &guard);
        /// assert_eq!(c.find(u64::MAX), Some(Value::new(1)));
        /// c.set(35);
        /// assert_eq!((c.range(), c.status()), (35..=35, Status::Start));
        /// assert_eq!(c.walk(), Some(Value::new(3)));
        /// # Ok(())
        /// # }
        /// ```
        pub fn set(&mut self, index: u64) {
            self.set_range(index..=index);
        }

        /// Sets the range and resets (`mas_set_range`). A write through the cursor of an
        /// inverted range (`5..=4`) fails with [`Error::InvalidRange`](crate::Error::InvalidRange).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(0, &guard);
        /// c.set_range(12..=35); // a writing cursor would store over it
        /// assert_eq!((c.range(), c.status()), (12..=35, Status::Start));
        /// assert_eq!(c.find(u64::MAX), Some(Value::new(1))); // the entry at index 12
        /// # Ok(())
        /// # }
        /// ```
        pub fn set_range(&mut self, range: core::ops::RangeInclusive<u64>) {
            self.core.index = *range.start();
            self.core.last = *range.end();
            self.reset();
        }

        /// The next operation walks from the root (`mas_reset`).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(0, &guard);
        /// assert_eq!(c.find(u64::MAX), Some(Value::new(1)));
        /// assert_eq!(c.find(u64::MAX), Some(Value::new(3)));
        /// c.reset();
        /// assert_eq!(c.status(), Status::Start);
        /// assert_eq!(c.find(u64::MAX), Some(Value::new(3))); // walks to index 30 again
        /// # Ok(())
        /// # }
        /// ```
        pub fn reset(&mut self) {
            self.core.status = Status::Start;
            self.core.valid = false;
            self.core.root = false;
        }

        /// Marks the cursor stale (`mas_pause`): the next move resumes after `last` (forwards) or
        /// before `index` (backwards), re-walking from the root.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(0, &guard);
        /// assert_eq!(c.find(u64::MAX), Some(Value::new(1)));
        /// c.pause();
        /// assert_eq!(c.status(), Status::Pause);
        /// assert_eq!(c.find(u64::MAX), Some(Value::new(3))); // resumes after [10, 19]
        /// # Ok(())
        /// # }
        /// ```
        pub fn pause(&mut self) {
            self.core.status = Status::Pause;
            self.core.valid = false;
            self.core.root = false;
        }

        /// Re-walks to `index` whatever the status and returns its entry (`mas_walk`); the
        /// range becomes the whole slot, empty or not, and the status active (on an empty tree:
        /// `None`, the range `[0, u64::MAX]`, [`Status::None`]).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(25, &guard);
        /// assert_eq!(c.walk(), None);
        /// assert_eq!((c.range(), c.status()), (20..=29, Status::Active));
        /// c.set(35);
        /// assert_eq!(c.walk(), Some(Value::new(3)));
        /// assert_eq!(c.range(), 30..=39);
        /// # Ok(())
        /// # }
        /// ```
        pub fn walk(&mut self) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.walk();
            // Read under the guard (or writer) of this cursor's lifetime.
            w.entry::<E>()
        }

        /// `mas_find`: on the first call (or after a pause, from `last + 1`) the entry at
        /// `index` or the next one starting at or below `max`; later calls the next entry. When
        /// nothing is found the cursor stays active on the last range inspected. After an
        /// overflow or underflow the entry at the current range comes first.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(0, &guard);
        /// let mut found = vec![];
        /// while let Some(v) = c.find(u64::MAX) {
        ///     found.push((c.range(), v.get()));
        /// }
        /// assert_eq!(found, [(10..=19, 1), (30..=39, 3)]);
        /// assert_eq!(c.status(), Status::Active); // find does not overflow
        /// # Ok(())
        /// # }
        /// ```
        pub fn find(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.find(max);
            w.entry::<E>()
        }

        /// `mas_find_rev`: on the first call (or after a pause, from `index - 1`) the entry at
        /// `index` or the previous one ending at or above `min`; later calls the previous
        /// entry. `None` with [`Status::Underflow`] at the limit; a cursor whose `index` is
        /// already below `min` returns `None` and keeps its status.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(u64::MAX, &guard);
        /// let mut found = vec![];
        /// while let Some(v) = c.find_rev(0) {
        ///     found.push((c.range(), v.get()));
        /// }
        /// assert_eq!(found, [(30..=39, 3), (10..=19, 1)]);
        /// assert_eq!(c.status(), Status::Underflow);
        /// # Ok(())
        /// # }
        /// ```
        pub fn find_rev(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.find_rev(min);
            w.entry::<E>()
        }

        /// `mas_find_range`: like `find` on the first call, then one range at a time, empty ones
        /// included (returning `None` for them while staying active). At its limit it returns
        /// `None` and keeps its status.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(10, &guard);
        /// assert_eq!(c.find_range(u64::MAX), Some(Value::new(1)));
        /// assert_eq!(c.find_range(u64::MAX), None); // an empty range...
        /// assert_eq!((c.range(), c.status()), (20..=29, Status::Active)); // ...is a range
        /// assert_eq!(c.find_range(u64::MAX), Some(Value::new(3)));
        /// # Ok(())
        /// # }
        /// ```
        pub fn find_range(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.find_range(max);
            w.entry::<E>()
        }

        /// `mas_find_range_rev`: like `find_rev` on the first call, then one range at a time
        /// backwards, empty ones included; [`Status::Underflow`] past `min`.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(39, &guard);
        /// assert_eq!(c.find_range_rev(0), Some(Value::new(3)));
        /// assert_eq!(c.find_range_rev(0), None);
        /// assert_eq!(c.range(), 20..=29);
        /// assert_eq!(c.find_range_rev(0), Some(Value::new(1)));
        /// # Ok(())
        /// # }
        /// ```
        pub fn find_range_rev(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.find_range_rev(min);
            w.entry::<E>()
        }

        /// `mas_next`: the next entry after the current range that starts at or below `max`;
        /// `None` and [`Status::Overflow`] at the limit (at once if `last >= max`, even before
        /// the first walk). From start, pause or none it walks to `index` first; after an
        /// underflow the entry at the current range comes first.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(15, &guard);
        /// assert_eq!(c.next(u64::MAX), Some(Value::new(3))); // the entry after [10, 19]
        /// assert_eq!(c.range(), 30..=39);
        /// assert_eq!(c.next(u64::MAX), None);
        /// assert_eq!(c.status(), Status::Overflow);
        /// # Ok(())
        /// # }
        /// ```
        pub fn next(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.next(max);
            w.entry::<E>()
        }

        /// `mas_prev`: the previous entry that ends at or above `min`; `None` and
        /// [`Status::Underflow`] at the limit (at once if `index <= min`, even before the first
        /// walk). From start, pause or none it walks to `index` first; after an overflow the
        /// entry at the current range comes first.
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(35, &guard);
        /// assert_eq!(c.prev(0), Some(Value::new(1))); // the entry before [30, 39]
        /// assert_eq!(c.range(), 10..=19);
        /// assert_eq!(c.prev(0), None);
        /// assert_eq!(c.status(), Status::Underflow);
        /// # Ok(())
        /// # }
        /// ```
        pub fn prev(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.prev(min);
            w.entry::<E>()
        }

        /// `mas_next_range`: one range forwards, empty or not, with the status handling of
        /// [`next`](Self::next).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(15, &guard);
        /// assert_eq!(c.next_range(u64::MAX), None); // the empty [20, 29]
        /// assert_eq!((c.range(), c.status()), (20..=29, Status::Active));
        /// assert_eq!(c.next_range(u64::MAX), Some(Value::new(3)));
        /// # Ok(())
        /// # }
        /// ```
        pub fn next_range(&mut self, max: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.next_range(max);
            w.entry::<E>()
        }

        /// `mas_prev_range`: one range backwards, empty or not, with the status handling of
        /// [`prev`](Self::prev).
        ///
        /// ```
        /// use maple_tree::{MapleTree, Status, Value};
        ///
        /// # fn main() -> Result<(), maple_tree::Error> {
        /// let tree = MapleTree::<Value>::new();
        /// tree.store_range(10..=19, Value::new(1))?;
        /// tree.store_range(30..=39, Value::new(3))?;
        /// let guard = tree.pin();
        /// let mut c = tree.cursor(35, &guard);
        /// assert_eq!(c.prev_range(0), None); // the empty [20, 29]
        /// assert_eq!((c.range(), c.status()), (20..=29, Status::Active));
        /// assert_eq!(c.prev_range(0), Some(Value::new(1)));
        /// # Ok(())
        /// # }
        /// ```
        pub fn prev_range(&mut self, min: u64) -> Option<E::Borrowed<$lt>> {
            let w: Loaded<'_> = self.core.prev_range(min);
            w.entry::<E>()
        }
    };
}

/// A lock-free read cursor (see [`MapleTree::cursor`](crate::MapleTree::cursor)).
///
/// # Kernel semantics
///
/// Every move is the kernel's (Linux 6.12 `lib/maple_tree.c`), step for step: first the
/// status handling of `mas_next_setup`, `mas_prev_setup`, `mas_find_setup` or
/// `mas_find_rev_setup` (limit checks that end a move before any walk, the walk from start,
/// pause or none, and the way out of overflow and underflow), then `mas_next_slot` or
/// `mas_prev_slot`. So index, last, status and the returned entry are the kernel's after every
/// move, including moves that find nothing; `tests/kernel_oracle.rs` replays traces of the
/// kernel itself to keep it so.
///
/// # Deliberate differences from the kernel
///
/// - **No root entry form.** The kernel keeps a lone entry at index 0, stored into an empty
///   tree, in the tree's root pointer and runs a different, smaller state machine there: the
///   entry is reported with status `ma_root`, everything else as `ma_none` on `[1, u64::MAX]`
///   or `[0, 0]`, and `prev`-type moves with a lower limit above 0 still return the entry (a
///   kernel bug). This tree always uses a leaf, so on such a tree the cursor answers exactly as
///   the kernel does for the same content in a leaf (which the kernel has too, for instance
///   once an entry at 0 outlives the others): the entry is [`Status::Active`] on `[0, 0]`, the
///   rest the empty range `[1, u64::MAX]`, and moves that run out of room overflow or
///   underflow. On an empty tree, a `find_rev`/`find_range_rev` that finds nothing sets the
///   range `[0, 0]` with [`Status::None`] where the kernel says `ma_root`; the next move
///   leaves it exactly as the kernel leaves `ma_root`. Cursor answers differ from the kernel's
///   only in these two cases and the ones listed below.
/// - **A limit hit before the first walk.** A cursor that overflowed or underflowed before it
///   ever walked (say a fresh cursor at 100 given `next(100)`) has no position; moved again
///   with a wider limit, the 6.12 kernel dereferences a null node. Here it first re-walks, to
///   `last` for forward moves and to `index` for backward ones (what the kernel does when a
///   node dies under a step, `mas_rewalk`), and carries on from that range.
/// - **An erased whole-space entry.** Erasing an entry over `[0, u64::MAX]` leaves this tree
///   empty ([`Status::None`] for a walk), where the kernel keeps an empty leaf (active on
///   `[0, u64::MAX]`), which breaks its gap search.
/// - **The zero entry** (kernel `XA_ZERO_ENTRY`) is skipped by the entry-seeking moves (`find`,
///   `find_rev`, `next`, `prev`) and reported by [`Cursor::is_zero`] on the range moves and
///   walks, which return `None` for it.
///
/// # Beside a writer
///
/// A reading cursor's moves are monotone across any number of writes: `find`, `next` and
/// `next_range` never return a range ending at or before the previous answer's end, `find_rev`,
/// `prev` and `prev_range` never one starting at or after the previous answer's start. Past a
/// node the writer replaced, the cursor re-walks to where it was and steps past the range
/// holding that point (the kernel's `mas_next_slot`), so a range that changed between two moves
/// may be passed over; a range unchanged since the previous move is not.
///
/// # Status after a move
///
/// As in the kernel: a move that finds something is [`Status::Active`]. `next` and
/// `next_range` that run out of room overflow; `prev`,
/// `prev_range`, `find_rev` and `find_range_rev` underflow; `find` stays active on the last
/// range it inspected (`mas_find` ignores overflow); `find_range` stays active (an empty range
/// is a range) and keeps an overflow it started from. `next`/`next_range` check `last` against
/// the limit before anything else, `prev`/`prev_range` check `index`: from a fresh cursor,
/// `next(i)` at `i` overflows at once, with the range `[i, i]`.
///
/// # Example
///
/// ```
/// use maple_tree::{MapleTree, Value, Status};
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Value>::new();
/// for i in 0..10u64 {
///     tree.store_range(i * 10..=i * 10 + 5, Value::new(i))?;
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
/// # Ok(())
/// # }
/// ```
pub struct Cursor<'g, E> {
    core: Core<'g>,
    _e: PhantomData<&'g E>,
}

impl<'g, E: Entry + 'g> Cursor<'g, E> {
    pub(crate) fn new(root: RootRef<'g>, index: u64) -> Self {
        Cursor {
            core: Core::new(root, index),
            _e: PhantomData,
        }
    }

    cursor_reads!('g);
}

/// A cursor that can also write (from [`WriteGuard::cursor`]).
///
/// It moves exactly as a [`Cursor`] does (the examples of the shared moves use a reading
/// cursor from [`MapleTree::cursor`](crate::MapleTree::cursor)), and writes over its range with
/// [`store`](Self::store), [`store_null`](Self::store_null), [`erase`](Self::erase) and
/// [`preallocate`](Self::preallocate) + [`store_prealloc`](Self::store_prealloc).
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Value>::new();
/// for i in 0..20u64 {
///     tree.store_range(i * 10..=i * 10 + 9, Value::new(i))?;
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
/// # Ok(())
/// # }
/// ```
pub struct CursorMut<'w, 't, E> {
    /// The writer, borrowed from the write guard for the cursor's life: the walker's nodes are
    /// its handles.
    wg: AnyWriter<'w, E>,
    core: Core<'w, Write>,
    _t: PhantomData<&'w WriteGuard<'t, E>>,
    /// Preallocated range, checked by `store_prealloc`.
    prealloc: Option<(u64, u64)>,
}

impl<'w, 't, E: Entry + 't> CursorMut<'w, 't, E> {
    cursor_reads!('_);

    /// Stores `entry` over `[index, last]` (`mas_store`); afterwards the cursor is on the written
    /// range. Iteration carries on after it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] if the cursor's range is inverted (`index > last`, after a
    /// [`set_range`](Self::set_range) of such a range); [`Error::Reserved`] for a reserved entry
    /// word. Nothing is written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=99, Value::new(1))?;
    /// let mut w = tree.lock();
    /// let mut c = w.cursor(0);
    /// c.set_range(10..=19);
    /// c.store(Value::new(2))?;
    /// assert_eq!(c.range(), 10..=19);
    /// assert_eq!(c.next(u64::MAX), Some(Value::new(1))); // iteration carries on
    /// assert_eq!(c.range(), 20..=99);
    /// # Ok(())
    /// # }
    /// ```
    pub fn store(&mut self, entry: E) -> Result<(), Error> {
        let w = Owned::new(entry)?;
        self.store_word(Some(w))
    }

    /// Stores `w` (`None`: NULL); on an inverted range `w` is dropped unstored.
    fn store_word(&mut self, w: Option<Owned<E>>) -> Result<(), Error> {
        if self.core.index > self.core.last {
            return Err(Error::InvalidRange);
        }
        let w = w.map_or(Word::NULL, Owned::into_word);
        self.core.root = false;
        let (first, last) = (self.core.index, self.core.last);
        if self.core.valid
            && with_mode!(ref self.wg, wr => wr.exact_fit_at(&mut self.core.w, first, last, w))
        {
            // In place: the cursor's path is still the tree's, so it stays valid and a
            // following `next`/`find` moves on from here without a walk (dup_mmap's loop).
            self.core.status = Status::Active;
            // The new range (the old one was counted down as `exact_fit_at` released it).
            with_mode!(ref self.wg, wr => {
                wr.add_len(1);
                wr.drop_released();
            });
            return Ok(());
        }
        let (a, b) = with_mode!(ref self.wg, wr => wr.write(first, last, w));
        self.core.index = a;
        self.core.last = b;
        self.core.valid = false;
        self.core.status = Status::Active;
        Ok(())
    }

    /// Empties `[index, last]` (`mas_store(NULL)`); the range widens to the merged empty range.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] if the cursor's range is inverted (nothing is written).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store_range(10..=19, Value::new(2))?;
    /// let mut w = tree.lock();
    /// let mut c = w.cursor(0);
    /// c.set_range(10..=19);
    /// c.store_null()?;
    /// assert_eq!(c.range(), 10..=u64::MAX); // merged with the empty range after it
    /// assert_eq!(w.load(15), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn store_null(&mut self) -> Result<(), Error> {
        self.store_word(None)
    }

    /// Erases the range containing `index` (`mas_erase`); returns whether it held anything (an
    /// entry or the reserved zero entry, which is erased as well).
    /// Afterwards the range is the (widened) empty range.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store_range(10..=19, Value::new(2))?;
    /// tree.store_range(30..=39, Value::new(3))?;
    /// let mut w = tree.lock();
    /// let mut c = w.cursor(15);
    /// assert!(c.erase());
    /// assert_eq!(c.range(), 10..=29); // [10, 19] and the empty [20, 29]
    /// assert!(!c.erase()); // nothing left there
    /// # Ok(())
    /// # }
    /// ```
    pub fn erase(&mut self) -> bool {
        let i = self.core.index;
        self.core.root = false;
        if !self.core.walk_to(i) || self.core.w.word == Loaded::NONE {
            return false;
        }
        let (lo, hi) = (self.core.w.lo, self.core.w.hi);
        let (a, b) = with_mode!(ref self.wg, wr => wr.write(lo, hi, Word::NULL));
        self.core.index = a;
        self.core.last = b;
        self.core.valid = false;
        self.core.status = Status::Active;
        true
    }

    /// Reserves what a store of `[index, last]` needs (`mas_preallocate`), so that
    /// [`store_prealloc`](Self::store_prealloc) cannot fail. Nodes come from the global
    /// allocator (which aborts rather than fails), so this only checks and records the range.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] if the cursor's range is inverted.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// let mut c = w.cursor(0);
    /// c.set_range(10..=19);
    /// c.preallocate()?;
    /// c.store_prealloc(Value::new(1))?;
    /// drop(w);
    /// assert_eq!(tree.get(15), Some(Value::new(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn preallocate(&mut self) -> Result<(), Error> {
        if self.core.index > self.core.last {
            return Err(Error::InvalidRange);
        }
        self.prealloc = Some((self.core.index, self.core.last));
        Ok(())
    }

    /// Stores after [`preallocate`](Self::preallocate) (`mas_store_prealloc`).
    ///
    /// # Errors
    ///
    /// [`Error::NotPreallocated`] unless [`preallocate`](Self::preallocate) reserved exactly the
    /// cursor's current range since the last `store_prealloc`; [`Error::Reserved`] for a reserved
    /// entry word. Nothing is written then, and the entry is dropped.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// let mut c = w.cursor(0);
    /// c.set_range(10..=19);
    /// c.preallocate()?;
    /// c.store_prealloc(Value::new(1))?;
    /// // One store per preallocate:
    /// assert_eq!(c.store_prealloc(Value::new(2)), Err(Error::NotPreallocated));
    /// # Ok(())
    /// # }
    /// ```
    pub fn store_prealloc(&mut self, entry: E) -> Result<(), Error> {
        if self.prealloc.take() != Some((self.core.index, self.core.last)) {
            drop(entry);
            return Err(Error::NotPreallocated);
        }
        let w = Owned::new(entry)?;
        self.store_word(Some(w))
    }
}

impl<'t, E: Entry + 't> WriteGuard<'t, E> {
    /// A writing cursor at `index`, in status [`Status::Start`].
    ///
    /// ```
    /// use maple_tree::{MapleTree, Status, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// let mut c = w.cursor(10);
    /// assert_eq!(c.status(), Status::Start);
    /// c.set_range(10..=19);
    /// c.store(Value::new(1))?;
    /// assert_eq!((c.range(), c.walk()), (10..=19, Some(Value::new(1))));
    /// drop(w);
    /// assert_eq!(tree.get(15), Some(Value::new(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn cursor<'w>(&'w mut self, index: u64) -> CursorMut<'w, 't, E> {
        let mut wg = self.any_writer();
        let core = Core::new(with_mode!(ref wg, w => w.root.walk_root()), index);
        CursorMut {
            wg,
            core,
            _t: PhantomData,
            prealloc: None,
        }
    }
}
