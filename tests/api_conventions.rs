//! The std-convention API and aligned allocation: `len` against a `BTreeMap`
//! model after every operation (with `validate`), owned removal, gaps, Debug/FromIterator/Extend,
//! pending frees, and aligned gap search against a brute-force model.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use maple_tree::tree::{inclusive, Allocator, Placement};
use maple_tree::{Collector, Error, MapleTree, Options, TreeGuard, Value};
use proptest::prelude::*;

#[path = "kit/ranges.rs"]
mod ranges;
use ranges::Ranges;

/// A range map model: the test kit's range map of `(value, id)`; `None` value = the zero
/// entry. The id names the entry behind each range: a store strictly inside a range splits it
/// into two ranges holding the same entry (same id), which `remove` takes out together.
#[derive(Default, Clone, Debug)]
struct Model {
    map: Ranges<(Option<u64>, u64)>,
    next_id: u64,
}

impl Model {
    fn store(&mut self, a: u64, b: u64, v: Option<Option<u64>>) {
        let id = self.next_id;
        self.next_id += 1;
        self.map.store(a, b, v.map(|x| (x, id)));
    }
    /// Every range's entry becomes its own (what `dup`'s per-slot clones do).
    fn fresh_ids(&mut self) {
        for (_, (_, id)) in self.map.0.values_mut() {
            *id = self.next_id;
            self.next_id += 1;
        }
    }
    /// Removes every range holding the entry of the range containing `i`.
    fn remove_entry(&mut self, i: u64) {
        let (&a, &(_, (x, id))) = self.map.0.range(..=i).next_back().unwrap();
        assert!(x.is_some(), "removing the zero entry at {a}");
        let all: Vec<(u64, u64)> = self
            .map
            .0
            .iter()
            .filter(|(_, &(_, (x, j)))| j == id && x.is_some())
            .map(|(&k, &(l, _))| (k, l))
            .collect();
        for (a, b) in all {
            self.store(a, b, None);
        }
    }
    fn at(&self, i: u64) -> Option<(u64, u64, Option<u64>)> {
        let (&a, &(b, (x, _))) = self.map.0.range(..=i).next_back()?;
        (b >= i).then_some((a, b, x))
    }
    fn gaps(&self, lo: u64, hi: u64) -> Vec<(u64, u64)> {
        let mut out = vec![];
        let mut pos = lo;
        for (&a, &(b, _)) in &self.map.0 {
            if b < pos {
                continue;
            }
            if a > hi {
                break;
            }
            if a > pos {
                out.push((pos, a - 1));
            }
            if b >= hi {
                return out;
            }
            pos = b + 1;
        }
        out.push((pos, hi));
        out
    }
}

#[derive(Clone, Debug)]
enum Op {
    Store(u64, u64, u64),
    Zero(u64, u64),
    Erase(u64),
    EraseRange(u64, u64),
    Insert(u64, u64, u64),
    Remove(u64),
    PopFirst,
    PopLast,
    Alloc(u64, u64, bool),
    CursorStore(u64, u64),
    Clear,
    Dup,
}

fn op() -> impl Strategy<Value = Op> {
    let idx = 0..600u64;
    let len = prop_oneof![0..3u64, 0..30u64];
    prop_oneof![
        8 => (idx.clone(), len.clone(), 0..50u64).prop_map(|(a, l, v)| Op::Store(a, a + l, v)),
        1 => (idx.clone(), len.clone()).prop_map(|(a, l)| Op::Zero(a, a + l)),
        2 => idx.clone().prop_map(Op::Erase),
        2 => (idx.clone(), len.clone()).prop_map(|(a, l)| Op::EraseRange(a, a + l)),
        2 => (idx.clone(), len.clone(), 0..50u64).prop_map(|(a, l, v)| Op::Insert(a, a + l, v)),
        3 => idx.clone().prop_map(Op::Remove),
        1 => Just(Op::PopFirst),
        1 => Just(Op::PopLast),
        2 => (1..20u64, 0..4u32, any::<bool>()).prop_map(|(s, k, r)| Op::Alloc(s, 1 << k, r)),
        2 => (idx.clone(), 0..50u64).prop_map(|(a, v)| Op::CursorStore(a, v)),
        1 => Just(Op::Clear),
        1 => Just(Op::Dup),
    ]
}

/// Boxed entries that count their drops (every entry is dropped exactly once).
#[derive(Debug)]
struct Counted(u64, Arc<AtomicUsize>);
impl Clone for Counted {
    fn clone(&self) -> Self {
        self.1.fetch_sub(1, Ordering::Relaxed); // a clone is one more to drop
        Counted(self.0, self.1.clone())
    }
}
impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

fn run(ops: &[Op], exclusive: bool) {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut created = 0usize;
    let collector = Collector::new();
    let mut t = MapleTree::<Box<Counted>>::with_options(
        Options::new().alloc(true).collector(collector.clone()),
    );
    let mut m = Model::default();
    let mut mk = |v: u64| {
        created += 1;
        Box::new(Counted(v, drops.clone()))
    };
    for (step, o) in ops.iter().enumerate() {
        match *o {
            Op::Store(a, b, v) => {
                if exclusive {
                    t.exclusive().store_range(a..=b, mk(v)).unwrap();
                } else {
                    t.store_range(a..=b, mk(v)).unwrap();
                }
                m.store(a, b, Some(Some(v)));
            }
            Op::Zero(a, b) => {
                t.lock().store_zero_range(a..=b).unwrap();
                m.store(a, b, Some(None));
            }
            Op::Erase(i) => {
                let got = t.erase(i).map(|e| {
                    let r = e.range();
                    (*r.start(), *r.end())
                });
                let want = m.at(i).map(|(a, b, _)| (a, b));
                assert_eq!(got, want);
                if let Some((a, b)) = want {
                    m.store(a, b, None);
                }
            }
            Op::EraseRange(a, b) => {
                t.erase_range(a..=b).unwrap();
                m.store(a, b, None);
            }
            Op::Insert(a, b, v) => {
                let free = m.gaps(a, b) == [(a, b)];
                let r = t.insert_range(a..=b, mk(v));
                assert_eq!(r.is_ok(), free);
                if free {
                    m.store(a, b, Some(Some(v)));
                }
            }
            Op::Remove(i) => {
                let got = t.remove(i).map(|(r, e)| (r, e.0));
                let want = m.at(i).and_then(|(a, b, x)| x.map(|x| (a..=b, x)));
                assert_eq!(got, want, "remove({i})");
                if want.is_some() {
                    m.remove_entry(i);
                }
            }
            Op::PopFirst | Op::PopLast => {
                let got = if matches!(o, Op::PopFirst) {
                    t.pop_first()
                } else {
                    t.pop_last()
                }
                .map(|(r, e)| (r, e.0));
                let mut ents = m
                    .map
                    .0
                    .iter()
                    .filter_map(|(&a, &(b, (x, _)))| x.map(|x| (a..=b, x)));
                let want = if matches!(o, Op::PopFirst) {
                    ents.next()
                } else {
                    ents.next_back()
                };
                assert_eq!(got, want);
                if let Some((r, _)) = want {
                    m.remove_entry(*r.start());
                }
            }
            Op::Alloc(size, align, rev) => {
                let want = brute_fit(&m, 0, 599, size, align, rev);
                let got = if rev {
                    t.alloc_rrange_aligned(0..=599, size, align, mk(7))
                } else {
                    t.alloc_range_aligned(0..=599, size, align, mk(7))
                };
                assert_eq!(
                    got.ok(),
                    want.map(|s| s..=s + size - 1),
                    "alloc {size} align {align} rev {rev}"
                );
                if let Some(s) = want {
                    m.store(s, s + size - 1, Some(Some(7)));
                }
            }
            Op::CursorStore(i, v) => {
                // A cursor store over the range containing `i` (exact fit when it is one).
                let mut w = t.lock();
                let mut c = w.cursor(i);
                let _ = c.walk();
                let (a, b) = (c.index(), c.last());
                if a <= b {
                    c.store(mk(v)).unwrap();
                    m.store(a, b, Some(Some(v)));
                }
            }
            Op::Clear => {
                t.clear();
                m.map.0.clear();
            }
            Op::Dup => {
                // The copy keeps the count; the original goes.
                let copy = t.dup();
                assert_eq!(copy.len(), t.len());
                copy.validate().unwrap();
                t = copy;
                m.fresh_ids();
            }
        }
        t.validate()
            .unwrap_or_else(|e| panic!("step {step} {o:?}: {e}\n{}", t.dump()));
        assert_eq!(t.len(), m.map.0.len(), "step {step} {o:?}: len");
        assert_eq!(t.is_empty(), m.map.0.is_empty());
        let guard = t.pin();
        let ents: Vec<(u64, u64, u64)> = t
            .iter(&guard)
            .map(|(r, e)| (*r.start(), *r.end(), e.0))
            .collect();
        let want: Vec<(u64, u64, u64)> = m
            .map
            .0
            .iter()
            .filter_map(|(&a, &(b, (x, _)))| x.map(|x| (a, b, x)))
            .collect();
        assert_eq!(ents, want, "step {step} {o:?}: entries");
        let gaps: Vec<(u64, u64)> = t
            .gaps(100..=500, &guard)
            .unwrap()
            .map(|r| r.into_inner())
            .collect();
        assert_eq!(gaps, m.gaps(100, 500), "step {step}: gaps");
        let mut back: Vec<(u64, u64)> = t
            .gaps(..=500, &guard)
            .unwrap()
            .rev()
            .map(|r| r.into_inner())
            .collect();
        back.reverse();
        assert_eq!(back, m.gaps(0, 500), "step {step}: gaps backwards");
        assert_eq!(
            t.first(&guard).map(|(r, e)| (r, e.0)),
            want.first().map(|&(a, b, x)| (a..=b, x))
        );
        assert_eq!(
            t.last(&guard).map(|(r, e)| (r, e.0)),
            want.last().map(|&(a, b, x)| (a..=b, x))
        );
    }
    drop(t);
    // Every entry created was dropped exactly once (after the collector ran).
    for _ in 0..256 {
        if drops.load(Ordering::Relaxed) == created {
            break;
        }
        collector.register().pin().flush();
    }
    assert_eq!(drops.load(Ordering::Relaxed), created, "drops");
}

/// The lowest/highest aligned start of a free `size`-range in `[min, max]`, by brute force.
fn brute_fit(m: &Model, min: u64, max: u64, size: u64, align: u64, rev: bool) -> Option<u64> {
    let free = |s: u64| m.gaps(s, s + size - 1) == [(s, s + size - 1)];
    let starts =
        (min..=max.saturating_sub(size - 1)).filter(|s| s % align == 0 && s + size - 1 <= max);
    let mut it = starts.filter(|&s| free(s));
    if rev {
        it.next_back()
    } else {
        it.next()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn len_and_api_against_model_rcu(ops in proptest::collection::vec(op(), 1..120)) {
        run(&ops, false);
    }

    #[test]
    fn len_and_api_against_model_exclusive(ops in proptest::collection::vec(op(), 1..120)) {
        run(&ops, true);
    }

    /// Aligned empty_area on random trees (both kinds, deep enough to have internal nodes)
    /// against brute force, windows and alignments included.
    #[test]
    fn aligned_empty_area_against_brute_force(
        ranges in proptest::collection::vec((0..4000u64, 0..40u64), 0..300),
        alloc in any::<bool>(),
        queries in proptest::collection::vec((0..4000u64, 0..4000u64, 1..70u64, 0..8u32), 1..40),
    ) {
        let t = MapleTree::<Value>::with_options(Options::new().alloc(alloc));
        let mut m = Model::default();
        for (i, &(a, l)) in ranges.iter().enumerate() {
            t.store_range(a..=a + l, Value::new(i as u64)).unwrap();
            m.store(a, a + l, Some(Some(i as u64)));
        }
        t.validate().unwrap();
        for &(x, y, size, k) in &queries {
            let (min, max) = (x.min(y), x.max(y));
            let align = 1u64 << k;
            for rev in [false, true] {
                let got = if rev {
                    t.empty_area_rev_aligned(min..=max, size, align)
                } else {
                    t.empty_area_aligned(min..=max, size, align)
                };
                let want = if max - min < size - 1 {
                    Err(Error::InvalidWindow)
                } else {
                    // Beyond the model's indices everything is free.
                    brute_fit(&m, min, max, size, align, rev).ok_or(Error::NoRoom)
                };
                prop_assert_eq!(got, want, "[{}, {}] size {} align {} rev {}", min, max, size, align, rev);
                if align == 1 {
                    let plain = if rev { t.empty_area_rev(min..=max, size) } else { t.empty_area(min..=max, size) };
                    prop_assert_eq!(plain, want);
                }
            }
        }
    }
}

#[test]
fn exact_size_aligned_hole() -> Result<(), Error> {
    for alloc in [true, false] {
        let t = MapleTree::<Value>::with_options(Options::new().alloc(alloc));
        t.store_range(0..=0xfff, Value::new(1))?;
        t.store_range(0x2000..=0x2fff, Value::new(2))?;
        assert_eq!(t.empty_area_aligned(0..=u64::MAX, 0x1000, 0x1000)?, 0x1000);
        assert_eq!(
            t.empty_area_rev_aligned(0..=0x2fff, 0x1000, 0x1000)?,
            0x1000
        );
        assert_eq!(
            t.empty_area_rev_aligned(0..=u64::MAX, 0x1000, 0x1000)?,
            u64::MAX - 0xfff
        );
        assert_eq!(
            t.empty_area_aligned(0..=u64::MAX, 0x1000, 3),
            Err(Error::InvalidAlignment)
        );
        assert_eq!(
            t.empty_area_aligned(0..=u64::MAX, 0x1000, 0),
            Err(Error::InvalidAlignment)
        );
        assert_eq!(
            t.empty_area_aligned(0..=0x2fff, 0x1000, 0x2000),
            Err(Error::NoRoom)
        );
        // An inverted window (min > max).
        #[allow(clippy::reversed_empty_ranges)]
        let inverted = 5..=4;
        assert_eq!(
            t.empty_area_aligned(inverted, 1, 1),
            Err(Error::InvalidWindow)
        );
        assert_eq!(t.empty_area_aligned(0..=9, 0, 1), Err(Error::InvalidWindow));
        assert_eq!(
            t.empty_area_aligned(0..=9, 11, 1),
            Err(Error::InvalidWindow)
        );
        // The top of the index space: an aligned start whose round-up overflows.
        assert_eq!(
            t.empty_area_aligned(u64::MAX - 10..=u64::MAX, 2, 1 << 63),
            Err(Error::NoRoom)
        );
    }
    let t = MapleTree::<Value>::new_alloc();
    t.store_range(0..=0xfff, Value::new(1))?;
    t.store_range(0x2000..=0x2fff, Value::new(2))?;
    assert_eq!(
        t.alloc_range_aligned(0..=u64::MAX, 0x1000, 0x1000, Value::new(3))?,
        0x1000..=0x1fff
    );
    assert_eq!(
        t.alloc_range_aligned(0..=u64::MAX, 0x1000, 0x1000, Value::new(4))?,
        0x3000..=0x3fff
    );
    assert_eq!(t.len(), 4);
    let plain = MapleTree::<Value>::new();
    assert_eq!(
        plain.alloc_range_aligned(0..=9, 1, 1, Value::new(1)),
        Err(Error::NotAllocTree)
    );
    t.validate().unwrap();
    Ok(())
}

/// Many misaligned holes of the right size and one aligned one: found at every depth.
#[test]
fn aligned_search_skips_misaligned_subtrees() -> Result<(), Error> {
    let t = MapleTree::<Value>::new_alloc();
    // Holes of 0x1000 at odd multiples of 0x800 (misaligned for 0x1000), 2000 of them.
    for i in 0..2000u64 {
        let base = i * 0x2000;
        t.store_range(base..=base + 0x7ff, Value::new(i))?;
        t.store_range(base + 0x1800..=base + 0x1fff, Value::new(i))?;
    }
    // One aligned hole near the top.
    t.erase_range(1990 * 0x2000..=1990 * 0x2000 + 0x7ff)?;
    assert!(t.height() >= 3);
    assert_eq!(
        t.empty_area_aligned(0..=2000 * 0x2000 - 1, 0x1000, 0x1000)?,
        1990 * 0x2000
    );
    assert_eq!(
        t.empty_area_rev_aligned(0..=2000 * 0x2000 - 1, 0x1000, 0x1000)?,
        1990 * 0x2000
    );
    assert_eq!(t.empty_area_aligned(0..=u64::MAX, 0x800, 0x800)?, 0x800);
    Ok(())
}

#[test]
fn range_bounds_helpers() -> Result<(), Error> {
    assert_eq!(inclusive(..), Ok((0, u64::MAX)));
    assert_eq!(inclusive(3..4), Ok((3, 3)));
    assert_eq!(inclusive(..0), Err(Error::InvalidRange));
    #[allow(clippy::reversed_empty_ranges)]
    let inverted = 5..=4;
    assert_eq!(inclusive(inverted), Err(Error::InvalidRange));
    use std::ops::Bound;
    assert_eq!(
        inclusive((Bound::Excluded(u64::MAX), Bound::Unbounded)),
        Err(Error::InvalidRange)
    );
    let t = MapleTree::<Value>::new();
    let g = t.pin();
    // An empty tree is one gap.
    assert_eq!(t.gaps(.., &g)?.collect::<Vec<_>>(), [0..=u64::MAX]);
    assert_eq!(t.gaps(5..10, &g)?.next_back(), Some(5..=9));
    assert!(t.gaps(5..5, &g).is_err());
    drop(g);
    t.store_range(0..=9, Value::new(1))?;
    t.store_range(20..=u64::MAX, Value::new(2))?;
    let g = t.pin();
    let mut gaps = t.gaps(.., &g)?;
    assert_eq!(gaps.next(), Some(10..=19));
    assert_eq!(gaps.next(), None);
    assert_eq!(gaps.next(), None); // fused
    assert_eq!(t.gaps(0..=9, &g)?.count(), 0);
    let mut it = t.range(15.., &g);
    assert_eq!(it.next().map(|(r, _)| *r.start()), Some(20));
    assert_eq!(it.next().map(|(r, _)| *r.start()), None);
    assert_eq!(it.next().map(|(r, _)| *r.start()), None);
    assert!(format!("{it:?}").starts_with("Iter"));
    Ok(())
}

/// The contents as `(first, last, value)`.
fn contents(t: &MapleTree<Value>) -> Vec<(u64, u64, u64)> {
    let g = t.pin();
    t.iter(&g)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect()
}

/// Every range argument form (`a..=b`, `a..b`, `..=b`, `a..`, `..`, explicit bounds) through
/// each method taking `impl RangeBounds<u64>`, and the empty/inverted/overflowing ranges that
/// are `Error::InvalidRange` (writes) or an empty iterator (`range`), without a panic.
#[test]
#[allow(clippy::reversed_empty_ranges)]
fn range_arguments_every_form() -> Result<(), Error> {
    use std::ops::Bound::{Excluded, Included, Unbounded};

    // Stores, one per form.
    let t = MapleTree::<Value>::new();
    t.store_range(..=9, Value::new(1))?; // [0, 9]
    t.store_range(0x1000..=0x1fff, Value::new(2))?; // [0x1000, 0x1fff]
    t.store_range(0x3000..0x4000, Value::new(3))?; // [0x3000, 0x3fff]
    t.store_range(u64::MAX - 9.., Value::new(4))?; // [MAX - 9, MAX]
    t.store_range((Excluded(0x5000), Excluded(0x5005)), Value::new(5))?; // [0x5001, 0x5004]
    t.store_range((Included(0x6000), Included(0x6000)), Value::new(6))?; // one index
    assert_eq!(
        contents(&t),
        [
            (0, 9, 1),
            (0x1000, 0x1fff, 2),
            (0x3000, 0x3fff, 3),
            (0x5001, 0x5004, 5),
            (0x6000, 0x6000, 6),
            (u64::MAX - 9, u64::MAX, 4),
        ]
    );
    t.validate().map_err(|_| Error::InvalidRange)?;

    // range: each form, ranges reported whole.
    let g = t.pin();
    let starts = |it: maple_tree::Iter<'_, Value>| it.map(|(r, _)| *r.start()).collect::<Vec<_>>();
    assert_eq!(starts(t.range(5..=0x1000, &g)), [0, 0x1000]);
    assert_eq!(starts(t.range(10..0x1000, &g)), Vec::<u64>::new());
    assert_eq!(starts(t.range(10..0x1001, &g)), [0x1000]);
    assert_eq!(starts(t.range(..=0x1000, &g)), [0, 0x1000]);
    assert_eq!(
        starts(t.range(0x5004.., &g)),
        [0x5001, 0x6000, u64::MAX - 9]
    );
    assert_eq!(starts(t.range(.., &g)).len(), 6);
    assert_eq!(
        starts(t.range((Excluded(9), Excluded(0x1000)), &g)),
        Vec::<u64>::new()
    );
    assert_eq!(
        starts(t.range((Excluded(u64::MAX - 1), Unbounded), &g)),
        [u64::MAX - 9]
    );
    // Both ends of a bounded range.
    let back: Vec<u64> = t
        .range(..0x6000, &g)
        .rev()
        .map(|(r, _)| *r.start())
        .collect();
    assert_eq!(back, [0x5001, 0x3000, 0x1000, 0]);

    // gaps: each form, clipped to the window.
    assert_eq!(t.gaps(0..=0x1000, &g)?.collect::<Vec<_>>(), [10..=0xfff]);
    assert_eq!(
        t.gaps(0x1fff..0x3001, &g)?.collect::<Vec<_>>(),
        [0x2000..=0x2fff]
    );
    assert_eq!(t.gaps(..=20, &g)?.collect::<Vec<_>>(), [10..=20]);
    assert_eq!(t.gaps(0x6000.., &g)?.next(), Some(0x6001..=u64::MAX - 10));
    assert_eq!(t.gaps(.., &g)?.count(), 5);
    drop(g);

    // The empty, inverted and overflowing ranges.
    let bad: [(std::ops::Bound<u64>, std::ops::Bound<u64>); 9] = [
        (Included(5), Excluded(5)),      // 5..5
        (Included(0), Excluded(0)),      // 0..0
        (Unbounded, Excluded(0)),        // ..0
        (Included(9), Included(3)),      // 9..=3
        (Included(9), Excluded(3)),      // 9..3
        (Excluded(u64::MAX), Unbounded), // nothing above MAX
        (Excluded(u64::MAX), Included(u64::MAX)),
        (Excluded(5), Excluded(6)), // nothing strictly between
        (Excluded(5), Included(5)),
    ];
    let before = contents(&t);
    let entry = Arc::new(0u64);
    let arcs = MapleTree::<Arc<u64>>::new();
    for r in bad {
        assert_eq!(inclusive(r), Err(Error::InvalidRange), "{r:?}");
        assert_eq!(
            t.store_range(r, Value::new(9)),
            Err(Error::InvalidRange),
            "{r:?}"
        );
        assert_eq!(
            t.insert_range(r, Value::new(9)),
            Err(Error::InvalidRange),
            "{r:?}"
        );
        assert_eq!(t.erase_range(r), Err(Error::InvalidRange), "{r:?}");
        {
            let mut w = t.lock();
            assert_eq!(w.store_range(r, Value::new(9)), Err(Error::InvalidRange));
            assert_eq!(w.insert_range(r, Value::new(9)), Err(Error::InvalidRange));
            assert_eq!(w.erase_range(r), Err(Error::InvalidRange));
            assert_eq!(w.store_zero_range(r), Err(Error::InvalidRange));
        }
        // The refused entry is dropped, not leaked.
        assert_eq!(
            arcs.store_range(r, Arc::clone(&entry)),
            Err(Error::InvalidRange)
        );
        assert_eq!(
            arcs.insert_range(r, Arc::clone(&entry)),
            Err(Error::InvalidRange)
        );
        assert_eq!(Arc::strong_count(&entry), 1);
        let g = t.pin();
        assert_eq!(t.range(r, &g).count(), 0, "{r:?}");
        assert_eq!(
            t.range(r, &g).next_back().map(|(r, _)| *r.start()),
            None,
            "{r:?}"
        );
        assert_eq!(t.gaps(r, &g).err(), Some(Error::InvalidRange), "{r:?}");
    }
    // The std range literals of the same cases.
    {
        assert_eq!(t.store_range(5..5, Value::new(9)), Err(Error::InvalidRange));
        assert_eq!(t.store_range(0..0, Value::new(9)), Err(Error::InvalidRange));
        assert_eq!(t.insert_range(..0, Value::new(9)), Err(Error::InvalidRange));
        assert_eq!(t.erase_range(9..=3), Err(Error::InvalidRange));
        let g = t.pin();
        assert_eq!(t.range(9..=3, &g).count(), 0);
        assert_eq!(t.range(5..5, &g).count(), 0);
        assert!(t.gaps(9..=3, &g).is_err());
    }
    assert_eq!(contents(&t), before, "nothing was written");
    assert_eq!(t.len(), before.len());

    // insert_range and erase_range, each form; the writer's forms in both modes.
    assert_eq!(t.insert_range(5..15, Value::new(7)), Err(Error::Occupied));
    t.insert_range(10..0x1000, Value::new(7))?; // exactly the hole
    t.erase_range(..=9)?;
    t.erase_range(0x3000..)?;
    {
        let mut w = t.lock();
        w.store_range(0x2000..0x2800, Value::new(8))?;
        w.insert_range(0x2800..=0x2fff, Value::new(9))?;
        w.store_zero_range(0x3000..0x3001)?;
        w.erase_range((Excluded(0x1fff), Included(0x2000)))?;
    }
    assert_eq!(
        contents(&t),
        [
            (10, 0xfff, 7),
            (0x1000, 0x1fff, 2),
            (0x2001, 0x27ff, 8),
            (0x2800, 0x2fff, 9)
        ]
    );
    let mut t = t;
    {
        let mut w = t.exclusive();
        w.erase_range(..)?;
        w.store_range(.., Value::new(1))?;
        w.store_range(1..u64::MAX, Value::new(2))?;
        assert_eq!(w.insert_range(0..=0, Value::new(3)), Err(Error::Occupied));
    }
    assert_eq!(
        contents(&t),
        [(0, 0, 1), (1, u64::MAX - 1, 2), (u64::MAX, u64::MAX, 1)]
    );
    t.validate().map_err(|_| Error::InvalidRange)?;
    Ok(())
}

#[test]
fn std_traits() -> Result<(), Error> {
    let mut t: MapleTree<Value> = [(0..=9, Value::new(1)), (5..=14, Value::new(2))]
        .into_iter()
        .collect();
    assert_eq!(format!("{t:?}"), "{0..=4: Value(1), 5..=14: Value(2)}");
    t.extend([(20..=29, Value::from(3u32))]);
    assert_eq!(t.len(), 3);
    #[allow(clippy::reversed_empty_ranges)]
    let bad = vec![
        (40..=49, Value::new(4)),
        (9..=5, Value::new(5)),
        (60..=69, Value::new(6)),
    ];
    assert_eq!(t.try_extend(bad), Err(Error::InvalidRange));
    assert_eq!(t.len(), 4);
    let d = MapleTree::<Value>::default();
    assert!(d.is_empty());
    assert_eq!(d.len(), 0);
    assert_eq!(format!("{d:?}"), "{}");
    assert_eq!(
        Value::try_from(u64::MAX).map_err(|e| e.value()),
        Err(u64::MAX)
    );
    assert_eq!(Value::try_from(5u64).map(u64::from), Ok(5));
    assert_eq!(Value::new(42).to_string(), "42");
    assert!(format!("{:?}", t.stats()).contains("exact_fit"));
    {
        let mut w = t.lock();
        assert!(format!("{w:?}").contains("len: 4"));
        let c = w.cursor(3);
        assert!(format!("{c:?}").contains("index: 3"));
    }
    let g: TreeGuard<'_> = t.pin();
    let c = t.cursor(7, &g);
    assert!(format!("{c:?}").starts_with("Cursor"));
    drop(g);
    Ok(())
}

#[test]
#[should_panic(expected = "invalid range")]
fn extend_panics_on_inverted_range() {
    let mut t = MapleTree::<Value>::new();
    #[allow(clippy::reversed_empty_ranges)]
    t.extend([(9..=5, Value::new(1))]);
}

static NAMES: [&str; 3] = ["zero", "one", "two"];

#[test]
fn static_reference_entries() -> Result<(), Error> {
    let mut t = MapleTree::<&'static &'static str>::new();
    t.store_range(0..=9, &NAMES[1])?;
    t.store_range(3..=4, &NAMES[2])?; // splits [0, 9]: two ranges hold the same reference
    let g = t.pin();
    assert_eq!(t.load(5, &g).copied(), Some("one"));
    drop(g);
    assert_eq!(t.len(), 3);
    assert_eq!(t.remove(0).map(|(r, s)| (r, *s)), Some((0..=2, "one")));
    assert_eq!(t.remove(9).map(|(r, s)| (r, *s)), Some((5..=9, "one")));
    assert_eq!(t.pop_first().map(|(_, s)| *s), Some("two"));
    assert!(t.is_empty());
    t.validate().unwrap();
    Ok(())
}

/// A box split over two ranges is one entry: removing it takes it out of both.
#[test]
fn remove_split_entry_takes_every_range() -> Result<(), Error> {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut t = MapleTree::<Box<Counted>>::new();
    t.store_range(0..=99, Box::new(Counted(1, drops.clone())))?;
    t.store_range(40..=59, Box::new(Counted(2, drops.clone())))?;
    assert_eq!(t.len(), 3);
    let (r, e) = t.remove(70).expect("an entry");
    assert_eq!((r, e.0), (60..=99, 1));
    assert_eq!(t.len(), 1);
    assert_eq!(drops.load(Ordering::Relaxed), 0);
    drop(e);
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    t.validate().unwrap();
    let (r, e) = t.pop_last().expect("an entry");
    assert_eq!((r, e.0), (40..=59, 2));
    assert!(t.is_empty() && t.pop_first().is_none());
    Ok(())
}

#[test]
fn zero_entries_count_in_len() -> Result<(), Error> {
    let mut t = MapleTree::<Value>::new();
    t.lock().store_zero_range(10..=19)?;
    assert_eq!((t.len(), t.is_empty()), (1, false));
    assert_eq!(t.remove(15), None); // not an entry
    assert_eq!(t.pop_first(), None);
    let erased = t.erase(15);
    assert_eq!(erased.as_ref().map(|e| e.range()), Some(10..=19));
    assert!(erased.is_some_and(|e| e.entry().is_none())); // the zero entry is not handed back
    assert!(t.is_empty());
    Ok(())
}

/// Pins and flushes `collector` until `t` has nothing pending (asserted after 1,024 rounds).
fn drain_pending<E: maple_tree::Entry>(t: &MapleTree<E>, collector: &Collector) {
    let h = collector.register();
    for _ in 0..1024 {
        if t.pending_frees() == Default::default() {
            break;
        }
        h.pin().flush();
    }
    assert_eq!(t.pending_frees(), Default::default());
}

/// A long-pinned guard holds back retired nodes and entries; dropping it releases them.
#[test]
fn pending_frees_held_by_a_pinned_guard() -> Result<(), Error> {
    let collector = Collector::new();
    let t = MapleTree::<Box<[u64; 4]>>::with_options(Options::new().collector(collector.clone()));
    for i in 0..300u64 {
        t.store_range(i * 10..=i * 10 + 5, Box::new([i; 4]))?;
    }
    let reader = t.pin();
    let before = t.pending_frees();
    for i in 0..300u64 {
        t.store_range(i * 10..=i * 10 + 5, Box::new([i + 1; 4]))?; // exact fits: entries retired
        t.store_range(i * 10 + 2..=i * 10 + 2, Box::new([0; 4]))?; // splits: nodes retired
    }
    let held = t.pending_frees();
    assert!(held.entries >= before.entries + 300, "{held:?}");
    assert_eq!(held.entry_bytes, held.entries * 32);
    assert!(
        held.nodes >= 1 && held.node_bytes == held.nodes * 256,
        "{held:?}"
    );
    // Still held while the reader is pinned, however often others collect.
    for _ in 0..64 {
        collector.register().pin().flush();
    }
    assert!(t.pending_frees().entries >= 300);
    drop(reader);
    drain_pending(&t, &collector);
    // Exclusive mode frees at once and counts nothing.
    let mut t = t;
    t.exclusive().store_range(0..=5, Box::new([9; 4]))?;
    assert_eq!(t.pending_frees(), Default::default());
    Ok(())
}

/// RCU-mode writers queue retired nodes and hand them to the collector a batch at a time: a
/// partial batch still counts as pending, `pending_frees` hands it on (so the counts drain once
/// no guard is pinned), and an exclusive-mode write frees a queued batch at once.
#[test]
fn retired_nodes_are_handed_on_in_batches() -> Result<(), Error> {
    let collector = Collector::new();
    let mut t = MapleTree::<Value>::with_options(Options::new().collector(collector.clone()));
    for i in 0..3u64 {
        t.store_range(i * 10..=i * 10 + 4, Value::new(i))?;
    }
    // Point stores into ranges rewrite the root leaf (copy-on-write): retired nodes.
    let held = t.pin();
    let before = t.stats().nodes_freed;
    for i in 0..5u64 {
        t.store_range(i..=i, Value::new(100 + i))?;
        t.validate().unwrap();
    }
    // Every node retired under `held` is queued, none handed on yet (fewer than a batch)...
    let retired = t.stats().nodes_freed - before;
    assert!(retired >= 4, "{retired}");
    assert_eq!(t.stats().retire_batches, 0);
    // ... and pending; asking hands them on as one batch.
    assert_eq!(t.pending_frees().nodes as u64, retired);
    assert_eq!(t.stats().retire_batches, 1);
    drop(held);
    drain_pending(&t, &collector);

    // A full batch goes on with the write that fills it: 32 retirements, one batch. (Each
    // store below splits a point off `[20, 24]`, the next merges it back: one leaf each.)
    let (batches, before) = (t.stats().retire_batches, t.stats().nodes_freed);
    for k in 0..16u64 {
        t.store_range(20 + k % 4..=20 + k % 4, Value::new(k))?;
        t.store_range(20..=24, Value::new(2))?;
    }
    assert_eq!(t.stats().nodes_freed - before, 32);
    assert_eq!(t.stats().retire_batches, batches + 1);
    drain_pending(&t, &collector);

    // A partial batch left by RCU-mode writes, taken over by an exclusive-mode write.
    let before = t.stats().nodes_freed;
    for i in 11..14u64 {
        t.store_range(i..=i, Value::new(200 + i))?;
    }
    assert!(t.stats().nodes_freed > before);
    t.exclusive().store_range(14..=14, Value::new(214))?;
    assert_eq!(t.pending_frees(), Default::default());
    t.validate().unwrap();
    for i in 11..15u64 {
        assert_eq!(t.get(i).map(|v| v.get()), Some(200 + i));
    }
    // And one left for the tree's drop (checked for leaks by the sanitizer runs).
    for i in 21..24u64 {
        t.store_range(i..=i, Value::new(200 + i))?;
    }
    drop(t);
    Ok(())
}

#[test]
fn allocator_facade() -> Result<(), Error> {
    let mut a = Allocator::new(0x1000, 0x10000)?;
    assert_eq!(a.bounds(), 0x1000..=0x10fff);
    let r1 = a.allocate(0x1000, 0x1000, Placement::FirstMatch)?;
    let r2 = a.allocate(0x800, 0x4000, Placement::FirstMatch)?;
    let r3 = a.allocate(0x1000, 0x1000, Placement::LastMatch)?;
    assert_eq!(
        (r1.clone(), r2.clone(), r3.clone()),
        (0x1000..=0x1fff, 0x4000..=0x47ff, 0x10000..=0x10fff)
    );
    assert_eq!(
        a.allocate(0x10, 0x10, Placement::ExactMatch(0x4100)),
        Err(Error::Occupied)
    );
    assert_eq!(
        a.allocate(0x10, 0x100, Placement::ExactMatch(0x5010)),
        Err(Error::InvalidAlignment)
    );
    assert_eq!(
        a.allocate(0x10, 0x10, Placement::ExactMatch(0x10)),
        Err(Error::InvalidRange)
    );
    assert_eq!(
        a.allocate(0x10, 3, Placement::FirstMatch),
        Err(Error::InvalidAlignment)
    );
    assert_eq!(
        a.allocate(0x20000, 1, Placement::FirstMatch),
        Err(Error::InvalidWindow)
    );
    assert_eq!(
        a.allocate(0x10, 0x10, Placement::ExactMatch(0x5000))?,
        0x5000..=0x500f
    );
    assert_eq!(a.len(), 4);
    assert_eq!(a.free(&(0x4000..=0x4fff)), Err(Error::NotAllocated));
    assert_eq!(a.free(&(0x3000..=0x3fff)), Err(Error::NotAllocated));
    a.free(&r2)?;
    assert_eq!(a.free(&r2), Err(Error::NotAllocated));
    assert_eq!(a.allocations(), [r1, 0x5000..=0x500f, r3]);
    assert_eq!(
        Allocator::new(u64::MAX, 2).err(),
        Some(Error::InvalidWindow)
    );
    assert_eq!(Allocator::new(0, 0).err(), Some(Error::InvalidWindow));
    // Fill it up with pages, then it is full.
    let mut b = Allocator::new(0, 0x10000)?;
    for _ in 0..16 {
        b.allocate(0x1000, 0x1000, Placement::FirstMatch)?;
    }
    assert_eq!(b.allocate(1, 1, Placement::LastMatch), Err(Error::NoRoom));
    assert!(!b.is_empty());
    Ok(())
}

/// Gaps read lock-free beside a writer: strictly increasing (or decreasing), disjoint, inside
/// the window, never over an entry that stays stored, and every range that stays empty is
/// inside some yielded gap.
#[test]
fn gaps_beside_a_writer() {
    let tree = MapleTree::<Value>::new_alloc();
    const N: u64 = 2000;
    for i in 0..N {
        tree.store_range(20 * i..=20 * i + 5, Value::new(i))
            .unwrap(); // stays
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut rounds = 0;
            while !done.load(Ordering::Acquire) || rounds < 3 {
                rounds += 1;
                let g = tree.pin();
                let (lo, hi) = (15, 20 * N - 1);
                let fwd: Vec<(u64, u64)> = tree
                    .gaps(lo..=hi, &g)
                    .unwrap()
                    .map(|r| r.into_inner())
                    .collect();
                let mut bwd: Vec<(u64, u64)> = tree
                    .gaps(lo..=hi, &g)
                    .unwrap()
                    .rev()
                    .map(|r| r.into_inner())
                    .collect();
                bwd.reverse();
                for gaps in [&fwd, &bwd] {
                    assert!(
                        gaps.windows(2).all(|w| w[0].1 < w[1].0),
                        "ordered, disjoint"
                    );
                    assert!(gaps.iter().all(|&(a, b)| lo <= a && a <= b && b <= hi));
                    let mut k = 0;
                    for i in 0..N {
                        // [20i, 20i+5] stays stored: no gap may touch it.
                        let (e0, e1) = (20 * i, 20 * i + 5);
                        // [20i+6, 20i+9] and [20i+16, 20i+19] stay empty: each inside a gap.
                        for (q0, q1) in [(20 * i + 6, 20 * i + 9), (20 * i + 16, 20 * i + 19)] {
                            if q0 < lo {
                                continue;
                            }
                            while k < gaps.len() && gaps[k].1 < q0 {
                                assert!(gaps[k].1 < e0 || gaps[k].0 > e1);
                                k += 1;
                            }
                            assert!(
                                k < gaps.len() && gaps[k].0 <= q0 && q1 <= gaps[k].1,
                                "[{q0}, {q1}] not inside a gap"
                            );
                        }
                    }
                }
            }
            rounds
        });
        // Stops the reader even if the writer's loop panics (else the scope waits forever).
        struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let stop = StopOnDrop(&done);
        let mut state = 1u64;
        for round in 0..200u64 {
            let mut w = tree.lock();
            for i in 0..N {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let (a, b) = (20 * i + 10, 20 * i + 15);
                match state % 3 {
                    0 => w.store_range(a..=b, Value::new(round)).unwrap(),
                    1 => w.erase_range(a..=b).unwrap(),
                    _ => w.store_range(a + 1..=b - 1, Value::new(round)).unwrap(),
                }
            }
            drop(w);
            tree.validate().unwrap();
        }
        drop(stop);
        assert!(reader.join().unwrap() >= 3);
    });
}
