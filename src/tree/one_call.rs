//! The one-call writes (each takes the writer lock for one write, as the kernel's `mtree_*`
//! calls do), and `validate`, `dump` and `dup`, which take it too.

use alloc::string::String;
use core::ops::{RangeBounds, RangeInclusive};

use crate::entry::Entry;

use super::erased::Erased;
use super::node::{Exclusive, Fresh, Kind, NodeMem, NodeRef, Read, WriterRoot};
use super::write::WriteGuard;
use super::{MapleTree, Options, ValidateError};

impl<E: Entry + Send + Sync> MapleTree<E> {
    /// Stores `entry` over the range `r` (`a..=b`, `a..b`, `..=b`, `a..`, `..`), trimming or
    /// removing whatever was there (`mtree_store_range`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for an empty or inverted `r` (`5..5`,
    /// `9..=3`, `..0`; see [`inclusive`](crate::tree::inclusive));
    /// [`Error::Reserved`](crate::Error::Reserved) for an entry whose word is reserved (a faulty
    /// [`Entry`] implementation). Nothing is written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0x1000..=0x1fff, Value::new(1))?;
    /// tree.store_range(0x3000..0x4000, Value::new(2))?; // [0x3000, 0x3fff]
    /// assert_eq!(tree.get(0x3fff), Some(Value::new(2)));
    /// assert_eq!(tree.store_range(5..5, Value::new(3)), Err(Error::InvalidRange));
    /// # Ok(())
    /// # }
    /// ```
    pub fn store_range(&self, r: impl RangeBounds<u64>, entry: E) -> Result<(), crate::Error> {
        self.lock().store_range(r, entry)
    }

    /// Stores `entry` at one index (`mtree_store`).
    ///
    /// # Errors
    ///
    /// [`Error::Reserved`](crate::Error::Reserved) for an entry whose word is reserved; nothing is
    /// written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.store(5, Value::new(2))?; // splits [0, 9]
    /// let guard = tree.pin();
    /// assert_eq!(tree.load_range(5, &guard), Some((5..=5, Value::new(2))));
    /// assert_eq!(tree.load_range(6, &guard), Some((6..=9, Value::new(1))));
    /// # Ok(())
    /// # }
    /// ```
    pub fn store(&self, index: u64, entry: E) -> Result<(), crate::Error> {
        self.lock().store_range(index..=index, entry)
    }

    /// Stores `entry` over the range `r` only if every index there is empty
    /// (`mtree_insert_range`); otherwise [`Error::Occupied`](crate::Error::Occupied) and
    /// nothing changes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for an empty or inverted `r`,
    /// [`Error::Occupied`](crate::Error::Occupied) if an index of the range holds an entry (the zero
    /// entry included), [`Error::Reserved`](crate::Error::Reserved) for a reserved entry word.
    /// Nothing is written then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.insert_range(10..=19, Value::new(1))?;
    /// assert_eq!(tree.insert_range(15..=25, Value::new(2)), Err(Error::Occupied));
    /// assert_eq!(tree.get(25), None); // nothing written
    /// tree.insert_range(20..=25, Value::new(2))?;
    /// assert_eq!(tree.get(25), Some(Value::new(2)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn insert_range(&self, r: impl RangeBounds<u64>, entry: E) -> Result<(), crate::Error> {
        self.lock().insert_range(r, entry)
    }

    /// [`insert_range`](Self::insert_range) of one index.
    ///
    /// # Errors
    ///
    /// As [`insert_range`](Self::insert_range).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.insert(7, Value::new(1))?;
    /// assert_eq!(tree.insert(7, Value::new(2)), Err(Error::Occupied));
    /// assert_eq!(tree.get(7), Some(Value::new(1)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn insert(&self, index: u64, entry: E) -> Result<(), crate::Error> {
        self.lock().insert_range(index..=index, entry)
    }

    /// Erases the whole range containing `index` (`mtree_erase`) in one walk; returns that
    /// range with its entry if it held one (the zero entry included). Readers may still hold
    /// the entry: [`Erased`] borrows or clones it, and drops it after a grace period.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(10..20, Value::new(7)).unwrap();
    /// let erased = tree.erase(12).unwrap();
    /// assert_eq!((erased.range(), erased.cloned()), (10..=19, Some(Value::new(7))));
    /// assert!(tree.erase(12).is_none());
    /// ```
    pub fn erase(&self, index: u64) -> Option<Erased<'_, E>> {
        self.lock().erase(index)
    }

    /// Empties the range `r` (a NULL store), trimming entries that stick out.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRange`](crate::Error::InvalidRange) for an empty or inverted `r` (nothing
    /// is erased).
    ///
    /// ```
    /// use maple_tree::{Error, MapleTree, Value};
    ///
    /// # fn main() -> Result<(), Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=99, Value::new(1))?;
    /// tree.erase_range(10..=89)?;
    /// assert_eq!(tree.erase_range(5..5), Err(Error::InvalidRange));
    /// let guard = tree.pin();
    /// let left: Vec<_> = tree.iter(&guard).map(|(r, _)| r).collect();
    /// assert_eq!(left, [0..=9, 90..=99]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn erase_range(&self, r: impl RangeBounds<u64>) -> Result<(), crate::Error> {
        self.lock().erase_range(r)
    }

    /// Empties the whole tree (`mtree_destroy`); the tree stays usable with the same options.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new_alloc();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// tree.clear();
    /// assert!(tree.is_empty());
    /// assert!(tree.is_alloc()); // same options
    /// # Ok(())
    /// # }
    /// ```
    pub fn clear(&self) {
        self.lock().clear()
    }

    /// Checks every structural invariant (those of the kernel's `mt_validate`, plus height, parent links, gaps, "no non-rightmost
    /// leaf ends empty" and entry ownership). Takes the writer lock.
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
    /// for i in 0..1000 {
    ///     tree.store_range(i * 10..=i * 10 + 4, Value::new(i))?;
    /// }
    /// tree.validate()?; // `?` turns a ValidateError into Error::Invalid
    /// # Ok(())
    /// # }
    /// ```
    pub fn validate(&self) -> Result<(), ValidateError> {
        self.lock().validate()
    }

    /// A text dump of every node (`mt_dump`).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// let text = tree.dump();
    /// assert!(text.starts_with("maple_tree flags range, height 1"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dump(&self) -> String {
        self.lock().dump()
    }

    /// A Graphviz DOT rendering of the tree.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// let dot = tree.dump_dot(); // render with `dot -Tsvg`
    /// assert!(dot.starts_with("digraph"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dump_dot(&self) -> String {
        self.lock().dump_dot()
    }
}

impl<E: Entry + Clone + Send + Sync> MapleTree<E> {
    /// A structural copy (`__mt_dup`): same nodes, same shape, each entry cloned, so that storing
    /// replacement entries over the same ranges afterwards is always an exact fit.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// tree.store_range(0..=9, Value::new(1))?;
    /// let copy = tree.dup();
    /// tree.store_range(0..=9, Value::new(2))?; // the copy is independent
    /// assert_eq!(copy.get(5), Some(Value::new(1)));
    /// assert_eq!(copy.height(), tree.height());
    /// # Ok(())
    /// # }
    /// ```
    pub fn dup(&self) -> Self {
        self.lock().dup()
    }
}

impl<E: Entry> MapleTree<E> {
    /// A structural copy whose entries are mapped in the same pass: the same ranges, nodes and
    /// shape (as [`dup`](Self::dup)), the entry of each range `r` replaced by `f(r, &entry)`,
    /// the new tree's entries of type `F`. This is the fork of a map: one walk over the source,
    /// one new node per node, no search and no store per entry (a copy made by `dup` and then
    /// written over entry by entry, the kernel's fork, pays a store per entry). The copy has
    /// the same options and collector; ranges holding the zero entry stay so, and `f` is not
    /// called for them. `f` is called once per range, in index order (an entry that a store
    /// split over several ranges is mapped once per range).
    ///
    /// Takes the writer lock for the copy (readers go on meanwhile); `f` runs under it, so it
    /// may read this tree through a guard but must not write to it (the lock would wait for
    /// ever), as for a [`WriteGuard`] held by the thread.
    ///
    /// # Panics
    ///
    /// If `f` panics, the entries made so far and the nodes of the partial copy are dropped and
    /// freed (nothing leaks, no half tree is left), the source is unchanged and its lock
    /// released, and the panic goes on. Panics also if `F`'s [`Entry::into_word`] gives a
    /// reserved word (a faulty implementation; the entry is dropped).
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let vmas = MapleTree::<Value>::new_alloc();
    /// vmas.store_range(0x1000..=0x1fff, Value::new(1))?;
    /// vmas.store_range(0x4000..=0x5fff, Value::new(2))?;
    /// // The child's entries: each range's length and the parent's value, boxed.
    /// let child = vmas.dup_map(|r, v| Box::new((r.end() - r.start() + 1, v.get())));
    /// assert!(child.is_alloc());
    /// let guard = child.pin();
    /// assert_eq!(child.load(0x4800, &guard), Some(&(0x2000, 2)));
    /// assert_eq!(child.len(), vmas.len());
    /// # Ok(())
    /// # }
    /// ```
    #[inline]
    pub fn dup_map<F: Entry>(&self, f: impl FnMut(RangeInclusive<u64>, &E) -> F) -> MapleTree<F> {
        self.lock().dup_map(f)
    }
}

impl<E: Entry + Clone> WriteGuard<'_, E> {
    /// A structural copy of the tree (`__mt_dup`): every node copied with the same pivots, gaps
    /// and shape, every entry cloned, so replacing each entry afterwards over the same range is an
    /// exact fit. The copy uses the same options and collector.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// let copy = w.dup();
    /// w.store_range(0..=9, Value::new(2))?;
    /// drop(w);
    /// assert_eq!(copy.get(5), Some(Value::new(1)));
    /// assert_eq!(tree.get(5), Some(Value::new(2)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dup(&self) -> MapleTree<E> {
        self.copy_with(|dst, mem, src, count| {
            super::dup::dup_node::<E>(dst, mem, src, u64::MAX, count)
        })
    }
}

impl<E: Entry> WriteGuard<'_, E> {
    /// [`MapleTree::dup_map`] through this guard: a structural copy of the tree with the entry
    /// of each range `r` replaced by `f(r, &entry)`, in one pass.
    ///
    /// # Panics
    ///
    /// As [`MapleTree::dup_map`]: if `f` panics (nothing leaks, the tree is unchanged), or if
    /// `F`'s [`Entry::into_word`] gives a reserved word.
    ///
    /// ```
    /// use maple_tree::{MapleTree, Value};
    ///
    /// # fn main() -> Result<(), maple_tree::Error> {
    /// let tree = MapleTree::<Value>::new();
    /// let mut w = tree.lock();
    /// w.store_range(0..=9, Value::new(1))?;
    /// w.store_range(20..=29, Value::new(2))?;
    /// let doubled = w.dup_map(|_, v| Value::new(2 * v.get()));
    /// drop(w);
    /// assert_eq!(doubled.get(25), Some(Value::new(4)));
    /// assert_eq!(tree.get(25), Some(Value::new(2)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn dup_map<F: Entry>(
        &self,
        mut f: impl FnMut(RangeInclusive<u64>, &E) -> F,
    ) -> MapleTree<F> {
        self.copy_with(|dst, mem, src, count| {
            super::dup::map_node::<E, F>(dst, mem, src, count, &mut f)
        })
    }

    /// A new tree of `F` with this tree's options, collector, switches and height, whose root is
    /// `copy(dst, mem, root, count)`, a copy of this tree's root node (`count`: nodes made).
    #[inline]
    fn copy_with<F: Entry>(
        &self,
        copy: impl for<'t> FnOnce(
            WriterRoot<'t, Exclusive>,
            &mut NodeMem,
            NodeRef<'_, Read, E>,
            &mut u64,
        ) -> Fresh<'t>,
    ) -> MapleTree<F> {
        let mut opts = Options::new()
            .alloc(self.internal == Kind::ARange)
            .huge_pages(self.huge_pages());
        let view = self.view();
        if !view.is_default_collector() {
            opts = opts.collector(view.collector().clone());
        }
        let mut new = MapleTree::with_options(opts);
        let Some(src) = view.node() else {
            return new;
        };
        let mut count = 0u64;
        {
            // The copy is built and published under `&mut new`: nobody can see it yet.
            let mut x = new.root.exclusive();
            let (dst, _, mem) = x.writer();
            // The copy's nodes in one run of its slab (up to a chunk's worth).
            let st = &self.state().stats;
            let nodes = st.nodes_allocated.saturating_sub(st.nodes_freed);
            mem.reserve(usize::try_from(nodes).unwrap_or(usize::MAX));
            let root = copy(dst.unbranded(), mem, src, &mut count);
            let old = dst.publish(root);
            debug_assert!(old.is_none(), "a new tree has no root to unlink");
        }
        *new.len.get_mut() = self.len();
        let st = new.root.state_mut();
        st.height = self.state().height;
        st.append = self.state().append;
        st.three_way = self.state().three_way;
        st.leaf_split = self.state().leaf_split;
        st.stats.nodes_allocated = count;
        new
    }
}
