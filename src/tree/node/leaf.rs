//! The iterator's leaf handles ([`FastLeaf`], [`FastAt`], [`FrontLeaf`], [`FrontAt`], [`FrontParent`],
//! [`BackParent`]),
//! which load a leaf's words once and serve many ranges from them, and the walkers'
//! fixed-capacity [`WalkStack`].

use super::*;

/// A fixed-capacity stack of `N` `Copy` values of which a prefix (`init`) is initialised:
/// creating one costs nothing (the walkers' root-to-leaf levels, written root first). The items
/// come first and the count last (see `Walker`'s layout).
#[repr(C)]
pub(crate) struct WalkStack<T: Copy, const N: usize> {
    pub(super) items: [MaybeUninit<T>; N],
    pub(super) init: usize,
}

impl<T: Copy, const N: usize> WalkStack<T, N> {
    /// Nothing initialised.
    #[inline]
    pub(crate) const fn new() -> Self {
        WalkStack {
            items: [const { MaybeUninit::uninit() }; N],
            init: 0,
        }
    }

    /// Writes level `d`, which must be initialised already or the next one (`d <= init`).
    #[inline]
    pub(crate) fn set(&mut self, d: usize, v: T) {
        if d >= self.init {
            assert!(d == self.init, "levels are written root first");
            self.init = d + 1;
        }
        self.items[d] = MaybeUninit::new(v);
    }

    /// Writes levels `0..k` from `levels` (`k` the number it yields, at most `N`); returns `k`.
    #[inline]
    pub(crate) fn set_prefix(&mut self, levels: impl Iterator<Item = T>) -> usize {
        let mut k = 0;
        for (slot, v) in self.items.iter_mut().zip(levels) {
            *slot = MaybeUninit::new(v);
            k += 1;
        }
        if k > self.init {
            self.init = k;
        }
        k
    }

    /// Level `d` (`d < init`).
    #[inline]
    pub(crate) fn get(&self, d: usize) -> &T {
        assert!(d < self.init);
        // SAFETY: levels below `init` have been written by `set`.
        unsafe { self.items[d].assume_init_ref() }
    }

    /// Level `d` (`d < init`), mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, d: usize) -> &mut T {
        assert!(d < self.init);
        // SAFETY: as in `get`.
        unsafe { self.items[d].assume_init_mut() }
    }

    /// The first `len <= init` levels.
    #[inline]
    pub(crate) fn prefix(&self, len: usize) -> &[T] {
        assert!(len <= self.init);
        // SAFETY: the first `len <= init` levels are initialised, and `MaybeUninit<T>` has the
        // layout of `T`.
        unsafe { core::slice::from_raw_parts(self.items.as_ptr().cast::<T>(), len) }
    }
}

/// The backward iterator's leaf, or none, with its offset (the iterator's current slot): as
/// for [`FrontLeaf`], one load and one check stand for "a leaf", "this offset" and "an offset
/// the step's loads need not check". The back's step from slot `k` reads pivots `k - 3` and
/// `k - 2` and the slots between (see [`at`](Self::at)): `ROOM` is `RANGE_SLOTS - 3`. Without
/// a leaf the offset carries [`NO_LEAF`], which no offset reaches.
pub(crate) struct FastLeaf<'g, E, const ROOM: usize> {
    /// The leaf (dangling while `off` carries `NO_LEAF`).
    pub(super) ptr: NonNull<Node>,
    /// The offset, with `NO_LEAF` set without a leaf.
    pub(super) off: usize,
    pub(super) _guard: PhantomData<(&'g Node, Brand<E>)>,
}

impl<'g, E, const ROOM: usize> FastLeaf<'g, E, ROOM> {
    /// No leaf.
    pub(crate) const NONE: Self = FastLeaf {
        ptr: NonNull::dangling(),
        off: NO_LEAF,
        _guard: PhantomData,
    };

    /// Leaf `n`, at offset `off` (`off <= RANGE_SLOTS`).
    #[inline]
    pub(crate) fn new(n: NodeRef<'g, Read, E>, off: usize) -> Self {
        debug_assert!(n.is_leaf() && off <= RANGE_SLOTS && ROOM + 3 <= RANGE_SLOTS);
        FastLeaf {
            ptr: n.ptr,
            off: off & !NO_LEAF,
            _guard: PhantomData,
        }
    }

    /// The leaf, if any.
    #[inline]
    pub(crate) fn get(self) -> Option<NodeRef<'g, Read, E>> {
        (self.off & NO_LEAF == 0).then_some(NodeRef {
            ptr: self.ptr,
            kind: Kind::Leaf,
            _guard: PhantomData,
        })
    }

    /// The offset (meaningless without a leaf).
    #[inline(always)]
    pub(crate) fn off(self) -> usize {
        self.off & !NO_LEAF
    }

    /// Sets the offset (`off <= RANGE_SLOTS`), keeping "no leaf" if there is none.
    #[inline(always)]
    pub(crate) fn set_off(&mut self, off: usize) {
        debug_assert!(off <= RANGE_SLOTS);
        self.off = (self.off & NO_LEAF) | (off & !NO_LEAF);
    }

    /// The leaf, if there is one and its offset is below `k` (the back's crossing, on its
    /// leaf's first slots).
    #[inline(always)]
    pub(crate) fn below(self, k: usize) -> Option<NodeRef<'g, Read, E>> {
        // Without a leaf `off` carries `NO_LEAF`, above any offset `k` may bound.
        debug_assert!(k <= RANGE_SLOTS);
        (self.off < k).then_some(NodeRef {
            ptr: self.ptr,
            kind: Kind::Leaf,
            _guard: PhantomData,
        })
    }

    /// The leaf, if there is one and its offset `k` has `i = k - 3` below `ROOM` (which the
    /// loads that follow then need not check), as a handle that may move the offset.
    #[inline(always)]
    pub(crate) fn at(&mut self) -> Option<FastAt<'_, 'g, E, ROOM>> {
        // Without a leaf `off` carries `NO_LEAF`, so `off - 3` is above any `ROOM`; below 3 it
        // wraps.
        let i = self.off.wrapping_sub(3);
        (i < ROOM).then_some(FastAt { leaf: self, i })
    }
}

/// A [`FastLeaf`] that holds a leaf, borrowed, its offset 3 above `i` (`i < ROOM`): while it
/// lives nothing else can empty the handle, so its offset may be written as it is.
pub(crate) struct FastAt<'a, 'g, E, const ROOM: usize> {
    pub(super) leaf: &'a mut FastLeaf<'g, E, ROOM>,
    pub(super) i: usize,
}

impl<'g, E, const ROOM: usize> FastAt<'_, 'g, E, ROOM> {
    /// The leaf.
    #[inline(always)]
    pub(crate) fn node(&self) -> NodeRef<'g, Read, E> {
        NodeRef {
            ptr: self.leaf.ptr,
            kind: Kind::Leaf,
            _guard: PhantomData,
        }
    }

    /// The offset less 3, below `ROOM`.
    #[inline(always)]
    pub(crate) fn i(&self) -> usize {
        // SAFETY: `FastLeaf::at`, the only maker of a `FastAt`, checked `i < ROOM`.
        unsafe { core::hint::assert_unchecked(self.i < ROOM) };
        self.i
    }

    /// Moves the offset to `off` (`off <= RANGE_SLOTS`), in place.
    #[inline(always)]
    pub(crate) fn set_off(self, off: usize) {
        debug_assert!(off <= RANGE_SLOTS);
        // The handle holds a leaf: an offset without `NO_LEAF` still names it.
        self.leaf.off = off;
    }
}

/// The forward iterator's leaf, or none, with its offset (the slot after the iterator's
/// current one): one load and one check against `ROOM` stand for "a leaf", "this offset" and
/// "an offset the step's loads need not check" (`FastLeaf`, by contrast, keeps a room word
/// beside an offset the iterator keeps). Without a leaf the offset carries [`NO_LEAF`], which
/// no offset reaches: [`set_off`](Self::set_off) keeps it, so only [`new`](Self::new) makes a
/// leaf.
pub(crate) struct FrontLeaf<'g, E> {
    /// The leaf (dangling while `off` carries `NO_LEAF`).
    pub(super) ptr: NonNull<Node>,
    /// The offset, with `NO_LEAF` set without a leaf.
    pub(super) off: usize,
    pub(super) _guard: PhantomData<(&'g Node, Brand<E>)>,
}

/// The bit of [`FrontLeaf`]'s offset that says there is no leaf (above any offset: offsets
/// go up to `RANGE_SLOTS`; a small bit, so that masks are short immediates).
pub(super) const NO_LEAF: usize = 32;
const _: () = assert!(RANGE_SLOTS < NO_LEAF);

impl<'g, E> FrontLeaf<'g, E> {
    /// No leaf.
    pub(crate) const NONE: Self = FrontLeaf {
        ptr: NonNull::dangling(),
        off: NO_LEAF,
        _guard: PhantomData,
    };

    /// Leaf `n`, at offset `off` (`off <= RANGE_SLOTS`).
    #[inline]
    pub(crate) fn new(n: NodeRef<'g, Read, E>, off: usize) -> Self {
        debug_assert!(n.is_leaf() && off <= RANGE_SLOTS);
        FrontLeaf {
            ptr: n.ptr,
            off: off & !NO_LEAF,
            _guard: PhantomData,
        }
    }

    /// Moves on to leaf `n` at offset 0 if there is a leaf (the handle stays empty otherwise).
    #[inline]
    pub(crate) fn move_to(&mut self, n: NodeRef<'g, Read, E>) {
        debug_assert!(n.is_leaf() && self.off & NO_LEAF == 0);
        self.ptr = n.ptr;
        self.set_off(0);
    }

    /// The leaf, if any.
    #[inline]
    pub(crate) fn get(self) -> Option<NodeRef<'g, Read, E>> {
        (self.off & NO_LEAF == 0).then_some(NodeRef {
            ptr: self.ptr,
            kind: Kind::Leaf,
            _guard: PhantomData,
        })
    }

    /// The offset (meaningless without a leaf).
    #[inline(always)]
    pub(crate) fn off(self) -> usize {
        self.off & !NO_LEAF
    }

    /// Sets the offset (`off <= RANGE_SLOTS`), keeping "no leaf" if there is none.
    #[inline(always)]
    pub(crate) fn set_off(&mut self, off: usize) {
        debug_assert!(off <= RANGE_SLOTS);
        self.off = (self.off & NO_LEAF) | (off & !NO_LEAF);
    }

    /// The leaf, if there is one and the offset is `off` exactly.
    #[inline(always)]
    pub(crate) fn at_exactly(self, off: usize) -> Option<NodeRef<'g, Read, E>> {
        // Without a leaf `off` carries `NO_LEAF`, which no offset does.
        (self.off == off & !NO_LEAF).then_some(NodeRef {
            ptr: self.ptr,
            kind: Kind::Leaf,
            _guard: PhantomData,
        })
    }

    /// The leaf at its offset, if there is a leaf and the offset is below `ROOM` (which the
    /// loads that follow then need not check), as a handle that may move the offset.
    #[inline(always)]
    pub(crate) fn at<const ROOM: usize>(&mut self) -> Option<FrontAt<'_, 'g, E>> {
        const { assert!(ROOM <= RANGE_SLOTS) };
        // Without a leaf `off` carries `NO_LEAF`, above any `ROOM`: only `new` clears it.
        (self.off < ROOM).then_some(FrontAt { leaf: self })
    }
}

/// A [`FrontLeaf`] that holds a leaf, borrowed: while it lives nothing else can empty the
/// handle, so its offset may be written as it is.
pub(crate) struct FrontAt<'a, 'g, E> {
    pub(super) leaf: &'a mut FrontLeaf<'g, E>,
}

impl<'g, E> FrontAt<'_, 'g, E> {
    /// The leaf.
    #[inline(always)]
    pub(crate) fn node(&self) -> NodeRef<'g, Read, E> {
        NodeRef {
            ptr: self.leaf.ptr,
            kind: Kind::Leaf,
            _guard: PhantomData,
        }
    }

    /// The offset (below the `ROOM` it was found under).
    #[inline(always)]
    pub(crate) fn off(&self) -> usize {
        self.leaf.off
    }

    /// Moves the offset on by `by` (to at most `RANGE_SLOTS`), in place.
    #[inline(always)]
    pub(crate) fn advance(self, by: usize) {
        debug_assert!(self.leaf.off + by <= RANGE_SLOTS);
        // The handle holds a leaf: whatever the sum, an offset without `NO_LEAF` still names
        // that leaf (one with it would read as none, a logic error only).
        self.leaf.off += by;
    }
}

/// The parent of the forward iterator's leaf, or none, with the parent's max: the parent is
/// given out only for a leaf that ends below that max (one that has a sibling after it), so
/// one comparison stands for both "a parent" and "a child after the leaf".
pub(crate) struct FrontParent<'g, E> {
    /// The parent (dangling while `max` is 0 for want of one).
    pub(super) ptr: NonNull<Node>,
    pub(super) kind: Kind,
    /// The parent's max; 0 without a parent (no leaf ends below it).
    pub(super) max: u64,
    pub(super) _guard: PhantomData<(&'g Node, Brand<E>)>,
}

impl<'g, E> FrontParent<'g, E> {
    /// No parent (the leaf is the root).
    pub(crate) const NONE: Self = FrontParent {
        ptr: NonNull::dangling(),
        kind: Kind::Range,
        max: 0,
        _guard: PhantomData,
    };

    /// Parent `n`, covering up to `max`.
    #[inline]
    pub(crate) fn new(n: NodeRef<'g, Read, E>, max: u64) -> Self {
        FrontParent {
            ptr: n.ptr,
            kind: n.kind,
            max,
            _guard: PhantomData,
        }
    }

    /// The parent's max (0 without a parent).
    #[inline]
    pub(crate) fn max(self) -> u64 {
        self.max
    }

    /// The parent, if there is one and a child ending at `leaf_max` is not its last.
    #[inline(always)]
    pub(crate) fn below(self, leaf_max: u64) -> Option<NodeRef<'g, Read, E>> {
        // `max` is 0 only for `NONE` or a parent of nothing but index 0: no child ends below.
        (leaf_max < self.max).then_some(NodeRef {
            ptr: self.ptr,
            kind: self.kind,
            _guard: PhantomData,
        })
    }
}

/// The parent of the backward iterator's leaf, or none, with the parent's min: the mirror of
/// [`FrontParent`], given out only for a leaf that starts above that min (one that has a
/// sibling before it), so one comparison stands for both "a parent" and "a child before the
/// leaf".
pub(crate) struct BackParent<'g, E> {
    /// The parent (dangling while `min` is `u64::MAX` for want of one).
    pub(super) ptr: NonNull<Node>,
    pub(super) kind: Kind,
    /// The parent's min; `u64::MAX` without a parent (no leaf starts above it).
    pub(super) min: u64,
    pub(super) _guard: PhantomData<(&'g Node, Brand<E>)>,
}

impl<'g, E> BackParent<'g, E> {
    /// No parent (the leaf is the root).
    pub(crate) const NONE: Self = BackParent {
        ptr: NonNull::dangling(),
        kind: Kind::Range,
        min: u64::MAX,
        _guard: PhantomData,
    };

    /// Parent `n`, covering from `min`.
    #[inline]
    pub(crate) fn new(n: NodeRef<'g, Read, E>, min: u64) -> Self {
        BackParent {
            ptr: n.ptr,
            kind: n.kind,
            min,
            _guard: PhantomData,
        }
    }

    /// The parent's min (`u64::MAX` without a parent).
    #[inline]
    pub(crate) fn min(self) -> u64 {
        self.min
    }

    /// The parent, if there is one and a child starting at `leaf_min` is not its first.
    #[inline(always)]
    pub(crate) fn above(self, leaf_min: u64) -> Option<NodeRef<'g, Read, E>> {
        // `min` is `u64::MAX` for `NONE` (or a parent of nothing but index `u64::MAX`): no
        // child starts above it.
        (leaf_min > self.min).then_some(NodeRef {
            ptr: self.ptr,
            kind: self.kind,
            _guard: PhantomData,
        })
    }
}

// (By hand, these four: a derive would ask `E: Copy`; the brand `E` is only a name, as the
// node handles' own, see `NodeRef`.)
impl<E, const ROOM: usize> Clone for FastLeaf<'_, E, ROOM> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<E, const ROOM: usize> Copy for FastLeaf<'_, E, ROOM> {}
impl<E> Clone for FrontLeaf<'_, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for FrontLeaf<'_, E> {}
impl<E> Clone for FrontParent<'_, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for FrontParent<'_, E> {}
impl<E> Clone for BackParent<'_, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for BackParent<'_, E> {}
