//! Quick timing probe of the main operations at 1,000,000 ranges `[10i, 10i+5]` (a development
//! aid; the criterion benchmarks in `benches/` are the reference).
use maple_tree::{MapleTree, Value};
use std::collections::BTreeMap;
use std::time::Instant;

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let t0 = Instant::now();
    let tree = MapleTree::<Value>::new();
    for i in 0..n {
        tree.store_range(10 * i..=10 * i + 5, Value::new(i))
            .unwrap();
    }
    let build = t0.elapsed().as_nanos() as f64 / n as f64;
    let t0 = Instant::now();
    let mut tree2 = MapleTree::<Value>::new();
    {
        let mut w = tree2.exclusive();
        for i in 0..n {
            w.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
        }
    }
    let build_x = t0.elapsed().as_nanos() as f64 / n as f64;
    let t0 = Instant::now();
    let mut bt = BTreeMap::new();
    for i in 0..n {
        bt.insert(10 * i, (10 * i + 5, i));
    }
    let build_bt = t0.elapsed().as_nanos() as f64 / n as f64;
    let st = tree.stats();
    let bytes = (st.nodes_allocated - st.nodes_freed) * 256;
    println!("build rcu {build:.1} ns, exclusive {build_x:.1} ns, btreemap insert {build_bt:.1} ns; {:.1} B/range, height {}", bytes as f64 / n as f64, tree.height());

    let mut s = 42u64;
    let idx: Vec<u64> = (0..1_000_000)
        .map(|_| xorshift(&mut s) % (10 * n))
        .collect();
    let g = tree.pin();
    let t0 = Instant::now();
    let mut hits = 0u64;
    for &i in &idx {
        if tree.load(i, &g).is_some() {
            hits += 1;
        }
    }
    let load = t0.elapsed().as_nanos() as f64 / idx.len() as f64;
    let t0 = Instant::now();
    let mut hits2 = 0u64;
    for &i in &idx {
        if let Some((_, (l, _))) = bt.range(..=i).next_back() {
            if *l >= i {
                hits2 += 1;
            }
        }
    }
    let load_bt = t0.elapsed().as_nanos() as f64 / idx.len() as f64;
    assert_eq!(hits, hits2);
    let t0 = Instant::now();
    let c = tree.iter(&g).count();
    let iter = t0.elapsed().as_nanos() as f64 / c as f64;
    drop(g);
    println!("load {load:.1} ns (btreemap {load_bt:.1}), iter {iter:.1} ns/entry");
    let t0 = Instant::now();
    for i in (0..n).step_by(2) {
        tree.erase(10 * i);
    }
    let erase = t0.elapsed().as_nanos() as f64 / (n / 2) as f64;
    let t0 = Instant::now();
    let mut found = 0;
    for k in 0..100_000u64 {
        let lo = xorshift(&mut s) % (10 * n);
        if tree.empty_area_rev(lo..=lo + 10_000, 3).is_ok() {
            found += 1;
        }
        let _ = k;
    }
    let gap = t0.elapsed().as_nanos() as f64 / 100_000.0;
    println!("erase every 2nd {erase:.1} ns, empty_area_rev {gap:.1} ns ({found})");
    let t0 = Instant::now();
    let t3 = MapleTree::<Value>::new();
    let m = n;
    for k in 0..m {
        let a = xorshift(&mut s) % (1 << 32);
        let l = xorshift(&mut s) % 64;
        t3.store_range(a..=a + l, Value::new(k)).unwrap();
    }
    let rnd = t0.elapsed().as_nanos() as f64 / m as f64;
    println!("random ranges {rnd:.1} ns");
    drop(tree2);
}
