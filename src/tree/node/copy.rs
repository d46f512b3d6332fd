//! The mapped leaf copy of [`MapleTree::dup_map`](crate::MapleTree::dup_map): a leaf of one
//! tree copied into another tree whose entries are made from the source's in the same pass.

use core::ops::RangeInclusive;

use crate::entry::{is_reserved_word, Owned};

use super::*;

impl<'t, B> WriterRoot<'t, Exclusive, B> {
    /// A fresh, unpublished copy of the leaf `src` (a leaf of a tree of `E` whose writer the
    /// caller is, over `[min, max]`) for this tree of `F`: pivots, empty slots and zero entries
    /// as they are, every entry word within the end replaced by the word of
    /// `f(range, &entry)`, `range` being the slot's range, in slot order. The copy is made in
    /// `mem` (this tree's): one copy of the node's words, then each entry word rewritten in
    /// place.
    ///
    /// If `f` panics, the entries it made so far are dropped, the copy is freed, and the panic
    /// goes on.
    ///
    /// # Panics
    ///
    /// If `mem` is another tree's; if `f` panics; if `F::into_word` gives a reserved word (a
    /// faulty [`Entry`] implementation; the entry is dropped first).
    pub(crate) fn alloc_mapped_leaf<E: Entry, F: Entry>(
        self,
        src: NodeRef<'_, Read, E>,
        min: u64,
        max: u64,
        mem: &mut NodeMem,
        f: &mut impl FnMut(RangeInclusive<u64>, &E) -> F,
    ) -> Fresh<'t> {
        self.check_mem(mem);
        debug_assert!(src.is_leaf());
        let p = src.copy_in(&mut mem.slab, false);
        // Until the loop is done: on a panic, drops the entries of `F` in the copy's slots
        // `0..done` and frees the copy (its later slots still hold the source's words).
        let mut partial = Partial::<F> {
            p,
            slab: &mut mem.slab,
            done: 0,
            _f: PhantomData,
        };
        // SAFETY: a node just made, initialised, that nothing else references (`copy_in`);
        // `partial` touches it only when dropped, after the last use of `b`.
        let b = unsafe { &mut *p.as_ptr() };
        // Slot by slot up to the end (the first pivot at or above `max`, as `end_mut` finds
        // it, here in the same pass): a slot's last index is its pivot, the last slot's `max`.
        let mut lo = min;
        // (A loop over the slots' offsets, so that the word indices need no checks.)
        for i in 0..RANGE_SLOTS {
            let last = i == RANGE_PIVOTS || b.update(i, |p| p) >= max;
            let hi = if last { max } else { b.update(i, |p| p) };
            let w = b.update(RANGE_PIVOTS + i, |w| w) as usize;
            if w != 0 && w != ZERO_WORD {
                // SAFETY: `w` is a live entry word of a tree of `E` (a leaf slot within the
                // end, copied from `src`, a node branded `E`: only `WriteGuard<E>` stores leaf
                // words), kept alive
                // by that tree's writer lock for the duration of the copy; `view_word` leaves
                // it in place.
                let new = unsafe { crate::entry::view_word::<E, F>(w, |e| f(lo..=hi, e)) };
                let Ok(new) = Owned::new(new) else {
                    panic!("maple tree: `dup_map` made an entry with a reserved word")
                };
                let nw = new.into_raw();
                debug_assert!(!is_reserved_word(nw));
                b.update(RANGE_PIVOTS + i, |_| nw as u64);
            }
            partial.done = i + 1;
            if last {
                debug_assert_eq!(i, b.end_mut(RANGE_PIVOTS, max));
                break;
            }
            lo = hi + 1;
        }
        core::mem::forget(partial);
        Fresh(Live::own(Kind::Leaf, p))
    }
}

/// A mapped leaf copy under way (see [`WriterRoot::alloc_mapped_leaf`]): dropped only if the
/// map panics.
struct Partial<'s, F: Entry> {
    p: NonNull<Node>,
    slab: &'s mut Slab,
    /// Slots holding words of `F` made by the map (the others the source's words).
    done: usize,
    _f: PhantomData<fn() -> F>,
}

impl<F: Entry> Drop for Partial<'_, F> {
    fn drop(&mut self) {
        // SAFETY: the copy was made from `slab` and never published; nothing else references
        // it (the loop's borrow ended with the panic that drops this).
        let b = unsafe { &mut *self.p.as_ptr() };
        for i in 0..self.done {
            let w = b.update(RANGE_PIVOTS + i, |w| w) as usize;
            if w != 0 && w != ZERO_WORD {
                // SAFETY: `w` is the word of an entry of `F` the map made (`into_raw` of an
                // `Owned`), stored in this copy alone, dropped once here.
                drop(unsafe { F::from_word(w) });
            }
        }
        // SAFETY: made from `slab`, never published, freed once here.
        unsafe { self.slab.free(self.p) };
    }
}
