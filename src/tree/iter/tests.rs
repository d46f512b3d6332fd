//! The iterator against a model, both ends.

use std::collections::BTreeMap;

use crate::{MapleTree, Value};

/// Irregular ranges and gaps over several levels (both tree kinds), then every way of
/// walking them: forward, backward, alternating ends, and bounded ranges, against a model.
#[test]
fn fast_path_matches_model() {
    for alloc in [false, true] {
        let tree = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::<Value>::new()
        };
        let mut model = BTreeMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut at = 0u64;
        for i in 0..3000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = x % 7;
            let gap = (x >> 8) % 4;
            if i % 7 == 3 {
                // Occupied, but read as empty by iteration and cursors.
                tree.lock().store_zero_range(at..=at + len).unwrap();
            } else {
                tree.store_range(at..=at + len, Value::new(i)).unwrap();
                model.insert(at, (at + len, i));
            }
            at += len + 1 + gap;
        }
        let all: Vec<_> = model.iter().map(|(&a, &(b, v))| (a, b, v)).collect();
        let g = tree.pin();
        let got: Vec<_> = tree
            .iter(&g)
            .map(|(r, v)| (*r.start(), *r.end(), v.get()))
            .collect();
        assert_eq!(got, all);
        let mut back: Vec<_> = tree
            .iter(&g)
            .rev()
            .map(|(r, v)| (*r.start(), *r.end(), v.get()))
            .collect();
        back.reverse();
        assert_eq!(back, all);
        // Alternating ends meet in the middle without overlap or loss.
        let mut it = tree.iter(&g);
        let (mut front, mut rear) = (Vec::new(), Vec::new());
        for k in 0.. {
            let step = if k % 3 == 2 {
                it.next_back()
            } else {
                it.next()
            };
            let Some((r, v)) = step else { break };
            let (a, b) = (*r.start(), *r.end());
            if k % 3 == 2 {
                rear.push((a, b, v.get()));
            } else {
                front.push((a, b, v.get()));
            }
        }
        rear.reverse();
        front.extend(rear);
        assert_eq!(front, all);
        // The cursor's in-leaf step: `find` to the end, and `find`/`next` under a limit.
        let mut c = tree.cursor(0, &g);
        let mut found = Vec::new();
        while let Some(v) = c.find(u64::MAX) {
            found.push((c.index(), c.last(), v.get()));
        }
        assert_eq!(found, all);
        let limit = all[all.len() / 2].0;
        for next in [false, true] {
            let mut c = tree.cursor(0, &g);
            let mut found = Vec::new();
            let mut step = c.find(limit);
            while let Some(v) = step {
                found.push((c.index(), c.last(), v.get()));
                step = if next { c.next(limit) } else { c.find(limit) };
            }
            let want: Vec<_> = all.iter().copied().filter(|r| r.0 <= limit).collect();
            assert_eq!(found, want, "next: {next}");
        }
        // Bounded ranges, edges inside entries and inside gaps.
        for (first, last) in [(0, 0), (5, 97), (1234, 1234), (100, 9000), (7000, u64::MAX)] {
            let want: Vec<_> = all
                .iter()
                .copied()
                .filter(|&(a, b, _)| b >= first && a <= last)
                .collect();
            let got: Vec<_> = tree
                .range(first..=last, &g)
                .map(|(r, v)| (*r.start(), *r.end(), v.get()))
                .collect();
            assert_eq!(got, want, "range {first}..={last}");
        }
    }
}

/// The front takes the first `s` ranges (holding its leaf), then the back takes all it
/// can, for every `s`: the back stops where the front is, in the front's leaf or another,
/// without yielding a range twice, and yields every range the front has not.
#[test]
fn back_stops_at_the_front() {
    let tree = MapleTree::<Value>::new();
    let n = 100u64;
    for i in 0..n {
        tree.store_range(10 * i..=10 * i + 1, Value::new(i))
            .unwrap();
    }
    let g = tree.pin();
    for s in 0..=n as usize {
        let mut it = tree.iter(&g);
        let mut got: Vec<u64> = (&mut it).take(s).map(|(_, v)| v.get()).collect();
        let mut back: Vec<u64> = it.rev().map(|(_, v)| v.get()).collect();
        back.reverse();
        got.extend(back);
        assert_eq!(got, (0..n).collect::<Vec<_>>(), "front took {s}");
    }
}

/// Writes into what each end has just yielded (splitting that range, which replaces its
/// leaf, and now and then its parent): the end's leaf and path die under it, so its
/// crossings meet dead nodes and walk again from the root (counted as restarts). Nothing
/// the end has still to yield changed, so it yields exactly the original ranges.
#[test]
fn ends_restart_past_replaced_nodes() {
    for backward in [false, true] {
        let tree = MapleTree::<Value>::new();
        let n = 3000u64;
        for i in 0..n {
            tree.store_range(10 * i..=10 * i + 5, Value::new(i))
                .unwrap();
        }
        let g = tree.pin();
        let before = tree.stats().reader_restarts;
        let mut it = tree.iter(&g);
        let mut got = Vec::new();
        loop {
            let step = if backward { it.next_back() } else { it.next() };
            let Some((r, v)) = step else { break };
            let (a, b) = (*r.start(), *r.end());
            got.push((a, b, v.get()));
            tree.store_range(a + 1..=a + 2, Value::new(u64::MAX >> 2))
                .unwrap();
        }
        if backward {
            got.reverse();
        }
        let want: Vec<_> = (0..n).map(|i| (10 * i, 10 * i + 5, i)).collect();
        assert_eq!(got, want, "backward: {backward}");
        let restarts = tree.stats().reader_restarts - before;
        assert!(restarts > 0, "backward: {backward}: no restart");
    }
}
