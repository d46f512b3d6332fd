//! The big-node item buffer (the kernel's `struct maple_big_node`): the slots of a level being
//! rebuilt, as `(upper bound, slot, gap)` items, before they are partitioned into nodes; and
//! the leaf image a write inside one leaf is classified on ([`LeafWrite`], the kernel's
//! `ma_wr_state`).

use smallvec::SmallVec;

use crate::tree::node::Write;
use crate::tree::node::{Fresh, Live, Slot, RANGE_PIVOTS, RANGE_SLOTS};
use crate::tree::walk::Level;

/// One slot of a level being rebuilt: its upper bound, its word (entry or child node) and, for
/// children of allocation trees, the child's largest gap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item<'g> {
    pub(crate) hi: u64,
    pub(crate) slot: Slot<'g, Write>,
    pub(crate) gap: u64,
}

impl<'g> Item<'g> {
    /// A leaf slot holding the entry word `word` (leaves keep no gaps per slot).
    #[inline]
    pub(crate) const fn slot(hi: u64, word: usize) -> Self {
        Item {
            hi,
            slot: Slot::Entry(word),
            gap: 0,
        }
    }

    /// An internal slot holding the fresh node `child` (handed over to the fresh parent these
    /// items are written into), whose largest gap is `gap`.
    #[inline]
    pub(crate) fn fresh(hi: u64, child: Fresh<'g>, gap: u64) -> Self {
        Self::child(hi, child.into_child(), gap)
    }

    /// An internal slot holding `child`, whose largest gap is `gap`.
    #[inline]
    pub(crate) const fn child(hi: u64, child: Live<'g>, gap: u64) -> Self {
        Item {
            hi,
            slot: Slot::Child(child),
            gap,
        }
    }

    /// An empty leaf slot.
    #[inline]
    pub(crate) fn is_null(&self) -> bool {
        self.slot.is_null()
    }
}

/// The items of a level being rebuilt.
#[derive(Clone, Default)]
pub(crate) struct Items<'g>(SmallVec<[Item<'g>; 48]>);

impl<'g> Items<'g> {
    pub(crate) fn new() -> Self {
        Items(SmallVec::new())
    }
    #[inline]
    pub(crate) fn push(&mut self, it: Item<'g>) {
        self.0.push(it);
    }
    pub(crate) fn extend(&mut self, other: &[Item<'g>]) {
        self.0.extend_from_slice(other);
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Item<'g> {
        self.0[i]
    }
    pub(crate) fn last(&self) -> Item<'g> {
        self.0[self.0.len() - 1]
    }
    pub(crate) fn truncate(&mut self, n: usize) {
        self.0.truncate(n);
    }
    pub(crate) fn as_slice(&self) -> &[Item<'g>] {
        &self.0
    }
    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [Item<'g>] {
        &mut self.0
    }
}

/// A write of `entry` over `[first, last]` inside one leaf, as the store classifies it (the
/// kernel's `ma_wr_state`): the leaf's slots (`his`/`ws`, the upper bounds and words; read up to
/// the sixteenth, meaningful within its end), the first and last slot the write touches (`off`,
/// `off_end`), the range those slots cover (`r_min`, `end_piv`) and the leaf's end after the
/// write (`new_end`).
pub(crate) struct LeafWrite {
    pub(crate) his: [u64; RANGE_SLOTS],
    pub(crate) ws: [usize; RANGE_SLOTS],
    pub(crate) end: usize,
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) off: usize,
    pub(crate) off_end: usize,
    pub(crate) first: u64,
    pub(crate) last: u64,
    pub(crate) entry: usize,
    pub(crate) r_min: u64,
    pub(crate) end_piv: u64,
    pub(crate) new_end: usize,
    /// A NULL write whose widened range reaches the max of a leaf that is not the rightmost one:
    /// the leaf would end in NULL, so a rebuild merges it with the next (the fields after
    /// `first`/`last` are then not computed).
    pub(crate) ends_in_null: bool,
}

impl LeafWrite {
    /// What the write puts where its slots `off..=off_end` were, in index order, each given to
    /// `f` as `(lo, hi, word)`: the part of the first slot left of `first` (if any), the entry,
    /// the part of the last slot right of `last` (if any).
    #[inline(always)]
    pub(crate) fn for_each_piece(&self, mut f: impl FnMut(u64, u64, usize)) {
        if self.r_min < self.first {
            f(self.r_min, self.first - 1, self.ws[self.off]);
        }
        f(self.first, self.last, self.entry);
        if self.last < self.end_piv {
            f(self.last + 1, self.end_piv, self.ws[self.off_end]);
        }
    }

    /// The lower bound of slot `i` (within the end).
    #[inline(always)]
    pub(crate) fn lo(&self, i: usize) -> u64 {
        if i == 0 {
            self.min
        } else {
            self.his[i - 1].wrapping_add(1)
        }
    }

    /// The leaf's slots once the write is done, from slot `from` on (`from <= off`), each given
    /// to `f` as `(hi, word)`: the slots before the write as they are, the write's pieces, the
    /// slots after it.
    #[inline(always)]
    pub(crate) fn for_each_slot_after(&self, from: usize, mut f: impl FnMut(u64, usize)) {
        for i in from..self.off {
            f(self.his[i], self.ws[i]);
        }
        self.for_each_piece(|_, hi, w| f(hi, w));
        for i in self.off_end + 1..=self.end {
            f(self.his[i], self.ws[i]);
        }
    }

    /// An empty image, for [`read`](Self::read).
    #[inline]
    pub(crate) fn empty() -> Self {
        LeafWrite {
            his: [0; RANGE_SLOTS],
            ws: [0; RANGE_SLOTS],
            end: 0,
            min: 0,
            max: 0,
            off: 0,
            off_end: 0,
            first: 0,
            last: 0,
            entry: 0,
            r_min: 0,
            end_piv: 0,
            new_end: 0,
            ends_in_null: false,
        }
    }

    /// Reads the leaf of `leaf` (whose slot `leaf.offset` holds `first`) and classifies the
    /// write into `self`; a NULL write is widened over empty neighbours (`mas_wr_extend_null`).
    /// Filled in place: it is 350 bytes, and returning it by value cost a `memcpy` per store.
    /// Always inlined into its one caller (`leaf_store`, one copy per write mode).
    #[inline(always)]
    pub(crate) fn read(&mut self, leaf: Level<'_, Write>, first: u64, last: u64, entry: usize) {
        let n = leaf.node;
        let (min, max) = (leaf.min, leaf.max);
        let l = self;
        // All sixteen slots, whatever the end (the words beyond it are read and not used): a
        // loop of fixed length, cheaper than one to the end; the end is then the first bound at
        // the max (the first pivot `>= max`, as `end`), found without loading a pivot again.
        for i in 0..RANGE_PIVOTS {
            l.his[i] = n.range_pivot(i).min(max);
            l.ws[i] = n.range_slot(i);
        }
        l.his[RANGE_PIVOTS] = max;
        l.ws[RANGE_PIVOTS] = n.range_slot(RANGE_PIVOTS);
        let end = l.his[..RANGE_PIVOTS]
            .iter()
            .position(|&h| h == max)
            .unwrap_or(RANGE_PIVOTS);
        debug_assert_eq!(end, n.end(max));
        (l.end, l.min, l.max, l.off, l.off_end) = (end, min, max, leaf.offset, leaf.offset);
        (l.first, l.last, l.entry, l.ends_in_null) = (first, last, entry, false);
        while l.off_end < end && l.his[l.off_end] < last {
            l.off_end += 1;
        }
        if entry == 0 && !l.widen_null() {
            l.ends_in_null = true;
        } else {
            l.r_min = l.lo(l.off);
            l.end_piv = l.his[l.off_end];
            l.new_end = end + 2
                - (l.off_end - l.off)
                - usize::from(l.r_min == l.first)
                - usize::from(l.end_piv == l.last);
        }
    }

    /// NULL widening within the leaf (`mas_wr_extend_null`); `false` if the leaf would end in
    /// NULL without being the rightmost one.
    #[inline(always)]
    fn widen_null(&mut self) -> bool {
        let (off, off_end, ws) = (self.off, self.off_end, &self.ws);
        if ws[off] == 0 {
            self.first = self.lo(off);
        } else if self.first == self.lo(off) && off > 0 && ws[off - 1] == 0 {
            self.off -= 1;
            self.first = self.lo(self.off);
        }
        if ws[off_end] == 0 {
            self.last = self.his[off_end];
        } else if self.last == self.his[off_end] && off_end < self.end && ws[off_end + 1] == 0 {
            self.off_end += 1;
            self.last = self.his[self.off_end];
        }
        !(self.last == self.max && self.max != u64::MAX)
    }
}
