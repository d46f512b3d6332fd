//! Target `cursor_ops`: the `ma_state` cursor — walk, find, find_rev, find_range(_rev), next,
//! prev, next_range, prev_range, set/set_range/reset/pause — with its status machine (K§2.3,
//! K§2.4), read cursors under a guard and write cursors (`CursorMut`) that store, erase and
//! preallocate while iterating.
//!
//! The model cursor keeps `(index, last, status)` and whether its range is a walked slot (the
//! kernel's `mas->node` being set). Rules modelled, for a tree that holds something:
//! - `walk` re-walks to `index`: range = the slot, status active;
//! - entry-seeking moves skip empty and zero ranges; range moves (`*_range`) stop on every
//!   range; a forward move that starts from a range ending at or past its limit fails at
//!   once, keeping the range; a backward move likewise with a range starting at or below it;
//! - failure status: `find` stays active ("ignores overflow"), `next`/`next_range` overflow,
//!   every backward move underflows;
//! - from start/pause/none a move first walks (`find` from pause resumes at `last + 1`,
//!   `find_rev` from pause at `index - 1`; `find` from start with `index > max` returns
//!   nothing and changes nothing);
//! - leaving overflow/underflow: `find` returns the entry at the current position first (if it
//!   starts at or below `max`), so do `next` after underflow (if it starts at or below `max`)
//!   and `prev` after overflow (if it ends at or above `min`); `find_rev` after overflow moves
//!   back like an active cursor; `next_range` after underflow and `prev_range` after overflow
//!   first check the limit (a range ending at or past `max` overflows, one starting at or below
//!   `min` underflows, unchanged), then return the current range if it is occupied and step
//!   over it if it is empty (kernel `mas_next_setup`/`mas_prev_setup`);
//! - a write through the cursor leaves it active on the written range (a NULL store or an
//!   erase on the widened empty range).
//!
//! When the model holds nothing the tree may have no root (status none) or an empty leaf, so
//! there only the returned entry is checked and the model adopts the cursor's position.

use arbitrary::Arbitrary;
use maple_tree::{Error, Status};

use super::entry::{Tracked, E};
use super::harness::{decode, expect_eq, map_ix, Ix, World, WriteOp};
use super::model::{Content, Model};

/// A cursor operation.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum CurOp {
    /// `set(a)`.
    Set(Ix),
    /// `set_range(a, b)`.
    SetRange(Ix, Ix),
    /// `reset()`.
    Reset,
    /// `pause()`.
    Pause,
    /// `walk()`.
    Walk,
    /// `find(max)`.
    Find(Ix),
    /// `find(u64::MAX)` (iteration).
    FindAll,
    /// `find_rev(min)`.
    FindRev(Ix),
    /// `find_rev(0)`.
    FindRevAll,
    /// `find_range(max)`.
    FindRange(Ix),
    /// `find_range_rev(min)`.
    FindRangeRev(Ix),
    /// `next(max)`.
    Next(Ix),
    /// `next(u64::MAX)`.
    NextAll,
    /// `prev(min)`.
    Prev(Ix),
    /// `prev(0)`.
    PrevAll,
    /// `next_range(max)`.
    NextRange(Ix),
    /// `prev_range(min)`.
    PrevRange(Ix),
    /// Write cursors only: `store(entry)` over `[index, last]`.
    Store(u8),
    /// Write cursors only: `store_null()`.
    StoreNull,
    /// Write cursors only: `erase()`.
    Erase,
    /// Write cursors only: `preallocate()`, then `store_prealloc(entry)` if it succeeded.
    Prealloc(u8),
}

/// Which cursor a session opens.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Kind {
    /// `tree.cursor(i, &guard)`.
    Read,
    /// `tree.lock().cursor(i)`.
    Locked,
    /// `tree.exclusive().cursor(i)`.
    Exclusive,
}

/// One step.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// A write outside any cursor (builds the tree).
    W(WriteOp),
    /// A cursor session: open at `start`, run `ops`, close.
    Session {
        kind: Kind,
        start: Ix,
        ops: Vec<CurOp>,
    },
}

/// The decoded input, for reading a crash (`FUZZ_INPUT=file cargo test --test fuzz_replay
/// describe_input -- --ignored --nocapture`).
pub fn describe(data: &[u8]) -> String {
    format!("{:#?}", decode::<Op>(data))
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((cfg, ops)) = decode::<Op>(data) else {
        return;
    };
    let mut w = World::new(&cfg);
    for op in &ops {
        match op {
            Op::W(wop) => w.write(0, wop),
            Op::Session { kind, start, ops } => session(&mut w, *kind, *start, ops),
        }
        w.check_all();
    }
    w.finish();
}

/// The model cursor.
#[derive(Clone, Copy, Debug)]
struct MCursor {
    index: u64,
    last: u64,
    status: Status,
    /// The range is the slot a walk found (the kernel's node pointer is set).
    walked: bool,
}

/// What a cursor move returned: `(val, serial)` of an entry.
type Got = Option<(u64, u64)>;

fn as_got(c: Option<Content>) -> Got {
    c.and_then(Content::entry)
}

impl MCursor {
    fn new(index: u64) -> Self {
        MCursor {
            index,
            last: index,
            status: Status::Start,
            walked: false,
        }
    }

    fn walk_to(&mut self, m: &Model, i: u64) -> Option<Content> {
        let (lo, hi, c) = m.slot(i);
        self.index = lo;
        self.last = hi;
        self.status = Status::Active;
        self.walked = true;
        c
    }

    fn ensure(&mut self, m: &Model) -> Option<Content> {
        if !self.walked {
            let i = self.index;
            return self.walk_to(m, i);
        }
        m.slot(self.index).2
    }

    fn is_entry(c: Option<Content>) -> bool {
        matches!(c, Some(Content::Entry { .. }))
    }

    /// Forward from the current range: the next entry (or range) starting at or below `max`.
    fn scan_fwd(&mut self, m: &Model, max: u64, entries: bool, fail: Status) -> Got {
        loop {
            if self.last >= max {
                self.status = fail;
                return None;
            }
            let c = self.walk_to(m, self.last + 1);
            if !entries || Self::is_entry(c) {
                return as_got(c);
            }
        }
    }

    /// Backward from the current range: the previous entry (or range) ending at or above `min`.
    fn scan_back(&mut self, m: &Model, min: u64, entries: bool) -> Got {
        loop {
            if self.index <= min {
                self.status = Status::Underflow;
                return None;
            }
            let c = self.walk_to(m, self.index - 1);
            if !entries || Self::is_entry(c) {
                return as_got(c);
            }
        }
    }

    fn fresh(&self) -> bool {
        matches!(self.status, Status::Start | Status::None | Status::Pause)
    }

    fn walk(&mut self, m: &Model) -> Got {
        let i = self.index;
        as_got(self.walk_to(m, i))
    }

    fn find(&mut self, m: &Model, max: u64) -> Got {
        match self.status {
            Status::Start | Status::None | Status::Pause => {
                let from = if self.status == Status::Pause {
                    if self.last == u64::MAX {
                        return None;
                    }
                    self.last + 1
                } else {
                    self.index
                };
                if from > max {
                    return None;
                }
                let c = self.walk_to(m, from);
                if Self::is_entry(c) {
                    return as_got(c);
                }
                self.scan_fwd(m, max, true, Status::Active)
            }
            Status::Overflow | Status::Underflow => {
                let c = self.ensure(m);
                if Self::is_entry(c) && self.index <= max {
                    self.status = Status::Active;
                    return as_got(c);
                }
                self.scan_fwd(m, max, true, Status::Active)
            }
            Status::Active => {
                self.ensure(m);
                self.scan_fwd(m, max, true, Status::Active)
            }
        }
    }

    fn find_rev(&mut self, m: &Model, min: u64) -> Got {
        match self.status {
            Status::Start | Status::None | Status::Pause => {
                let from = if self.status == Status::Pause {
                    if self.index == 0 {
                        return None;
                    }
                    self.index - 1
                } else {
                    self.index
                };
                if from < min {
                    self.status = Status::Underflow;
                    return None;
                }
                let c = self.walk_to(m, from);
                if Self::is_entry(c) {
                    return as_got(c);
                }
                self.scan_back(m, min, true)
            }
            // From overflow the cursor is active again and moves back (kernel find_rev setup).
            Status::Active | Status::Underflow | Status::Overflow => {
                self.ensure(m);
                self.scan_back(m, min, true)
            }
        }
    }

    fn next(&mut self, m: &Model, max: u64) -> Got {
        if self.fresh() {
            let i = self.index;
            self.walk_to(m, i);
        } else if self.status == Status::Underflow {
            // The entry at the current position comes first (kernel `mas_next` setup).
            let c = self.ensure(m);
            if Self::is_entry(c) && self.index <= max {
                self.status = Status::Active;
                return as_got(c);
            }
        } else {
            self.ensure(m);
        }
        self.scan_fwd(m, max, true, Status::Overflow)
    }

    fn prev(&mut self, m: &Model, min: u64) -> Got {
        if self.fresh() {
            let i = self.index;
            self.walk_to(m, i);
        } else if self.status == Status::Overflow {
            let c = self.ensure(m);
            if Self::is_entry(c) && self.last >= min {
                self.status = Status::Active;
                return as_got(c);
            }
        } else {
            self.ensure(m);
        }
        self.scan_back(m, min, true)
    }

    fn next_range(&mut self, m: &Model, max: u64) -> Got {
        if self.status == Status::Underflow {
            // Kernel `mas_next_range` shares `mas_next_setup`: the limit is checked first, then
            // an occupied current range comes first; an empty one is stepped over.
            if self.last >= max {
                self.status = Status::Overflow;
                return None;
            }
            let c = self.ensure(m);
            self.status = Status::Active;
            if c.is_some() {
                return as_got(c);
            }
        }
        self.step_next_range(m, max)
    }

    fn step_next_range(&mut self, m: &Model, max: u64) -> Got {
        if self.fresh() {
            let i = self.index;
            self.walk_to(m, i);
        } else {
            self.ensure(m);
        }
        self.scan_fwd(m, max, false, Status::Overflow)
    }

    fn prev_range(&mut self, m: &Model, min: u64) -> Got {
        if self.status == Status::Overflow {
            // Kernel `mas_prev_range` shares `mas_prev_setup`: the limit is checked first, then
            // an occupied current range comes first; an empty one is stepped over.
            if self.index <= min {
                self.status = Status::Underflow;
                return None;
            }
            let c = self.ensure(m);
            self.status = Status::Active;
            if c.is_some() {
                return as_got(c);
            }
        }
        self.step_prev_range(m, min)
    }

    fn step_prev_range(&mut self, m: &Model, min: u64) -> Got {
        if self.fresh() {
            let i = self.index;
            self.walk_to(m, i);
        } else {
            self.ensure(m);
        }
        self.scan_back(m, min, false)
    }

    fn find_range(&mut self, m: &Model, max: u64) -> Got {
        if self.fresh() {
            return self.find(m, max);
        }
        self.step_next_range(m, max)
    }

    fn find_range_rev(&mut self, m: &Model, min: u64) -> Got {
        if self.fresh() || self.status == Status::Overflow {
            return self.find_rev(m, min);
        }
        self.step_prev_range(m, min)
    }

    /// Applies a read move to the model; `None` for ops that are not reads.
    fn apply(&mut self, m: &Model, op: CurOp, ix: impl Fn(Ix) -> u64) -> Option<Got> {
        Some(match op {
            CurOp::Walk => self.walk(m),
            CurOp::Find(a) => self.find(m, ix(a)),
            CurOp::FindAll => self.find(m, u64::MAX),
            CurOp::FindRev(a) => self.find_rev(m, ix(a)),
            CurOp::FindRevAll => self.find_rev(m, 0),
            CurOp::FindRange(a) => self.find_range(m, ix(a)),
            CurOp::FindRangeRev(a) => self.find_range_rev(m, ix(a)),
            CurOp::Next(a) => self.next(m, ix(a)),
            CurOp::NextAll => self.next(m, u64::MAX),
            CurOp::Prev(a) => self.prev(m, ix(a)),
            CurOp::PrevAll => self.prev(m, 0),
            CurOp::NextRange(a) => self.next_range(m, ix(a)),
            CurOp::PrevRange(a) => self.prev_range(m, ix(a)),
            _ => return None,
        })
    }
}

/// The read interface both cursor types share, so one driver checks both.
trait CursorLike {
    fn index(&self) -> u64;
    fn last(&self) -> u64;
    fn status(&self) -> Status;
    fn is_zero(&self) -> bool;
    fn set(&mut self, i: u64);
    fn set_range(&mut self, a: u64, b: u64);
    fn reset(&mut self);
    fn pause(&mut self);
    fn read(&mut self, op: CurOp, ix: &dyn Fn(Ix) -> u64) -> Got;
}

macro_rules! cursor_like {
    ($t:ty) => {
        impl CursorLike for $t {
            fn index(&self) -> u64 {
                <$t>::index(self)
            }
            fn last(&self) -> u64 {
                <$t>::last(self)
            }
            fn status(&self) -> Status {
                <$t>::status(self)
            }
            fn is_zero(&self) -> bool {
                <$t>::is_zero(self)
            }
            fn set(&mut self, i: u64) {
                <$t>::set(self, i)
            }
            fn set_range(&mut self, a: u64, b: u64) {
                <$t>::set_range(self, a, b)
            }
            fn reset(&mut self) {
                <$t>::reset(self)
            }
            fn pause(&mut self) {
                <$t>::pause(self)
            }
            fn read(&mut self, op: CurOp, ix: &dyn Fn(Ix) -> u64) -> Got {
                let r: Option<&Tracked> = match op {
                    CurOp::Walk => self.walk(),
                    CurOp::Find(a) => self.find(ix(a)),
                    CurOp::FindAll => self.find(u64::MAX),
                    CurOp::FindRev(a) => self.find_rev(ix(a)),
                    CurOp::FindRevAll => self.find_rev(0),
                    CurOp::FindRange(a) => self.find_range(ix(a)),
                    CurOp::FindRangeRev(a) => self.find_range_rev(ix(a)),
                    CurOp::Next(a) => self.next(ix(a)),
                    CurOp::NextAll => self.next(u64::MAX),
                    CurOp::Prev(a) => self.prev(ix(a)),
                    CurOp::PrevAll => self.prev(0),
                    CurOp::NextRange(a) => self.next_range(ix(a)),
                    CurOp::PrevRange(a) => self.prev_range(ix(a)),
                    _ => unreachable!("not a read: {op:?}"),
                };
                r.map(|t| (t.val, t.serial))
            }
        }
    };
}

cursor_like!(maple_tree::Cursor<'_, E>);
cursor_like!(maple_tree::CursorMut<'_, '_, E>);

/// Position setters and reads: shared by both cursor kinds. Returns `false` for write ops.
fn drive(
    c: &mut dyn CursorLike,
    mc: &mut MCursor,
    m: &Model,
    op: CurOp,
    ix: &dyn Fn(Ix) -> u64,
    step: usize,
    k: usize,
) -> bool {
    match op {
        CurOp::Set(a) => {
            let a = ix(a);
            c.set(a);
            *mc = MCursor::new(a);
        }
        CurOp::SetRange(a, b) => {
            let (a, b) = (ix(a), ix(b));
            c.set_range(a, b);
            *mc = MCursor {
                index: a,
                last: b,
                status: Status::Start,
                walked: false,
            };
        }
        CurOp::Reset => {
            c.reset();
            mc.status = Status::Start;
            mc.walked = false;
        }
        CurOp::Pause => {
            c.pause();
            mc.status = Status::Pause;
            mc.walked = false;
        }
        CurOp::Store(_) | CurOp::StoreNull | CurOp::Erase | CurOp::Prealloc(_) => return false,
        _ => {
            let before = *mc;
            let got = c.read(op, ix);
            if m.is_empty() {
                // Root or no root is the tree's business: check the answer, adopt the position.
                expect_eq(step, &format!("op {k} {op:?} on an empty tree"), got, None);
                *mc = MCursor {
                    index: c.index(),
                    last: c.last(),
                    status: c.status(),
                    walked: false,
                };
            } else {
                let want = mc.apply(m, op, ix).expect("a read op");
                let ctx = format!("op {k} {op:?} from {before:?}");
                expect_eq(
                    step,
                    &ctx,
                    (got, c.index(), c.last(), c.status()),
                    (want, mc.index, mc.last, mc.status),
                );
                if mc.walked && mc.status == Status::Active {
                    let zero = m.slot(mc.index).2 == Some(Content::Zero);
                    expect_eq(step, &format!("{ctx}: is_zero"), c.is_zero(), zero);
                }
            }
        }
    }
    check_invariants(c, step, k, op);
    true
}

/// What holds after any cursor operation, whatever the model says.
fn check_invariants(c: &dyn CursorLike, step: usize, k: usize, op: CurOp) {
    if c.status() == Status::Active {
        assert!(
            c.index() <= c.last(),
            "step {step}: op {k} {op:?}: active cursor with index > last"
        );
    }
}

fn session(w: &mut World, kind: Kind, start: Ix, ops: &[CurOp]) {
    let start = w.ix(start);
    let step = w.step;
    let space = w.space;
    let ix_fn = move |i| map_ix(space, i);
    let ix: &dyn Fn(Ix) -> u64 = &ix_fn;
    let mut mc = MCursor::new(start);
    match kind {
        Kind::Read => {
            let t = &w.trees[0];
            let g = t.tree.pin();
            let mut c = t.tree.cursor(start, &g);
            for (k, &op) in ops.iter().enumerate() {
                drive(&mut c, &mut mc, &t.model, op, ix, step, k);
            }
        }
        Kind::Locked | Kind::Exclusive => {
            let ledger = std::sync::Arc::clone(&w.ledger);
            let t = &mut w.trees[0];
            let model = &mut t.model;
            let mut guard = match kind {
                Kind::Locked => t.tree.lock(),
                _ => t.tree.exclusive(),
            };
            let mut c = guard.cursor(start);
            for (k, &op) in ops.iter().enumerate() {
                if drive(&mut c, &mut mc, model, op, ix, step, k) {
                    continue;
                }
                let ctx = format!("op {k} {op:?} from {mc:?}");
                let (a, b) = (c.index(), c.last());
                assert_eq!(
                    (a, b),
                    (mc.index, mc.last),
                    "step {step}: {ctx}: cursor range before the write"
                );
                match op {
                    CurOp::Store(v) | CurOp::Prealloc(v) => {
                        let e = Tracked::new_entry(&ledger, u64::from(v));
                        let s = e.serial;
                        let r = if let CurOp::Prealloc(_) = op {
                            let p = c.preallocate();
                            if p.is_ok() {
                                c.store_prealloc(e);
                            }
                            p
                        } else {
                            c.store(e)
                        };
                        if a > b {
                            expect_eq(step, &ctx, r, Err(Error::InvalidRange));
                            continue;
                        }
                        expect_eq(step, &ctx, r, Ok(()));
                        model.store(
                            a,
                            b,
                            Some(Content::Entry {
                                val: u64::from(v),
                                serial: s,
                            }),
                        );
                        mc = MCursor {
                            index: a,
                            last: b,
                            status: Status::Active,
                            walked: false,
                        };
                    }
                    CurOp::StoreNull => {
                        let r = c.store_null();
                        if a > b {
                            expect_eq(step, &ctx, r, Err(Error::InvalidRange));
                            continue;
                        }
                        expect_eq(step, &ctx, r, Ok(()));
                        model.store(a, b, None);
                        let (lo, hi, _) = model.slot(a);
                        mc = MCursor {
                            index: lo,
                            last: hi,
                            status: Status::Active,
                            walked: false,
                        };
                    }
                    CurOp::Erase => {
                        let r = c.erase();
                        let (lo, hi, content) = model.slot(a);
                        if model.is_empty() {
                            expect_eq(step, &ctx, r, false);
                            mc = MCursor {
                                index: c.index(),
                                last: c.last(),
                                status: c.status(),
                                walked: false,
                            };
                            continue;
                        }
                        expect_eq(step, &ctx, r, content.is_some());
                        if content.is_some() {
                            model.store(lo, hi, None);
                            let (lo, hi, _) = model.slot(a);
                            mc = MCursor {
                                index: lo,
                                last: hi,
                                status: Status::Active,
                                walked: false,
                            };
                        } else {
                            mc = MCursor {
                                index: lo,
                                last: hi,
                                status: Status::Active,
                                walked: true,
                            };
                        }
                    }
                    _ => unreachable!(),
                }
                expect_eq(
                    step,
                    &format!("{ctx}: range and status after the write"),
                    (c.index(), c.last(), c.status()),
                    (mc.index, mc.last, mc.status),
                );
            }
        }
    }
}
