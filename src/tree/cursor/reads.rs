//! The reading methods of both cursors, written once as a macro that each cursor type expands
//! in its own `impl` (the same docs and examples on [`Cursor`](crate::Cursor) and
//! [`CursorMut`](crate::CursorMut)).

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
            let w: Loaded<'_, E> = self.core.walk();
            // Read under the guard (or writer) of this cursor's lifetime.
            w.entry()
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
            let w: Loaded<'_, E> = self.core.find(max);
            w.entry()
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
            let w: Loaded<'_, E> = self.core.find_rev(min);
            w.entry()
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
            let w: Loaded<'_, E> = self.core.find_range(max);
            w.entry()
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
            let w: Loaded<'_, E> = self.core.find_range_rev(min);
            w.entry()
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
            let w: Loaded<'_, E> = self.core.next(max);
            w.entry()
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
            let w: Loaded<'_, E> = self.core.prev(min);
            w.entry()
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
            let w: Loaded<'_, E> = self.core.next_range(max);
            w.entry()
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
            let w: Loaded<'_, E> = self.core.prev_range(min);
            w.entry()
        }
    };
}

pub(super) use cursor_reads;
