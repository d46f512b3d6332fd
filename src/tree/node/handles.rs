//! The typed node handles every reader and the writer share: access and write modes
//! ([`Read`]/[`Write`], [`Rcu`]/[`Exclusive`]), [`NodeRef`] and its loads, [`Loaded`] leaf
//! words, [`Slot`]s to store, and the writer's [`SavedNodes`].

use super::*;

/// Nodes of a path the writer keeps between writes (see `walk::SavedPath`), root first, with
/// what makes them safe to use again: the tree they belong to and its count of retired nodes at
/// the time they were saved. Made only by [`WriterRoot::save_nodes`], read only by
/// [`WriterRoot::saved_nodes`], which hands them back only if no node has been retired since
/// (so none of them can have been freed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SavedNodes<const N: usize> {
    pub(super) root: usize,
    pub(super) retired: u64,
    pub(super) len: usize,
    /// `len` as saved, kept while suspended (see [`suspend`](Self::suspend)).
    pub(super) kept: usize,
    pub(super) words: [usize; N],
}

impl<const N: usize> Default for SavedNodes<N> {
    fn default() -> Self {
        SavedNodes {
            root: 0,
            retired: 0,
            len: 0,
            kept: 0,
            words: [0; N],
        }
    }
}

impl<const N: usize> SavedNodes<N> {
    /// Forgets the nodes.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.kept = 0;
    }

    /// Hands out nothing until [`WriterRoot::resume_nodes`] (or a new save), keeping the nodes.
    #[inline]
    pub(crate) fn suspend(&mut self) {
        if self.len > 0 {
            self.kept = self.len;
        }
        self.len = 0;
    }

    /// Number of nodes saved.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// The brand of a handle that reads no entry: the writer's structural handles ([`Live`],
/// [`Fresh`], [`Unlinked`]), the gap search's and `validate`'s walks. No [`Entry`] is
/// `Unbranded` (it is not nameable outside the crate), so a [`Loaded`] of such a handle has no
/// [`entry`](Loaded::entry); forgetting a brand ([`NodeRef::unbranded`],
/// [`RootRef::unbranded`]) is always sound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unbranded {}

/// How a handle carries its brand `E`: a name only (no `E` is stored, owned or dropped).
pub(super) type Brand<E> = fn() -> E;

/// A leaf slot word loaded under the protection of `'g` (a guard of the tree's collector, or
/// the writer), from a node of a tree of `E` (the brand, see the module docs): 0 (nothing), the
/// zero entry, or an entry word of the tree. Only the node layer's leaf loads make one, so
/// borrowing its entry for `'g` needs no `unsafe` above, nor the entry type named.
pub(crate) struct Loaded<'g, E = Unbranded> {
    pub(super) w: usize,
    pub(super) _g: PhantomData<(&'g Node, Brand<E>)>,
}

// (By hand: a derive would ask `E: Copy`; the brand is only a name.)
impl<E> Clone for Loaded<'_, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Loaded<'_, E> {}
impl<E> PartialEq for Loaded<'_, E> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.w == other.w
    }
}
impl<E> Eq for Loaded<'_, E> {}
impl<E> core::fmt::Debug for Loaded<'_, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Loaded({:#x})", self.w)
    }
}

impl<'g, E> Loaded<'g, E> {
    /// Nothing (an empty slot).
    pub(crate) const NONE: Self = Loaded {
        w: 0,
        _g: PhantomData,
    };

    #[inline]
    pub(super) fn new(w: usize) -> Self {
        Loaded { w, _g: PhantomData }
    }

    /// The raw word (for comparisons and the writer's bookkeeping).
    #[inline]
    pub(crate) fn raw(self) -> usize {
        self.w
    }

    /// Whether the slot holds an entry (not nothing, not the zero entry).
    ///
    /// One test for both: the zero entry's bits cover nothing's, and every entry word has a
    /// bit outside them (it is odd or at least `RESERVED_LIMIT`, `Entry`'s contract; a leaf
    /// holds no other reserved word).
    #[inline]
    pub(crate) fn is_entry(self) -> bool {
        let entry = self.w | ZERO_WORD != ZERO_WORD;
        debug_assert_eq!(entry, self.w != 0 && self.w != ZERO_WORD, "{:#x}", self.w);
        entry
    }
}

impl<'g, E: Entry + 'g> Loaded<'g, E> {
    /// Borrows the entry for `'g` (`None` for nothing and the zero entry).
    #[inline]
    pub(crate) fn entry(self) -> Option<E::Borrowed<'g>> {
        if self.is_entry() {
            // SAFETY: a `Loaded<'g, E>` is made only by a leaf load of a node handle branded
            // `E`, which only a root of a tree of `E` hands out (module docs, "The brand"); a
            // leaf word of that tree that is an entry is a word of `E::into_word` (only the
            // writer of the tree, a `Writer<E>`, stores leaf words), loaded under a protection
            // of 'g, which keeps the entry alive for 'g (entries are released through the same
            // collector).
            Some(unsafe { E::borrow::<'g>(self.w) })
        } else {
            None
        }
    }

    /// A clone of the entry (`None` for nothing and the zero entry).
    #[inline]
    pub(crate) fn cloned(self) -> Option<E>
    where
        E: Clone,
    {
        if self.is_entry() {
            // SAFETY: as in `entry`: a live entry word of the tree of `E` for 'g.
            Some(unsafe { crate::entry::clone_word::<E>(self.w) })
        } else {
            None
        }
    }

    /// Calls `f` with a reference to the entry (`None` for nothing and the zero entry, without
    /// calling `f`).
    #[inline]
    pub(crate) fn with_entry<R>(self, f: impl FnOnce(&E) -> R) -> Option<R> {
        if self.is_entry() {
            // SAFETY: as in `entry`: a live entry word of the tree of `E` for 'g, and `f` runs
            // within 'g.
            Some(unsafe { crate::entry::view_word::<E, R>(self.w, f) })
        } else {
            None
        }
    }
}

/// What a slot of a node holds, as the writer builds nodes: an entry word (leaves: 0 is
/// nothing) or a child node (internal nodes). Internal slots are written only from handles
/// (`Slot::Child`), which is what makes decoding them sound.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Slot<'g, A: Access = Read, E = Unbranded> {
    /// An entry word of a leaf (0: nothing).
    Entry(usize),
    /// A child of an internal node.
    Child(NodeRef<'g, A, E>),
}

// (By hand: a derive would ask `E: Copy`; the brand is only a name.)
impl<A: Access, E> Clone for Slot<'_, A, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: Access, E> Copy for Slot<'_, A, E> {}

impl<'g, A: Access, E> Slot<'g, A, E> {
    /// The entry word (0 for a child, which is never NULL).
    #[inline]
    pub(crate) fn entry(self) -> usize {
        match self {
            Slot::Entry(w) => w,
            Slot::Child(_) => usize::MAX,
        }
    }

    /// Whether this is an empty leaf slot.
    #[inline]
    pub(crate) fn is_null(self) -> bool {
        matches!(self, Slot::Entry(0))
    }

    /// The child.
    ///
    /// # Panics
    ///
    /// On an entry (a leaf slot where a child was expected: a bug of the writer).
    #[inline]
    pub(crate) fn child(self) -> NodeRef<'g, A, E> {
        match self {
            Slot::Child(n) => n,
            Slot::Entry(_) => panic!("maple tree: an entry where a child was expected"),
        }
    }
}

/// What a node handle may do, as a type parameter of [`NodeRef`]: [`Read`] handles load only;
/// [`Write`] handles ([`Live`]) also store. Sealed: the two markers are all there is.
pub(crate) trait Access: Copy + Eq + core::fmt::Debug + sealed::Sealed {}

mod sealed {
    /// Keeps [`Access`](super::Access) to the node layer's two markers.
    pub trait Sealed {}
    impl Sealed for super::Read {}
    impl Sealed for super::Write {}
    /// Keeps [`Mode`](super::Mode) to the node layer's two markers.
    pub trait SealedMode {}
    impl SealedMode for super::Rcu {}
    impl SealedMode for super::Exclusive {}
}

/// Access of a reader's handles (and of the writer's shared read code): loads only. Every
/// handle a [`RootRef`] made by [`Root::reader`] hands out is a `NodeRef<'g, Read>`, and no
/// conversion leads from it to a [`Live`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {}
impl Access for Read {}

/// Access of the writer's handles to nodes of its tree: loads and in-place stores. Only a
/// [`WriterRoot`] makes them (its root load, its walker's root, its saved path, its fresh
/// nodes), and child loads from one give another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {}
impl Access for Write {}

/// The write mode, as a type parameter of [`WriterRoot`] (and of the writer above): [`Rcu`]
/// (the writer lock; readers may run, so frees wait for a grace period) or [`Exclusive`]
/// (`&mut` of the tree; no reader exists). Sealed: the two markers are all there is, which is
/// what makes [`WriterRoot::exclusive`] and [`WriterRoot::rcu`] sound.
pub(crate) trait Mode: Copy + 'static + sealed::SealedMode {
    /// Whether this is [`Exclusive`].
    const EXCLUSIVE: bool;
}

/// RCU mode: made only from the writer lock ([`WriterLock::writer`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rcu {}
impl Mode for Rcu {
    const EXCLUSIVE: bool = false;
}

/// Exclusive mode: made only from `&mut` of the tree ([`ExclusiveRoot::writer`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Exclusive {}
impl Mode for Exclusive {
    const EXCLUSIVE: bool = true;
}

/// A handle to a node: its address, its kind, the lifetime of the guard (or writer lock) that
/// keeps it allocated, and what it may do ([`Access`]). `NodeRef<'g>` is the reader handle
/// (loads only); the writer's is [`Live`].
pub(crate) struct NodeRef<'g, A: Access = Read, E = Unbranded> {
    pub(super) ptr: NonNull<Node>,
    pub(super) kind: Kind,
    pub(super) _guard: PhantomData<(&'g Node, A, Brand<E>)>,
}

// (By hand: a derive would ask `E: Copy`; the brand is only a name.)
impl<A: Access, E> Clone for NodeRef<'_, A, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: Access, E> Copy for NodeRef<'_, A, E> {}

/// A node of the tree the writer reached through its [`WriterRoot`] (or a fresh node it
/// filled): the loads of a [`NodeRef`], the in-place Release stores (rows P3/P5/P9/P14) and the
/// Relaxed stores beyond the end or into a fresh node (P2/P4/P6/P7/P8/P12/P13).
/// [`view`](NodeRef::view) gives the reader handle for the shared read code.
pub(crate) type Live<'w> = NodeRef<'w, Write>;

impl<A: Access, E> PartialEq for NodeRef<'_, A, E> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }
}
impl<A: Access, E> Eq for NodeRef<'_, A, E> {}

impl<A: Access, E> core::fmt::Debug for NodeRef<'_, A, E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}@{:p}", self.kind.name(), self.ptr)
    }
}

/// Encodes a node as a child (or root) word.
#[inline]
pub(crate) fn node_word<A: Access, E>(n: NodeRef<'_, A, E>) -> usize {
    let addr = n.ptr.as_ptr().expose_provenance();
    if n.kind == Kind::Leaf {
        addr | LEAF_TAG
    } else {
        addr
    }
}

impl<'g, A: Access, B> NodeRef<'g, A, B> {
    /// Decodes a child (or root) word.
    ///
    /// # Safety
    ///
    /// `word` must be a non-zero node word read from the tree (root word or an internal slot) while
    /// the guard of lifetime `'g` was pinned (or the writer lock held), so that the node stays
    /// allocated for `'g`; `internal` must be the internal kind of that tree; its brand `B`
    /// must be [`Unbranded`] or the entry type of that tree (module docs, "The brand").
    #[inline]
    pub(super) unsafe fn from_word(word: usize, internal: Kind) -> Self {
        let kind = if word & LEAF_TAG != 0 {
            Kind::Leaf
        } else {
            internal
        };
        let ptr = core::ptr::with_exposed_provenance_mut::<Node>(word & !LEAF_TAG);
        // SAFETY: node words are never zero (checked by the caller's contract: non-zero word).
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        NodeRef {
            ptr,
            kind,
            _guard: PhantomData,
        }
    }

    /// Allocates a fresh, unpublished copy of the leaf `src`, whose implied max is `max` — the
    /// structural copy of `dup`, the kernel's node `memcpy`: the node is copied whole into a node
    /// of `slab` (no zeroing), then each slot word within the node's end is replaced by
    /// `entry(word)`. The parent word is zero. Words beyond the end are copied as they are:
    /// unspecified, as in the source, and read by nobody (module docs). Owned by the writer until
    /// published (rows P4/P7: plain initialisation, made visible by the Release store that
    /// publishes the copy).
    ///
    /// `src` must not change during the copy: the caller holds the writer lock of its tree (or
    /// owns it).
    #[inline]
    pub(super) fn copy_leaf_with<'n>(
        self,
        max: u64,
        slab: &mut Slab,
        mut entry: impl FnMut(usize) -> usize,
    ) -> Live<'n> {
        debug_assert!(self.is_leaf());
        let p = self.copy_in(slab, false);
        // SAFETY: a node just made, initialised, that nothing else references (`copy_in`).
        let b = unsafe { &mut *p.as_ptr() };
        let end = b.end_mut(RANGE_PIVOTS, max);
        b.update_words(RANGE_PIVOTS..=RANGE_PIVOTS + end, |_, w| {
            entry(w as usize) as u64
        });
        Live::own(Kind::Leaf, p)
    }

    /// As [`copy_leaf_with`](Self::copy_leaf_with), for an internal node (rows P2/P7/P12):
    /// each child word within the end is replaced by the word `child(mem, i, hi)` returns, `hi`
    /// being the child's max (its pivot, or `max` for the last). Gaps are copied. Returns the copy
    /// and the node's end.
    ///
    /// If `child` panics, the subtrees of the children made so far (copies of a tree of `E`,
    /// whose entries are the copy's own clones) are freed with their entries, then the copy,
    /// and the panic goes on.
    #[inline]
    pub(super) fn copy_internal_with<'n, E: Entry>(
        self,
        max: u64,
        mem: &mut NodeMem,
        mut child: impl FnMut(&mut NodeMem, usize, u64) -> usize,
    ) -> (Live<'n>, usize) {
        debug_assert!(!self.is_leaf());
        let kind = self.kind;
        let base = kind.slot_base();
        let p = self.copy_in(&mut mem.slab, false);
        // SAFETY: a node just made, initialised, that nothing else references (`copy_in`); the
        // children `child` makes are other nodes.
        let b = unsafe { &mut *p.as_ptr() };
        let end = b.end_mut(kind.pivots(), max);
        for i in 0..=end {
            let hi = if i < end { b.update(i, |p| p) } else { max };
            let made = crate::sync::catch_unwind(|| child(mem, i, hi));
            match made {
                Ok(w) => {
                    b.update(base + i, |_| w as u64);
                }
                Err(panic) => {
                    // A panic while these clones drop is dropped: the first one goes on.
                    let copy: NodeRef<'_> = NodeRef {
                        ptr: p,
                        kind,
                        _guard: PhantomData,
                    };
                    let mut ledger = Ledger::<E>::default(); // the copy shares no words
                    let mut later = None;
                    for k in 0..i {
                        // (The walk needs each child's max; its min only names its slots'.)
                        let (lo, hi) = (copy.slot_min(k, 0), copy.slot_max(k, max));
                        let c = copy.child(k, kind); // internal nodes are all of one kind
                        let slab = Some(&mut mem.slab);
                        free_node::<E>(c, lo, hi, kind, &mut ledger, slab, &mut later);
                    }
                    // SAFETY: the copy was made above from `mem`'s slab and never published;
                    // its children `0..i` were freed just now, the others are the source's.
                    unsafe { copy.free_now(&mut mem.slab) };
                    crate::sync::resume_unwind(panic);
                }
            }
        }
        (Live::own(kind, p), end)
    }

    /// A fresh, unpublished copy of this node's data words, parent word zero, in memory from
    /// `slab`: never used before if `fresh` (see [`Slab::alloc_fresh`]: the RCU fill's leaf
    /// copies are the leaves an in-order build under readers ends with, and recycled nodes come
    /// back a grace period after they were retired, in no particular order, which scattered
    /// them: iteration of an RCU-built tree was 4-5x slower than of an exclusive-built one),
    /// else any free node.
    #[inline]
    pub(super) fn copy_in(&self, slab: &mut Slab, fresh: bool) -> NonNull<Node> {
        if !crate::sync::PLAIN_NODES {
            // Under loom (whose atomics are not plain memory): word by word, into a plain box.
            let from = &self.node().words;
            let mut n = alloc::boxed::Box::new(Node::new());
            n.update_words(0..=WORDS - 1, |i, _| from[i].load(Ordering::Relaxed));
            return NonNull::from(alloc::boxed::Box::leak(n));
        }
        let dst = if fresh {
            slab.alloc_fresh()
        } else {
            slab.alloc()
        };
        // SAFETY: `dst` is memory for one `Node` that nothing else references (the slab's
        // contract), so it cannot overlap the live node behind `self.ptr` (allocated for 'g, see
        // `node`). A plain node (`PLAIN_NODES`, checked above) is only atomics (`repr(C)`, no
        // padding), for which the copied bytes are valid values, so `dst` is an initialised node
        // afterwards, ours. The source is read non-atomically: its tree's one writer is our
        // caller (writer lock held or tree owned), so no store races the copy — readers only
        // load, and reads racing reads are no data race.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr.as_ptr().cast_const(), dst.as_ptr(), 1);
            atomic_take(&mut (*dst.as_ptr()).parent);
        }
        dst
    }

    /// Publishes nothing: turns a node just made (zeroed or copied, initialised, nobody else's)
    /// into a handle owned by the writer.
    #[inline]
    pub(super) fn own<'n>(kind: Kind, ptr: NonNull<Node>) -> Live<'n> {
        NodeRef {
            ptr,
            kind,
            _guard: PhantomData,
        }
    }

    /// Frees a node at once, into `slab`.
    ///
    /// # Safety
    ///
    /// The node is of `slab`, and no reader or other handle may reach it any more: either it was
    /// never published, or the tree is exclusively borrowed (`&mut`) / being dropped; it is
    /// freed once.
    pub(super) unsafe fn free_now(self, slab: &mut Slab) {
        // SAFETY: the caller's contract.
        unsafe { slab.free(self.ptr) };
    }

    #[inline]
    pub(super) fn node(&self) -> &'g Node {
        // SAFETY: a NodeRef is only created by `own` (a fresh node, owned by the writer) or
        // `from_word` under a guard/lock of lifetime 'g, so the node is allocated for 'g; all fields are atomics, so a
        // shared reference is sound while others read and the one writer writes.
        let n = unsafe { self.ptr.as_ref() };
        n.live.check();
        n
    }

    /// The node's kind.
    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether this is a leaf.
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.kind == Kind::Leaf
    }

    /// Address, for dumps.
    pub(crate) fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    // ----- pivots -----------------------------------------------------------------------------

    /// Reader load of pivot `i` (Acquire: it may publish slots and pivots beyond it).
    #[inline]
    pub(crate) fn pivot(&self, i: usize) -> u64 {
        debug_assert!(i < self.kind.pivots());
        let ord = ord::p9_load_pivot();
        // ORDERING: P9 (a pivot is loaded before the slots and pivots it exposes; P7/P8 are
        // Relaxed stores published by the pointer or the pivot that exposes them).
        self.node().words[i].load(ord)
    }

    /// Pivot `i` of a leaf or range node (layout shared by both; no kind dispatch). Acquire, as
    /// [`pivot`](Self::pivot).
    #[inline]
    pub(crate) fn range_pivot(&self, i: usize) -> u64 {
        debug_assert!(self.kind != Kind::ARange && i < RANGE_PIVOTS);
        let ord = ord::p9_load_pivot();
        // ORDERING: P9 (as `pivot`).
        self.node().words[i].load(ord)
    }

    /// Slot `i` of a leaf or range node. Acquire, as [`slot`](Self::slot).
    #[inline]
    pub(crate) fn range_slot(&self, i: usize) -> usize {
        debug_assert!(self.kind != Kind::ARange && i < RANGE_SLOTS);
        // ORDERING: P3/P5/P6 (as `slot`).
        self.node().words[RANGE_PIVOTS + i].load(ord::P3_P5_LOAD_SLOT) as usize
    }

    /// The offset of the first pivot `>= index`, or the pivot count if there is none: the slot
    /// of `index` when `index` is within the node's range (`pivot[end] == max` stops the scan at
    /// the end). Each pivot is loaded at most once, in order, with the reader's ordering
    /// (Acquire; the loom knob's under loom), as [`pivot`](Self::pivot); unrolled by four, the
    /// loads bounds-checked once per node (`mtree_load`'s scan).
    #[inline]
    pub(crate) fn find_pivot(&self, index: u64) -> usize {
        let ord = ord::p9_load_pivot();
        let pivots = &self.node().words[..self.kind.pivots()];
        let mut chunks = pivots.chunks_exact(4);
        let mut base = 0;
        for c in &mut chunks {
            // ORDERING: P9 (a pivot, loaded before the slot it exposes), for each of the four.
            if c[0].load(ord) >= index {
                return base;
            }
            if c[1].load(ord) >= index {
                return base + 1;
            }
            if c[2].load(ord) >= index {
                return base + 2;
            }
            if c[3].load(ord) >= index {
                return base + 3;
            }
            base += 4;
        }
        for (i, p) in chunks.remainder().iter().enumerate() {
            // ORDERING: P9 (as above).
            if p.load(ord) >= index {
                return base + i;
            }
        }
        pivots.len()
    }

    /// Finds the slot of this node (covering `[min, max]`) that contains `index`: `(offset, lo,
    /// hi)`. One scan of the pivots without per-element bounds checks, each loaded once with the
    /// reader's ordering (Acquire; the loom knob's under loom), as [`pivot`](Self::pivot).
    #[inline]
    pub(crate) fn find_slot(&self, index: u64, min: u64, max: u64) -> (usize, u64, u64) {
        let ord = ord::p9_load_pivot();
        let pivots = &self.node().words[..self.kind.pivots()];
        // The first pivot `>= index` ends the slot (at `max` if it is `>= max`: `index <= max`,
        // so a pivot that reaches `max` always stops the scan); the pivot before it, as loaded
        // in this scan, starts it.
        let mut lo = min;
        let mut chunks = pivots.chunks_exact(4);
        let mut base = 0;
        for c in &mut chunks {
            // ORDERING: P9 (a pivot, loaded before the slot it exposes), for each of the four.
            let a = c[0].load(ord);
            if a >= index {
                return (base, lo, a.min(max));
            }
            let b = c[1].load(ord);
            if b >= index {
                return (base + 1, a + 1, b.min(max));
            }
            let d = c[2].load(ord);
            if d >= index {
                return (base + 2, b + 1, d.min(max));
            }
            let e = c[3].load(ord);
            if e >= index {
                return (base + 3, d + 1, e.min(max));
            }
            lo = e + 1;
            base += 4;
        }
        for (i, p) in chunks.remainder().iter().enumerate() {
            // ORDERING: P9 (as above).
            let piv = p.load(ord);
            if piv >= index {
                return (base + i, lo, piv.min(max));
            }
            lo = piv + 1;
        }
        (pivots.len(), lo, max)
    }

    // ----- slots ------------------------------------------------------------------------------

    /// Reader load of slot `i` (Acquire: pairs with in-place Release stores of entries/children).
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> usize {
        debug_assert!(i < self.kind.slots());
        // ORDERING: P3/P5 (pairs with the in-place Release store of a child or an entry; P6 is
        // exposed by the pivot loaded before, P9).
        self.node().words[self.kind.slot_base() + i].load(ord::P3_P5_LOAD_SLOT) as usize
    }

    /// Reader load of leaf slot `i` (Acquire, as [`slot`](Self::slot)), typed so that its entry
    /// can be borrowed for `'g`.
    #[inline]
    pub(crate) fn leaf_word(&self, i: usize) -> Loaded<'g, B> {
        debug_assert!(self.is_leaf());
        Loaded::new(self.slot(i))
    }

    /// The reader handle of this node (the shared read code takes only those): a copy, of the
    /// same brand.
    #[inline]
    pub(crate) fn view(self) -> NodeRef<'g, Read, B> {
        NodeRef {
            ptr: self.ptr,
            kind: self.kind,
            _guard: PhantomData,
        }
    }

    /// This handle without its brand (for code that reads no entry): always sound, since an
    /// [`Unbranded`] handle's leaf loads cannot be read as entries.
    #[inline]
    pub(crate) fn unbranded(self) -> NodeRef<'g, A> {
        NodeRef {
            ptr: self.ptr,
            kind: self.kind,
            _guard: PhantomData,
        }
    }

    /// [`leaf_word`](Self::leaf_word) without the kind dispatch (as [`range_slot`](Self::range_slot)).
    #[inline]
    pub(crate) fn range_word(&self, i: usize) -> Loaded<'g, B> {
        debug_assert!(self.is_leaf());
        Loaded::new(self.range_slot(i))
    }

    // ----- gaps (allocation-tree internal nodes) -----------------------------------------------

    /// Largest gap in child `i`'s subtree.
    #[inline]
    pub(crate) fn gap(&self, i: usize) -> u64 {
        debug_assert!(self.kind == Kind::ARange && i < ARANGE_SLOTS);
        // ORDERING: P12.
        self.node().words[ARANGE_GAPS + i].load(Ordering::Relaxed)
    }

    /// [`gap`](Self::gap) of a slot on the tree's right edge (reaching `u64::MAX`), Acquire: a
    /// gap lowered after the store that shrank its slot's range (an append split's climb)
    /// orders that store before it, so the search that prunes by it re-reads its path and sees
    /// the shrunk bound (row P12; see `gap::search`).
    #[inline]
    pub(crate) fn edge_gap(&self, i: usize) -> u64 {
        debug_assert!(self.kind == Kind::ARange && i < ARANGE_SLOTS);
        // ORDERING: P12 (pairs with `set_gap`'s Release store).
        self.node().words[ARANGE_GAPS + i].load(ord::P12_LOAD_EDGE_GAP)
    }

    // ----- parent word ----------------------------------------------------------------------------

    /// The recorded parent address (0 for the root) and offset.
    #[inline]
    pub(crate) fn parent_info(&self) -> (usize, usize) {
        // ORDERING: P13 (the writer's and `validate`'s own bookkeeping).
        let w = self.node().parent.load(Ordering::Relaxed);
        (w & ADDR_MASK, (w & OFFSET_MASK) >> OFFSET_SHIFT)
    }

    /// Whether the node is the root: its parent word names no parent (row P13, Relaxed: the gap
    /// search asks only after an Acquire load that orders a new root's re-parenting of it before,
    /// row P12). A retired root is still "the root" here; its words no longer change.
    #[inline]
    pub(crate) fn is_root(&self) -> bool {
        self.parent_info().0 == 0
    }

    /// Whether the node was replaced (Acquire).
    #[inline]
    pub(crate) fn is_dead(&self) -> bool {
        // ORDERING: P14 (P17: a Relaxed re-parenting read here reads "not dead").
        self.node().parent.load(ord::P14_LOAD_DEAD) & DEAD != 0
    }

    // ----- derived ----------------------------------------------------------------------------

    /// The node end derived from the pivots: the first `i` with `pivot[i] >= max`, else the pivot
    /// count. Loads are Acquire, in order, so a reader that sees a lowered end pivot also sees
    /// everything the writer wrote beyond it.
    #[inline]
    pub(crate) fn end(&self, max: u64) -> usize {
        let p = self.kind.pivots();
        let mut i = 0;
        while i < p {
            if self.pivot(i) >= max {
                return i;
            }
            i += 1;
        }
        p
    }

    /// Upper bound of slot `i` in a node whose max is `max`: the pivot, or `max` past the pivots.
    /// Clamped to `max` so that a reader racing a publishing store never leaves the node's range.
    #[inline]
    pub(crate) fn slot_max(&self, i: usize, max: u64) -> u64 {
        if i < self.kind.pivots() {
            let p = self.pivot(i);
            if p < max {
                p
            } else {
                max
            }
        } else {
            max
        }
    }

    /// Lower bound of slot `i` in a node whose min is `min`: `min` for slot 0, else the previous
    /// pivot plus one.
    #[inline]
    pub(crate) fn slot_min(&self, i: usize, min: u64) -> u64 {
        if i == 0 {
            min
        } else {
            self.pivot(i - 1).wrapping_add(1)
        }
    }

    /// The slots of this node (covering `[min, max]`) as `(lo, hi, slot)`, within its end:
    /// entry words of a leaf, children of an internal node (`internal`: the tree's kind).
    pub(crate) fn slots(
        self,
        min: u64,
        max: u64,
        internal: Kind,
    ) -> impl Iterator<Item = (u64, u64, Slot<'g, A, B>)> {
        let end = self.end(max);
        let mut lo = min;
        (0..=end).map(move |i| {
            let hi = self.slot_max(i, max);
            let s = if self.is_leaf() {
                Slot::Entry(self.slot(i))
            } else {
                Slot::Child(self.child(i, internal))
            };
            let r = (lo, hi, s);
            lo = hi.wrapping_add(1);
            r
        })
    }

    /// Child `i` of an internal node, `None` if the slot is empty — a state no reader can meet
    /// under the publication protocol; readers treat it as a race and restart rather than trust
    /// it (only `validate` reports corruption).
    #[inline]
    pub(crate) fn try_child(&self, i: usize, internal: Kind) -> Option<NodeRef<'g, A, B>> {
        debug_assert!(!self.is_leaf());
        let w = self.slot(i);
        if w == 0 {
            return None;
        }
        // SAFETY: the word is non-zero and is a node word (internal slots hold nothing else)
        // of this node's tree, so of its brand `B`; the child stays allocated for 'g (see
        // `child`).
        let c = unsafe { NodeRef::from_word(w, internal) };
        c.prefetch();
        Some(c)
    }

    /// Asks the CPU for all four cache lines of the node at once: a descent reads the pivots
    /// (the first two lines) and then one slot (the last two), and would otherwise miss on the
    /// slot's line only after the pivot scan. A hint only: nothing is read.
    #[inline(always)]
    pub(super) fn prefetch(self) {
        prefetch_node(self.ptr.as_ptr().expose_provenance());
    }

    /// Asks the CPU for the node child `i` of this internal node names, if `i` is one of its
    /// slots and that node lies more than [`FAR`] bytes from `near` (the node the walk is at):
    /// for a walk that will go there next but not yet (the iterator, one parent ahead). A node
    /// closer than that lies in the stretch of memory the walk is streaming through, which the
    /// hardware's own prefetch covers (asking for it as well made in-order iteration of an
    /// exclusive-built tree slower). The slot is loaded Relaxed and nothing is read through
    /// it: whatever the word is (a child, nothing, a stale word past the node's end), a
    /// prefetch of it is only a hint.
    #[inline(always)]
    pub(crate) fn prefetch_child(&self, i: usize, near: NodeRef<'g, A, B>) {
        // Loom's nodes are not plain memory: no prefetch, and no load (a scheduling point).
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if crate::sync::PLAIN_NODES && i < self.kind.slots() {
            // ORDERING: none needed (no access depends on the word, see above).
            let w = self.node().words[self.kind.slot_base() + i].load(Ordering::Relaxed) as usize;
            let at = near.ptr.as_ptr().addr();
            if (w & !LEAF_TAG).abs_diff(at) > FAR {
                prefetch_node(w & !LEAF_TAG);
            }
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let _ = (i, near);
    }

    /// Child `i` of an internal node covering up to `max`, and that child's max: the loads of
    /// [`slot_max`](Self::slot_max) then [`try_child`](Self::try_child), in that order (the
    /// pivot before the slot it exposes), with one dispatch on the node's kind for both (the
    /// children of an internal node are leaves or of its own kind). `None` where `try_child`
    /// gives `None`, or past the node's slots.
    #[inline(always)]
    pub(crate) fn child_and_max(&self, i: usize, max: u64) -> Option<(NodeRef<'g, A, B>, u64)> {
        debug_assert!(!self.is_leaf());
        if self.kind == Kind::ARange {
            self.child_and_max_in::<ARANGE_PIVOTS>(i, max, Kind::ARange)
        } else {
            self.child_and_max_in::<RANGE_PIVOTS>(i, max, Kind::Range)
        }
    }

    /// [`child_and_max`](Self::child_and_max) of a node of kind `kind`, which has `P` pivots.
    #[inline(always)]
    pub(super) fn child_and_max_in<const P: usize>(
        &self,
        i: usize,
        max: u64,
        kind: Kind,
    ) -> Option<(NodeRef<'g, A, B>, u64)> {
        debug_assert!(kind == self.kind && P == kind.pivots());
        if i > P {
            return None;
        }
        // (Slot `P`, the last, has no pivot.)
        let hi = if i < P { self.pivot(i).min(max) } else { max };
        // ORDERING: P3/P5 (as `slot`).
        let w = self.node().words[P + i].load(ord::P3_P5_LOAD_SLOT) as usize;
        if w == 0 {
            return None;
        }
        // SAFETY: as in `try_child`: a non-zero internal slot word is a node word of this tree,
        // whose internal kind is this node's own, `kind`, and whose entry type is this node's
        // brand `B`; the child stays allocated for 'g.
        Some((unsafe { NodeRef::from_word(w, kind) }, hi))
    }

    /// Child `i` of an internal node (the writer's view, where an empty slot is corruption).
    ///
    /// Sound because children of a node reachable under the guard are reachable too: a child is
    /// retired only after it has been unlinked, and unlinking happens-before the retire.
    #[inline]
    pub(crate) fn child(&self, i: usize, internal: Kind) -> NodeRef<'g, A, B> {
        debug_assert!(!self.is_leaf());
        let w = self.slot(i);
        assert!(w != 0, "maple tree corrupted: internal slot {i} is empty");
        // SAFETY: the word is non-zero (checked) and is a node word (internal slots hold nothing
        // else) of this node's tree, of its brand `B`; the child stays allocated for 'g (see
        // above).
        unsafe { NodeRef::from_word(w, internal) }
    }

    /// The first pivot at or above `target`, as `(i, pivot[i - 1], pivot[i])` (0 stands for the
    /// pivot before slot 0; `(pivots, last pivot, u64::MAX)` if no pivot is). The gap search's
    /// scan to the window's edge: each pivot loaded once, in order, with the reader's ordering
    /// (as [`pivot`](Self::pivot)), and no bounds checks.
    #[inline]
    pub(crate) fn pivot_at_or_above(&self, target: u64) -> (usize, u64, u64) {
        let ord = ord::p9_load_pivot();
        let pivots = &self.node().words[..self.kind.pivots()];
        let mut prev = 0;
        // Two pivots a round (the pivot counts, 15 and 9, are odd): half the loop overhead.
        let mut pairs = pivots.chunks_exact(2);
        for (j, pair) in pairs.by_ref().enumerate() {
            // ORDERING: P9 (a pivot, loaded before the slot it exposes; in order).
            let v = pair[0].load(ord);
            if v >= target {
                return (2 * j, prev, v);
            }
            // ORDERING: P9 (as above).
            let w = pair[1].load(ord);
            if w >= target {
                return (2 * j + 1, v, w);
            }
            prev = w;
        }
        if let [p] = pairs.remainder() {
            // ORDERING: P9 (as above).
            let v = p.load(ord);
            if v >= target {
                return (pivots.len() - 1, prev, v);
            }
            prev = v;
        }
        (pivots.len(), prev, u64::MAX)
    }
}
