//! Structural duplication (`__mt_dup`): the tree copied node by node, entries cloned.

use crate::entry::Entry;

use super::node::{Fresh, Kind, NodeRef, WriterRoot};
use super::write::WriteGuard;
use super::{MapleTree, Options};

impl<E: Entry + Clone> WriteGuard<'_, E> {
    /// A structural copy of the tree (`__mt_dup`): every node copied with the same pivots, gaps
    /// and shape, every entry cloned, so replacing each entry afterwards over the same range is an
    /// exact fit. The copy uses the same options and collector.
    pub fn dup(&self) -> MapleTree<E> {
        let mut opts = Options::new().alloc(self.internal == Kind::ARange);
        if !self.root.is_default_collector() {
            opts = opts.collector(self.collector().clone());
        }
        let mut new = MapleTree::with_options(opts);
        let Some(src) = self.root.node() else {
            return new;
        };
        let mut count = 0u64;
        {
            // The copy is built and published under `&mut new`: nobody can see it yet.
            let dst = new.root.exclusive();
            let copy = copy_node::<E>(dst, src, u64::MAX, &mut count);
            dst.publish(copy);
        }
        *new.len.get_mut() = self.len();
        let st = new.writer.get_mut();
        st.height = self.st.height;
        st.append = self.st.append;
        st.stats.nodes_allocated = count;
        new
    }
}

/// Copies the subtree of `src` (whose implied max is `max`) into fresh nodes of `dst`, depth
/// first: each node is one `malloc` and a copy of its words ([`WriterRoot::alloc_cloned_leaf`],
/// [`WriterRoot::alloc_copied_internal`]), children are copied before their parent and linked to
/// it afterwards.
fn copy_node<'t, E: Entry + Clone>(
    dst: WriterRoot<'t>,
    src: NodeRef<'_>,
    max: u64,
    count: &mut u64,
) -> Fresh<'t> {
    *count += 1;
    if src.is_leaf() {
        return dst.alloc_cloned_leaf::<E>(src, max);
    }
    let internal = dst.internal();
    dst.alloc_copied_internal(src, max, |i, hi| {
        copy_node::<E>(dst, src.child(i, internal), hi, count)
    })
}
