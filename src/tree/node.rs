//! Raw nodes: layout, allocation, and the publication primitives. All of the tree's `unsafe`
//! lives here; everything above this module goes through the typed handles:
//!
//! - [`Root`]: the root word, the collector, and the writer lock with the writer state. The
//!   writer's view of the root comes only from this tree's own lock guard ([`WriterLock`], made
//!   by [`Root::lock`]) or from `&mut` of the tree ([`ExclusiveRoot`], made by
//!   [`Root::exclusive`]), and lives for the borrow of that guard.
//! - [`RootRef`]: the root as a reader sees it, made from a guard checked against the tree's
//!   collector ([`Root::reader`]), or from the writer ([`WriterRoot::view`]); loads only.
//! - [`WriterRoot`]: the root as the one writer sees it, typed by its write [`Mode`] ([`Rcu`]
//!   or [`Exclusive`]): writer-private loads, publication of a new root, allocation,
//!   retirement, entry drops (deferred ones only in RCU mode, immediate ones only in
//!   exclusive mode).
//! - [`NodeRef`]: a node reachable for `'g`; `NodeRef<'g>` (access [`Read`]) loads only, and
//!   nothing turns it into a writer handle. [`Live`] (`NodeRef<'w, Write>`): a node the writer
//!   reached from its [`WriterRoot`] (child loads from a `Live` give `Live`s), with the stores;
//!   [`NodeRef::view`] gives its reader handle for the shared read code.
//! - [`Fresh`]: a node nobody can reach yet, published only by being consumed
//!   ([`WriterRoot::publish`], [`Live::publish_child`], [`Live::append_child`], or a slot of a
//!   fresh parent).
//! - [`Unlinked`]: a node no live node links any more, which only the unlinking publications
//!   return (the replaced child, the old root) or the node layer's parent-word check
//!   ([`WriterRoot::unlinked`]) makes; only it can be retired ([`WriterRoot::retire`]).
//!   Nodes come from the tree's slab and retired nodes wait, both in [`NodeMem`], until the
//!   writer's borrow ends, then go to the collector (RCU mode: back into the slab after a grace
//!   period) or back into the slab at once (exclusive mode).
//! - [`Slot`]: what the writer stores: internal slots take only node handles, leaves only entry
//!   words; [`Loaded`]: a leaf word a node load returned, whose entry can be borrowed for `'g`.
//! - [`SavedNodes`]: the writer's saved path, trusted only while no node has been retired.
//!
//! ## What is enforced, and what is left
//!
//! Enforced by the types: a reader's handles cannot store; a [`WriterRoot`] (hence every
//! [`Live`], [`Fresh`] and [`Unlinked`]) exists only under this tree's writer lock or `&mut`
//! and lives no longer than that borrow; a node is retired only through an [`Unlinked`], and
//! at most once (the writer's marking of the dead bit tells a second retirement apart); no
//! handle of the write that retired a node outlives the node, and the write never touches a
//! node it handed on;
//! deferred entry drops need an RCU-mode root, immediate ones an exclusive-mode root.
//!
//! Left to the writer's invariants (checked at run time, or not at all):
//!
//! - **Unlinked by check**: [`WriterRoot::unlinked`] trusts that every child store goes
//!   through this layer's stores (which record the parent word) and that the writer never
//!   leaves one node linked in two live places; a node still linked is refused (and the
//!   writer's debug builds panic), a node unlinked but found linked by a stale word beyond a
//!   node's end would be leaked, never freed early.
//! - **In-place stores** of a [`Live`] are not typed by where they may go: Relaxed stores only
//!   beyond the published end or into fresh nodes, Release stores only where the publication
//!   table says (P3/P5/P9), seals respected — the write paths' contract.
//! - **Handles across writes**: a writing cursor keeps its writer (and its walker's [`Live`]
//!   nodes) for its whole life; it re-walks after any write that may have changed the
//!   structure (its `valid` flag), and the nodes its writes retire in exclusive mode are
//!   freed when it is dropped.
//! - **Entry words**: the writer names leaf words as [`Word<E>`](crate::entry::Word) and
//!   stores only those into leaves ([`NodeRef::init_entry`], [`NodeRef::publish_entry`]); a
//!   word's value is taken back only through a [`Released`], which
//!   only the tree's [`Ledger`] makes (when the last slot of a word
//!   goes), consumed once by [`WriterRoot::defer_drop_entry`] (RCU mode),
//!   [`WriterRoot::drop_entry_now`] or [`WriterRoot::take_entries`] (exclusive mode) or by
//!   [`Root::free_all`]. Left to the writer: telling the ledger once per slot that starts
//!   sharing a word or stops holding one (the ledger's contract; `validate` checks the shared
//!   counts against the leaves), and that the words of node handles are those of the tree's
//!   `E` — nodes are not typed by `E`, only the [`Root`] that reaches them is, through its
//!   writer state: [`Loaded::entry`] relies on the tree's `E` being named.
//! - **The public write guard** keeps one type for both modes (`MapleTree::lock` and
//!   `MapleTree::exclusive` both return a `WriteGuard<'_, E>`); it picks the typed writer once
//!   per call.
//!
//! # Layout (as the kernel's `struct maple_node`, include/linux/maple_tree.h)
//!
//! Every node is 256 bytes: a parent word and 31 data words. The kernel aligns nodes to 256 bytes
//! to keep tags in the low pointer bits; here bit 0 is the only low tag, and nodes are 64-byte
//! aligned (four cache lines each) because they are carved out of the tree's slab (`slab`: chunks
//! of nodes, one allocation each, instead of one `malloc` per node).
//!
//! | kind | pivots | slots | gaps |
//! |---|---|---|---|
//! | leaf (`maple_leaf_64`) | words 0..15 | words 15..31 | — |
//! | internal of a range tree (`maple_range_64`) | words 0..15 | words 15..31 | — |
//! | internal of an allocation tree (`maple_arange_64`) | words 0..9 | words 9..19 | words 19..29 |
//!
//! Slot `i` covers `[lo_i, hi_i]` with `lo_0 = min`, `lo_i = pivot[i-1] + 1`, and `hi_i =
//! pivot[i]`, except that the last used slot ends at the node's implied `max` (inherited from the
//! parent's pivots; `[0, u64::MAX]` for the root). **The node end is never stored**: it is the
//! first `i` whose pivot is `>= max`, or the pivot count if there is none. Writers keep
//! `pivot[end] == max` whenever `end` is below the pivot count. This is what makes the in-place
//! appends safe for readers: the kernel's race came from the end stored separately in the node's
//! metadata (`ma_meta_end`).
//!
//! Words beyond the end are unspecified: zero in fresh nodes, stale after an append split has
//! truncated the node (see `append`), and copied as they are into `dup`'s node copies
//! ([`WriterRoot::alloc_cloned_leaf`]). Nobody relies on them (the iterator's scan for a leaf's
//! end may load the pivot after the end with it, and ignores it).
//!
//! The kind of a node is not stored in it either: a child word carries a leaf tag in bit 0, and
//! internal nodes are `Range` or `ARange` according to the tree. The parent word holds the parent's
//! address, this node's offset in the parent (bits 59..63, above any user-space address, even
//! with 57-bit virtual addresses) and the dead bit (bit 0).
//!
//! # Publication protocol
//!
//! One writer at a time (the tree's lock, or `&mut`); readers hold a crossbeam-epoch guard. Every
//! field a reader may load is an atomic:
//!
//! | row | field | writer store | ordering | reader load | pairs with |
//! |---|---|---|---|---|---|
//! | P1 | tree root word | new root published | Release | Acquire | everything written into the new root subtree before |
//! | P2 | internal slot | fresh node (before publish) | Relaxed | Acquire | — (published by the pointer that exposes the node) |
//! | P3 | internal slot | child replaced in place (node store, single-node rebuild) | Release | Acquire | the new child's contents |
//! | P4 | leaf slot | fresh node | Relaxed | Acquire | — (as above) |
//! | P5 | leaf slot | exact fit in place | Release | Acquire | the entry's pointee |
//! | P6 | leaf slot beyond the end | append, before the publishing pivot | Relaxed | Acquire | published by the pivot below |
//! | P7 | pivot | fresh node | Relaxed | Acquire | — |
//! | P8 | pivot beyond the end | append, before the publishing pivot | Relaxed | Acquire | published by the pivot below |
//! | P9 | pivot `end` (lowered) | append: the **single publishing store**, last | Release | Acquire (scan) | every slot/pivot written beyond the end |
//! | P10 | slot bounded by a lowered pivot | re-pointed (P3/P5) | — | — | **sealed** until a grace period after P9 (`seal`): copy-on-write instead |
//! | P11 | words beyond the end of a node whose max shrank | append (P6/P8/P9) | — | — | **sealed** until a grace period after the shrink (`seal`): copy-on-write instead |
//! | P12 | gap | any | Release | Relaxed | gaps are search hints; leaves are re-checked; Release so that a reader that loaded a gap of a write sees P19's odd sequence after its Acquire fence |
//! | P13 | parent word (re-parent) | any | Relaxed | Relaxed | read by the writer and `validate` only |
//! | P14 | parent word (dead bit) | node retired | Release | Acquire | a reader that sees it restarts from the root |
//! | P15 | tree root word | — | — | Relaxed (the **writer's own** loads, [`WriterRoot::node`]) | nothing: the writer is the only one that stores it, so it reads its own last store |
//! | P16 | tree root word of a tree nobody can see yet (`dup`'s copy, built under `&mut`) | copy published | Release (as P1) | — | nothing needed: the tree reaches other threads only by being moved or shared afterwards, which synchronises by itself; the store is P1's code path |
//! | P17 | parent word (re-parent, P13) next to the dead bit (P14) | re-parent | Relaxed | Acquire (`is_dead`) | a node is re-parented only while live, never after it is marked dead (P14); only the writer stores parent words, so the marking's load reads the last re-parenting and its store keeps those bits; a reader's Acquire load that returns a Relaxed re-parenting reads "not dead", which is true |
//! | P18 | seal lift generation (`seal`) | deferred closure, a grace period after the sealing stores | Release | Acquire (the writer, before trusting a lifted seal) | the closure runs after every guard pinned when it is deferred (after the sealing stores, by the writer's guard, pinned then if it was not yet) is gone, so after every reader that could read before them (crossbeam's epoch fences order it after them) |
//! | P19 | write sequence (`RootWord::writes`) | odd before the first store of an RCU-mode write guard, even again when the guard drops ([`WriterRoot::begin_write`], [`WriterRoot::end_write`]) | Relaxed (odd: every store of the write a reader can load after it is a Release store, P1/P3/P5/P9/P12/P14, or reached only through one); Release (even) | Acquire (before), an Acquire fence then Relaxed (after: [`RootRef::write_seq`], [`RootRef::write_seq_recheck`]) | a seqlock: a reader that read the same even value before and after its loads read no store of any write (a gap search confirms `NoRoom` only so) |
//!
//! Every Release, Acquire and read-modify-write site of `src/tree` names its row in an
//! `// ORDERING: Pn` comment. The orderings of rows P1, P3/P5, P9 and P14 (writer and reader
//! side) are one constant each in `ord`, which the shipping build and the loom models both use
//! (a loom knob may only override one, for a broken twin): weakening a row there is what the
//! loom models must catch (`scripts/ordering-mutants.sh`).
//!
//! `dup`'s node copies ([`WriterRoot::alloc_cloned_leaf`], [`WriterRoot::alloc_copied_internal`]) are
//! fresh nodes written before anyone else can reach them — one `memcpy` of the source node and
//! plain writes through `&mut`, which is rows P2/P4/P7/P12 without even the atomics — and are
//! published, like every fresh node, by the Release store of P1 (or P3) that exposes them.
//!
//! ## What a reader may hold, across any number of writes
//!
//! A reader holds, for the node it is in, the node's address and the limits `[min, max]` it
//! derived on the way down (a pivot of each ancestor, or the ancestor's own limit), and, inside
//! the node, the pivots it has loaded. Every later store of the writer is one of:
//!
//! 1. **A fresh subtree published by one pointer** (P1/P3, copy-on-write of node stores, splits,
//!    rebalances, spanning stores, the leaf fill). The replaced nodes are never written again and
//!    are marked dead (P14): a reader inside them reads one consistent old state, for as long as
//!    its guard lives (they are freed only after it); a reader that loads the new pointer sees the
//!    whole new subtree (P1/P3 pair with everything written before).
//! 2. **An exact fit** (P5): a reader sees the old entry or the new one in a slot whose bounds
//!    did not change — unless it loaded the slot's upper bound before that bound was lowered by an
//!    append (P9) and the slot after: it would pair the old bound with the new entry, a range that
//!    never held it. Hence P10.
//! 3. **An in-place append** (P6–P9): until the reader loads the lowered end pivot, everything
//!    beyond the end is unreachable for it; once it does, everything is written. This holds only
//!    if the node's max is the one the reader derived: a node truncated by the append split keeps
//!    its words and gets a smaller max from its parent (P9 one level up), so a reader that derived
//!    the old max reads on beyond the new end — where an append into the node would write. Hence
//!    P11. (The truncation itself changes no word of the node: such a reader sees the node as it
//!    was, which is the state before the split.)
//! 4. **A child replaced under a lowered pivot** (P3 after a P9 in the parent): a reader that
//!    loaded the old pivot and then the new child would walk the child with a max it never had,
//!    past its end into zeroed words. P10 covers it: the parent is copied (and, if its own slot is
//!    sealed, the grandparent — the root word is never sealed), see `Writer::replace_child`.
//!
//! A seal lasts until every guard pinned at the sealing store has been dropped (the lift is a
//! closure deferred on the writer's guard after that store, as a retired node's free is). A
//! reader pinned after the lift loads the lowered pivots and the shrunk max (crossbeam's epoch
//! fences order the writer's stores before the deferral), so it holds nothing a later in-place
//! store could contradict. By induction over the writes, every reader, whatever number of
//! writes its guard spans, sees for each slot it reads a bound and a word that were together in
//! some state, and sees each node either whole as of one state or through published pivots only.
//! Exclusive mode (`&mut`) has no readers: nothing is sealed and everything may be in place.
//!
//! Readers never trust anything but pivots to find a slot: a pivot is always loaded (Acquire)
//! before the slot it exposes. Retired nodes are never written again; they are freed (and, under
//! loom, poisoned) only after every guard that could reach them is gone — or when the whole tree
//! is freed ([`Root::free_all`], from the tree's drop): `&mut` of the tree outlives every
//! reader's borrow of it, so no guard can reach a node of it any more, retired or not, and its
//! slab's chunks go back at once (see `slab`).

use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crossbeam_epoch::{Collector, Guard};
use crossbeam_utils::CachePadded;

use crate::entry::{Entry, Ledger, Released, Word, ZERO_WORD};
use crate::sync::{fence, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};

// The orderings of the table's Release and Acquire rows, one constant each (see `ord`).
mod ord;

#[cfg(not(target_pointer_width = "64"))]
compile_error!("maple-tree stores pointers in u64 words and needs a 64-bit target");

/// Slots of a leaf or of an internal node of a range tree (`MAPLE_RANGE64_SLOTS`).
pub(crate) const RANGE_SLOTS: usize = 16;
/// Pivots of a leaf or range node.
pub(crate) const RANGE_PIVOTS: usize = 15;
/// Slots of an internal node of an allocation tree (`MAPLE_ARANGE64_SLOTS`).
pub(crate) const ARANGE_SLOTS: usize = 10;
/// Pivots of an allocation-tree internal node.
pub(crate) const ARANGE_PIVOTS: usize = 9;
/// Where the gaps of an allocation-tree internal node start.
const ARANGE_GAPS: usize = ARANGE_PIVOTS + ARANGE_SLOTS;
/// Data words per node.
const WORDS: usize = 31;

/// Tag bit in a child word: the child is a leaf.
const LEAF_TAG: usize = 1;
/// Dead bit in a parent word.
const DEAD: usize = 1;
/// Offset field in a parent word (above the 57 bits a user-space address may use).
const OFFSET_SHIFT: u32 = 59;
const OFFSET_MASK: usize = 0x1f << OFFSET_SHIFT;
const ADDR_MASK: usize = !(OFFSET_MASK | DEAD);

/// The tree's root word (row P1), the collector whose guards protect its nodes, the count of
/// reader restarts (a reader that meets a dead node, or a state only a race can produce, walks
/// again from here), and the writer lock with the writer's private state `S`. The root word is
/// loaded and stored in this file only: readers go through a [`RootRef`] made from a guard of
/// this collector ([`Root::reader`]), the writer through a [`WriterRoot`], which only this
/// tree's own lock guard ([`WriterLock::writer`], from [`Root::lock`]) or `&mut` of the tree
/// ([`Root::exclusive`]) makes.
pub(crate) struct Root<S> {
    /// On cache lines of its own: every reader loads the root word on every walk, and the
    /// writer's stores beside it (the lock word, the writer state) would take the line from the
    /// reader's cache on every write.
    shared: CachePadded<RootWord>,
    writer: Mutex<Side<S>>,
}

/// What the writer lock guards: the writer state and the exclusive mode's retire queue.
struct Side<S> {
    state: S,
    mem: NodeMem,
}

/// What readers and the writer share: the root word and what protects its nodes.
struct RootWord {
    word: AtomicUsize,
    restarts: AtomicU64,
    /// Nodes retired so far (the writer's own counter: Relaxed): a [`SavedNodes`] is trusted
    /// only while it has not changed. Stored on every retirement, so on a cache line apart from
    /// the root word's.
    retired: CachePadded<AtomicU64>,
    /// The write sequence (row P19): odd while an RCU-mode write operation is under way, bumped
    /// before its first store and after its last. Loaded by readers only to confirm a gap
    /// search's `NoRoom` (`gap`), so on a cache line apart from the root word's too.
    writes: CachePadded<AtomicU64>,
    internal: Kind,
    collector: Collector,
    default_collector: bool,
}

impl<S> Root<S> {
    /// An empty root of a tree whose internal nodes are `internal`, protected by `collector`
    /// (`default_collector`: crossbeam's default one, pinned through its thread-local handle),
    /// with the writer state `state` behind the writer lock; its nodes come from a slab of
    /// huge-page chunks once it is big if `huge_pages` (see `slab`).
    pub(crate) fn new(
        internal: Kind,
        collector: Collector,
        default_collector: bool,
        huge_pages: bool,
        state: S,
    ) -> Self {
        Root {
            shared: CachePadded::new(RootWord {
                word: AtomicUsize::new(0),
                restarts: AtomicU64::new(0),
                retired: CachePadded::new(AtomicU64::new(0)),
                writes: CachePadded::new(AtomicU64::new(0)),
                internal,
                collector,
                default_collector,
            }),
            writer: Mutex::new(Side {
                state,
                mem: NodeMem {
                    owner: 0,
                    nodes: Vec::new(),
                    slab: Slab::new(huge_pages),
                },
            }),
        }
    }

    /// The collector this tree's guards must come from.
    pub(crate) fn collector(&self) -> &Collector {
        &self.shared.collector
    }

    /// Pins a guard of this tree's collector.
    pub(crate) fn pin(&self) -> Guard {
        self.shared.pin()
    }

    /// Checks, in every profile, that `guard` is pinned on this tree's collector (as
    /// crossbeam-skiplist's `check_guard` does): a guard of another collector, or crossbeam's
    /// unprotected guard, would not hold back this tree's frees.
    ///
    /// # Panics
    ///
    /// On a guard of another collector (or the unprotected one).
    #[inline]
    pub(crate) fn check_guard(&self, guard: &Guard) {
        self.shared.check_guard(guard);
    }

    /// A reader's view of the root, for as long as `guard` (checked to be of this tree's
    /// collector) is pinned: every node reached from it stays allocated for `'g`, since nodes
    /// are freed only after every guard pinned before their retirement is gone.
    ///
    /// # Panics
    ///
    /// As [`check_guard`](Self::check_guard).
    #[inline]
    pub(crate) fn reader<'g>(&'g self, guard: &'g Guard) -> RootRef<'g> {
        self.check_guard(guard);
        RootRef {
            root: &self.shared,
            internal: self.shared.internal,
            _a: PhantomData,
        }
    }

    /// Takes the tree's writer lock (RCU mode: readers may run meanwhile). The guard derefs to
    /// the writer state; [`WriterLock::writer`] makes the writer's view of the root from it.
    pub(crate) fn lock(&self) -> WriterLock<'_, S> {
        let side = self.writer.lock();
        WriterLock {
            root: &self.shared,
            side,
            _held: WriterHeld::new(),
        }
    }

    /// [`lock`](Self::lock), if no writer holds it now.
    pub(crate) fn try_lock(&self) -> Option<WriterLock<'_, S>> {
        Some(WriterLock {
            root: &self.shared,
            side: self.writer.try_lock()?,
            _held: WriterHeld::new(),
        })
    }

    /// Retired nodes queued by RCU-mode writers and not handed to the collector yet (see
    /// [`retire_batch`]); exclusive mode frees them at once, without a grace period.
    pub(crate) fn queued_nodes(&mut self) -> usize {
        self.writer.get_mut().mem.nodes.len()
    }

    /// Exclusive mode: `&mut` means no reader exists, so replaced nodes are freed without a
    /// grace period ([`ExclusiveRoot::writer`] makes the writer's view of the root).
    pub(crate) fn exclusive(&mut self) -> ExclusiveRoot<'_, S> {
        ExclusiveRoot {
            root: &self.shared,
            side: self.writer.get_mut(),
        }
    }

    /// The writer state, through `&mut` (no lock needed).
    pub(crate) fn state_mut(&mut self) -> &mut S {
        &mut self.writer.get_mut().state
    }

    /// Frees the whole tree, dropping every entry exactly once (words held by several slots
    /// are counted in `ledger`); the root becomes empty. `&mut`: nothing else can reach a node.
    pub(crate) fn free_all<E: Entry>(&mut self, ledger: &mut Ledger<E>) {
        let mem = &mut self.writer.get_mut().mem;
        // SAFETY: `&mut self`: no writer borrow and no reader exists.
        unsafe { mem.free() };
        // `&mut`: no reader can reach a node, retired ones included, so the slab's chunks go
        // back whole (`release_all`), and the tree is walked only for entries to drop. A slab
        // of one box per node (loom, `maple_tree_box_nodes`) has its nodes freed on the walk.
        let chunked = !cfg!(any(loom, maple_tree_box_nodes));
        let internal = self.shared.internal;
        let w = atomic_take(&mut self.shared.word);
        // An entry's `Drop` may panic: as `Vec` and `BTreeMap` do, the other entries are still
        // dropped (once each) and every node freed, then the first panic goes on.
        let mut panic = None;
        if w != 0 && (core::mem::needs_drop::<E>() || !chunked) {
            // SAFETY: a non-zero root word is a node word of this tree, and under `&mut self` no
            // reader or writer can reach the tree: every node stays allocated until freed here.
            let n = unsafe { NodeRef::from_word(w, internal) };
            let slab = (!chunked).then_some(&mut mem.slab);
            free_node::<E>(n, 0, u64::MAX, internal, ledger, slab, &mut panic);
        }
        // SAFETY: the root word is zero and nothing else reaches the tree or any node retired
        // from it (`&mut self`): no node of the slab is used again.
        let released = unsafe { mem.slab.release_all() };
        debug_assert_eq!(released, chunked);
        if let Some(p) = panic {
            std::panic::resume_unwind(p);
        }
    }

    /// Reader restarts so far.
    pub(crate) fn restarts(&self) -> u64 {
        self.shared.restarts.load(Ordering::Relaxed)
    }
}

impl RootWord {
    /// See [`Root::check_guard`].
    #[inline]
    fn check_guard(&self, guard: &Guard) {
        assert!(
            guard.collector() == Some(&self.collector),
            "maple tree: the guard is not pinned on this tree's collector"
        );
    }

    /// Counts one reader restart (a statistic: Relaxed).
    #[cold]
    fn restarted(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// Pins a guard of this tree's collector.
    fn pin(&self) -> Guard {
        if self.default_collector {
            crossbeam_epoch::pin()
        } else {
            self.collector.register().pin()
        }
    }
}

/// The tree's writer lock, held: made only by [`Root::lock`], so it proves that its holder is
/// the one writer of that tree. Derefs to the writer state.
pub(crate) struct WriterLock<'t, S> {
    root: &'t RootWord,
    side: MutexGuard<'t, Side<S>>,
    /// Marks the thread as holding a writer lock; declared after `side`, so that it is dropped
    /// after the mutex is released, and the entry drops postponed meanwhile run unlocked.
    _held: WriterHeld,
}

/// The parts of the writer: its view of the root, the writer state, the retire queue, all for
/// the borrow of the lock guard or of the exclusive root that made them.
pub(crate) type WriterParts<'w, S, M> = (WriterRoot<'w, M>, &'w mut S, &'w mut NodeMem);

impl<'t, S> WriterLock<'t, S> {
    /// The capability to defer entry drops on this tree's collector after the lock is gone
    /// (see [`TakenEntry`]).
    pub(crate) fn reclaim(&self) -> RcuReclaim<'t> {
        RcuReclaim { root: self.root }
    }

    /// Pins a guard of this tree's collector (RCU-mode writers pin only when they defer
    /// something: a write that retires and releases nothing never pins).
    pub(crate) fn pin(&self) -> Guard {
        self.root.pin()
    }

    /// Whether the writers before left retired nodes to hand to the collector.
    #[inline]
    pub(crate) fn has_retired(&self) -> bool {
        !self.side.mem.nodes.is_empty()
    }

    /// Whether the writers before queued a whole batch of retired nodes ([`retire_batch`]):
    /// an RCU-mode write hands its retired nodes to the collector only then, all in one
    /// deferred free, so that a write pays no pin, no deferral and no give-back lock per node.
    #[inline]
    pub(crate) fn retired_batch_full(&self) -> bool {
        self.side.mem.nodes.len() >= retire_batch()
    }

    /// Hands the nodes the writers before retired to the collector, in one deferred free: they
    /// are given back to the slab once every guard pinned now (`guard`, of this tree's
    /// collector, checked) has been dropped; `freed(n)` makes the closure that runs after the
    /// `n` nodes are given back.
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector.
    #[inline]
    pub(crate) fn flush_retired<F: FnOnce() + 'static>(
        &mut self,
        guard: &Guard,
        freed: impl FnOnce(usize) -> F,
    ) {
        if !self.side.mem.nodes.is_empty() {
            self.flush_queued(guard, freed);
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_queued<F: FnOnce() + 'static>(
        &mut self,
        guard: &Guard,
        freed: impl FnOnce(usize) -> F,
    ) {
        self.root.check_guard(guard);
        let mem = &mut self.side.mem;
        let batch = core::mem::replace(&mut mem.nodes, Vec::with_capacity(retire_batch()));
        let n = batch.len();
        // SAFETY: every queued address was queued once by `WriterRoot::retire` from an
        // `Unlinked` handle (its dead bit was clear): a node of the tree's slab, unreachable for
        // guards pinned from now on (it was unlinked before this call, by this thread or by a
        // writer before it, whose lock release this thread's lock acquisition follows), and
        // retired once (it leaves the queue here). `&mut self`: the borrows that made the
        // writers before have ended, and with them their handles. `guard` is of this collector
        // (checked), and the nodes are of the slab the returner gives them back to.
        unsafe { retire_batch_on(batch, guard, mem.slab.returner(), freed(n)) };
        paced_defers(guard, n);
    }

    /// The writer's view of the root in RCU mode, the writer state and the retire queue, for
    /// as long as this borrow of the lock guard lasts (see [`WriterRoot`] for what the writer
    /// must still guarantee).
    #[inline]
    pub(crate) fn writer(&mut self) -> WriterParts<'_, S, Rcu> {
        let side = &mut *self.side;
        side.mem.owner = core::ptr::from_ref(self.root).addr();
        let root = WriterRoot {
            root: self.root,
            _m: PhantomData,
        };
        (root, &mut side.state, &mut side.mem)
    }

    /// Whether the tree's slab takes huge-page chunks once big.
    pub(crate) fn huge_pages(&self) -> bool {
        self.side.mem.huge_pages()
    }

    /// A reader view of the root, for reads under the lock borrowed from `&self` (no writer
    /// view exists while it lives).
    pub(crate) fn view(&self) -> RootRef<'_> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
        }
    }
}

impl<S> core::ops::Deref for WriterLock<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.side.state
    }
}

impl<S> core::ops::DerefMut for WriterLock<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.side.state
    }
}

/// The tree borrowed `&mut` for exclusive-mode writes: made only by [`Root::exclusive`].
/// Derefs to the writer state. Frees the nodes its writers retired when the next writer is
/// made and when it is dropped.
pub(crate) struct ExclusiveRoot<'t, S> {
    root: &'t RootWord,
    side: &'t mut Side<S>,
}

impl<S> ExclusiveRoot<'_, S> {
    /// The writer's view of the root in exclusive mode, the writer state and the retire queue,
    /// for as long as this borrow lasts. First frees what the writers before retired.
    #[inline]
    pub(crate) fn writer(&mut self) -> WriterParts<'_, S, Exclusive> {
        // SAFETY: `&mut self`: the borrows that made the writers before have ended, and with
        // them every handle of their writes; `&mut` tree: no reader exists.
        unsafe { self.side.mem.free() };
        self.side.mem.owner = core::ptr::from_ref(self.root).addr();
        let root = WriterRoot {
            root: self.root,
            _m: PhantomData,
        };
        (root, &mut self.side.state, &mut self.side.mem)
    }

    /// A reader view of the root, for reads borrowed from `&self`.
    pub(crate) fn view(&self) -> RootRef<'_> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
        }
    }

    /// Whether the tree's slab takes huge-page chunks once big.
    pub(crate) fn huge_pages(&self) -> bool {
        self.side.mem.huge_pages()
    }
}

impl<S> core::ops::Deref for ExclusiveRoot<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        &self.side.state
    }
}

impl<S> core::ops::DerefMut for ExclusiveRoot<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.side.state
    }
}

impl<S> Drop for ExclusiveRoot<'_, S> {
    fn drop(&mut self) {
        // SAFETY: as in `writer`: the exclusive root's borrows, and their handles, are gone.
        unsafe { self.side.mem.free() };
    }
}

/// A panic caught while dropping entries, to go on once the rest is dropped.
type Panic = Option<Box<dyn core::any::Any + Send>>;

/// Drops the entries of the subtree of `n` (covering `[min, max]`) of a tree nobody else can
/// reach (see [`Root::free_all`]), and frees its nodes into `slab` if there is one (else its
/// chunks go back whole afterwards). An entry's `Drop` that panics does not stop the walk: the
/// first panic is kept in `panic` (for the caller to resume), later ones are dropped.
fn free_node<E: Entry>(
    n: NodeRef<'_>,
    min: u64,
    max: u64,
    internal: Kind,
    ledger: &mut Ledger<E>,
    mut slab: Option<&mut Slab>,
    panic: &mut Panic,
) {
    if !n.is_leaf() {
        for i in 0..=n.end(max) {
            let c = n.child(i, internal);
            let (lo, hi) = (n.slot_min(i, min), n.slot_max(i, max));
            free_node::<E>(c, lo, hi, internal, ledger, slab.as_deref_mut(), panic);
        }
    } else if core::mem::needs_drop::<E>() {
        // (Nothing to drop in the slots of e.g. `Value`: no need to find the node's end.)
        let end = n.end(max);
        let mut i = 0;
        while i <= end {
            // One `catch_unwind` per leaf, resumed after the slot whose drop panicked.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                while i <= end {
                    let w = Word::<E>::leaf(n.slot(i));
                    i += 1;
                    // A leaf word of a tree of `E` (only `WriteGuard<E>` stores leaf words),
                    // whose slot goes now: the ledger releases it with its last slot.
                    if let Some(r) = ledger.release(w) {
                        // SAFETY: the tree is unreachable (`&mut`): no thread can load the word.
                        unsafe { r.drop_values() };
                    }
                }
            }));
            if let Err(p) = r {
                panic.get_or_insert(p);
            }
        }
    }
    if let Some(slab) = slab {
        // SAFETY: `n` is a node of this tree's slab that nothing can reach any more (`&mut
        // Root`, children freed first), freed once: the tree is a tree.
        unsafe { n.free_now(slab) };
    }
}

/// Reads an atomic word through `&mut` (std's `get_mut`; loom's `with_mut`).
#[cfg(not(loom))]
pub(crate) fn atomic_take(a: &mut AtomicUsize) -> usize {
    core::mem::take(a.get_mut())
}
/// Reads an atomic word through `&mut` (std's `get_mut`; loom's `with_mut`).
#[cfg(loom)]
pub(crate) fn atomic_take(a: &mut AtomicUsize) -> usize {
    a.with_mut(core::mem::take)
}

/// The root as a reader sees it: a root borrowed for `'g` while a guard of the tree's
/// collector is pinned for `'g` (made by [`Root::reader`]) or while the writer holds the tree
/// (made by [`WriterRoot::view`]). Loads only.
///
/// `A` is the access of the node handles it hands out: [`Read`] for readers; the writer's own
/// walks get a `RootRef<'w, Write>` ([`WriterRoot::walk_root`]), whose nodes are [`Live`].
#[derive(Clone, Copy)]
pub(crate) struct RootRef<'g, A: Access = Read> {
    root: &'g RootWord,
    /// `root.internal`, kept by value (read once, not after every Acquire load).
    internal: Kind,
    _a: PhantomData<A>,
}

impl<'g, A: Access> RootRef<'g, A> {
    /// The root node, if any (Acquire: pairs with the Release store that published it).
    #[inline]
    pub(crate) fn node(self) -> Option<NodeRef<'g, A>> {
        // ORDERING: P1 (the reader's load of the root word).
        let w = self.root.word.load(ord::P1_LOAD_ROOT);
        if w == 0 {
            None
        } else {
            // SAFETY: a non-zero root word is a node word of this tree; a `RootRef<'g>` exists
            // only while a guard of the tree's collector (or the writer) protects its nodes for
            // 'g (see `Root::reader`, `WriterRoot::view`).
            Some(unsafe { NodeRef::from_word(w, self.internal) })
        }
    }

    /// Internal node kind of the tree.
    #[inline]
    pub(crate) fn internal(self) -> Kind {
        self.internal
    }

    /// The collector of the tree.
    #[inline]
    pub(crate) fn collector(self) -> &'g Collector {
        &self.root.collector
    }

    /// Whether the tree's collector is crossbeam's default one.
    #[inline]
    pub(crate) fn is_default_collector(self) -> bool {
        self.root.default_collector
    }

    /// The write sequence before a consistent read (row P19): odd while a write is under way.
    #[inline]
    pub(crate) fn write_seq(self) -> u64 {
        // ORDERING: P19 (pairs with the Release store ending each write).
        self.root.writes.load(Ordering::Acquire)
    }

    /// The write sequence after the loads of a consistent read (row P19): equal to an even
    /// [`write_seq`](Self::write_seq) from before them only if they read no store of a write.
    #[inline]
    pub(crate) fn write_seq_recheck(self) -> u64 {
        // ORDERING: P19 (the fence orders every load before it ahead of this one; it pairs with
        // the Release fence after the odd store).
        fence(Ordering::Acquire);
        self.root.writes.load(Ordering::Relaxed)
    }

    /// Counts one reader restart.
    #[cold]
    pub(crate) fn restarted(self) {
        self.root.restarted();
    }
}

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
#[derive(Clone, Copy)]
pub(crate) struct WriterRoot<'t, M: Mode> {
    root: &'t RootWord,
    _m: PhantomData<M>,
}

impl<'t, M: Mode> WriterRoot<'t, M> {
    /// This writer as an exclusive-mode one, if it is (a constant per `M`).
    #[inline]
    pub(crate) fn exclusive(self) -> Option<WriterRoot<'t, Exclusive>> {
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
    pub(crate) fn rcu(self) -> Option<WriterRoot<'t, Rcu>> {
        (!M::EXCLUSIVE).then_some(WriterRoot {
            root: self.root,
            _m: PhantomData,
        })
    }

    /// Marks the start of a write guard's writes for readers (row P19): the write sequence
    /// becomes odd before any store (if it is not already, for an earlier operation of the
    /// same guard).
    #[inline]
    pub(crate) fn begin_write(self) {
        let s = self.root.writes.load(Ordering::Relaxed);
        if s & 1 != 0 {
            return; // open already (an earlier operation of the same write guard)
        }
        // ORDERING: P19 (Relaxed: every store of the write a reader can load is a Release
        // store — P1, P3/P5, P9, P12, P14 — or is reached only through one, so a reader that
        // loaded any of them and then fences Acquire sees this odd value. No fence here: a
        // Release fence would also order the entries made before the write ahead of every
        // later Relaxed store, and hide a weakened P5 from the loom mutants.)
        self.root.writes.store(s.wrapping_add(1), Ordering::Relaxed);
    }

    /// Marks the end of a write guard's writes (row P19), if any was opened: the write
    /// sequence becomes even again.
    #[inline]
    pub(crate) fn end_write(self) {
        let s = self.root.writes.load(Ordering::Relaxed);
        if s & 1 == 0 {
            return; // no write operation was opened
        }
        // ORDERING: P19 (every store of the write is ordered before the even value).
        self.root.writes.store(s.wrapping_add(1), Ordering::Release);
    }

    /// The reader view, for walkers of the writer.
    #[inline]
    pub(crate) fn view(self) -> RootRef<'t> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
        }
    }

    /// The root for the writer's own walks (Acquire loads, as a reader's), whose nodes are
    /// [`Live`] handles.
    #[inline]
    pub(crate) fn walk_root(self) -> RootRef<'t, Write> {
        RootRef {
            root: self.root,
            internal: self.root.internal,
            _a: PhantomData,
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
    fn store_root(self, n: Live<'t>) -> Option<Unlinked<'t>> {
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
    fn check_mem(self, mem: &NodeMem) {
        assert_eq!(
            mem.owner,
            core::ptr::from_ref(self.root).addr(),
            "maple tree: another tree's node memory"
        );
    }

    /// A fresh, unpublished copy of the leaf `src` (implied max `max`) with every entry within
    /// its end cloned (`dup`'s node copy, see [`NodeRef::copy_leaf_with`]), or copied word for
    /// word when `E` says a clone is a copy ([`Entry::CLONE_IS_COPY`]). `src` is a leaf of
    /// a tree of `E` whose writer the caller is; the copy is made in `mem` (this tree's).
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's.
    #[inline]
    pub(crate) fn alloc_cloned_leaf<E: Entry + Clone>(
        self,
        src: NodeRef<'_>,
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
                // SAFETY: `w` is a live entry word of a tree of `E` (a leaf slot within the end:
                // only `WriteGuard<E>` stores leaf words), kept alive by that tree's writer lock
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
    /// The copy is made in `mem` (this tree's), a leaf copy in never-used memory (see
    /// [`NodeRef::copy_in`]).
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's.
    #[inline]
    pub(crate) fn alloc_copy(self, src: Live<'t>, keep: usize, mem: &mut NodeMem) -> Fresh<'t> {
        self.check_mem(mem);
        let n = Live::own(src.kind, src.copy_in(&mut mem.slab, src.is_leaf()));
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
        mem.nodes.push(n.ptr.as_ptr().expose_provenance());
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

/// The clones `dup` made for one leaf before its copy is made: dropped with it unless handed
/// over (`len` set to zero), so that a `Clone` that panics leaks none of them.
struct Clones<E: Entry> {
    words: [usize; RANGE_SLOTS],
    len: usize,
    _e: PhantomData<fn() -> E>,
}

impl<E: Entry> Clones<E> {
    fn new() -> Self {
        Clones {
            words: [0; RANGE_SLOTS],
            len: 0,
            _e: PhantomData,
        }
    }

    fn push(&mut self, w: Word<E>) {
        self.words[self.len] = w.raw();
        self.len += 1;
    }
}

impl<E: Entry> Drop for Clones<E> {
    fn drop(&mut self) {
        let mut ledger = Ledger::<E>::default(); // each clone is its own word
        for &w in &self.words[..core::mem::take(&mut self.len)] {
            if let Some(r) = ledger.release(Word::leaf(w)) {
                // SAFETY: `w` is a clone's word (`into_word` of a fresh clone), stored in no node
                // (not handed over), so nothing else can load or drop it; dropped once here.
                unsafe { r.drop_values() };
            }
        }
    }
}

/// RCU mode only: entries are dropped after a grace period.
impl WriterRoot<'_, Rcu> {
    /// Drops the values of `r` after a grace period of `guard` (a pinned guard of this tree's
    /// collector, checked); `dropped` runs first. A panic in an entry's `Drop` is contained
    /// there (the drop runs on whichever thread collects).
    ///
    /// # Panics
    ///
    /// If `guard` is not pinned on this tree's collector.
    pub(crate) fn defer_drop_entry<E: Entry>(
        self,
        r: Released<E>,
        guard: &Guard,
        dropped: impl FnOnce() + 'static,
    ) {
        defer_entry_drop(self.root, r, guard, dropped);
    }
}

/// See [`WriterRoot::defer_drop_entry`]; also the drop of a [`TakenEntry`] of an RCU-mode
/// tree, after the write that unlinked it.
fn defer_entry_drop<E: Entry>(
    root: &RootWord,
    r: Released<E>,
    guard: &Guard,
    dropped: impl FnOnce() + 'static,
) {
    root.check_guard(guard);
    let run = move || {
        dropped();
        // The collector runs this on whichever thread pins or flushes, which may be a
        // writer holding a tree's writer lock (its own pin, the pacing flush): an entry
        // whose `Drop` writes to that tree would wait for ever on the lock its own thread
        // holds. Such a thread drops the entry once it holds no writer lock any more.
        if holds_writer_lock() {
            let (raw, count) = r.into_raw_parts();
            postpone_drop(PostponedDrop {
                raw,
                count,
                drop: crate::entry::drop_released_raw::<E>,
            });
            return;
        }
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: this runs after every guard pinned when the last slot of the word was
            // unlinked is gone (below): no thread can load the word any more.
            unsafe { r.drop_values() };
        }));
    };
    // SAFETY: the closure only drops entries no reader can reach once it runs (above);
    // crossbeam runs it after every guard pinned now is gone.
    unsafe { guard.defer_unchecked(run) };
}

/// The capability to defer an entry's drop on an RCU-mode tree's collector outside a write:
/// made only from the writer lock ([`WriterLock::reclaim`]), so only for a tree whose readers
/// run beside its writer; it outlives the lock for `'t`, the borrow of the tree.
#[derive(Clone, Copy)]
pub(crate) struct RcuReclaim<'t> {
    root: &'t RootWord,
}

/// An entry a write took out of the tree to hand to the caller ([`crate::Erased`]): the last
/// slot holding its word was unlinked by that write, so the tree no longer owns it; this does.
/// In exclusive mode no reader exists and the value is the caller's at once. In RCU mode,
/// readers pinned before the write may still borrow it: it can be borrowed here too, but never
/// moved out, and it is dropped through the tree's collector, after a grace period that starts
/// when this is dropped (later than the write, so every such reader is waited for).
pub(crate) struct TakenEntry<'t, E: Entry> {
    released: core::mem::ManuallyDrop<Released<E>>,
    /// RCU mode: the collector to defer the drop on and the pending-frees counters (the
    /// entry was counted pending when it was taken, under the writer lock).
    rcu: Option<(RcuReclaim<'t>, std::sync::Arc<super::pending::Pending>)>,
}

impl<'t, E: Entry> TakenEntry<'t, E> {
    /// Exclusive mode: `r`, taken by the write of `_x`'s writer.
    pub(crate) fn exclusive(r: Released<E>, _x: WriterRoot<'_, Exclusive>) -> Self {
        TakenEntry {
            released: core::mem::ManuallyDrop::new(r),
            rcu: None,
        }
    }

    /// A copy of a value without drop glue (freely duplicable, the `Entry` contract): the
    /// caller's in either mode.
    pub(crate) fn copy(r: Released<E>) -> Self {
        debug_assert!(!core::mem::needs_drop::<E>());
        TakenEntry {
            released: core::mem::ManuallyDrop::new(r),
            rcu: None,
        }
    }

    /// RCU mode: `r`, taken by a write of the tree `at` reclaims for; `pending` already
    /// counts it.
    pub(crate) fn rcu(
        r: Released<E>,
        at: RcuReclaim<'t>,
        pending: std::sync::Arc<super::pending::Pending>,
    ) -> Self {
        TakenEntry {
            released: core::mem::ManuallyDrop::new(r),
            rcu: Some((at, pending)),
        }
    }

    /// The entry, borrowed.
    pub(crate) fn borrow(&self) -> E::Borrowed<'_> {
        self.released.borrow()
    }

    /// Calls `f` with a reference to the entry (for its `Clone`).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&E) -> R) -> R {
        // SAFETY: the word is live (owned by `self`, not consumed while `&self` lives).
        unsafe { crate::entry::view_word(self.released.raw_word(), f) }
    }

    /// The entry itself if no reader can hold it (exclusive mode); `self` back otherwise.
    pub(crate) fn try_take(mut self) -> Result<E, Self> {
        if self.rcu.is_some() {
            return Err(self);
        }
        // SAFETY: `released` is taken once (`self` is forgotten below, so `Drop` does not see
        // it again).
        let r = unsafe { core::mem::ManuallyDrop::take(&mut self.released) };
        core::mem::forget(self);
        // SAFETY: `rcu` is `None` only for `exclusive` (no reader exists) and for `copy` (a
        // value without drop glue, which the `Entry` contract lets us duplicate).
        let e = unsafe { r.take() };
        Ok(e.expect("a taken entry holds a value"))
    }
}

impl<E: Entry> Drop for TakenEntry<'_, E> {
    fn drop(&mut self) {
        // SAFETY: `released` is taken once, here (`try_take` forgets `self` after its take).
        let r = unsafe { core::mem::ManuallyDrop::take(&mut self.released) };
        match self.rcu.take() {
            None => {
                // SAFETY: exclusive mode (no reader exists), or a copy without drop glue
                // (`drop_values` of a count of 0 drops nothing).
                unsafe { r.drop_values() }
            }
            Some((at, pending)) => {
                let guard = at.root.pin();
                defer_entry_drop(at.root, r, &guard, move || pending.sub_entry());
                paced_defers(&guard, 1);
            }
        }
    }
}

/// An RCU-mode entry drop the collector ran on a thread that held a writer lock: the parts of
/// its `Released<E>` ([`Released::into_raw_parts`]) and the drop of its `E`. (`Copy` as plain
/// data; each one made is run once.)
#[derive(Clone, Copy)]
struct PostponedDrop {
    raw: usize,
    count: usize,
    drop: unsafe fn(usize, usize),
}

// Entry drops must never run while their thread holds a writer lock: an entry's `Drop` may
// write to its own tree (or to another one whose lock this thread holds), and the writer lock
// is not reentrant. The collector runs deferred drops on whichever thread pins or flushes —
// among them the writer itself, under its lock (its first pin of a fresh `Local` on a tree
// with its own collector, every 128th pin on the default one, the pacing flush of
// `paced_defers`) — so the deferred drop checks a per-thread count of the writer locks held
// ([`WriterHeld`], part of every [`WriterLock`]) and, while it is non-zero, queues the drop
// on the thread instead; the thread runs the queue as soon as it releases its last writer
// lock, before the write call that made the collector run returns. (Moving the collector's
// runs out of the lock instead would not do: any pin may collect, the writer's pins included.)
// A grace period has passed for a queued drop already, so running it later only delays it.
//
// Not under loom: a model's threads share one OS thread, so a std thread-local would be shared
// between them, and no model has an entry whose `Drop` writes to its tree; the drops run as
// the collector runs them.
#[cfg(not(loom))]
std::thread_local! {
    /// Writer locks (of any tree) this thread holds.
    static WRITER_LOCKS: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
    /// Entry drops postponed until this thread holds no writer lock.
    static POSTPONED: core::cell::RefCell<Vec<PostponedDrop>> =
        const { core::cell::RefCell::new(Vec::new()) };
}

/// Whether this thread holds a writer lock (of any tree); `false` while its thread-locals
/// are being destroyed (no lock is held then).
#[inline]
fn holds_writer_lock() -> bool {
    #[cfg(not(loom))]
    {
        WRITER_LOCKS.try_with(|c| c.get() > 0).unwrap_or(false)
    }
    #[cfg(loom)]
    {
        false
    }
}

/// Queues `p` until this thread releases its last writer lock ([`WriterHeld`]'s drop).
#[cold]
fn postpone_drop(p: PostponedDrop) {
    #[cfg(not(loom))]
    if POSTPONED.try_with(|q| q.borrow_mut().push(p)).is_err() {
        run_postponed_drop(p); // thread-locals gone (not pushed): no lock can be held
    }
    #[cfg(loom)]
    run_postponed_drop(p);
}

/// Runs one postponed drop; a panic in an entry's `Drop` is contained, as on the collector.
fn run_postponed_drop(p: PostponedDrop) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `p` holds the parts of a `Released<E>` (made by `defer_drop_entry`'s
        // closure) with `E`'s drop, queued once and dequeued once: a grace period passed after
        // the word's last slot was unlinked before the collector ran that closure, so no thread
        // can load the word.
        unsafe { (p.drop)(p.raw, p.count) };
    });
}

/// Marks its thread as holding a writer lock while it lives (see [`PostponedDrop`]); its drop,
/// after the lock's, runs the postponed entry drops once the thread holds no writer lock.
/// Neither `Send` nor `Sync`: it stays on the thread whose count it raised.
struct WriterHeld(PhantomData<*const ()>);

impl WriterHeld {
    #[inline]
    fn new() -> Self {
        #[cfg(not(loom))]
        WRITER_LOCKS.with(|c| c.set(c.get() + 1));
        WriterHeld(PhantomData)
    }
}

impl Drop for WriterHeld {
    #[inline]
    fn drop(&mut self) {
        #[cfg(not(loom))]
        {
            let held = WRITER_LOCKS.with(|c| {
                let h = c.get() - 1;
                c.set(h);
                h
            });
            if held == 0 {
                run_postponed();
            }
        }
    }
}

/// Runs the entry drops this thread postponed, unlocked; drops that write take and release
/// writer locks themselves (their drops postponed meanwhile run at that release, or here).
#[cfg(not(loom))]
#[inline]
fn run_postponed() {
    if POSTPONED.with(|q| q.borrow().is_empty()) {
        return;
    }
    run_postponed_slow();
}

#[cfg(not(loom))]
#[cold]
fn run_postponed_slow() {
    loop {
        let batch = POSTPONED.with(|q| core::mem::take(&mut *q.borrow_mut()));
        if batch.is_empty() {
            return;
        }
        for p in batch {
            run_postponed_drop(p);
        }
    }
}

/// Exclusive mode only: no reader exists, entries are dropped (or handed back) at once.
impl WriterRoot<'_, Exclusive> {
    /// Drops the values of `r` now.
    pub(crate) fn drop_entry_now<E: Entry>(self, r: Released<E>) {
        // SAFETY: exclusive mode: no reader exists (`&mut` tree).
        unsafe { r.drop_values() };
    }

    /// Hands back the first value of `r` and drops the others (for types without drop glue,
    /// a copy of the value).
    pub(crate) fn take_entries<E: Entry>(self, r: Released<E>) -> Option<E> {
        // SAFETY: exclusive mode: no reader exists (`&mut` tree).
        unsafe { r.take() }
    }
}

/// A fresh node: allocated by [`WriterRoot::alloc`] (or copied by `dup`), reachable by no
/// reader. The writer fills it with Relaxed stores (rows P2/P4/P7, through [`Fresh::node`]); it
/// becomes reachable only by being consumed by one of the publishing operations —
/// [`WriterRoot::publish`] (the root, P1), [`NodeRef::publish_child`] (a slot of a live node,
/// P3), [`NodeRef::append_child`] (beyond a live node's end, then its lowered pivot, P6/P9) —
/// or by being stored into another fresh node ([`Fresh::into_child`]), which is published
/// later. Not `Copy`: it is published once.
#[must_use = "a fresh node is leaked unless it is published"]
pub(crate) struct Fresh<'t>(Live<'t>);

impl<'t> Fresh<'t> {
    /// The node, for filling it (and reading it back) before it is published.
    #[inline]
    pub(crate) fn node(&self) -> Live<'t> {
        self.0
    }

    /// Hands the node over to a fresh parent being built (its slot is written with the other
    /// items of that parent and published with it).
    #[inline]
    pub(crate) fn into_child(self) -> Live<'t> {
        self.0
    }
}

/// A node no live node of the tree links any more: made only by the unlinking operations —
/// [`Live::publish_child`] (the child it replaced), [`WriterRoot::publish`],
/// [`WriterRoot::promote`] and [`WriterRoot::publish_empty`] (the old root) — or by
/// [`WriterRoot::unlinked`], which checks it (the consumed nodes of a rebuild, removed
/// subtrees). It can only be retired ([`WriterRoot::retire`]). Not `Copy`.
#[must_use = "an unlinked node is leaked unless it is retired"]
pub(crate) struct Unlinked<'w>(Live<'w>);

impl Unlinked<'_> {
    /// The node's address (what the writer's seals are keyed by).
    #[inline]
    pub(crate) fn addr(&self) -> usize {
        self.0.addr()
    }
}

/// The writer's node memory: the tree's [`Slab`], where its nodes come from and go back to, and
/// the nodes the writer retired, unlinked and marked dead, handed on after the writer's borrow
/// ends — to the collector in RCU mode, a batch at a time ([`retire_batch`],
/// [`WriterLock::flush_retired`], back into the slab after a grace period), to the slab in
/// exclusive mode ([`ExclusiveRoot::writer`] or its drop) — so that no node handle of the write
/// that retired them can still be used, and the write never touches a node it has handed on.
/// Belongs to one tree (checked by [`WriterRoot::retire`]).
pub(crate) struct NodeMem {
    owner: usize,
    /// Addresses of nodes of `slab`, unlinked and marked dead, each queued once.
    nodes: Vec<usize>,
    slab: Slab,
}

/// Closures a thread's writers defer before they make the collector collect: one bag's worth
/// (crossbeam's bags hold 64).
#[cfg(not(loom))]
const DEFER_BATCH: usize = 64;

#[cfg(not(loom))]
std::thread_local! {
    /// Closures this thread's writers deferred since they last made a collector collect.
    static DEFERRED: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Counts `n` closures deferred on `guard` and, once this thread has deferred one bag's worth
/// since the last time, makes `guard`'s collector collect (the guard's `flush`: the thread's
/// bag goes to the global queue, and the bags whose grace period has passed are freed). A
/// collector collects by itself only every 128 pins of a thread (a guard pinned while another
/// is does not count), a few bags at a time: a thread that defers more than that per pin, such
/// as one filling trees while it holds a guard, would otherwise pile deferred frees up without
/// bound. (Not under loom, whose models check the protocol, not the collector's pace.)
#[inline]
pub(crate) fn paced_defers(guard: &Guard, n: usize) {
    #[cfg(not(loom))]
    {
        let d = DEFERRED.with(|c| {
            let d = c.get() + n;
            c.set(if d >= DEFER_BATCH { 0 } else { d });
            d
        });
        if d >= DEFER_BATCH {
            guard.flush();
        }
    }
    #[cfg(loom)]
    let _ = (guard, n);
}

/// Retired nodes an RCU-mode writer queues before it hands them to the collector, all in one
/// deferred free (as `kvfree_rcu` gathers pointers into batches): 32 nodes, 8 KiB. A write
/// that does not fill the batch hands nothing on and does not pin; the queue waits for later
/// writes, for [`MapleTree::pending_frees`](crate::MapleTree::pending_frees) (which hands a
/// partial batch on), for exclusive mode (which frees it at once) or for the tree's drop.
/// Under loom: one node unless a model asks for more (`loom_knobs::set_retire_batch`), so that
/// every model's frees happen within the model.
#[inline]
pub(crate) fn retire_batch() -> usize {
    #[cfg(not(loom))]
    {
        32
    }
    #[cfg(loom)]
    {
        crate::loom_knobs::retire_batch()
    }
}

/// Gives the nodes at `batch` back through `returner` once every guard pinned now has been
/// dropped; `freed` runs right after (the pending-frees count).
///
/// # Safety
///
/// Each node must already be unreachable for guards pinned from now on (unlinked from the live
/// tree), must not be retired twice, and must be a node of the slab `returner` holds. `guard`
/// must belong to the tree's collector.
unsafe fn retire_batch_on(
    batch: Vec<usize>,
    guard: &Guard,
    returner: Returner,
    freed: impl FnOnce() + 'static,
) {
    let nodes = move || {
        batch.into_iter().map(|addr| {
            let p = core::ptr::with_exposed_provenance_mut::<Node>(addr);
            // SAFETY: a queued address is a node's (non-null).
            unsafe { NonNull::new_unchecked(p) }
        })
    };
    #[cfg(loom)]
    if crate::loom_knobs::free_at_once() {
        // Deliberately wrong (a loom mutant): poison now. The memory is leaked rather than
        // deallocated, so the test process itself never reads freed memory.
        for p in nodes() {
            // SAFETY: under loom a node is a `Box` of its own (`alloc_boxed`); it is dropped in
            // place exactly once and never deallocated, so later (racy, reported) reads still
            // read allocated memory.
            unsafe { core::ptr::drop_in_place(p.as_ptr()) };
        }
        drop(returner);
        freed();
        return;
    }
    // SAFETY: the nodes are unlinked (caller contract), so only guards pinned before this call
    // can still reach them; crossbeam runs the closure after all of them are gone, which makes
    // the give-back the last access, once, to the slab the nodes are of (caller contract).
    unsafe {
        guard.defer_unchecked(move || {
            returner.give_back_all(nodes());
            freed();
        });
    }
}

impl NodeMem {
    /// Whether the slab takes huge-page chunks once big.
    pub(crate) fn huge_pages(&self) -> bool {
        self.slab.huge_pages()
    }

    /// Makes room for `n` more nodes in one run of the slab (see [`Slab::reserve`]).
    pub(crate) fn reserve(&mut self, n: usize) {
        self.slab.reserve(n);
    }

    /// Frees the queued nodes into the slab.
    ///
    /// # Safety
    ///
    /// No handle of the writes that queued them may be used any more (the borrow that made
    /// their writer has ended), and no reader exists (exclusive mode).
    #[inline]
    unsafe fn free(&mut self) {
        if !self.nodes.is_empty() {
            // SAFETY: the caller's contract.
            unsafe { self.free_queued() };
        }
    }

    /// [`free`](Self::free) of a non-empty queue.
    ///
    /// # Safety
    ///
    /// As [`free`](Self::free).
    #[cold]
    #[inline(never)]
    unsafe fn free_queued(&mut self) {
        for addr in self.nodes.drain(..) {
            let p = core::ptr::with_exposed_provenance_mut::<Node>(addr);
            // SAFETY: a queued address is a node of this slab (non-null) that was unlinked and
            // marked dead once (its dead bit was clear); nothing can reach it (caller
            // contract), and it leaves the queue here, so it is freed once.
            unsafe { self.slab.free(NonNull::new_unchecked(p)) };
        }
    }
}

/// Nodes of a path the writer keeps between writes (see `walk::SavedPath`), root first, with
/// what makes them safe to use again: the tree they belong to and its count of retired nodes at
/// the time they were saved. Made only by [`WriterRoot::save_nodes`], read only by
/// [`WriterRoot::saved_nodes`], which hands them back only if no node has been retired since
/// (so none of them can have been freed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SavedNodes<const N: usize> {
    root: usize,
    retired: u64,
    len: usize,
    /// `len` as saved, kept while suspended (see [`suspend`](Self::suspend)).
    kept: usize,
    words: [usize; N],
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

impl<'t, M: Mode> WriterRoot<'t, M> {
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

/// A leaf slot word loaded under the protection of `'g` (a guard of the tree's collector, or
/// the writer): 0 (nothing), the zero entry, or an entry word of the tree. Only the node
/// layer's leaf loads make one, so borrowing its entry for `'g` needs no `unsafe` above.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Loaded<'g> {
    w: usize,
    _g: PhantomData<&'g Node>,
}

impl<'g> Loaded<'g> {
    /// Nothing (an empty slot).
    pub(crate) const NONE: Self = Loaded {
        w: 0,
        _g: PhantomData,
    };

    #[inline]
    fn new(w: usize) -> Self {
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

    /// Borrows the entry for `'g` (`None` for nothing and the zero entry). `E` must be the
    /// tree's entry type (see the module docs, "What is left").
    #[inline]
    pub(crate) fn entry<E: Entry + 'g>(self) -> Option<E::Borrowed<'g>> {
        if self.is_entry() {
            // SAFETY: a leaf word that is an entry is a word of `E::into_word` of the tree
            // (only `WriteGuard<E>` stores leaf words), loaded under a protection of 'g, which
            // keeps the entry alive for 'g (entries are released through the same collector).
            Some(unsafe { E::borrow::<'g>(self.w) })
        } else {
            None
        }
    }

    /// A clone of the entry (`None` for nothing and the zero entry).
    #[inline]
    pub(crate) fn cloned<E: Entry + Clone + 'g>(self) -> Option<E> {
        if self.is_entry() {
            // SAFETY: as in `entry`: a live entry word of the tree for 'g.
            Some(unsafe { crate::entry::clone_word::<E>(self.w) })
        } else {
            None
        }
    }

    /// Calls `f` with a reference to the entry (`None` for nothing and the zero entry, without
    /// calling `f`).
    #[inline]
    pub(crate) fn with_entry<E: Entry + 'g, R>(self, f: impl FnOnce(&E) -> R) -> Option<R> {
        if self.is_entry() {
            // SAFETY: as in `entry`: a live entry word of the tree for 'g, and `f` runs
            // within 'g.
            Some(unsafe { crate::entry::view_word::<E, R>(self.w, f) })
        } else {
            None
        }
    }
}

/// A fixed-capacity stack of `N` `Copy` values of which a prefix (`init`) is initialised:
/// creating one costs nothing (the walkers' root-to-leaf levels, written root first).
pub(crate) struct WalkStack<T: Copy, const N: usize> {
    items: [MaybeUninit<T>; N],
    init: usize,
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

/// What a slot of a node holds, as the writer builds nodes: an entry word (leaves: 0 is
/// nothing) or a child node (internal nodes). Internal slots are written only from handles
/// (`Slot::Child`), which is what makes decoding them sound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot<'g, A: Access = Read> {
    /// An entry word of a leaf (0: nothing).
    Entry(usize),
    /// A child of an internal node.
    Child(NodeRef<'g, A>),
}

impl<'g, A: Access> Slot<'g, A> {
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
        self == Slot::Entry(0)
    }

    /// The child.
    ///
    /// # Panics
    ///
    /// On an entry (a leaf slot where a child was expected: a bug of the writer).
    #[inline]
    pub(crate) fn child(self) -> NodeRef<'g, A> {
        match self {
            Slot::Child(n) => n,
            Slot::Entry(_) => panic!("maple tree: an entry where a child was expected"),
        }
    }
}

/// The three node kinds a port needs (`maple_dense` is never created by the kernel and is left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `maple_leaf_64`.
    Leaf,
    /// `maple_range_64`.
    Range,
    /// `maple_arange_64`.
    ARange,
}

impl Kind {
    /// Slot capacity.
    #[inline]
    pub(crate) const fn slots(self) -> usize {
        match self {
            Kind::Leaf | Kind::Range => RANGE_SLOTS,
            Kind::ARange => ARANGE_SLOTS,
        }
    }

    /// Pivot count (`slots - 1`).
    #[inline]
    pub(crate) const fn pivots(self) -> usize {
        self.slots() - 1
    }

    /// Minimum 0-based end of a node that is not on the right edge (`mt_min_slots`).
    #[inline]
    pub(crate) const fn min_end(self) -> usize {
        match self {
            Kind::Leaf | Kind::Range => RANGE_SLOTS / 2 - 2,
            Kind::ARange => ARANGE_SLOTS / 2 - 1,
        }
    }

    #[inline]
    const fn slot_base(self) -> usize {
        self.pivots()
    }

    /// Printable kernel name.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Kind::Leaf => "leaf_64",
            Kind::Range => "range_64",
            Kind::ARange => "arange_64",
        }
    }
}

/// A 256-byte maple node. Only [`NodeRef`] touches it.
#[repr(C)]
pub(crate) struct Node {
    parent: AtomicUsize,
    words: [AtomicU64; WORDS],
    /// Under loom: allocation tracking (a node never freed is reported as leaked).
    #[cfg(loom)]
    _track: crate::sync::Track,
    /// Under loom: the liveness word every access checks and `Drop` poisons (see `Drop`).
    #[cfg(loom)]
    alive: crate::sync::PoisonCell,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<Node>() == super::pending::NODE_BYTES);

/// How far from the walk's node another node must lie for [`NodeRef::prefetch_child`] to ask
/// for it: one chunk of the slab.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
const FAR: usize = 64 << 10;

/// Asks the CPU for the four cache lines of the node at `addr` (x86-64; elsewhere, and under
/// loom and Miri, nothing). A hint only: a prefetch never faults and nothing is read, so any
/// address will do.
#[inline(always)]
fn prefetch_node(addr: usize) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = core::ptr::without_provenance::<i8>(addr);
        for line in 0..core::mem::size_of::<Node>() / 64 {
            // SAFETY: a prefetch never faults and has no effect the program can observe, at
            // any address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * line)) };
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = addr;
}

impl Node {
    /// A zeroed node (outside loom, the slab's memory zeroed in place is the same node).
    #[cfg(loom)]
    fn new() -> Self {
        Node {
            parent: AtomicUsize::new(0),
            words: core::array::from_fn(|_| AtomicU64::new(0)),
            #[cfg(loom)]
            _track: crate::sync::Track::new(()),
            #[cfg(loom)]
            alive: crate::sync::PoisonCell::new(crate::sync::ALIVE),
        }
    }

    /// Replaces data word `i` of a node only its owner can reach (`&mut`) by `f(word)`; returns
    /// the new word.
    #[inline]
    fn update(&mut self, i: usize, f: impl FnOnce(u64) -> u64) -> u64 {
        #[cfg(not(loom))]
        {
            let w = self.words[i].get_mut();
            *w = f(*w);
            *w
        }
        #[cfg(loom)]
        self.words[i].with_mut(|w| {
            *w = f(*w);
            *w
        })
    }

    /// [`update`](Self::update) for every word of `range`, in order (`f` gets the index in the
    /// range and the word).
    #[inline]
    fn update_words(
        &mut self,
        range: core::ops::RangeInclusive<usize>,
        mut f: impl FnMut(usize, u64) -> u64,
    ) {
        #[cfg(not(loom))]
        for (i, w) in self.words[range].iter_mut().enumerate() {
            let w = w.get_mut();
            *w = f(i, *w);
        }
        #[cfg(loom)]
        for (i, w) in self.words[range].iter_mut().enumerate() {
            w.with_mut(|w| *w = f(i, *w));
        }
    }

    /// The end (as [`NodeRef::end`] derives it) of a node only its owner can reach, with
    /// `pivots` pivots and implied max `max`.
    #[inline]
    fn end_mut(&mut self, pivots: usize, max: u64) -> usize {
        (0..pivots)
            .find(|&i| self.update(i, |p| p) >= max)
            .unwrap_or(pivots)
    }

    /// Under loom: asserts the node is not freed, and records a read of its liveness word, so a
    /// free that does not happen-after this access is reported by loom as a causality violation.
    #[cfg(loom)]
    #[inline]
    fn check_alive(&self) {
        let v = self.alive.with(|p| {
            // SAFETY: loom's cell; the only writer is `Drop`, and loom checks the two accesses
            // are ordered (that is the point of the check).
            unsafe { *p }
        });
        assert_eq!(
            v,
            crate::sync::ALIVE,
            "maple tree node used after it was freed"
        );
    }
}

#[cfg(loom)]
impl Drop for Node {
    fn drop(&mut self) {
        // Poison: a write to the liveness cell. Under loom, any access of the node (every access
        // reads the cell, see `check_alive`) that does not happen-before this free is reported as
        // a causality violation, which is how loom sees a use-after-free; an access ordered after
        // it finds the poison and panics. A cell access is not a scheduling point, so this costs
        // no interleavings (poisoning the 31 atomic words would add 31 of them).
        self.alive.with_mut(|p| {
            // SAFETY: `&mut self`: no other reference to the node exists in Rust terms; loom
            // checks the ordering against readers' `check_alive`.
            unsafe {
                assert_eq!(*p, crate::sync::ALIVE, "maple tree node freed twice");
                *p = crate::sync::POISON;
            }
        });
    }
}

// ===== Node memory ==============================================================================
//
// A tree's nodes come from its slab (`slab`, held by the writer in `NodeMem`), one chunk of
// nodes at a time, and go back to it. Under loom, and with `--cfg maple_tree_box_nodes` (for the
// sanitizers), each node is a `Box` of its own instead.

mod slab;

use slab::{Returner, Slab};

/// A node in a `Box` of its own (see `slab`): under loom a whole `Node::new` (with its
/// allocation tracking and liveness cell), else uninitialised memory for one node.
#[cfg(any(loom, maple_tree_box_nodes))]
fn alloc_boxed() -> NonNull<Node> {
    #[cfg(loom)]
    let p = NonNull::from(Box::leak(Box::new(Node::new())));
    #[cfg(not(loom))]
    let p = NonNull::from(Box::leak(Box::<Node>::new_uninit())).cast::<Node>();
    p
}

/// Frees a node of [`alloc_boxed`] (under loom: dropped, i.e. poisoned, and deallocated).
///
/// # Safety
///
/// `p` comes from [`alloc_boxed`], nothing can reach it any more, and it is freed once.
#[cfg(any(loom, maple_tree_box_nodes))]
unsafe fn free_boxed(p: NonNull<Node>) {
    // SAFETY: the caller's contract; outside loom `Node` has no drop glue, so dropping the box
    // only deallocates it (with `Node`'s layout, which `alloc_boxed` allocated).
    drop(unsafe { Box::from_raw(p.as_ptr()) });
}

/// A zeroed node (as `Node::new` makes under loom) from `slab`, owned by the caller.
#[cfg(not(loom))]
#[inline]
fn new_node(slab: &mut Slab) -> NonNull<Node> {
    let p = slab.alloc();
    // SAFETY: `p` is memory for one node that nothing else references (the slab's contract).
    // Outside loom a `Node` is only atomics (`repr(C)`, no padding), for which all-zero bytes
    // are valid values: the node `Node::new` makes.
    unsafe { p.as_ptr().write_bytes(0, 1) };
    p
}

/// Under loom: a plain box (see `slab`).
#[cfg(loom)]
#[inline]
fn new_node(slab: &mut Slab) -> NonNull<Node> {
    slab.alloc()
}

#[cfg(not(loom))]
const _: () = assert!(!core::mem::needs_drop::<Node>());

// ===== end of node memory =======================================================================

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
#[derive(Clone, Copy)]
pub(crate) struct NodeRef<'g, A: Access = Read> {
    ptr: NonNull<Node>,
    kind: Kind,
    _guard: PhantomData<(&'g Node, A)>,
}

/// A node of the tree the writer reached through its [`WriterRoot`] (or a fresh node it
/// filled): the loads of a [`NodeRef`], the in-place Release stores (rows P3/P5/P9/P14) and the
/// Relaxed stores beyond the end or into a fresh node (P2/P4/P6/P7/P8/P12/P13).
/// [`view`](NodeRef::view) gives the reader handle for the shared read code.
pub(crate) type Live<'w> = NodeRef<'w, Write>;

impl<A: Access> PartialEq for NodeRef<'_, A> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr == other.ptr
    }
}
impl<A: Access> Eq for NodeRef<'_, A> {}

impl<A: Access> core::fmt::Debug for NodeRef<'_, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}@{:p}", self.kind.name(), self.ptr)
    }
}

/// The backward iterator's leaf, or none, with the offsets its fast step may use: offsets
/// `i < ROOM` (`room` is `ROOM` with a leaf, 0 without), so one check stands for both "a leaf"
/// and "an offset the step's loads need not check". The back's step, below slot `i + 3`, reads
/// pivots `i` and `i + 1` and slots up to `i + 2` (`ROOM` is `RANGE_SLOTS - 3`). (The front
/// keeps its offset inside its handle instead, [`FrontLeaf`].)
#[derive(Clone, Copy)]
pub(crate) struct FastLeaf<'g, const ROOM: usize> {
    /// The leaf (dangling while `room` is 0).
    ptr: NonNull<Node>,
    /// `ROOM` with a leaf, 0 without.
    room: usize,
    _guard: PhantomData<&'g Node>,
}

impl<'g, const ROOM: usize> FastLeaf<'g, ROOM> {
    /// No leaf.
    pub(crate) const NONE: Self = FastLeaf {
        ptr: NonNull::dangling(),
        room: 0,
        _guard: PhantomData,
    };

    /// Leaf `n`.
    #[inline]
    pub(crate) fn new(n: NodeRef<'g>) -> Self {
        debug_assert!(n.is_leaf() && ROOM < RANGE_SLOTS);
        FastLeaf {
            ptr: n.ptr,
            room: ROOM,
            _guard: PhantomData,
        }
    }

    /// The leaf, if any.
    #[inline]
    pub(crate) fn get(self) -> Option<NodeRef<'g>> {
        (self.room != 0).then_some(NodeRef {
            ptr: self.ptr,
            kind: Kind::Leaf,
            _guard: PhantomData,
        })
    }

    /// The leaf, if there is one and `i < ROOM` (which the loads that follow then need not
    /// check).
    #[inline(always)]
    pub(crate) fn at(self, i: usize) -> Option<NodeRef<'g>> {
        if i < self.room {
            // SAFETY: `room` is `ROOM` or 0 (`NONE` and `new` are its only writers), so
            // `i < room` implies it.
            unsafe { core::hint::assert_unchecked(i < ROOM) };
            Some(NodeRef {
                ptr: self.ptr,
                kind: Kind::Leaf,
                _guard: PhantomData,
            })
        } else {
            None
        }
    }
}

/// The forward iterator's leaf, or none, with its offset (the slot after the iterator's
/// current one): one load and one check against `ROOM` stand for "a leaf", "this offset" and
/// "an offset the step's loads need not check" (`FastLeaf`, by contrast, keeps a room word
/// beside an offset the iterator keeps). Without a leaf the offset carries [`NO_LEAF`], which
/// no offset reaches: [`set_off`](Self::set_off) keeps it, so only [`new`](Self::new) makes a
/// leaf.
#[derive(Clone, Copy)]
pub(crate) struct FrontLeaf<'g> {
    /// The leaf (dangling while `off` carries `NO_LEAF`).
    ptr: NonNull<Node>,
    /// The offset, with `NO_LEAF` set without a leaf.
    off: usize,
    _guard: PhantomData<&'g Node>,
}

/// The bit of [`FrontLeaf`]'s offset that says there is no leaf (above any offset: offsets
/// go up to `RANGE_SLOTS`; a small bit, so that masks are short immediates).
const NO_LEAF: usize = 32;
const _: () = assert!(RANGE_SLOTS < NO_LEAF);

impl<'g> FrontLeaf<'g> {
    /// No leaf.
    pub(crate) const NONE: Self = FrontLeaf {
        ptr: NonNull::dangling(),
        off: NO_LEAF,
        _guard: PhantomData,
    };

    /// Leaf `n`, at offset `off` (`off <= RANGE_SLOTS`).
    #[inline]
    pub(crate) fn new(n: NodeRef<'g>, off: usize) -> Self {
        debug_assert!(n.is_leaf() && off <= RANGE_SLOTS);
        FrontLeaf {
            ptr: n.ptr,
            off: off & !NO_LEAF,
            _guard: PhantomData,
        }
    }

    /// Moves on to leaf `n` at offset 0 if there is a leaf (the handle stays empty otherwise).
    #[inline]
    pub(crate) fn move_to(&mut self, n: NodeRef<'g>) {
        debug_assert!(n.is_leaf() && self.off & NO_LEAF == 0);
        self.ptr = n.ptr;
        self.set_off(0);
    }

    /// The leaf, if any.
    #[inline]
    pub(crate) fn get(self) -> Option<NodeRef<'g>> {
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
    pub(crate) fn at_exactly(self, off: usize) -> Option<NodeRef<'g>> {
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
    pub(crate) fn at<const ROOM: usize>(&mut self) -> Option<FrontAt<'_, 'g>> {
        const { assert!(ROOM <= RANGE_SLOTS) };
        // Without a leaf `off` carries `NO_LEAF`, above any `ROOM`: only `new` clears it.
        (self.off < ROOM).then_some(FrontAt { leaf: self })
    }
}

/// A [`FrontLeaf`] that holds a leaf, borrowed: while it lives nothing else can empty the
/// handle, so its offset may be written as it is.
pub(crate) struct FrontAt<'a, 'g> {
    leaf: &'a mut FrontLeaf<'g>,
}

impl<'g> FrontAt<'_, 'g> {
    /// The leaf.
    #[inline(always)]
    pub(crate) fn node(&self) -> NodeRef<'g> {
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
#[derive(Clone, Copy)]
pub(crate) struct FrontParent<'g> {
    /// The parent (dangling while `max` is 0 for want of one).
    ptr: NonNull<Node>,
    kind: Kind,
    /// The parent's max; 0 without a parent (no leaf ends below it).
    max: u64,
    _guard: PhantomData<&'g Node>,
}

impl<'g> FrontParent<'g> {
    /// No parent (the leaf is the root).
    pub(crate) const NONE: Self = FrontParent {
        ptr: NonNull::dangling(),
        kind: Kind::Range,
        max: 0,
        _guard: PhantomData,
    };

    /// Parent `n`, covering up to `max`.
    #[inline]
    pub(crate) fn new(n: NodeRef<'g>, max: u64) -> Self {
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
    pub(crate) fn below(self, leaf_max: u64) -> Option<NodeRef<'g>> {
        // `max` is 0 only for `NONE` or a parent of nothing but index 0: no child ends below.
        (leaf_max < self.max).then_some(NodeRef {
            ptr: self.ptr,
            kind: self.kind,
            _guard: PhantomData,
        })
    }
}

/// Encodes a node as a child (or root) word.
#[inline]
pub(crate) fn node_word<A: Access>(n: NodeRef<'_, A>) -> usize {
    let addr = n.ptr.as_ptr().expose_provenance();
    if n.kind == Kind::Leaf {
        addr | LEAF_TAG
    } else {
        addr
    }
}

impl<'g, A: Access> NodeRef<'g, A> {
    /// Decodes a child (or root) word.
    ///
    /// # Safety
    ///
    /// `word` must be a non-zero node word read from the tree (root word or an internal slot) while
    /// the guard of lifetime `'g` was pinned (or the writer lock held), so that the node stays
    /// allocated for `'g`; `internal` must be the internal kind of that tree.
    #[inline]
    unsafe fn from_word(word: usize, internal: Kind) -> Self {
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
    fn copy_leaf_with<'n>(
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
    fn copy_internal_with<'n, E: Entry>(
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
            let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| child(mem, i, hi)));
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
                    std::panic::resume_unwind(panic);
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
    #[cfg(not(loom))]
    #[inline]
    fn copy_in(&self, slab: &mut Slab, fresh: bool) -> NonNull<Node> {
        let dst = if fresh {
            slab.alloc_fresh()
        } else {
            slab.alloc()
        };
        // SAFETY: `dst` is memory for one `Node` that nothing else references (the slab's
        // contract), so it cannot overlap the live node behind `self.ptr` (allocated for 'g, see
        // `node`). Outside loom a `Node` is only atomics (`repr(C)`, no padding), for which the
        // copied bytes are valid values, so `dst` is an initialised node afterwards, ours. The
        // source is read non-atomically: its tree's one writer is our caller (writer lock held
        // or tree owned), so no store races the copy — readers only load, and reads racing
        // reads are no data race.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr.as_ptr().cast_const(), dst.as_ptr(), 1);
            *(*dst.as_ptr()).parent.get_mut() = 0;
        }
        dst
    }

    /// Under loom (whose atomics are not plain memory): word by word, into a plain box.
    #[cfg(loom)]
    fn copy_in(&self, _slab: &mut Slab, _fresh: bool) -> NonNull<Node> {
        let from = &self.node().words;
        NonNull::from(Box::leak(Box::new(Node {
            parent: AtomicUsize::new(0),
            words: core::array::from_fn(|i| AtomicU64::new(from[i].load(Ordering::Relaxed))),
            _track: crate::sync::Track::new(()),
            alive: crate::sync::PoisonCell::new(crate::sync::ALIVE),
        })))
    }

    /// Publishes nothing: turns a node just made (zeroed or copied, initialised, nobody else's)
    /// into a handle owned by the writer.
    #[inline]
    fn own<'n>(kind: Kind, ptr: NonNull<Node>) -> Live<'n> {
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
    unsafe fn free_now(self, slab: &mut Slab) {
        // SAFETY: the caller's contract.
        unsafe { slab.free(self.ptr) };
    }

    #[inline]
    fn node(&self) -> &'g Node {
        // SAFETY: a NodeRef is only created by `own` (a fresh node, owned by the writer) or
        // `from_word` under a guard/lock of lifetime 'g, so the node is allocated for 'g; all fields are atomics, so a
        // shared reference is sound while others read and the one writer writes.
        let n = unsafe { self.ptr.as_ref() };
        #[cfg(loom)]
        n.check_alive();
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
    pub(crate) fn leaf_word(&self, i: usize) -> Loaded<'g> {
        debug_assert!(self.is_leaf());
        Loaded::new(self.slot(i))
    }

    /// The reader handle of this node (the shared read code takes only those): a copy.
    #[inline]
    pub(crate) fn view(self) -> NodeRef<'g> {
        NodeRef {
            ptr: self.ptr,
            kind: self.kind,
            _guard: PhantomData,
        }
    }

    /// [`leaf_word`](Self::leaf_word) without the kind dispatch (as [`range_slot`](Self::range_slot)).
    #[inline]
    pub(crate) fn range_word(&self, i: usize) -> Loaded<'g> {
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

    // ----- parent word ----------------------------------------------------------------------------

    /// The recorded parent address (0 for the root) and offset.
    #[inline]
    pub(crate) fn parent_info(&self) -> (usize, usize) {
        // ORDERING: P13 (the writer's and `validate`'s own bookkeeping).
        let w = self.node().parent.load(Ordering::Relaxed);
        (w & ADDR_MASK, (w & OFFSET_MASK) >> OFFSET_SHIFT)
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
    ) -> impl Iterator<Item = (u64, u64, Slot<'g, A>)> {
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
    pub(crate) fn try_child(&self, i: usize, internal: Kind) -> Option<NodeRef<'g, A>> {
        debug_assert!(!self.is_leaf());
        let w = self.slot(i);
        if w == 0 {
            return None;
        }
        // SAFETY: the word is non-zero and is a node word (internal slots hold nothing else);
        // the child stays allocated for 'g (see `child`).
        let c = unsafe { NodeRef::from_word(w, internal) };
        c.prefetch();
        Some(c)
    }

    /// Asks the CPU for all four cache lines of the node at once: a descent reads the pivots
    /// (the first two lines) and then one slot (the last two), and would otherwise miss on the
    /// slot's line only after the pivot scan. A hint only: nothing is read.
    #[inline(always)]
    fn prefetch(self) {
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
    pub(crate) fn prefetch_child(&self, i: usize, near: NodeRef<'g, A>) {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if i < self.kind.slots() {
            // ORDERING: none needed (no access depends on the word, see above).
            let w = self.node().words[self.kind.slot_base() + i].load(Ordering::Relaxed) as usize;
            let at = near.ptr.as_ptr().addr();
            if (w & !LEAF_TAG).abs_diff(at) > FAR {
                prefetch_node(w & !LEAF_TAG);
            }
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
        let _ = (i, near);
    }

    /// Child `i` of an internal node covering up to `max`, and that child's max: the loads of
    /// [`slot_max`](Self::slot_max) then [`try_child`](Self::try_child), in that order (the
    /// pivot before the slot it exposes), with one dispatch on the node's kind for both (the
    /// children of an internal node are leaves or of its own kind). `None` where `try_child`
    /// gives `None`, or past the node's slots.
    #[inline(always)]
    pub(crate) fn child_and_max(&self, i: usize, max: u64) -> Option<(NodeRef<'g, A>, u64)> {
        debug_assert!(!self.is_leaf());
        if self.kind == Kind::ARange {
            self.child_and_max_in::<ARANGE_PIVOTS>(i, max, Kind::ARange)
        } else {
            self.child_and_max_in::<RANGE_PIVOTS>(i, max, Kind::Range)
        }
    }

    /// [`child_and_max`](Self::child_and_max) of a node of kind `kind`, which has `P` pivots.
    #[inline(always)]
    fn child_and_max_in<const P: usize>(
        &self,
        i: usize,
        max: u64,
        kind: Kind,
    ) -> Option<(NodeRef<'g, A>, u64)> {
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
        // whose internal kind is this node's own, `kind`; the child stays allocated for 'g.
        Some((unsafe { NodeRef::from_word(w, kind) }, hi))
    }

    /// Child `i` of an internal node (the writer's view, where an empty slot is corruption).
    ///
    /// Sound because children of a node reachable under the guard are reachable too: a child is
    /// retired only after it has been unlinked, and unlinking happens-before the retire.
    #[inline]
    pub(crate) fn child(&self, i: usize, internal: Kind) -> NodeRef<'g, A> {
        debug_assert!(!self.is_leaf());
        let w = self.slot(i);
        assert!(w != 0, "maple tree corrupted: internal slot {i} is empty");
        // SAFETY: the word is non-zero (checked) and is a node word (internal slots hold nothing
        // else); the child stays allocated for 'g (see above).
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

/// The writer's stores, on [`Live`] handles only (a [`Read`] handle cannot reach them).
impl<'w> Live<'w> {
    /// Writer store of pivot `i` on a fresh node or beyond the published end (Relaxed: published
    /// later by a Release store).
    #[inline]
    pub(crate) fn init_pivot(&self, i: usize, v: u64) {
        debug_assert!(i < self.kind.pivots());
        // ORDERING: P7/P8 (published later by a Release store, P1/P3/P9).
        self.node().words[i].store(v, Ordering::Relaxed);
    }

    /// Writer store of the single pivot that publishes an in-place change (Release).
    #[inline]
    pub(crate) fn publish_pivot(&self, i: usize, v: u64) {
        debug_assert!(i < self.kind.pivots());
        // ORDERING: P9 (the single publishing store of an in-place append).
        self.node().words[i].store(v, ord::p9_publish_pivot());
    }

    /// Writer store of a slot on a fresh node or beyond the published end (Relaxed).
    #[inline]
    fn init_word(&self, i: usize, w: usize) {
        debug_assert!(i < self.kind.slots());
        // ORDERING: P2/P4/P6 (published later by the Release store that exposes it).
        self.node().words[self.kind.slot_base() + i].store(w as u64, Ordering::Relaxed);
    }

    /// Writer store of a slot that readers can already reach (Release).
    #[inline]
    fn publish_word(&self, i: usize, w: usize) {
        debug_assert!(i < self.kind.slots());
        // ORDERING: P3/P5 (pairs with the readers' Acquire slot load).
        self.node().words[self.kind.slot_base() + i].store(w as u64, ord::p3_p5_publish_slot());
    }

    /// Writer store of the entry word `w` (0: nothing) into leaf slot `i` of a fresh node or
    /// beyond the published end (Relaxed, rows P4/P6).
    ///
    /// # Panics
    ///
    /// If this is not a leaf (internal slots hold only children).
    #[inline]
    pub(crate) fn init_entry<E: Entry>(&self, i: usize, w: Word<E>) {
        assert!(
            self.is_leaf(),
            "maple tree: an entry stored into an internal node"
        );
        self.init_word(i, w.raw());
    }

    /// Writer store of the entry word `w` into a leaf slot readers can already reach (Release,
    /// row P5: the exact fit).
    ///
    /// # Panics
    ///
    /// If this is not a leaf.
    #[inline]
    pub(crate) fn publish_entry<E: Entry>(&self, i: usize, w: Word<E>) {
        assert!(
            self.is_leaf(),
            "maple tree: an entry stored into an internal node"
        );
        self.publish_word(i, w.raw());
    }

    /// Writer store of child `c` into slot `i` of a fresh internal node or beyond its published
    /// end (Relaxed, rows P2/P6), recording this node as `c`'s parent (P13).
    ///
    /// # Panics
    ///
    /// If this is a leaf.
    #[inline]
    pub(crate) fn init_child(&self, i: usize, c: Live<'_>) {
        assert!(!self.is_leaf(), "maple tree: a child stored into a leaf");
        c.set_parent(Some(*self), i);
        self.init_word(i, node_word(c));
    }

    /// Replaces child `i` of an internal node readers can already reach by `c` (fresh, fully
    /// written): `c`'s parent word first (P13), then one Release store of the slot (P3).
    ///
    /// # Panics
    ///
    /// If this is a leaf.
    #[inline]
    #[must_use = "the replaced child is leaked unless it is retired"]
    pub(crate) fn publish_child(&self, i: usize, c: Fresh<'w>) -> Option<Unlinked<'w>> {
        assert!(!self.is_leaf(), "maple tree: a child stored into a leaf");
        // An internal node's kind is the tree's internal kind.
        let old = self.child(i, self.kind);
        let c = c.0;
        c.set_parent(Some(*self), i);
        self.publish_word(i, node_word(c));
        // The old child is unlinked unless `c`'s subtree took it in: then its parent word
        // names the node it went into, not this slot.
        (old.parent_info() == (self.addr(), i)).then_some(Unlinked(old))
    }

    /// The in-place `+1` append of a child to an internal node readers can reach, whose last
    /// child is `end` and whose max is `max`: the fresh child `c` (covering up to `max`, largest
    /// gap `c_gap`) goes into slot `end + 1` with its pivot and gap, the gap of child `end` becomes
    /// `end_gap`, all Relaxed (rows P6/P8/P12); then pivot `end` is lowered to `end_max`, the one
    /// Release store that publishes it all (P9).
    ///
    /// # Panics
    ///
    /// If this is a leaf or has no free slot.
    pub(crate) fn append_child(
        &self,
        end: usize,
        max: u64,
        end_max: u64,
        end_gap: u64,
        c: Fresh<'_>,
        c_gap: u64,
    ) {
        let kind = self.kind;
        assert!(
            end + 1 < kind.slots(),
            "maple tree: no room to append a child"
        );
        self.init_child(end + 1, c.0);
        if end + 1 < kind.pivots() {
            self.init_pivot(end + 1, max);
        }
        if kind == Kind::ARange {
            self.set_gap(end + 1, c_gap);
            self.set_gap(end, end_gap);
        }
        self.publish_pivot(end, end_max);
    }

    /// Writer store of an empty slot beyond the end of a fresh node (Relaxed): zero words,
    /// which no reader follows.
    #[inline]
    pub(crate) fn clear_slot(&self, i: usize) {
        self.init_word(i, 0);
    }

    /// [`clear_slot`](Self::clear_slot) of each slot of `slots`, with its pivot (within the
    /// pivots) and, in an allocation tree's internal node, its gap: the slots a node rewritten
    /// in place (exclusive mode, no reader) no longer uses, so that no stale child or entry word
    /// stays behind its end.
    #[inline]
    pub(crate) fn clear_slots(&self, slots: core::ops::Range<usize>) {
        let kind = self.kind;
        for k in slots {
            self.clear_slot(k);
            if k < kind.pivots() {
                self.init_pivot(k, 0);
            }
            if kind == Kind::ARange {
                self.set_gap(k, 0);
            }
        }
    }

    /// Sets the gap of child `i` (Release: gaps are hints for the search, loaded Relaxed, but a
    /// reader that read this store must see the write sequence the write made odd before it;
    /// see the module table, rows P12 and P19).
    #[inline]
    pub(crate) fn set_gap(&self, i: usize, v: u64) {
        debug_assert!(self.kind == Kind::ARange && i < ARANGE_SLOTS);
        // ORDERING: P12 (Release for P19's seqlock: the odd sequence is ordered before it).
        self.node().words[ARANGE_GAPS + i].store(v, Ordering::Release);
    }

    /// Records `parent` and this node's offset in it (`None`: this node is the root).
    #[inline]
    pub(crate) fn set_parent(&self, parent: Option<Live<'_>>, offset: usize) {
        let w = match parent {
            Some(p) => {
                let addr = p.ptr.as_ptr().expose_provenance();
                debug_assert_eq!(addr & !ADDR_MASK, 0, "node address uses tag bits");
                addr | (offset << OFFSET_SHIFT)
            }
            None => 0,
        };
        // ORDERING: P13/P17 (the writer's own bookkeeping; readers load the word only for the
        // dead bit, P14, which this store never clears: a node is re-parented only while live).
        self.node().parent.store(w, Ordering::Relaxed);
    }

    /// Marks a replaced node dead (Release), so readers that meet it restart; `false` if it
    /// was dead already. A load and a store, not a read-modify-write: only the writer stores
    /// parent words (P13, P14), so its load reads the last of them (no locked instruction per
    /// retired node).
    #[inline]
    fn mark_dead(&self) -> bool {
        let parent = &self.node().parent;
        // ORDERING: P13 (the writer's own word).
        let w = parent.load(Ordering::Relaxed);
        if w & DEAD != 0 {
            return false;
        }
        // ORDERING: P14 (and P17: the store keeps the last re-parenting's bits).
        parent.store(w | DEAD, ord::P14_MARK_DEAD);
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use core::mem::size_of_val;

    use crossbeam_epoch::Collector;

    use super::{Kind, Root};

    /// The 128-byte blocks (a cache line and the neighbour the spatial prefetcher pairs it
    /// with) that `len` bytes at `p` touch.
    fn blocks(p: usize, len: usize) -> core::ops::RangeInclusive<usize> {
        p / 128..=(p + len - 1) / 128
    }

    /// What every reader loads on every walk (the root word) shares no cache line with what
    /// the writer stores on every write (the lock word and the writer state behind it, the
    /// retirement counter): such a line would move to the writer's core on each write and
    /// back on the reader's next load.
    #[test]
    fn root_word_lines_are_the_readers_own() {
        let root = Root::new(Kind::ARange, Collector::new(), false, false, [0u64; 16]);
        let word = blocks(core::ptr::from_ref(&root.shared.word).addr(), 8);
        let writer = blocks(
            core::ptr::from_ref(&root.writer).addr(),
            size_of_val(&root.writer),
        );
        let retired = blocks(core::ptr::from_ref(&*root.shared.retired).addr(), 8);
        for other in [writer, retired] {
            assert!(
                word.end() < other.start() || other.end() < word.start(),
                "root word in blocks {word:?}, a writer's field in {other:?}"
            );
        }
    }
}
