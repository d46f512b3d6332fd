//! Target `cursor_ops`: the `ma_state` cursor — walk, find, find_rev, find_range(_rev), next, prev,
//! next_range, prev_range, set/set_range/reset/pause — with its status machine (the kernel's `enum
//! maple_status`, include/linux/maple_tree.h), read cursors under a guard and write cursors
//! (`CursorMut`) that store, erase and preallocate while iterating.
//!
//! The model cursor keeps `(index, last, status)` and whether its range is a walked slot (the
//! kernel's `mas->node` being set), and follows the kernel's functions step for step (checked
//! against the kernel itself by `tests/kernel_oracle.rs`):
//! - `walk` (`mas_walk`) re-walks to `index`: range = the slot, status active; on an empty tree
//!   status none and the range `[0, u64::MAX]`;
//! - every move first runs its setup (`mas_next_setup`, `mas_prev_setup`, `mas_find_setup`,
//!   `mas_find_rev_setup`): the limit checks that can end a move before any walk (on `last`
//!   for `next`/`next_range` before anything else, on `index` for `prev`/`prev_range`; per
//!   status for the `find` family), the walk from start/pause/none (`find` from pause resumes
//!   at `last + 1`, `find_rev` from pause at `index - 1`, `find` from none at `last`), and the
//!   overflow/underflow exits (`find` and `next` after underflow, `find` and `prev` after
//!   overflow, return the entry at the current position first; the other moves just carry on);
//! - then `mas_next_slot`/`mas_prev_slot`: entry-seeking moves skip empty (and zero) ranges and
//!   fail at the limit on the last empty range inspected; range moves take one range; a range
//!   already at the limit fails at once, unchanged;
//! - failure status: `find` stays active ("ignores overflow"), `find_range`, `next`,
//!   `next_range` overflow, the backward moves underflow;
//! - on an empty tree, a reverse find that finds nothing gives the range `[0, 0]` (the kernel's
//!   `ma_root`, reported as none here), and the next move leaves it as the kernel leaves
//!   `ma_root`;
//! - a step from overflow/underflow that was reached before the cursor ever walked re-walks
//!   first (`last` forwards, `index` backwards), as the crate documents for the kernel's
//!   null-node bug;
//! - a write through the cursor leaves it active on the written range (a NULL store or an
//!   erase on the widened empty range).

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

/// The model cursor: the kernel's `ma_state` status machine (`mas_walk`, the `mas_*_setup`
/// functions, `mas_next_slot`/`mas_prev_slot`) over the model's ranges. The kernel never keeps
/// two empty slots side by side, so its slots are exactly the model's ranges.
#[derive(Clone, Copy, Debug)]
struct MCursor {
    index: u64,
    last: u64,
    status: Status,
    /// The range is the slot a walk found (the kernel's node pointer is set).
    walked: bool,
    /// The kernel's state would be `ma_root` here (an empty tree after a reverse find that
    /// found nothing); the crate reports [`Status::None`].
    root: bool,
    /// The last find setup's walk landed on the zero entry (`find`/`find_rev` step over it).
    zero: bool,
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
            root: false,
            zero: false,
        }
    }

    /// `mas_walk` to `i`.
    fn walk_to(&mut self, m: &Model, i: u64) -> Option<Content> {
        if m.is_empty() {
            self.index = 0;
            self.last = u64::MAX;
            self.status = Status::None;
            self.walked = false;
            return None;
        }
        let (lo, hi, c) = m.slot(i);
        self.index = lo;
        self.last = hi;
        self.status = Status::Active;
        self.walked = true;
        c
    }

    fn walk(&mut self, m: &Model) -> Option<Content> {
        self.root = false;
        let i = self.index;
        self.walk_to(m, i)
    }

    /// A step from a position that was never walked (a limit hit before any walk: the kernel
    /// dereferences a null node there) or that a write replaced: re-walk to `at` first.
    fn position(&mut self, m: &Model, at: u64) -> bool {
        if !self.walked {
            self.walk_to(m, at);
        }
        self.status == Status::Active
    }

    fn is_entry(c: Option<Content>) -> bool {
        matches!(c, Some(Content::Entry { .. }))
    }

    /// `mas_next_slot`.
    fn next_slot(&mut self, m: &Model, max: u64, empty: bool) -> Got {
        let at = self.last;
        if !self.position(m, at) {
            return None;
        }
        if self.last >= max {
            self.status = Status::Overflow;
            return None;
        }
        loop {
            let c = self.walk_to(m, self.last + 1);
            if empty || Self::is_entry(c) {
                return as_got(c);
            }
            if self.last >= max {
                self.status = Status::Overflow;
                return None;
            }
        }
    }

    /// `mas_prev_slot`.
    fn prev_slot(&mut self, m: &Model, min: u64, empty: bool) -> Got {
        let at = self.index;
        if !self.position(m, at) {
            return None;
        }
        loop {
            if self.index <= min {
                self.status = Status::Underflow;
                return None;
            }
            let c = self.walk_to(m, self.index - 1);
            if empty || Self::is_entry(c) {
                return as_got(c);
            }
        }
    }

    /// `mas_next_setup`: `Some(answer)` when decided there.
    fn next_setup(&mut self, m: &Model, max: u64) -> Option<Got> {
        let root = std::mem::take(&mut self.root);
        if self.last >= max {
            self.status = Status::Overflow;
            return Some(None);
        }
        if root {
            (self.index, self.last, self.status) = (1, u64::MAX, Status::None);
            return Some(None);
        }
        match self.status {
            Status::Active => return None,
            Status::Start | Status::None | Status::Pause => {
                self.walk(m);
            }
            Status::Overflow => {
                self.status = Status::Active;
                return None;
            }
            Status::Underflow => {
                let c = self.walk(m);
                if c.is_some() {
                    return Some(as_got(c));
                }
            }
            _ => unreachable!("a Status the model does not know"),
        }
        (self.status != Status::Active).then_some(None)
    }

    /// `mas_prev_setup`: `Some(answer)` when decided there.
    fn prev_setup(&mut self, m: &Model, min: u64) -> Option<Got> {
        self.root = false;
        if self.index <= min {
            self.status = Status::Underflow;
            return Some(None);
        }
        match self.status {
            Status::Active => return None,
            Status::Start | Status::None | Status::Pause => {
                self.walk(m);
            }
            Status::Underflow => {
                self.status = Status::Active;
                return None;
            }
            Status::Overflow => {
                let c = self.walk(m);
                if c.is_some() {
                    return Some(as_got(c));
                }
            }
            _ => unreachable!("a Status the model does not know"),
        }
        (self.status != Status::Active).then_some(None)
    }

    /// `mas_find_setup`: `Some(answer)` when decided there.
    fn find_setup(&mut self, m: &Model, max: u64) -> Option<Got> {
        if std::mem::take(&mut self.root) {
            (self.index, self.last, self.status) = (1, u64::MAX, Status::None);
            return Some(None);
        }
        match self.status {
            Status::Active => return (self.last >= max).then_some(None),
            Status::Start => {}
            Status::Pause | Status::None => {
                if self.last >= max {
                    return Some(None);
                }
                if self.status == Status::Pause {
                    self.last += 1;
                }
                self.index = self.last;
                self.status = Status::Start;
            }
            Status::Underflow | Status::Overflow => {
                if self.status == Status::Underflow && self.index >= max {
                    self.status = Status::Overflow;
                    return Some(None);
                }
                if self.status == Status::Overflow && self.last >= max {
                    return Some(None);
                }
                let c = self.walk(m);
                if c.is_some() {
                    self.zero = matches!(c, Some(Content::Zero));
                    return Some(as_got(c));
                }
            }
            _ => unreachable!("a Status the model does not know"),
        }
        if self.status == Status::Start {
            if self.index > max {
                return Some(None);
            }
            let c = self.walk(m);
            if c.is_some() {
                self.zero = matches!(c, Some(Content::Zero));
                return Some(as_got(c));
            }
        }
        (self.status == Status::None || self.index == max).then_some(None)
    }

    /// `mas_find_rev_setup`: `Some(answer)` when decided there.
    fn find_rev_setup(&mut self, m: &Model, min: u64) -> Option<Got> {
        if std::mem::take(&mut self.root) {
            return Some(None);
        }
        match self.status {
            Status::Active | Status::Start => {}
            Status::Pause => {
                if self.index <= min {
                    self.status = Status::Underflow;
                    return Some(None);
                }
                self.index -= 1;
                self.last = self.index;
                self.status = Status::Start;
            }
            Status::None => {
                if self.index <= min {
                    return Some(None);
                }
                self.last = self.index;
                self.status = Status::Start;
            }
            Status::Overflow | Status::Underflow => {
                if self.index <= min {
                    self.status = Status::Underflow;
                    return Some(None);
                }
                self.status = Status::Active;
            }
            _ => unreachable!("a Status the model does not know"),
        }
        if self.status == Status::Start {
            if self.index < min {
                return Some(None);
            }
            let c = self.walk(m);
            if c.is_some() {
                self.zero = matches!(c, Some(Content::Zero));
                return Some(as_got(c));
            }
            if self.status == Status::None {
                // The kernel's `ma_root` with the range [0, 0].
                (self.index, self.last, self.root) = (0, 0, true);
                return Some(None);
            }
        }
        (self.index < min).then_some(None)
    }

    /// Whether the find setup's walk landed, active, on a range holding the zero entry.
    fn on_zero(&mut self, _m: &Model) -> bool {
        std::mem::take(&mut self.zero) && self.status == Status::Active
    }

    fn find(&mut self, m: &Model, max: u64) -> Got {
        self.zero = false;
        if let Some(g) = self.find_setup(m, max) {
            // The crate's documented difference: a zero entry at `index` is stepped over
            // (the kernel's `mas_find` returns it to its own callers).
            if g.is_some() || !self.on_zero(m) {
                return g;
            }
        }
        let g = self.next_slot(m, max, false);
        // `mas_find` ignores overflow.
        self.status = Status::Active;
        g
    }

    fn find_range(&mut self, m: &Model, max: u64) -> Got {
        if let Some(g) = self.find_setup(m, max) {
            return g;
        }
        self.next_slot(m, max, true)
    }

    fn find_rev(&mut self, m: &Model, min: u64) -> Got {
        self.zero = false;
        if let Some(g) = self.find_rev_setup(m, min) {
            if g.is_some() || !self.on_zero(m) {
                return g;
            }
        }
        self.prev_slot(m, min, false)
    }

    fn find_range_rev(&mut self, m: &Model, min: u64) -> Got {
        if let Some(g) = self.find_rev_setup(m, min) {
            return g;
        }
        self.prev_slot(m, min, true)
    }

    fn next(&mut self, m: &Model, max: u64) -> Got {
        if let Some(g) = self.next_setup(m, max) {
            return g;
        }
        self.next_slot(m, max, false)
    }

    fn next_range(&mut self, m: &Model, max: u64) -> Got {
        if let Some(g) = self.next_setup(m, max) {
            return g;
        }
        self.next_slot(m, max, true)
    }

    fn prev(&mut self, m: &Model, min: u64) -> Got {
        if let Some(g) = self.prev_setup(m, min) {
            return g;
        }
        self.prev_slot(m, min, false)
    }

    fn prev_range(&mut self, m: &Model, min: u64) -> Got {
        if let Some(g) = self.prev_setup(m, min) {
            return g;
        }
        self.prev_slot(m, min, true)
    }

    /// Applies a read move to the model; `None` for ops that are not reads.
    fn apply(&mut self, m: &Model, op: CurOp, ix: impl Fn(Ix) -> u64) -> Option<Got> {
        Some(match op {
            CurOp::Walk => as_got(self.walk(m)),
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
                <$t>::set_range(self, a..=b)
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
                root: false,
                zero: false,
            };
        }
        CurOp::Reset => {
            c.reset();
            mc.status = Status::Start;
            mc.walked = false;
            mc.root = false;
        }
        CurOp::Pause => {
            c.pause();
            mc.status = Status::Pause;
            mc.walked = false;
            mc.root = false;
        }
        CurOp::Store(_) | CurOp::StoreNull | CurOp::Erase | CurOp::Prealloc(_) => return false,
        _ => {
            let before = *mc;
            let got = c.read(op, ix);
            {
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
                                c.store_prealloc(e)
                            } else {
                                p
                            }
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
                            root: false,
                            zero: false,
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
                            root: false,
                            zero: false,
                        };
                    }
                    CurOp::Erase => {
                        let r = c.erase();
                        let (lo, hi, content) = model.slot(a);
                        if model.is_empty() {
                            // The walk finds an empty tree.
                            expect_eq(step, &ctx, r, false);
                            mc = MCursor {
                                index: 0,
                                last: u64::MAX,
                                status: Status::None,
                                walked: false,
                                root: false,
                                zero: false,
                            };
                            expect_eq(
                                step,
                                &format!("{ctx}: range and status after the erase"),
                                (c.index(), c.last(), c.status()),
                                (mc.index, mc.last, mc.status),
                            );
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
                                root: false,
                                zero: false,
                            };
                        } else {
                            mc = MCursor {
                                index: lo,
                                last: hi,
                                status: Status::Active,
                                walked: true,
                                root: false,
                                zero: false,
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
