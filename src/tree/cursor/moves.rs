//! The moves both cursors share: the kernel's `ma_state` position logic ([`Core`]) on a
//! [`Walker`] path, with its status handling and slot stepping.

use super::*;

/// Position logic shared by both cursors: the kernel's `ma_state` moves (`mas_walk`,
/// `mas_find`, `mas_next`, ... with their `mas_*_setup` status handling and `mas_next_slot` /
/// `mas_prev_slot` stepping), on a [`Walker`] path.
pub(super) struct Core<'g, A: Access = Read, E = Unbranded> {
    pub(super) w: Walker<'g, A, E>,
    /// The walker's position is current (the kernel's `mas->node` is set and matches
    /// `index`/`last`).
    pub(super) valid: bool,
    pub(super) index: u64,
    pub(super) last: u64,
    pub(super) status: Status,
    /// Where the kernel's state would be `ma_root` on an empty tree (after a reverse find that
    /// found nothing, see [`find_rev_setup`](Self::find_rev_setup)); reported as
    /// [`Status::None`], but the next move leaves it as the kernel leaves `ma_root`.
    pub(super) root: bool,
}

impl<'g, A: Access, E> Core<'g, A, E> {
    pub(super) fn new(root: RootRef<'g, A, E>, index: u64) -> Self {
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
    pub(super) fn is_entry(word: Loaded<'_, E>) -> bool {
        word.is_entry()
    }

    /// `mas_walk` from the root to `index`: the range becomes the slot's and the status active;
    /// an empty tree gives status none and the range `[0, u64::MAX]`. `false` for an empty tree.
    pub(super) fn walk_to(&mut self, index: u64) -> bool {
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

    pub(super) fn take_pos(&mut self) {
        self.index = self.w.lo;
        self.last = self.w.hi;
        self.check_positioned();
    }

    /// After a step: a re-walk from the root that found the tree emptied under the cursor (a
    /// writer cleared it) leaves the walker without a path; the cursor then walks again before
    /// its next step instead of stepping on a path it no longer has.
    #[inline]
    pub(super) fn check_positioned(&mut self) {
        if self.w.depth == 0 {
            self.valid = false;
        }
    }

    /// `mas_walk`: re-walks to `index` whatever the status; the returned word may be empty.
    pub(super) fn walk(&mut self) -> Loaded<'g, E> {
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
    pub(super) fn position(&mut self, at: u64) -> bool {
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
    pub(super) fn leaf_replaced(&self) -> bool {
        self.w.depth > 0 && self.w.leaf().node.is_dead()
    }

    /// `mas_next_slot`: from the current slot, forwards to the next slot (`empty`) or the next
    /// entry (`!empty`) starting at or below `max`. A slot already ending at or past `max`
    /// overflows with the range unchanged; a scan that runs out of room overflows on the last
    /// empty slot it inspected.
    pub(super) fn next_slot(&mut self, max: u64, empty: bool) -> Loaded<'g, E> {
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
                if self.w.lo > at || !crate::tree::walk::check_rewalk() {
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
            if self.w.lo <= at && crate::tree::walk::check_rewalk() {
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
    pub(super) fn prev_slot(&mut self, min: u64, empty: bool) -> Loaded<'g, E> {
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
            if self.w.hi >= at && crate::tree::walk::check_rewalk() {
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
    pub(super) fn next_setup(&mut self, max: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn prev_setup(&mut self, min: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn find_setup(&mut self, max: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn find_setup_resume(&mut self, max: u64) -> bool {
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
    pub(super) fn find_setup_rewalk(&mut self, max: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn find_setup_walk(&mut self, max: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn find_rev_setup(&mut self, min: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn find_rev_setup_resume(&mut self, min: u64) -> bool {
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
    pub(super) fn find_rev_setup_walk(&mut self, min: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn step_in_leaf(&mut self, max: u64) -> Option<Loaded<'g, E>> {
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
    pub(super) fn cross(&mut self, n: NodeRef<'g, A, E>, hi: u64) -> Option<Loaded<'g, E>> {
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

    pub(super) fn find(&mut self, max: u64) -> Loaded<'g, E> {
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

    pub(super) fn find_range(&mut self, max: u64) -> Loaded<'g, E> {
        if let Some(word) = self.find_setup(max) {
            return word;
        }
        self.next_slot(max, true)
    }

    pub(super) fn find_rev(&mut self, min: u64) -> Loaded<'g, E> {
        if let Some(word) = self.find_rev_setup(min) {
            // As in `find`: a zero entry at `index` is stepped over.
            if word.is_entry() || word == Loaded::NONE || self.status != Status::Active {
                return word;
            }
        }
        self.prev_slot(min, false)
    }

    pub(super) fn find_range_rev(&mut self, min: u64) -> Loaded<'g, E> {
        if let Some(word) = self.find_rev_setup(min) {
            return word;
        }
        self.prev_slot(min, true)
    }

    pub(super) fn next(&mut self, max: u64) -> Loaded<'g, E> {
        if let Some(word) = self.step_in_leaf(max) {
            return word;
        }
        if let Some(word) = self.next_setup(max) {
            return word;
        }
        self.next_slot(max, false)
    }

    pub(super) fn next_range(&mut self, max: u64) -> Loaded<'g, E> {
        if let Some(word) = self.next_setup(max) {
            return word;
        }
        self.next_slot(max, true)
    }

    pub(super) fn prev(&mut self, min: u64) -> Loaded<'g, E> {
        if let Some(word) = self.prev_setup(min) {
            return word;
        }
        self.prev_slot(min, false)
    }

    pub(super) fn prev_range(&mut self, min: u64) -> Loaded<'g, E> {
        if let Some(word) = self.prev_setup(min) {
            return word;
        }
        self.prev_slot(min, true)
    }
}
