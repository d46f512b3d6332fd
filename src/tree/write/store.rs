//! The store (`mas_store` and `mas_wr_store_type`): walks to the leaf holding `first`, then
//! sends the write down one path, each in its own module:
//!
//! | path | module | exclusive (`&mut`) | RCU (`&self` + lock) | why it is safe under readers |
//! |---|---|---|---|---|
//! | exact fit | `exact_fit` | in place | in place | one Release store of the slot |
//! | append `+1` at the end | `append` | in place | in place | new slot/pivot written beyond the end, then the old end pivot lowered by one Release store |
//! | three-way append | `append` | in place | in place | two new slots and their pivots beyond the end, then the old end pivot lowered last |
//! | append `+1` at the start | `append` | in place | node store | it moves a boundary of a range that stays visible |
//! | slot store (2 or 3 slots) | `slot_store` | in place | node store | same |
//! | node store | `node_store` | in place | fresh leaf, one pointer publish | readers see the old or the new leaf |
//! | append split | `append_split` | truncation | truncation, or copy-on-write | see the module |
//! | leaf split | `split` (`wr_leaf_split`) | left parts in place, one fresh node per level split, the slots of the ancestor with room moved in place | fresh nodes and a copy of the ancestor with room, one pointer publish | readers see the old or the new subtree |
//! | split, rebalance | `rebuild` (`split`, `rebalance`) | fresh nodes | fresh nodes, one pointer publish | readers see the old or the new subtree |
//! | spanning store | `spanning` → `rebuild` | fresh nodes | fresh nodes, one pointer publish | same |
//!
//! Readers find a node's end from its pivots only (see `node`), which is what makes both appends
//! safe: until the old end pivot is lowered, every slot beyond it is unreachable, and once it is
//! lowered everything beyond it is already written. The public write API of the write guard
//! (`store_range`, `insert_range`, `erase`, `clear`, ...) is here too.

use crate::entry::{Entry, Owned, Word};
use crate::error::Error;

use super::append_split::LastSlot;
use super::big_node::{Item, Items, LeafWrite};
use super::path::{Path, Retired};
use super::WriteMode;
use super::{with_mode, WriteGuard, Writer};
use crate::tree::erased::Erased;
use crate::tree::node::Write;
use crate::tree::node::{Kind, Loaded, RcuReclaim, TakenEntry, RANGE_SLOTS};
use crate::tree::pending::Pending;
use crate::tree::walk::Walker;
use alloc::sync::Arc;

/// Outcome of the single-leaf classification.
enum Leafed {
    Done(u64, u64),
    Rebuild(u64, u64),
}

impl<'t, E: Entry, M: WriteMode> Writer<'t, E, M> {
    /// Stores `entry` (0 = nothing) over `[first, last]`; returns the range written (a NULL
    /// store reports the widened NULL range). `first <= last` is the caller's job.
    pub(crate) fn write(&mut self, first: u64, last: u64, entry: Word<E>) -> (u64, u64) {
        let mut w = self.walker();
        // The saved path is suspended at the start of every write (`store_from`) and made
        // usable again only at the end of an in-place append, which changes no node's place or
        // limits (resumed as it was when this write started from it, else saved afresh); so a
        // usable one still describes the live tree.
        let walked = w.restore(self.root, &mut self.st.saved, first);
        self.write_from(&mut w, walked, first, last, entry)
    }

    /// [`write`](Self::write), reusing a walker already positioned on the slot holding `first`.
    pub(crate) fn write_from(
        &mut self,
        lw: &mut Walker<'t, Write>,
        walked: bool,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> (u64, u64) {
        if !entry.is_null() {
            // The new range; what it overwrites is counted down by `release_entry` (a range
            // removed) and up by `share_entry` (a range split in two).
            self.add_len(1);
        }
        let r = self.store_from(lw, walked, first, last, entry);
        self.drop_released();
        r
    }

    /// The store itself; the caller drops the entries it released once it is complete.
    fn store_from(
        &mut self,
        lw: &mut Walker<'t, Write>,
        walked: bool,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> (u64, u64) {
        debug_assert!(first <= last);
        self.st.saved.suspend();
        self.schedule_seals();
        let Some(old) = self.root.node() else {
            if entry.is_null() {
                return (0, u64::MAX);
            }
            self.new_leaf_root(first, last, entry);
            return (first, last);
        };
        // A whole-space store is a new root (`wr_new_root`), unless one slot already covers the
        // whole space: then it is an exact fit (step 4 comes first).
        if first == 0
            && last == u64::MAX
            && !(lw.walk(0).is_some() && lw.lo == 0 && lw.hi == u64::MAX)
        {
            let mut retired = Retired::new();
            self.remove_subtree(old, 0, u64::MAX, &mut retired);
            if entry.is_null() {
                let old = self.root.publish_empty();
                self.retire_old_root(old);
                self.st.height = 0;
                self.st.stats.new_root += 1;
            } else {
                self.new_leaf_root(0, u64::MAX, entry); // counts the new root
            }
            for n in retired {
                self.retire_node(n);
            }
            return (0, u64::MAX);
        }
        let (a, b) = self.write_in_tree(lw, walked, first, last, entry);
        if entry.is_null() && a == 0 && b == u64::MAX {
            // Nothing is left: the single NULL leaf goes, the tree becomes empty (as
            // `mas_new_root` of a NULL does).
            self.clear();
        }
        (a, b)
    }

    fn write_in_tree(
        &mut self,
        lw: &mut Walker<'t, Write>,
        walked: bool,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> (u64, u64) {
        if !walked {
            lw.walk(first).expect("non-empty tree");
        }
        if self.exact_fit_at(lw, first, last, entry) {
            return (first, last);
        }
        let lw = &*lw;
        // An append into the leaf's last slot (the slot reaches the leaf's max): no leaf image.
        let leaf_max = lw.leaf().max;
        if !entry.is_null()
            && self.st.append
            && lw.hi == leaf_max
            && last <= leaf_max
            && self.append_in_place(lw, lw.lo, lw.word.raw(), first, last, entry)
        {
            return (first, last);
        }
        let leaf = *lw.leaf();
        if last < leaf.max || (last == leaf.max && (!entry.is_null() || leaf.max == u64::MAX)) {
            match self.leaf_store(lw, first, last, entry) {
                Leafed::Done(a, b) => return (a, b),
                Leafed::Rebuild(a, b) => {
                    let r = self.rebuild(Path::from_walker(lw), None, a, b, entry);
                    return (r.first, r.last);
                }
            }
        }
        self.spanning_store(lw, first, last, entry)
    }

    fn new_leaf_root(&mut self, first: u64, last: u64, entry: Word<E>) {
        let mut items = Items::new();
        if first > 0 {
            items.push(Item::slot(first - 1, 0));
        }
        items.push(Item::slot(last, entry.raw()));
        if last < u64::MAX {
            items.push(Item::slot(u64::MAX, 0));
        }
        let n = self.alloc_node(Kind::Leaf);
        self.write_items(&n, items.as_slice(), u64::MAX);
        self.publish_root(n);
        self.st.height = 1;
        self.st.stats.new_root += 1;
    }

    /// A write inside one leaf: the fast paths, or a request to rebuild (node store, split,
    /// rebalance) with the NULL-widened range.
    fn leaf_store(
        &mut self,
        lw: &Walker<'t, Write>,
        first: u64,
        last: u64,
        entry: Word<E>,
    ) -> Leafed {
        let leaf = *lw.leaf();
        let mut l = LeafWrite::empty();
        l.read(leaf, first, last, entry.raw());
        if l.ends_in_null {
            return Leafed::Rebuild(l.first, l.last);
        }
        let (first, last, end) = (l.first, l.last, l.end);
        // Exact fit (in place unless a lowered pivot seals the slot: then a node store).
        if self.exact_fit_in_leaf(lw, &l) {
            return Leafed::Done(first, last);
        }
        if l.new_end >= RANGE_SLOTS
            && self.st.append
            && l.off == end
            && l.max == u64::MAX
            && end >= 2
        {
            // In-order append into the full rightmost leaf: split by truncation (`append_split`).
            let ls = LastSlot {
                end,
                r_min: l.r_min,
                content: l.ws[end],
                prev_hi: l.his[end - 1],
                prev_word: l.ws[end - 1],
                prev2_hi: l.his[end - 2],
            };
            self.append_split(lw, first, last, entry, ls);
            return Leafed::Done(first, last);
        }
        let is_root = lw.depth == 1;
        if l.new_end >= RANGE_SLOTS {
            // A split: the direct one (`split`), else the rebuild (its fix-ups, three parts).
            if self.wr_leaf_split(lw, &l) {
                return Leafed::Done(first, last);
            }
            return Leafed::Rebuild(first, last);
        }
        if l.new_end < Kind::Leaf.min_end() && !is_root && l.max != u64::MAX {
            return Leafed::Rebuild(first, last);
        }
        // Appends: the write starts in the last slot.
        if self.st.append && l.off == end && l.new_end > end {
            if self.append_in_place(lw, l.r_min, l.ws[end], first, last, entry) {
                return Leafed::Done(first, last);
            }
            if !self.may_extend(leaf.node) {
                self.st.stats.sealed_extend += 1;
            }
        }
        // Slot stores: the slot count does not change (exclusive mode only).
        if let Some(x) = M::exclusive(self) {
            if x.slot_store(lw, &l) {
                return Leafed::Done(first, last);
            }
        }
        // Node store: the leaf rebuilt as one node (fresh in RCU mode, in place otherwise).
        self.wr_node_store(lw, &l);
        Leafed::Done(first, last)
    }

    // ----- public write API -----------------------------------------------------------------------

    /// See [`WriteGuard::store_range`].
    pub(crate) fn store_range(
        &mut self,
        r: impl core::ops::RangeBounds<u64>,
        entry: E,
    ) -> Result<(), Error> {
        let (first, last) = crate::tree::inclusive(r)?;
        let w = Owned::new(entry)?.into_word();
        self.write(first, last, w);
        Ok(())
    }

    /// See [`WriteGuard::store_zero_range`].
    pub(crate) fn store_zero_range(
        &mut self,
        r: impl core::ops::RangeBounds<u64>,
    ) -> Result<(), Error> {
        let (first, last) = crate::tree::inclusive(r)?;
        self.write(first, last, Word::ZERO);
        Ok(())
    }

    /// See [`WriteGuard::insert_range`].
    pub(crate) fn insert_range(
        &mut self,
        r: impl core::ops::RangeBounds<u64>,
        entry: E,
    ) -> Result<(), Error> {
        let (first, last) = crate::tree::inclusive(r)?;
        if self.is_occupied(first, last) {
            return Err(Error::Occupied);
        }
        let w = Owned::new(entry)?.into_word();
        self.write(first, last, w);
        Ok(())
    }

    /// See [`WriteGuard::insert`].
    pub(crate) fn insert(&mut self, index: u64, entry: E) -> Result<(), Error> {
        self.insert_range(index..=index, entry)
    }

    /// Whether any index of `[first, last]` holds an entry (the zero entry counts).
    pub(crate) fn is_occupied(&self, first: u64, last: u64) -> bool {
        let mut w = self.walker();
        if w.walk(first).is_none() {
            return false;
        }
        loop {
            if w.word != Loaded::NONE {
                return true;
            }
            if w.hi >= last {
                return false;
            }
            if w.next_slot().is_none() {
                return false;
            }
        }
    }

    /// See [`WriteGuard::erase`]: erases the range holding `index` in one walk and takes its
    /// entry out of the tree if that range was the last to hold it (a store splitting a range
    /// around another leaves one entry in two ranges); the entry goes to the caller as a
    /// [`TakenEntry`], in RCU mode to be dropped through `reclaim`'s collector.
    pub(crate) fn erase_taking<'a>(
        &mut self,
        index: u64,
        reclaim: Option<RcuReclaim<'a>>,
        pending: &Arc<Pending>,
    ) -> Option<(u64, u64, Option<TakenEntry<'a, E>>)> {
        let mut wk = self.walker();
        wk.walk(index)?;
        if wk.word == Loaded::NONE {
            return None;
        }
        let (lo, hi) = (wk.lo, wk.hi);
        let word = Word::<E>::leaf(wk.word.raw());
        let sole = wk.word.is_entry() && self.st.ledger.extra(word) == 0;
        if !sole {
            // The zero entry, or a word other ranges still hold: nothing to hand over.
            self.write_from(&mut wk, true, lo, hi, Word::NULL);
            return Some((lo, hi, None));
        }
        // The release of the word by the write below goes to the caller, not to a drop.
        self.st.ledger.keep(word);
        self.write_from(&mut wk, true, lo, hi, Word::NULL);
        let taken = self.st.ledger.kept(word).map(|r| {
            if !core::mem::needs_drop::<E>() {
                // A copy of a value without drop glue: the caller's, readers or not.
                return TakenEntry::copy(r);
            }
            match self.root.exclusive() {
                Some(x) => TakenEntry::exclusive(r, x),
                None => {
                    pending.add_entry();
                    let at = reclaim.expect("an RCU-mode writer holds the writer lock");
                    TakenEntry::rcu(r, at, Arc::clone(pending))
                }
            }
        });
        Some((lo, hi, taken))
    }

    /// See [`WriteGuard::erase_range`].
    pub(crate) fn erase_range(&mut self, r: impl core::ops::RangeBounds<u64>) -> Result<(), Error> {
        let (first, last) = crate::tree::inclusive(r)?;
        self.write(first, last, Word::NULL);
        Ok(())
    }

    /// See [`WriteGuard::clear`].
    pub(crate) fn clear(&mut self) {
        self.st.saved.clear();
        let Some(n) = self.root.node() else {
            return;
        };
        let mut retired = Retired::new();
        self.remove_subtree(n, 0, u64::MAX, &mut retired);
        let old = self.root.publish_empty();
        self.retire_old_root(old);
        self.st.height = 0;
        for n in retired {
            self.retire_node(n);
        }
        self.drop_released();
    }
}

impl<'t, E: Entry> WriteGuard<'t, E> {
    /// Stores `entry` over the range `r` (`mtree_store_range`): trims or removes whatever was
    /// there, across any number of nodes.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::store_range`](crate::MapleTree::store_range).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=99, Value::new(1))?;
    /// w.store_range(10..20, Value::new(2))?; // splits [0, 99] in three
    /// assert_eq!(w.len(), 3);
    /// assert_eq!(w.store_range(20..10, Value::new(3)), Err(Error::InvalidRange));
    /// # Ok(())
    /// # }
    /// ```
    pub fn store_range(
        &mut self,
        r: impl core::ops::RangeBounds<u64>,
        entry: E,
    ) -> Result<(), Error> {
        with_mode!(self.any_writer(), w => w.store_range(r, entry))
    }

    /// [`store_range`](Self::store_range) of one index (`mtree_store`).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::store`](crate::MapleTree::store).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// w.store(5, Value::new(2))?; // splits [0, 9] in three
    /// assert_eq!(w.load(5), Some(Value::new(2)));
    /// assert_eq!(w.len(), 3);
    /// # Ok(())
    /// # }
    /// ```
    pub fn store(&mut self, index: u64, entry: E) -> Result<(), Error> {
        self.store_range(index..=index, entry)
    }

    /// Stores the reserved zero entry (`XA_ZERO_ENTRY`) over the range `r`: the range counts
    /// as occupied for insert and gap search but reads as empty through `load` and `iter`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`] for an empty or inverted `r` (nothing is written).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// let mut w = tree.lock();
    /// w.store_zero_range(0..=9)?; // reserve [0, 9]
    /// assert_eq!(w.load(5), None);
    /// assert_eq!(w.insert(5, Value::new(1)), Err(Error::Occupied));
    /// assert_eq!(w.alloc_range(0..=99, 1, Value::new(1))?, 10..=10);
    /// # Ok(())
    /// # }
    /// ```
    pub fn store_zero_range(&mut self, r: impl core::ops::RangeBounds<u64>) -> Result<(), Error> {
        with_mode!(self.any_writer(), w => w.store_zero_range(r))
    }

    /// Stores `entry` only if all of the range `r` is empty (`mtree_insert_range`).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::insert_range`](crate::MapleTree::insert_range).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.insert_range(10..=19, Value::new(1))?;
    /// assert_eq!(w.insert_range(0..=10, Value::new(2)), Err(Error::Occupied));
    /// w.insert_range(0..=9, Value::new(2))?;
    /// assert_eq!(w.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn insert_range(
        &mut self,
        r: impl core::ops::RangeBounds<u64>,
        entry: E,
    ) -> Result<(), Error> {
        with_mode!(self.any_writer(), w => w.insert_range(r, entry))
    }

    /// [`insert_range`](Self::insert_range) of one index.
    ///
    /// # Errors
    ///
    /// As [`MapleTree::insert_range`](crate::MapleTree::insert_range).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.insert(7, Value::new(1))?;
    /// assert_eq!(w.insert(7, Value::new(2)), Err(Error::Occupied));
    /// assert_eq!(w.load(7), Some(Value::new(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn insert(&mut self, index: u64, entry: E) -> Result<(), Error> {
        with_mode!(self.any_writer(), w => w.insert(index, entry))
    }

    /// Erases the range containing `index` (`mtree_erase`), in one walk; returns it with its
    /// entry if it held one (the zero entry included): see [`Erased`] for what the entry is
    /// there (an owned value in exclusive mode, a borrow dropped after a grace period in RCU
    /// mode).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(10..20, Value::new(7)).unwrap();
    /// let erased = w.erase(15).unwrap();
    /// assert_eq!(erased.range(), 10..=19);
    /// assert_eq!(erased.entry(), Some(Value::new(7)));
    /// assert_eq!(w.erase(15).map(|e| e.range()), None);
    /// ```
    pub fn erase(&mut self, index: u64) -> Option<Erased<'t, E>> {
        let (reclaim, pending) = (self.reclaim(), self.pending());
        let (lo, hi, taken) =
            with_mode!(self.any_writer(), w => w.erase_taking(index, reclaim, pending))?;
        Some(Erased::new(lo..=hi, taken))
    }

    /// Empties the range `r` (a NULL store).
    ///
    /// # Errors
    ///
    /// As [`MapleTree::erase_range`](crate::MapleTree::erase_range).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=99, Value::new(1))?;
    /// w.erase_range(50..)?;
    /// let left: Vec<_> = w.iter().map(|(r, _)| r).collect();
    /// assert_eq!(left, [0..=49]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn erase_range(&mut self, r: impl core::ops::RangeBounds<u64>) -> Result<(), Error> {
        with_mode!(self.any_writer(), w => w.erase_range(r))
    }

    /// Empties the tree (`mtree_destroy`), keeping its options.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let mut tree = MapleTree::<Value>::new();
    /// let mut w = tree.exclusive();
    /// w.store_range(0..=9, Value::new(1))?;
    /// w.clear();
    /// assert!(w.is_empty());
    /// assert_eq!(w.height(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn clear(&mut self) {
        with_mode!(self.any_writer(), w => w.clear())
    }
}
