//! Instruction-count probe: run one operation kind under callgrind
//! (`valgrind --tool=callgrind target/release/op_probe <op>`), minus the `none` baseline.
use maple_tree::{MapleTree, Value};
use std::collections::BTreeMap;
fn main() {
    let op = std::env::args().nth(1).unwrap_or_default();
    let n = 100_000u64;
    let mut s = 42u64;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    if op == "fork" || op == "fork_noval" {
        for _ in 0..1000 {
            let mut t = MapleTree::<Value>::new_alloc();
            {
                let mut w = t.exclusive();
                for i in 0..=134u64 {
                    w.store_range(i * 10..=i * 10 + 5, Value::new(i)).unwrap();
                }
            }
            if op == "fork" {
                t.validate().unwrap();
            }
        }
        return;
    }
    if op == "btree_build" {
        let mut bt = BTreeMap::new();
        for i in 0..n {
            bt.insert(10 * i, (10 * i + 5, i));
        }
        println!("{}", bt.len());
        return;
    }
    let tree = MapleTree::<Value>::new();
    if op != "build" {
        let mut t = MapleTree::<Value>::new();
        {
            let mut w = t.exclusive();
            for i in 0..n {
                w.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
            }
        }
        drop(t);
    }
    for i in 0..n {
        tree.store_range(10 * i..=10 * i + 5, Value::new(i))
            .unwrap();
    }
    let mut sum = 0u64;
    match op.as_str() {
        "erase" => {
            for i in (0..n).step_by(2) {
                tree.erase(10 * i);
            }
        }
        "random" => {
            for k in 0..n {
                let a = rnd() % (10 * n);
                tree.store_range(a..=a + rnd() % 64, Value::new(k)).unwrap();
            }
        }
        "gap" => {
            for _ in 0..n {
                let lo = rnd() % (10 * n);
                sum += tree.empty_area_rev(lo..=lo + 10_000, 3).unwrap_or(0);
            }
        }
        "load" => {
            let g = tree.pin();
            for _ in 0..n {
                sum += tree
                    .load(rnd() % (10 * n), &g)
                    .map(|v| v.get())
                    .unwrap_or(0);
            }
        }
        _ => {}
    }
    println!("{sum}");
}
