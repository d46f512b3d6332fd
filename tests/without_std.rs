//! The parts of the tree that differ without std, run in both builds (`cargo test
//! --no-default-features` runs them with std off): readers that pin through handles they
//! registered ([`MapleTree::register`]), the writer lock shared by writer threads (a spin lock
//! without std), entry drops the collector runs while a writer holds the lock (postponed per
//! tree without std), and each tree's own collector without std.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use maple_tree::{Collector, MapleTree, Options, Value};

/// Runs `f`, aborting the whole test process if it has not returned after `secs` seconds (a
/// deadlock fails the test instead of hanging it).
fn within<R>(secs: u64, what: &'static str, f: impl FnOnce() -> R) -> R {
    let done = Arc::new(AtomicBool::new(false));
    let d = Arc::clone(&done);
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        while !d.load(Ordering::SeqCst) {
            if start.elapsed() > std::time::Duration::from_secs(secs) {
                eprintln!("{what}: still running after {secs} s (deadlock?): aborting");
                std::process::abort();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    let r = f();
    done.store(true, Ordering::SeqCst);
    r
}

/// Readers registered once each, beside a writer that stores and erases: every load sees either
/// nothing or the value stored at that index, and every guard is a handle's.
#[test]
fn registered_readers_beside_a_writer() {
    let tree = MapleTree::<Value>::new();
    let stop = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let reader = tree.register();
                while !stop.load(Ordering::Acquire) {
                    let guard = reader.pin();
                    for i in (0..2000u64).step_by(37) {
                        if let Some(v) = tree.load(i, &guard) {
                            assert_eq!(v.get(), i % 1000, "a reader saw another index's value");
                        }
                    }
                    // The iterator under a handle's guard: ranges in order, values matching.
                    let mut last = None;
                    for (r, v) in tree.iter(&guard) {
                        assert_eq!(v.get(), *r.start() % 1000);
                        assert!(last.is_none_or(|l| l < *r.start()));
                        last = Some(*r.end());
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for round in 0..20u64 {
            for i in 0..2000u64 {
                if (i + round) % 3 == 0 {
                    tree.erase(i);
                } else {
                    tree.store(i, Value::new(i % 1000)).unwrap();
                }
            }
        }
        stop.store(true, Ordering::Release);
    });
    assert!(reads.load(Ordering::Relaxed) > 0);
    tree.validate().unwrap();
}

/// Two writer threads share the writer lock (std's mutex, or the spin lock without std): every
/// write of both is in the tree at the end, and the tree is whole.
#[test]
fn two_writers_share_the_lock() {
    let tree = MapleTree::<Value>::new();
    within(60, "two writers", || {
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let tree = &tree;
                s.spawn(move || {
                    for i in 0..3000u64 {
                        let at = i * 2 + t;
                        if i % 10 == 0 {
                            // Several writes under one acquisition.
                            let mut w = tree.lock();
                            w.store(at, Value::new(at)).unwrap();
                            w.store(at + 100_000, Value::new(at)).unwrap();
                        } else {
                            tree.store(at, Value::new(at)).unwrap();
                        }
                    }
                });
            }
        })
    });
    tree.validate().unwrap();
    assert_eq!(tree.count(), 6000 + 600);
    for at in 0..6000u64 {
        assert_eq!(tree.get(at), Some(Value::new(at)));
    }
}

type ReTree = MapleTree<Box<Rewrite>>;

/// An entry whose `Drop` writes to its own tree.
struct Rewrite {
    tree: Weak<ReTree>,
    done: Arc<AtomicUsize>,
}

impl Drop for Rewrite {
    fn drop(&mut self) {
        if let Some(t) = self.tree.upgrade() {
            let plain = Box::new(Rewrite {
                tree: Weak::new(),
                done: Arc::clone(&self.done),
            });
            t.store_range(1_000_000..=1_000_009, plain).unwrap();
        }
        self.done.fetch_add(1, Ordering::SeqCst);
    }
}

/// Entry drops whose `Drop` writes to their tree, run by the collector on the writer under its
/// lock and on readers pinned through registered handles: none deadlocks (a drop found under
/// the lock waits until it is let go), every entry is dropped once the tree is.
#[test]
fn drops_that_write_to_their_tree_beside_registered_readers() {
    // A collector of the tree's own (as every tree has without std): it goes with the tree,
    // running what is still deferred, so the count below is exact in both builds.
    let tree: Arc<ReTree> = Arc::new(MapleTree::with_options(
        Options::new().collector(Collector::new()),
    ));
    let done = Arc::new(AtomicUsize::new(0));
    let stop = AtomicBool::new(false);
    let made = AtomicUsize::new(0);
    within(60, "entry drops that write to their tree", || {
        std::thread::scope(|s| {
            s.spawn(|| {
                let reader = tree.register();
                while !stop.load(Ordering::Acquire) {
                    let g = reader.pin();
                    let _ = tree.load(3, &g);
                    drop(g);
                    reader.pin().flush(); // runs deferred drops on this thread
                }
            });
            for round in 0..40u64 {
                let mut w = tree.lock();
                for i in 0..100u64 {
                    let e = Box::new(Rewrite {
                        tree: Arc::downgrade(&tree),
                        done: Arc::clone(&done),
                    });
                    made.fetch_add(1, Ordering::Relaxed);
                    w.store_range(i % 5..=i % 5, e).unwrap();
                }
                // The collector runs under the lock here, on this thread.
                tree.pin().flush();
                drop(w);
                let _ = round;
            }
            stop.store(true, Ordering::Release);
        })
    });
    tree.validate().unwrap();
    let stored = tree.load(1_000_005, &tree.pin()).is_some();
    assert!(stored || done.load(Ordering::SeqCst) == 0);
    // Dropping the tree drops the rest; every entry made (and each plain one its drop made)
    // is dropped exactly once.
    let tree = Arc::into_inner(tree).expect("the last reference");
    drop(tree);
    let made = made.load(Ordering::Relaxed);
    let dropped = done.load(Ordering::SeqCst);
    assert!(
        dropped >= made,
        "{dropped} drops for {made} entries (plus the plain ones their drops stored)"
    );
}

/// Without std each tree has a collector of its own, and a handle of one tree's collector is
/// not a guard for another; with std both are crossbeam's default collector.
#[test]
fn each_tree_its_own_collector_without_std() {
    let a = MapleTree::<Value>::new();
    let b = MapleTree::<Value>::new();
    a.store(1, Value::new(1)).unwrap();
    assert_eq!(*a.collector() == *b.collector(), cfg!(feature = "std"));
    let reader = a.register();
    let guard = reader.pin();
    assert_eq!(a.load(1, &guard), Some(Value::new(1)));
    let wrong = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = b.load(1, &guard);
    }));
    assert_eq!(
        wrong.is_err(),
        !cfg!(feature = "std"),
        "a guard of another collector"
    );
}
