//! Instruction-count probe for iteration and loads (run under callgrind).
use maple_tree::{MapleTree, Value};
fn main() {
    let what = std::env::args().nth(1).unwrap_or_default();
    let mut tree = MapleTree::<Value>::new();
    {
        let mut w = tree.exclusive();
        for i in 0..100_000u64 {
            w.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
        }
    }
    let g = tree.pin();
    let mut sum = 0u64;
    match what.as_str() {
        "iter" => {
            for _ in 0..10 {
                for (_, v) in tree.iter(&g) {
                    sum += v.get();
                }
            }
        }
        "load" => {
            let mut s = 42u64;
            for _ in 0..1_000_000 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                if let Some(v) = tree.load(s % 1_000_000, &g) {
                    sum += v.get();
                }
            }
        }
        _ => {}
    }
    println!("{sum}");
}
