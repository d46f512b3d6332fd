//! Corners of the safe API that must stay sound: guards from the wrong collector are refused in
//! every profile, and an entry whose `Drop` panics leaves the tree whole, with every entry
//! dropped exactly once, in both write modes.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use maple_tree::{MapleTree, Options};

/// An entry that counts its drops and panics in `Drop` when asked to.
struct Bomb {
    id: u64,
    panics: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.panics {
            panic!("entry {} panics in Drop", self.id);
        }
    }
}

fn bomb(id: u64, panics: bool, drops: &Arc<AtomicUsize>) -> Box<Bomb> {
    Box::new(Bomb {
        id,
        panics,
        drops: Arc::clone(drops),
    })
}

#[test]
#[should_panic(expected = "not pinned on this tree's collector")]
fn a_guard_of_another_collector_is_refused() {
    let tree = MapleTree::<maple_tree::Value>::with_options(
        Options::new().collector(crossbeam_epoch::Collector::new()),
    );
    tree.store(1, maple_tree::Value::new(1)).unwrap();
    let foreign = crossbeam_epoch::pin(); // the default collector, not the tree's
    let _ = tree.load(1, &foreign);
}

#[test]
#[should_panic(expected = "not pinned on this tree's collector")]
fn the_unprotected_guard_is_refused() {
    let tree = MapleTree::<maple_tree::Value>::new();
    tree.store(1, maple_tree::Value::new(1)).unwrap();
    // SAFETY: the test only hands the guard to a read that must refuse it.
    let g = unsafe { crossbeam_epoch::unprotected() };
    let _ = tree.load(1, g);
}

/// The entries whose `Drop` panics: one inside each write below.
const PANICKY: [u64; 4] = [0, 50, 120, 150];

/// Overwrites, erases and splits entries whose `Drop` panics; after each caught panic the tree
/// validates, reads back what the write stored, and at the end every entry was dropped once.
fn panicking_drops(exclusive: bool, alloc: bool) {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut made = 0usize;
    let collector = crossbeam_epoch::Collector::new();
    let mut tree = MapleTree::<Box<Bomb>>::with_options(
        Options::new().alloc(alloc).collector(collector.clone()),
    );
    let mut mk = |id: u64, panics: bool| {
        made += 1;
        bomb(id, panics, &drops)
    };
    for i in 0..200u64 {
        tree.store_range(i * 10..=i * 10 + 5, mk(i, PANICKY.contains(&i)))
            .unwrap();
    }
    // Each write replaces (and so drops) exactly one panicking entry (two panics at once abort,
    // as for any Rust value).
    type Write = Box<dyn Fn(&mut MapleTree<Box<Bomb>>, Box<Bomb>, bool)>;
    let writes: Vec<(u64, Write)> = vec![
        // exact fit of [0, 5]
        (0, Box::new(|t, b, x| store(t, 0, 5, b, x))),
        // spanning store over many entries
        (300, Box::new(|t, b, x| store(t, 295, 905, b, x))),
        // a slot store (exclusive) or node store: [1200, 1205] replaced, [1210, 1215] trimmed
        (1200, Box::new(|t, b, x| store(t, 1198, 1212, b, x))),
    ];
    for (probe, w) in &writes {
        let b = mk(10_000 + probe, false);
        let r = catch_unwind(AssertUnwindSafe(|| w(&mut tree, b, exclusive)));
        if exclusive {
            assert!(
                r.is_err(),
                "the panicking entry replaced at {probe} was dropped at once"
            );
        }
        tree.validate().unwrap();
        let g = tree.pin();
        assert_eq!(tree.load(*probe, &g).map(|b| b.id), Some(10_000 + probe));
        drop(g);
    }
    // Erase with a panicking entry.
    let r = catch_unwind(AssertUnwindSafe(|| {
        if exclusive {
            tree.exclusive().erase(1500);
        } else {
            tree.erase(1500);
        }
    }));
    if exclusive {
        assert!(r.is_err());
    }
    tree.validate().unwrap();
    assert!(tree.get_ref_is_none(1500));
    // Everything left goes with the tree; deferred (RCU-mode) drops run when the collector goes.
    drop(catch_unwind(AssertUnwindSafe(move || drop(tree))));
    drop(catch_unwind(AssertUnwindSafe(move || drop(collector))));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        made,
        "every entry dropped exactly once"
    );
}

fn store(t: &mut MapleTree<Box<Bomb>>, a: u64, b: u64, e: Box<Bomb>, exclusive: bool) {
    if exclusive {
        t.exclusive().store_range(a..=b, e).unwrap();
    } else {
        t.store_range(a..=b, e).unwrap();
    }
}

trait Probe {
    fn get_ref_is_none(&self, i: u64) -> bool;
}
impl Probe for MapleTree<Box<Bomb>> {
    fn get_ref_is_none(&self, i: u64) -> bool {
        let g = self.pin();
        self.load(i, &g).is_none()
    }
}

#[test]
fn panicking_drops_exclusive_range_tree() {
    panicking_drops(true, false);
}

#[test]
fn panicking_drops_exclusive_alloc_tree() {
    panicking_drops(true, true);
}

#[test]
#[cfg(feature = "std")] // the collector catches the panic only with std
fn panicking_drops_rcu_range_tree() {
    panicking_drops(false, false);
}

#[test]
#[cfg(feature = "std")] // the collector catches the panic only with std
fn panicking_drops_rcu_alloc_tree() {
    panicking_drops(false, true);
}

#[test]
fn store_prealloc_without_preallocate_is_a_typed_error() {
    use maple_tree::{Error, Value};
    let tree = MapleTree::<Value>::new();
    tree.store_range(10..=20, Value::new(1)).unwrap();
    let mut w = tree.lock();
    let mut c = w.cursor(12);
    c.walk();
    // Never preallocated.
    assert_eq!(c.store_prealloc(Value::new(2)), Err(Error::NotPreallocated));
    // Preallocated, then used once: a second store needs a second preallocate.
    c.preallocate().unwrap();
    assert_eq!(c.store_prealloc(Value::new(3)), Ok(()));
    assert_eq!(c.store_prealloc(Value::new(4)), Err(Error::NotPreallocated));
    drop(w);
    let g = tree.pin();
    assert_eq!(
        tree.load_range(15, &g)
            .map(|(r, v)| (*r.start(), *r.end(), v.get())),
        Some((10, 20, 3))
    );
    drop(g);
    tree.validate().unwrap();
}

#[test]
fn store_prealloc_drops_a_refused_entry_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let tree = MapleTree::<Box<Bomb>>::new();
    {
        let mut w = tree.lock();
        let mut c = w.cursor(5);
        assert!(c.store_prealloc(bomb(1, false, &drops)).is_err());
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(tree.is_empty());
}

/// A tree dropped while the frees of the nodes and entries it retired in RCU mode are still held
/// back by a pinned guard: the drop gives the tree's node memory back at once (`&mut` outlives
/// every reader of the tree), and the deferred frees that run afterwards neither touch that
/// memory nor drop an entry twice (a sanitizer run, `scripts/sanitizers.sh asan`, sees every
/// node as its own allocation; here, the drop counts and the collector's later frees).
#[test]
fn a_tree_dropped_with_frees_pending() {
    let collector = crossbeam_epoch::Collector::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut made = 0;
    let tree = MapleTree::<Box<Bomb>>::with_options(Options::new().collector(collector.clone()));
    // A guard of the tree's collector that is not borrowed from the tree (`tree.pin()`'s guard
    // cannot outlive it); `collector` keeps the collector alive past the guard.
    let held = collector.register().pin();
    for i in 0..2_000u64 {
        tree.store_range(10 * i..=10 * i + 5, bomb(i, false, &drops))
            .unwrap();
        made += 1;
    }
    // Replace every second entry and erase a run: nodes and entries retired under `held`.
    for i in (0..2_000u64).step_by(2) {
        tree.store_range(10 * i..=10 * i + 5, bomb(i, false, &drops))
            .unwrap();
        made += 1;
    }
    for i in 500..900u64 {
        tree.erase(10 * i);
    }
    let pending = tree.pending_frees();
    assert!(pending.nodes > 0 && pending.entries > 0, "{pending:?}");
    // `held` was pinned before every retirement: nothing released is dropped yet.
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(tree);
    // The 1,600 entries still in the tree are dropped with it; the 1,400 released wait.
    assert_eq!(drops.load(Ordering::SeqCst), 1_600);
    drop(held);
    let handle = collector.register();
    for _ in 0..256 {
        handle.pin().flush();
    }
    assert_eq!(drops.load(Ordering::SeqCst), made);
}
