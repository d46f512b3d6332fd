//! Unit tests of the tree: a differential model, kernel-derived cases, per-path counters.

use crate::{MapleTree, Value};

/// A test size: `n` normally, `miri` under Miri (whose interpreter is some 10^4 times slower).
pub(crate) const fn sz(n: u64, miri: u64) -> u64 {
    if cfg!(miri) {
        miri
    } else {
        n
    }
}

/// The reference range map, shared with every other test of the tree.
#[path = "../../tests/kit/ranges.rs"]
mod kit;
pub(crate) type Model = kit::Ranges;

pub(crate) fn tree_ranges(t: &MapleTree<Value>) -> Vec<(u64, u64, u64)> {
    let g = t.pin();
    t.iter(&g)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect()
}

fn check(t: &MapleTree<Value>, m: &Model) {
    if let Err(e) = t.validate() {
        panic!("{e}\n{}", t.dump());
    }
    assert_eq!(tree_ranges(t), m.list(), "\n{}", t.dump());
}

#[test]
fn smoke_store_load() {
    let t = MapleTree::<Value>::new();
    let mut m = Model::default();
    assert_eq!(t.get(0), None);
    let n = sz(300, 40);
    for i in 0..n {
        t.store_range(i * 10..=i * 10 + 5, Value::new(i)).unwrap();
        m.store(i * 10, i * 10 + 5, Some(i));
        check(&t, &m);
    }
    for i in 0..n * 10 {
        assert_eq!(t.get(i).map(|v| v.get()), m.load(i), "index {i}");
    }
    assert!(t.height() >= 2);
}

#[test]
fn smoke_reverse_and_spanning() {
    for alloc in [false, true] {
        let t = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::new()
        };
        let mut m = Model::default();
        for i in (0..sz(400, 24)).rev() {
            t.store_range(i * 10..=i * 10 + 5, Value::new(i)).unwrap();
            m.store(i * 10, i * 10 + 5, Some(i));
            check(&t, &m);
        }
        t.store_range(25..=3333, Value::new(7)).unwrap();
        m.store(25, 3333, Some(7));
        check(&t, &m);
        t.erase_range(100..=2000).unwrap();
        m.store(100, 2000, None);
        check(&t, &m);
        for i in 0..sz(500, 24) {
            let a = (i * 7919) % 4000;
            let b = a + (i * 31) % 50;
            if i % 3 == 0 {
                t.erase_range(a..=b).unwrap();
                m.store(a, b, None);
            } else {
                t.store_range(a..=b, Value::new(i)).unwrap();
                m.store(a, b, Some(i));
            }
            check(&t, &m);
        }
        t.erase_range(0..=u64::MAX).unwrap();
        m.store(0, u64::MAX, None);
        check(&t, &m);
        assert!(t.is_empty());
    }
}

mod prop {
    use super::*;
    use crate::tree::Options;
    use crate::tree::Status;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    pub(super) fn run_pub(ops: Vec<Op>, alloc: bool) {
        run(ops, alloc)
    }

    #[derive(Clone, Debug)]
    pub(super) enum Op {
        Store(u64, u64, u64),
        Insert(u64, u64, u64),
        Erase(u64),
        EraseRange(u64, u64),
        Load(u64),
        Walk(u64),
        Find(u64, u64),
        Next(u64, u64),
        Prev(u64, u64),
        Gap(u64, u64, u64, bool),
        Alloc(u64, u64, u64, bool),
        AppendRun(u64, u64, u64),
        Dup,
        Exclusive(bool),
        /// Through a write cursor from `a` up to `b`: a new entry over every found range, and
        /// with the flag over every empty range met by `next_range` too (dup_mmap's loop).
        CursorRewrite(u64, u64, u64, bool),
    }

    fn op(space: u64) -> impl Strategy<Value = Op> {
        let idx = move || {
            if space == u64::MAX {
                prop_oneof![
                    0..64u64,
                    (u64::MAX - 64)..=u64::MAX,
                    any::<u64>(),
                    (0..1000u64).prop_map(|x| x << 40)
                ]
                .boxed()
            } else {
                (0..space).boxed()
            }
        };
        let len = || prop_oneof![0..4u64, 0..40u64, 0..400u64];
        prop_oneof![
            6 => (idx(), len(), any::<u16>()).prop_map(|(a, l, v)| Op::Store(a, a.saturating_add(l), v as u64)),
            2 => (idx(), len(), any::<u16>()).prop_map(|(a, l, v)| Op::Insert(a, a.saturating_add(l), v as u64)),
            2 => idx().prop_map(Op::Erase),
            3 => (idx(), len()).prop_map(|(a, l)| Op::EraseRange(a, a.saturating_add(l))),
            2 => idx().prop_map(Op::Load),
            1 => idx().prop_map(Op::Walk),
            1 => (idx(), idx()).prop_map(|(a, b)| Op::Find(a, b)),
            1 => (idx(), idx()).prop_map(|(a, b)| Op::Next(a, b)),
            1 => (idx(), idx()).prop_map(|(a, b)| Op::Prev(a, b)),
            2 => (idx(), idx(), 1..50u64, any::<bool>()).prop_map(|(a, b, s, r)| Op::Gap(a, b, s, r)),
            1 => (idx(), idx(), 1..20u64, any::<bool>()).prop_map(|(a, b, s, r)| Op::Alloc(a, b, s, r)),
            1 => (idx(), 1..sz(300, 40), 0..6u64).prop_map(|(a, n, g)| Op::AppendRun(a, n, g)),
            1 => Just(Op::Dup),
            1 => any::<bool>().prop_map(Op::Exclusive),
            1 => (idx(), idx(), any::<u16>(), any::<bool>()).prop_map(|(a, b, v, f)| Op::CursorRewrite(a, b, v as u64, f)),
        ]
    }

    /// Entry with a drop counter: every entry created must be dropped exactly once.
    #[derive(Debug)]
    struct Counted {
        v: u64,
        drops: Arc<AtomicUsize>,
    }
    impl Clone for Counted {
        fn clone(&self) -> Self {
            self.drops.fetch_sub(1, Ordering::Relaxed); // a clone is one more to drop
            Counted {
                v: self.v,
                drops: self.drops.clone(),
            }
        }
    }
    impl Drop for Counted {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn model_gap(m: &Model, min: u64, max: u64, size: u64, rev: bool) -> Result<u64, crate::Error> {
        if min > max || size == 0 || max - min < size - 1 {
            return Err(crate::Error::InvalidWindow);
        }
        // Walk the empty ranges in the window.
        let mut gaps = vec![];
        let mut cur = min;
        loop {
            let (lo, hi, v) = m.slot(cur);
            if v.is_none() {
                let a = lo.max(min);
                let b = hi.min(max);
                if b - a >= size - 1 {
                    gaps.push((a, b));
                }
            }
            if hi >= max {
                break;
            }
            cur = hi + 1;
        }
        if rev {
            gaps.last()
                .map(|&(_, b)| b - (size - 1))
                .ok_or(crate::Error::NoRoom)
        } else {
            gaps.first().map(|&(a, _)| a).ok_or(crate::Error::NoRoom)
        }
    }

    fn run(ops: Vec<Op>, alloc: bool) {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut created = 0usize;
        let mk = |v: u64, created: &mut usize| {
            *created += 1;
            Box::new(Counted {
                v,
                drops: drops.clone(),
            })
        };
        let collector = crossbeam_epoch::Collector::new();
        let mut t = MapleTree::<Box<Counted>>::with_options(
            Options::new().alloc(alloc).collector(collector),
        );
        let mut m = Model::default();
        let mut extra_trees = vec![];
        let mut exclusive = false;
        for op in ops {
            let desc = format!("{op:?}");
            match op {
                Op::Store(a, b, v) => {
                    let e = mk(v, &mut created);
                    if exclusive {
                        t.exclusive().store_range(a..=b, e).unwrap()
                    } else {
                        t.store_range(a..=b, e).unwrap()
                    }
                    m.store(a, b, Some(v));
                }
                Op::Insert(a, b, v) => {
                    let e = mk(v, &mut created);
                    let r = t.insert_range(a..=b, e);
                    if m.occupied(a, b) {
                        assert_eq!(r, Err(crate::Error::Occupied));
                    } else {
                        r.unwrap();
                        m.store(a, b, Some(v));
                    }
                }
                Op::Erase(i) => {
                    let r = if exclusive {
                        t.exclusive().erase(i)
                    } else {
                        t.erase(i)
                    };
                    let (lo, hi, v) = m.slot(i);
                    let got = r.map(|e| {
                        // The entry comes back unless other ranges still hold it.
                        if let Some(c) = e.entry() {
                            assert_eq!(Some(c.v), v);
                        }
                        (*e.range().start(), *e.range().end())
                    });
                    assert_eq!(got, v.map(|_| (lo, hi)));
                    if v.is_some() {
                        m.store(lo, hi, None);
                    }
                }
                Op::EraseRange(a, b) => {
                    t.erase_range(a..=b).unwrap();
                    m.store(a, b, None);
                }
                Op::Load(i) => {
                    let g = t.pin();
                    assert_eq!(t.load(i, &g).map(|c| c.v), m.load(i));
                }
                Op::Walk(i) => {
                    let g = t.pin();
                    let mut c = t.cursor(i, &g);
                    let got = c.walk().map(|c| c.v);
                    let (lo, hi, v) = m.slot(i);
                    if t.is_empty() {
                        assert_eq!((c.index(), c.last(), got), (0, u64::MAX, None));
                    } else {
                        assert_eq!((c.index(), c.last(), got), (lo, hi, v));
                    }
                }
                Op::Find(a, b) => {
                    let g = t.pin();
                    let mut idx = a;
                    let got = t.find(&mut idx, b, &g).map(|c| c.v);
                    let want = if a > b {
                        None
                    } else {
                        m.0.range(..=b)
                            .find(|(_, &(l, _))| l >= a)
                            .map(|(_, &(l, v))| (l, v))
                    };
                    assert_eq!(got, want.map(|w| w.1));
                    if let Some((l, _)) = want {
                        assert_eq!(idx, l.wrapping_add(1));
                    } else {
                        assert_eq!(idx, a);
                    }
                }
                Op::Next(a, b) => {
                    let g = t.pin();
                    let got = t.next(a, b, &g).map(|(r, c)| (*r.start(), *r.end(), c.v));
                    let (_, hi, _) = m.slot(a);
                    let want = if hi == u64::MAX {
                        None
                    } else {
                        m.0.range(hi + 1..)
                            .next()
                            .filter(|(&f, _)| f <= b)
                            .map(|(&f, &(l, v))| (f, l, v))
                    };
                    assert_eq!(got, want);
                }
                Op::Prev(a, b) => {
                    let g = t.pin();
                    let got = t.prev(a, b, &g).map(|(r, c)| (*r.start(), *r.end(), c.v));
                    let (lo, _, _) = m.slot(a);
                    let want = if lo == 0 {
                        None
                    } else {
                        m.0.range(..lo)
                            .next_back()
                            .filter(|(_, &(l, _))| l >= b)
                            .map(|(&f, &(l, v))| (f, l, v))
                    };
                    assert_eq!(got, want);
                }
                Op::Gap(a, b, s, rev) => {
                    let got = if rev {
                        t.empty_area_rev(a..=b, s)
                    } else {
                        t.empty_area(a..=b, s)
                    };
                    assert_eq!(got, model_gap(&m, a, b, s, rev), "gap({a},{b},{s},{rev})");
                }
                Op::Alloc(a, b, s, rev) => {
                    let e = mk(7, &mut created);
                    let got = if rev {
                        t.alloc_rrange(a..=b, s, e).map(|r| *r.start())
                    } else {
                        t.alloc_range(a..=b, s, e).map(|r| *r.start())
                    };
                    if !alloc {
                        assert_eq!(got, Err(crate::Error::NotAllocTree));
                    } else {
                        let want = model_gap(&m, a, b, s, rev);
                        assert_eq!(got, want);
                        if let Ok(st) = want {
                            m.store(st, st + (s - 1), Some(7));
                        }
                    }
                }
                Op::AppendRun(a, n, gap) => {
                    let mut w = t.lock();
                    let mut x = a;
                    for i in 0..n {
                        let Some(end) = x.checked_add(gap) else { break };
                        w.store_range(x..=end, mk(i, &mut created)).unwrap();
                        m.store(x, end, Some(i));
                        let Some(nx) = end.checked_add(2) else { break };
                        x = nx;
                    }
                }
                Op::Dup => {
                    let d = t.dup();
                    d.validate().unwrap();
                    let got: Vec<_> = {
                        let g = d.pin();
                        d.iter(&g)
                            .map(|(r, c)| (*r.start(), *r.end(), c.v))
                            .collect()
                    };
                    assert_eq!(got, m.list());
                    // Diverge the copy, the original must not change.
                    d.erase_range(0..=u64::MAX / 2).unwrap();
                    extra_trees.push(d);
                }
                Op::Exclusive(on) => exclusive = on,
                Op::CursorRewrite(a, b, v, fill) => {
                    let mut w = if exclusive { t.exclusive() } else { t.lock() };
                    let mut c = w.cursor(a);
                    let mut from = a;
                    for step in 0..400 {
                        let got = if !fill {
                            c.find(b)
                        } else if step == 0 {
                            c.find_range(b)
                        } else {
                            c.next_range(b)
                        }
                        .map(|x| x.v);
                        let (lo, hi) = (c.index(), c.last());
                        if step == 0 || !fill {
                            // `find`, and `find_range` first: the next entry from `from`.
                            let want =
                                m.0.range(..=b)
                                    .find(|(_, &(l, _))| l >= from)
                                    .map(|(&f, &(l, v))| (f, l, v))
                                    .filter(|_| from <= b);
                            let Some(want) = want else {
                                assert_eq!(got, None, "cursor find from {from}");
                                break;
                            };
                            assert_eq!((lo, hi, got), (want.0, want.1, Some(want.2)));
                        } else {
                            // `next_range`: the very next range, empty or not.
                            if c.status() != Status::Active {
                                assert!(from > b, "next_range stopped early at {from}");
                                break;
                            }
                            assert_eq!((lo, hi, got), m.slot(from), "next_range from {from}");
                        }
                        c.store(mk(v, &mut created)).unwrap();
                        m.store(lo, hi, Some(v));
                        assert_eq!((c.index(), c.last()), (lo, hi));
                        if hi == u64::MAX || hi >= b {
                            break;
                        }
                        from = hi + 1;
                    }
                }
            }
            if let Err(e) = t.validate() {
                panic!("after {desc}: {e}\n{}", t.dump());
            }
            let got: Vec<_> = {
                let g = t.pin();
                t.iter(&g)
                    .map(|(r, c)| (*r.start(), *r.end(), c.v))
                    .collect()
            };
            assert_eq!(got, m.list());
            let back: Vec<_> = {
                let g = t.pin();
                t.iter(&g)
                    .rev()
                    .map(|(r, c)| (*r.start(), *r.end(), c.v))
                    .collect()
            };
            assert_eq!(back.into_iter().rev().collect::<Vec<_>>(), m.list());
        }
        drop(extra_trees);
        drop(t);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            created,
            "every entry dropped exactly once"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: sz(96, 4) as u32,
            // Miri's isolation forbids reading the regression files.
            failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
            ..ProptestConfig::default()
        })]
        #[test]
        fn small_space(ops in proptest::collection::vec(op(300), 1..sz(120, 40) as usize), alloc in any::<bool>()) {
            run(ops, alloc);
        }
        #[test]
        fn full_space(ops in proptest::collection::vec(op(u64::MAX), 1..sz(120, 40) as usize), alloc in any::<bool>()) {
            run(ops, alloc);
        }
    }
}

#[test]
fn alloc_rrange_at_the_very_top() {
    prop::run_pub(vec![prop::Op::Alloc(0, u64::MAX, 1, true)], true);
}

/// Single-index inserts and erases over a dense space (a descriptor table's pattern): full leaves
/// whose last entry is erased pull in full neighbours (the case that once overfilled a part).
#[test]
fn dense_single_index_churn() {
    let mut seed = 42u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for alloc in [false, true] {
        let t = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::new()
        };
        let mut m = Model::default();
        for i in 0..sz(30_000, 400) {
            let idx = rnd() % sz(700, 60);
            if rnd() % 3 == 0 {
                let r = t.erase(idx);
                assert_eq!(r.is_some(), m.load(idx).is_some());
                m.store(idx, idx, None);
            } else if t.insert(idx, Value::new(i)).is_ok() {
                m.store(idx, idx, Some(i));
            }
            if i % 16 == 0 {
                check(&t, &m);
            }
        }
        check(&t, &m);
    }
}

/// Thousands of random writes over a space small enough to collide constantly, in both modes and
/// both tree kinds: validated every 64 operations and compared in full with the model.
#[test]
fn random_heavy() {
    let mut seed = 0x9e3779b97f4a7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (alloc, exclusive) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut t = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::new()
        };
        let mut m = Model::default();
        for i in 0..sz(20_000, 200) {
            let a = rnd() % sz(50_000, 1_000);
            let len = match rnd() % 10 {
                0 => rnd() % sz(5_000, 100),
                1..=3 => rnd() % 100,
                _ => rnd() % 8,
            };
            let b = a + len;
            let null = rnd() % 4 == 0;
            if exclusive {
                let mut w = t.exclusive();
                if null {
                    w.erase_range(a..=b).unwrap()
                } else {
                    w.store_range(a..=b, Value::new(i)).unwrap()
                }
            } else if null {
                t.erase_range(a..=b).unwrap();
            } else {
                t.store_range(a..=b, Value::new(i)).unwrap();
            }
            m.store(a, b, if null { None } else { Some(i) });
            if i % sz(64, 16) == 0 {
                check(&t, &m);
            }
        }
        check(&t, &m);
        let st = t.stats();
        // Miri's few hundred writes do not reliably reach every path.
        assert!(
            cfg!(miri) || st.split > 0 && st.spanning_store > 0 && st.rebalance > 0,
            "{st:?}"
        );
    }
}

/// The node layer's unlinked check (`WriterRoot::unlinked`): linked nodes are refused (so they
/// cannot be retired), nodes a store replaced are accepted.
#[test]
fn unlinked_check_tells_linked_from_replaced() {
    let mut t = MapleTree::<Value>::new();
    for i in 0..sz(200, 40) {
        t.store_range(i * 10..=i * 10 + 5, Value::new(i)).unwrap();
    }
    let mut g = t.exclusive();
    let crate::tree::write::AnyWriter::Exclusive(mut w) = g.any_writer() else {
        unreachable!("an exclusive guard")
    };
    let root = w.root.node().expect("a tree of two levels at least");
    assert!(!root.is_leaf());
    let child = root.child(0, w.internal);
    assert!(w.root.unlinked(root).is_none(), "the root is linked");
    assert!(
        w.root.unlinked(child).is_none(),
        "a child of the root is linked"
    );
    // Replacing the child unlinks it; the replacement is linked.
    let fresh = w.alloc_node(child.kind());
    let items: Vec<_> = child
        .slots(0, root.slot_max(0, u64::MAX), w.internal)
        .map(|(_, hi, s)| super::write::big_node::Item {
            hi,
            slot: s,
            gap: 0,
        })
        .collect();
    w.write_items(&fresh, &items, root.slot_max(0, u64::MAX));
    let new = fresh.node();
    let old = root
        .publish_child(0, fresh)
        .expect("the replaced child is unlinked");
    assert!(
        w.root.unlinked(child).is_some(),
        "the replaced child is unlinked"
    );
    assert!(w.root.unlinked(new).is_none(), "the new child is linked");
    w.retire(old);
    // Emptying the tree unlinks the root and, through it, every node below; publishing the
    // old root again links them all again.
    let old_root = w.root.publish_empty().expect("the old root");
    assert!(
        w.root.unlinked(new).is_some(),
        "a child of an unlinked root is unlinked"
    );
    let _relinked_below = old_root; // not retired: it is published again
    assert!(w.root.promote(root).is_none(), "the tree was empty");
    assert!(w.root.unlinked(new).is_none(), "linked again");
    drop(g);
    check_all(&t);
}

fn check_all(t: &MapleTree<Value>) {
    if let Err(e) = t.validate() {
        panic!("{e}\n{}", t.dump());
    }
}

/// The dropped-entry race: a lowered pivot stays sealed for a whole grace period after the store that
/// lowered it, even when a lift was already pending when the store was made.
///
/// A reader stands in a leaf's last slot, `[30, MAX]`, with its bound loaded (a reader is
/// preempted between the pivot and the slot at any time; `Walker::walk` then re-loading the
/// slot word models that). A `+1` append (`mas_wr_append`) lowers that pivot to 39 and seals
/// the slot; the epoch advances until every lift deferred before the reader pinned has run;
/// then an exact fit (`mas_wr_exact_fit`) of `[30, 39]` must be done by copy-on-write
/// (`sealed_repoint`): re-pointing the slot in place would let the reader pair its bound
/// `MAX` with the new entry, a range `[30, MAX]` that never held it. The lift that ran was
/// scheduled (`Seals::schedule`) by an earlier write, before the append: it covers the seals
/// made before it was scheduled, not the append's.
#[test]
fn a_lift_scheduled_before_a_seal_does_not_lift_it() {
    let c = crossbeam_epoch::Collector::new();
    let mut t = MapleTree::<Value>::with_options(crate::Options::new().collector(c.clone()));
    {
        // Exclusive mode: no seal yet.
        let mut g = t.exclusive();
        g.store_range(0..=9, Value::new(1)).unwrap();
        g.store_range(10..=19, Value::new(2)).unwrap();
        g.store_range(20..=u64::MAX, Value::new(3)).unwrap();
    }
    // Each handle's first pin collects (a fresh participant); use those up now, so that the
    // epoch advances below only where the test says so.
    let reader = c.register();
    let helper = c.register();
    drop(reader.pin());
    drop(helper.pin());
    let advance = || helper.pin().flush();
    let mut states = vec![tree_ranges(&t)];

    // A +1 append: pivot 2 lowered to 29, seal of generation 1.
    let s0 = t.stats();
    t.store_range(30..=u64::MAX, Value::new(4)).unwrap();
    assert_eq!(t.stats().append_end, s0.append_end + 1, "{:?}", t.stats());
    states.push(tree_ranges(&t));
    // Any write: schedules the lift of generation 1 (deferred on the writer's guard).
    t.store_range(0..=9, Value::new(11)).unwrap();
    states.push(tree_ranges(&t));
    // One advance: the reader pins in a later epoch than the lift's, so it does not hold the
    // lift back.
    advance();
    let guard = reader.pin();
    let mut w = super::walk::Walker::new(t.reader(&guard));
    w.walk(35).unwrap();
    let (lo, hi, leaf) = (w.lo, w.hi, *w.leaf());
    assert_eq!((lo, hi), (30, u64::MAX));

    // The append into the reader's slot: pivot 3 lowered to 39, sealed.
    let s1 = t.stats();
    t.store_range(40..=u64::MAX, Value::new(5)).unwrap();
    assert_eq!(t.stats().append_end, s1.append_end + 1, "{:?}", t.stats());
    states.push(tree_ranges(&t));
    // Two advances and more (the reader holds the epoch back from here on): the lift of
    // generation 1 runs.
    for _ in 0..4 {
        advance();
    }
    // The exact fit of the slot the append sealed, while the reader is pinned.
    let s2 = t.stats();
    t.store_range(30..=39, Value::new(6)).unwrap();
    let s3 = t.stats();
    states.push(tree_ranges(&t));

    // What the reader reads now: the slot word under the bound it loaded before the append.
    let v = leaf.node.leaf_word(leaf.offset).entry().map(|v| v.get());
    let seen = (lo, hi, v.unwrap_or(0));
    assert!(
        states.iter().any(|s| s.contains(&seen)),
        "the reader read {seen:?}, a range that never held that entry (states: {states:?}; \
         stats before the exact fit {s2:?}, after {s3:?})"
    );
    assert_eq!(seen, (30, u64::MAX, 4));
    assert_eq!(
        (s3.sealed_repoint, s3.exact_fit),
        (s2.sealed_repoint + 1, s2.exact_fit),
        "the exact fit must copy the sealed leaf: {s3:?}"
    );
    drop(guard);
    check_all(&t);
    assert_eq!(
        &tree_ranges(&t)[2..],
        [(20, 29, 3), (30, 39, 6), (40, u64::MAX, 5)]
    );
}
