//! [`Erased`]: what an erase hands back, the range and the entry it took out of the tree.

use core::fmt;
use core::ops::RangeInclusive;

use crate::entry::Entry;

use super::node::TakenEntry;

/// A range [`erase`](crate::MapleTree::erase) took out of the tree, with its entry.
///
/// In RCU mode ([`MapleTree::erase`](crate::MapleTree::erase), [`MapleTree::lock`](crate::MapleTree::lock))
/// readers pinned before the erase may still be reading the entry, so it cannot be moved out:
/// [`entry`](Self::entry) borrows it, [`cloned`](Self::cloned) clones it (an `Arc` entry
/// comes out as an `Arc`), and dropping the `Erased` drops the entry once every such reader
/// is gone (the kernel's `mtree_erase` and then a free after a grace period, as `kfree_rcu`).
/// In exclusive mode ([`MapleTree::exclusive`](crate::MapleTree::exclusive)) no reader exists
/// and [`into_entry`](Self::into_entry) hands the entry over.
///
/// The entry is `None` for a range that held the zero entry, and for a range whose entry
/// other ranges still hold (a store that split one range around another leaves one entry in
/// both parts; it stays in the tree with them).
///
/// ```
/// use std::sync::Arc;
/// use maple_tree::MapleTree;
///
/// let tree = MapleTree::<Arc<String>>::new();
/// tree.store_range(0..10, Arc::new("ten".to_string())).unwrap();
/// let erased = tree.erase(3).unwrap();
/// assert_eq!(erased.range(), 0..=9);
/// let owned: Arc<String> = erased.cloned().unwrap(); // one walk, entry out as an `Arc`
/// assert_eq!(*owned, "ten");
/// assert!(tree.is_empty());
/// ```
pub struct Erased<'t, E: Entry> {
    range: RangeInclusive<u64>,
    entry: Option<TakenEntry<'t, E>>,
}

impl<'t, E: Entry> Erased<'t, E> {
    pub(crate) fn new(range: RangeInclusive<u64>, entry: Option<TakenEntry<'t, E>>) -> Self {
        Erased { range, entry }
    }

    /// The range erased.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(5..=9, Value::new(1)).unwrap();
    /// assert_eq!(tree.erase(7).map(|e| e.range()), Some(5..=9));
    /// ```
    pub fn range(&self) -> RangeInclusive<u64> {
        self.range.clone()
    }

    /// The entry erased, borrowed (`None` for the zero entry or an entry other ranges still
    /// hold).
    ///
    /// ```
    /// use maple_tree::MapleTree;
    /// let tree = MapleTree::<Box<u32>>::new();
    /// tree.store(1, Box::new(5)).unwrap();
    /// let erased = tree.erase(1).unwrap();
    /// assert_eq!(erased.entry(), Some(&5));
    /// ```
    pub fn entry(&self) -> Option<E::Borrowed<'_>> {
        self.entry.as_ref().map(TakenEntry::borrow)
    }

    /// A clone of the entry erased (see [`entry`](Self::entry)).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new();
    /// tree.store(1, Value::new(5)).unwrap();
    /// assert_eq!(tree.erase(1).and_then(|e| e.cloned()), Some(Value::new(5)));
    /// ```
    pub fn cloned(&self) -> Option<E>
    where
        E: Clone,
    {
        self.entry.as_ref().map(|t| t.with(E::clone))
    }

    /// The entry erased, owned, if no reader can hold it: `Ok` in exclusive mode (`Ok(None)`
    /// without an entry), `Err(self)` in RCU mode, where the entry can only be borrowed or
    /// cloned until the grace period after this is dropped.
    ///
    /// # Errors
    ///
    /// `self`, unchanged, in RCU mode.
    ///
    /// ```
    /// use maple_tree::MapleTree;
    /// let mut tree = MapleTree::<Box<String>>::new();
    /// tree.store(1, Box::new("one".into())).unwrap();
    /// let erased = tree.exclusive().erase(1).unwrap();
    /// let owned: Box<String> = erased.into_entry().ok().flatten().unwrap();
    /// assert_eq!(*owned, "one");
    /// ```
    pub fn into_entry(self) -> Result<Option<E>, Self> {
        let Erased { range, entry } = self;
        match entry.map(TakenEntry::try_take) {
            None => Ok(None),
            Some(Ok(e)) => Ok(Some(e)),
            Some(Err(t)) => Err(Erased {
                range,
                entry: Some(t),
            }),
        }
    }
}

impl<E: Entry> fmt::Debug for Erased<'_, E>
where
    for<'a> E::Borrowed<'a>: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Erased")
            .field("range", &self.range)
            .field("entry", &self.entry())
            .finish()
    }
}
