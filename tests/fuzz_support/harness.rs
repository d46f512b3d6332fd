//! What every target shares: input vocabulary (indices, sizes, writer modes, write operations),
//! the world under test (trees, their models, one epoch collector, one ledger), the per-step
//! checks, and the final drop accounting.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::ops::RangeInclusive;
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use crossbeam_epoch::Collector;
use maple_tree::{Error, MapleTree, Options, Status, WriteGuard};

use super::entry::{Ledger, Tracked, E};
use super::model::{Content, CyclicModel, Model, Seen, Slot};

/// Upper bound on single-range writes one input may cause (runs count each range), so that one
/// execution stays in the millisecond range while still building trees of thousands of ranges.
pub const WORK_BUDGET: u64 = 40_000;
/// Upper bound on top-level operations decoded from one input.
pub const MAX_OPS: usize = 256;
/// Size of the "small" index space (many collisions).
pub const SMALL: u64 = 1 << 12;

/// An index as the input encodes it; [`World::ix`] maps it into the run's index space.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Ix {
    /// A small index.
    Small(u16),
    /// Just below `u64::MAX`.
    High(u16),
    /// Near a power of two.
    Pow(u8, i8),
    /// Anything.
    Raw(u64),
}

/// A size as the input encodes it (0 included: an invalid window).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Sz {
    /// 0..=255.
    Small(u8),
    /// Near a power of two.
    Pow(u8, i8),
    /// Anything.
    Raw(u64),
}

impl Sz {
    /// The size.
    pub fn get(self) -> u64 {
        match self {
            Sz::Small(v) => u64::from(v),
            Sz::Pow(k, d) => (1u64 << (k % 64)).wrapping_add(d as i64 as u64),
            Sz::Raw(v) => v,
        }
    }
}

/// Where the run's indices live.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// `[0, SMALL)` plus a few indices just below `u64::MAX`.
    Small,
    /// All of `u64`, biased towards edges.
    Full,
}

/// How writes reach the tree.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterMode {
    /// The pin-for-you façade (`tree.store_range(..)`, RCU mode under the tree's lock).
    Facade,
    /// `tree.lock()`: an RCU-mode write guard.
    Locked,
    /// `tree.exclusive()`: `&mut` mode, in place, frees at once.
    Exclusive,
}

/// How a run of ranges changes the tree.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum RunAction {
    /// Store a fresh entry over each range.
    Store,
    /// Insert a fresh entry into each range (fails where occupied).
    Insert,
    /// Erase each range.
    Erase,
    /// Store the zero entry over each range.
    Zero,
}

/// The write vocabulary shared by the targets.
#[derive(Arbitrary, Clone, Debug)]
pub enum WriteOp {
    /// `store_range(a, b)` (`a > b` must fail).
    Store { a: Ix, b: Ix, val: u8 },
    /// `store_range(a, a + len)`.
    StoreLen { a: Ix, len: u16, val: u8 },
    /// `store_zero_range(a, a + len)`.
    StoreZero { a: Ix, len: u16 },
    /// `insert_range(a, a + len)` (fails where occupied).
    Insert { a: Ix, len: u16, val: u8 },
    /// `insert_range(a, b)` with raw bounds.
    InsertRaw { a: Ix, b: Ix },
    /// `insert(a)`.
    InsertOne { a: Ix },
    /// `erase(a)`: the whole range containing `a`.
    Erase { a: Ix },
    /// `erase_range(a, a + len)`.
    EraseRange { a: Ix, len: u16 },
    /// `erase_range(a, b)` with raw bounds.
    EraseRaw { a: Ix, b: Ix },
    /// `count` ranges `[s, s + width]`, each starting `width + 1 + gap` after the previous one:
    /// in-order appends, a deep tree from a few bytes.
    AppendRun {
        start: Ix,
        count: u16,
        width: u8,
        gap: u8,
    },
    /// `count` ranges `[start + k * stride, .. + width]` changed by `action` (descending when
    /// `down`).
    Strided {
        start: Ix,
        count: u16,
        stride: u16,
        width: u8,
        action: RunAction,
        down: bool,
    },
    /// `clear()`.
    Clear,
    /// Switch the writer mode for the following writes.
    Mode(WriterMode),
}

/// Fixed per-run choices.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Config {
    /// Gap-tracking (allocation) tree.
    pub alloc: bool,
    /// Index space.
    pub space: Space,
    /// The writer mode the run starts with.
    pub mode: WriterMode,
    /// In-place appends on (the default) or off.
    pub appends: bool,
}

/// Decodes `Config` and up to [`MAX_OPS`] operations from `data`.
pub fn decode<Op: for<'a> Arbitrary<'a>>(data: &[u8]) -> Option<(Config, Vec<Op>)> {
    let mut u = Unstructured::new(data);
    let cfg = Config::arbitrary(&mut u).ok()?;
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_OPS {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    Some((cfg, ops))
}

/// Maps an input index into `space`.
pub fn map_ix(space: Space, i: Ix) -> u64 {
    match (space, i) {
        (Space::Small, Ix::Small(v)) => u64::from(v) % SMALL,
        (Space::Small, Ix::High(v)) => u64::MAX - u64::from(v % 4),
        (Space::Small, Ix::Pow(k, d)) => (1u64 << (k % 12)).wrapping_add(d as i64 as u64) % SMALL,
        (Space::Small, Ix::Raw(v)) => v % SMALL,
        (Space::Full, Ix::Small(v)) => u64::from(v),
        (Space::Full, Ix::High(v)) => u64::MAX - u64::from(v),
        (Space::Full, Ix::Pow(k, d)) => (1u64 << (k % 64)).wrapping_add(d as i64 as u64),
        (Space::Full, Ix::Raw(v)) => v,
    }
}

/// The write API common to the façade and the write guard, so one op implementation drives
/// all three writer modes.
pub trait Writer {
    /// `store_range`.
    fn store_range(&mut self, a: u64, b: u64, e: E) -> Result<(), Error>;
    /// `store_zero_range` (the façade has none: it takes the lock for it).
    fn store_zero_range(&mut self, a: u64, b: u64) -> Result<(), Error>;
    /// `insert_range`.
    fn insert_range(&mut self, a: u64, b: u64, e: E) -> Result<(), Error>;
    /// `insert`.
    fn insert(&mut self, a: u64, e: E) -> Result<(), Error>;
    /// `erase`.
    fn erase(&mut self, a: u64) -> Option<(u64, u64)>;
    /// `erase_range`.
    fn erase_range(&mut self, a: u64, b: u64) -> Result<(), Error>;
    /// `clear`.
    fn clear(&mut self);
    /// `empty_area` or `empty_area_rev`.
    fn empty_area(&self, min: u64, max: u64, size: u64, rev: bool) -> Result<u64, Error>;
    /// `alloc_range` or `alloc_rrange`.
    fn alloc(&mut self, e: E, size: u64, min: u64, max: u64, rev: bool) -> Result<u64, Error>;
    /// `alloc_cyclic`.
    fn alloc_cyclic(
        &mut self,
        e: E,
        lo: u64,
        hi: u64,
        next: &mut u64,
    ) -> Result<(u64, bool), Error>;
}

/// A range's bounds as `(first, last)`.
fn bounds(r: RangeInclusive<u64>) -> (u64, u64) {
    (*r.start(), *r.end())
}

/// The start of an allocated range, which must be `size` indices long.
fn alloc_start(r: RangeInclusive<u64>, size: u64) -> u64 {
    assert_eq!(
        r.end().wrapping_sub(*r.start()),
        size.wrapping_sub(1),
        "allocated {r:?} for size {size}"
    );
    *r.start()
}

/// The pin-for-you façade as a [`Writer`].
pub struct Facade<'a>(pub &'a MapleTree<E>);

impl Writer for Facade<'_> {
    fn store_range(&mut self, a: u64, b: u64, e: E) -> Result<(), Error> {
        self.0.store_range(a..=b, e)
    }
    fn store_zero_range(&mut self, a: u64, b: u64) -> Result<(), Error> {
        self.0.lock().store_zero_range(a..=b)
    }
    fn insert_range(&mut self, a: u64, b: u64, e: E) -> Result<(), Error> {
        self.0.insert_range(a..=b, e)
    }
    fn insert(&mut self, a: u64, e: E) -> Result<(), Error> {
        self.0.insert(a, e)
    }
    fn erase(&mut self, a: u64) -> Option<(u64, u64)> {
        self.0.erase(a).map(|e| bounds(e.range()))
    }
    fn erase_range(&mut self, a: u64, b: u64) -> Result<(), Error> {
        self.0.erase_range(a..=b)
    }
    fn clear(&mut self) {
        self.0.clear()
    }
    fn empty_area(&self, min: u64, max: u64, size: u64, rev: bool) -> Result<u64, Error> {
        if rev {
            self.0.empty_area_rev(min..=max, size)
        } else {
            self.0.empty_area(min..=max, size)
        }
    }
    fn alloc(&mut self, e: E, size: u64, min: u64, max: u64, rev: bool) -> Result<u64, Error> {
        if rev {
            self.0.alloc_rrange(min..=max, size, e)
        } else {
            self.0.alloc_range(min..=max, size, e)
        }
        .map(|r| alloc_start(r, size))
    }
    fn alloc_cyclic(
        &mut self,
        e: E,
        lo: u64,
        hi: u64,
        next: &mut u64,
    ) -> Result<(u64, bool), Error> {
        self.0.alloc_cyclic(lo..=hi, next, e)
    }
}

impl Writer for WriteGuard<'_, E> {
    fn store_range(&mut self, a: u64, b: u64, e: E) -> Result<(), Error> {
        WriteGuard::store_range(self, a..=b, e)
    }
    fn store_zero_range(&mut self, a: u64, b: u64) -> Result<(), Error> {
        WriteGuard::store_zero_range(self, a..=b)
    }
    fn insert_range(&mut self, a: u64, b: u64, e: E) -> Result<(), Error> {
        WriteGuard::insert_range(self, a..=b, e)
    }
    fn insert(&mut self, a: u64, e: E) -> Result<(), Error> {
        WriteGuard::insert(self, a, e)
    }
    fn erase(&mut self, a: u64) -> Option<(u64, u64)> {
        WriteGuard::erase(self, a).map(|e| bounds(e.range()))
    }
    fn erase_range(&mut self, a: u64, b: u64) -> Result<(), Error> {
        WriteGuard::erase_range(self, a..=b)
    }
    fn clear(&mut self) {
        WriteGuard::clear(self)
    }
    fn empty_area(&self, min: u64, max: u64, size: u64, rev: bool) -> Result<u64, Error> {
        if rev {
            WriteGuard::empty_area_rev(self, min..=max, size)
        } else {
            WriteGuard::empty_area(self, min..=max, size)
        }
    }
    fn alloc(&mut self, e: E, size: u64, min: u64, max: u64, rev: bool) -> Result<u64, Error> {
        if rev {
            WriteGuard::alloc_rrange(self, min..=max, size, e)
        } else {
            WriteGuard::alloc_range(self, min..=max, size, e)
        }
        .map(|r| alloc_start(r, size))
    }
    fn alloc_cyclic(
        &mut self,
        e: E,
        lo: u64,
        hi: u64,
        next: &mut u64,
    ) -> Result<(u64, bool), Error> {
        WriteGuard::alloc_cyclic(self, lo..=hi, next, e)
    }
}

/// Runs `f` with a writer of the given mode.
pub fn with_writer<R>(
    tree: &mut MapleTree<E>,
    mode: WriterMode,
    f: impl FnOnce(&mut dyn Writer) -> R,
) -> R {
    match mode {
        WriterMode::Facade => f(&mut Facade(tree)),
        WriterMode::Locked => f(&mut tree.lock()),
        WriterMode::Exclusive => f(&mut tree.exclusive()),
    }
}

/// One tree under test with its model.
pub struct Tut {
    /// The tree.
    pub tree: MapleTree<E>,
    /// Its model.
    pub model: Model,
    /// Its `alloc_cyclic` wrap flag.
    pub cyclic: CyclicModel,
    /// The caller-held `next` of `alloc_cyclic`.
    pub next: u64,
}

/// Everything one run owns.
pub struct World {
    /// Creations and drops.
    pub ledger: Arc<Ledger>,
    /// The collector every tree of the run uses.
    pub collector: Collector,
    /// The trees (the dup target has two).
    pub trees: Vec<Tut>,
    /// Index space.
    pub space: Space,
    /// Current writer mode.
    pub mode: WriterMode,
    /// Remaining single-range writes.
    pub budget: u64,
    /// Step counter, for messages.
    pub step: usize,
}

/// Reads a tracked borrow as `(val, serial)`.
pub fn seen(t: &Tracked) -> (u64, u64) {
    (t.val, t.serial)
}

impl World {
    /// A world with one empty tree.
    pub fn new(cfg: &Config) -> Self {
        let collector = Collector::new();
        let mut w = World {
            ledger: Ledger::new(),
            collector,
            trees: Vec::new(),
            space: cfg.space,
            mode: cfg.mode,
            budget: WORK_BUDGET,
            step: 0,
        };
        let tree = MapleTree::with_options(
            Options::new()
                .alloc(cfg.alloc)
                .collector(w.collector.clone()),
        );
        if !cfg.appends {
            tree.set_append(false);
        }
        w.trees.push(Tut {
            tree,
            model: Model::default(),
            cyclic: CyclicModel::default(),
            next: 0,
        });
        w
    }

    /// Maps an input index into the run's space.
    pub fn ix(&self, i: Ix) -> u64 {
        map_ix(self.space, i)
    }

    /// A fresh entry.
    pub fn entry(&self, val: u64) -> E {
        Tracked::new_entry(&self.ledger, val)
    }

    /// Takes up to `want` units of the work budget.
    pub fn take_budget(&mut self, want: u64) -> u64 {
        let got = want.min(self.budget);
        self.budget -= got;
        got
    }

    /// Applies one write op to tree `t`, checking every result against the model.
    pub fn write(&mut self, t: usize, op: &WriteOp) {
        let mode = self.mode;
        match *op {
            WriteOp::Mode(m) => self.mode = m,
            WriteOp::Store { a, b, val } => {
                let (a, b) = (self.ix(a), self.ix(b));
                let e = self.entry(u64::from(val));
                let s = e.serial;
                let tut = &mut self.trees[t];
                let r = with_writer(&mut tut.tree, mode, |w| w.store_range(a, b, e));
                if a > b {
                    assert_eq!(r, Err(Error::InvalidRange), "store_range({a}, {b})");
                } else {
                    assert_eq!(r, Ok(()), "store_range({a}, {b})");
                    tut.model.store(
                        a,
                        b,
                        Some(Content::Entry {
                            val: u64::from(val),
                            serial: s,
                        }),
                    );
                }
            }
            WriteOp::StoreLen { a, len, val } => {
                let a = self.ix(a);
                let b = a.saturating_add(u64::from(len));
                let e = self.entry(u64::from(val));
                let s = e.serial;
                let tut = &mut self.trees[t];
                let r = with_writer(&mut tut.tree, mode, |w| w.store_range(a, b, e));
                assert_eq!(r, Ok(()), "store_range({a}, {b})");
                tut.model.store(
                    a,
                    b,
                    Some(Content::Entry {
                        val: u64::from(val),
                        serial: s,
                    }),
                );
            }
            WriteOp::StoreZero { a, len } => {
                let a = self.ix(a);
                let b = a.saturating_add(u64::from(len));
                let tut = &mut self.trees[t];
                let r = with_writer(&mut tut.tree, mode, |w| w.store_zero_range(a, b));
                assert_eq!(r, Ok(()), "store_zero_range({a}, {b})");
                tut.model.store(a, b, Some(Content::Zero));
            }
            WriteOp::Insert { a, len, val } => {
                let a = self.ix(a);
                let b = a.saturating_add(u64::from(len));
                self.insert(t, a, b, u64::from(val), false);
            }
            WriteOp::InsertRaw { a, b } => {
                let (a, b) = (self.ix(a), self.ix(b));
                self.insert(t, a, b, 7, false);
            }
            WriteOp::InsertOne { a } => {
                let a = self.ix(a);
                self.insert(t, a, a, 1, true);
            }
            WriteOp::Erase { a } => {
                let a = self.ix(a);
                let tut = &mut self.trees[t];
                let (lo, hi, c) = tut.model.slot(a);
                let r = with_writer(&mut tut.tree, mode, |w| w.erase(a));
                let want = c.map(|_| (lo, hi));
                assert_eq!(r, want, "erase({a})");
                if c.is_some() {
                    tut.model.store(lo, hi, None);
                }
            }
            WriteOp::EraseRange { a, len } => {
                let a = self.ix(a);
                let b = a.saturating_add(u64::from(len));
                self.erase_range(t, a, b);
            }
            WriteOp::EraseRaw { a, b } => {
                let (a, b) = (self.ix(a), self.ix(b));
                self.erase_range(t, a, b);
            }
            WriteOp::AppendRun {
                start,
                count,
                width,
                gap,
            } => {
                let start = self.ix(start);
                let n = self.take_budget(u64::from(count) % 4097);
                let step = u64::from(width) + 1 + u64::from(gap);
                let ranges: Vec<(u64, u64)> = (0..n)
                    .map_while(|k| {
                        let a = start.checked_add(k.checked_mul(step)?)?;
                        Some((a, a.checked_add(u64::from(width))?))
                    })
                    .collect();
                self.run(t, &ranges, RunAction::Store);
            }
            WriteOp::Strided {
                start,
                count,
                stride,
                width,
                action,
                down,
            } => {
                let start = self.ix(start);
                let n = self.take_budget(u64::from(count) % 2049);
                let stride = u64::from(stride).max(1);
                let mut ranges: Vec<(u64, u64)> = (0..n)
                    .map_while(|k| {
                        let a = start.checked_add(k.checked_mul(stride)?)?;
                        Some((a, a.saturating_add(u64::from(width))))
                    })
                    .collect();
                if down {
                    ranges.reverse();
                }
                self.run(t, &ranges, action);
            }
            WriteOp::Clear => {
                let tut = &mut self.trees[t];
                with_writer(&mut tut.tree, mode, |w| w.clear());
                tut.model = Model::default();
            }
        }
    }

    fn insert(&mut self, t: usize, a: u64, b: u64, val: u64, one: bool) {
        let mode = self.mode;
        let e = self.entry(val);
        let s = e.serial;
        let tut = &mut self.trees[t];
        let want = if a > b {
            Err(Error::InvalidRange)
        } else if tut.model.occupied(a, b) {
            Err(Error::Occupied)
        } else {
            Ok(())
        };
        let r = with_writer(&mut tut.tree, mode, |w| {
            if one {
                w.insert(a, e)
            } else {
                w.insert_range(a, b, e)
            }
        });
        assert_eq!(r, want, "insert_range({a}, {b})");
        if r.is_ok() {
            tut.model
                .store(a, b, Some(Content::Entry { val, serial: s }));
        }
    }

    fn erase_range(&mut self, t: usize, a: u64, b: u64) {
        let mode = self.mode;
        let tut = &mut self.trees[t];
        let r = with_writer(&mut tut.tree, mode, |w| w.erase_range(a, b));
        if a > b {
            assert_eq!(r, Err(Error::InvalidRange), "erase_range({a}, {b})");
        } else {
            assert_eq!(r, Ok(()), "erase_range({a}, {b})");
            tut.model.store(a, b, None);
        }
    }

    /// Applies `action` to every range under one writer (one lock or exclusive borrow).
    fn run(&mut self, t: usize, ranges: &[(u64, u64)], action: RunAction) {
        let mode = self.mode;
        let ledger = Arc::clone(&self.ledger);
        let tut = &mut self.trees[t];
        let model = &mut tut.model;
        with_writer(&mut tut.tree, mode, |w| {
            for (k, &(a, b)) in ranges.iter().enumerate() {
                match action {
                    RunAction::Store | RunAction::Insert => {
                        let val = k as u64;
                        let e = Tracked::new_entry(&ledger, val);
                        let s = e.serial;
                        let c = Some(Content::Entry { val, serial: s });
                        if matches!(action, RunAction::Store) {
                            assert_eq!(w.store_range(a, b, e), Ok(()), "run store_range({a}, {b})");
                            model.store(a, b, c);
                        } else {
                            let want = if model.occupied(a, b) {
                                Err(Error::Occupied)
                            } else {
                                Ok(())
                            };
                            assert_eq!(w.insert_range(a, b, e), want, "run insert_range({a}, {b})");
                            if want.is_ok() {
                                model.store(a, b, c);
                            }
                        }
                    }
                    RunAction::Erase => {
                        assert_eq!(w.erase_range(a, b), Ok(()), "run erase_range({a}, {b})");
                        model.store(a, b, None);
                    }
                    RunAction::Zero => {
                        assert_eq!(
                            w.store_zero_range(a, b),
                            Ok(()),
                            "run store_zero_range({a}, {b})"
                        );
                        model.store(a, b, Some(Content::Zero));
                    }
                }
            }
        });
    }

    /// The per-step check of tree `t`: `validate`, the whole partition (every range, empty and
    /// zero ones included) through a cursor, every entry through the iterator, `is_empty`.
    pub fn check(&self, t: usize) {
        let tut = &self.trees[t];
        let tree = &tut.tree;
        if let Err(e) = tree.validate() {
            panic!("step {}: tree {t}: {e}\n{}", self.step, tree.dump());
        }
        let guard = tree.pin();
        let want = tut.model.partition();
        let mut got: Vec<Slot> = Vec::with_capacity(want.len());
        let mut c = tree.cursor(0, &guard);
        let v = c.walk();
        let content = |v: Option<&Tracked>, zero: bool| match v {
            Some(t) => Some(Content::Entry {
                val: t.val,
                serial: t.serial,
            }),
            None if zero => Some(Content::Zero),
            None => None,
        };
        got.push((c.index(), c.last(), content(v, c.is_zero())));
        while c.last() != u64::MAX && got.len() <= want.len() {
            let v = c.next_range(u64::MAX);
            assert_eq!(
                c.status(),
                Status::Active,
                "step {}: next_range status",
                self.step
            );
            got.push((c.index(), c.last(), content(v, c.is_zero())));
        }
        if got != want {
            let at = got
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(got.len().min(want.len()));
            panic!(
                "step {}: tree {t}: partition differs at range #{at}: tree {:?} model {:?} (tree {} ranges, model {})",
                self.step,
                got.get(at),
                want.get(at),
                got.len(),
                want.len()
            );
        }
        let ents: Vec<Seen> = tree
            .iter(&guard)
            .map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial))
            .collect();
        let want_e = tut.model.entries();
        assert!(
            ents == want_e,
            "step {}: tree {t}: iter differs from model",
            self.step
        );
        if tree.is_empty() {
            assert!(
                tut.model.is_empty(),
                "step {}: is_empty() but the model holds ranges",
                self.step
            );
        }
    }

    /// Runs the collector until no deferred drop is left, then checks that exactly the entries
    /// the models hold are alive (nothing leaked, nothing dropped early).
    pub fn check_live(&self) {
        let want: BTreeSet<u64> = self.trees.iter().flat_map(|t| t.model.serials()).collect();
        let h = self.collector.register();
        let alive = || self.ledger.created() - self.ledger.dropped();
        let mut n = alive();
        let mut stall = 0;
        // Each pin+flush can advance the epoch by one and run a few expired bags; stop once
        // many rounds in a row have freed nothing (eight were too few: bags queued behind the
        // seals' lifts and RCU-mode frees took longer, and were reported as leaks).
        while n != want.len() as u64 && stall < 256 {
            h.pin().flush();
            let now = alive();
            stall = if now == n { stall + 1 } else { 0 };
            n = now;
        }
        let live = self.ledger.live();
        if live != want {
            let early: Vec<_> = want.difference(&live).take(5).collect();
            let leaked: Vec<_> = live.difference(&want).take(5).collect();
            panic!("step {}: live entries differ: dropped while held {early:?}; held by no tree {leaked:?}", self.step);
        }
    }

    /// All checks of the step, on every tree.
    pub fn check_all(&mut self) {
        for t in 0..self.trees.len() {
            self.check(t);
        }
        self.check_live();
        self.step += 1;
    }

    /// Drops every tree and the collector (running every deferred drop), then checks that
    /// every entry created was dropped exactly once.
    pub fn finish(self) {
        let World {
            ledger,
            collector,
            trees,
            ..
        } = self;
        drop(trees);
        drop(collector);
        assert_eq!(
            ledger.created(),
            ledger.dropped(),
            "entries created vs dropped"
        );
        assert!(
            ledger.live().is_empty(),
            "entries never dropped: {:?}",
            ledger.live()
        );
    }
}

/// Formats a failed expectation compactly (used by targets for read results).
pub fn expect_eq<T: PartialEq + Debug>(step: usize, what: &str, got: T, want: T) {
    assert!(
        got == want,
        "step {step}: {what}: tree {got:?}, model {want:?}"
    );
}
