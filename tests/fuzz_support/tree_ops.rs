//! Target `tree_ops`: stores, inserts, erases (single, ranges, runs), loads, `find`/`find_after`
//! loops, `next`/`prev`, and iteration forwards, backwards and double-ended over sub-ranges, on
//! both tree kinds, in all three writer modes, over a small and the full index space.

use arbitrary::Arbitrary;

use super::harness::{decode, expect_eq, seen, Ix, World, WriteOp};
use super::model::Seen;

/// A read checked against the model.
#[derive(Arbitrary, Clone, Debug)]
pub enum ReadOp {
    /// `load`, `load_range`, `get`, `contains`.
    Load { a: Ix },
    /// `find(&mut a, max)`.
    Find { a: Ix, max: Ix },
    /// `find_after(&mut a, max)`.
    FindAfter { a: Ix, max: Ix },
    /// `mt_for_each`: `find` then `find_after` until `None` (at most `limit + 1` entries).
    ForEach { a: Ix, max: Ix, limit: u8 },
    /// `next(a, max)`.
    Next { a: Ix, max: Ix },
    /// `prev(a, min)`.
    Prev { a: Ix, min: Ix },
    /// `range(a..=b)` consumed from both ends; bit `k` of `dirs` picks the end of step `k`.
    Range { a: Ix, b: Ix, dirs: u64 },
    /// `iter()` forwards or backwards, whole.
    IterAll { rev: bool },
    /// Reads through a write guard (`lock()` or `exclusive()`): `load` and `iter`.
    GuardRead { a: Ix, exclusive: bool },
}

/// One step.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// A write.
    W(WriteOp),
    /// A read.
    R(ReadOp),
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
            Op::R(rop) => read(&mut w, rop),
        }
        w.check_all();
    }
    w.finish();
}

fn read(w: &mut World, op: &ReadOp) {
    let step = w.step;
    match *op {
        ReadOp::Load { a } => {
            let a = w.ix(a);
            let t = &w.trees[0];
            let g = t.tree.pin();
            let want = t.model.load(a);
            expect_eq(
                step,
                "load",
                t.tree.load(a, &g).map(seen),
                want.map(|e| (e.2, e.3)),
            );
            expect_eq(
                step,
                "load_range",
                t.tree
                    .load_range(a, &g)
                    .map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial)),
                want,
            );
            // `get` clones (a new serial), so compare values only.
            expect_eq(step, "get", t.tree.get(a).map(|e| e.val), want.map(|e| e.2));
            expect_eq(step, "contains", t.tree.contains(a), want.is_some());
        }
        ReadOp::Find { a, max } => {
            let (a, max) = (w.ix(a), w.ix(max));
            find(w, a, max, false);
        }
        ReadOp::FindAfter { a, max } => {
            let (a, max) = (w.ix(a), w.ix(max));
            find(w, a, max, true);
        }
        ReadOp::ForEach { a, max, limit } => {
            let (mut i, max) = (w.ix(a), w.ix(max));
            let mut after = false;
            for _ in 0..=limit {
                let (found, ni) = find(w, i, max, after);
                if !found {
                    break;
                }
                i = ni;
                after = true;
            }
        }
        ReadOp::Next { a, max } => {
            let (a, max) = (w.ix(a), w.ix(max));
            let t = &w.trees[0];
            let g = t.tree.pin();
            let got = t
                .tree
                .next(a, max, &g)
                .map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial));
            expect_eq(
                step,
                &format!("next({a}, {max})"),
                got,
                t.model.next(a, max),
            );
        }
        ReadOp::Prev { a, min } => {
            let (a, min) = (w.ix(a), w.ix(min));
            let t = &w.trees[0];
            let g = t.tree.pin();
            let got = t
                .tree
                .prev(a, min, &g)
                .map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial));
            expect_eq(
                step,
                &format!("prev({a}, {min})"),
                got,
                t.model.prev(a, min),
            );
        }
        ReadOp::Range { a, b, dirs } => {
            let (a, b) = (w.ix(a), w.ix(b));
            let t = &w.trees[0];
            let g = t.tree.pin();
            let want = t.model.entries_in(a, b);
            let mut it = t.tree.range(a..=b, &g);
            let (mut lo, mut hi) = (0usize, want.len());
            let mut k = 0u32;
            loop {
                let back = k < 64 && dirs >> k & 1 == 1;
                k += 1;
                let got = if back { it.next_back() } else { it.next() };
                let got: Option<Seen> = got.map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial));
                let exp = if lo == hi {
                    None
                } else if back {
                    hi -= 1;
                    Some(want[hi])
                } else {
                    lo += 1;
                    Some(want[lo - 1])
                };
                expect_eq(
                    step,
                    &format!("range({a}, {b}) step {k} back={back}"),
                    got,
                    exp,
                );
                if exp.is_none() {
                    // Fused: both ends stay exhausted.
                    expect_eq(step, "range exhausted (front)", it.next().is_none(), true);
                    expect_eq(
                        step,
                        "range exhausted (back)",
                        it.next_back().is_none(),
                        true,
                    );
                    break;
                }
            }
        }
        ReadOp::IterAll { rev } => {
            let t = &w.trees[0];
            let g = t.tree.pin();
            let mut want = t.model.entries();
            let got: Vec<Seen> = if rev {
                want.reverse();
                t.tree
                    .iter(&g)
                    .rev()
                    .map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial))
                    .collect()
            } else {
                t.tree
                    .iter(&g)
                    .map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial))
                    .collect()
            };
            assert!(
                got == want,
                "step {step}: iter (rev={rev}) differs from the model"
            );
            expect_eq(step, "count", t.tree.count(), want.len());
        }
        ReadOp::GuardRead { a, exclusive } => {
            let a = w.ix(a);
            let t = &mut w.trees[0];
            let want = t.model.load(a).map(|e| (e.2, e.3));
            let all = t.model.entries();
            let check = |g: &maple_tree::WriteGuard<'_, super::entry::E>| {
                expect_eq(step, "guard load", g.load(a).map(seen), want);
                let got: Vec<Seen> = g
                    .iter()
                    .map(|(r, v)| (*r.start(), *r.end(), v.val, v.serial))
                    .collect();
                assert!(got == all, "step {step}: guard iter differs from the model");
            };
            if exclusive {
                check(&t.tree.exclusive());
            } else {
                check(&t.tree.lock());
            }
        }
    }
}

/// `find` (or `find_after`) from `a`; returns whether it found something and the new index.
fn find(w: &World, a: u64, max: u64, after: bool) -> (bool, u64) {
    let t = &w.trees[0];
    let g = t.tree.pin();
    let mut i = a;
    let got = if after {
        t.tree.find_after(&mut i, max, &g)
    } else {
        t.tree.find(&mut i, max, &g)
    };
    let want = if after && a == 0 {
        None
    } else {
        t.model.find(a, max)
    };
    let what = if after { "find_after" } else { "find" };
    expect_eq(
        w.step,
        &format!("{what}({a}, {max})"),
        got.map(seen),
        want.map(|e| (e.2, e.3)),
    );
    let want_i = want.map_or(a, |e| e.1.wrapping_add(1));
    expect_eq(w.step, &format!("{what}({a}, {max}) index"), i, want_i);
    (want.is_some(), i)
}
