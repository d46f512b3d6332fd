//! Memory held back by readers: retired nodes and released entries whose deferred free has not
//! run yet (RCU mode). The writer counts each one up when it hands it to the epoch collector; the
//! deferred closure counts it down when it frees it. Exclusive-mode writes free at once and are
//! never counted.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};
#[cfg(feature = "std")]
use std::sync::OnceLock;

/// The size of one node (`node` asserts it at compile time), so that the counters report bytes
/// without knowing the node layout.
pub(crate) const NODE_BYTES: usize = 256;

/// The tree's RCU shared state (one `Arc`, because deferred frees and seal lifts may run after
/// the tree is dropped): the pending-frees counters and the seals' lifted generation. The writer
/// (serialised by the tree's lock) counts retirements with a plain load and store; the deferred
/// frees, on any thread, count frees with an atomic add.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Every seal generation `<=` this is lifted (see `seal`: stored by the deferred lift,
    /// Release; loaded by the writer, Acquire).
    pub(crate) lifted: crate::sync::AtomicU64,
    retired_nodes: AtomicUsize,
    freed_nodes: AtomicUsize,
    retired_entries: AtomicUsize,
    freed_entries: AtomicUsize,
}

impl Pending {
    /// The writer retired a node (callers hold the writer lock).
    #[inline]
    pub(crate) fn add_node(&self) {
        let n = self.retired_nodes.load(Ordering::Relaxed);
        self.retired_nodes.store(n + 1, Ordering::Relaxed);
    }

    /// A deferred free of `n` nodes ran, or `n` queued nodes were freed at once (exclusive
    /// mode takes the queue over).
    #[inline]
    pub(crate) fn sub_nodes(&self, n: usize) {
        self.freed_nodes.fetch_add(n, Ordering::Relaxed);
    }

    /// The writer released an entry (callers hold the writer lock).
    #[inline]
    pub(crate) fn add_entry(&self) {
        let n = self.retired_entries.load(Ordering::Relaxed);
        self.retired_entries.store(n + 1, Ordering::Relaxed);
    }

    /// A deferred drop ran.
    #[inline]
    pub(crate) fn sub_entry(&self) {
        self.freed_entries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, entry_size: usize) -> PendingFrees {
        // Frees first: a free counted after the retirement count was read cannot make the
        // difference negative.
        let freed_nodes = self.freed_nodes.load(Ordering::Relaxed);
        let freed_entries = self.freed_entries.load(Ordering::Relaxed);
        let nodes = self
            .retired_nodes
            .load(Ordering::Relaxed)
            .saturating_sub(freed_nodes);
        let entries = self
            .retired_entries
            .load(Ordering::Relaxed)
            .saturating_sub(freed_entries);
        PendingFrees {
            nodes,
            node_bytes: nodes * NODE_BYTES,
            entries,
            entry_bytes: entries * entry_size,
        }
    }
}

/// A tree's [`Pending`] counters, made on first need: only RCU-mode writes count (their
/// retirements and deferred drops), so a tree written only exclusively, or only read (a `dup`
/// copy, a snapshot), never allocates them, and a small tree's creation and drop skip an
/// allocation and its free. Without std (no `OnceLock`) they are made with the tree.
#[derive(Debug, Default)]
pub(crate) struct LazyPending(
    #[cfg(feature = "std")] OnceLock<Arc<Pending>>,
    #[cfg(not(feature = "std"))] Arc<Pending>,
);

impl LazyPending {
    /// The counters, made now if this is their first need.
    #[inline]
    pub(crate) fn get(&self) -> &Arc<Pending> {
        #[cfg(feature = "std")]
        {
            self.0.get_or_init(Arc::default)
        }
        #[cfg(not(feature = "std"))]
        {
            &self.0
        }
    }

    /// The counters, if made.
    #[inline]
    pub(crate) fn made(&self) -> Option<&Arc<Pending>> {
        #[cfg(feature = "std")]
        {
            self.0.get()
        }
        #[cfg(not(feature = "std"))]
        {
            Some(&self.0)
        }
    }

    /// The counters an exclusive-mode write guard of this tree holds: with std one
    /// process-wide placeholder ([`exclusive_placeholder`]), without std the tree's own.
    #[inline]
    pub(crate) fn for_exclusive(&self) -> &Arc<Pending> {
        #[cfg(feature = "std")]
        {
            exclusive_placeholder()
        }
        #[cfg(not(feature = "std"))]
        {
            &self.0
        }
    }
}

/// Every other use (a snapshot, a flush of retired nodes) makes the counters if they are not
/// made yet.
impl core::ops::Deref for LazyPending {
    type Target = Arc<Pending>;

    #[inline]
    fn deref(&self) -> &Arc<Pending> {
        self.get()
    }
}

/// The counters an exclusive-mode write guard holds: exclusive-mode writes free at once and
/// never count (every count of the write paths is an RCU-mode branch), so these stay zero and
/// nobody reads them; one for the process, so that `exclusive()` makes none.
#[cfg(feature = "std")]
fn exclusive_placeholder() -> &'static Arc<Pending> {
    static NONE: OnceLock<Arc<Pending>> = OnceLock::new();
    NONE.get_or_init(Arc::default)
}

/// Memory the tree has retired but not freed yet, because a reader's guard pinned before the
/// retirement may still reach it (see [`MapleTree::pending_frees`](super::MapleTree::pending_frees)).
///
/// A guard that stays pinned for long holds back every node and entry retired meanwhile; these
/// counts make that visible. They drop back as the epoch collector runs the deferred frees, which
/// happens some time after the last such guard is dropped (crossbeam collects in batches, on the
/// threads that pin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PendingFrees {
    /// Retired nodes not freed yet.
    pub nodes: usize,
    /// Their bytes (each node is 256 bytes).
    pub node_bytes: usize,
    /// Released entries not dropped yet.
    pub entries: usize,
    /// Their heap bytes, as [`Entry::HEAP_SIZE`](crate::Entry::HEAP_SIZE) reports them (0 for
    /// [`Value`](crate::Value)).
    pub entry_bytes: usize,
}
