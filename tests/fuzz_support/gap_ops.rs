//! Target `gap_ops`: `empty_area`/`empty_area_rev` with the kernel's window rules, and
//! `alloc_range`/`alloc_rrange`/`alloc_cyclic` on both tree kinds (a range tree must refuse
//! allocation with `NotAllocTree`), mixed with the shared writes.

use arbitrary::Arbitrary;
use maple_tree::Error;

use super::harness::{decode, expect_eq, with_writer, Ix, Sz, World, WriteOp};
use super::model::Content;

/// One step.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// A write.
    W(WriteOp),
    /// `empty_area(_rev)(min, max, size)`.
    Empty {
        min: Ix,
        max: Ix,
        size: Sz,
        rev: bool,
    },
    /// `empty_area(_rev)` with `max = min + span`.
    EmptySpan {
        min: Ix,
        span: u16,
        size: Sz,
        rev: bool,
    },
    /// `alloc_range` / `alloc_rrange`.
    Alloc {
        min: Ix,
        max: Ix,
        size: Sz,
        rev: bool,
        val: u8,
    },
    /// `alloc_cyclic(lo, hi, &mut next)`; `set_next` replaces the caller's `next` first.
    Cyclic {
        lo: Ix,
        hi: Ix,
        set_next: Option<Ix>,
        val: u8,
    },
    /// Many `alloc_range`/`alloc_cyclic` calls in a row (fills windows, reaches wraps).
    AllocMany {
        min: Ix,
        span: u16,
        size: u8,
        count: u8,
        cyclic: bool,
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
        step(&mut w, op);
        w.check_all();
    }
    w.finish();
}

fn step(w: &mut World, op: &Op) {
    match *op {
        Op::W(ref wop) => w.write(0, wop),
        Op::Empty {
            min,
            max,
            size,
            rev,
        } => {
            let (min, max) = (w.ix(min), w.ix(max));
            empty(w, min, max, size.get(), rev);
        }
        Op::EmptySpan {
            min,
            span,
            size,
            rev,
        } => {
            let min = w.ix(min);
            empty(w, min, min.saturating_add(u64::from(span)), size.get(), rev);
        }
        Op::Alloc {
            min,
            max,
            size,
            rev,
            val,
        } => {
            let (min, max) = (w.ix(min), w.ix(max));
            alloc(w, min, max, size.get(), rev, u64::from(val));
        }
        Op::Cyclic {
            lo,
            hi,
            set_next,
            val,
        } => {
            let (lo, hi) = (w.ix(lo), w.ix(hi));
            if let Some(n) = set_next {
                w.trees[0].next = w.ix(n);
            }
            cyclic(w, lo, hi, u64::from(val));
        }
        Op::AllocMany {
            min,
            span,
            size,
            count,
            cyclic: cyc,
        } => {
            let min = w.ix(min);
            let max = min.saturating_add(u64::from(span));
            let n = w.take_budget(u64::from(count));
            for k in 0..n {
                if cyc {
                    cyclic(w, min, max, k);
                } else {
                    alloc(w, min, max, u64::from(size).max(1), k % 2 == 1, k);
                }
            }
        }
    }
}

fn empty(w: &mut World, min: u64, max: u64, size: u64, rev: bool) {
    let mode = w.mode;
    let t = &mut w.trees[0];
    let want = t.model.empty_area(min, max, size, rev);
    let got = if rev {
        t.tree.empty_area_rev(min..=max, size)
    } else {
        t.tree.empty_area(min..=max, size)
    };
    let what = if rev { "empty_area_rev" } else { "empty_area" };
    expect_eq(w.step, &format!("{what}({min}, {max}, {size})"), got, want);
    // The writer's form (façade, lock or exclusive guard) must agree.
    let got2 = with_writer(&mut t.tree, mode, |wr| wr.empty_area(min, max, size, rev));
    expect_eq(
        w.step,
        &format!("writer {what}({min}, {max}, {size})"),
        got2,
        want,
    );
}

fn alloc(w: &mut World, min: u64, max: u64, size: u64, rev: bool, val: u64) {
    let mode = w.mode;
    let e = w.entry(val);
    let s = e.serial;
    let step = w.step;
    let t = &mut w.trees[0];
    let want = if !t.tree.is_alloc() {
        Err(Error::NotAllocTree)
    } else {
        t.model.empty_area(min, max, size, rev)
    };
    let got = with_writer(&mut t.tree, mode, |wr| wr.alloc(e, size, min, max, rev));
    let what = if rev { "alloc_rrange" } else { "alloc_range" };
    expect_eq(
        step,
        &format!("{what}(size {size}, [{min}, {max}])"),
        got,
        want,
    );
    if let Ok(start) = got {
        t.model.store(
            start,
            start + (size - 1),
            Some(Content::Entry { val, serial: s }),
        );
    }
}

fn cyclic(w: &mut World, lo: u64, hi: u64, val: u64) {
    let mode = w.mode;
    let e = w.entry(val);
    let s = e.serial;
    let step = w.step;
    let t = &mut w.trees[0];
    let before = t.next;
    let plan = if t.tree.is_alloc() {
        t.cyclic.expect(&t.model, lo, hi, before)
    } else {
        Err(Error::NotAllocTree)
    };
    let want = plan.map(|(i, searched)| (i, t.cyclic.reported(searched)));
    let mut next = before;
    let got = with_writer(&mut t.tree, mode, |wr| {
        wr.alloc_cyclic(e, lo, hi, &mut next)
    });
    expect_eq(
        step,
        &format!("alloc_cyclic([{lo}, {hi}], next {before})"),
        got,
        want,
    );
    match plan {
        Ok((i, searched)) => {
            expect_eq(step, "alloc_cyclic next", next, i.wrapping_add(1));
            t.cyclic.apply(i, searched);
            t.model.store(i, i, Some(Content::Entry { val, serial: s }));
        }
        Err(_) => expect_eq(step, "alloc_cyclic next unchanged on error", next, before),
    }
    t.next = next;
}
