//! The node itself ([`Node`]: 256 bytes, a parent word and 31 data words), its [`Kind`]s and
//! word accessors, and the prefetch of a node's lines.

use super::*;

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
    /// Under loom: allocation tracking (a node never freed is reported as leaked).
    #[cfg(loom)]
    pub(super) _track: crate::sync::Track,
    /// Under loom: the liveness word every access checks and `Drop` poisons (see `Drop`).
    #[cfg(loom)]
    pub(super) alive: crate::sync::PoisonCell,
}

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<Node>() == crate::tree::pending::NODE_BYTES);

/// How far from the walk's node another node must lie for [`NodeRef::prefetch_child`] to ask
/// for it: one chunk of the slab.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
pub(super) const FAR: usize = 64 << 10;

/// Asks the CPU for the four cache lines of the node at `addr` (x86-64; elsewhere, and under
/// loom and Miri, nothing). A hint only: a prefetch never faults and nothing is read, so any
/// address will do.
#[inline(always)]
pub(super) fn prefetch_node(addr: usize) {
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
    pub(super) fn new() -> Self {
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
    pub(super) fn update(&mut self, i: usize, f: impl FnOnce(u64) -> u64) -> u64 {
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
    pub(super) fn update_words(
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
    pub(super) fn end_mut(&mut self, pivots: usize, max: u64) -> usize {
        (0..pivots)
            .find(|&i| self.update(i, |p| p) >= max)
            .unwrap_or(pivots)
    }

    /// Under loom: asserts the node is not freed, and records a read of its liveness word, so a
    /// free that does not happen-after this access is reported by loom as a causality violation.
    #[cfg(loom)]
    #[inline]
    pub(super) fn check_alive(&self) {
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
