//! `MapleTree::dup_map`: the one-pass mapped copy against a model (the source's iteration
//! mapped), on range and allocation trees of 0 to 5,000 ranges; entries of another type; the
//! zero entry; drop counting; a panicking closure (nothing leaks, the source is unchanged and
//! its lock released).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use maple_tree::{Collector, MapleTree, Options, Value};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// A tree of `n` random ranges (stores over each other, some erased), with its model.
fn random_tree(alloc: bool, n: u64, seed: u64) -> MapleTree<Value> {
    let mut t = MapleTree::with_options(Options::new().alloc(alloc));
    let mut rng = Rng(seed);
    {
        let mut w = t.exclusive();
        for i in 0..n {
            let a = rng.next() % (20 * n + 100);
            let len = 1 + rng.next() % 40;
            if rng.next() % 8 == 0 {
                w.erase_range(a..=a + len).unwrap();
            } else {
                w.store_range(a..=a + len - 1, Value::new(i)).unwrap();
            }
        }
    }
    t
}

/// Every `(range, value)` of `t`.
fn ranges<E: maple_tree::Entry, T>(
    t: &MapleTree<E>,
    f: impl Fn(&E::Borrowed<'_>) -> T,
) -> Vec<(std::ops::RangeInclusive<u64>, T)> {
    let g = t.pin();
    t.iter(&g).map(|(r, v)| (r, f(&v))).collect()
}

#[test]
fn the_copy_is_the_source_mapped() {
    for alloc in [false, true] {
        for (n, seed) in [
            (0, 1),
            (1, 2),
            (7, 3),
            (40, 4),
            (135, 5),
            (1_000, 6),
            (5_000, 7),
        ] {
            let src = random_tree(alloc, n, seed);
            let mut calls = Vec::new();
            let copy = src.dup_map(|r, v| {
                calls.push(r.clone());
                Value::new(v.get() * 3 + r.start() % 7)
            });
            copy.validate().unwrap();
            let want: Vec<_> = ranges(&src, |v| v.get() * 3);
            let got: Vec<_> = ranges(&copy, |v| v.get());
            assert_eq!(got.len(), want.len(), "alloc {alloc} n {n}");
            for ((rw, vw), (rg, vg)) in want.iter().zip(&got) {
                assert_eq!(rw, rg);
                assert_eq!(*vg, vw + rw.start() % 7, "range {rw:?}");
            }
            // `f` was called once per range, in index order.
            let src_ranges: Vec<_> = want.iter().map(|(r, _)| r.clone()).collect();
            assert_eq!(calls, src_ranges);
            assert_eq!(copy.len(), src.len());
            assert_eq!(copy.height(), src.height());
            assert_eq!(copy.is_alloc(), alloc);
            // The same shape: every node copied, none more.
            assert_eq!(copy.stats().nodes_allocated, {
                let s = src.stats();
                s.nodes_allocated - s.nodes_freed
            });
            // The copy is a tree of its own: writes to it leave the source alone.
            copy.store_range(0..=u64::MAX / 2, Value::new(1)).unwrap();
            copy.validate().unwrap();
            assert_eq!(ranges(&src, |v| v.get() * 3), want);
            // An allocation tree's copy tracks gaps: the same answer as the source's search.
            if alloc && n > 0 {
                let copy2 = src.dup_map(|_, v| *v);
                for size in [1, 5, 50] {
                    assert_eq!(
                        copy2.empty_area_rev(0..=20 * n + 200, size),
                        src.empty_area_rev(0..=20 * n + 200, size)
                    );
                }
            }
        }
    }
}

#[test]
fn entries_of_another_type_and_the_zero_entry() {
    let tree = MapleTree::<Value>::new();
    {
        let mut w = tree.lock();
        for i in 0..100u64 {
            w.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
        }
        w.store_zero_range(10 * 50..=10 * 50 + 5).unwrap();
    }
    let names = tree.dup_map(|r, v| Box::new(format!("{}@{}", v.get(), r.start())));
    names.validate().unwrap();
    assert_eq!(names.len(), 100);
    let g = names.pin();
    assert_eq!(
        names.load(10 * 42 + 3, &g).map(|s| s.as_str()),
        Some("42@420")
    );
    // The zero entry stays (occupied, reads as nothing, not mapped).
    assert_eq!(names.load(500, &g), None);
    assert_eq!(
        names.insert(500, Box::new("x".into())),
        Err(maple_tree::Error::Occupied)
    );
    assert_eq!(names.iter(&g).count(), 99);
    // An entry that a store split over two ranges is mapped once per range.
    let t = MapleTree::<Value>::new();
    t.store_range(0..=99, Value::new(7)).unwrap();
    t.erase_range(40..=59).unwrap();
    let mut seen = Vec::new();
    let c = t.dup_map(|r, v| {
        seen.push((r, v.get()));
        Value::new(v.get())
    });
    assert_eq!(seen, [(0..=39, 7), (60..=99, 7)]);
    c.validate().unwrap();
}

#[derive(Default)]
struct Counts {
    made: AtomicUsize,
    dropped: AtomicUsize,
}

struct Counted(Arc<Counts>, u64);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn every_entry_made_is_dropped_once() {
    let c = Arc::new(Counts::default());
    let collector = Collector::new();
    let opts = Options::new().alloc(true).collector(collector.clone());
    let src = MapleTree::<Value>::with_options(opts);
    for i in 0..500u64 {
        src.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
    }
    let copy = src.dup_map(|_, v| {
        c.made.fetch_add(1, Ordering::SeqCst);
        Box::new(Counted(Arc::clone(&c), v.get()))
    });
    assert_eq!(c.made.load(Ordering::SeqCst), 500);
    let g = copy.pin();
    assert_eq!(copy.load(4_203, &g).map(|e| e.1), Some(420));
    drop(g);
    // Mapping the mapped copy: a copy of another type of its own.
    let again = copy.dup_map(|_, e| Value::new(e.1 + 1));
    assert_eq!(again.get(4_203), Some(Value::new(421)));
    drop(copy);
    drop(again);
    drop(src);
    drop(collector);
    assert_eq!(c.dropped.load(Ordering::SeqCst), 500);
}

#[test]
#[cfg(feature = "std")] // without std panics are not caught: the rest leaks
fn a_panicking_closure_leaks_nothing_and_leaves_the_source() {
    for k in [1usize, 2, 16, 17, 150, 300] {
        let c = Arc::new(Counts::default());
        let collector = Collector::new();
        let opts = Options::new()
            .alloc(k % 2 == 0)
            .collector(collector.clone());
        let src = MapleTree::<Value>::with_options(opts);
        for i in 0..300u64 {
            src.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
        }
        let before = ranges(&src, |v| v.get());
        let mut calls = 0;
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            src.dup_map(|_, v| {
                calls += 1;
                if calls == k {
                    panic!("map #{k} panics");
                }
                c.made.fetch_add(1, Ordering::SeqCst);
                Box::new(Counted(Arc::clone(&c), v.get()))
            })
        }));
        assert!(r.is_err(), "map #{k} panicked");
        assert_eq!(c.made.load(Ordering::SeqCst), k - 1);
        assert_eq!(
            c.dropped.load(Ordering::SeqCst),
            k - 1,
            "every entry made before the panic (#{k}) is dropped once"
        );
        // The source is unchanged and its lock released.
        src.validate().unwrap();
        assert_eq!(ranges(&src, |v| v.get()), before);
        src.store(7, Value::new(1)).unwrap(); // in the gap [6, 9]
        let copy = src.dup_map(|_, v| *v);
        assert_eq!(copy.len(), 301);
        drop((copy, src));
        drop(collector);
    }
}
