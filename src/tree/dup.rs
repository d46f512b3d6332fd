//! Structural duplication (`__mt_dup`): the tree copied node by node, entries cloned (the
//! façade's `WriteGuard::dup` builds the new tree around the copy).

use crate::entry::Entry;

use super::node::{Exclusive, Fresh, NodeMem, NodeRef, WriterRoot};

/// Copies the subtree of `src` (whose implied max is `max`) into fresh nodes of `dst`, depth
/// first: each node is a node of `dst`'s slab (`mem`) and a copy of its words
/// ([`WriterRoot::alloc_cloned_leaf`], [`WriterRoot::alloc_copied_internal`]), children are
/// copied before their parent and linked to it afterwards.
pub(crate) fn dup_node<'t, E: Entry + Clone>(
    dst: WriterRoot<'t, Exclusive>,
    mem: &mut NodeMem,
    src: NodeRef<'_>,
    max: u64,
    count: &mut u64,
) -> Fresh<'t> {
    *count += 1;
    if src.is_leaf() {
        return dst.alloc_cloned_leaf::<E>(src, max, mem);
    }
    let internal = dst.internal();
    dst.alloc_copied_internal::<E>(src, max, mem, |mem, i, hi| {
        dup_node::<E>(dst, mem, src.child(i, internal), hi, count)
    })
}
