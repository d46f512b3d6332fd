//! Raw nodes: layout, allocation, and the publication primitives. All of the tree's `unsafe`
//! lives in this module and its files; everything above it goes through the typed handles.
//! One concern per file: `layout` (the node and its words), `root` (the root word, the writer
//! lock, the readers' root), `writer` (the writer's root: publication, allocation,
//! retirement), `handles` (node handles and their loads), `live` (the writer's node handles
//! and their stores), `leaf` (the iterator's leaf handles), `retire` (node memory, deferred
//! drops), `slab` (the node allocator), `ord` (the ordering of each protocol row). The types:
//!
//! - [`Root`]: the root word, the collector, and the writer lock with the writer state. The
//!   writer's view of the root comes only from this tree's own lock guard ([`WriterLock`], made
//!   by [`Root::lock`]) or from `&mut` of the tree ([`ExclusiveRoot`], made by
//!   [`Root::exclusive`]), and lives for the borrow of that guard.
//! - [`RootRef`]: the root as a reader sees it, made from a guard checked against the tree's
//!   collector ([`Root::reader`]), or from the writer ([`WriterRoot::view`]); loads only.
//! - [`WriterRoot`]: the root as the one writer sees it, typed by its write [`Mode`] ([`Rcu`]
//!   or [`Exclusive`]): writer-private loads, publication of a new root, allocation,
//!   retirement, entry drops (deferred ones only in RCU mode, immediate ones only in
//!   exclusive mode).
//! - [`NodeRef`]: a node reachable for `'g`; `NodeRef<'g>` (access [`Read`]) loads only, and
//!   nothing turns it into a writer handle. [`Live`] (`NodeRef<'w, Write>`): a node the writer
//!   reached from its [`WriterRoot`] (child loads from a `Live` give `Live`s), with the stores;
//!   [`NodeRef::view`] gives its reader handle for the shared read code.
//! - [`Fresh`]: a node nobody can reach yet, published only by being consumed
//!   ([`WriterRoot::publish`], [`Live::publish_child`], [`Live::append_child`], or a slot of a
//!   fresh parent).
//! - [`Unlinked`]: a node no live node links any more, which only the unlinking publications
//!   return (the replaced child, the old root) or the node layer's parent-word check
//!   ([`WriterRoot::unlinked`]) makes; only it can be retired ([`WriterRoot::retire`]).
//!   Nodes come from the tree's slab and retired nodes wait, both in [`NodeMem`], until the
//!   writer's borrow ends, then go to the collector (RCU mode: back into the slab after a grace
//!   period) or back into the slab at once (exclusive mode).
//! - [`Slot`]: what the writer stores: internal slots take only node handles, leaves only entry
//!   words; [`Loaded`]: a leaf word a node load returned, whose entry can be borrowed for `'g`
//!   if the load was branded (below).
//! - [`SavedNodes`]: the writer's saved path, trusted only while no node has been retired.
//!
//! ## The brand
//!
//! Which type a leaf word is an entry of is a type parameter, the brand: [`RootRef`],
//! [`NodeRef`], [`Loaded`] (and the iterator's leaf handles, the walkers' `Level`s and
//! `Walker`s above this layer) carry the tree's entry type `E` as `PhantomData<fn() -> E>`
//! (nothing at run time), and only a [`Loaded`] branded by an [`Entry`] type has
//! [`entry`](Loaded::entry), [`cloned`](Loaded::cloned) and [`with_entry`](Loaded::with_entry),
//! which name no type: the read paths borrow entries without naming `E` anywhere.
//!
//! How the brand is established: the tree's [`Root`] is a `Root<S, E>`, made for
//! `MapleTree<E>` with its own `E` (the tree's only root); every branded handle descends from
//! it. Its reader view ([`Root::reader`]) and the views of its write guards
//! ([`WriterLock::view`], [`ExclusiveRoot::view`]) are `RootRef<'g, Read, E>`; its writer
//! ([`WriterLock::writer`], [`ExclusiveRoot::writer`]) is a `WriterRoot<'w, M, E>`, whose
//! [`view`](WriterRoot::view) and [`walk_root`](WriterRoot::walk_root) (a writing cursor's
//! walks) are branded `E` too. A branded root hands out nodes of its brand ([`RootRef::node`]),
//! a branded node children and leaf words of its brand, and nothing else makes a branded
//! handle: [`NodeRef::from_word`] (`unsafe`) is the one constructor, called only on words of
//! the root or node that carries the brand. Dropping a brand ([`RootRef::unbranded`],
//! [`NodeRef::unbranded`], [`WriterRoot::unbranded`]) is always sound: an [`Unbranded`]
//! handle's loads cannot be read as entries.
//!
//! What stays unbranded, and why: the writer's structural handles ([`Live`] from
//! [`WriterRoot::node`], [`Fresh`], [`Unlinked`], [`Slot`]), the write paths' walker, the gap
//! search, `validate`, `dump` and `dup`'s copies. They move words from slot to slot and
//! never borrow an entry; the writer names the words it owns as `Word<E>` of its own
//! `Writer<E, M>` (a brand on its node handles would not check those names, which are made
//! from raw words anyway: see "Entry words" below). The writer's reads of entries go through
//! branded handles: `WriteGuard::load`/`iter` through the guard's view, `drain`/`retain`
//! through a read walk of the writer's view, a writing cursor through its branded walker (the
//! in-place exact fit it shares with the write paths takes any brand).
//!
//! ## What is enforced, and what is left
//!
//! Enforced by the types: a reader's handles cannot store; a [`WriterRoot`] (hence every
//! [`Live`], [`Fresh`] and [`Unlinked`]) exists only under this tree's writer lock or `&mut`
//! and lives no longer than that borrow; a node is retired only through an [`Unlinked`], and
//! at most once (the writer's marking of the dead bit tells a second retirement apart); no
//! handle of the write that retired a node outlives the node, and the write never touches a
//! node it handed on;
//! deferred entry drops need an RCU-mode root, immediate ones an exclusive-mode root; an
//! entry is borrowed or cloned only from a leaf load branded with the tree's entry type (see
//! "The brand"), so no read path names that type.
//!
//! Left to the writer's invariants (checked at run time, or not at all):
//!
//! - **Unlinked by check**: [`WriterRoot::unlinked`] trusts that every child store goes
//!   through this layer's stores (which record the parent word) and that the writer never
//!   leaves one node linked in two live places; a node still linked is refused (and the
//!   writer's debug builds panic), a node unlinked but found linked by a stale word beyond a
//!   node's end would be leaked, never freed early.
//! - **In-place stores** of a [`Live`] are not typed by where they may go: Relaxed stores only
//!   beyond the published end or into fresh nodes, Release stores only where the publication
//!   table says (P3/P5/P9), seals respected — the write paths' contract.
//! - **Handles across writes**: a writing cursor keeps its writer (and its walker's [`Live`]
//!   nodes) for its whole life; it re-walks after any write that may have changed the
//!   structure (its `valid` flag), and the nodes its writes retire in exclusive mode are
//!   freed when it is dropped.
//! - **Entry words**: the writer names leaf words as [`Word<E>`](crate::entry::Word) and
//!   stores only those into leaves ([`NodeRef::init_entry`], [`NodeRef::publish_entry`]); a
//!   word's value is taken back only through a [`Released`], which
//!   only the tree's [`Ledger`] makes (when the last slot of a word
//!   goes), consumed once by [`WriterRoot::defer_drop_entry`] (RCU mode),
//!   [`WriterRoot::drop_entry_now`] or [`WriterRoot::take_entries`] (exclusive mode) or by
//!   [`Root::free_all`]. Left to the writer: telling the ledger once per slot that starts
//!   sharing a word or stops holding one (the ledger's contract; `validate` checks the shared
//!   counts against the leaves), and that the words it names `Word<E>` and stores are those of
//!   its tree's `E` (its `Writer<E, M>` holds a `WriterRoot<'w, M, E>` of a `Root<_, E>`, so
//!   the two `E`s are one; the words themselves are named from raw loads). Given that, the
//!   readers' side is typed: [`Loaded::entry`] takes no type, the brand names it (above).
//! - **The public write guard** keeps one type for both modes (`MapleTree::lock` and
//!   `MapleTree::exclusive` both return a `WriteGuard<'_, E>`); it picks the typed writer once
//!   per call.
//!
//! # Layout (as the kernel's `struct maple_node`, include/linux/maple_tree.h)
//!
//! Every node is 256 bytes: a parent word and 31 data words. The kernel aligns nodes to 256 bytes
//! to keep tags in the low pointer bits; here bit 0 is the only low tag, and nodes are 64-byte
//! aligned (four cache lines each) because they are carved out of the tree's slab (`slab`: chunks
//! of nodes, one allocation each, instead of one `malloc` per node).
//!
//! | kind | pivots | slots | gaps |
//! |---|---|---|---|
//! | leaf (`maple_leaf_64`) | words 0..15 | words 15..31 | — |
//! | internal of a range tree (`maple_range_64`) | words 0..15 | words 15..31 | — |
//! | internal of an allocation tree (`maple_arange_64`) | words 0..9 | words 9..19 | words 19..29 |
//!
//! Slot `i` covers `[lo_i, hi_i]` with `lo_0 = min`, `lo_i = pivot[i-1] + 1`, and `hi_i =
//! pivot[i]`, except that the last used slot ends at the node's implied `max` (inherited from the
//! parent's pivots; `[0, u64::MAX]` for the root). **The node end is never stored**: it is the
//! first `i` whose pivot is `>= max`, or the pivot count if there is none. Writers keep
//! `pivot[end] == max` whenever `end` is below the pivot count. This is what makes the in-place
//! appends safe for readers: the kernel's race came from the end stored separately in the node's
//! metadata (`ma_meta_end`).
//!
//! Words beyond the end are unspecified: zero in fresh nodes, stale after an append split has
//! truncated the node (see `append`), and copied as they are into `dup`'s node copies
//! ([`WriterRoot::alloc_cloned_leaf`]). Nobody relies on them (the iterator's scan for a leaf's
//! end may load the pivot after the end with it, and ignores it).
//!
//! The kind of a node is not stored in it either: a child word carries a leaf tag in bit 0, and
//! internal nodes are `Range` or `ARange` according to the tree. The parent word holds the parent's
//! address, this node's offset in the parent (bits 59..63, above any user-space address, even
//! with 57-bit virtual addresses) and the dead bit (bit 0).
//!
//! # Publication protocol
//!
//! One writer at a time (the tree's lock, or `&mut`); readers hold a crossbeam-epoch guard. Every
//! field a reader may load is an atomic:
//!
//! | row | field | writer store | ordering | reader load | pairs with |
//! |---|---|---|---|---|---|
//! | P1 | tree root word | new root published | Release | Acquire | everything written into the new root subtree before |
//! | P2 | internal slot | fresh node (before publish) | Relaxed | Acquire | — (published by the pointer that exposes the node) |
//! | P3 | internal slot | child replaced in place (node store, single-node rebuild) | Release | Acquire | the new child's contents |
//! | P4 | leaf slot | fresh node | Relaxed | Acquire | — (as above) |
//! | P5 | leaf slot | exact fit in place | Release | Acquire | the entry's pointee |
//! | P6 | leaf slot beyond the end | append, before the publishing pivot | Relaxed | Acquire | published by the pivot below |
//! | P7 | pivot | fresh node | Relaxed | Acquire | — |
//! | P8 | pivot beyond the end | append, before the publishing pivot | Relaxed | Acquire | published by the pivot below |
//! | P9 | pivot `end` (lowered) | append: the **single publishing store**, last | Release | Acquire (scan) | every slot/pivot written beyond the end |
//! | P10 | slot bounded by a lowered pivot | re-pointed (P3/P5) | — | — | **sealed** until a grace period after P9 (`seal`): copy-on-write instead |
//! | P11 | words beyond the end of a node whose max shrank | append (P6/P8/P9) | — | — | **sealed** until a grace period after the shrink (`seal`): copy-on-write instead |
//! | P12 | gap | any; a gap lowered for a child whose range shrank in place (the append split's climb: [`Live::append_child`], the full nodes it truncates) only **after** the store that shrinks it (P9, or P1 for a new root) | Release | Relaxed; Acquire for a slot on the right edge (reaching `u64::MAX`) | gaps are search hints, and leaves are re-checked; a search prunes a right-edge child by its gap only after that Acquire load and a re-read of its path (its root's parent word, P13; pivots, P9), which then sees any shrink stored before the gap (`gap::search`) |
//! | P13 | parent word (re-parent) | any | Relaxed | Relaxed | read by the writer and `validate`, and by a gap search re-reading its path after P12's Acquire load ([`NodeRef::is_root`]: a root grown above the old one re-parents it before P1 publishes it, and P12's lowered gaps follow P1) |
//! | P14 | parent word (dead bit) | node retired | Release | Acquire | a reader that sees it restarts from the root |
//! | P15 | tree root word | — | — | Relaxed (the **writer's own** loads, [`WriterRoot::node`]) | nothing: the writer is the only one that stores it, so it reads its own last store |
//! | P16 | tree root word of a tree nobody can see yet (`dup`'s copy, built under `&mut`) | copy published | Release (as P1) | — | nothing needed: the tree reaches other threads only by being moved or shared afterwards, which synchronises by itself; the store is P1's code path |
//! | P17 | parent word (re-parent, P13) next to the dead bit (P14) | re-parent | Relaxed | Acquire (`is_dead`) | a node is re-parented only while live, never after it is marked dead (P14); only the writer stores parent words, so the marking's load reads the last re-parenting and its store keeps those bits; a reader's Acquire load that returns a Relaxed re-parenting reads "not dead", which is true |
//! | P18 | seal lift generation (`seal`) | deferred closure, a grace period after the sealing stores | Release | Acquire (the writer, before trusting a lifted seal) | the closure runs after every guard pinned when it is deferred (after the sealing stores, by the writer's guard, pinned then if it was not yet) is gone, so after every reader that could read before them (crossbeam's epoch fences order it after them) |
//!
//! Every Release, Acquire and read-modify-write site of `src/tree` names its row in an
//! `// ORDERING: Pn` comment. The orderings of rows P1, P3/P5, P9 and P14 (writer and reader
//! side) are one constant each in `ord`, which the shipping build and the loom models both use
//! (a loom knob may only override one, for a broken twin): weakening a row there is what the
//! loom models must catch (`scripts/ordering-mutants.sh`).
//!
//! `dup`'s node copies ([`WriterRoot::alloc_cloned_leaf`], [`WriterRoot::alloc_copied_internal`]) are
//! fresh nodes written before anyone else can reach them — one `memcpy` of the source node and
//! plain writes through `&mut`, which is rows P2/P4/P7/P12 without even the atomics — and are
//! published, like every fresh node, by the Release store of P1 (or P3) that exposes them.
//!
//! ## What a reader may hold, across any number of writes
//!
//! A reader holds, for the node it is in, the node's address and the limits `[min, max]` it
//! derived on the way down (a pivot of each ancestor, or the ancestor's own limit), and, inside
//! the node, the pivots it has loaded. Every later store of the writer is one of:
//!
//! 1. **A fresh subtree published by one pointer** (P1/P3, copy-on-write of node stores, splits,
//!    rebalances, spanning stores, the leaf fill). The replaced nodes are never written again and
//!    are marked dead (P14): a reader inside them reads one consistent old state, for as long as
//!    its guard lives (they are freed only after it); a reader that loads the new pointer sees the
//!    whole new subtree (P1/P3 pair with everything written before).
//! 2. **An exact fit** (P5): a reader sees the old entry or the new one in a slot whose bounds
//!    did not change — unless it loaded the slot's upper bound before that bound was lowered by an
//!    append (P9) and the slot after: it would pair the old bound with the new entry, a range that
//!    never held it. Hence P10.
//! 3. **An in-place append** (P6–P9): until the reader loads the lowered end pivot, everything
//!    beyond the end is unreachable for it; once it does, everything is written. This holds only
//!    if the node's max is the one the reader derived: a node truncated by the append split keeps
//!    its words and gets a smaller max from its parent (P9 one level up), so a reader that derived
//!    the old max reads on beyond the new end — where an append into the node would write. Hence
//!    P11. (The truncation itself changes no word of the node: such a reader sees the node as it
//!    was, which is the state before the split.)
//! 4. **A child replaced under a lowered pivot** (P3 after a P9 in the parent): a reader that
//!    loaded the old pivot and then the new child would walk the child with a max it never had,
//!    past its end into zeroed words. P10 covers it: the parent is copied (and, if its own slot is
//!    sealed, the grandparent — the root word is never sealed), see `Writer::replace_child`.
//!
//! A seal lasts until every guard pinned at the sealing store has been dropped (the lift is a
//! closure deferred on the writer's guard after that store, as a retired node's free is). A
//! reader pinned after the lift loads the lowered pivots and the shrunk max (crossbeam's epoch
//! fences order the writer's stores before the deferral), so it holds nothing a later in-place
//! store could contradict. By induction over the writes, every reader, whatever number of
//! writes its guard spans, sees for each slot it reads a bound and a word that were together in
//! some state, and sees each node either whole as of one state or through published pivots only.
//! Exclusive mode (`&mut`) has no readers: nothing is sealed and everything may be in place.
//!
//! Readers never trust anything but pivots to find a slot: a pivot is always loaded (Acquire)
//! before the slot it exposes. Retired nodes are never written again; they are freed (and, under
//! loom, poisoned) only after every guard that could reach them is gone — or when the whole tree
//! is freed ([`Root::free_all`], from the tree's drop): `&mut` of the tree outlives every
//! reader's borrow of it, so no guard can reach a node of it any more, retired or not, and its
//! slab's chunks go back at once (see `slab`).

use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crossbeam_epoch::{Collector, Guard};
use crossbeam_utils::CachePadded;

use crate::entry::{Entry, Ledger, Released, Word, ZERO_WORD};
use crate::sync::{atomic_take, AtomicU64, AtomicUsize, Ordering};
// The writer lock: std's mutex (loom's under loom) through `sync`, or without std the node
// layer's spin lock (see `root`).
#[cfg(feature = "std")]
use crate::sync::{Mutex, MutexGuard};
#[cfg(not(feature = "std"))]
use root::{SpinGuard as MutexGuard, SpinMutex as Mutex};

// The orderings of the table's Release and Acquire rows, one constant each (see `ord`).
mod ord;

#[cfg(not(any(target_pointer_width = "64", target_pointer_width = "32")))]
compile_error!("maple-tree needs a 64-bit or a 32-bit target");

// A 32-bit target keeps a parent word's offset in the low bits of the node address, which only
// the slab's 64-byte-aligned nodes leave free (a boxed node is 16-byte aligned).
const _: () = assert!(
    !crate::sync::BOX_NODES || usize::BITS == 64,
    "one box per node (loom, maple_tree_box_nodes) needs a 64-bit target"
);

/// Slots of a leaf or of an internal node of a range tree (`MAPLE_RANGE64_SLOTS`).
pub(crate) const RANGE_SLOTS: usize = 16;
/// Pivots of a leaf or range node.
pub(crate) const RANGE_PIVOTS: usize = 15;
/// Slots of an internal node of an allocation tree (`MAPLE_ARANGE64_SLOTS`).
pub(crate) const ARANGE_SLOTS: usize = 10;
/// Pivots of an allocation-tree internal node.
pub(crate) const ARANGE_PIVOTS: usize = 9;
/// Where the gaps of an allocation-tree internal node start.
const ARANGE_GAPS: usize = ARANGE_PIVOTS + ARANGE_SLOTS;
/// Data words per node.
const WORDS: usize = 31;

/// Tag bit in a child word: the child is a leaf.
const LEAF_TAG: usize = 1;
/// Dead bit in a parent word.
const DEAD: usize = 1;
/// Offset field in a parent word (above the 57 bits a user-space address may use).
#[cfg(target_pointer_width = "64")]
const OFFSET_SHIFT: u32 = 59;
/// Offset field in a parent word, on a 32-bit target (whose addresses use every bit): bits 1..5
/// of the node address, which are zero since the slab's nodes are 64-byte aligned.
#[cfg(target_pointer_width = "32")]
const OFFSET_SHIFT: u32 = 1;
const OFFSET_MASK: usize = 0x1f << OFFSET_SHIFT;
const ADDR_MASK: usize = !(OFFSET_MASK | DEAD);

mod copy;
mod handles;
mod layout;
mod leaf;
mod live;
mod retire;
mod root;
mod slab;
mod writer;

pub(crate) use handles::*;
pub(crate) use layout::*;
pub(crate) use leaf::*;
pub(crate) use live::*;
pub(crate) use retire::*;
pub(crate) use root::*;
use slab::{Returner, Slab};
pub(crate) use writer::*;

#[cfg(test)]
mod tests {
    use core::mem::size_of_val;

    use crossbeam_epoch::Collector;

    use super::{Kind, Root};

    /// The 128-byte blocks (a cache line and the neighbour the spatial prefetcher pairs it
    /// with) that `len` bytes at `p` touch.
    fn blocks(p: usize, len: usize) -> core::ops::RangeInclusive<usize> {
        p / 128..=(p + len - 1) / 128
    }

    /// What every reader loads on every walk (the root word) shares no cache line with what
    /// the writer stores on every write (the lock word and the writer state behind it, the
    /// retirement counter): such a line would move to the writer's core on each write and
    /// back on the reader's next load.
    #[test]
    fn root_word_lines_are_the_readers_own() {
        if crate::sync::LOOM {
            // Loom's atomics are model handles: not the layout this checks.
            return;
        }
        let mut root =
            Root::<[u64; 16], super::Unbranded>::new(Kind::ARange, Collector::new(), false, false);
        // The writer state (made by the first writer) lies in a box of its own.
        root.state_mut()[0] = 1;
        let word = blocks(core::ptr::from_ref(&root.shared.word).addr(), 8);
        let writer = blocks(
            core::ptr::from_ref(&root.writer).addr(),
            size_of_val(&root.writer),
        );
        let retired = blocks(core::ptr::from_ref(&*root.shared.retired).addr(), 8);
        for other in [writer, retired] {
            assert!(
                word.end() < other.start() || other.end() < word.start(),
                "root word in blocks {word:?}, a writer's field in {other:?}"
            );
        }
    }
}
