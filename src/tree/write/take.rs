//! The exclusive writer's removals that hand entries back (exclusive mode only: entries are
//! freed at once, so they can be moved out): `take` (one range), `drain_window` and
//! `retain_with`, behind `MapleTree::remove`, `drain`, `split_off` and `retain`.
//!
//! A store that split a range keeps one entry in several ranges (a shared word, counted by the
//! writer's `Ledger`), so what is moved out is decided per word: an entry held by one range only
//! is moved, one still held elsewhere is cloned (`E: Clone`) or left.

use ::alloc::vec::Vec;
use core::ops::RangeInclusive;

use crate::entry::{Entry, Word};

use super::Writer;
use crate::tree::node::Exclusive;
use crate::tree::walk::Walker;

/// Ranges taken out of a window by [`Writer::drain_window`]: the ranges holding an entry, with
/// their entries, and the ranges holding the zero entry, both trimmed to the window.
type Drained<E> = (Vec<(RangeInclusive<u64>, E)>, Vec<RangeInclusive<u64>>);

/// Exclusive mode only: entries are handed back.
impl<E: Entry> Writer<'_, E, Exclusive> {
    /// Erases the range containing `index` and hands its entry back.
    pub(crate) fn take(&mut self, index: u64) -> Option<(RangeInclusive<u64>, E)> {
        let mut wk = self.walker();
        wk.walk(index)?;
        if !wk.word.is_entry() {
            return None;
        }
        let word = Word::<E>::leaf(wk.word.raw());
        let (lo, hi) = (wk.lo, wk.hi);
        if !core::mem::needs_drop::<E>() {
            // No drop glue: the tree does not track shared words, and handing out one more
            // copy of the word is what the `Entry` contract allows for such types.
            self.write_from(&mut wk, true, lo, hi, Word::NULL);
            let copy = self.st.ledger.kept(word);
            return copy
                .and_then(|r| self.root.take_entries(r))
                .map(|e| (lo..=hi, e));
        }
        if self.st.ledger.extra(word) == 0 {
            // One range holds the word (the common case): its release comes back to us.
            self.st.ledger.keep(word);
            self.write_from(&mut wk, true, lo, hi, Word::NULL);
            let r = self.st.ledger.kept(word);
            return r
                .and_then(|r| self.root.take_entries(r))
                .map(|e| (lo..=hi, e));
        }
        // Every range holding the word (more than one if a store split it), and how many of
        // them own a value (the rest are recorded as shared in the ledger).
        let ranges: Vec<(u64, u64)> = {
            let mut v = Vec::new();
            let mut it = self.walker();
            if it.walk(0).is_some() {
                loop {
                    if it.word.raw() == word.raw() {
                        v.push((it.lo, it.hi));
                    }
                    if it.next_slot().is_none() {
                        break;
                    }
                }
            }
            v
        };
        // Keep every release below from dropping the entry: count each range as shared.
        let owned = self.st.ledger.hold(word, ranges.len());
        for &(a, b) in &ranges {
            self.write(a, b, Word::NULL);
        }
        // The removals consumed the held counts; the `owned` values of the word come back.
        let first = self
            .st
            .ledger
            .unhold(word, owned)
            .and_then(|r| self.root.take_entries(r));
        first.map(|e| (lo..=hi, e))
    }

    /// Erases `[first, last]` (trimming ranges that stick out, as `erase_range`) and returns
    /// what it held, in index order. An entry whose range lies inside the window and that no
    /// other range shares is moved out; one sticking out of the window or shared with another
    /// range is cloned, and the erase then drops the tree's copy once no range holds it.
    pub(crate) fn drain_window(&mut self, first: u64, last: u64) -> Drained<E>
    where
        E: Clone,
    {
        // (first, last, clone): `None` for an entry to move out.
        let mut pieces: Vec<(u64, u64, Option<E>)> = Vec::new();
        let mut zeros = Vec::new();
        // A reader's walk of the writer's view (branded: it reads entries; nothing is written
        // until it is done).
        let mut wk = Walker::new(self.view());
        if wk.walk(first).is_some() {
            loop {
                let (a, b) = (wk.lo.max(first), wk.hi.min(last));
                if wk.word.is_entry() {
                    let word = Word::<E>::leaf(wk.word.raw());
                    let inside = wk.lo >= first && wk.hi <= last;
                    if inside && self.st.ledger.extra(word) == 0 {
                        pieces.push((a, b, None));
                    } else {
                        pieces.push((a, b, wk.word.cloned()));
                    }
                } else if wk.word.raw() != 0 {
                    zeros.push(a..=b);
                }
                if wk.hi >= last || wk.next_slot().is_none() {
                    break;
                }
            }
        }
        // Something besides moved entries is left in the window: erase it below.
        let mut left = !zeros.is_empty();
        let mut out = Vec::with_capacity(pieces.len());
        for (a, b, clone) in pieces {
            let entry = match clone {
                Some(e) => {
                    left = true;
                    Some(e)
                }
                // Held by this range only: `take` erases just it and hands the entry back.
                None => self.take(a).map(|(_, e)| e),
            };
            if let Some(e) = entry {
                out.push((a..=b, e));
            }
        }
        if left {
            // What is left in the window: the parts of entries sticking out, shared entries and
            // zero entries (the erase drops an entry's last copy in the tree).
            self.erase_range(first..=last)
                .expect("an inclusive window is a valid range");
        }
        (out, zeros)
    }

    /// Erases every range holding an entry for which `f` is false.
    pub(crate) fn retain_with(&mut self, mut f: impl FnMut(RangeInclusive<u64>, &E) -> bool) {
        let mut drop_ranges = Vec::new();
        // (As in `drain_window`: a branded read walk, before any write.)
        let mut wk = Walker::new(self.view());
        if wk.walk(0).is_some() {
            loop {
                let (lo, hi) = (wk.lo, wk.hi);
                if wk.word.with_entry(|e| f(lo..=hi, e)) == Some(false) {
                    drop_ranges.push((lo, hi));
                }
                if wk.next_slot().is_none() {
                    break;
                }
            }
        }
        for (a, b) in drop_ranges {
            self.erase_range(a..=b)
                .expect("a stored range is a valid range");
        }
    }
}
