//! Unit tests of the tree: a differential model, kernel-derived cases, per-path counters.

use std::collections::BTreeMap;

use crate::{MapleTree, Value};

/// The reference: non-empty ranges only (empty ranges coalesce implicitly).
#[derive(Default, Clone, Debug)]
pub(crate) struct Model {
    pub(crate) map: BTreeMap<u64, (u64, u64)>,
}

impl Model {
    pub(crate) fn store(&mut self, first: u64, last: u64, v: Option<u64>) {
        // Pieces overlapping [first, last].
        let over: Vec<(u64, u64, u64)> = self
            .map
            .range(..=last)
            .rev()
            .take_while(|(_, &(l, _))| l >= first)
            .map(|(&a, &(b, v))| (a, b, v))
            .collect();
        for (a, b, val) in over {
            self.map.remove(&a);
            if a < first {
                self.map.insert(a, (first - 1, val));
            }
            if b > last {
                self.map.insert(last + 1, (b, val));
            }
        }
        if let Some(v) = v {
            self.map.insert(first, (last, v));
        }
    }

    pub(crate) fn load(&self, i: u64) -> Option<u64> {
        self.map.range(..=i).next_back().filter(|(_, &(l, _))| l >= i).map(|(_, &(_, v))| v)
    }

    pub(crate) fn occupied(&self, first: u64, last: u64) -> bool {
        self.map.range(..=last).next_back().is_some_and(|(_, &(l, _))| l >= first)
    }

    pub(crate) fn ranges(&self) -> Vec<(u64, u64, u64)> {
        self.map.iter().map(|(&a, &(b, v))| (a, b, v)).collect()
    }

    /// The range (entry or gap) containing `i`.
    pub(crate) fn slot(&self, i: u64) -> (u64, u64, Option<u64>) {
        if let Some((&a, &(b, v))) = self.map.range(..=i).next_back() {
            if b >= i {
                return (a, b, Some(v));
            }
        }
        let lo = self.map.range(..i).next_back().map(|(_, &(b, _))| b + 1).unwrap_or(0);
        let hi = self.map.range(i..).next().map(|(&a, _)| a - 1).unwrap_or(u64::MAX);
        (lo, hi, None)
    }
}

pub(crate) fn tree_ranges(t: &MapleTree<Value>) -> Vec<(u64, u64, u64)> {
    let g = t.pin();
    t.iter(&g).map(|(a, b, v)| (a, b, v.get())).collect()
}

fn check(t: &MapleTree<Value>, m: &Model) {
    if let Err(e) = t.validate() {
        panic!("{e}\n{}", t.dump());
    }
    assert_eq!(tree_ranges(t), m.ranges(), "\n{}", t.dump());
}

#[test]
fn smoke_store_load() {
    let t = MapleTree::<Value>::new();
    let mut m = Model::default();
    assert_eq!(t.get(0), None);
    for i in 0..300u64 {
        t.store_range(i * 10, i * 10 + 5, Value::new(i)).unwrap();
        m.store(i * 10, i * 10 + 5, Some(i));
        check(&t, &m);
    }
    for i in 0..3000u64 {
        assert_eq!(t.get(i).map(|v| v.get()), m.load(i), "index {i}");
    }
    assert!(t.height() >= 2);
}

#[test]
fn smoke_reverse_and_spanning() {
    for alloc in [false, true] {
        let t = if alloc { MapleTree::<Value>::new_alloc() } else { MapleTree::new() };
        let mut m = Model::default();
        for i in (0..400u64).rev() {
            t.store_range(i * 10, i * 10 + 5, Value::new(i)).unwrap();
            m.store(i * 10, i * 10 + 5, Some(i));
            check(&t, &m);
        }
        t.store_range(25, 3333, Value::new(7)).unwrap();
        m.store(25, 3333, Some(7));
        check(&t, &m);
        t.erase_range(100, 2000).unwrap();
        m.store(100, 2000, None);
        check(&t, &m);
        for i in 0..500 {
            let a = (i * 7919) % 4000;
            let b = a + (i * 31) % 50;
            if i % 3 == 0 {
                t.erase_range(a, b).unwrap();
                m.store(a, b, None);
            } else {
                t.store_range(a, b, Value::new(i)).unwrap();
                m.store(a, b, Some(i));
            }
            check(&t, &m);
        }
        t.erase_range(0, u64::MAX).unwrap();
        m.store(0, u64::MAX, None);
        check(&t, &m);
        assert!(t.is_empty());
    }
}
