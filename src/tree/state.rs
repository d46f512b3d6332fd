//! The writer's private state (height, shared-entry counts, statistics, seals, the saved path):
//! only the holder of the writer lock (or `&mut`) touches it.

use crate::entry::{Entry, Ledger};

use super::node::{ExclusiveRoot, Read, RootRef, WriterLock};
use super::seal::Seals;
use super::walk::SavedPath;

/// Which write path a store took, counted per tree (see [`MapleTree::stats`](crate::MapleTree::stats)). Names follow the
/// kernel's `enum store_type` and `mas_wr_append` cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// One slot replaced in place (`wr_exact_fit`).
    pub exact_fit: u64,
    /// Two slots changed in place, one boundary moved (`wr_slot_store`, exclusive mode only).
    pub slot_store: u64,
    /// Three slots changed in place, two boundaries moved (exclusive mode only).
    pub slot_store3: u64,
    /// `+1` append at the end of the last range (in place, also under concurrent readers).
    pub append_end: u64,
    /// `+1` append at the start of the last range (in place in exclusive mode only).
    pub append_start: u64,
    /// Three-way append: a range strictly inside the last range (in place, also under readers).
    pub append_three_way: u64,
    /// The leaf rebuilt as one node (`wr_node_store`): a new node swapped in, or in place.
    pub node_store: u64,
    /// Parents copied because a pivot lowered in place within the current grace period sealed
    /// re-pointing their child in place (see the publication protocol in `node`).
    pub sealed_copy: u64,
    /// Writes that would have appended in place into a node whose range shrank within the
    /// current grace period (after an append split), done by copy-on-write instead.
    pub sealed_extend: u64,
    /// Exact fits into a slot whose bound was lowered in place within the current grace period,
    /// done by copy-on-write instead.
    pub sealed_repoint: u64,
    /// A node split (`wr_split_store`), counted per write.
    pub split: u64,
    /// Splits of the full rightmost leaf by truncation during in-order appends (no copy-on-write;
    /// see the `append` module). Also counted in `split`.
    pub append_split: u64,
    /// Of those, splits where the full leaf kept the new entry as its sixteenth slot and only the
    /// rest of the old last range moved on (in place without readers, by copy-on-write of the
    /// leaf and its parent under them): in-order builds then fill leaves completely.
    pub append_fill: u64,
    /// Of those, leaf splits done directly (`wr_leaf_split`) rather than by the rebuild: in
    /// exclusive mode in place (each split node keeps its left part, the ancestor with room
    /// moves its later slots right by one), under readers with fresh nodes published by one
    /// store. Also counted in `split`.
    pub leaf_split: u64,
    /// The root split, growing the tree by one level.
    pub grow: u64,
    /// A node fell below minimum occupancy and was merged/redistributed (`wr_rebalance`).
    pub rebalance: u64,
    /// A write that crossed leaves (`wr_spanning_store`).
    pub spanning_store: u64,
    /// The height shrank.
    pub shrink: u64,
    /// A whole-space write or the first write into an empty tree (`wr_new_root`/`wr_store_root`).
    pub new_root: u64,
    /// Nodes allocated.
    pub nodes_allocated: u64,
    /// Times a lock-free reader walked again from the root because it met a node the writer had
    /// replaced (or a state only such a race produces). Filled in by [`MapleTree::stats`](crate::MapleTree::stats).
    pub reader_restarts: u64,
    /// Nodes freed or retired.
    pub nodes_freed: u64,
    /// Batches of retired nodes RCU-mode writers handed to the collector, each in one deferred
    /// free (up to 32 nodes; a partial batch when [`MapleTree::pending_frees`](crate::MapleTree::pending_frees)
    /// hands one on).
    pub retire_batches: u64,
}

/// Writer-private bookkeeping of a tree of `E`: only the holder of the writer lock (or `&mut`)
/// touches it.
pub(crate) struct WriterState<E> {
    /// Levels of the tree (0 = empty).
    pub(crate) height: usize,
    /// The entry words held by more than one slot, and the released words waiting for the end
    /// of an exclusive-mode write.
    pub(crate) ledger: Ledger<E>,
    pub(crate) stats: Stats,
    /// `MT_FLAGS_ALLOC_WRAPPED`.
    pub(crate) cyclic_wrapped: bool,
    /// The seed-001 switch: in-place appends (on by default).
    pub(crate) append: bool,
    /// The three-way append alone (on by default): off, a range strictly inside the leaf's last
    /// range takes the node store, as before "maple_tree: optimize mas_wr_append(), also
    /// improve duplicating VMAs" (the other appends stay).
    pub(crate) three_way: bool,
    /// The direct leaf split (`wr_leaf_split`; on by default): off, every split is a rebuild.
    pub(crate) leaf_split: bool,
    /// The path of the last in-place append, if no write changed the structure since (empty
    /// otherwise: every write empties it first; see `WriteGuard::write`).
    pub(crate) saved: SavedPath,
    /// What in-place stores left sealed for readers that read before them (see `seal`).
    pub(crate) seals: Seals,
}

impl<E: Entry> WriterState<E> {
    /// The state of an empty tree.
    #[inline]
    pub(crate) fn new() -> Self {
        WriterState {
            height: 0,
            ledger: Ledger::default(),
            stats: Stats::default(),
            cyclic_wrapped: false,
            append: true,
            three_way: true,
            leaf_split: true,
            saved: SavedPath::default(),
            seals: Seals::new(),
        }
    }
}

impl<E: Entry> Default for WriterState<E> {
    /// The state of an empty tree (made by the tree's first writer).
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// The writer state as a write guard holds it: behind the tree's writer lock (RCU mode), or
/// through `&mut` of the tree with the writer's view of the root it gave (exclusive mode).
pub(crate) enum StateRef<'t, E> {
    Locked(WriterLock<'t, WriterState<E>, E>),
    Exclusive(ExclusiveRoot<'t, WriterState<E>, E>),
}

impl<E> StateRef<'_, E> {
    /// A reader view of the root, for reads borrowed from `&self`.
    #[inline]
    pub(crate) fn view(&self) -> RootRef<'_, Read, E> {
        match self {
            StateRef::Locked(l) => l.view(),
            StateRef::Exclusive(x) => x.view(),
        }
    }

    /// Whether the tree's nodes come from huge-page chunks once it is big.
    pub(crate) fn huge_pages(&self) -> bool {
        match self {
            StateRef::Locked(l) => l.huge_pages(),
            StateRef::Exclusive(x) => x.huge_pages(),
        }
    }
}

impl<E> core::ops::Deref for StateRef<'_, E> {
    type Target = WriterState<E>;
    fn deref(&self) -> &WriterState<E> {
        match self {
            StateRef::Locked(g) => g,
            StateRef::Exclusive(x) => x,
        }
    }
}
