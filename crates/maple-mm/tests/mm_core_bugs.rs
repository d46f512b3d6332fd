//! Core (tree) bugs found while building the VMA manager, as minimal reproducers. Open ones are
//! ignored until the tree core is fixed (run them with `cargo test --release --test
//! mm_core_bugs -- --ignored`); fixed ones stay as regression tests.

use maple_tree::{MapleTree, Value};

/// 31 single-index entries, then a NULL store over index 15: the rebuild's `partition` used to
/// split the 32 resulting leaf items as 16 + 16, see the left part end on the new NULL, move the
/// boundary one to the left and give the right leaf 17 items for 16 slots, losing the trailing
/// NULL range (entry 30 then covered `[30, MAX]`; `validate()` did not notice). Found through
/// fork's `DONTCOPY` clearing of a real layout; passes since main 0a0bbfe (kept as a
/// regression test).
#[test]
fn null_store_in_full_leaves_keeps_every_range() {
    let t = MapleTree::<Value>::new();
    for i in 0..31u64 {
        t.store(i, Value::new(i)).unwrap();
    }
    t.erase_range(15..=15).unwrap();
    t.validate().unwrap();
    let guard = t.pin();
    let got: Vec<(u64, u64, u64)> = t
        .iter(&guard)
        .map(|(r, v)| (*r.start(), *r.end(), v.get()))
        .collect();
    let want: Vec<(u64, u64, u64)> = (0..31u64).filter(|&i| i != 15).map(|i| (i, i, i)).collect();
    assert_eq!(got, want);
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

/// One thread stores random ranges (`store_range`, RCU mode) in a 96-page window while another
/// iterates the window under a guard: within about 0.3 s the iterator yields two overlapping
/// ranges, e.g. `[0x10049000, 0x1004efff]` then `[0x1004c000, 0x10050fff]` — against the iterator's
/// contract ("strictly increasing, non-overlapping ranges"). Plain and allocation trees, with or without
/// NULL stores, all fail; also at main 68bccd8. The VMA manager's readers do not depend on
/// iteration order (lookups lock the VMA and check its bounds), but `/proc/PID/maps`-style
/// lock-free walks would.
#[test]
fn lockless_iteration_is_strictly_increasing_during_stores() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let t = Arc::new(MapleTree::<Value>::new());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (t, stop) = (Arc::clone(&t), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut s = 0x9e37_79b9_7f4a_7c15u64;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let p = xorshift(&mut s) % 96;
                let len = 1 + xorshift(&mut s) % 12;
                let a = 0x1000_0000 + p * 0x1000;
                t.store_range(a..=a + len * 0x1000 - 1, Value::new(n))
                    .unwrap();
                n += 1;
            }
        })
    };
    let start = std::time::Instant::now();
    let mut bad = None;
    while start.elapsed() < std::time::Duration::from_secs(2) && bad.is_none() {
        let g = t.pin();
        let mut prev: Option<(u64, u64)> = None;
        for (r, _) in t.range(0x1000_0000..=0x1000_0000 + 96 * 0x1000, &g) {
            let (first, last) = (*r.start(), *r.end());
            if let Some((pf, pl)) = prev {
                if first <= pl {
                    bad = Some(((pf, pl), (first, last)));
                    break;
                }
            }
            prev = Some((first, last));
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(bad, None, "overlapping ranges from one iteration");
}
