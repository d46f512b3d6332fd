//! Readers that span several writes, on one thread: an iterator (forward or backward) is held
//! under one guard while the writer goes on, and what it yields is checked against every state
//! the tree passed through. Each yielded range must have existed, with its entry, in a state
//! inside the iterator's window; the ranges come strictly in order without overlap; and every
//! range that stayed unchanged for the whole window is yielded.

use std::collections::BTreeSet;

use maple_tree::{MapleTree, Value};

/// The first seal reproducer: an iterator inside a full root leaf, then an append split that
/// truncates that leaf, then a `+1` append into the truncated leaf. Before the seals, the
/// iterator yielded `[73, u64::MAX]` (never existed) and skipped the unchanged `[80, 85]`'s
/// predecessor state.
fn append_split_then_append(tree: &MapleTree<Value>) {
    for i in 0..8u64 {
        tree.store_range(10 * i..=10 * i + 5, Value::new(i))
            .unwrap();
    }
    let g = tree.pin();
    let mut it = tree.iter(&g);
    for _ in 0..7 {
        it.next();
    }
    let before = tree.stats();
    tree.store_range(80..=85, Value::new(8)).unwrap(); // append split: the leaf is truncated
    tree.store_range(73..=75, Value::new(99)).unwrap(); // into the truncated leaf
    let after = tree.stats();
    assert_eq!(after.append_split, before.append_split + 1, "{after:?}");
    let rest: Vec<_> = it.map(|(r, v)| (*r.start(), *r.end(), v.get())).collect();
    // The iterator still reads the state before the split: [70, 75] = 7 and nothing after.
    assert_eq!(rest, [(70, 75, 7)]);
    drop(g);
    let g = tree.pin();
    let now: Vec<_> = tree
        .iter(&g)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect();
    assert_eq!(&now[7..], [(70, 72, 7), (73, 75, 99), (80, 85, 8)]);
    assert_eq!(tree.load(1000, &g), None);
    assert_eq!(tree.load(80, &g).map(|v| v.get()), Some(8));
    tree.validate().unwrap();
}

#[test]
fn append_split_then_append_range_tree() {
    append_split_then_append(&MapleTree::new());
}

#[test]
fn append_split_then_append_alloc_tree() {
    append_split_then_append(&MapleTree::new_alloc());
}

/// The same with a three-way append into the truncated leaf: a full root leaf whose slot 14 is
/// NULL keeps two free slots when it is truncated, and a range strictly inside its last range then
/// fits in place; a reader that read the old max would see that range's tail reach it.
fn append_split_then_three_way(tree: &MapleTree<Value>) {
    for i in 0..7u64 {
        tree.store_range(10 * i..=10 * i + 5, Value::new(i))
            .unwrap();
    }
    tree.store_range(66..=75, Value::new(66)).unwrap();
    tree.store_range(80..=u64::MAX, Value::new(80)).unwrap(); // 16 slots, slot 14 NULL
    let g = tree.pin();
    let mut it = tree.iter(&g);
    for _ in 0..6 {
        it.next();
    }
    let before = tree.stats();
    tree.store_range(90..=95, Value::new(90)).unwrap(); // append split, the leaf keeps 14 slots
    tree.store_range(70..=72, Value::new(99)).unwrap(); // strictly inside [66, 75]
    tree.store_range(70..=72, Value::new(98)).unwrap(); // then an exact fit of it
    let after = tree.stats();
    assert_eq!(after.append_split, before.append_split + 1, "{after:?}");
    let rest: Vec<_> = it.map(|(r, v)| (*r.start(), *r.end(), v.get())).collect();
    assert_eq!(rest, [(60, 65, 6), (66, 75, 66), (80, u64::MAX, 80)]);
    drop(g);
    let g = tree.pin();
    let now: Vec<_> = tree
        .iter(&g)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect();
    assert_eq!(
        &now[6..],
        [
            (60, 65, 6),
            (66, 69, 66),
            (70, 72, 98),
            (73, 75, 66),
            (80, 89, 80),
            (90, 95, 90),
            (96, u64::MAX, 80)
        ]
    );
    tree.validate().unwrap();
}

#[test]
fn append_split_then_three_way_range_tree() {
    append_split_then_three_way(&MapleTree::new());
}

#[test]
fn append_split_then_three_way_alloc_tree() {
    append_split_then_three_way(&MapleTree::new_alloc());
}

/// xorshift64.
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

type Ranges = Vec<(u64, u64, u64)>;

fn snapshot(tree: &MapleTree<Value>) -> Ranges {
    let g = tree.pin();
    tree.iter(&g)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect()
}

/// One random write, biased to the write paths that keep nodes in place (appends at the right
/// edge, exact fits, stores into the last range) and the splits they lead to.
fn random_write(tree: &MapleTree<Value>, rng: &mut Rng, version: &mut u64, top: &mut u64) {
    *version += 1;
    let v = Value::new(*version);
    match rng.below(11) {
        0..=2 => {
            // In-order append after everything, sometimes with a gap.
            let a = *top + rng.below(3);
            let b = a + rng.below(6);
            tree.store_range(a..=b, v).unwrap();
            *top = b + 1;
        }
        3 => {
            // Into the last range (three-way or +1 append of a NULL tail).
            let a = top.saturating_sub(rng.below(12));
            let b = a + rng.below(3);
            tree.store_range(a..=b, v).unwrap();
            *top = (*top).max(b + 1);
        }
        4 => {
            // Exact fit of an existing range.
            let i = rng.below(*top + 1);
            let g = tree.pin();
            let r = tree.load_range(i, &g).map(|(r, _)| (*r.start(), *r.end()));
            drop(g);
            if let Some((a, b)) = r {
                tree.store_range(a..=b, v).unwrap();
            }
        }
        5 => {
            tree.erase(rng.below(*top + 1));
        }
        6 => {
            let a = rng.below(*top + 1);
            let b = a + rng.below(40);
            tree.store_range(a..=b, v).unwrap();
            *top = (*top).max(b + 1);
        }
        7 => {
            let a = rng.below(*top + 1);
            tree.erase_range(a..=a + rng.below(30)).unwrap();
        }
        _ => {
            // Into the tail of the range holding a random index: an append when that range is
            // the last of its leaf, wherever the leaf is.
            let i = rng.below(*top + 1);
            let g = tree.pin();
            let r = tree.load_range(i, &g).map(|(r, _)| (*r.start(), *r.end()));
            drop(g);
            let (a, b) = r.unwrap_or_else(|| {
                // A NULL range: find its bounds by the neighbours.
                let mut lo = i;
                let g = tree.pin();
                while lo > 0 && tree.load(lo - 1, &g).is_none() && i - lo < 64 {
                    lo -= 1;
                }
                (lo, i + rng.below(8))
            });
            if b > a {
                let f = a + 1 + rng.below(b - a);
                let l = if rng.below(2) == 0 {
                    b
                } else {
                    f + rng.below(b - f + 1)
                };
                tree.store_range(f..=l, v).unwrap();
                *top = (*top).max(l.saturating_add(1)).min(1 << 40);
            }
        }
    }
}

/// Holds an iterator across random writes and checks it against the states it spanned.
fn iterate_across_writes(alloc: bool, backward: bool, seed: u64) {
    let tree = if alloc {
        MapleTree::new_alloc()
    } else {
        MapleTree::new()
    };
    let mut rng = Rng(seed);
    let mut version = 0u64;
    let mut top = 0u64;
    for _ in 0..rng.below(400) {
        random_write(&tree, &mut rng, &mut version, &mut top);
    }
    let mut states: Vec<Ranges> = vec![snapshot(&tree)];
    let g = tree.pin();
    let mut it = tree.iter(&g);
    let mut seen: Vec<((u64, u64, u64), usize)> = Vec::new();
    loop {
        if rng.below(3) == 0 {
            random_write(&tree, &mut rng, &mut version, &mut top);
            tree.validate().unwrap();
            states.push(snapshot(&tree));
            continue;
        }
        let item = if backward { it.next_back() } else { it.next() };
        match item {
            Some((r, v)) => seen.push(((*r.start(), *r.end(), v.get()), states.len() - 1)),
            None => break,
        }
    }
    // Strictly in order, no overlap.
    for w in seen.windows(2) {
        let (x, y) = (w[0].0, w[1].0);
        if backward {
            assert!(y.1 < x.0, "seed {seed}: {y:?} after {x:?} going backward");
        } else {
            assert!(x.1 < y.0, "seed {seed}: {y:?} after {x:?}");
        }
    }
    // Each yielded range existed in a state of the window (up to the one current at the yield).
    for &(r, upto) in &seen {
        assert!(
            states[..=upto].iter().any(|s| s.binary_search(&r).is_ok()),
            "seed {seed}: yielded {r:?}, which never existed (states 0..={upto})"
        );
    }
    // Every range present, unchanged, in all states was yielded.
    let yielded: BTreeSet<_> = seen.iter().map(|&(r, _)| r).collect();
    for r in &states[0] {
        if states.iter().all(|s| s.binary_search(r).is_ok()) {
            assert!(
                yielded.contains(r),
                "seed {seed}: unchanged {r:?} was skipped"
            );
        }
    }
}

#[test]
fn iterators_across_random_writes() {
    let seeds: u64 = std::env::var("MAPLE_ACROSS_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    for seed in 1..=seeds {
        let s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        iterate_across_writes(seed % 2 == 0, seed % 3 == 0, s);
    }
}

/// Seals hold only for a grace period: once no guard from before the split is left, the same
/// append into the truncated leaf is done in place again. (The tree has its own collector, so
/// guards of other tests running meanwhile cannot hold the epoch back.)
#[test]
fn seals_lift_after_the_grace_period() {
    let collector = crossbeam_epoch::Collector::new();
    let tree =
        MapleTree::<Value>::with_options(maple_tree::Options::new().collector(collector.clone()));
    for i in 0..8u64 {
        tree.store_range(10 * i..=10 * i + 5, Value::new(i))
            .unwrap();
    }
    let g = tree.pin();
    tree.store_range(80..=85, Value::new(8)).unwrap(); // append split: the leaf shrinks
    drop(g);
    // Writes elsewhere schedule the lift; pinning and flushing lets the epoch advance.
    let h = collector.register();
    for i in 0..64u64 {
        tree.store_range(1000 + 2 * i..=1000 + 2 * i, Value::new(7))
            .unwrap();
        h.pin().flush();
    }
    let before = tree.stats();
    tree.store_range(73..=75, Value::new(98)).unwrap(); // +1 append into the shrunk leaf
    let after = tree.stats();
    assert_eq!(after.sealed_extend, before.sealed_extend, "{after:?}");
    assert_eq!(after.append_end, before.append_end + 1, "{after:?}");
    tree.validate().unwrap();
}
