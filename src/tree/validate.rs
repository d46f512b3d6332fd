//! `mt_validate`: every invariant the kernel's `mt_validate` checks, plus height, parent links,
//! gap values, "no non-rightmost leaf ends in NULL", and entry ownership. One checker, used by unit, property,
//! fuzz, loom and stress tests.

use std::collections::HashMap;
use std::fmt;

use crate::entry::{is_reserved_word, Entry, ZERO_WORD};

use super::gap::leaf_max_gap;
use super::node::{Kind, NodeRef};
use super::write::WriteGuard;

/// A broken invariant, with where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValidateError(pub String);

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "maple tree invalid: {}", self.0)
    }
}

impl std::error::Error for ValidateError {}

struct Checker {
    internal: Kind,
    height: usize,
    prev_word: Option<usize>,
    /// Count slot words (only needed to check shared entries, when there are any).
    count_words: bool,
    words: HashMap<usize, usize>,
    /// Leaf slots holding an entry or the zero entry.
    entries: usize,
}

macro_rules! bad {
    ($($t:tt)*) => { return Err(ValidateError(format!($($t)*))) };
}

impl Checker {
    fn node(
        &mut self,
        n: NodeRef<'_>,
        min: u64,
        max: u64,
        depth: usize,
        parent: Option<(usize, usize)>,
    ) -> Result<u64, ValidateError> {
        let kind = n.kind();
        let at = || format!("{} [{min:#x}, {max:#x}] depth {depth}", kind.name());
        if n.is_dead() {
            bad!("dead node reachable: {}", at());
        }
        let (paddr, poff) = n.parent_info();
        match parent {
            None if paddr != 0 => bad!("root has a parent: {}", at()),
            Some((a, o)) if paddr != a || poff != o => {
                bad!(
                    "parent link {paddr:#x}/{poff} should be {a:#x}/{o}: {}",
                    at()
                )
            }
            _ => {}
        }
        if n.is_leaf() != (depth + 1 == self.height) {
            bad!(
                "leaf at depth {depth} in a tree of height {}: {}",
                self.height,
                at()
            );
        }
        if !n.is_leaf() && kind != self.internal {
            bad!("internal node of the wrong kind: {}", at());
        }
        let p = kind.pivots();
        let end = n.end(max);
        if end < kind.min_end() && max != u64::MAX && parent.is_some() {
            bad!("underfull: end {end} < {}: {}", kind.min_end(), at());
        }
        let mut lo = min;
        let mut max_gap = 0u64;
        for i in 0..=end {
            let hi = if i < p { n.pivot(i).min(max) } else { max };
            if i < end && i < p {
                let piv = n.pivot(i);
                if piv >= max {
                    bad!("pivot {i} = {piv:#x} reaches max before the end: {}", at());
                }
            }
            if hi < lo {
                bad!("slot {i} empty range [{lo:#x}, {hi:#x}]: {}", at());
            }
            if i > 0 && i < p && n.pivot(i) == 0 {
                bad!("zero pivot at {i}: {}", at());
            }
            let w = n.slot(i);
            if n.is_leaf() {
                if w != 0 && w != ZERO_WORD && is_reserved_word(w) {
                    bad!("reserved word {w:#x} in slot {i}: {}", at());
                }
                if w == 0 && self.prev_word == Some(0) {
                    bad!("adjacent NULL ranges ending at {hi:#x}: {}", at());
                }
                self.prev_word = Some(w);
                if w != 0 {
                    self.entries += 1;
                }
                if w != 0 && self.count_words {
                    *self.words.entry(w).or_insert(0) += 1;
                }
            } else {
                let Some(c) = n.try_child(i, self.internal) else {
                    bad!("empty internal slot {i}: {}", at());
                };
                let g = self.node(c, lo, hi, depth + 1, Some((n.addr(), i)))?;
                if kind == Kind::ARange {
                    if n.gap(i) != g {
                        bad!(
                            "gap {i} = {} but child's largest gap is {g}: {}",
                            n.gap(i),
                            at()
                        );
                    }
                    max_gap = max_gap.max(g);
                }
            }
            lo = hi.wrapping_add(1);
        }
        if end < p && n.pivot(end) != max {
            bad!("pivot[end={end}] = {:#x} != max: {}", n.pivot(end), at());
        }
        // Words beyond the end are unspecified (an append split truncates a node by lowering
        // its parent's pivot, leaving its tail in place); nothing reads them.
        if n.is_leaf() {
            if max != u64::MAX && n.slot(end) == 0 {
                bad!("non-rightmost leaf ends in NULL: {}", at());
            }
            max_gap = leaf_max_gap(n, min, max);
        }
        Ok(max_gap)
    }
}

impl<E: Entry> WriteGuard<'_, E> {
    /// Checks every invariant (see [`MapleTree::validate`](crate::MapleTree::validate)).
    ///
    /// # Errors
    ///
    /// A [`ValidateError`] naming the first broken invariant and where it was found.
    pub fn validate(&self) -> Result<(), ValidateError> {
        let Some(r) = self.view().node() else {
            if self.state().height != 0 {
                bad!("empty tree with height {}", self.state().height);
            }
            if !self.state().multi.is_empty() {
                bad!("empty tree with shared entries recorded");
            }
            if !self.is_empty() {
                bad!("empty tree with len {}", self.len());
            }
            return Ok(());
        };
        let mut c = Checker {
            internal: self.internal,
            height: self.state().height,
            prev_word: None,
            count_words: !self.state().multi.is_empty(),
            words: HashMap::new(),
            entries: 0,
        };
        c.node(r.view(), 0, u64::MAX, 0, None)?;
        if c.entries != self.len() {
            bad!("len {} but {} ranges hold an entry", self.len(), c.entries);
        }
        for (w, extra) in &self.state().multi {
            let seen = c.words.get(w).copied().unwrap_or(0);
            if seen < extra + 1 {
                bad!(
                    "entry {w:#x} recorded as shared by {} slots but found in {seen}",
                    extra + 1
                );
            }
        }
        Ok(())
    }
}
