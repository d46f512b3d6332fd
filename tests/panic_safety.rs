//! User code that runs inside the tree's operations: an entry whose `Drop` writes to
//! (or reads) its own tree, an entry whose `Clone` panics during `dup`, an entry whose `Drop`
//! panics while the tree (or part of it) is dropped. Each test counts clones and drops and
//! checks the tree afterwards; the re-entrant ones fail by aborting after a timeout instead of
//! hanging.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_epoch::Collector;
use maple_tree::{MapleTree, Options};

/// Runs `f`, aborting the whole test process if it has not returned after `secs` seconds (a
/// deadlock fails the test instead of hanging it).
fn within<R>(secs: u64, what: &'static str, f: impl FnOnce() -> R) -> R {
    let done = Arc::new(AtomicBool::new(false));
    let d = Arc::clone(&done);
    std::thread::spawn(move || {
        let start = Instant::now();
        while !d.load(Ordering::SeqCst) {
            if start.elapsed() > Duration::from_secs(secs) {
                eprintln!("{what}: still running after {secs} s (deadlock?): aborting");
                std::process::abort();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let r = f();
    done.store(true, Ordering::SeqCst);
    r
}

// ---------------------------------------------------------------------------------------------
// 1. An entry whose `Drop` writes to / reads its own tree.

type ReTree = MapleTree<Box<Reentrant>>;

/// An entry that, when dropped, stores a plain entry into its tree (or only reads it).
struct Reentrant {
    tree: Weak<ReTree>,
    write: bool,
    done: Arc<AtomicUsize>,
}

impl Drop for Reentrant {
    fn drop(&mut self) {
        let Some(t) = self.tree.upgrade() else {
            return;
        };
        if self.write {
            let plain = Box::new(Reentrant {
                tree: Weak::new(),
                write: false,
                done: Arc::clone(&self.done),
            });
            t.store_range(1_000_000..=1_000_009, plain).unwrap();
        } else {
            let g = t.pin();
            let _ = t.load(3, &g).is_some();
            let _ = t.iter(&g).count();
        }
        self.done.fetch_add(1, Ordering::SeqCst);
    }
}

/// Overwrites a few indices many times in RCU mode (each overwrite defers the old entry's drop):
/// the collector runs those drops on the writer's own thread — in its pins (on the default
/// collector every 128th, on a tree with its own collector the first pin of each write) and in
/// the pacing flush — and each drop writes to (or reads) the tree.
fn reentrant_drops(own_collector: bool, write: bool) {
    let collector = Collector::new();
    let opts = if own_collector {
        Options::new().collector(collector.clone())
    } else {
        Options::new()
    };
    let tree: Arc<ReTree> = Arc::new(MapleTree::with_options(opts));
    let done = Arc::new(AtomicUsize::new(0));
    let mk = |t: &Arc<ReTree>| {
        Box::new(Reentrant {
            tree: Arc::downgrade(t),
            write,
            done: Arc::clone(&done),
        })
    };
    within(60, "an entry's Drop that uses its own tree", || {
        for i in 0..20_000u64 {
            tree.store_range(i % 7 * 10..=i % 7 * 10 + 3, mk(&tree))
                .unwrap();
            if i % 1000 == 0 {
                tree.validate().unwrap();
            }
        }
        // Hand what is still queued to the collector and let it run (on the default
        // collector, other tests' threads may hold the epoch back for a while).
        let start = Instant::now();
        while done.load(Ordering::SeqCst) == 0 && start.elapsed() < Duration::from_secs(20) {
            let _ = tree.pending_frees();
            tree.pin().flush();
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    assert!(
        done.load(Ordering::SeqCst) > 0,
        "some deferred drops ran (and used the tree)"
    );
    tree.validate().unwrap();
    if write {
        let g = tree.pin();
        assert!(tree.load(1_000_005, &g).is_some());
    }
}

#[test]
fn a_drop_that_writes_to_its_own_tree_finishes_default_collector() {
    reentrant_drops(false, true);
}

#[test]
fn a_drop_that_writes_to_its_own_tree_finishes_own_collector() {
    reentrant_drops(true, true);
}

#[test]
fn a_drop_that_reads_its_own_tree_works() {
    reentrant_drops(false, false);
    reentrant_drops(true, false);
}

/// A writer that holds the lock through `tree.lock()` for many writes: drops that the
/// collector runs meanwhile wait until the guard is gone, then write.
#[test]
fn a_drop_that_writes_to_its_own_tree_waits_for_the_write_guard() {
    let tree: Arc<ReTree> = Arc::new(MapleTree::with_options(
        Options::new().collector(Collector::new()),
    ));
    let done = Arc::new(AtomicUsize::new(0));
    within(60, "an entry's Drop under tree.lock()", || {
        for round in 0..50u64 {
            let mut w = tree.lock();
            for i in 0..200u64 {
                let e = Box::new(Reentrant {
                    tree: Arc::downgrade(&tree),
                    write: true,
                    done: Arc::clone(&done),
                });
                w.store_range(i % 5..=i % 5, e).unwrap();
            }
            w.validate().unwrap();
            drop(w);
            let _ = round;
        }
        let _ = tree.pending_frees();
        tree.pin().flush();
    });
    assert!(done.load(Ordering::SeqCst) > 0);
    tree.validate().unwrap();
}

// ---------------------------------------------------------------------------------------------
// 2. Panics in an entry's `Clone` (during `dup`) and `Drop` (dropping the tree, clearing it).

#[derive(Default)]
struct Counts {
    clones: AtomicUsize,
    clone_drops: AtomicUsize,
    original_drops: AtomicUsize,
}

struct Tracked {
    id: u64,
    clone: bool,
    /// Clone number (1-based, counted over all clones) that panics.
    panic_on_clone: usize,
    panic_on_drop: bool,
    c: Arc<Counts>,
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        let k = self.c.clones.load(Ordering::SeqCst) + 1;
        if k == self.panic_on_clone {
            panic!("clone #{k} panics");
        }
        self.c.clones.store(k, Ordering::SeqCst);
        Tracked {
            id: self.id,
            clone: true,
            panic_on_clone: self.panic_on_clone,
            panic_on_drop: self.panic_on_drop,
            c: Arc::clone(&self.c),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if self.clone {
            self.c.clone_drops.fetch_add(1, Ordering::SeqCst);
        } else {
            self.c.original_drops.fetch_add(1, Ordering::SeqCst);
        }
        if self.panic_on_drop {
            panic!("entry {} panics in Drop", self.id);
        }
    }
}

fn tracked_tree(
    n: u64,
    panic_on_clone: usize,
    panic_drop: Option<u64>,
    c: &Arc<Counts>,
    collector: &Collector,
) -> MapleTree<Box<Tracked>> {
    let mut tree = MapleTree::with_options(Options::new().collector(collector.clone()));
    {
        let mut w = tree.exclusive();
        for i in 0..n {
            let e = Box::new(Tracked {
                id: i,
                clone: false,
                panic_on_clone,
                panic_on_drop: panic_drop == Some(i),
                c: Arc::clone(c),
            });
            w.store_range(i * 10..=i * 10 + 5, e).unwrap();
        }
    }
    tree
}

#[test]
fn dup_frees_its_partial_copy_when_a_clone_panics() {
    for k in [1usize, 2, 17, 150, 300] {
        let c = Arc::new(Counts::default());
        let collector = Collector::new();
        let tree = tracked_tree(300, k, None, &c, &collector);
        let r = catch_unwind(AssertUnwindSafe(|| tree.dup()));
        assert!(r.is_err(), "clone #{k} panicked");
        assert_eq!(
            c.clones.load(Ordering::SeqCst),
            k - 1,
            "clones made before #{k}"
        );
        assert_eq!(
            c.clone_drops.load(Ordering::SeqCst),
            k - 1,
            "every clone made before the panic (#{k}) is dropped once"
        );
        assert_eq!(c.original_drops.load(Ordering::SeqCst), 0);
        tree.validate().unwrap();
        assert_eq!(tree.len(), 300);
        let g = tree.pin();
        assert_eq!(tree.iter(&g).count(), 300);
        drop(g);
        // The source still dups (its lock was released while unwinding).
        drop(catch_unwind(AssertUnwindSafe(|| tree.dup())));
        drop(tree);
        drop(collector);
        assert_eq!(c.original_drops.load(Ordering::SeqCst), 300);
    }
}

#[test]
fn dropping_the_tree_drops_every_entry_when_one_drop_panics() {
    let c = Arc::new(Counts::default());
    let collector = Collector::new();
    let tree = tracked_tree(300, 0, Some(50), &c, &collector);
    let r = catch_unwind(AssertUnwindSafe(move || drop(tree)));
    assert!(r.is_err(), "the panic of entry 50's Drop propagates");
    assert_eq!(
        c.original_drops.load(Ordering::SeqCst),
        300,
        "the 299 other entries are dropped too, each once (and entry 50 once)"
    );
    drop(collector);
    assert_eq!(c.original_drops.load(Ordering::SeqCst), 300);
}

#[test]
fn dropping_the_tree_drops_every_entry_when_several_drops_panic() {
    // A tree of several levels; the entries of three leaves panic: the first panic propagates,
    // the others are contained, every entry is dropped once.
    let c = Arc::new(Counts::default());
    let mut tree = MapleTree::<Box<Tracked>>::new();
    {
        let mut w = tree.exclusive();
        for i in 0..3000u64 {
            let e = Box::new(Tracked {
                id: i,
                clone: false,
                panic_on_clone: 0,
                panic_on_drop: [7, 1500, 2999].contains(&i),
                c: Arc::clone(&c),
            });
            w.store_range(i * 3..=i * 3 + 1, e).unwrap();
        }
    }
    assert!(tree.height() >= 3);
    let r = catch_unwind(AssertUnwindSafe(move || drop(tree)));
    assert!(r.is_err());
    assert_eq!(c.original_drops.load(Ordering::SeqCst), 3000);
}

/// Exclusive-mode `clear` and `erase_range` over many entries, one of which panics in `Drop`:
/// the panic propagates, the others are dropped once, the tree is valid and empty there.
#[test]
fn exclusive_clear_and_erase_range_with_a_panicking_drop() {
    for clear in [false, true] {
        let c = Arc::new(Counts::default());
        let collector = Collector::new();
        let mut tree = tracked_tree(300, 0, Some(120), &c, &collector);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut w = tree.exclusive();
            if clear {
                w.clear();
            } else {
                w.erase_range(500..=2500).unwrap();
            }
        }));
        assert!(r.is_err(), "entry 120's panic propagates");
        tree.validate().unwrap();
        let (gone, left) = if clear { (300, 0) } else { (200, 100) };
        assert_eq!(c.original_drops.load(Ordering::SeqCst), gone);
        assert_eq!(tree.len(), left);
        let g = tree.pin();
        assert_eq!(tree.iter(&g).count(), left);
        assert!(tree.load(1200, &g).is_none());
        drop(g);
        drop(tree);
        drop(collector);
        assert_eq!(c.original_drops.load(Ordering::SeqCst), 300);
    }
}
