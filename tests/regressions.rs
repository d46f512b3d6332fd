//! Regression: a sequence of single-index inserts and erases, delta-debugged by the poll batcher's
//! descriptor-table tests, after which an erase corrupted a neighbour.

const CORE_BUG_OPS_OLD: [(bool, u64, u64); 62] = [
    (true, 1, 2),
    (false, 1, 0),
    (true, 1, 7),
    (true, 3, 8),
    (true, 4, 11),
    (true, 6, 13),
    (true, 7, 14),
    (false, 7, 0),
    (false, 4, 0),
    (false, 3, 0),
    (true, 3, 17),
    (true, 4, 18),
    (true, 7, 19),
    (true, 9, 20),
    (true, 10, 21),
    (true, 12, 23),
    (true, 14, 27),
    (false, 12, 0),
    (true, 12, 28),
    (true, 15, 29),
    (true, 16, 30),
    (true, 18, 32),
    (false, 14, 0),
    (true, 14, 34),
    (false, 18, 0),
    (true, 18, 38),
    (true, 23, 41),
    (true, 24, 42),
    (true, 26, 43),
    (true, 28, 47),
    (true, 29, 48),
    (false, 24, 0),
    (true, 24, 51),
    (true, 34, 55),
    (false, 6, 0),
    (false, 28, 0),
    (false, 7, 0),
    (false, 18, 0),
    (true, 6, 59),
    (false, 29, 0),
    (false, 23, 0),
    (true, 7, 60),
    (false, 1, 0),
    (false, 10, 0),
    (true, 1, 15),
    (true, 10, 61),
    (true, 18, 63),
    (true, 23, 67),
    (true, 28, 69),
    (true, 29, 70),
    (true, 38, 74),
    (false, 18, 0),
    (false, 26, 0),
    (true, 18, 77),
    (false, 24, 0),
    (false, 3, 0),
    (true, 3, 78),
    (true, 24, 80),
    (false, 29, 0),
    (true, 26, 39),
    (true, 29, 81),
    (false, 15, 0),
];

fn replay_core_bug_ops_old(tree: &maple_tree::MapleTree<maple_tree::Value>) -> Result<(), String> {
    let mut model = std::collections::BTreeMap::new();
    for (i, &(insert, index, v)) in CORE_BUG_OPS_OLD.iter().enumerate() {
        if insert {
            tree.insert(index, maple_tree::Value::new(v))
                .map_err(|e| format!("op {i}: insert({index}): {e}"))?;
            model.insert(index, v);
        } else {
            tree.erase(index)
                .ok_or_else(|| format!("op {i}: erase({index}) found nothing"))?;
            model.remove(&index);
        }
        for k in 0..64 {
            let got = tree.get(k).map(|x| x.get());
            if got != model.get(&k).copied() {
                return Err(format!(
                    "after op {i} {:?}: index {k} reads {got:?}, expected {:?}",
                    CORE_BUG_OPS_OLD[i],
                    model.get(&k)
                ));
            }
        }
    }
    tree.validate().map_err(|e| format!("validate: {e:?}"))
}

#[test]
fn erase_does_not_leak_neighbour_entry_range_tree_1() {
    replay_core_bug_ops_old(&maple_tree::MapleTree::new()).unwrap();
}

#[test]
fn erase_does_not_leak_neighbour_entry_alloc_tree_1() {
    replay_core_bug_ops_old(&maple_tree::MapleTree::new_alloc()).unwrap();
}

/// 197 single-index inserts and erases (delta-debugged from a 3,451-step descriptor-table run)
/// after which `erase(294)` also lost the entry at `[310, 310]`.
const CORE_BUG_OPS_2: [(bool, u64, u64); 198] = [
    (true, 3, 8),
    (true, 6, 13),
    (true, 12, 23),
    (true, 21, 39),
    (true, 24, 42),
    (true, 27, 45),
    (false, 24, 0),
    (true, 24, 51),
    (true, 33, 54),
    (false, 33, 0),
    (true, 33, 49),
    (true, 38, 74),
    (false, 3, 0),
    (false, 33, 0),
    (true, 3, 78),
    (true, 33, 82),
    (true, 45, 92),
    (false, 45, 0),
    (true, 45, 97),
    (true, 48, 99),
    (true, 63, 124),
    (true, 66, 132),
    (false, 45, 0),
    (true, 45, 135),
    (true, 81, 114),
    (true, 87, 163),
    (false, 87, 0),
    (true, 87, 38),
    (true, 90, 174),
    (true, 93, 177),
    (true, 95, 115),
    (true, 100, 183),
    (true, 102, 187),
    (false, 95, 0),
    (true, 95, 194),
    (true, 107, 198),
    (true, 111, 205),
    (true, 112, 206),
    (true, 114, 155),
    (true, 115, 215),
    (true, 117, 218),
    (true, 119, 221),
    (true, 121, 224),
    (true, 123, 226),
    (true, 126, 229),
    (true, 128, 241),
    (true, 129, 247),
    (true, 131, 249),
    (true, 133, 251),
    (true, 135, 164),
    (true, 136, 254),
    (true, 138, 227),
    (true, 140, 259),
    (true, 142, 262),
    (true, 146, 266),
    (true, 149, 31),
    (false, 140, 0),
    (true, 140, 275),
    (true, 152, 276),
    (true, 154, 280),
    (true, 156, 282),
    (true, 158, 239),
    (true, 160, 285),
    (true, 162, 287),
    (true, 163, 288),
    (true, 165, 290),
    (true, 166, 146),
    (true, 168, 292),
    (true, 171, 215),
    (true, 172, 295),
    (true, 174, 299),
    (true, 175, 300),
    (true, 177, 303),
    (true, 179, 34),
    (true, 180, 305),
    (true, 182, 307),
    (true, 183, 280),
    (true, 185, 312),
    (true, 187, 313),
    (true, 189, 333),
    (true, 191, 335),
    (false, 189, 0),
    (true, 189, 336),
    (true, 192, 337),
    (true, 194, 341),
    (true, 196, 342),
    (true, 198, 349),
    (true, 199, 350),
    (true, 201, 362),
    (true, 202, 367),
    (true, 204, 369),
    (true, 206, 371),
    (true, 208, 373),
    (true, 210, 375),
    (true, 212, 377),
    (true, 214, 351),
    (true, 216, 381),
    (true, 219, 384),
    (true, 221, 386),
    (true, 223, 265),
    (true, 225, 393),
    (true, 227, 397),
    (true, 229, 399),
    (true, 233, 403),
    (true, 236, 406),
    (true, 238, 413),
    (true, 239, 414),
    (true, 241, 415),
    (true, 243, 416),
    (true, 245, 118),
    (true, 246, 425),
    (true, 248, 227),
    (true, 250, 450),
    (true, 251, 451),
    (true, 253, 453),
    (true, 255, 455),
    (true, 256, 61),
    (true, 258, 457),
    (true, 259, 458),
    (true, 263, 460),
    (true, 267, 463),
    (true, 268, 464),
    (true, 271, 466),
    (true, 273, 468),
    (true, 274, 470),
    (true, 276, 472),
    (true, 278, 474),
    (false, 273, 0),
    (true, 273, 476),
    (true, 280, 160),
    (true, 282, 479),
    (true, 284, 482),
    (true, 286, 484),
    (true, 288, 486),
    (true, 290, 490),
    (true, 292, 497),
    (true, 293, 498),
    (true, 294, 160),
    (true, 295, 500),
    (true, 296, 501),
    (true, 298, 505),
    (true, 299, 506),
    (false, 290, 0),
    (true, 290, 509),
    (true, 301, 510),
    (true, 303, 512),
    (true, 304, 273),
    (true, 306, 519),
    (true, 308, 522),
    (true, 309, 523),
    (true, 310, 524),
    (true, 317, 532),
    (true, 318, 533),
    (true, 324, 539),
    (true, 328, 542),
    (true, 329, 543),
    (true, 342, 156),
    (true, 345, 560),
    (false, 304, 0),
    (true, 304, 621),
    (true, 384, 623),
    (false, 310, 0),
    (true, 310, 630),
    (true, 395, 640),
    (true, 398, 646),
    (false, 384, 0),
    (false, 317, 0),
    (true, 384, 668),
    (false, 324, 0),
    (true, 324, 89),
    (true, 428, 695),
    (true, 429, 697),
    (false, 293, 0),
    (true, 293, 704),
    (false, 306, 0),
    (false, 395, 0),
    (true, 306, 712),
    (true, 438, 715),
    (false, 398, 0),
    (true, 398, 725),
    (false, 345, 0),
    (true, 345, 799),
    (false, 304, 0),
    (false, 384, 0),
    (true, 304, 807),
    (true, 384, 809),
    (false, 384, 0),
    (true, 384, 841),
    (true, 504, 843),
    (false, 342, 0),
    (false, 309, 0),
    (false, 318, 0),
    (true, 318, 924),
    (false, 308, 0),
    (true, 308, 1028),
    (false, 293, 0),
    (true, 293, 1065),
    (false, 294, 0),
];

fn replay_2(tree: &maple_tree::MapleTree<maple_tree::Value>) {
    let mut model = std::collections::BTreeMap::new();
    for (i, &(insert, index, v)) in CORE_BUG_OPS_2.iter().enumerate() {
        if insert {
            tree.insert(index, maple_tree::Value::new(v)).unwrap();
            model.insert(index, v);
        } else {
            assert!(tree.erase(index).is_some(), "op {i}");
            model.remove(&index);
        }
        if let Err(e) = tree.validate() {
            panic!("after op {i} {:?}: {e}\n{}", CORE_BUG_OPS_2[i], tree.dump());
        }
        let g = tree.pin();
        let got: Vec<(u64, u64)> = tree.iter(&g).map(|(r, v)| (*r.start(), v.get())).collect();
        let want: Vec<(u64, u64)> = model.iter().map(|(&a, &v)| (a, v)).collect();
        assert_eq!(got, want, "after op {i}");
    }
}

#[test]
fn erase_keeps_other_entries_range_tree() {
    replay_2(&maple_tree::MapleTree::new());
}

#[test]
fn erase_keeps_other_entries_alloc_tree() {
    replay_2(&maple_tree::MapleTree::new_alloc());
}

/// A same-range store over an entry covering the whole space is an exact fit (found by the
/// `dup_ops` fuzz target): no node allocated.
#[test]
fn whole_space_replacement_is_exact_fit() {
    use maple_tree::{MapleTree, Value};
    let t = MapleTree::<Value>::new();
    t.store_range(0..=u64::MAX, Value::new(1)).unwrap();
    let d = t.dup();
    let before = d.stats();
    d.store_range(0..=u64::MAX, Value::new(2)).unwrap();
    let after = d.stats();
    assert_eq!(d.get(7), Some(Value::new(2)));
    assert_eq!(after.exact_fit - before.exact_fit, 1, "{after:?}");
    assert_eq!(after.nodes_allocated, before.nodes_allocated, "{after:?}");
    assert_eq!(d.erase(5).map(|e| e.range()), Some(0..=u64::MAX));
    assert!(d.is_empty());
}

/// A whole-space store over a tree of several ranges is one new root (`wr_new_root`), counted
/// once (it was counted twice: by the whole-space branch and by the new leaf root); a
/// whole-space NULL store empties the tree, also one new root.
#[test]
fn whole_space_store_counts_one_new_root() {
    use maple_tree::{MapleTree, Value};
    let t = MapleTree::<Value>::new();
    for i in 0..50u64 {
        t.store_range(10 * i..=10 * i + 5, Value::new(i)).unwrap();
    }
    let s0 = t.stats();
    t.store_range(0..=u64::MAX, Value::new(7)).unwrap();
    let s1 = t.stats();
    assert_eq!(s1.new_root - s0.new_root, 1, "{s1:?}");
    assert_eq!(t.get(12_345), Some(Value::new(7)));
    t.store_range(3..=4, Value::new(8)).unwrap();
    let s2 = t.stats();
    t.erase_range(0..=u64::MAX).unwrap();
    let s3 = t.stats();
    assert_eq!(s3.new_root - s2.new_root, 1, "{s3:?}");
    assert!(t.is_empty());
    t.validate().unwrap();
}

/// Found by the property test (`full_space`, a random seed in CI): a NULL store strictly inside
/// the last entry of a full rightmost leaf with one free slot took the append split's 16-slot fill,
/// which keeps the written range as the leaf's last slot — here a NULL, so a leaf that was no
/// longer the rightmost ended in NULL (`validate`: "non-rightmost leaf ends in NULL"). The fills
/// are for entries only; NULL stores truncate.
#[test]
fn null_store_inside_the_last_entry_of_a_full_leaf() {
    use maple_tree::{MapleTree, Value};
    for exclusive in [false, true] {
        let mut t = MapleTree::<Value>::new();
        {
            let mut w = if exclusive { t.exclusive() } else { t.lock() };
            for i in 1..=7u64 {
                w.store_range(10 * i..=10 * i + 4, Value::new(i)).unwrap();
            }
            // 15 slots: [0, 9] NULL, seven entries with gaps, then this entry up to u64::MAX.
            w.store_range(75..=u64::MAX, Value::new(99)).unwrap();
            w.validate().unwrap();
            w.erase_range(80..=81).unwrap();
            if let Err(e) = w.validate() {
                panic!("exclusive {exclusive}: {e}\n{}", w.dump());
            }
        }
        assert_eq!(t.get(79), Some(Value::new(99)));
        assert_eq!(t.get(80), None);
        assert_eq!(t.get(81), None);
        assert_eq!(t.get(82), Some(Value::new(99)));
        assert_eq!(t.get(u64::MAX), Some(Value::new(99)));
        assert_eq!(t.count(), 9);
    }
}
