//! The std conveniences: `get_range`, `Clone`, the owned `IntoIterator`, `retain`,
//! `drain`, `split_off`, `IntoIterator for &WriteGuard`, `From<ValidateError> for Error` and
//! `reclaim`. Entries count their own drops (and clones): after every test that drops or moves
//! entries, the live count is what the tree and the test still hold, and zero once both are
//! gone (no leak, no double drop). Ranges holding one entry shared by a split (a store strictly
//! inside a range) are exercised explicitly and by a randomized model check.

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use maple_tree::{Collector, Error, MapleTree, Options, Value};

/// Live values of one test (made or cloned, minus dropped).
#[derive(Clone, Default)]
struct Live(Arc<AtomicIsize>);

impl Live {
    fn get(&self) -> isize {
        self.0.load(Ordering::SeqCst)
    }
    fn make(&self, id: u64) -> Box<Counted> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::new(Counted {
            id,
            live: self.clone(),
        })
    }
}

/// An entry that counts itself in its test's [`Live`].
struct Counted {
    id: u64,
    live: Live,
}

impl Clone for Counted {
    fn clone(&self) -> Self {
        self.live.0.fetch_add(1, Ordering::SeqCst);
        Counted {
            id: self.id,
            live: self.live.clone(),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let before = self.live.0.fetch_sub(1, Ordering::SeqCst);
        assert!(before > 0, "dropped more values than were made");
    }
}

type Tree = MapleTree<Box<Counted>>;

/// `[(range, id)]` of the tree in index order.
fn contents(tree: &Tree) -> Vec<(RangeInclusive<u64>, u64)> {
    let guard = tree.pin();
    tree.iter(&guard).map(|(r, e)| (r, e.id)).collect()
}

fn ids(v: &[(RangeInclusive<u64>, Box<Counted>)]) -> Vec<(RangeInclusive<u64>, u64)> {
    v.iter().map(|(r, e)| (r.clone(), e.id)).collect()
}

/// `[0, 9] = 1`, then `[3, 4] = 2` splits it: entry 1 is shared by `[0, 2]` and `[5, 9]`;
/// then `[20, 29] = 3`. Built in exclusive mode, so that every drop is immediate.
fn shared_tree(live: &Live) -> Tree {
    let mut tree = Tree::new();
    let mut w = tree.exclusive();
    w.store_range(0..=9, live.make(1)).unwrap();
    w.store_range(3..=4, live.make(2)).unwrap();
    w.store_range(20..=29, live.make(3)).unwrap();
    drop(w);
    assert_eq!(
        contents(&tree),
        [(0..=2, 1), (3..=4, 2), (5..=9, 1), (20..=29, 3)]
    );
    assert_eq!(live.get(), 3);
    tree
}

// ----- get_range ----------------------------------------------------------------------------

#[test]
fn get_range_gives_the_range_and_a_clone() {
    let tree = MapleTree::<Arc<String>>::new();
    let name = Arc::new("libc".to_string());
    tree.store_range(0x1000..=0x1fff, Arc::clone(&name))
        .unwrap();
    let (range, got) = tree.get_range(0x1800).unwrap();
    assert_eq!(range, 0x1000..=0x1fff);
    assert!(Arc::ptr_eq(&got, &name));
    assert_eq!(Arc::strong_count(&name), 3);
    drop(got);
    assert_eq!(tree.get_range(0xfff), None);
    assert_eq!(tree.get_range(0x2000), None);
    // The zero entry reads as nothing.
    tree.lock().store_zero_range(0x3000..=0x3fff).unwrap();
    assert_eq!(tree.get_range(0x3000), None);
    assert_eq!(
        tree.get_range(0x1fff).map(|(r, _)| r),
        Some(0x1000..=0x1fff)
    );
}

// ----- Clone --------------------------------------------------------------------------------

#[test]
fn clone_copies_entries_and_options() {
    let live = Live::default();
    {
        let tree = shared_tree(&live);
        let copy = tree.clone();
        assert_eq!(contents(&copy), contents(&tree));
        // One clone per range (the shared entry is cloned for each of its two ranges).
        assert_eq!(live.get(), 3 + 4);
        copy.validate().unwrap();
        assert!(!copy.is_alloc());
        drop(tree);
        assert_eq!(live.get(), 4);
        assert_eq!(copy.len(), 4);
    }
    assert_eq!(live.get(), 0);

    let alloc = MapleTree::<Value>::new_alloc();
    alloc.store_range(0..=9, Value::new(1)).unwrap();
    let copy = alloc.clone();
    assert!(copy.is_alloc());
    assert_eq!(copy.alloc_range(0..=100, 5, Value::new(2)), Ok(10..=14));
    copy.validate().unwrap();

    let collector = Collector::new();
    let own = MapleTree::<Value>::with_options(Options::new().collector(collector.clone()));
    own.store(7, Value::new(7)).unwrap();
    let copy = own.clone();
    assert_eq!(copy.collector(), &collector);
    assert_eq!(copy.get(7), Some(Value::new(7)));
}

// ----- owned IntoIterator -------------------------------------------------------------------

#[test]
fn into_iter_yields_each_entry_once_in_order() {
    let live = Live::default();
    let mut tree = shared_tree(&live);
    tree.exclusive().store_zero_range(40..=49).unwrap();
    tree.exclusive().store_range(50..=59, live.make(4)).unwrap();
    let all: Vec<_> = tree.into_iter().collect();
    // The shared entry 1 comes once, with its first range; the zero entry is skipped.
    assert_eq!(
        ids(&all),
        [(0..=2, 1), (3..=4, 2), (20..=29, 3), (50..=59, 4)]
    );
    assert_eq!(live.get(), 4);
    drop(all);
    assert_eq!(live.get(), 0);
}

#[test]
fn into_iter_from_the_back_and_dropped_early() {
    let live = Live::default();
    let tree = shared_tree(&live);
    let mut it = tree.into_iter();
    let (r, e) = it.next_back().unwrap();
    assert_eq!((r, e.id), (20..=29, 3));
    drop(e);
    let (r, e) = it.next_back().unwrap();
    assert_eq!((r, e.id), (5..=9, 1));
    assert_eq!(live.get(), 2); // entry 1 (held by us) and entry 2 (still in the tree)
    drop(it); // drops entry 2
    assert_eq!(live.get(), 1);
    drop(e);
    assert_eq!(live.get(), 0);

    let tree = shared_tree(&live);
    let mut it = tree.into_iter();
    assert_eq!(it.next().map(|(r, e)| (r, e.id)), Some((0..=2, 1)));
    drop(it);
    assert_eq!(live.get(), 0);

    let empty = Tree::new();
    assert_eq!(empty.into_iter().count(), 0);
}

#[test]
fn into_iter_of_values_and_a_big_tree() {
    let tree: MapleTree<Value> = (0..1000u64)
        .map(|i| (i * 4..=i * 4 + 2, Value::new(i)))
        .collect();
    let mut n = 0;
    for (i, (r, v)) in tree.into_iter().enumerate() {
        let i = i as u64;
        assert_eq!((r, v), (i * 4..=i * 4 + 2, Value::new(i)));
        n += 1;
    }
    assert_eq!(n, 1000);
}

// ----- retain -------------------------------------------------------------------------------

#[test]
fn retain_keeps_what_f_accepts() {
    let live = Live::default();
    let mut tree = shared_tree(&live);
    let mut seen = Vec::new();
    tree.retain(|r, e| {
        seen.push((r.clone(), e.id));
        e.id != 3
    });
    assert_eq!(seen, [(0..=2, 1), (3..=4, 2), (5..=9, 1), (20..=29, 3)]);
    assert_eq!(contents(&tree), [(0..=2, 1), (3..=4, 2), (5..=9, 1)]);
    assert_eq!(live.get(), 2);
    // One range of the shared entry goes: the entry stays for the other one.
    tree.retain(|r, _| *r.start() != 5);
    assert_eq!(contents(&tree), [(0..=2, 1), (3..=4, 2)]);
    assert_eq!(live.get(), 2);
    tree.validate().unwrap();
    tree.retain(|_, e| e.id != 1);
    assert_eq!(contents(&tree), [(3..=4, 2)]);
    assert_eq!(live.get(), 1);
    assert_eq!(tree.len(), 1);
    drop(tree);
    assert_eq!(live.get(), 0);

    // Both ranges of a shared entry go: it is dropped once.
    let mut tree = shared_tree(&live);
    tree.retain(|_, e| e.id == 2);
    assert_eq!(contents(&tree), [(3..=4, 2)]);
    assert_eq!(live.get(), 1);
    tree.validate().unwrap();
    drop(tree);
    assert_eq!(live.get(), 0);
}

#[test]
fn retain_keeps_zero_entries_and_survives_a_panic() {
    let mut tree = MapleTree::<Value>::new();
    tree.store_range(0..=9, Value::new(1)).unwrap();
    tree.lock().store_zero_range(10..=19).unwrap();
    tree.retain(|_, _| false);
    assert_eq!(tree.len(), 1); // the zero entry
    assert_eq!(tree.insert(15, Value::new(2)), Err(Error::Occupied));

    let live = Live::default();
    let mut tree = shared_tree(&live);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tree.retain(|_, e| if e.id == 3 { panic!("f panics") } else { false })
    }));
    assert!(r.is_err());
    assert_eq!(
        contents(&tree),
        [(0..=2, 1), (3..=4, 2), (5..=9, 1), (20..=29, 3)]
    );
    drop(tree);
    assert_eq!(live.get(), 0);
}

// ----- drain --------------------------------------------------------------------------------

#[test]
fn drain_trims_and_moves_or_clones() {
    let live = Live::default();
    let mut tree = shared_tree(&live);
    // [4, 25]: [3, 4] sticks out (clone), [5, 9] is inside but shares entry 1 with [0, 2]
    // (clone), [20, 29] sticks out (clone).
    let got = tree.drain(4..=25).unwrap();
    assert_eq!(ids(&got), [(4..=4, 2), (5..=9, 1), (20..=25, 3)]);
    assert_eq!(contents(&tree), [(0..=2, 1), (3..=3, 2), (26..=29, 3)]);
    assert_eq!(live.get(), 3 + 3);
    tree.validate().unwrap();
    drop(got);
    assert_eq!(live.get(), 3);
    // Inside and unshared: moved, not cloned.
    let got = tree.drain(26..).unwrap();
    assert_eq!(ids(&got), [(26..=29, 3)]);
    assert_eq!(live.get(), 3);
    drop(got);
    assert_eq!(live.get(), 2);
    // A window with nothing in it.
    assert!(tree.drain(100..200).unwrap().is_empty());
    // Everything; the last range of entry 1 goes, so it is moved.
    let got = tree.drain(..).unwrap();
    assert_eq!(ids(&got), [(0..=2, 1), (3..=3, 2)]);
    assert!(tree.is_empty());
    assert_eq!(live.get(), 2);
    drop(got);
    assert_eq!(live.get(), 0);
}

#[test]
fn drain_of_a_whole_shared_entry_drops_the_tree_copy() {
    let live = Live::default();
    let mut tree = shared_tree(&live);
    let got = tree.drain(0..=9).unwrap();
    // Entry 1's two ranges come as clones; the tree's copy is dropped by the erase.
    assert_eq!(ids(&got), [(0..=2, 1), (3..=4, 2), (5..=9, 1)]);
    assert_eq!(live.get(), 1 + 3);
    assert_eq!(contents(&tree), [(20..=29, 3)]);
    assert_eq!(tree.len(), 1);
    tree.validate().unwrap();
    drop(tree);
    drop(got);
    assert_eq!(live.get(), 0);
}

#[test]
fn drain_errors_and_zero_entries() {
    let mut tree = MapleTree::<Value>::new();
    tree.store_range(0..=9, Value::new(1)).unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    let bad = 9..=3;
    assert_eq!(tree.drain(bad), Err(Error::InvalidRange));
    assert_eq!(tree.drain(5..5), Err(Error::InvalidRange));
    assert_eq!(tree.len(), 1);
    tree.lock().store_zero_range(10..=19).unwrap();
    let got = tree.drain(5..=15).unwrap();
    assert_eq!(got, [(5..=9, Value::new(1))]);
    // The zero entry's part inside the window is erased too.
    assert_eq!(tree.insert(12, Value::new(2)), Ok(()));
    assert_eq!(tree.insert(16, Value::new(2)), Err(Error::Occupied));
    tree.validate().unwrap();
}

// ----- split_off ----------------------------------------------------------------------------

#[test]
fn split_off_moves_the_tail() {
    let live = Live::default();
    let mut tree = shared_tree(&live);
    let high = tree.split_off(7);
    assert_eq!(contents(&tree), [(0..=2, 1), (3..=4, 2), (5..=6, 1)]);
    assert_eq!(contents(&high), [(7..=9, 1), (20..=29, 3)]);
    // Entry 1 straddled: cloned for the high side; entry 3 moved.
    assert_eq!(live.get(), 4);
    tree.validate().unwrap();
    high.validate().unwrap();
    assert_eq!(tree.len(), 3);
    assert_eq!(high.len(), 2);
    drop(high);
    assert_eq!(live.get(), 2);
    drop(tree);
    assert_eq!(live.get(), 0);
}

#[test]
fn split_off_edges_and_options() {
    let live = Live::default();
    // At 0: everything moves.
    let mut tree = shared_tree(&live);
    let high = tree.split_off(0);
    assert!(tree.is_empty());
    assert_eq!(contents(&high).len(), 4);
    assert_eq!(live.get(), 3);
    // At u64::MAX: only a range reaching it.
    tree.exclusive().store_range(100.., live.make(9)).unwrap();
    let top = tree.split_off(u64::MAX);
    assert_eq!(contents(&tree), [(100..=u64::MAX - 1, 9)]);
    assert_eq!(contents(&top), [(u64::MAX..=u64::MAX, 9)]);
    assert_eq!(live.get(), 5);
    drop((tree, top, high));
    assert_eq!(live.get(), 0);

    // Same kind and collector; zero entries move.
    let collector = Collector::new();
    let mut tree =
        MapleTree::<Value>::with_options(Options::new().alloc(true).collector(collector.clone()));
    tree.store_range(0..=9, Value::new(1)).unwrap();
    tree.lock().store_zero_range(10..=19).unwrap();
    tree.store_range(20..=29, Value::new(3)).unwrap();
    let high = tree.split_off(15);
    assert!(high.is_alloc());
    assert_eq!(high.collector(), &collector);
    assert_eq!(tree.len(), 2);
    assert_eq!(high.len(), 2);
    assert_eq!(high.insert(17, Value::new(5)), Err(Error::Occupied));
    assert_eq!(tree.insert(12, Value::new(5)), Err(Error::Occupied));
    assert_eq!(high.alloc_range(0..=100, 5, Value::new(6)), Ok(0..=4));
    tree.validate().unwrap();
    high.validate().unwrap();

    let mut plain = MapleTree::<Value>::new();
    assert!(!plain.split_off(5).is_alloc());
}

// ----- a randomized check of retain, drain and split_off against a per-index model ------------

/// A per-index model of `[0, N)`: the id held at each index.
const N: usize = 160;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn expand(items: &[(RangeInclusive<u64>, u64)]) -> Vec<Option<u64>> {
    let mut v = vec![None; N];
    for (r, id) in items {
        for i in r.clone() {
            if (i as usize) < N {
                v[i as usize] = Some(*id);
            }
        }
    }
    v
}

#[test]
fn retain_drain_split_off_against_a_model() {
    let live = Live::default();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..300 {
        let mut tree = Tree::new();
        let mut model = vec![None; N];
        for next_id in 0..(5 + rng.below(40)) {
            let a = rng.below(N as u64);
            let b = (a + rng.below(30)).min(N as u64 - 1);
            tree.exclusive()
                .store_range(a..=b, live.make(next_id))
                .unwrap();
            for m in &mut model[a as usize..=b as usize] {
                *m = Some(next_id);
            }
        }
        assert_eq!(expand(&contents(&tree)), model, "round {round}");
        if round % 4 == 3 {
            // The owned iterator: every id once, each with one of its ranges, in index order.
            let mut seen = std::collections::BTreeSet::new();
            let mut prev_end = None;
            for (r, e) in tree.into_iter() {
                assert!(
                    seen.insert(e.id),
                    "round {round}: id {} yielded twice",
                    e.id
                );
                assert!(
                    prev_end.is_none_or(|p| p < *r.start()),
                    "round {round}: order"
                );
                prev_end = Some(*r.end());
                for i in r {
                    assert_eq!(model[i as usize], Some(e.id), "round {round} index {i}");
                }
            }
            let ids: std::collections::BTreeSet<u64> = model.iter().flatten().copied().collect();
            assert_eq!(seen, ids, "round {round}");
            assert_eq!(live.get(), 0, "round {round}");
            continue;
        }
        match round % 3 {
            0 => {
                let a = rng.below(N as u64);
                let b = (a + rng.below(60)).min(N as u64 - 1);
                let got = tree.drain(a..=b).unwrap();
                let mut drained = vec![None; N];
                for (r, e) in &got {
                    assert!(*r.start() >= a && *r.end() <= b);
                    for i in r.clone() {
                        assert_eq!(drained[i as usize], None, "index {i} drained twice");
                        drained[i as usize] = Some(e.id);
                    }
                }
                for i in a as usize..=b as usize {
                    assert_eq!(drained[i], model[i], "round {round} index {i}");
                    model[i] = None;
                }
            }
            1 => {
                let odd = rng.below(2);
                tree.retain(|_, e| e.id % 2 != odd);
                for m in &mut model {
                    if m.is_some_and(|id| id % 2 == odd) {
                        *m = None;
                    }
                }
            }
            _ => {
                let at = rng.below(N as u64 + 10);
                let high = tree.split_off(at);
                high.validate().unwrap();
                let h = expand(&contents(&high));
                for i in 0..N {
                    let want = if (i as u64) >= at { model[i] } else { None };
                    assert_eq!(h[i], want, "round {round} index {i}");
                    if (i as u64) >= at {
                        model[i] = None;
                    }
                }
            }
        }
        tree.validate().unwrap();
        assert_eq!(expand(&contents(&tree)), model, "round {round}");
        // No entry leaked or dropped twice once the tree is gone.
        drop(tree);
        assert_eq!(live.get(), 0, "round {round}");
    }
}

// ----- IntoIterator for &WriteGuard, From<ValidateError> -----------------------------------

#[test]
fn write_guard_ref_iterates() {
    let tree = MapleTree::<Value>::new();
    let mut w = tree.lock();
    w.store_range(0..=9, Value::new(1)).unwrap();
    w.store_range(20..=29, Value::new(2)).unwrap();
    let mut seen = Vec::new();
    for (r, v) in &w {
        seen.push((*r.start(), *r.end(), v.get()));
    }
    assert_eq!(seen, [(0, 9, 1), (20, 29, 2)]);
    drop(w);
    let mut x = MapleTree::<Value>::new();
    let mut w = x.exclusive();
    w.store_range(3..=3, Value::new(3)).unwrap();
    assert_eq!((&w).into_iter().count(), 1);
}

#[test]
fn validate_error_converts() {
    fn check(tree: &MapleTree<Value>) -> Result<(), Error> {
        tree.validate()?;
        Ok(())
    }
    let tree = MapleTree::new();
    tree.store(1, Value::new(1)).unwrap();
    assert_eq!(check(&tree), Ok(()));
    assert_eq!(Error::Invalid.errno(), -22);
    assert!(!Error::Invalid.to_string().is_empty());
}

// ----- reclaim ------------------------------------------------------------------------------

#[cfg(target_os = "linux")]
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4
}

/// `reclaim` on a tree with its own collector (so that other tests' guards on the default
/// collector cannot hold its frees back).
#[test]
fn reclaim_frees_what_no_guard_holds() {
    let tree = MapleTree::<Box<[u64; 8]>>::with_options(Options::new().collector(Collector::new()));
    #[cfg(target_os = "linux")]
    let before = rss_kib();
    for i in 0..10_000u64 {
        tree.store_range(0..=(i % 100), Box::new([i; 8])).unwrap();
    }
    #[cfg(target_os = "linux")]
    let written = rss_kib();
    let left = tree.reclaim();
    assert_eq!((left.nodes, left.entries), (0, 0), "{left:?}");
    let p = tree.pending_frees();
    assert_eq!((p.nodes, p.entries), (0, 0), "{p:?}");
    #[cfg(target_os = "linux")]
    println!(
        "RSS: {before} KiB before, {written} KiB after 10,000 overwrites, {} KiB after reclaim",
        rss_kib()
    );

    // With a guard alive, what was retired after it was pinned stays.
    let guard = tree.pin();
    for i in 0..10_000u64 {
        tree.store_range(0..=(i % 100), Box::new([i; 8])).unwrap();
    }
    let held = tree.reclaim();
    assert!(held.entries > 0, "{held:?}");
    assert!(tree.pending_frees().entries > 0);
    #[cfg(target_os = "linux")]
    let with_guard = rss_kib();
    drop(guard);
    let left = tree.reclaim();
    assert_eq!((left.nodes, left.entries), (0, 0), "{left:?}");
    #[cfg(target_os = "linux")]
    println!(
        "RSS: {with_guard} KiB with a guard held across 10,000 overwrites, {} KiB after it \
         dropped and reclaim",
        rss_kib()
    );
}

/// The same on the default collector, with no guard of this thread alive.
#[test]
fn reclaim_on_the_default_collector() {
    let tree = MapleTree::<Box<u64>>::new();
    for i in 0..10_000u64 {
        tree.store_range(0..=(i % 50), Box::new(i)).unwrap();
    }
    let left = tree.reclaim();
    // Another test's guard pinned on another thread may hold frees back a while: retry.
    let mut left = left;
    for _ in 0..1000 {
        if left.nodes == 0 && left.entries == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        left = tree.reclaim();
    }
    assert_eq!((left.nodes, left.entries), (0, 0), "{left:?}");
}
