//! The node itself ([`Node`]: 256 bytes, a parent word and 31 data words), its [`Kind`]s and
//! word accessors, and the prefetch of a node's lines.

use super::*;
use crate::sync::{with_word_mut, Liveness};

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
    pub(super) const fn slot_base(self) -> usize {
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
    pub(super) parent: AtomicUsize,
    pub(super) words: [AtomicU64; WORDS],
    /// Under loom: allocation tracking and the liveness word every access checks and the
    /// node's drop poisons (see [`Liveness`]); nothing (zero-sized) in every other build.
    pub(super) live: Liveness,
}

const _: () = assert!(
    !crate::sync::PLAIN_NODES || core::mem::size_of::<Node>() == crate::tree::pending::NODE_BYTES
);

/// How far from the walk's node another node must lie for [`NodeRef::prefetch_child`] to ask
/// for it: one chunk of the slab.
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(super) const FAR: usize = 64 << 10;

/// Asks the CPU for the four cache lines of the node at `addr` (x86-64; elsewhere, and under
/// loom, whose nodes are not [plain](crate::sync::PLAIN_NODES), and Miri, nothing). A hint
/// only: a prefetch never faults and nothing is read, so any address will do.
#[inline(always)]
pub(super) fn prefetch_node(addr: usize) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if crate::sync::PLAIN_NODES {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = core::ptr::without_provenance::<i8>(addr);
        for line in 0..core::mem::size_of::<Node>() / 64 {
            // SAFETY: a prefetch never faults and has no effect the program can observe, at
            // any address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * line)) };
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = addr;
}

impl Node {
    /// A zeroed node (with plain nodes, the slab's memory zeroed in place is the same node).
    pub(super) fn new() -> Self {
        Node {
            parent: AtomicUsize::new(0),
            words: core::array::from_fn(|_| AtomicU64::new(0)),
            live: Liveness::new(),
        }
    }

    /// Replaces data word `i` of a node only its owner can reach (`&mut`) by `f(word)`; returns
    /// the new word.
    #[inline]
    pub(super) fn update(&mut self, i: usize, f: impl FnOnce(u64) -> u64) -> u64 {
        with_word_mut(&mut self.words[i], |w| {
            *w = f(*w);
            *w
        })
    }

    /// [`update`](Self::update) for every word of `range`, in order (`f` gets the index in the
    /// range and the word).
    #[inline]
    pub(super) fn update_words(
        &mut self,
        range: core::ops::RangeInclusive<usize>,
        mut f: impl FnMut(usize, u64) -> u64,
    ) {
        for (i, w) in self.words[range].iter_mut().enumerate() {
            with_word_mut(w, |w| *w = f(i, *w));
        }
    }

    /// The end (as [`NodeRef::end`] derives it) of a node only its owner can reach, with
    /// `pivots` pivots and implied max `max`.
    #[inline]
    pub(super) fn end_mut(&mut self, pivots: usize, max: u64) -> usize {
        (0..pivots)
            .find(|&i| self.update(i, |p| p) >= max)
            .unwrap_or(pivots)
    }
}
