//! Loom models of the maple tree: one writer (the main thread) against one concurrent reader (a
//! spawned thread), one model per write path. Built and run only under
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom"` (see `scripts/test-all.sh`); the helpers here are
//! shared by `tests/models.rs` (the write paths) and `tests/mutants.rs` (the deliberately broken
//! orderings that must be caught).
//!
//! What a model checks, in every explored interleaving (README.md, "Guarantees"):
//! - a point load of an index touched by the write returns the index's old or new entry;
//! - a forward and a backward iteration yield strictly monotonic, non-overlapping ranges, each of
//!   which is a range of the old or of the new tree, and never skip a range that is the same in
//!   both;
//! - no freed node or entry is touched: nodes carry a loom-tracked liveness cell that their `Drop`
//!   poisons (in `maple_tree`'s `node.rs`), entries are [`Tag`]s whose payload lives in a loom
//!   `UnsafeCell` that the last drop poisons; an access racing with the poisoning write is a loom
//!   "causality violation", one ordered after it fails the poison assertion;
//! - the write took the intended path (`MapleTree::stats`), the tree validates afterwards, holds
//!   exactly the new state, and every entry is dropped exactly once when the tree is dropped.

#![cfg(loom)]

use std::cell::Cell;
use std::ptr::NonNull;

use crossbeam_epoch::Collector;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use maple_tree::{Entry, MapleTree, Options, Stats, WriteGuard};

/// Payload value of an entry that was dropped (its last reference went away).
pub const POISON: u64 = u64::MAX;
/// Payload value of an arena slot not handed out yet.
const UNSET: u64 = u64::MAX - 1;

/// The heap part of an entry: a value in loom's `UnsafeCell` (so loom sees who reads it and
/// whether that read is ordered with its initialisation and its poisoning) and a reference count
/// (entries are cloned by `dup`).
pub struct Payload {
    val: UnsafeCell<u64>,
    refs: AtomicUsize,
}

// SAFETY: the value is only written while no other thread may read it (initialisation before
// publication, poisoning after the last reference is gone); loom checks exactly that.
unsafe impl Sync for Payload {}
// SAFETY: as above.
unsafe impl Send for Payload {}

impl Payload {
    fn new() -> Self {
        Payload {
            val: UnsafeCell::new(UNSET),
            refs: AtomicUsize::new(0),
        }
    }

    /// Reads the value, asserting the entry is live (a reader must never see a dropped entry).
    pub fn read(&self) -> u64 {
        // SAFETY: loom's cell: loom checks this read against the initialising and poisoning writes.
        let v = self.val.with(|p| unsafe { *p });
        assert_ne!(
            v, POISON,
            "a reader touched an entry that was already dropped"
        );
        assert_ne!(
            v, UNSET,
            "a reader touched an entry that was never initialised"
        );
        v
    }

    fn value_unsync(&self) -> u64 {
        // SAFETY: called single-threaded at the end of a model.
        self.val.with(|p| unsafe { *p })
    }
}

/// A fixed set of payloads for one execution. Entries point into it, so a use-after-free of an
/// entry never reads really freed memory: loom reports the race instead. It must outlive the
/// tree (declare it first in the model).
pub struct Arena {
    slots: Box<[Payload]>,
    next: Cell<usize>,
}

impl Arena {
    /// An arena of `n` payloads (created inside the model: they hold loom objects).
    pub fn new(n: usize) -> Self {
        Arena {
            slots: (0..n).map(|_| Payload::new()).collect(),
            next: Cell::new(0),
        }
    }

    /// A new entry with value `v` (on the writer's thread: its initialisation must be published
    /// to readers by the tree's write).
    pub fn tag(&self, v: u64) -> Tag {
        let i = self.next.get();
        assert!(i < self.slots.len(), "arena too small");
        self.next.set(i + 1);
        let p = &self.slots[i];
        // SAFETY: loom's cell; the slot was never handed out, so nobody else can reach it.
        p.val.with_mut(|x| unsafe { *x = v });
        p.refs.store(1, Ordering::Relaxed);
        Tag(NonNull::from(p))
    }

    /// How many entries handed out have been dropped (their last reference went away).
    pub fn count_dropped(&self) -> usize {
        self.slots[..self.next.get()]
            .iter()
            .filter(|p| p.refs.load(Ordering::Relaxed) == 0)
            .count()
    }

    /// Asserts that every entry handed out was dropped exactly once (double drops panic in
    /// [`Tag`]'s `Drop`). Call after the tree and its collector are gone.
    pub fn assert_all_dropped(&self) {
        for (i, p) in self.slots[..self.next.get()].iter().enumerate() {
            assert_eq!(
                p.refs.load(Ordering::Relaxed),
                0,
                "entry {i} was never dropped (leak)"
            );
            assert_eq!(p.value_unsync(), POISON, "entry {i} not poisoned");
        }
    }
}

/// An entry: a counted reference to an arena [`Payload`].
pub struct Tag(NonNull<Payload>);

// SAFETY: a `Tag` is an `Arc`-like handle to a `Sync` payload.
unsafe impl Send for Tag {}
// SAFETY: as above.
unsafe impl Sync for Tag {}

impl Tag {
    fn payload(&self) -> &Payload {
        // SAFETY: the arena outlives every tag (model contract).
        unsafe { self.0.as_ref() }
    }
}

impl Clone for Tag {
    fn clone(&self) -> Self {
        let prev = self.payload().refs.fetch_add(1, Ordering::Relaxed);
        assert!(prev >= 1, "cloned a dropped entry");
        Tag(self.0)
    }
}

impl Drop for Tag {
    fn drop(&mut self) {
        let p = self.payload();
        let prev = p.refs.fetch_sub(1, Ordering::AcqRel);
        assert!(prev >= 1, "entry dropped twice");
        if prev == 1 {
            // SAFETY: loom's cell: the poisoning write; loom reports any read it is not ordered
            // after.
            p.val.with_mut(|x| unsafe { *x = POISON });
        }
    }
}

// SAFETY: the word is the payload's address (arena memory, never reserved: heap and even-aligned
// above 4096), round-tripped with exposed provenance; `from_word` takes back the reference
// `into_word` gave up; borrows are shared references into the arena, which outlives the tree.
unsafe impl Entry for Tag {
    type Borrowed<'a> = &'a Payload;

    fn into_word(self) -> usize {
        let w = self.0.as_ptr().expose_provenance();
        std::mem::forget(self);
        w
    }

    unsafe fn from_word(word: usize) -> Self {
        // SAFETY: `word` came from `into_word` (caller contract): a non-null payload address.
        Tag(unsafe { NonNull::new_unchecked(std::ptr::with_exposed_provenance_mut(word)) })
    }

    unsafe fn borrow<'a>(word: usize) -> &'a Payload {
        // SAFETY: as above; the arena outlives `'a`.
        unsafe { &*std::ptr::with_exposed_provenance::<Payload>(word) }
    }
}

/// The reference: the non-empty ranges of a tree, `first -> (last, value)` (the range map
/// every test of the tree checks against, shared with the crate's own tests).
#[path = "../../tests/kit/ranges.rs"]
mod kit;
pub use kit::Ranges;

/// A write, applied to the tree (through `lock()`, RCU mode) and to the reference.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// `store_range(first..=last, value)`.
    Store(u64, u64, u64),
    /// `erase(index)`: the whole range holding `index`.
    Erase(u64),
    /// `erase_range(first..=last)`.
    EraseRange(u64, u64),
    /// `clear()`: the whole tree emptied (`mtree_destroy`).
    Clear,
    /// Through a `CursorMut`: walk to `first`; if the walked range is exactly `[first, last]`,
    /// store over it through the cursor's cached walker (the exact fit of `dup_mmap`'s loop),
    /// else `set_range(first..=last)` and store (a full write).
    CursorStore(u64, u64, u64),
    /// Through a `CursorMut` at `index`: `erase()` (the whole range holding `index`).
    CursorErase(u64),
    /// Through a `CursorMut`: `set_range(first..=last)`, `preallocate()`, `store_prealloc`.
    CursorPrealloc(u64, u64, u64),
    /// Through one `CursorMut`: `find` from `from` and replace each of the next `count` entries
    /// by a new one (values `val`, `val + 1`, ...) through the cached walker, as `dup_mmap`'s
    /// loop does (`count` consecutive writes under one lock acquisition).
    CursorRewrite {
        /// Where the cursor starts.
        from: u64,
        /// How many entries it replaces.
        count: u64,
        /// Value of the first replacement.
        val: u64,
    },
    /// `alloc_cyclic(lo..=hi, &mut next, value)`, which must return `at` (and no wrap).
    AllocCyclic {
        /// Value of the new entry.
        val: u64,
        /// Window start.
        lo: u64,
        /// Window end.
        hi: u64,
        /// The cursor `next` before the call.
        next: u64,
        /// Where the allocation must land.
        at: u64,
    },
    /// `alloc_range(min..=max, size, value)`, which must return `at..=at + size - 1`.
    Alloc {
        /// Value of the new entry.
        val: u64,
        /// Size of the allocation.
        size: u64,
        /// Window start.
        min: u64,
        /// Window end.
        max: u64,
        /// Where the allocation must land.
        at: u64,
    },
}

impl Op {
    /// The reference states the op passes through, one per write it makes (one for every op
    /// but [`Op::CursorRewrite`], which makes `count` writes).
    pub fn ref_states(&self, r: &Ranges) -> Vec<Ranges> {
        if let Op::CursorRewrite { from, count, val } = *self {
            let mut out = Vec::new();
            let mut cur = r.clone();
            let targets: Vec<_> =
                r.0.range(..)
                    .map(|(&a, &(b, _))| (a, b))
                    .filter(|&(_, b)| b >= from)
                    .take(count as usize)
                    .collect();
            assert_eq!(
                targets.len() as u64,
                count,
                "CursorRewrite: not enough entries"
            );
            for (j, (a, b)) in targets.into_iter().enumerate() {
                cur.store(a, b, Some(val + j as u64));
                out.push(cur.clone());
            }
            return out;
        }
        let mut next = r.clone();
        self.apply_ref(&mut next);
        vec![next]
    }

    /// Entries the op creates (for sizing the arena).
    pub fn tags(&self) -> usize {
        match *self {
            Op::Erase(_) | Op::EraseRange(..) | Op::Clear | Op::CursorErase(_) => 0,
            Op::CursorRewrite { count, .. } => count as usize,
            _ => 1,
        }
    }

    /// Applies the op to the reference.
    pub fn apply_ref(&self, r: &mut Ranges) {
        match *self {
            Op::Clear => *r = Ranges::default(),
            Op::CursorStore(a, b, v) | Op::CursorPrealloc(a, b, v) => r.store(a, b, Some(v)),
            Op::CursorErase(i) => {
                if let Some((a, b, _)) = r.at(i) {
                    r.store(a, b, None);
                }
            }
            Op::CursorRewrite { .. } => *r = self.ref_states(r).pop().expect("count > 0"),
            Op::AllocCyclic { val, at, .. } => r.store(at, at, Some(val)),
            Op::Store(a, b, v) => r.store(a, b, Some(v)),
            Op::Erase(i) => {
                if let Some((a, b, _)) = r.at(i) {
                    r.store(a, b, None);
                }
            }
            Op::EraseRange(a, b) => r.store(a, b, None),
            Op::Alloc { val, size, at, .. } => r.store(at, at + size - 1, Some(val)),
        }
    }

    /// Applies the op to the tree through one RCU-mode writer.
    pub fn apply_tree(&self, tree: &MapleTree<Tag>, arena: &Arena) {
        self.apply_guard(&mut tree.lock(), arena);
    }

    /// Applies the op through a writer (RCU mode from `lock()`, in place from `exclusive()`).
    pub fn apply_guard(&self, w: &mut WriteGuard<'_, Tag>, arena: &Arena) {
        match *self {
            Op::Clear => w.clear(),
            Op::CursorStore(a, b, v) => {
                let mut c = w.cursor(a);
                c.walk();
                if c.range() != (a..=b) {
                    c.set_range(a..=b);
                }
                c.store(arena.tag(v)).unwrap();
            }
            Op::CursorErase(i) => {
                w.cursor(i).erase();
            }
            Op::CursorPrealloc(a, b, v) => {
                let mut c = w.cursor(a);
                c.set_range(a..=b);
                c.preallocate().unwrap();
                c.store_prealloc(arena.tag(v)).unwrap();
            }
            Op::CursorRewrite { from, count, val } => {
                let mut c = w.cursor(from);
                for j in 0..count {
                    assert!(
                        c.find(u64::MAX).is_some(),
                        "CursorRewrite: entry {j} missing"
                    );
                    c.store(arena.tag(val + j)).unwrap();
                }
            }
            Op::AllocCyclic {
                val,
                lo,
                hi,
                mut next,
                at,
            } => {
                assert_eq!(
                    w.alloc_cyclic(lo..=hi, &mut next, arena.tag(val)),
                    Ok((at, false))
                );
            }
            Op::Store(a, b, v) => w.store_range(a..=b, arena.tag(v)).unwrap(),
            Op::Erase(i) => {
                w.erase(i);
            }
            Op::EraseRange(a, b) => w.erase_range(a..=b).unwrap(),
            Op::Alloc {
                val,
                size,
                min,
                max,
                at,
            } => {
                assert_eq!(
                    w.alloc_range(min..=max, size, arena.tag(val)),
                    Ok(at..=at + (size - 1))
                );
            }
        }
    }
}

/// What the concurrent write is.
#[derive(Clone, Copy, Debug)]
pub enum Write {
    /// One op.
    Op(Op),
    /// `dup()` of the tree being read; then the copy is checked, an entry of the copy replaced
    /// (an exact fit: the copy shares the entries), and the copy dropped.
    Dup {
        /// The index whose entry is replaced in the copy.
        replace: u64,
        /// The replacing value.
        val: u64,
    },
}

/// Which reads the concurrent reader does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// What every model runs: the point loads, then a full forward and a full backward
    /// iteration, in one reader under one guard.
    All,
    /// Point loads of the probed indices only.
    Points,
    /// A full forward iteration only.
    Forward,
    /// A full backward iteration only.
    Backward,
    /// `empty_area(min..=max, size)` (allocation trees: the answer must be the old or the new one).
    EmptyArea(u64, u64, u64),
    /// One iterator over the span driven from both ends alternately (`next`, `next_back`, ...):
    /// the front's and the back's ranges together, in index order, must never hold an index
    /// twice.
    BothEnds,
    /// A cursor from the given index, `find` to the span's end until nothing is left: each
    /// answer starts after the previous one's end (a re-walk past a replaced node
    /// must not move the cursor backwards).
    CursorFind(u64),
    /// `next(i)` then `prev(i)` of the given index: a range starting after `i`, one ending
    /// before it, each a range of some state.
    NextPrev(u64),
}

/// One model: the tree before the write, the write, what must be observed.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Gap-tracking allocation tree.
    pub alloc: bool,
    /// Writes done before the reader is spawned (exclusive mode: in place, no garbage).
    pub prefill: Vec<Op>,
    /// The write racing with the reader.
    pub write: Write,
    /// Indices the point-load reader probes.
    pub probes: Vec<u64>,
    /// Height before and after the write.
    pub heights: (usize, usize),
    /// The path counters the write must move, exactly (others must stay).
    pub paths: Vec<(&'static str, u64)>,
    /// After the write, flush the collector twice so retired nodes and entries are really freed
    /// while the reader may still run (reclamation is then checked, not just ordering); the
    /// executions where that happened are counted ([`reclaimed`]).
    pub reclaim: bool,
}

/// Executions of the current or last exploration in which garbage of the write (an entry it
/// dropped) was really freed before the reader had finished its reads.
static RECLAIMED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// See [`RECLAIMED`]: how often a reclaiming model really freed garbage under a running reader.
pub fn reclaimed() -> usize {
    RECLAIMED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Executions of the current or last exploration.
static EXECUTIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Executions of the current or last exploration (a failing model stops at the first failing
/// execution, so after a caught mutant this says how soon it was caught).
pub fn executions() -> usize {
    EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Preemption bound when `LOOM_MAX_PREEMPTIONS` is not set (CI sets it to 2 as well): without a
/// bound the two-level models run for hours.
pub const DEFAULT_PREEMPTIONS: usize = 2;

/// loom's builder with the environment's bounds (`LOOM_MAX_PREEMPTIONS`, ...; the preemption
/// bound defaults to [`DEFAULT_PREEMPTIONS`]) and a branch limit raised for the pre-fill, which
/// runs in every execution (single-threaded, so it adds branches but no interleavings).
fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.max_branches = 100_000;
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(DEFAULT_PREEMPTIONS);
    }
    b
}

/// The per-path counters of a stats delta that are non-zero.
pub fn path_delta(before: &Stats, after: &Stats) -> Vec<(&'static str, u64)> {
    let f = |s: &Stats| {
        [
            ("exact_fit", s.exact_fit),
            ("slot_store", s.slot_store),
            ("slot_store3", s.slot_store3),
            ("append_end", s.append_end),
            ("append_start", s.append_start),
            ("append_three_way", s.append_three_way),
            ("node_store", s.node_store),
            ("split", s.split),
            ("leaf_split", s.leaf_split),
            ("append_split", s.append_split),
            ("append_fill", s.append_fill),
            ("grow", s.grow),
            ("rebalance", s.rebalance),
            ("spanning_store", s.spanning_store),
            ("shrink", s.shrink),
            ("new_root", s.new_root),
            ("sealed_copy", s.sealed_copy),
            ("sealed_extend", s.sealed_extend),
            ("sealed_repoint", s.sealed_repoint),
        ]
    };
    f(after)
        .iter()
        .zip(f(before).iter())
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, b)| (a.0, a.1 - b.1))
        .collect()
}

/// Ranges `[10 i, 10 i + 4]` holding value `i + 1`, for `i` in `0..n`: the pre-fill most models
/// (and their mutant twins) start from.
pub fn spaced(n: u64) -> Vec<Op> {
    (0..n)
        .map(|i| Op::Store(10 * i, 10 * i + 4, i + 1))
        .collect()
}

/// Adjacent ranges `[10 i, 10 i + 9]` holding value `i + 1`, for `i` in `0..n` (no gaps: in-order
/// appends are `+1` appends, and a full rightmost leaf splits by truncation, never by a fill).
pub fn adjacent(n: u64) -> Vec<Op> {
    (0..n)
        .map(|i| Op::Store(10 * i, 10 * i + 9, i + 1))
        .collect()
}

/// The leaf fill under a full parent (an allocation tree of height 2 whose root holds 10 leaves,
/// the rightmost with one free slot; the three-way append goes through the generic rebuild,
/// which packs the leaf, splits the root and grows a new root): `sequences::append_fill_full_parent`
/// and its broken twin.
pub fn append_fill_full_parent() -> Sequence {
    Sequence::new(spaced(79), 2)
        .alloc_tree()
        .then(
            Op::Store(790, 794, 100),
            3,
            &[
                ("split", 1),
                ("append_split", 1),
                ("append_fill", 1),
                ("grow", 1),
            ],
        )
        .probes(&[784, 789, 790, 795])
        .span(775, u64::MAX)
}

/// The append split's climb over a full parent (an allocation tree of height 2 of adjacent
/// ranges whose root holds 10 full leaves; the append truncates the leaf, the root keeps its
/// children and shrinks, a new root grows): `sequences::append_split_climb_full_parent` and its
/// broken twin.
pub fn append_split_climb_full_parent() -> Sequence {
    Sequence::new(adjacent(150), 2)
        .alloc_tree()
        .then(
            Op::Store(1500, 1509, 200),
            3,
            &[("split", 1), ("append_split", 1), ("grow", 1)],
        )
        .probes(&[1489, 1499, 1500, 1510])
        .span(1480, u64::MAX)
}

/// A range-tree scenario: `prefill`, then the write `op` against one reader probing `probes`;
/// `heights` before and after, and the write paths `op` must take.
pub fn scenario(
    prefill: Vec<Op>,
    op: Op,
    probes: &[u64],
    heights: (usize, usize),
    paths: &[(&'static str, u64)],
) -> Scenario {
    Scenario {
        alloc: false,
        prefill,
        write: Write::Op(op),
        probes: probes.to_vec(),
        heights,
        paths: paths.to_vec(),
        reclaim: false,
    }
}

impl Scenario {
    /// The reference before and after the write.
    pub fn states(&self) -> (Ranges, Ranges) {
        let mut old = Ranges::default();
        for op in &self.prefill {
            op.apply_ref(&mut old);
        }
        let mut new = old.clone();
        if let Write::Op(op) = self.write {
            op.apply_ref(&mut new);
        }
        (old, new)
    }

    /// Runs the model with the reader doing `reads`, under loom's default bounds (the
    /// `LOOM_MAX_PREEMPTIONS` environment variable) and a raised branch limit.
    ///
    /// Returns the number of executions explored.
    pub fn check(&self, reads: Reads) -> usize {
        EXECUTIONS.store(0, std::sync::atomic::Ordering::Relaxed);
        RECLAIMED.store(0, std::sync::atomic::Ordering::Relaxed);
        let s = self.clone();
        let (old, new) = s.states();
        builder().check(move || {
            EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            s.execute(Some(reads), &old, &new)
        });
        EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Checks the result, then explores the write against the [`Reads::All`] reader, printing
    /// the executions and the time (visible with `--nocapture`).
    ///
    /// `MAPLE_LOOM_READS` replaces the combined reader by the named ones (`Points`, `Forward`,
    /// `Backward`, `All`; any of them in one string), one exploration each: for narrowing down a
    /// failure.
    pub fn check_all(&self) {
        self.check_result();
        let Ok(sel) = std::env::var("MAPLE_LOOM_READS") else {
            self.check_timed(Reads::All);
            return;
        };
        for r in [Reads::Points, Reads::Forward, Reads::Backward, Reads::All] {
            if sel.contains(&format!("{r:?}")) {
                self.check_timed(r);
            }
        }
    }

    /// [`check`](Self::check) with the executions and time printed.
    pub fn check_timed(&self, reads: Reads) {
        let t = std::time::Instant::now();
        let n = self.check(reads);
        eprintln!("    {reads:?}: {n} executions, {:.2?}", t.elapsed());
    }

    /// Checks the write's result without a reader, in a one-execution model: the path taken
    /// (`stats`), the heights, `validate`, the contents, the copy for `dup`. The writer's result
    /// does not depend on the interleaving (the reader cannot influence it), so the concurrent
    /// explorations leave these single-threaded checks out: they would cost time in every
    /// execution and prove nothing more.
    pub fn check_result(&self) {
        let s = self.clone();
        let (old, new) = s.states();
        builder().check(move || s.execute(None, &old, &new));
    }

    /// One execution: with `reads`, a reader checking the observation rules runs concurrently
    /// with the write; without, the write's result is checked (see
    /// [`check_result`](Self::check_result)). Either way every entry must be dropped exactly once.
    fn execute(&self, reads: Option<Reads>, old: &Ranges, new: &Ranges) {
        let first = reads.is_none();
        let arena = Arena::new(self.prefill.iter().map(Op::tags).sum::<usize>() + 2);
        let mut tree = MapleTree::<Tag>::with_options(
            Options::new().alloc(self.alloc).collector(Collector::new()),
        );
        {
            let mut w = tree.exclusive();
            for op in &self.prefill {
                op.apply_guard(&mut w, &arena);
            }
        }
        let before = if first {
            assert_eq!(
                tree.height(),
                self.heights.0,
                "prefill height\n{}",
                tree.dump()
            );
            Some(tree.stats())
        } else {
            None
        };
        let tree = Arc::new(tree);

        let dropped_before = if self.reclaim {
            arena.count_dropped()
        } else {
            0
        };
        let done = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let reader = reads.map(|reads| {
            let tree = Arc::clone(&tree);
            let (old, new, probes) = (old.clone(), new.clone(), self.probes.clone());
            let (done, reclaim) = (Arc::clone(&done), self.reclaim);
            loom::thread::spawn(move || {
                read(&tree, reads, &old, &new, &probes);
                if reclaim {
                    done.store(true, Ordering::Relaxed);
                }
            })
        });

        let mut copy = None;
        match self.write {
            Write::Op(op) => op.apply_tree(&tree, &arena),
            Write::Dup { .. } => copy = Some(tree.dup()),
        }
        if self.reclaim {
            // Two flushes are the least that can free garbage sealed by the write: each may
            // advance the global epoch once, and garbage is freed two epochs on.
            let h = tree.collector().register();
            for _ in 0..2 {
                h.pin().flush();
            }
            if arena.count_dropped() > dropped_before && !done.load(Ordering::Relaxed) {
                RECLAIMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
        if let Some(reader) = reader {
            reader.join().unwrap();
        }

        if let (true, Some(copy), Write::Dup { replace, val }) = (first, copy, self.write) {
            // After the join: the copy's own pins would multiply the interleavings with the
            // reader's, and the copy is private to the writer anyway.
            assert_eq!(
                snapshot(&copy),
                old.list(),
                "the copy differs from the source"
            );
            copy.validate().unwrap();
            copy.store(replace, arena.tag(val)).unwrap();
            copy.validate().unwrap();
            assert_eq!(
                snapshot(&tree),
                old.list(),
                "a store into the copy changed the source"
            );
            drop(copy);
        }

        if let Some(before) = before {
            let after = tree.stats();
            assert_eq!(path_delta(&before, &after), self.paths, "write path taken");
            assert_eq!(
                tree.height(),
                self.heights.1,
                "height after the write\n{}",
                tree.dump()
            );
            tree.validate().unwrap();
            assert_eq!(snapshot(&tree), new.list(), "tree after the write");
        }
        drop(tree);
        arena.assert_all_dropped();
    }
}

/// The tree's ranges, read single-threaded.
pub fn snapshot(tree: &MapleTree<Tag>) -> Vec<(u64, u64, u64)> {
    let g = tree.pin();
    tree.iter(&g)
        .map(|(r, p)| (*r.start(), *r.end(), p.read()))
        .collect()
}

/// The reader: checks one kind of read against the observation rules.
fn read(tree: &MapleTree<Tag>, reads: Reads, old: &Ranges, new: &Ranges, probes: &[u64]) {
    let guard = tree.pin();
    read_pinned(tree, &guard, reads, old, new, probes);
}

fn read_pinned(
    tree: &MapleTree<Tag>,
    guard: &crossbeam_epoch::Guard,
    reads: Reads,
    old: &Ranges,
    new: &Ranges,
    probes: &[u64],
) {
    match reads {
        Reads::All => {
            for r in [Reads::Points, Reads::Forward, Reads::Backward] {
                read_pinned(tree, guard, r, old, new, probes);
            }
        }
        Reads::Points => {
            for &i in probes {
                let got = tree.load(i, guard).map(Payload::read);
                assert!(
                    got == old.load(i) || got == new.load(i),
                    "load({i}) = {got:?}: neither old {:?} nor new {:?}",
                    old.load(i),
                    new.load(i)
                );
            }
        }
        Reads::Forward | Reads::Backward => {
            let mut got: Vec<(u64, u64, u64)> = Vec::new();
            if reads == Reads::Forward {
                for (r, p) in tree.iter(guard) {
                    got.push((*r.start(), *r.end(), p.read()));
                }
            } else {
                for (r, p) in tree.iter(guard).rev() {
                    got.push((*r.start(), *r.end(), p.read()));
                }
                got.reverse();
            }
            check_ranges(&got, old, new, reads);
        }
        Reads::EmptyArea(min, max, size) => {
            let got = tree.empty_area(min..=max, size);
            let exp = |r: &Ranges| expected_empty_area(r, min, max, size);
            assert!(
                got == exp(old) || got == exp(new),
                "empty_area = {got:?}: neither {:?} nor {:?}",
                exp(old),
                exp(new)
            );
        }
        Reads::BothEnds | Reads::CursorFind(_) | Reads::NextPrev(_) => {
            unimplemented!("{reads:?} is a reader of a `Sequence`")
        }
    }
}

/// The observation rules for one iteration (given in index order).
pub fn check_ranges(got: &[(u64, u64, u64)], old: &Ranges, new: &Ranges, reads: Reads) {
    for w in got.windows(2) {
        assert!(
            w[0].1 < w[1].0,
            "{reads:?}: ranges out of order or overlapping: {got:?}"
        );
    }
    for &r in got {
        assert!(r.0 <= r.1, "{reads:?}: empty range {r:?}");
        assert!(
            old.has(r) || new.has(r),
            "{reads:?}: range {r:?} exists in neither state\nold {old:?}\nnew {new:?}\ngot {got:?}"
        );
    }
    for r in old.list() {
        if new.has(r) {
            assert!(
                got.contains(&r),
                "{reads:?}: skipped {r:?}, present in both states; got {got:?}"
            );
        }
    }
}

/// `empty_area` computed on the reference.
pub fn expected_empty_area(
    r: &Ranges,
    min: u64,
    max: u64,
    size: u64,
) -> Result<u64, maple_tree::Error> {
    let mut start = min;
    for (a, b, _) in r.list() {
        if b < start {
            continue;
        }
        if a > max {
            break;
        }
        if a > start && a - start >= size {
            // `[start, start + size - 1]` ends before `a <= max`.
            return Ok(start);
        }
        match b.checked_add(1) {
            Some(s) if s <= max => start = s,
            _ => return Err(maple_tree::Error::NoRoom),
        }
    }
    if max - start >= size - 1 {
        Ok(start)
    } else {
        Err(maple_tree::Error::NoRoom)
    }
}

// ---- readers across several writes -------------------------------------------------------------

/// Path counters a write must move: `(name, by how much)` (see [`path_delta`]).
pub type Paths = Vec<(&'static str, u64)>;

/// A model of one reader across **several consecutive writes**: the tree is pre-filled, then the
/// writer makes the writes one after another (each through its own `lock()`, RCU mode) while one
/// reader does its reads under **one guard** (point loads of the probes, then a forward and a
/// backward iteration). The reference is the sequence of states `s0` (after the pre-fill), `s1`
/// (after the first write), ..., `sn`; what the reader may observe is derived from them:
/// - the reader keeps the earliest state `lo` it may still be in: an answer that first exists in
///   state `k > lo` shows that write `k` had begun, so every write before it had ended, and the
///   reader's later reads can no longer see a state before `s(k-1)` (`lo` becomes `k - 1`);
/// - a point load returns the index's entry in one of the states `s(lo)..=sn`;
/// - an iteration yields strictly increasing, non-overlapping ranges, each of which is a range of
///   one of the states `s(lo)..=sn` (`lo` as the iteration started: within one iteration the
///   promise is only "existed at some moment of the iteration"), and yields every range that is
///   the same in all of `s(lo)..=sn` (it stayed unchanged for the whole iteration).
///
/// Before the exploration, a one-execution model checks each write's result: the path counters
/// it moved (`stats`), the height, `validate`, the contents.
#[derive(Clone, Debug)]
pub struct Sequence {
    /// Gap-tracking allocation tree.
    pub alloc: bool,
    /// Writes done before the reader is spawned (exclusive mode: in place, no garbage).
    pub prefill: Vec<Op>,
    /// Height after the pre-fill.
    pub height: usize,
    /// The writes racing with the reader, each with the height after it and the path counters
    /// it must move, exactly (all others must stay).
    pub writes: Vec<(Op, usize, Vec<Paths>)>,
    /// Indices the point-load reader probes.
    pub probes: Vec<u64>,
    /// What the iterations cover: `iter()` (`None`) or `range(first..=last)` (large pre-fills:
    /// fewer reader steps, fewer interleavings).
    pub span: Option<(u64, u64)>,
}

impl Sequence {
    /// A range tree pre-filled with `prefill`, of height `height`.
    pub fn new(prefill: Vec<Op>, height: usize) -> Self {
        Sequence {
            alloc: false,
            prefill,
            height,
            writes: Vec::new(),
            probes: Vec::new(),
            span: None,
        }
    }

    /// The iterations cover `range(first..=last)` only.
    pub fn span(mut self, first: u64, last: u64) -> Self {
        self.span = Some((first, last));
        self
    }

    /// The same in an allocation tree.
    pub fn alloc_tree(mut self) -> Self {
        self.alloc = true;
        self
    }

    /// Adds a write: the tree's height after it and the paths it must take.
    pub fn then(mut self, op: Op, height: usize, paths: &[(&'static str, u64)]) -> Self {
        self.writes.push((op, height, vec![paths.to_vec()]));
        self
    }

    /// Accepts `paths` as well for the last write (a path that differs between designs, e.g.
    /// an in-place append into a truncated leaf that a sealing design turns into a node store).
    pub fn or_paths(mut self, paths: &[(&'static str, u64)]) -> Self {
        self.writes
            .last_mut()
            .expect("a write")
            .2
            .push(paths.to_vec());
        self
    }

    /// The indices the reader's point loads probe.
    pub fn probes(mut self, probes: &[u64]) -> Self {
        self.probes = probes.to_vec();
        self
    }

    /// The reference states: after the pre-fill, then after each write (an op that makes several
    /// writes contributes one state per write).
    pub fn states(&self) -> Vec<Ranges> {
        let mut s0 = Ranges::default();
        for op in &self.prefill {
            op.apply_ref(&mut s0);
        }
        let mut states = vec![s0];
        for (op, _, _) in &self.writes {
            let more = op.ref_states(states.last().expect("s0"));
            states.extend(more);
        }
        states
    }

    /// Checks each write's result, then explores the writes against the [`Reads::All`] reader
    /// (or the ones `MAPLE_LOOM_READS` names), printing the executions and the time.
    pub fn check_all(&self) {
        self.check_result();
        let Ok(sel) = std::env::var("MAPLE_LOOM_READS") else {
            self.check_timed(Reads::All);
            return;
        };
        for r in [Reads::Points, Reads::Forward, Reads::Backward, Reads::All] {
            if sel.contains(&format!("{r:?}")) {
                self.check_timed(r);
            }
        }
    }

    /// [`check`](Self::check) with the executions and time printed.
    pub fn check_timed(&self, reads: Reads) {
        let t = std::time::Instant::now();
        let n = self.check(reads);
        eprintln!("    {reads:?}: {n} executions, {:.2?}", t.elapsed());
    }

    /// Explores every interleaving of the writes with a reader doing `reads` (within the
    /// preemption bound); returns the number of executions.
    pub fn check(&self, reads: Reads) -> usize {
        EXECUTIONS.store(0, std::sync::atomic::Ordering::Relaxed);
        let _report = ReportFailure(reads);
        let s = self.clone();
        let states = s.states();
        builder().check(move || {
            EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            s.execute(Some(reads), &states)
        });
        EXECUTIONS.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The writes' results without a reader, in a one-execution model.
    pub fn check_result(&self) {
        let s = self.clone();
        let states = s.states();
        builder().check(move || s.execute(None, &states));
    }

    fn execute(&self, reads: Option<Reads>, states: &[Ranges]) {
        let first = reads.is_none();
        let tags = self.prefill.iter().map(Op::tags).sum::<usize>()
            + self.writes.iter().map(|w| w.0.tags()).sum::<usize>();
        let arena = Arena::new(tags + 1);
        let mut tree = MapleTree::<Tag>::with_options(
            Options::new().alloc(self.alloc).collector(Collector::new()),
        );
        {
            let mut w = tree.exclusive();
            for op in &self.prefill {
                op.apply_guard(&mut w, &arena);
            }
        }
        if first {
            assert_eq!(
                tree.height(),
                self.height,
                "prefill height\n{}",
                tree.dump()
            );
            assert_eq!(snapshot(&tree), states[0].list(), "tree after the pre-fill");
        }
        let tree = Arc::new(tree);
        let reader = reads.map(|reads| {
            let tree = Arc::clone(&tree);
            let (states, probes, span) = (states.to_vec(), self.probes.clone(), self.span);
            loom::thread::spawn(move || {
                let guard = tree.pin();
                let mut lo = 0;
                let span = span.unwrap_or((0, u64::MAX));
                read_seq(&tree, &guard, reads, &states, &probes, span, &mut lo);
            })
        });
        let mut k = 0;
        for (i, (op, height, paths)) in self.writes.iter().enumerate() {
            let before = first.then(|| tree.stats());
            op.apply_tree(&tree, &arena);
            k += match op {
                Op::CursorRewrite { count, .. } => *count as usize,
                _ => 1,
            };
            if let Some(before) = before {
                let what = format!("write {} ({op:?})", i + 1);
                let took = path_delta(&before, &tree.stats());
                assert!(
                    paths.contains(&took),
                    "{what}: write path taken {took:?}, expected one of {paths:?}\n{}",
                    tree.dump()
                );
                assert_eq!(tree.height(), *height, "{what}: height\n{}", tree.dump());
                tree.validate().unwrap();
                assert_eq!(snapshot(&tree), states[k].list(), "{what}: tree after it");
            }
        }
        if let Some(reader) = reader {
            reader.join().unwrap();
        }
        drop(tree);
        arena.assert_all_dropped();
    }
}

/// Prints, when an exploration fails, at which execution it did (the count for the record).
struct ReportFailure(Reads);

impl Drop for ReportFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("    {:?}: FAILED in execution {}", self.0, executions());
        }
    }
}

/// The first state at or after `lo` in which `pred` holds.
fn first_state(states: &[Ranges], lo: usize, pred: impl Fn(&Ranges) -> bool) -> Option<usize> {
    (lo..states.len()).find(|&k| pred(&states[k]))
}

/// The reader of a [`Sequence`]: the observation rules against the states `s(lo)..=sn`, `lo`
/// advanced by what it observed (see [`Sequence`]).
fn read_seq(
    tree: &MapleTree<Tag>,
    guard: &crossbeam_epoch::Guard,
    reads: Reads,
    states: &[Ranges],
    probes: &[u64],
    span: (u64, u64),
    lo: &mut usize,
) {
    match reads {
        Reads::All => {
            for r in [Reads::Points, Reads::Forward, Reads::Backward] {
                read_seq(tree, guard, r, states, probes, span, lo);
            }
        }
        Reads::Points => {
            for &i in probes {
                let got = tree.load(i, guard).map(Payload::read);
                let Some(k) = first_state(states, *lo, |s| s.load(i) == got) else {
                    let seen: Vec<_> = states.iter().map(|s| s.load(i)).collect();
                    panic!(
                        "load({i}) = {got:?}: not its entry in any state from s{} on \
                         (per state s0..: {seen:?})",
                        *lo
                    );
                };
                if k > *lo {
                    *lo = k - 1;
                }
            }
        }
        Reads::Forward | Reads::Backward => {
            let mut got: Vec<(u64, u64, u64)> = Vec::new();
            if reads == Reads::Forward {
                for (r, p) in tree.range(span.0..=span.1, guard) {
                    got.push((*r.start(), *r.end(), p.read()));
                }
            } else {
                for (r, p) in tree.range(span.0..=span.1, guard).rev() {
                    got.push((*r.start(), *r.end(), p.read()));
                }
                got.reverse();
            }
            let start = *lo;
            *lo = check_ranges_seq(&got, states, start, span, reads);
        }
        Reads::EmptyArea(min, max, size) => {
            let got = tree.empty_area(min..=max, size);
            let fits = |r: &Ranges| expected_empty_area(r, min, max, size).is_ok();
            match got {
                Ok(s) => {
                    let e = s + (size - 1);
                    assert!(min <= s && e <= max, "empty_area = {s}: outside the window");
                    let free = |r: &Ranges| r.list().iter().all(|&(a, b, _)| b < s || a > e);
                    assert!(
                        first_state(states, *lo, free).is_some(),
                        "empty_area = {s}: [{s}, {e}] free in no state from s{} on",
                        *lo
                    );
                }
                Err(err) => assert!(
                    !states[*lo..].iter().all(fits),
                    "empty_area = {err:?}: NoRoom while every state from s{} on had a fitting hole",
                    *lo
                ),
            }
        }
        Reads::BothEnds => {
            let (mut front, mut back) = (Vec::new(), Vec::new());
            let mut it = tree.range(span.0..=span.1, guard);
            while let Some((r, p)) = it.next() {
                front.push((*r.start(), *r.end(), p.read()));
                let Some((r, p)) = it.next_back() else {
                    break;
                };
                back.push((*r.start(), *r.end(), p.read()));
            }
            // In index order: the ordering check rejects an index yielded by both ends.
            let got: Vec<_> = front.into_iter().chain(back.into_iter().rev()).collect();
            let start = *lo;
            *lo = check_ranges_seq(&got, states, start, span, reads);
        }
        Reads::CursorFind(from) => {
            let mut c = tree.cursor(from, guard);
            let mut got: Vec<(u64, u64, u64)> = Vec::new();
            while let Some(p) = c.find(span.1) {
                let r = (c.index(), c.last(), p.read());
                if let Some(prev) = got.last() {
                    assert!(
                        r.0 > prev.1,
                        "{reads:?}: the cursor moved backwards: {r:?} after {prev:?}"
                    );
                }
                got.push(r);
            }
            let start = *lo;
            *lo = check_ranges_seq(&got, states, start, (from, span.1), reads);
        }
        Reads::NextPrev(i) => {
            let next = tree
                .next(i, u64::MAX, guard)
                .map(|(r, p)| (*r.start(), *r.end(), p.read()));
            let prev = tree
                .prev(i, 0, guard)
                .map(|(r, p)| (*r.start(), *r.end(), p.read()));
            for (what, r) in [("next", next), ("prev", prev)] {
                let Some(r) = r else { continue };
                let beyond = if what == "next" { r.0 > i } else { r.1 < i };
                assert!(beyond, "{what}({i}) = {r:?}: holds or passes its index");
                assert!(
                    first_state(states, *lo, |s| s.has(r)).is_some(),
                    "{what}({i}) = {r:?}: a range of no state from s{} on",
                    *lo
                );
            }
        }
    }
}

/// The observation rules for one iteration (given in index order) that started no earlier than
/// state `lo`; returns the earliest state the reader can be in after it.
pub fn check_ranges_seq(
    got: &[(u64, u64, u64)],
    states: &[Ranges],
    lo: usize,
    span: (u64, u64),
    reads: Reads,
) -> usize {
    let window = &states[lo..];
    for w in got.windows(2) {
        assert!(
            w[0].1 < w[1].0,
            "{reads:?}: ranges out of order or overlapping: {got:?}"
        );
    }
    let mut after = lo;
    for &r in got {
        assert!(r.0 <= r.1, "{reads:?}: empty range {r:?}");
        let Some(k) = first_state(states, lo, |s| s.has(r)) else {
            panic!(
                "{reads:?}: range {r:?} exists in no state from s{lo} on\ngot {got:?}\nstates {:?}",
                window.iter().map(Ranges::list).collect::<Vec<_>>()
            );
        };
        after = after.max(k.saturating_sub(1));
    }
    for r in window[0].list() {
        if r.1 >= span.0 && r.0 <= span.1 && window.iter().all(|s| s.has(r)) {
            assert!(
                got.contains(&r),
                "{reads:?}: skipped {r:?}, unchanged in every state from s{lo} on; got {got:?}"
            );
        }
    }
    after
}
