//! The kernel's maple tree benchmarks (`lib/test_maple_tree.c`: the `bench_*` functions and
//! `bench_forking`), ported with their exact tree shapes; criterion picks the loop counts.
//!
//! The kernel runs them on a tree that is not in RCU mode, so the `exclusive` rows (a
//! [`MapleTree::exclusive`] writer: in place, frees at once) are the like-for-like ports; the
//! `rcu` rows do the same through the tree's lock with readers allowed.
//!
//! Run: `cargo bench --bench kernel` (`MAPLE_BENCH_QUICK=1` for a smoke run).

mod support;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use maple_tree::{MapleTree, Value};

type Tree = MapleTree<Value>;

fn v(x: u64) -> Value {
    Value::new(x)
}

/// `[i, i + span]` = `xa_mk_value(i)` for `i` in `(0..end).step_by(step)`, on an allocation tree
/// (`MT_FLAGS_ALLOC_RANGE`, as every kernel benchmark but `bench_forking`).
fn alloc_tree(end: u64, step: u64, span: impl Fn(u64) -> u64) -> Tree {
    let mut t = Tree::new_alloc();
    {
        let mut w = t.exclusive();
        for i in (0..end).step_by(step as usize) {
            w.store_range(i..=i + span(i), v(i)).unwrap();
        }
    }
    t.validate().unwrap();
    t
}

/// `bench_slot_store`: 104 ranges `[i, i+5]`, i = 0..=1030 step 10; each iteration stores NULL
/// at `[105, 105]` and then `xa_mk_value(105)` at `[100, 105]`.
fn bench_slot_store(c: &mut Criterion) {
    let mut g = c.benchmark_group("kernel/bench_slot_store");
    let (brk_start, brk) = (100u64, 105u64);
    for rcu in [false, true] {
        let mut t = alloc_tree(1040, 10, |_| 5);
        // Once outside the timing, so that the checks below hold even when filtered out.
        t.erase_range(brk..=brk).unwrap();
        t.store_range(brk_start..=brk, v(brk)).unwrap();
        g.bench_function(if rcu { "rcu" } else { "exclusive" }, |b| {
            if rcu {
                b.iter(|| {
                    t.erase_range(brk..=brk).unwrap();
                    t.store_range(brk_start..=brk, v(brk)).unwrap();
                })
            } else {
                b.iter(|| {
                    let mut w = t.exclusive();
                    w.erase_range(brk..=brk).unwrap();
                    w.store_range(brk_start..=brk, v(brk)).unwrap();
                })
            }
        });
        assert_eq!(t.get(brk), Some(v(brk)));
        assert_eq!(t.get(brk + 1), None);
        t.validate().unwrap();
        let s = t.stats();
        eprintln!(
            "  bench_slot_store/{}: slot_store {} slot_store3 {} exact_fit {} node_store {}",
            if rcu { "rcu" } else { "exclusive" },
            s.slot_store,
            s.slot_store3,
            s.exact_fit,
            s.node_store
        );
    }
    g.finish();
}

/// `bench_node_store`: 24 ranges `[i, i+5]`, i = 0..230 step 10; each iteration stores
/// `[o, o+15]` = `xa_mk_value(o)`, o = 76, 81, … and back to 76 once o ≥ 135.
fn bench_node_store(c: &mut Criterion) {
    let mut g = c.benchmark_group("kernel/bench_node_store");
    for rcu in [false, true] {
        let mut t = alloc_tree(240, 10, |_| 5);
        let mut o = 76u64;
        g.bench_function(if rcu { "rcu" } else { "exclusive" }, |b| {
            if rcu {
                b.iter(|| {
                    t.store_range(o..=o + 15, v(o)).unwrap();
                    o += 5;
                    if o >= 135 {
                        o = 76;
                    }
                })
            } else {
                b.iter(|| {
                    t.exclusive().store_range(o..=o + 15, v(o)).unwrap();
                    o += 5;
                    if o >= 135 {
                        o = 76;
                    }
                })
            }
        });
        if o != 76 || t.stats().node_store + t.stats().exact_fit > 0 {
            let last = if o == 76 { 131 } else { o - 5 };
            assert_eq!(t.get(last + 15), Some(v(last)));
        }
        t.validate().unwrap();
    }
    g.finish();
}

/// The 250-range tree of `bench_awalk`, `bench_walk` and `bench_load`.
fn tree_250() -> Tree {
    alloc_tree(2500, 10, |_| 5)
}

/// `bench_awalk`: the 250 ranges plus NULL at `[1470, 1475]`; `mas_empty_area_rev(0, 2000, 10)`.
fn bench_awalk(c: &mut Criterion) {
    let t = tree_250();
    t.erase_range(1470..=1475).unwrap();
    // The only 10-wide hole is [1466, 1479]; the highest fit starts at 1470.
    assert_eq!(t.empty_area_rev(0..=2000, 10), Ok(1470));
    c.bench_function("kernel/bench_awalk", |b| {
        b.iter(|| assert_eq!(t.empty_area_rev(0..=2000, black_box(10)), Ok(1470)))
    });
}

/// `bench_walk`: `mas_walk` at 1470 then `mas_reset`, under one guard.
fn bench_walk(c: &mut Criterion) {
    let t = tree_250();
    let guard = t.pin();
    let mut cur = t.cursor(1470, &guard);
    c.bench_function("kernel/bench_walk", |b| {
        b.iter(|| {
            let e = cur.walk();
            cur.reset();
            assert_eq!(e, Some(v(1470)));
        })
    });
    assert_eq!(cur.walk(), Some(v(1470)));
    assert_eq!((cur.index(), cur.last()), (1470, 1475));
}

/// `bench_load`: `mtree_load(1470)`. The kernel's `mtree_load` takes `rcu_read_lock` itself;
/// `load_guarded` holds one guard (the cost of the walk), `get` pins per call (the façade).
fn bench_load(c: &mut Criterion) {
    let t = tree_250();
    let mut g = c.benchmark_group("kernel/bench_load");
    g.bench_function("load_guarded", |b| {
        let guard = t.pin();
        b.iter(|| assert_eq!(t.load(black_box(1470), &guard), Some(v(1470))))
    });
    g.bench_function("get_pins", |b| {
        b.iter(|| assert_eq!(t.get(black_box(1470)), Some(v(1470))))
    });
    g.finish();
}

/// `bench_mt_for_each`: 500 contiguous ranges `[i, i+4]`, i < 2500 step 5; a full `mt_for_each`
/// (`mt_find` then `mt_find_after` until NULL) asserting each value.
fn bench_mt_for_each(c: &mut Criterion) {
    let t = alloc_tree(2500, 5, |_| 4);
    let mut g = c.benchmark_group("kernel/bench_mt_for_each");
    g.throughput(Throughput::Elements(500));
    g.bench_function("pass", |b| {
        b.iter(|| {
            let guard = t.pin();
            let (mut index, max) = (0u64, 2500u64);
            let mut j = 0u64;
            let mut e = t.find(&mut index, max, &guard);
            while let Some(x) = e {
                assert_eq!(x.get(), j);
                j += 5;
                e = t.find_after(&mut index, max, &guard);
            }
            assert_eq!(j, 2500);
        })
    });
    g.finish();
}

/// The layout of `bench_mas_for_each` and `bench_mas_prev`: `[i, i+4]` step 5, but `[i, i+3]`
/// when i % 30 == 0 (a one-index hole every 30).
fn holey_tree() -> Tree {
    alloc_tree(2500, 5, |i| if i % 30 == 0 { 3 } else { 4 })
}

/// `bench_mas_for_each`: under one guard, `mas_for_each` up to 2500 asserting values, then
/// `mas_set(0)`.
fn bench_mas_for_each(c: &mut Criterion) {
    let t = holey_tree();
    let mut g = c.benchmark_group("kernel/bench_mas_for_each");
    g.throughput(Throughput::Elements(500));
    let guard = t.pin();
    let mut cur = t.cursor(0, &guard);
    g.bench_function("pass", |b| {
        b.iter(|| {
            let mut j = 0u64;
            while let Some(x) = cur.find(2500) {
                assert_eq!(x.get(), j);
                j += 5;
            }
            cur.set(0);
            assert_eq!(j, 2500);
        })
    });
    g.finish();
}

/// `bench_mas_prev`: under one guard, `mas_set(ULONG_MAX)` and `mas_prev(0)` until NULL,
/// asserting values down from 2495.
fn bench_mas_prev(c: &mut Criterion) {
    let t = holey_tree();
    let mut g = c.benchmark_group("kernel/bench_mas_prev");
    g.throughput(Throughput::Elements(500));
    let guard = t.pin();
    let mut cur = t.cursor(0, &guard);
    g.bench_function("pass", |b| {
        b.iter(|| {
            cur.set(u64::MAX);
            let mut j = 2500u64;
            while let Some(x) = cur.prev(0) {
                j -= 5;
                assert_eq!(x.get(), j);
            }
            assert_eq!(j, 0);
        })
    });
    g.finish();
}

/// The `bench_forking` source: `n` ranges `[10i, 10i+5]` = `xa_mk_value(i)` (the kernel's 135
/// is `nr_entries = 134` with an inclusive loop).
fn fork_source(n: u64) -> Tree {
    let t = Tree::new_alloc();
    for i in 0..n {
        let (a, b) = support::shape(i);
        t.store_range(a..=b, v(i)).unwrap();
    }
    t.validate().unwrap();
    t
}

/// The old `bench_forking` body: a fresh allocation tree filled by in-order stores copied from
/// the source (each one the three-way append case), optionally validated.
fn fork_by_append(src: &Tree, append: bool, rcu: bool, validate: bool) -> Tree {
    let mut new = Tree::new_alloc();
    new.set_append(append);
    let guard = src.pin();
    if rcu {
        let mut w = new.lock();
        for (r, x) in src.iter(&guard) {
            w.store_range(r, x).unwrap();
        }
    } else {
        let mut w = new.exclusive();
        for (r, x) in src.iter(&guard) {
            w.store_range(r, x).unwrap();
        }
    }
    if validate {
        new.exclusive().validate().unwrap();
    }
    new
}

/// The new `bench_forking` body: `__mt_dup`, then through a cursor an exact-fit store of every
/// entry over its own range (dup_mmap swapping in the child's VMA), optionally validated.
fn fork_by_dup(src: &Tree, validate: bool) -> Tree {
    let mut new = src.dup();
    {
        let mut w = new.exclusive();
        let mut cur = w.cursor(0);
        while let Some(x) = cur.find(u64::MAX) {
            cur.store(x).unwrap();
        }
        if validate {
            w.validate().unwrap();
        }
    }
    new
}

/// Checks that a fork copied everything and took the path it is meant to measure.
fn check_fork(src: &Tree, new: &Tree, n: u64) {
    let (gs, gn) = (src.pin(), new.pin());
    assert!(src.iter(&gs).eq(new.iter(&gn)));
    assert_eq!(new.iter(&gn).count() as u64, n);
}

/// Both forms of `bench_forking` at 135 entries, each iteration ending with `mt_validate` and
/// the drop (`__mt_destroy`), plus the old form with the in-place appends on and off.
fn bench_forking(c: &mut Criterion) {
    let n = 135;
    let src = fork_source(n);

    // The path each form takes, checked once outside the timing.
    let on = fork_by_append(&src, true, false, true);
    check_fork(&src, &on, n);
    // Every store is a three-way append except the first (new root) and the leaf splits.
    let s = on.stats();
    assert_eq!(s.append_three_way + s.split + s.new_root, n, "{s:?}");
    let off = fork_by_append(&src, false, false, true);
    check_fork(&src, &off, n);
    assert_eq!(off.stats().append_three_way, 0, "{:?}", off.stats());
    let dup = fork_by_dup(&src, true);
    check_fork(&src, &dup, n);
    assert_eq!(dup.stats().exact_fit, n, "{:?}", dup.stats());
    drop((on, off, dup));

    let mut g = c.benchmark_group("kernel/bench_forking");
    g.throughput(Throughput::Elements(1));
    for (name, append, rcu) in [
        ("old_append_on", true, false),
        ("old_append_off", false, false),
        ("old_append_on_rcu", true, true),
        ("old_append_off_rcu", false, true),
    ] {
        g.bench_function(name, |b| b.iter(|| fork_by_append(&src, append, rcu, true)));
    }
    g.bench_function("new_dup", |b| b.iter(|| fork_by_dup(&src, true)));
    // `__mt_dup` and `mtree_destroy` alone (the C tree's `fork134_mt_dup` row): the copy is
    // dropped inside the timed loop.
    g.bench_function("mt_dup", |b| b.iter(|| src.dup()));
    g.finish();
}

/// The fork curve of the kernel commit "fork: use __mt_dup() to duplicate maple tree in
/// dup_mmap()": the dup form against the append form at 21, 121, 1,621 and 25,621 entries
/// (without `mt_validate`, as `dup_mmap` does not validate); the drop is included, as a forked
/// child's tree is eventually destroyed.
fn bench_fork_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("kernel/fork_scaling");
    let sizes: &[u64] = if support::quick() {
        &[21, 121, 1621]
    } else {
        &[21, 121, 1621, 25621]
    };
    for &n in sizes {
        let src = fork_source(n);
        check_fork(&src, &fork_by_dup(&src, false), n);
        check_fork(&src, &fork_by_append(&src, true, false, false), n);
        g.throughput(Throughput::Elements(n));
        g.bench_with_input(BenchmarkId::new("append", n), &n, |b, _| {
            b.iter(|| fork_by_append(&src, true, false, false))
        });
        g.bench_with_input(BenchmarkId::new("dup", n), &n, |b, _| {
            b.iter(|| fork_by_dup(&src, false))
        });
    }
    g.finish();
}

criterion_group! {
    name = kernel;
    config = support::config();
    targets = bench_slot_store, bench_node_store, bench_awalk, bench_walk, bench_load,
        bench_mt_for_each, bench_mas_for_each, bench_mas_prev, bench_forking, bench_fork_scaling
}
criterion_main!(kernel);
