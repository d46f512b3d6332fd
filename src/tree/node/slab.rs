//! The node slab: where one tree's nodes come from and where they go back (the kernel's
//! `maple_node` kmem cache, per tree).
//!
//! Nodes are carved in address order out of chunks of 256-byte nodes (64-byte aligned, so a
//! node spans exactly four cache lines), from [`FIRST_CHUNK`] nodes for a new tree up to
//! [`MAX_CHUNK`] nodes (64 KiB) as the tree grows, and go back to the tree's free list instead
//! of to `malloc`:
//!
//! - the writer's frees (exclusive mode, unpublished nodes, the whole tree's free) push onto
//!   the free list at once;
//! - a node retired in RCU mode comes back from its deferred free, on whichever thread runs it,
//!   through [`Returner::give_back_all`] into the shared return list, which the writer takes in
//!   whole when its free list runs dry;
//! - once the free list has grown past [`SHRINK_MIN`] nodes, half the nodes in use, and twice
//!   what it held after the last shrink, [`Slab::shrink`] sorts it, gives every chunk whose
//!   nodes are all free back to the allocator, and hands out the rest lowest address first (a
//!   tree's nodes stay packed); in RCU mode this happens when the writer takes back what the
//!   deferred frees returned;
//! - the whole tree's free gives every chunk back at once ([`Slab::release_all`]), and so does
//!   the slab's drop.
//!
//! A chunk given back goes to its thread's spare chunks first (up to 512 nodes' worth), where
//! the next slab on that thread that needs a chunk of its size takes it: short-lived trees (a
//! fork's copy, built and dropped) reuse memory that is still in cache rather than cold memory
//! from the allocator (which also trims and re-faults its heap top under such churn).
//!
//! The whole tree's free needs `&mut` of the tree, which no reader borrow survives: no reader
//! can reach a node any more, retired ones included, so the chunks go back even while deferred
//! frees of retired nodes are still pending. Those hold the slab's shared part (an `Arc`), from
//! which the slab detaches: when they run, they give their addresses back into a list that
//! nothing hands out again (and nothing reads through), and the last of them frees it.
//!
//! With huge pages on ([`Options::huge_pages`](crate::Options::huge_pages)), a slab that has
//! grown past 1,024 nodes takes its further nodes from 2 MiB chunks, 2 MiB aligned and advised
//! `MADV_HUGEPAGE` (Linux; transparent huge pages in `madvise` mode take them as huge pages), so
//! that a big tree's lookups miss the TLB less. Such chunks are never spare.
//!
//! A `--cfg maple_tree_box_nodes` build gives every node its own `Box` instead (what the
//! sanitizers need to see a use of one freed node), and so does loom, whose nodes carry
//! allocation tracking: [`crate::sync::BOX_NODES`] says which of the two backends ([`Slab`] is
//! the one it picks); both are compiled in every build.

use core::ptr::NonNull;

use super::Node;

/// The node slab of this build: the chunked one, or one `Box` per node where
/// [`BOX_NODES`](crate::sync::BOX_NODES) says so (both are compiled in every build).
pub(crate) type Slab = <Backend<{ crate::sync::BOX_NODES }> as Pick>::Slab;

/// What a deferred free gives its nodes back through, for [`Slab`].
pub(crate) type Returner = <Backend<{ crate::sync::BOX_NODES }> as Pick>::Returner;

/// The backend `BOXED` names (see [`Slab`]).
pub(crate) struct Backend<const BOXED: bool>;

/// A backend's slab and returner.
pub(crate) trait Pick {
    type Slab;
    type Returner;
}

impl Pick for Backend<false> {
    type Slab = chunked::Slab;
    type Returner = chunked::Returner;
}

impl Pick for Backend<true> {
    type Slab = boxed::Slab;
    type Returner = boxed::Returner;
}

// Both backends offer the node layer one interface, checked in every build whichever it uses
// (which also keeps the other backend from being dead code there).
const _: () = {
    macro_rules! interface {
        ($s:ty, $r:ty) => {
            let _: fn(bool) -> $s = <$s>::new;
            let _: fn(&$s) -> bool = <$s>::huge_pages;
            let _: fn(&mut $s) -> NonNull<Node> = <$s>::alloc;
            let _: fn(&mut $s) -> NonNull<Node> = <$s>::alloc_fresh;
            let _: fn(&mut $s, usize) = <$s>::reserve;
            let _: unsafe fn(&mut $s, NonNull<Node>) = <$s>::free;
            let _: fn(&mut $s) -> $r = <$s>::returner;
            let _: unsafe fn(&mut $s) -> bool = <$s>::release_all;
            let _: unsafe fn(&$r, core::iter::Empty<NonNull<Node>>) = <$r>::give_back_all;
        };
    }
    interface!(chunked::Slab, chunked::Returner);
    interface!(boxed::Slab, boxed::Returner);
};

/// Most nodes in one chunk (64 KiB).
const MAX_CHUNK: usize = 256;

/// Nodes of a tree's first chunk (1 KiB): room for a small tree's root and leaves and the
/// copies its writes make, in one allocation.
const FIRST_CHUNK: usize = 4;

/// Free nodes a slab keeps before it tries to give chunks back (256 KiB).
const SHRINK_MIN: usize = 1024;

mod chunked {
    use ::alloc::alloc::{self, Layout};
    use ::alloc::sync::Arc;
    use ::alloc::vec::Vec;
    use core::ptr::NonNull;

    use smallvec::SmallVec;

    use crate::sync::{AtomicUsize, Ordering};

    use super::super::{Mutex, Node};
    use super::{FIRST_CHUNK, MAX_CHUNK, SHRINK_MIN};

    /// Bytes and nodes of a huge-page chunk.
    const HUGE_BYTES: usize = 2 << 20;
    const HUGE_CHUNK: usize = HUGE_BYTES / core::mem::size_of::<Node>();

    /// Nodes a slab with huge pages has in small chunks before it takes huge ones.
    const HUGE_AFTER: usize = 4 * MAX_CHUNK;

    /// Alignment of every node (a cache line). A chunk is allocated with the allocator's own
    /// alignment and [`PAD`] bytes more, and its nodes start at the first 64-byte boundary:
    /// `posix_memalign` would cost more than the rest of a small tree's `dup`.
    const ALIGN: usize = 64;
    const PAD: usize = ALIGN - 16;

    // Only where this slab is used (`!BOX_NODES`): loom's nodes, never in a chunk, are not
    // plain memory of 256 bytes.
    const _: () = assert!(crate::sync::BOX_NODES || core::mem::size_of::<Node>() % ALIGN == 0);
    const _: () = assert!(crate::sync::BOX_NODES || core::mem::align_of::<Node>() <= 16);

    /// The address of one node of a chunk (memory only: what is in it is the tree's business).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    pub(super) struct NodePtr(pub(super) NonNull<Node>);

    // SAFETY: a `NodePtr` is an address; the slab only moves it between its lists. Whoever
    // turns it back into a node access (the node layer) follows the tree's protocol, which is
    // what makes those accesses sound across threads, not the address.
    unsafe impl Send for NodePtr {}

    /// One allocation of `nodes` nodes, starting at `base` (64-byte aligned) within the block
    /// the allocator returned at `raw` (a huge chunk: 2 MiB at a 2 MiB boundary).
    pub(super) struct Chunk {
        pub(super) base: NodePtr,
        raw: NonNull<u8>,
        pub(super) nodes: usize,
        pub(super) huge: bool,
    }

    /// A node address as the slab keeps it (for the tests).
    #[cfg(test)]
    pub(super) fn ptr(p: NonNull<Node>) -> NodePtr {
        NodePtr(p)
    }

    // SAFETY: a chunk is memory owned by its slab; it carries no thread-bound state.
    unsafe impl Send for Chunk {}

    impl Chunk {
        fn layout(nodes: usize, huge: bool) -> Layout {
            let l = if huge {
                Layout::from_size_align(HUGE_BYTES, HUGE_BYTES)
            } else {
                Layout::from_size_align(nodes * core::mem::size_of::<Node>() + PAD, 16)
            };
            l.expect("a chunk of at most MAX_CHUNK nodes (or a huge one) has a valid layout")
        }

        /// A chunk of `nodes` nodes: this thread's spare one of that size, else a new one.
        fn new(nodes: usize) -> Chunk {
            if let Some(c) = Spare::take(nodes) {
                return c;
            }
            let layout = Chunk::layout(nodes, false);
            // SAFETY: the layout's size is non-zero (at least one 256-byte node).
            let Some(raw) = NonNull::new(unsafe { alloc::alloc(layout) }) else {
                alloc::handle_alloc_error(layout)
            };
            // The block is 16-byte aligned (the layout's alignment), so `skip` is 0, 16, 32 or
            // 48: at most `PAD`.
            let skip = raw.as_ptr().addr().wrapping_neg() % ALIGN;
            debug_assert!(skip <= PAD);
            // SAFETY: `skip <= PAD`, so `base` and the `nodes` nodes after it are within the
            // block (`nodes * 256 + PAD` bytes from `raw`).
            let base = unsafe { raw.add(skip) }.cast::<Node>();
            Chunk {
                base: NodePtr(base),
                raw,
                nodes,
                huge: false,
            }
        }

        /// A huge chunk: 2 MiB at a 2 MiB boundary, advised to be backed by a huge page.
        fn new_huge() -> Chunk {
            let layout = Chunk::layout(HUGE_CHUNK, true);
            // SAFETY: the layout's size is non-zero.
            let Some(raw) = NonNull::new(unsafe { alloc::alloc(layout) }) else {
                alloc::handle_alloc_error(layout)
            };
            #[cfg(all(feature = "std", target_os = "linux"))]
            {
                // SAFETY: the range is the block just allocated, ours alone and page aligned
                // (2 MiB); `MADV_HUGEPAGE` only changes how the kernel backs it, not its
                // contents. Failure (no transparent huge pages) leaves ordinary pages.
                let _ =
                    unsafe { libc::madvise(raw.as_ptr().cast(), HUGE_BYTES, libc::MADV_HUGEPAGE) };
            }
            Chunk {
                base: NodePtr(raw.cast()),
                raw,
                nodes: HUGE_CHUNK,
                huge: true,
            }
        }

        /// Gives the chunk up: to this thread's spare chunks if they have room, else back to
        /// the allocator.
        ///
        /// # Safety
        ///
        /// No node of the chunk is used again (by the slab it was of).
        unsafe fn free(self) {
            if self.huge {
                // SAFETY: the caller's contract.
                return unsafe { self.dealloc() };
            }
            if let Some(c) = Spare::keep(self) {
                // SAFETY: the caller's contract.
                unsafe { c.dealloc() };
            }
        }

        /// Gives the chunk back to the allocator.
        ///
        /// # Safety
        ///
        /// No node of the chunk is used again.
        unsafe fn dealloc(self) {
            // SAFETY: `raw` was allocated by `Chunk::new` with this layout, freed once (`self`
            // is consumed); the caller's contract for the nodes in it.
            unsafe { alloc::dealloc(self.raw.as_ptr(), Chunk::layout(self.nodes, self.huge)) };
        }

        /// Whether `p` is one of this chunk's nodes.
        pub(super) fn holds(&self, p: NodePtr) -> bool {
            let (a, b) = (self.base.0.as_ptr().addr(), p.0.as_ptr().addr());
            b >= a && b < a + self.nodes * core::mem::size_of::<Node>()
        }
    }

    /// Most nodes a thread keeps in spare chunks (128 KiB).
    #[cfg(feature = "std")]
    const SPARE_NODES: usize = 512;

    /// A thread's spare chunks: chunks of slabs that let them go (a tree dropped, chunks
    /// shrunk away), kept for the next slab on this thread that needs one of the same size, so
    /// that short-lived trees (a fork's copy, built and dropped) reuse memory still in cache
    /// instead of taking cold memory from the allocator each time. Given back to the allocator
    /// when the thread exits.
    #[cfg(feature = "std")]
    struct Spare {
        chunks: Vec<Chunk>,
        nodes: usize,
    }

    #[cfg(feature = "std")]
    std::thread_local! {
        static SPARE: core::cell::RefCell<Spare> =
            const { core::cell::RefCell::new(Spare { chunks: Vec::new(), nodes: 0 }) };
    }

    #[cfg(feature = "std")]
    impl Spare {
        /// This thread's spare chunk of `nodes` nodes, if it has one.
        fn take(nodes: usize) -> Option<Chunk> {
            SPARE
                .try_with(|s| {
                    let mut s = s.try_borrow_mut().ok()?;
                    let i = s.chunks.iter().rposition(|c| c.nodes == nodes)?;
                    s.nodes -= nodes;
                    Some(s.chunks.swap_remove(i))
                })
                .ok()
                .flatten()
        }

        /// Keeps `c` if this thread has room for it; else hands it back.
        fn keep(c: Chunk) -> Option<Chunk> {
            let mut c = Some(c);
            let _ = SPARE.try_with(|s| {
                let Ok(mut s) = s.try_borrow_mut() else {
                    return;
                };
                let n = c.as_ref().map_or(0, |c| c.nodes);
                if s.nodes + n <= SPARE_NODES {
                    s.nodes += n;
                    s.chunks.extend(c.take());
                }
            });
            c
        }
    }

    /// Without std (no thread-locals): no spare chunks; a chunk given up goes back to the
    /// allocator at once.
    #[cfg(not(feature = "std"))]
    struct Spare;

    #[cfg(not(feature = "std"))]
    impl Spare {
        fn take(_nodes: usize) -> Option<Chunk> {
            None
        }

        fn keep(c: Chunk) -> Option<Chunk> {
            Some(c)
        }
    }

    #[cfg(feature = "std")]
    impl Drop for Spare {
        fn drop(&mut self) {
            for c in self.chunks.drain(..) {
                // SAFETY: a spare chunk belongs to no slab: none of its nodes is used.
                unsafe { c.dealloc() };
            }
        }
    }

    /// What the writer shares with the deferred frees (made at the first one): the return list.
    /// Holds addresses only: nothing is read or written through them here.
    pub(super) struct Shared {
        /// Nodes whose deferred free has run, not yet taken back by the writer.
        returned: Mutex<Vec<NodePtr>>,
        /// `returned`'s length (a hint for the writer: Relaxed).
        returned_len: AtomicUsize,
    }

    /// The never-used nodes at the end of a chunk, handed out in address order.
    #[derive(Default)]
    pub(super) struct Run {
        /// The next one.
        next: Option<NodePtr>,
        /// How many are left.
        pub(super) left: usize,
    }

    impl Run {
        /// The next never-used node, if any is left.
        #[inline]
        fn take(&mut self) -> Option<NonNull<Node>> {
            match self.next {
                Some(p) if self.left != 0 => {
                    self.left -= 1;
                    // In bounds or one past the chunk's end (when `left` reaches 0, unused).
                    self.next = NonNull::new(p.0.as_ptr().wrapping_add(1)).map(NodePtr);
                    Some(p.0)
                }
                _ => None,
            }
        }

        /// The run of a new chunk `c`, whose first node is handed out.
        fn start(c: &Chunk) -> (Run, NonNull<Node>) {
            let base = c.base.0;
            let run = Run {
                next: NonNull::new(base.as_ptr().wrapping_add(1)).map(NodePtr),
                left: c.nodes - 1,
            };
            (run, base)
        }

        /// The never-used nodes of this run in `c`.
        fn unused_in(&self, c: &Chunk) -> usize {
            match self.next {
                Some(n) if self.left != 0 && c.holds(n) => self.left,
                _ => 0,
            }
        }

        /// Whether the run is in `c`.
        fn is_in(&self, c: &Chunk) -> bool {
            self.next.is_some_and(|n| c.holds(n))
        }
    }

    /// A tree's node slab, owned by its writer (see the module documentation).
    pub(crate) struct Slab {
        /// Free nodes, handed out last in first out.
        pub(super) free: Vec<NodePtr>,
        /// Never-used nodes of the newest chunk [`alloc`](Self::alloc) took.
        pub(super) run: Run,
        /// Never-used nodes of the newest chunk [`alloc_fresh`](Self::alloc_fresh) took: a run
        /// of its own, so that the nodes made in order through it (the leaves of an in-order
        /// build under readers) lie next to each other, not between the parents and the
        /// short-lived nodes made meanwhile.
        pub(super) fresh: Run,
        /// Nodes of the next chunk.
        chunk_nodes: usize,
        /// Free-list length at which [`shrink`](Self::shrink) runs next.
        shrink_at: usize,
        /// Every chunk, sorted by address. Three inline: a small tree written under readers
        /// takes three chunks on its first ten stores (two for its run, one for the fresh run)
        /// and keeps them without an allocation for the list.
        pub(super) chunks: SmallVec<[Chunk; 3]>,
        /// Made by the first [`returner`](Self::returner).
        pub(super) shared: Option<Arc<Shared>>,
        /// Nodes in all chunks.
        nodes: usize,
        /// Take huge chunks once past [`HUGE_AFTER`] nodes.
        huge: bool,
    }

    impl Drop for Slab {
        fn drop(&mut self) {
            // SAFETY: the slab is dropped with its tree (`&mut`): no node of it is used again,
            // and the deferred frees still pending give back into a list nobody takes from.
            unsafe { self.release_all() };
        }
    }

    /// A holder of a slab's shared part, for a deferred free to give its node back through.
    pub(crate) struct Returner(Arc<Shared>);

    impl Returner {
        /// Gives back every node of `ps` to the slab's writer, under one lock.
        ///
        /// # Safety
        ///
        /// Each of `ps` is a node of this slab (from its [`Slab::alloc`] or
        /// [`Slab::alloc_fresh`]) that nothing can reach any more, given back (or freed) once.
        pub(crate) unsafe fn give_back_all(
            &self,
            ps: impl ExactSizeIterator<Item = NonNull<Node>>,
        ) {
            let mut r = self.0.returned.lock();
            r.reserve(ps.len());
            r.extend(ps.map(NodePtr));
            self.0.returned_len.store(r.len(), Ordering::Relaxed);
        }
    }

    impl Slab {
        /// An empty slab: no chunk until the first node. `huge`: take huge-page chunks once
        /// the tree is big (see the module documentation).
        pub(crate) fn new(huge: bool) -> Self {
            Slab {
                nodes: 0,
                // Huge pages are a std feature (`madvise`): without std, never huge chunks.
                huge: huge && cfg!(feature = "std"),
                free: Vec::new(),
                run: Run::default(),
                fresh: Run::default(),
                chunk_nodes: FIRST_CHUNK,
                shrink_at: SHRINK_MIN,
                chunks: SmallVec::new(),
                shared: None,
            }
        }

        /// Memory for one node (uninitialised), nobody else's: a free node, else the next
        /// never-used one, else one the deferred frees gave back, else one of a new chunk.
        #[inline]
        pub(crate) fn alloc(&mut self) -> NonNull<Node> {
            if let Some(p) = self.free.pop() {
                return p.0;
            }
            match self.run.take() {
                Some(p) => p,
                None => self.alloc_slow(),
            }
        }

        /// Memory for one node never used before (uninitialised), the next in address order of
        /// a run of chunks that only this function takes nodes from: for nodes that should lie
        /// next to each other in the order they are made (the RCU fill's leaf copies), whatever
        /// else is allocated meanwhile.
        #[inline]
        pub(crate) fn alloc_fresh(&mut self) -> NonNull<Node> {
            match self.fresh.take() {
                Some(p) => p,
                None => self.fresh_chunk(),
            }
        }

        /// The newest chunk is used up: a node the deferred frees gave back, else a new chunk
        /// (a spare one of this thread if it has one of the size).
        #[cold]
        #[inline(never)]
        fn alloc_slow(&mut self) -> NonNull<Node> {
            if self.free.is_empty() {
                self.shrink_at = SHRINK_MIN;
            }
            if self
                .shared
                .as_ref()
                .is_some_and(|sh| sh.returned_len.load(Ordering::Relaxed) != 0)
            {
                self.take_returned();
                // In RCU mode frees come back this way only: a tree that shrank gives its
                // chunks back here.
                if self.free.len() >= self.shrink_at {
                    self.shrink();
                }
                if let Some(p) = self.free.pop() {
                    return p.0;
                }
            }
            let c = self.new_chunk();
            let (run, p) = Run::start(c);
            self.run = run;
            p
        }

        /// The fresh run is used up: a new chunk for it.
        #[cold]
        #[inline(never)]
        fn fresh_chunk(&mut self) -> NonNull<Node> {
            let c = self.new_chunk();
            let (run, p) = Run::start(c);
            self.fresh = run;
            p
        }

        /// Makes room for `n` more nodes in one chunk (up to [`MAX_CHUNK`]), if the newest
        /// chunk has less left: `dup` makes its copy's nodes in one run.
        pub(crate) fn reserve(&mut self, n: usize) {
            if self.run.left < n {
                self.chunk_nodes = self.chunk_nodes.max(n.min(MAX_CHUNK));
            }
        }

        /// Allocates the next chunk (none of its nodes handed out yet).
        fn new_chunk(&mut self) -> &Chunk {
            let c = if self.huge && self.nodes >= HUGE_AFTER {
                Chunk::new_huge()
            } else {
                Chunk::new(self.chunk_nodes)
            };
            self.nodes += c.nodes;
            let at = self.chunks.partition_point(|o| o.base < c.base);
            self.chunks.insert(at, c);
            self.chunk_nodes = (self.chunk_nodes * 2).min(MAX_CHUNK);
            &self.chunks[at]
        }

        /// Takes back `p`, to hand it out again.
        ///
        /// # Safety
        ///
        /// `p` is a node of this slab (from its [`alloc`](Self::alloc) or
        /// [`alloc_fresh`](Self::alloc_fresh)) that nothing can reach any more, freed (or given
        /// back) once.
        #[inline]
        pub(crate) unsafe fn free(&mut self, p: NonNull<Node>) {
            self.free.push(NodePtr(p));
            if self.free.len() >= self.shrink_at {
                self.shrink();
            }
        }

        /// Whether the slab takes huge-page chunks once big.
        pub(crate) fn huge_pages(&self) -> bool {
            self.huge
        }

        /// A holder of the slab for a deferred free (see [`Returner::give_back_all`]).
        #[inline]
        pub(crate) fn returner(&mut self) -> Returner {
            let sh = self.shared.get_or_insert_with(|| {
                Arc::new(Shared {
                    returned: Mutex::new(Vec::new()),
                    returned_len: AtomicUsize::new(0),
                })
            });
            Returner(Arc::clone(sh))
        }

        /// Moves the nodes the deferred frees gave back onto the free list.
        fn take_returned(&mut self) {
            if let Some(sh) = &self.shared {
                let mut r = sh.returned.lock();
                self.free.append(&mut r);
                sh.returned_len.store(0, Ordering::Relaxed);
            }
        }

        /// Gives every chunk whose nodes are all free back to the allocator, and orders the
        /// free list so that the lowest addresses go out first.
        #[cold]
        #[inline(never)]
        pub(super) fn shrink(&mut self) {
            self.take_returned();
            let live = self
                .nodes
                .saturating_sub(self.free.len() + self.run.left + self.fresh.left);
            if self.free.len() < live / 2 {
                // Free nodes under half the live ones: not worth a sort (a tree that churns
                // keeps its free list); look again once they are.
                self.shrink_at = SHRINK_MIN.max(live / 2);
                return;
            }
            self.free.sort_unstable();
            let (mut kept, mut i) = (0, 0);
            let mut gone = SmallVec::<[usize; 8]>::new();
            for (ci, c) in self.chunks.iter().enumerate() {
                let start = i;
                while i < self.free.len() && c.holds(self.free[i]) {
                    i += 1;
                }
                // The never-used nodes of the newest chunks count as free.
                let unused = self.run.unused_in(c) + self.fresh.unused_in(c);
                if i - start + unused == c.nodes {
                    gone.push(ci);
                } else {
                    self.free.copy_within(start..i, kept);
                    kept += i - start;
                }
            }
            debug_assert_eq!(i, self.free.len(), "a free node outside every chunk");
            self.free.truncate(kept);
            for ci in gone.into_iter().rev() {
                let c = self.chunks.remove(ci);
                self.nodes -= c.nodes;
                // A newest chunk: nothing left to hand out from it.
                if self.run.is_in(&c) {
                    self.run = Run::default();
                }
                if self.fresh.is_in(&c) {
                    self.fresh = Run::default();
                }
                // SAFETY: every node of the chunk was on the free list (just counted, and
                // removed from it) or never handed out (and no longer will be), so none is in
                // use or reachable, and none is handed out again.
                unsafe { c.free() };
            }
            self.free.reverse();
            self.shrink_at = SHRINK_MIN.max(2 * self.free.len());
        }

        /// Gives every chunk back and detaches from the deferred frees still pending (see the
        /// module documentation): the whole tree's free. `true`: every node of the slab is
        /// gone (the boxed slab frees nodes one by one, and returns `false`).
        ///
        /// # Safety
        ///
        /// No node of the slab is used again: the caller holds its tree exclusively (`&mut`,
        /// so no reader can reach a node, retired ones included) and forgets every node.
        #[inline]
        pub(crate) unsafe fn release_all(&mut self) -> bool {
            if self.chunks.is_empty() && self.shared.is_none() {
                // Nothing was ever allocated, or all of it is released already (an empty
                // tree's drop, or the slab's drop after the tree's free): no node, free or in
                // a run, exists without a chunk.
                self.chunk_nodes = FIRST_CHUNK;
                return true;
            }
            // SAFETY: the caller's contract.
            unsafe { self.release_chunks() }
        }

        /// [`release_all`](Self::release_all) of a slab with chunks.
        ///
        /// # Safety
        ///
        /// As `release_all`'s.
        #[inline(never)]
        unsafe fn release_chunks(&mut self) -> bool {
            for c in self.chunks.drain(..) {
                // SAFETY: no node of it is used again (caller contract); the deferred frees
                // still pending give back to the detached list below, never handed out.
                unsafe { c.free() };
            }
            self.shared = None;
            self.nodes = 0;
            self.free.clear();
            self.run = Run::default();
            self.fresh = Run::default();
            self.chunk_nodes = FIRST_CHUNK;
            self.shrink_at = SHRINK_MIN;
            true
        }
    }
}

mod boxed {
    use core::ptr::NonNull;

    use super::super::Node;

    /// One `Box` per node (see the module documentation); the huge-pages option is only kept
    /// (for a `dup` to pass on).
    #[derive(Debug, Default)]
    pub(crate) struct Slab {
        huge: bool,
    }

    /// Nothing to hold: a node goes back to the allocator.
    #[derive(Debug)]
    pub(crate) struct Returner;

    impl Returner {
        /// Frees `p`.
        ///
        /// # Safety
        ///
        /// `p` is a node from [`Slab::alloc`] that nothing can reach any more, freed once.
        pub(crate) unsafe fn give_back(&self, p: NonNull<Node>) {
            // SAFETY: the caller's contract; a slab's node is an `alloc_boxed` one.
            unsafe { super::super::free_boxed(p) };
        }

        /// Frees every node of `ps`.
        ///
        /// # Safety
        ///
        /// As [`give_back`](Self::give_back), for each of `ps`.
        pub(crate) unsafe fn give_back_all(
            &self,
            ps: impl ExactSizeIterator<Item = NonNull<Node>>,
        ) {
            for p in ps {
                // SAFETY: the caller's contract.
                unsafe { self.give_back(p) };
            }
        }
    }

    impl Slab {
        pub(crate) fn new(huge: bool) -> Self {
            Slab { huge }
        }
        pub(crate) fn huge_pages(&self) -> bool {
            self.huge
        }
        pub(crate) fn alloc(&mut self) -> NonNull<Node> {
            super::super::alloc_boxed()
        }
        pub(crate) fn alloc_fresh(&mut self) -> NonNull<Node> {
            super::super::alloc_boxed()
        }
        pub(crate) fn reserve(&mut self, _n: usize) {}
        /// Frees `p`.
        ///
        /// # Safety
        ///
        /// `p` is a node from [`alloc`](Self::alloc) that nothing can reach any more, freed
        /// once.
        pub(crate) unsafe fn free(&mut self, p: NonNull<Node>) {
            // SAFETY: the caller's contract; a slab's node is an `alloc_boxed` one.
            unsafe { super::super::free_boxed(p) };
        }
        pub(crate) fn returner(&mut self) -> Returner {
            Returner
        }
        /// Nothing to release: every node is freed on its own (`false`).
        ///
        /// # Safety
        ///
        /// None needed; `unsafe` as the chunked slab's.
        pub(crate) unsafe fn release_all(&mut self) -> bool {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use core::ptr::NonNull;

    use super::super::Node;
    // The chunked slab itself, whichever backend the build uses.
    use super::chunked::{ptr as chunked_ptr, Slab};
    use super::{FIRST_CHUNK, MAX_CHUNK, SHRINK_MIN};

    fn addr(p: NonNull<Node>) -> usize {
        p.as_ptr().addr()
    }

    /// Nodes come out 64-byte aligned, distinct, in address order within a chunk, from chunks
    /// that double up to `MAX_CHUNK`; all of them free gives every chunk back.
    #[test]
    fn chunks_grow_align_and_go_back() {
        let mut s = Slab::new(false);
        let n = 3 * MAX_CHUNK;
        let ps: Vec<_> = (0..n).map(|_| s.alloc()).collect();
        let mut seen = std::collections::BTreeSet::new();
        for (i, &p) in ps.iter().enumerate() {
            assert_eq!(addr(p) % 64, 0, "node {i} not cache-line aligned");
            assert!(seen.insert(addr(p)), "node {i} handed out twice");
        }
        // FIRST_CHUNK, doubling up to 256, then 256-node chunks.
        let mut sizes = vec![];
        let mut c = FIRST_CHUNK;
        let mut total = 0;
        while total < n {
            sizes.push(c);
            total += c;
            c = (c * 2).min(MAX_CHUNK);
        }
        assert_eq!(s.chunks.len(), sizes.len());
        // Within a chunk each node follows the one before: every step but the one into each
        // new chunk is exactly one node.
        let steps = ps
            .windows(2)
            .filter(|w| addr(w[1]).wrapping_sub(addr(w[0])) == 256)
            .count();
        assert_eq!(steps, n - sizes.len(), "a chunk's nodes in address order");
        for p in ps {
            // SAFETY: each node is this slab's, unused, freed once.
            unsafe { s.free(p) };
        }
        // Every node free (the newest chunk's unused ones count): every chunk goes back.
        s.shrink();
        assert!(s.chunks.is_empty(), "{} chunks left", s.chunks.len());
        assert_eq!(addr(s.alloc()) % 64, 0, "and the slab goes on");
    }

    /// Fresh nodes come from a run of their own: made alternately with other nodes, they still
    /// follow each other in address order, and a slab whose nodes are all free gives back
    /// both runs' chunks.
    #[test]
    fn fresh_nodes_follow_each_other() {
        let mut s = Slab::new(false);
        let mut fresh = vec![];
        let mut other = vec![];
        for _ in 0..3 * MAX_CHUNK {
            fresh.push(s.alloc_fresh());
            other.push(s.alloc());
            other.push(s.alloc());
        }
        let apart = fresh
            .windows(2)
            .filter(|w| addr(w[1]).wrapping_sub(addr(w[0])) != 256)
            .count();
        // Only the steps into a new chunk of the fresh run: 4 + 8 + ... + 256 + 256 + 256 (and
        // one more for the chunks the others took first).
        assert!(apart <= 10, "{apart} fresh nodes not after the one before");
        let mut all: Vec<_> = fresh.iter().chain(&other).map(|&p| addr(p)).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 9 * MAX_CHUNK, "a node handed out twice");
        for p in fresh.into_iter().chain(other) {
            // SAFETY: each node is this slab's, unused, freed once.
            unsafe { s.free(p) };
        }
        s.shrink();
        assert!(s.chunks.is_empty(), "{} chunks left", s.chunks.len());
    }

    /// With huge pages, a slab past `HUGE_AFTER` nodes takes 2 MiB chunks at 2 MiB boundaries,
    /// which go back to the allocator, never to the spare chunks.
    #[test]
    #[cfg(feature = "std")] // huge pages are a std feature
    fn huge_chunks_past_the_threshold() {
        let mut s = Slab::new(true);
        let ps: Vec<_> = (0..5_000).map(|_| s.alloc()).collect();
        let huge: Vec<_> = s.chunks.iter().filter(|c| c.huge).collect();
        assert_eq!(
            huge.len(),
            1,
            "one huge chunk holds the nodes past the threshold"
        );
        assert_eq!(huge[0].base.0.as_ptr().addr() % (2 << 20), 0);
        assert_eq!(huge[0].nodes, 8192);
        assert!(
            s.chunks
                .iter()
                .filter(|c| !c.huge)
                .map(|c| c.nodes)
                .sum::<usize>()
                >= 1024
        );
        for p in ps {
            // SAFETY: each node is this slab's, unused, freed once.
            unsafe { s.free(p) };
        }
        s.shrink();
        assert!(
            s.chunks.iter().all(|c| !c.huge),
            "a huge chunk all free goes back"
        );
    }

    /// A shrink keeps a chunk that still has a node in use, gives back the others, and hands
    /// out what it kept lowest address first.
    #[test]
    fn shrink_keeps_chunks_in_use_and_orders_the_free_list() {
        let mut s = Slab::new(false);
        let ps: Vec<_> = (0..2 * SHRINK_MIN).map(|_| s.alloc()).collect();
        let keep = ps[SHRINK_MIN / 2 + 7];
        let chunks_before = s.chunks.len();
        for &p in ps.iter().rev().filter(|&&p| p != keep) {
            // SAFETY: as above.
            unsafe { s.free(p) };
        }
        s.shrink();
        assert!(s.chunks.len() < chunks_before);
        let holder = s.chunks.iter().position(|c| c.holds(chunked_ptr(keep)));
        assert!(holder.is_some(), "the chunk of a node in use stays");
        let again: Vec<_> = (0..s.free.len()).map(|_| s.alloc()).collect();
        assert!(again.windows(2).all(|w| addr(w[0]) < addr(w[1])));
        assert!(!again.contains(&keep));
    }

    /// A tree emptied in RCU mode: its nodes come back through a returner, and the writer's
    /// next allocation past its chunk takes them and gives the chunks back.
    #[test]
    fn returned_nodes_shrink_the_slab() {
        let mut s = Slab::new(false);
        let ps: Vec<_> = (0..4 * SHRINK_MIN).map(|_| s.alloc()).collect();
        let before = s.chunks.len();
        let r = s.returner();
        // SAFETY: each node is this slab's, unused, given back once.
        unsafe { r.give_back_all(ps.into_iter()) };
        // Use up the newest chunk; the next allocation takes the returned nodes.
        for _ in 0..s.run.left {
            s.alloc();
        }
        let again = s.alloc();
        assert!(
            s.chunks.len() < before / 2,
            "{} of {before} chunks left",
            s.chunks.len()
        );
        assert!(s.chunks.iter().any(|c| c.holds(chunked_ptr(again))));
    }

    /// Nodes given back by deferred frees come back to the writer when its chunk is used up;
    /// once the slab is released (or dropped), a returner still pending gives back into a
    /// list nobody takes from.
    #[test]
    fn returned_nodes_and_release() {
        let mut s = Slab::new(false);
        let a = s.alloc();
        let b = s.alloc();
        for _ in 2..FIRST_CHUNK {
            s.alloc();
        }
        let r = s.returner();
        // SAFETY: `a` is this slab's, unused, given back once.
        unsafe { r.give_back_all([a].into_iter()) };
        // The first chunk is used up: the next node is the one given back.
        assert_eq!(s.alloc(), a);
        // SAFETY: nothing uses the nodes.
        assert!(unsafe { s.release_all() });
        assert!(s.chunks.is_empty() && s.free.is_empty());
        // A late give-back of a node of the released chunk: the address is only kept.
        // SAFETY: `b` is of this slab, given back once; nothing reads through it.
        unsafe { r.give_back_all([b].into_iter()) };
        assert!(
            s.shared.is_none(),
            "the released slab takes nothing back from old returners"
        );
        let c = s.alloc();
        assert_eq!(addr(c) % 64, 0);
        drop(s);
        drop(r);
    }
}
