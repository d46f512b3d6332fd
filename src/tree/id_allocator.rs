//! [`IdAllocator`]: a cyclic id allocator on an allocation tree (the kernel's
//! `mtree_alloc_cyclic` with its `next` kept by the allocator, in the spirit of the IDR).

use core::fmt;
use core::ops::{RangeBounds, RangeInclusive};
use core::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use crate::entry::Entry;
use crate::error::Error;
use crate::sync::PlainAtomicU64 as AtomicU64;

use super::{Erased, Iter, MapleTree, TreeGuard};

/// Hands out ids from a window cyclically, each with its entry, from any number of threads.
///
/// Ids are allocated lowest-first from just after the last one handed out, wrapping to the
/// window's start when the end is reached (so a freed id is not reused at once, as the kernel's
/// `idr_alloc_cyclic`). Allocation and [`free`](Self::free) take the tree's writer lock for
/// one call; lookups ([`get`](Self::get), [`load`](Self::load), [`iter`](Self::iter)) are
/// lock-free and never wait for a writer. The entry of an id is built from the id by the
/// [`alloc_with`](Self::alloc_with) closure under the lock, before the id is published: a
/// reader finds either nothing or the final entry, never a placeholder.
///
/// ```
/// use std::sync::Arc;
/// use maple_tree::IdAllocator;
///
/// struct Session { id: u64 }
/// let ids = Arc::new(IdAllocator::<Arc<Session>>::new(1..=1000).unwrap());
/// let workers: Vec<_> = (0..2)
///     .map(|_| {
///         let ids = Arc::clone(&ids);
///         std::thread::spawn(move || {
///             for _ in 0..100 {
///                 let id = ids.alloc_with(|id| Arc::new(Session { id })).unwrap();
///                 assert_eq!(ids.get(id).unwrap().id, id); // never a placeholder
///             }
///         })
///     })
///     .collect();
/// workers.into_iter().for_each(|t| t.join().unwrap());
/// assert_eq!(ids.len(), 200);
/// ```
pub struct IdAllocator<E> {
    tree: MapleTree<E>,
    first: u64,
    last: u64,
    /// Where the next search starts (`mtree_alloc_cyclic`'s `next`); read and written only
    /// under the tree's writer lock, which orders every access (so Relaxed).
    next: AtomicU64,
}

impl<E: Entry> IdAllocator<E> {
    /// An allocator of the ids in `window`, starting at its lowest.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidWindow`] for an empty or inverted window.
    ///
    /// ```
    /// use maple_tree::{Error, IdAllocator, Value};
    /// assert!(IdAllocator::<Value>::new(1..).is_ok());
    /// assert_eq!(IdAllocator::<Value>::new(5..5).err(), Some(Error::InvalidWindow));
    /// ```
    pub fn new(window: impl RangeBounds<u64>) -> Result<Self, Error> {
        let (first, last) = super::bounds::window(window)?;
        Ok(IdAllocator {
            tree: MapleTree::new_alloc(),
            first,
            last,
            next: AtomicU64::new(first),
        })
    }

    /// The ids this allocator hands out.
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::<Value>::new(1..100).unwrap();
    /// assert_eq!(ids.window(), 1..=99);
    /// ```
    pub fn window(&self) -> RangeInclusive<u64> {
        self.first..=self.last
    }

    /// The entry of `id`, borrowed under `guard` (from [`pin`](Self::pin)).
    ///
    /// # Panics
    ///
    /// If `guard` is not from this allocator's [`pin`](Self::pin).
    ///
    /// ```
    /// use maple_tree::IdAllocator;
    /// let ids = IdAllocator::<Box<String>>::new(..).unwrap();
    /// let id = ids.alloc(Box::new("first".into())).unwrap();
    /// let guard = ids.pin();
    /// assert_eq!(ids.load(id, &guard).map(String::as_str), Some("first"));
    /// ```
    pub fn load<'g>(&'g self, id: u64, guard: &'g Guard) -> Option<E::Borrowed<'g>> {
        self.tree.load(id, guard)
    }

    /// A clone of the entry of `id` (pins for you; lock-free).
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(..).unwrap();
    /// let id = ids.alloc(Value::new(7)).unwrap();
    /// assert_eq!(ids.get(id), Some(Value::new(7)));
    /// ```
    pub fn get(&self, id: u64) -> Option<E>
    where
        E: Clone,
    {
        self.tree.get(id)
    }

    /// Whether `id` is allocated.
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(10..).unwrap();
    /// let id = ids.alloc(Value::new(1)).unwrap();
    /// assert!(ids.contains(id) && !ids.contains(id + 1));
    /// ```
    pub fn contains(&self, id: u64) -> bool {
        self.tree.contains(id)
    }

    /// How many ids are allocated.
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(..).unwrap();
    /// ids.alloc(Value::new(1)).unwrap();
    /// assert_eq!(ids.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether no id is allocated.
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// assert!(IdAllocator::<Value>::new(..).unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// Pins a guard for [`load`](Self::load) and [`iter`](Self::iter).
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(..).unwrap();
    /// let id = ids.alloc(Value::new(3)).unwrap();
    /// let guard = ids.pin();
    /// assert_eq!(ids.load(id, &guard), Some(Value::new(3)));
    /// ```
    pub fn pin(&self) -> TreeGuard<'_> {
        self.tree.pin()
    }

    /// The allocated ids with their entries, in id order (lock-free).
    ///
    /// # Panics
    ///
    /// If `guard` is not from this allocator's [`pin`](Self::pin).
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(1..).unwrap();
    /// ids.alloc(Value::new(10)).unwrap();
    /// ids.alloc(Value::new(20)).unwrap();
    /// let guard = ids.pin();
    /// let all: Vec<_> = ids.iter(&guard).map(|(id, v)| (*id.start(), v.get())).collect();
    /// assert_eq!(all, [(1, 10), (2, 20)]);
    /// ```
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Iter<'g, E> {
        self.tree.iter(guard)
    }

    /// The tree underneath, for every other read.
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(..).unwrap();
    /// ids.alloc(Value::new(1)).unwrap();
    /// assert!(ids.tree().validate().is_ok());
    /// ```
    pub fn tree(&self) -> &MapleTree<E> {
        &self.tree
    }
}

impl<E: Entry + Send + Sync> IdAllocator<E> {
    /// Allocates the next free id for `entry`.
    ///
    /// # Errors
    ///
    /// [`Error::NoRoom`] when every id of the window is taken; [`Error::Reserved`] for a
    /// reserved entry word. Nothing is allocated then and `entry` is dropped.
    ///
    /// ```
    /// use maple_tree::{Error, IdAllocator, Value};
    /// let ids = IdAllocator::new(1..=2).unwrap();
    /// assert_eq!(ids.alloc(Value::new(0)), Ok(1));
    /// assert_eq!(ids.alloc(Value::new(0)), Ok(2));
    /// assert_eq!(ids.alloc(Value::new(0)), Err(Error::NoRoom));
    /// ```
    pub fn alloc(&self, entry: E) -> Result<u64, Error> {
        self.try_alloc_with(move |_| Ok(entry))
    }

    /// Allocates the next free id, with its entry built from the id under the writer lock:
    /// readers never see the id without its entry.
    ///
    /// # Errors
    ///
    /// As [`alloc`](Self::alloc); `make` is not called then.
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(100..).unwrap();
    /// let id = ids.alloc_with(|id| Value::new(id * 2)).unwrap();
    /// assert_eq!(ids.get(id), Some(Value::new(200)));
    /// ```
    pub fn alloc_with(&self, make: impl FnOnce(u64) -> E) -> Result<u64, Error> {
        self.try_alloc_with(move |id| Ok(make(id)))
    }

    /// [`alloc_with`](Self::alloc_with) whose entry may fail to build: `make`'s error comes
    /// back with nothing allocated and the cyclic position unchanged.
    ///
    /// # Errors
    ///
    /// The errors of [`alloc`](Self::alloc), converted, and `make`'s own.
    ///
    /// ```
    /// use maple_tree::{Error, IdAllocator, Value};
    /// let ids = IdAllocator::<Value>::new(..).unwrap();
    /// let r: Result<u64, Error> = ids.try_alloc_with(|_| Err(Error::Occupied));
    /// assert_eq!(r, Err(Error::Occupied));
    /// assert!(ids.is_empty());
    /// ```
    pub fn try_alloc_with<X: From<Error>>(
        &self,
        make: impl FnOnce(u64) -> Result<E, X>,
    ) -> Result<u64, X> {
        let mut w = self.tree.lock();
        // Under the writer lock: every access to `next` is ordered by it.
        let mut next = self.next.load(Ordering::Relaxed);
        let (id, _wrapped) = w.try_alloc_cyclic_with(self.first..=self.last, &mut next, make)?;
        self.next.store(next, Ordering::Relaxed);
        Ok(id)
    }

    /// Frees `id`; returns it with its entry if it was allocated (see [`Erased`]: readers may
    /// still hold the entry, which is dropped after a grace period).
    ///
    /// ```
    /// use maple_tree::{IdAllocator, Value};
    /// let ids = IdAllocator::new(..).unwrap();
    /// let id = ids.alloc(Value::new(5)).unwrap();
    /// assert_eq!(ids.free(id).and_then(|e| e.cloned()), Some(Value::new(5)));
    /// assert!(ids.free(id).is_none());
    /// ```
    pub fn free(&self, id: u64) -> Option<Erased<'_, E>> {
        self.tree.erase(id)
    }
}

impl<E: Entry> fmt::Debug for IdAllocator<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdAllocator")
            .field("window", &self.window())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}
