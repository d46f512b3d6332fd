//! Structural duplication (`__mt_dup`) and teardown.

use std::collections::HashMap;

use crate::entry::{clone_word, Entry, ZERO_WORD};

use super::node::{node_word, Kind, NodeRef};
use super::rebuild::node_slots;
use super::write::WriteGuard;
use super::{MapleTree, Options};

impl<E: Entry + Clone> WriteGuard<'_, E> {
    /// A structural copy of the tree (`__mt_dup`): every node copied with the same pivots, gaps
    /// and shape, every entry cloned, so replacing each entry afterwards over the same range is an
    /// exact fit. The copy uses the same options and collector.
    pub fn dup(&self) -> MapleTree<E> {
        let mut opts = Options::new().alloc(self.internal == Kind::ARange);
        if !self.default_collector {
            opts = opts.collector(self.collector().clone());
        }
        let mut new = MapleTree::with_options(opts);
        let root = self.root.load(crate::sync::Ordering::Relaxed);
        if root == 0 {
            return new;
        }
        let src = self.node_from_item(root);
        let mut count = 0u64;
        let copy = copy_node::<E>(src, u64::MAX, self.internal, &mut count);
        copy.set_parent(None, 0);
        new.root
            .store(node_word(copy), crate::sync::Ordering::Release);
        *new.len.get_mut() = self.len();
        let st = new.writer.get_mut();
        st.height = self.st.height;
        st.append = self.st.append;
        st.stats.nodes_allocated = count;
        new
    }
}

/// Copies the subtree of `src` (whose implied max is `max`), depth first: each node is one
/// `malloc` and a copy of its words ([`NodeRef::alloc_copy_leaf`], [`NodeRef::alloc_copy_internal`]), children are
/// copied before their parent and linked to it afterwards.
fn copy_node<'g, E: Entry + Clone>(
    src: NodeRef<'_>,
    max: u64,
    internal: Kind,
    count: &mut u64,
) -> NodeRef<'g> {
    *count += 1;
    if src.is_leaf() {
        return NodeRef::alloc_copy_leaf(src, max, |w| {
            if w == 0 || w == ZERO_WORD {
                w
            } else {
                // SAFETY: `w` is a live entry of the source tree (a slot within its end),
                // protected by its writer lock for the duration of the copy.
                unsafe { clone_word::<E>(w) }.into_word()
            }
        });
    }
    let (n, end) = NodeRef::alloc_copy_internal(src, max, |i, _, hi| {
        node_word(copy_node::<E>(src.child(i, internal), hi, internal, count))
    });
    for i in 0..=end {
        n.child(i, internal).set_parent(Some(n), i);
    }
    n
}

/// Frees a whole tree at once, dropping every entry exactly once (shared words via `multi`).
///
/// # Safety
///
/// `root` must be the root word of a tree that no reader or writer can reach any more.
pub(crate) unsafe fn free_subtree_now<E: Entry>(
    root: usize,
    internal: Kind,
    multi: &mut HashMap<usize, usize>,
) {
    if root == 0 {
        return;
    }
    // SAFETY: the caller guarantees the tree is unreachable by others, so its nodes stay
    // allocated until we free them here.
    let n = unsafe { NodeRef::from_word(root, internal) };
    // SAFETY: forwarded caller contract.
    unsafe { free_node::<E>(n, 0, u64::MAX, internal, multi) };
}

/// # Safety
///
/// As [`free_subtree_now`], for the subtree of `n` covering `[min, max]`.
unsafe fn free_node<E: Entry>(
    n: NodeRef<'_>,
    min: u64,
    max: u64,
    internal: Kind,
    multi: &mut HashMap<usize, usize>,
) {
    if n.is_leaf() && !core::mem::needs_drop::<E>() {
        // Nothing to drop in the slots (e.g. `Value`): no need to find the node's end.
        // SAFETY: nothing can reach `n` any more (caller contract) and it is freed once.
        unsafe { n.free_now() };
        return;
    }
    for (lo, hi, w) in node_slots(n, min, max) {
        if n.is_leaf() {
            if w == 0 || w == ZERO_WORD {
                continue;
            }
            if let Some(c) = multi.get_mut(&w) {
                *c -= 1;
                if *c == 0 {
                    multi.remove(&w);
                }
                continue;
            }
            // SAFETY: a live entry word referenced by no other slot; dropped exactly once.
            drop(unsafe { E::from_word(w) });
        } else {
            // SAFETY: forwarded caller contract (children of an unreachable node).
            let child = unsafe { NodeRef::from_word(w, internal) };
            // SAFETY: as above.
            unsafe { free_node::<E>(child, lo, hi, internal, multi) };
        }
    }
    // SAFETY: nothing can reach `n` any more (caller contract) and it is freed once.
    unsafe { n.free_now() };
}
