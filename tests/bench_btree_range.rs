//! Tests the `BTreeMap` range map the benchmarks compare against (benches/support/btree_range.rs):
//! random stores, erases and gap searches checked against a per-index model and against
//! `MapleTree` itself, so that the peer measures the same semantics.

#[path = "../benches/support/btree_range.rs"]
#[allow(dead_code)]
mod btree_range;

use btree_range::BTreeRangeMap;
use maple_tree::{MapleTree, Value};

const U: u64 = 300;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x % n
    }
}

/// The ranges of a per-index model (stored values are unique per store, so equal neighbours
/// belong to one range).
fn model_ranges(m: &[Option<u64>]) -> Vec<(u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64)> = vec![];
    for (i, v) in m.iter().enumerate() {
        let i = i as u64;
        if let Some(v) = *v {
            match out.last_mut() {
                Some(last) if last.1 + 1 == i && last.2 == v => last.1 = i,
                _ => out.push((i, i, v)),
            }
        }
    }
    out
}

fn model_gap_rev(m: &[Option<u64>], min: u64, max: u64, size: u64) -> Option<u64> {
    let free = |i: u64| i >= U || m[i as usize].is_none();
    let mut s = max.checked_sub(size - 1)?;
    loop {
        if s < min {
            return None;
        }
        if (s..s + size).all(free) {
            return Some(s);
        }
        s = s.checked_sub(1)?;
    }
}

#[test]
fn random_ops_match_model_and_maple_tree() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut m = vec![None; U as usize];
        let mut b = BTreeRangeMap::new();
        let t = MapleTree::<Value>::new_alloc();
        let mut next_value = 1u64;
        for _ in 0..300 {
            let a = rng.below(U);
            let span = if rng.below(4) == 0 { 80 } else { 8 };
            let len = 1 + rng.below(span);
            let z = (a + len - 1).min(U - 1);
            match rng.below(3) {
                0 | 1 => {
                    let v = next_value;
                    next_value += 1;
                    b.store(a, z, v);
                    t.store_range(a..=z, Value::new(v)).unwrap();
                    for i in a..=z {
                        m[i as usize] = Some(v);
                    }
                }
                _ => {
                    b.erase(a, z);
                    t.erase_range(a..=z).unwrap();
                    for i in a..=z {
                        m[i as usize] = None;
                    }
                }
            }
            for i in 0..U {
                assert_eq!(b.get(i), m[i as usize], "seed {seed} index {i}");
            }
            let want = model_ranges(&m);
            assert_eq!(b.iter().collect::<Vec<_>>(), want, "seed {seed}");
            let guard = t.pin();
            let tree: Vec<_> = t
                .iter(&guard)
                .map(|(r, v)| (*r.start(), *r.end(), v.get()))
                .collect();
            assert_eq!(tree, want, "seed {seed}: maple tree disagrees");
            assert_eq!(b.len(), want.len());
            let lo = rng.below(U);
            let hi = lo + rng.below(U);
            let size = 1 + rng.below(6);
            let g = b.empty_area_rev(lo, hi, size);
            assert_eq!(
                g,
                model_gap_rev(&m, lo, hi, size),
                "seed {seed} [{lo},{hi}] {size}"
            );
            assert_eq!(
                g,
                t.empty_area_rev(lo..=hi, size).ok(),
                "seed {seed}: maple gap"
            );
        }
    }
}

#[test]
fn push_is_an_in_order_store() {
    let mut b = BTreeRangeMap::new();
    for i in 0..100u64 {
        b.push(10 * i, 10 * i + 5, i);
    }
    // Out of order: falls back to a trimming store.
    b.push(3, 12, 1000);
    assert_eq!(b.get(2), Some(0));
    assert_eq!(b.get(3), Some(1000));
    assert_eq!(b.get(12), Some(1000));
    assert_eq!(b.get(13), Some(1));
    assert_eq!(b.get(15), Some(1));
    assert_eq!(b.len(), 101);
    assert!(!b.is_empty());
}

#[test]
fn edges_of_the_index_space() {
    let mut b = BTreeRangeMap::new();
    b.store(0, u64::MAX, 1);
    b.store(5, 9, 2);
    b.erase(u64::MAX, u64::MAX);
    assert_eq!(b.get(0), Some(1));
    assert_eq!(b.get(7), Some(2));
    assert_eq!(b.get(u64::MAX - 1), Some(1));
    assert_eq!(b.get(u64::MAX), None);
    assert_eq!(b.empty_area_rev(0, u64::MAX, 1), Some(u64::MAX));
    assert_eq!(b.empty_area_rev(0, u64::MAX, 2), None);
    b.erase(0, 4);
    assert_eq!(b.empty_area_rev(0, 100, 5), Some(0));
    assert_eq!(b.empty_area_rev(1, 100, 5), None);
}
