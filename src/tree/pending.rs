//! Memory held back by readers: retired nodes and released entries whose deferred free has not
//! run yet (RCU mode). The writer counts each one up when it hands it to the epoch collector; the
//! deferred closure counts it down when it frees it. Exclusive-mode writes free at once and are
//! never counted.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::node::Node;

/// The shared counters (an `Arc`, because deferred frees may run after the tree is dropped).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    nodes: AtomicUsize,
    entries: AtomicUsize,
    entry_bytes: AtomicUsize,
}

impl Pending {
    #[inline]
    pub(crate) fn add_node(&self) {
        self.nodes.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn sub_node(&self) {
        self.nodes.fetch_sub(1, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn add_entry(&self, bytes: usize) {
        self.entries.fetch_add(1, Ordering::Relaxed);
        self.entry_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn sub_entry(&self, bytes: usize) {
        self.entries.fetch_sub(1, Ordering::Relaxed);
        self.entry_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> PendingFrees {
        let nodes = self.nodes.load(Ordering::Relaxed);
        PendingFrees {
            nodes,
            node_bytes: nodes * core::mem::size_of::<Node>(),
            entries: self.entries.load(Ordering::Relaxed),
            entry_bytes: self.entry_bytes.load(Ordering::Relaxed),
        }
    }
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
