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

use super::node::{Access, Loaded, NodeRef, Read, RootRef, Unbranded, Write, RANGE_PIVOTS};
use super::walk::Walker;
use super::write::{with_mode, AnyWriter, WriteGuard};

mod moves;
mod reads;

use moves::Core;
use reads::cursor_reads;

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
    core: Core<'g, Read, E>,
    _e: PhantomData<&'g E>,
}

impl<'g, E: Entry + 'g> Cursor<'g, E> {
    pub(crate) fn new(root: RootRef<'g, Read, E>, index: u64) -> Self {
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
    core: Core<'w, Write, E>,
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
