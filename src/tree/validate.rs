//! `mt_validate`: every invariant the kernel's `mt_validate` checks, plus height, parent links,
//! gap values, "no non-rightmost leaf ends in NULL", and entry ownership. One checker, used by
//! unit, property, fuzz, loom and stress tests; a walk in pre-order, one function per kind of
//! check (the parent slot, the node's shape, each slot's limits, leaf slots, children and their
//! gaps, the end).

use crate::entry::{is_reserved_word, Entry, ZERO_WORD};
use crate::error::ValidateError;
/// Without std (core and alloc have no hash map): a `BTreeMap`.
#[cfg(not(feature = "std"))]
use alloc::collections::BTreeMap as HashMap;
use alloc::format;
use core::fmt;
#[cfg(feature = "std")]
use std::collections::HashMap;

use super::gap::leaf_max_gap;
use super::node::{Kind, NodeRef, Read, RootRef};
use super::state::WriterState;
use super::write::WriteGuard;

struct Checker {
    internal: Kind,
    height: usize,
    prev_word: Option<usize>,
    /// Count slot words (only needed to check shared entries, when there are any).
    count_words: bool,
    words: HashMap<usize, usize>,
    /// Leaf slots holding an entry or the zero entry.
    entries: usize,
    /// Nodes reached.
    nodes: u64,
}

macro_rules! bad {
    ($($t:tt)*) => { return Err(ValidateError(format!($($t)*))) };
}

/// Where a check is: the node's kind, its range and its depth (the tail of every message).
#[derive(Clone, Copy)]
struct Here {
    kind: Kind,
    min: u64,
    max: u64,
    depth: usize,
}

impl fmt::Display for Here {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Here {
            kind,
            min,
            max,
            depth,
        } = *self;
        write!(f, "{} [{min:#x}, {max:#x}] depth {depth}", kind.name())
    }
}

impl Checker {
    /// Checks the subtree of `n` (covering `[min, max]`, at `depth`; `parent`: the parent's
    /// address and this node's offset in it) and returns its largest gap (`mt_validate`'s
    /// `mas_validate_*` checks, node by node in pre-order).
    fn node(
        &mut self,
        n: NodeRef<'_>,
        min: u64,
        max: u64,
        depth: usize,
        parent: Option<(usize, usize)>,
    ) -> Result<u64, ValidateError> {
        let at = Here {
            kind: n.kind(),
            min,
            max,
            depth,
        };
        validate_parent_slot(n, parent, at)?;
        self.nodes += 1;
        let end = self.validate_shape(n, parent.is_some(), at)?;
        let mut lo = min;
        let mut max_gap = 0u64;
        for i in 0..=end {
            let hi = validate_limits(n, i, end, lo, at)?;
            if n.is_leaf() {
                self.validate_leaf_slot(n, i, hi, at)?;
            } else {
                let g = self.validate_child(n, i, lo, hi, at)?;
                max_gap = max_gap.max(g);
            }
            lo = hi.wrapping_add(1);
        }
        validate_end(n, end, at)?;
        if n.is_leaf() {
            max_gap = leaf_max_gap(n, min, max);
        }
        Ok(max_gap)
    }

    /// The node's place in the tree: leaves exactly at the bottom, internal nodes of the tree's
    /// kind, no underfull node but the root and those on the right edge. Returns the node end.
    fn validate_shape(
        &self,
        n: NodeRef<'_>,
        has_parent: bool,
        at: Here,
    ) -> Result<usize, ValidateError> {
        let kind = at.kind;
        if n.is_leaf() != (at.depth + 1 == self.height) {
            bad!(
                "leaf at depth {} in a tree of height {}: {at}",
                at.depth,
                self.height
            );
        }
        if !n.is_leaf() && kind != self.internal {
            bad!("internal node of the wrong kind: {at}");
        }
        let end = n.end(at.max);
        if end < kind.min_end() && at.max != u64::MAX && has_parent {
            bad!("underfull: end {end} < {}: {at}", kind.min_end());
        }
        Ok(end)
    }

    /// Leaf slot `i` ending at `hi` (`mt_validate_nulls` and the entry counts): no reserved word,
    /// no two adjacent NULL ranges (across leaves too); counts entries and, if needed, words.
    fn validate_leaf_slot(
        &mut self,
        n: NodeRef<'_>,
        i: usize,
        hi: u64,
        at: Here,
    ) -> Result<(), ValidateError> {
        let w = n.slot(i);
        if w != 0 && w != ZERO_WORD && is_reserved_word(w) {
            bad!("reserved word {w:#x} in slot {i}: {at}");
        }
        if w == 0 && self.prev_word == Some(0) {
            bad!("adjacent NULL ranges ending at {hi:#x}: {at}");
        }
        self.prev_word = Some(w);
        if w != 0 {
            self.entries += 1;
        }
        if w != 0 && self.count_words {
            *self.words.entry(w).or_insert(0) += 1;
        }
        Ok(())
    }

    /// Child `i` of an internal node, covering `[lo, hi]`: present, valid itself, and (in an
    /// allocation tree) with the gap its parent records (`mas_validate_gaps`). Returns its
    /// largest gap.
    fn validate_child(
        &mut self,
        n: NodeRef<'_>,
        i: usize,
        lo: u64,
        hi: u64,
        at: Here,
    ) -> Result<u64, ValidateError> {
        let Some(c) = n.try_child(i, self.internal) else {
            bad!("empty internal slot {i}: {at}");
        };
        let g = self.node(c, lo, hi, at.depth + 1, Some((n.addr(), i)))?;
        if at.kind == Kind::ARange && n.gap(i) != g {
            bad!(
                "gap {i} = {} but child's largest gap is {g}: {at}",
                n.gap(i)
            );
        }
        Ok(g)
    }
}

/// A live node whose parent word names its parent and its offset there
/// (`mas_validate_parent_slot`); the root has none.
fn validate_parent_slot(
    n: NodeRef<'_>,
    parent: Option<(usize, usize)>,
    at: Here,
) -> Result<(), ValidateError> {
    if n.is_dead() {
        bad!("dead node reachable: {at}");
    }
    let (paddr, poff) = n.parent_info();
    match parent {
        None if paddr != 0 => bad!("root has a parent: {at}"),
        Some((a, o)) if paddr != a || poff != o => {
            bad!("parent link {paddr:#x}/{poff} should be {a:#x}/{o}: {at}")
        }
        _ => Ok(()),
    }
}

/// Slot `i` (of a node whose end is `end`) starting at `lo` (`mas_validate_limits`): its pivot
/// below the node's max before the end, a non-empty range, no zero pivot past slot 0. Returns
/// the slot's upper bound.
fn validate_limits(
    n: NodeRef<'_>,
    i: usize,
    end: usize,
    lo: u64,
    at: Here,
) -> Result<u64, ValidateError> {
    let p = at.kind.pivots();
    let hi = if i < p {
        n.pivot(i).min(at.max)
    } else {
        at.max
    };
    if i < end && i < p {
        let piv = n.pivot(i);
        if piv >= at.max {
            bad!("pivot {i} = {piv:#x} reaches max before the end: {at}");
        }
    }
    if hi < lo {
        bad!("slot {i} empty range [{lo:#x}, {hi:#x}]: {at}");
    }
    if i > 0 && i < p && n.pivot(i) == 0 {
        bad!("zero pivot at {i}: {at}");
    }
    Ok(hi)
}

/// The end: its pivot, if it has one, is the node's max; a leaf that is not the rightmost does
/// not end in NULL. Words beyond the end are unspecified (an append split truncates a node by
/// lowering its parent's pivot, leaving its tail in place); nothing reads them.
fn validate_end(n: NodeRef<'_>, end: usize, at: Here) -> Result<(), ValidateError> {
    if end < at.kind.pivots() && n.pivot(end) != at.max {
        bad!("pivot[end={end}] = {:#x} != max: {at}", n.pivot(end));
    }
    if n.is_leaf() && at.max != u64::MAX && n.slot(end) == 0 {
        bad!("non-rightmost leaf ends in NULL: {at}");
    }
    Ok(())
}

impl<E: Entry> WriteGuard<'_, E> {
    /// Checks every invariant (see [`MapleTree::validate`](crate::MapleTree::validate)).
    ///
    /// # Errors
    ///
    /// A [`ValidateError`] naming the first broken invariant and where it was found.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// for i in 0..1000 {
    ///     w.store_range(i * 10..=i * 10 + 4, Value::new(i))?;
    /// }
    /// w.validate()?; // not `tree.validate()`: that would wait for the lock `w` holds
    /// # Ok(())
    /// # }
    /// ```
    pub fn validate(&self) -> Result<(), ValidateError> {
        check(self.view(), self.internal, self.state(), self.len())
    }
}

/// [`WriteGuard::validate`] on the parts it reads: the root, the internal node kind, the
/// writer state and the tree's count of ranges holding an entry.
fn check<E: Entry>(
    root: RootRef<'_, Read, E>,
    internal: Kind,
    st: &WriterState<E>,
    len: usize,
) -> Result<(), ValidateError> {
    // (The checks read words, never entries: the brand goes.)
    let root = root.unbranded();
    let Some(r) = root.node() else {
        if st.height != 0 {
            bad!("empty tree with height {}", st.height);
        }
        if !st.ledger.no_shared() {
            bad!("empty tree with shared entries recorded");
        }
        if len != 0 {
            bad!("empty tree with len {len}");
        }
        let live = st.stats.nodes_allocated.wrapping_sub(st.stats.nodes_freed);
        if live != 0 {
            bad!("empty tree with {live} nodes allocated and not retired");
        }
        return Ok(());
    };
    let mut c = Checker {
        internal,
        height: st.height,
        prev_word: None,
        count_words: !st.ledger.no_shared(),
        words: HashMap::new(),
        entries: 0,
        nodes: 0,
    };
    c.node(r.view(), 0, u64::MAX, 0, None)?;
    if c.entries != len {
        bad!("len {len} but {} ranges hold an entry", c.entries);
    }
    let live = st.stats.nodes_allocated.wrapping_sub(st.stats.nodes_freed);
    if c.nodes != live {
        bad!(
            "{} nodes reachable but {live} allocated and not retired ({} allocated, {} retired)",
            c.nodes,
            st.stats.nodes_allocated,
            st.stats.nodes_freed
        );
    }
    for (w, extra) in st.ledger.shared() {
        let seen = c.words.get(&w).copied().unwrap_or(0);
        if seen < extra + 1 {
            bad!(
                "entry {w:#x} recorded as shared by {} slots but found in {seen}",
                extra + 1
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Word;
    use crate::tree::node::Live;
    use crate::tree::write::AnyWriter;
    use crate::{MapleTree, Value};

    /// An allocation tree of height 2: ranges `[10i, 10i + 5]` (entries) and `[10i + 6, 10i + 9]`
    /// (gaps) under one `arange_64` root.
    fn two_levels() -> MapleTree<Value> {
        let t = MapleTree::new_alloc();
        for i in 0..40u64 {
            t.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
        }
        t.validate().unwrap();
        t
    }

    /// Breaks the tree with `corrupt` (given the root and its first child, a leaf, which returns
    /// the undo), checks that validation fails with a message containing `want`, and undoes it.
    fn caught(
        want: &str,
        corrupt: impl for<'a> FnOnce(Live<'a>, Live<'a>) -> Box<dyn FnOnce() + 'a>,
    ) {
        let mut t = two_levels();
        let mut g = t.exclusive();
        {
            let AnyWriter::Exclusive(w) = g.any_writer() else {
                unreachable!("an exclusive guard")
            };
            let root = w.root.node().unwrap();
            assert_eq!(root.kind(), Kind::ARange);
            let leaf = root.child(0, w.internal);
            assert!(leaf.is_leaf());
            let undo = corrupt(root, leaf);
            let len = w.len.load(core::sync::atomic::Ordering::Relaxed);
            let err = check(w.view(), w.internal, w.st, len).expect_err(want);
            assert!(err.0.contains(want), "{err} does not say {want:?}");
            undo();
            check(w.view(), w.internal, w.st, len).unwrap();
        }
        g.validate().unwrap();
    }

    #[test]
    fn catches_a_wrong_gap() {
        caught("but child's largest gap is", |root, _| {
            let g = root.gap(0);
            root.set_gap(0, g + 1);
            Box::new(move || root.set_gap(0, g))
        });
    }

    #[test]
    fn catches_a_wrong_parent_slot() {
        caught("parent link", |root, leaf| {
            leaf.set_parent(Some(root), 1);
            Box::new(move || leaf.set_parent(Some(root), 0))
        });
    }

    #[test]
    fn catches_an_empty_internal_slot() {
        caught("empty internal slot 1", |root, _| {
            let c = root.child(1, Kind::ARange);
            root.clear_slot(1);
            Box::new(move || root.init_child(1, c))
        });
    }

    #[test]
    fn catches_an_empty_range() {
        // Pivot 2 (15) below slot 2's start (10).
        caught("slot 2 empty range", |_, leaf| {
            let p = leaf.pivot(2);
            leaf.init_pivot(2, 3);
            Box::new(move || leaf.init_pivot(2, p))
        });
    }

    #[test]
    fn catches_adjacent_nulls() {
        // Slot 0 ([0, 5]) emptied next to the gap [6, 9].
        caught("adjacent NULL ranges", |_, leaf| {
            let w = Word::<Value>::leaf(leaf.slot(0));
            leaf.init_entry(0, Word::<Value>::NULL);
            Box::new(move || leaf.init_entry(0, w))
        });
    }

    #[test]
    fn catches_a_reserved_word() {
        caught("reserved word", |_, leaf| {
            let w = Word::<Value>::leaf(leaf.slot(0));
            leaf.init_entry(0, Word::<Value>::leaf(8));
            Box::new(move || leaf.init_entry(0, w))
        });
    }

    #[test]
    fn catches_a_wrong_end_pivot() {
        // The leaf's end pivot above its max (the parent's pivot 0): the end stays where it
        // was, its pivot no longer matches.
        caught("!= max", |root, leaf| {
            let max = root.pivot(0);
            let end = leaf.end(max);
            assert!(end < leaf.kind().pivots(), "the first leaf is full");
            leaf.init_pivot(end, max + 1);
            Box::new(move || leaf.init_pivot(end, max))
        });
    }

    #[test]
    fn catches_a_leaf_ending_in_null() {
        // Slot `end - 1` (a gap) takes slot `end`'s entry, slot `end` becomes NULL.
        caught("non-rightmost leaf ends in NULL", |root, leaf| {
            let end = leaf.end(root.pivot(0));
            let word = |i| Word::<Value>::leaf(leaf.slot(i));
            let (a, b) = (word(end - 1), word(end));
            leaf.init_entry(end - 1, b);
            leaf.init_entry(end, Word::<Value>::NULL);
            Box::new(move || {
                leaf.init_entry(end - 1, a);
                leaf.init_entry(end, b);
            })
        });
    }

    #[test]
    fn catches_a_wrong_len() {
        // The gap [6, 9] holds slot 0's entry too: one entry more than the tree counts.
        caught("ranges hold an entry", |_, leaf| {
            let w = leaf.slot(1);
            leaf.init_entry(1, Word::<Value>::leaf(leaf.slot(0)));
            Box::new(move || leaf.init_entry(1, Word::<Value>::leaf(w)))
        });
    }
}
