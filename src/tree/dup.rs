//! Structural duplication (`__mt_dup`): the tree copied node by node, entries cloned (`dup`)
//! or mapped (`dup_map`); the façade (`one_call`) builds the new tree around the copy.

use core::ops::RangeInclusive;

use crate::entry::Entry;

use super::node::{Exclusive, Fresh, NodeMem, NodeRef, Read, WriterRoot};

/// Copies the subtree of `src` (over `[min, max]`) into fresh nodes of `dst` (a tree of `F`),
/// depth first: each node is a node of `dst`'s slab (`mem`); a leaf is copied by `leaf(dst,
/// mem, src, min, max)`, an internal node word for word
/// ([`WriterRoot::alloc_copied_internal`]), its children copied before it and linked to it
/// afterwards. `count` counts the nodes made.
pub(crate) fn copy_node<'t, F: Entry, S, L>(
    dst: WriterRoot<'t, Exclusive>,
    mem: &mut NodeMem,
    src: NodeRef<'_, Read, S>,
    (min, max): (u64, u64),
    count: &mut u64,
    leaf: &mut L,
) -> Fresh<'t>
where
    L: FnMut(WriterRoot<'t, Exclusive>, &mut NodeMem, NodeRef<'_, Read, S>, u64, u64) -> Fresh<'t>,
{
    *count += 1;
    if src.is_leaf() {
        return leaf(dst, mem, src, min, max);
    }
    let internal = dst.internal();
    dst.alloc_copied_internal::<F>(src.unbranded(), max, mem, |mem, i, hi| {
        let lo = src.slot_min(i, min);
        copy_node::<F, S, L>(dst, mem, src.child(i, internal), (lo, hi), count, leaf)
    })
}

/// Copies the subtree of `src` (whose implied max is `max`) into fresh nodes of `dst`, every
/// entry cloned ([`WriterRoot::alloc_cloned_leaf`]): `dup`. The walk of [`copy_node`] without
/// the nodes' minimums, which only a mapped leaf needs.
pub(crate) fn dup_node<'t, E: Entry + Clone>(
    dst: WriterRoot<'t, Exclusive>,
    mem: &mut NodeMem,
    src: NodeRef<'_, Read, E>,
    max: u64,
    count: &mut u64,
) -> Fresh<'t> {
    *count += 1;
    if src.is_leaf() {
        return dst.alloc_cloned_leaf::<E>(src, max, mem);
    }
    let internal = dst.internal();
    dst.alloc_copied_internal::<E>(src.unbranded(), max, mem, |mem, i, hi| {
        dup_node::<E>(dst, mem, src.child(i, internal), hi, count)
    })
}

/// [`copy_node`] with every entry `e` of range `r` replaced by `f(r, &e)`
/// ([`WriterRoot::alloc_mapped_leaf`]): `dup_map`.
pub(crate) fn map_node<'t, E: Entry, F: Entry>(
    dst: WriterRoot<'t, Exclusive>,
    mem: &mut NodeMem,
    src: NodeRef<'_, Read, E>,
    count: &mut u64,
    f: &mut impl FnMut(RangeInclusive<u64>, &E) -> F,
) -> Fresh<'t> {
    let mut leaf =
        |dst: WriterRoot<'t, Exclusive>, mem: &mut NodeMem, src: NodeRef<'_, Read, E>, min, max| {
            dst.alloc_mapped_leaf::<E, F>(src, min, max, mem, f)
        };
    copy_node::<F, E, _>(dst, mem, src, (0, u64::MAX), count, &mut leaf)
}
