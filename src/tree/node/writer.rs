//! The root as the one writer sees it ([`WriterRoot`]): its loads, the publication of a new
//! root, allocation and retirement of nodes, and the seals.

use super::*;

/// The root as the tree's one writer sees it, in write mode `M` (made only by
/// [`WriterLock::writer`], RCU mode, or [`ExclusiveRoot::writer`], exclusive mode, and living
/// for that borrow): writer-private loads, the publication of new roots (which hand back the
/// old root as [`Unlinked`]), node allocation, the [`Live`] handles of the writer's walks, and
/// retirement of [`Unlinked`] nodes.
///
/// Enforced: no handle made from a `WriterRoot<'w, M>` outlives `'w`; only unlinked nodes are
/// retired, once; the mode-specific entry drops exist only in their mode. Not enforced (see
/// the module docs, "What is enforced, and what is left"): where in-place stores may go, and
/// the structural invariants [`unlinked`](Self::unlinked) relies on.
///
/// `E` is the brand (the module docs, "The brand"): the entry type of the tree, which its
/// [`view`](Self::view) and [`walk_root`](Self::walk_root) hand on to the node handles of the
/// writer's reads. The handles of its structural code ([`node`](Self::node), [`Fresh`],
/// [`Unlinked`]) are unbranded.
pub(crate) struct WriterRoot<'t, M: Mode, E = Unbranded> {
    pub(super) root: &'t RootWord,
    pub(super) _m: PhantomData<(M, fn() -> E)>,
}

// (By hand: a derive would ask `E: Copy`; the brand is only a name.)
impl<M: Mode, E> Clone for WriterRoot<'_, M, E> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<M: Mode, E> Copy for WriterRoot<'_, M, E> {}

impl<'t, M: Mode, B> WriterRoot<'t, M, B> {
    /// This writer as an exclusive-mode one, if it is (a constant per `M`).
    #[inline]
    pub(crate) fn exclusive(self) -> Option<WriterRoot<'t, Exclusive, B>> {
        // Sound: `Mode` is sealed, and only `Exclusive` has `EXCLUSIVE`.
        M::EXCLUSIVE.then_some(WriterRoot {
            root: self.root,
            _m: PhantomData,
        })
    }

    /// Pins a guard of this tree's collector (see [`WriterLock::pin`]).
    pub(crate) fn pin(self) -> Guard {
        self.root.pin()
    }

    /// This writer as an RCU-mode one, if it is (a constant per `M`).
    #[inline]
    pub(crate) fn rcu(self) -> Option<WriterRoot<'t, Rcu, B>> {
        (!M::EXCLUSIVE).then_some(WriterRoot {
            root: self.root,
            _m: PhantomData,
        })
    }

    /// The reader view, for walkers of the writer, of this root's brand.
    #[inline]
    pub(crate) fn view(self) -> RootRef<'t, Read, B> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
        }
    }

    /// The root for the writer's own walks (Acquire loads, as a reader's), whose nodes are
    /// [`Live`] handles, of this root's brand (a writing cursor reads entries through it; the
    /// write paths take it [`unbranded`](RootRef::unbranded)).
    #[inline]
    pub(crate) fn walk_root(self) -> RootRef<'t, Write, B> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
        }
    }

    /// This writer without its brand (for code that reads no entry).
    #[inline]
    pub(crate) fn unbranded(self) -> WriterRoot<'t, M> {
        WriterRoot {
            root: self.root,
            _m: PhantomData,
        }
    }

    /// Internal node kind of the tree.
    #[inline]
    pub(crate) fn internal(self) -> Kind {
        self.root.internal
    }

    /// The root node, if any, loaded by the writer (Relaxed: the writer wrote it itself).
    #[inline]
    pub(crate) fn node(self) -> Option<Live<'t>> {
        // ORDERING: P15 (writer-private root load).
        let w = self.root.word.load(Ordering::Relaxed);
        if w == 0 {
            None
        } else {
            // SAFETY: a non-zero root word is a node word of this tree, which the writer keeps
            // allocated until it retires it (see the type's docs).
            Some(unsafe { NodeRef::from_word(w, self.root.internal) })
        }
    }

    /// Publishes `n` (fully written) as the new root: its parent word is cleared, then one
    /// Release store of the root word exposes it and everything written into it.
    #[inline]
    #[must_use = "the old root is leaked unless it is retired"]
    pub(crate) fn publish(self, n: Fresh<'t>) -> Option<Unlinked<'t>> {
        self.store_root(n.0)
    }

    /// Makes the live node `n` (a child of the root being collapsed away) the root, by the same
    /// store as [`publish`](Self::publish).
    #[inline]
    #[must_use = "the old root is leaked unless it is retired"]
    pub(crate) fn promote(self, n: Live<'t>) -> Option<Unlinked<'t>> {
        self.store_root(n)
    }

    #[inline]
    pub(super) fn store_root(self, n: Live<'t>) -> Option<Unlinked<'t>> {
        let old = self.node();
        n.set_parent(None, 0);
        // ORDERING: P1 (and P16 for a tree nobody can see yet, e.g. a `dup` copy).
        self.root.word.store(node_word(n), ord::p1_publish_root());
        // The old root is unlinked unless the new root's subtree took it in (its parent word
        // would name the node it went into).
        old.filter(|&o| o != n && o.parent_info().0 == 0)
            .map(Unlinked)
    }

    /// Empties the tree (the root word becomes 0, Release: P1).
    #[inline]
    #[must_use = "the old root is leaked unless it is retired"]
    pub(crate) fn publish_empty(self) -> Option<Unlinked<'t>> {
        let old = self.node();
        // ORDERING: P1 (a reader that loads 0 sees an empty tree; nothing to pair with).
        self.root.word.store(0, ord::P1_PUBLISH_ROOT);
        old.map(Unlinked)
    }

    /// Allocates a fresh, zeroed, unpublished node from the tree's slab (`mem`, checked to be
    /// this tree's), owned by the writer until published.
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's.
    #[inline]
    pub(crate) fn alloc(self, kind: Kind, mem: &mut NodeMem) -> Fresh<'t> {
        self.check_mem(mem);
        Fresh(Live::own(kind, new_node(&mut mem.slab)))
    }

    /// Asserts that `mem` is this tree's: a node from another tree's slab would go back to
    /// this one's, and outlive its memory.
    #[inline]
    pub(super) fn check_mem(self, mem: &NodeMem) {
        assert_eq!(
            mem.owner,
            core::ptr::from_ref(self.root).addr(),
            "maple tree: another tree's node memory"
        );
    }

    /// A fresh, unpublished copy of the leaf `src` (implied max `max`) with every entry within
    /// its end cloned (`dup`'s node copy, see [`NodeRef::copy_leaf_with`]), or copied word for
    /// word when `E` says a clone is a copy ([`Entry::CLONE_IS_COPY`]). `src` is a leaf of
    /// a tree of `E` (its brand) whose writer the caller is; the copy is made in `mem` (this
    /// tree's).
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's.
    #[inline]
    pub(crate) fn alloc_cloned_leaf<E: Entry + Clone>(
        self,
        src: NodeRef<'_, Read, E>,
        max: u64,
        mem: &mut NodeMem,
    ) -> Fresh<'t> {
        self.check_mem(mem);
        if E::CLONE_IS_COPY && !core::mem::needs_drop::<E>() {
            // Each clone would be its word again (`Entry::CLONE_IS_COPY`): the leaf is copied
            // as it is, as `__mt_dup` copies slots. Without drop glue the ledger tracks no
            // shared words, so the copy's shared words need no bookkeeping either.
            return Fresh(Live::own(Kind::Leaf, src.copy_in(&mut mem.slab, false)));
        }
        // Every entry is cloned before the node is made: if a `Clone` panics, the clones made
        // so far are dropped with `clones` and nothing else was allocated.
        let mut clones = Clones::<E>::new();
        for i in 0..=src.end(max) {
            let w = src.slot(i);
            if w != 0 && w != ZERO_WORD {
                // SAFETY: `w` is a live entry word of a tree of `E` (a leaf slot within the end of
                // a node branded `E`: only `WriteGuard<E>` stores leaf words), kept alive by
                // that tree's writer lock
                // for the duration of the copy; `clone_word` leaves the source's value alone.
                let c = unsafe { crate::entry::clone_word::<E>(w) }.into_word();
                clones.push(Word::leaf(c));
            }
        }
        let mut next = 0;
        let n = src.copy_leaf_with(max, &mut mem.slab, |w| {
            if w == 0 || w == ZERO_WORD {
                w
            } else {
                next += 1;
                clones.words[next - 1]
            }
        });
        debug_assert_eq!(next, clones.len);
        clones.len = 0; // handed over to the copy
        Fresh(n)
    }

    /// A fresh, unpublished copy of the internal node `src` (implied max `max`) whose child `i`
    /// (with max `hi`) is replaced by `child(mem, i, hi)`, re-parented to the copy (see
    /// [`NodeRef::copy_internal_with`]); the copy is made in `mem` (this tree's).
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's.
    ///
    /// If `child` panics (an entry's `Clone`), the children copied so far are freed with the
    /// clones in them (`child` freed what it had made of its own copy), then the copy itself,
    /// and the panic goes on.
    #[inline]
    pub(crate) fn alloc_copied_internal<E: Entry>(
        self,
        src: NodeRef<'_>,
        max: u64,
        mem: &mut NodeMem,
        mut child: impl FnMut(&mut NodeMem, usize, u64) -> Fresh<'t>,
    ) -> Fresh<'t> {
        self.check_mem(mem);
        let (n, end) =
            src.copy_internal_with::<E>(max, mem, |mem, i, hi| node_word(child(mem, i, hi).0));
        for i in 0..=end {
            n.child(i, self.root.internal).set_parent(Some(n), i);
        }
        Fresh(n)
    }

    /// A fresh, unpublished copy of the live node `src`: every word as it is (one `memcpy`,
    /// rows P2/P4/P7/P12 as for any fresh node), parent word zero; for an internal node, children
    /// `0..keep` are re-parented to the copy. The writer then rewrites the copy from slot `keep`
    /// on and publishes it in `src`'s place (the RCU fill of `append_split`). A leaf's entry words
    /// are taken over, not cloned: once the copy is published, `src` is retired, never dropped.
    /// The copy is made in `mem` (this tree's), a leaf copy in never-used memory if `fresh` (see
    /// [`NodeRef::copy_in`]).
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's.
    #[inline]
    pub(crate) fn alloc_copy(
        self,
        src: Live<'t>,
        keep: usize,
        mem: &mut NodeMem,
        fresh: bool,
    ) -> Fresh<'t> {
        self.check_mem(mem);
        let n = Live::own(src.kind, src.copy_in(&mut mem.slab, fresh && src.is_leaf()));
        if !n.is_leaf() {
            for i in 0..keep {
                n.child(i, self.root.internal).set_parent(Some(n), i);
            }
        }
        Fresh(n)
    }

    /// Retires the unlinked node `u`: marks it dead (readers that meet it restart) and queues
    /// it on `mem` (this tree's, checked). The queue is handed on only after the writer's
    /// borrow of the lock or of `&mut` has ended, so that no handle of this write outlives the
    /// node and the write never touches a node it retired: in RCU mode to the collector once
    /// a batch is full ([`retire_batch`], [`WriterLock::flush_retired`], freed after a grace
    /// period), in exclusive mode to the allocator ([`ExclusiveRoot::writer`] and its drop).
    /// `false` (nothing done) if the node was retired already.
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's.
    pub(crate) fn retire(self, u: Unlinked<'t>, mem: &mut NodeMem) -> bool {
        let n = u.0;
        self.check_mem(mem);
        if !n.mark_dead() {
            return false;
        }
        // ORDERING: P15-like writer-private counter (only the writer reads or writes it).
        let r = self.root.retired.load(Ordering::Relaxed);
        self.root
            .retired
            .store(r.wrapping_add(1), Ordering::Relaxed);
        mem.queue(n.ptr.as_ptr().expose_provenance());
        true
    }

    /// `n` as an [`Unlinked`] handle, if no live node of the tree links it any more. Checked by
    /// its parent words: every store of a child word (a node-layer store: [`Live::init_child`],
    /// [`Live::publish_child`], [`Live::append_child`], a root publication) records the node
    /// and slot it went into, so `n` is unlinked if the slot its parent word names holds
    /// something else (or, for a root, the root word does), or if that parent is unlinked or
    /// dead itself; `O(depth)` Relaxed loads of the writer's own words. `None` if `n` is linked.
    pub(crate) fn unlinked(self, n: Live<'t>) -> Option<Unlinked<'t>> {
        let mut c = n;
        for _ in 0..64 {
            // ORDERING: P13/P14 (the writer's own parent words and dead bits).
            let pw = c.node().parent.load(Ordering::Relaxed);
            if pw & DEAD != 0 {
                return Some(Unlinked(n));
            }
            let (p, off) = (pw & ADDR_MASK, (pw & OFFSET_MASK) >> OFFSET_SHIFT);
            if p == 0 {
                // ORDERING: P15 (writer-private root load).
                let root = self.root.word.load(Ordering::Relaxed);
                return (root != node_word(c)).then_some(Unlinked(n));
            }
            // SAFETY: `p` is the address of the node `c` was last stored into (an internal node
            // of this tree: its kind is the tree's internal kind). `n` was reached by this write
            // while linked, so its parent chain names nodes that were linked or fresh during
            // this write, and none of those is freed before the write's handles are gone
            // (exclusive mode queues frees on `NodeMem`, RCU mode defers them past the
            // writer's pinned guard).
            let parent: Live<'t> = unsafe { NodeRef::from_word(p, self.root.internal) };
            if off >= parent.kind.slots() || parent.slot(off) != node_word(c) {
                return Some(Unlinked(n));
            }
            c = parent;
        }
        None
    }
}

impl<'t, M: Mode, B> WriterRoot<'t, M, B> {
    /// Saves `nodes` (live nodes of this tree, root first) into `to`; nothing (an empty save)
    /// if there are more than `N` or one of them has been retired already.
    #[inline]
    pub(crate) fn save_nodes<const N: usize>(
        self,
        nodes: impl ExactSizeIterator<Item = Live<'t>>,
        to: &mut SavedNodes<N>,
    ) {
        to.len = 0;
        if nodes.len() > N {
            return;
        }
        let mut len = 0;
        for n in nodes {
            if n.is_dead() {
                return;
            }
            to.words[len] = node_word(n);
            len += 1;
        }
        to.root = core::ptr::from_ref(self.root).addr();
        // ORDERING: writer-private counter (see `Root::retired`).
        to.retired = self.root.retired.load(Ordering::Relaxed);
        to.len = len;
    }

    /// Makes the suspended nodes of `s` usable again, if they were saved from this tree and no
    /// node has been retired since (the check of [`saved_nodes`](Self::saved_nodes), made now so
    /// that a `false` tells the caller to save afresh); `false` (and `s` cleared) otherwise.
    #[inline]
    pub(crate) fn resume_nodes<const N: usize>(self, s: &mut SavedNodes<N>) -> bool {
        // ORDERING: writer-private counter (see `Root::retired`).
        if s.kept > 0
            && s.root == core::ptr::from_ref(self.root).addr()
            && s.retired == self.root.retired.load(Ordering::Relaxed)
        {
            s.len = s.kept;
            true
        } else {
            s.clear();
            false
        }
    }

    /// The nodes of `s`, if it was saved from this tree and no node has been retired since:
    /// then every one of them is still allocated (nodes are freed only after their retirement).
    /// Whether they are still linked where they were is the caller's business.
    #[inline]
    pub(crate) fn saved_nodes<'s, const N: usize>(
        self,
        s: &'s SavedNodes<N>,
    ) -> Option<impl Iterator<Item = Live<'t>> + 's>
    where
        't: 's,
    {
        // ORDERING: writer-private counter (see `Root::retired`).
        if s.len == 0
            || s.root != core::ptr::from_ref(self.root).addr()
            || s.retired != self.root.retired.load(Ordering::Relaxed)
        {
            return None;
        }
        let internal = self.root.internal;
        Some(s.words[..s.len].iter().map(move |&w| {
            // SAFETY: `w` was encoded by `save_nodes` from a live, not retired node of this tree
            // (the same root), and no node of the tree has been retired since: it is still
            // allocated, and stays so until the writer retires it.
            unsafe { NodeRef::from_word(w, internal) }
        }))
    }
}
