//! Core (tree) bugs found while building the VMA manager, as minimal reproducers. They are
//! ignored until the tree core is fixed; run with `cargo test --release --test mm_core_bugs --
//! --ignored` to check.

use maple_tree::{MapleTree, Value};

/// 31 single-index entries, then a NULL store over index 15: the rebuild's `partition` splits the
/// 32 resulting leaf items as 16 + 16, sees the left part end on the new NULL, moves the boundary
/// one to the left (because the left part is already full) and so gives the right leaf 17 items
/// for 16 slots. The trailing NULL range `[31, MAX]` is lost: entry 30 now covers `[30, MAX]`.
/// `validate()` does not notice; debug builds trip the `debug_assert` in `partition`.
/// In the VMA manager this turns a one-page VMA into one that reaches `u64::MAX` (munmap or
/// fork's `DONTCOPY` clearing in a full leaf).
#[test]
#[ignore = "core bug: NULL store into two full leaves overflows a leaf (rebuild::partition)"]
fn null_store_in_full_leaves_keeps_every_range() {
    let t = MapleTree::<Value>::new();
    for i in 0..31u64 {
        t.store(i, Value::new(i)).unwrap();
    }
    t.erase_range(15, 15).unwrap();
    t.validate().unwrap();
    let guard = t.pin();
    let got: Vec<(u64, u64, u64)> = t.iter(&guard).map(|(a, b, v)| (a, b, v.get())).collect();
    let want: Vec<(u64, u64, u64)> = (0..31u64).filter(|&i| i != 15).map(|i| (i, i, i)).collect();
    assert_eq!(got, want);
}
