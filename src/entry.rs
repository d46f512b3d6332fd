//! Entries: owned, pointer-sized values that the tree stores as one machine word.
//!
//! The tree never looks inside an entry; it only moves its word between slots, hands out borrows
//! while a guard keeps the word alive, and turns the word back into the owned value exactly once
//! when the entry leaves the tree (overwritten, erased, or the tree dropped). This is the idea of
//! Rust-for-Linux's `ForeignOwnable`, applied to a userspace tree.
//!
//! Even words below 4096 are reserved for the tree (the kernel's `MAPLE_RESERVED_RANGE`): `0`
//! is "nothing", and one of them is the kernel's `XA_ZERO_ENTRY`, a marker that occupies a range
//! but reads as empty. [`Value`] words are always odd and pointer words are heap addresses, so no implementation
//! in this crate can produce a reserved word.

use alloc::sync::Arc;
use alloc::{boxed::Box, vec::Vec};
use core::fmt;
use core::mem::ManuallyDrop;

/// Words in `1..RESERVED_LIMIT` that are even are reserved (the kernel's `MAPLE_RESERVED_RANGE`).
pub(crate) const RESERVED_LIMIT: usize = 4096;

/// The word of the reserved zero entry (the kernel's `XA_ZERO_ENTRY`, internal value 257).
pub(crate) const ZERO_WORD: usize = (257 << 2) | 2;

/// Whether `word` is one the tree reserves for itself (nothing, or a marker such as the zero entry).
#[inline]
pub(crate) const fn is_reserved_word(word: usize) -> bool {
    word < RESERVED_LIMIT && word & 1 == 0
}

/// A value the tree can own: convertible into a non-reserved machine word and back.
///
/// Implemented for [`Value`] (a small integer in the word), `Box<T>`, `Arc<T>` and
/// `&'static T` for any sized `T`.
///
/// # Unsized data
///
/// An entry is one machine word, so a fat pointer (`Box<str>`, `Arc<[u8]>`,
/// `Box<dyn Trait>`) cannot be one. Put the unsized value behind one more thin owner:
/// `Box<Box<str>>` or `Box<String>` for text, `Arc<String>` or `Arc<Vec<T>>` for shared data,
/// `Box<Box<dyn Trait>>` for trait objects. The extra indirection costs one allocation per
/// entry; a thin-pointer crate (`thin_vec::ThinVec`, `triomphe::ThinArc`) stores the length
/// inline and can implement this trait with the contract below.
///
/// ```
/// use std::sync::Arc;
/// use maple_tree::MapleTree;
///
/// trait Symbol: Send + Sync { fn name(&self) -> &str; }
/// struct Func(&'static str);
/// impl Symbol for Func { fn name(&self) -> &str { self.0 } }
///
/// // Text: `Box<Box<str>>` (or `Box<String>`); readers borrow `&Box<str>`.
/// let names = MapleTree::<Box<Box<str>>>::new();
/// names.store_range(0x1000..0x2000, Box::new("main".into())).unwrap();
/// let guard = names.pin();
/// assert_eq!(names.load(0x1800, &guard).map(|s| &**s), Some("main"));
///
/// // Shared data: `Arc<String>`; `get` clones the `Arc` out.
/// let shared = MapleTree::<Arc<String>>::new();
/// shared.store(7, Arc::new("seven".to_string())).unwrap();
/// assert_eq!(shared.get(7).as_deref().map(String::as_str), Some("seven"));
///
/// // Trait objects: `Box<Box<dyn Trait>>`.
/// let syms = MapleTree::<Box<Box<dyn Symbol>>>::new();
/// syms.store_range(0..=0xfff, Box::new(Box::new(Func("start")))).unwrap();
/// let guard = syms.pin();
/// assert_eq!(syms.load(0x10, &guard).map(|s| s.name()), Some("start"));
/// ```
///
/// # Safety
///
/// Implementors promise that:
/// - [`Entry::into_word`] never returns a reserved word (an even word below 4096);
/// - [`Entry::from_word`] applied to a word produced by `into_word` gives back the same value,
///   and is called at most once per `into_word` — except for types without drop glue
///   (`!core::mem::needs_drop::<Self>()`), for which the tree does not track a word that a store
///   split over two ranges: [`MapleTree::remove`](crate::MapleTree::remove) of one of them may
///   take the word back while the other still holds it, so such types must be freely
///   duplicable, as [`Value`] and `&'static T` are;
/// - [`Entry::borrow`] of such a word is valid for as long as the word has not been passed to
///   `from_word`, and may be called from any thread holding a shared reference to the tree
///   (hence the `Sync` requirement on the tree's entries for sharing across threads);
/// - if [`Entry::CLONE_IS_COPY`] is `true`, the type has no drop glue and, where it is `Clone`,
///   a clone of the entry behind a word is that same word again, with no other effect.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a maple tree entry",
    label = "not a thin owner the tree can keep in one machine word",
    note = "entries are `Value`, `Box<T>`, `Arc<T>` or `&'static T` for a sized `T`",
    note = "for `str`, slices or `dyn Trait`, add one thin owner: `Box<Box<str>>`, `Arc<String>`, `Box<Box<dyn Trait>>` (see the `Entry` docs, \"Unsized data\")"
)]
pub unsafe trait Entry: Sized {
    /// What a reader gets while the entry stays in the tree: `&T` for boxes and `Arc`s, the
    /// value itself for [`Value`].
    type Borrowed<'a>: Copy
    where
        Self: 'a;

    /// Heap bytes one entry owns, as far as the tree can tell (0 by default); used only to
    /// report memory held back by readers ([`MapleTree::pending_frees`](crate::MapleTree::pending_frees)).
    const HEAP_SIZE: usize = 0;

    /// Whether cloning an entry just copies its word (`true` for [`Value`] and `&'static T`;
    /// `false` by default): [`MapleTree::dup`](crate::MapleTree::dup) then copies leaves word
    /// for word, as the kernel's `__mt_dup` copies its slots, instead of cloning entry by entry.
    /// A promise of the implementor (see the trait's `# Safety`).
    const CLONE_IS_COPY: bool = false;

    /// Gives up ownership, returning the word to store.
    fn into_word(self) -> usize;

    /// Takes ownership back.
    ///
    /// # Safety
    ///
    /// `word` must come from [`Entry::into_word`] of this type and not have been passed to
    /// `from_word` before.
    unsafe fn from_word(word: usize) -> Self;

    /// Borrows the entry behind `word`.
    ///
    /// # Safety
    ///
    /// `word` must come from [`Entry::into_word`] of this type, and the entry must stay owned
    /// (not passed to `from_word`) for the whole lifetime `'a`.
    unsafe fn borrow<'a>(word: usize) -> Self::Borrowed<'a>;
}

/// Clones the entry behind `word` without taking it out of the tree.
///
/// # Safety
///
/// `word` must be a live word of `E` (from `into_word`, not yet given to `from_word`).
pub(crate) unsafe fn clone_word<E: Entry + Clone>(word: usize) -> E {
    // SAFETY: the caller guarantees `word` is live; `ManuallyDrop` keeps us from dropping the
    // tree's copy, so ownership is not duplicated — we only clone through a temporary view.
    let view = ManuallyDrop::new(unsafe { E::from_word(word) });
    E::clone(&view)
}

/// Calls `f` with a reference to the entry behind `word`, without taking it out of the tree.
///
/// # Safety
///
/// `word` must be a live word of `E` (from `into_word`, not yet given to `from_word`), and stay
/// so while `f` runs.
pub(crate) unsafe fn view_word<E: Entry, R>(word: usize, f: impl FnOnce(&E) -> R) -> R {
    // SAFETY: the caller guarantees `word` is live; `ManuallyDrop` keeps us from dropping the
    // tree's copy (also when `f` panics), and `f` only gets a shared reference to the view, so
    // it cannot move the value out: ownership stays with the tree.
    let view = ManuallyDrop::new(unsafe { E::from_word(word) });
    f(&view)
}

/// Drops the values of a released word taken apart by [`Released::into_raw_parts`] (a plain
/// function, so that a postponed drop of any `E` is one `unsafe fn(usize, usize)` pointer).
///
/// # Safety
///
/// `(raw, count)` came from [`Released::into_raw_parts`] of a `Released<E>`, and is dropped
/// once; the contract of [`Released::drop_values`] holds.
pub(crate) unsafe fn drop_released_raw<E: Entry>(raw: usize, count: usize) {
    // SAFETY: the caller's contract: the parts of one `Released<E>`, consumed here once.
    unsafe { Released::<E>::new(raw, count).drop_values() }
}

/// An entry converted into its word but not stored yet: dropping it drops the entry;
/// [`into_raw`](Self::into_raw) hands the word to the tree, which owns it from then on. Made only
/// by [`Owned::new`], so its word is never a reserved one.
pub(crate) struct Owned<E: Entry> {
    word: usize,
    _e: core::marker::PhantomData<E>,
}

impl<E: Entry> Owned<E> {
    /// Converts `entry`, refusing a reserved word (a faulty [`Entry`] implementation): the entry
    /// is dropped then.
    ///
    /// # Errors
    ///
    /// [`Error::Reserved`](crate::Error::Reserved) for a reserved word.
    #[inline]
    pub(crate) fn new(entry: E) -> Result<Self, crate::Error> {
        let word = entry.into_word();
        let owned = Owned {
            word,
            _e: core::marker::PhantomData,
        };
        if is_reserved_word(word) {
            drop(owned);
            return Err(crate::Error::Reserved);
        }
        Ok(owned)
    }

    /// The word, handed over to the tree (which takes it back with `from_word` exactly once,
    /// when it releases it).
    #[inline]
    pub(crate) fn into_raw(self) -> usize {
        ManuallyDrop::new(self).word
    }

    /// The word, handed over to the tree, named as a [`Word`].
    #[inline]
    pub(crate) fn into_word(self) -> Word<E> {
        Word::leaf(self.into_raw())
    }
}

impl<E: Entry> Drop for Owned<E> {
    fn drop(&mut self) {
        // SAFETY: `word` came from `into_word` (in `new`) and was not handed over (`into_raw`
        // forgets `self`), so this is the one `from_word` of it.
        drop(unsafe { E::from_word(self.word) });
    }
}

/// An entry word of a tree of `E` as its writer handles it: nothing (0), the zero entry
/// ([`ZERO_WORD`]), or a word of `E::into_word` the tree holds. It is only a name for the word:
/// owning it, and taking the entry back, goes through the tree's [`Ledger`].
pub(crate) struct Word<E> {
    raw: usize,
    _e: core::marker::PhantomData<fn() -> E>,
}

impl<E> Clone for Word<E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Word<E> {}
impl<E> PartialEq for Word<E> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl<E> Eq for Word<E> {}
impl<E> fmt::Debug for Word<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Word({:#x})", self.raw)
    }
}

impl<E: Entry> Word<E> {
    /// Nothing: an empty slot.
    pub(crate) const NULL: Self = Word::leaf(0);
    /// The reserved zero entry (the kernel's `XA_ZERO_ENTRY`).
    pub(crate) const ZERO: Self = Word::leaf(ZERO_WORD);

    /// The word of a leaf slot of a tree of `E`, as its writer loaded it (or is about to store
    /// it). Naming a word owns nothing: a [`Ledger`] turns it into a [`Released`] only when
    /// the tree's bookkeeping says its last slot went.
    #[inline]
    pub(crate) const fn leaf(raw: usize) -> Self {
        Word {
            raw,
            _e: core::marker::PhantomData,
        }
    }

    /// The raw word, for the node layer's slot stores and comparisons.
    #[inline]
    pub(crate) const fn raw(self) -> usize {
        self.raw
    }

    /// Whether this is nothing (an empty slot).
    #[inline]
    pub(crate) const fn is_null(self) -> bool {
        self.raw == 0
    }

    /// Whether the word holds a value of `E` whose drop the tree must run: neither nothing nor
    /// the zero entry, and `E` has drop glue.
    #[inline]
    const fn owns_drop(self) -> bool {
        self.raw != 0 && self.raw != ZERO_WORD && core::mem::needs_drop::<E>()
    }
}

/// An entry word that no slot of the tree references any more, with the number of values of
/// it the tree owned (one per `into_word` that stored it). Made only by a [`Ledger`] when the
/// last slot holding the word went, so each value is taken back once; consumed by the node
/// layer, which decides when no reader can load the word any more. Dropping it without
/// consuming it leaks the values (never frees them twice).
#[must_use = "a released entry is leaked unless it is dropped or taken back"]
pub(crate) struct Released<E> {
    raw: usize,
    count: usize,
    _e: core::marker::PhantomData<fn() -> E>,
}

impl<E: Entry> Released<E> {
    #[inline]
    fn new(raw: usize, count: usize) -> Self {
        debug_assert!(raw != 0 && raw != ZERO_WORD);
        Released {
            raw,
            count,
            _e: core::marker::PhantomData,
        }
    }

    /// Drops the values.
    ///
    /// # Safety
    ///
    /// No thread may still load the word from a node: the caller has the tree exclusively, or
    /// a grace period passed after the last node holding it was unlinked (its collector runs
    /// this as a deferred function).
    pub(crate) unsafe fn drop_values(self) {
        // If one value's `Drop` panics, the others are still dropped while it unwinds (as a
        // `Vec`'s elements are).
        struct Rest<E: Entry>(Released<E>);
        impl<E: Entry> Drop for Rest<E> {
            fn drop(&mut self) {
                while self.0.count > 0 {
                    self.0.count -= 1;
                    // SAFETY: the ledger made the `Released` when the last slot of the word
                    // went, with one count per `into_word` that stored it and none taken back
                    // (each `Released` is made once and consumed here once, one count per
                    // `from_word`); no reader can load it (the caller's contract).
                    drop(unsafe { E::from_word(self.0.raw) });
                }
            }
        }
        drop(Rest(self));
    }

    /// The word and its count, for a drop the node layer postpones (an RCU-mode deferred drop
    /// that ran while its thread held a writer lock); taken back once by [`drop_released_raw`].
    pub(crate) fn into_raw_parts(self) -> (usize, usize) {
        (self.raw, self.count)
    }

    /// The word of the values.
    pub(crate) fn raw_word(&self) -> usize {
        self.raw
    }

    /// The entry, borrowed for as long as this is not consumed.
    pub(crate) fn borrow(&self) -> E::Borrowed<'_> {
        // SAFETY: the word came from `into_word` of `E` (the ledger made this `Released` from
        // a stored word) and its values are owned by `self` until a consuming method
        // (`drop_values`, `take`, `into_raw_parts`) runs, which `&self` rules out for the
        // borrow's lifetime; for types without drop glue the word is a freely duplicable value.
        unsafe { E::borrow(self.raw) }
    }

    /// Takes the first value back and drops the others; for types without drop glue, whose
    /// words the ledger does not count, a copy of the value.
    ///
    /// # Safety
    ///
    /// As for [`drop_values`](Self::drop_values).
    pub(crate) unsafe fn take(self) -> Option<E> {
        let n = self.count.max(usize::from(!core::mem::needs_drop::<E>()));
        let mut first = None;
        for _ in 0..n {
            // SAFETY: as in `drop_values`; for types without drop glue `from_word` may be
            // called again for a word another slot still holds (the `Entry` contract).
            let e = unsafe { E::from_word(self.raw) };
            if first.is_none() {
                first = Some(e);
            } else {
                drop(e);
            }
        }
        first
    }
}

/// The ledger's extra slot counts by word: a hash map with std, a `BTreeMap` without (core and
/// alloc have no hash map).
#[cfg(feature = "std")]
type MultiMap = std::collections::HashMap<usize, usize>;
#[cfg(not(feature = "std"))]
type MultiMap = alloc::collections::BTreeMap<usize, usize>;

/// The writer's ledger of a tree's entry words (only the holder of the writer lock, or of
/// `&mut` of the tree, touches it): the words held by more than one slot (a store split a range
/// around a new entry) and how many extra slots hold them, and, in exclusive mode, the words a
/// write released, dropped once the write is complete (an entry's `Drop` may panic, and the
/// tree must be whole by then).
///
/// Its one contract, kept by the write paths and checked by `validate` for shared words: the
/// writer calls [`share`](Self::share) once for each slot that starts holding a word another
/// slot already holds, and [`release`](Self::release) once for each slot of the live tree that
/// stops holding its word. Types without drop glue are not counted.
pub(crate) struct Ledger<E> {
    multi: MultiMap,
    queued: Vec<usize>,
    /// A word one write hands to its caller instead of releasing it (see
    /// [`keep`](Self::keep)); 0 for none.
    keep: usize,
    /// Whether the kept word's last slot went.
    kept: bool,
    _e: core::marker::PhantomData<fn() -> E>,
}

impl<E: Entry> Default for Ledger<E> {
    fn default() -> Self {
        Ledger {
            multi: MultiMap::new(),
            queued: Vec::new(),
            keep: 0,
            kept: false,
            _e: core::marker::PhantomData,
        }
    }
}

impl<E: Entry> Ledger<E> {
    /// One more slot holds `w`, which another slot already holds.
    #[inline]
    pub(crate) fn share(&mut self, w: Word<E>) {
        if w.owns_drop() {
            *self.multi.entry(w.raw).or_insert(0) += 1;
        }
    }

    /// A slot of the live tree stopped holding `w`: the word, released, if that was its last
    /// slot and it owns a value to drop; `None` otherwise.
    #[inline]
    pub(crate) fn release(&mut self, w: Word<E>) -> Option<Released<E>> {
        if !w.owns_drop() {
            return None;
        }
        if !self.multi.is_empty() {
            if let Some(c) = self.multi.get_mut(&w.raw) {
                *c -= 1;
                if *c == 0 {
                    self.multi.remove(&w.raw);
                }
                return None;
            }
        }
        if w.raw == self.keep {
            self.kept = true;
            return None;
        }
        Some(Released::new(w.raw, 1))
    }

    /// Before a write that erases the one slot holding `w` (no other slot holds it): its
    /// release is to be handed to the caller ([`kept`](Self::kept)) instead of being dropped.
    pub(crate) fn keep(&mut self, w: Word<E>) {
        debug_assert_eq!(self.extra(w), 0);
        self.keep = w.raw;
        self.kept = false;
    }

    /// After the write [`keep`](Self::keep) prepared: the word, released, if its slot went
    /// (always, for a write that erased it); for types without drop glue (not counted), one
    /// copy.
    pub(crate) fn kept(&mut self, w: Word<E>) -> Option<Released<E>> {
        debug_assert!(self.keep == w.raw || !w.owns_drop());
        let kept = core::mem::take(&mut self.kept);
        self.keep = 0;
        if !core::mem::needs_drop::<E>() {
            return (w.raw != 0 && w.raw != ZERO_WORD).then(|| Released::new(w.raw, 0));
        }
        kept.then(|| Released::new(w.raw, 1))
    }

    /// How many slots beyond the first hold `w` (0 if one, or if it is not counted).
    #[inline]
    pub(crate) fn extra(&self, w: Word<E>) -> usize {
        self.multi.get(&w.raw).copied().unwrap_or(0)
    }

    /// Before erasing every one of the `slots` slots that hold `w` to hand its value back:
    /// counts them all as extra, so that their releases drop nothing. Returns how many of them
    /// own a value (the slots beyond the shared ones).
    pub(crate) fn hold(&mut self, w: Word<E>, slots: usize) -> usize {
        let extra = self.multi.entry(w.raw).or_insert(0);
        let owned = slots - *extra;
        *extra += slots;
        owned
    }

    /// After the slots [`hold`](Self::hold) counted were erased: the word with the `owned`
    /// values of it the tree held, released (`None` for nothing, the zero entry, or `owned`
    /// 0 of a type with drop glue). For types without drop glue (not counted), one copy.
    pub(crate) fn unhold(&mut self, w: Word<E>, owned: usize) -> Option<Released<E>> {
        self.multi.remove(&w.raw);
        let counted = w.owns_drop() && owned > 0;
        let copy = w.raw != 0 && w.raw != ZERO_WORD && !core::mem::needs_drop::<E>();
        (counted || copy).then(|| Released::new(w.raw, owned))
    }

    /// Exclusive mode: keeps `r` until the write is complete ([`dequeue`](Self::dequeue)).
    #[inline]
    pub(crate) fn queue(&mut self, r: Released<E>) {
        // Queued words are single values: `release` makes only those.
        debug_assert_eq!(r.count, 1);
        self.queued.push(ManuallyDrop::new(r).raw);
    }

    /// Whether a write left released words queued.
    #[inline]
    pub(crate) fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }

    /// The next queued released word.
    #[inline]
    pub(crate) fn dequeue(&mut self) -> Option<Released<E>> {
        self.queued.pop().map(|raw| Released::new(raw, 1))
    }

    /// Whether no word is recorded as shared.
    #[inline]
    pub(crate) fn no_shared(&self) -> bool {
        self.multi.is_empty()
    }

    /// The words recorded as shared, with their extra slot counts (for `validate`).
    pub(crate) fn shared(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.multi.iter().map(|(&w, &c)| (w, c))
    }
}

/// A small integer stored directly in the word (the kernel's `xa_mk_value`): `(v << 1) | 1`.
///
/// Values up to `2^63 - 1` fit. Storing values needs no allocation and dropping them does nothing.
///
/// ```
/// use maple_tree::{MapleTree, Value};
/// # fn main() -> Result<(), maple_tree::Error> {
/// let tree = MapleTree::<Value>::new();
/// tree.store_range(10..=19, Value::new(7))?;
/// assert_eq!(tree.get(15), Some(Value::new(7)));
/// assert_eq!(Value::new(7).get(), 7);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Value(u64);

impl Value {
    /// The largest value that fits: one bit less than a word, `2^63 - 1` on 64-bit targets
    /// (`2^31 - 1` on 32-bit ones).
    pub const MAX: u64 = (usize::MAX >> 1) as u64;

    /// Wraps `v`.
    ///
    /// # Panics
    ///
    /// If `v > Value::MAX`; use [`Value::try_new`] for unchecked input.
    ///
    /// ```
    /// use maple_tree::Value;
    ///
    /// let v = Value::new(42);
    /// assert_eq!(v.get(), 42);
    /// ```
    ///
    /// ```should_panic
    /// use maple_tree::Value;
    ///
    /// let _ = Value::new(u64::MAX); // does not fit: panics
    /// ```
    #[inline]
    pub const fn new(v: u64) -> Self {
        assert!(v <= Self::MAX, "Value::new: value above Value::MAX");
        Value(v)
    }

    /// Wraps `v`, or `None` if it is above [`Value::MAX`] (63 bits on 64-bit targets).
    ///
    /// ```
    /// use maple_tree::Value;
    ///
    /// assert_eq!(Value::try_new(Value::MAX).map(Value::get), Some(Value::MAX));
    /// assert_eq!(Value::try_new(Value::MAX + 1), None);
    /// ```
    #[inline]
    pub const fn try_new(v: u64) -> Option<Self> {
        if v <= Self::MAX {
            Some(Value(v))
        } else {
            None
        }
    }

    /// The wrapped integer.
    ///
    /// ```
    /// use maple_tree::Value;
    ///
    /// assert_eq!(Value::new(7).get(), 7);
    /// assert_eq!(u64::from(Value::new(7)), 7); // the same, as a conversion
    /// ```
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Value({})", self.0)
    }
}

// SAFETY: words are `(v << 1) | 1`, always odd, hence never reserved; `from_word` inverts the
// encoding exactly; a `Value` owns nothing, so borrowing is copying.
unsafe impl Entry for Value {
    type Borrowed<'a> = Value;
    // A `Value` is its word: no drop glue, and its clone is a copy.
    const CLONE_IS_COPY: bool = true;

    #[inline]
    fn into_word(self) -> usize {
        ((self.0 as usize) << 1) | 1
    }

    #[inline]
    unsafe fn from_word(word: usize) -> Self {
        Value((word >> 1) as u64)
    }

    #[inline]
    unsafe fn borrow<'a>(word: usize) -> Self::Borrowed<'a> {
        Value((word >> 1) as u64)
    }
}

/// A heap address as an entry word must not be a reserved one (below 4096): std's platforms
/// never map the null page, so only a debug check there; without std the global allocator is
/// the user's, and an address below 4096 panics (the allocation leaks) instead of being
/// misread as a tree-internal word.
#[inline(always)]
fn check_heap_word(word: usize) {
    #[cfg(feature = "std")]
    debug_assert!(!is_reserved_word(word));
    #[cfg(not(feature = "std"))]
    assert!(
        !is_reserved_word(word),
        "maple tree: the allocator returned an address below 4096, which entries cannot use"
    );
}

// SAFETY: a `Box<T>` of a non-zero-sized `T` is a heap address, which is at least 4096 on every
// platform std supports (the null page is never mapped), so it is never reserved; without std
// the global allocator is the user's, so `into_word` checks it; the inline const
// rejects zero-sized `T` (whose boxes are dangling small addresses) at compile time. The word is
// the box's raw pointer, round-tripped through exposed provenance.
unsafe impl<T: 'static> Entry for Box<T> {
    type Borrowed<'a> = &'a T;

    const HEAP_SIZE: usize = core::mem::size_of::<T>();

    #[inline]
    fn into_word(self) -> usize {
        const {
            assert!(
                core::mem::size_of::<T>() != 0,
                "Box of a zero-sized type cannot be stored; use Value"
            )
        };
        let word = Box::into_raw(self).expose_provenance();
        check_heap_word(word);
        word
    }

    #[inline]
    unsafe fn from_word(word: usize) -> Self {
        // SAFETY: the caller passes a word from `into_word`, i.e. an exposed `Box::into_raw`.
        unsafe { Box::from_raw(core::ptr::with_exposed_provenance_mut::<T>(word)) }
    }

    #[inline]
    unsafe fn borrow<'a>(word: usize) -> &'a T {
        // SAFETY: the box is alive for 'a (caller contract) and only shared borrows are handed out.
        unsafe { &*core::ptr::with_exposed_provenance::<T>(word) }
    }
}

// SAFETY: `Arc::into_raw` points into a live heap allocation (after the counts), never a reserved
// word (as for `Box`: checked without std); the round trip is `Arc::from_raw`; borrows are shared references to the payload.
unsafe impl<T: 'static> Entry for Arc<T> {
    type Borrowed<'a> = &'a T;

    /// The payload and the two counts (freed only if the tree held the last strong count).
    const HEAP_SIZE: usize = core::mem::size_of::<T>() + 2 * core::mem::size_of::<usize>();

    #[inline]
    fn into_word(self) -> usize {
        let word = Arc::into_raw(self).expose_provenance();
        check_heap_word(word);
        word
    }

    #[inline]
    unsafe fn from_word(word: usize) -> Self {
        // SAFETY: the caller passes a word from `into_word`, i.e. an exposed `Arc::into_raw`.
        unsafe { Arc::from_raw(core::ptr::with_exposed_provenance::<T>(word)) }
    }

    #[inline]
    unsafe fn borrow<'a>(word: usize) -> &'a T {
        // SAFETY: the tree holds one strong count for as long as the word is live.
        unsafe { &*core::ptr::with_exposed_provenance::<T>(word) }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl From<u32> for Value {
    /// Every `u32` fits.
    ///
    /// ```
    /// use maple_tree::Value;
    /// assert_eq!(Value::from(7u32).get(), 7);
    /// ```
    #[inline]
    fn from(v: u32) -> Self {
        Value(u64::from(v))
    }
}

impl TryFrom<u64> for Value {
    type Error = ValueTooLarge;

    /// [`Value::try_new`] as a conversion.
    ///
    /// # Errors
    ///
    /// [`ValueTooLarge`] if `v > Value::MAX`.
    ///
    /// ```
    /// use maple_tree::Value;
    /// # fn main() -> Result<(), maple_tree::entry::ValueTooLarge> {
    /// let v = Value::try_from(1u64 << 40)?;
    /// assert_eq!(v.get(), 1 << 40);
    /// assert!(Value::try_from(u64::MAX).is_err());
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    fn try_from(v: u64) -> Result<Self, ValueTooLarge> {
        Value::try_new(v).ok_or(ValueTooLarge(v))
    }
}

impl From<Value> for u64 {
    #[inline]
    fn from(v: Value) -> u64 {
        v.0
    }
}

/// The error of `Value::try_from(u64)`: the integer is above [`Value::MAX`] (63 bits on 64-bit
/// targets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueTooLarge(u64);

impl ValueTooLarge {
    /// The integer that did not fit.
    ///
    /// ```
    /// use maple_tree::Value;
    ///
    /// let err = Value::try_from(u64::MAX).unwrap_err();
    /// assert_eq!(err.value(), u64::MAX);
    /// ```
    pub const fn value(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ValueTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} does not fit in a Value (above Value::MAX)", self.0)
    }
}

impl core::error::Error for ValueTooLarge {}

// SAFETY: a reference to a non-zero-sized `T` is the address of a live object, at least 4096 on
// every supported platform (the null page is never mapped), so never reserved; the inline const
// rejects zero-sized `T` (whose references may be small dangling addresses). The tree owns
// nothing: `from_word` gives the reference back and dropping it does nothing; `'static` keeps the
// referent alive for every borrow.
unsafe impl<T: 'static> Entry for &'static T {
    type Borrowed<'a> = &'static T;
    // A shared reference: no drop glue, and its clone is the same address.
    const CLONE_IS_COPY: bool = true;

    #[inline]
    fn into_word(self) -> usize {
        const {
            assert!(
                core::mem::size_of::<T>() != 0,
                "a reference to a zero-sized type cannot be stored; use Value"
            )
        };
        let word = (self as *const T).expose_provenance();
        debug_assert!(!is_reserved_word(word));
        word
    }

    #[inline]
    unsafe fn from_word(word: usize) -> Self {
        // SAFETY: the word is an exposed `&'static T` (caller contract), valid for ever.
        unsafe { &*core::ptr::with_exposed_provenance::<T>(word) }
    }

    #[inline]
    unsafe fn borrow<'a>(word: usize) -> Self::Borrowed<'a> {
        // SAFETY: as in `from_word`.
        unsafe { &*core::ptr::with_exposed_provenance::<T>(word) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the drops of boxed values made by [`counted`].
    static DROPS: AtomicUsize = AtomicUsize::new(0);

    struct Counted(#[allow(dead_code)] u64);
    impl Drop for Counted {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn counted() -> Word<Box<Counted>> {
        Owned::new(Box::new(Counted(1))).unwrap().into_word()
    }

    fn drops() -> usize {
        DROPS.load(Ordering::Relaxed)
    }

    // One test: the drop counter is shared.
    #[test]
    fn ledger_releases_a_word_with_its_last_slot() {
        let mut l = Ledger::<Box<Counted>>::default();
        let before = drops();
        // One slot: released at once.
        let w = counted();
        let r = l.release(w).expect("the only slot went");
        // SAFETY: the word was never stored in a tree: nobody else can load it.
        unsafe { r.drop_values() };
        assert_eq!(drops(), before + 1);

        // Three slots (two shares): only the third release gives the word back.
        let w = counted();
        l.share(w);
        l.share(w);
        assert_eq!(l.extra(w), 2);
        assert!(l.release(w).is_none());
        assert!(l.release(w).is_none());
        assert!(l.no_shared());
        let r = l.release(w).expect("the last slot went");
        // SAFETY: as above.
        assert!(unsafe { r.take() }.is_some());
        assert_eq!(drops(), before + 2);

        // Nothing and the zero entry own nothing.
        assert!(l.release(Word::NULL).is_none());
        assert!(l.release(Word::ZERO).is_none());

        // Held for a removal of its two slots, one of them shared: one value comes back.
        let w = counted();
        l.share(w);
        assert_eq!(l.hold(w, 2), 1);
        assert!(l.release(w).is_none() && l.release(w).is_none());
        let r = l.unhold(w, 1).expect("one value owned");
        // SAFETY: as above.
        drop(unsafe { r.take() });
        assert_eq!(drops(), before + 3);
        assert!(l.no_shared());

        // Queued in exclusive mode, dropped on dequeue.
        let w = counted();
        let r = l.release(w).expect("the only slot went");
        l.queue(r);
        assert!(l.has_queued());
        // SAFETY: as above.
        unsafe { l.dequeue().unwrap().drop_values() };
        assert!(!l.has_queued());
        assert_eq!(drops(), before + 4);
    }

    #[test]
    fn values_are_not_counted() {
        let mut l = Ledger::<Value>::default();
        let w = Owned::new(Value::new(7)).unwrap().into_word();
        l.share(w);
        assert!(l.no_shared(), "types without drop glue are not counted");
        assert!(l.release(w).is_none());
        // Taking a value back hands out a copy.
        let r = l.unhold(w, 0).expect("a copy of a value");
        // SAFETY: values can be copied out freely.
        assert_eq!(unsafe { r.take() }, Some(Value::new(7)));
        assert!(l.unhold(Word::<Value>::NULL, 0).is_none());
    }
}
