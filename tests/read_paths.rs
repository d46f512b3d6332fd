//! Read paths across writes, single-threaded and deterministic: a reader (cursor, iterator)
//! holds its position while the writer changes the tree under it, then moves on. Each case is
//! a reproducer of a fixed read-path bug; README "Guarantees" states the promise each read path keeps.

use maple_tree::{MapleTree, Value};

/// 40 ranges `[10 i, 10 i + 9]` (`width` 10) or `[10 i, 10 i + 5]` (`width` 6), values `i`.
fn tree_of(width: u64) -> MapleTree<Value> {
    let tree = MapleTree::new();
    for i in 0..40u64 {
        tree.store_range(10 * i..=10 * i + width - 1, Value::new(i))
            .unwrap();
    }
    tree
}

/// A cursor's forward moves never go backwards: after meeting a node the writer replaced, the
/// cursor re-walks to where it was and steps past it (the kernel's `mas_next_slot`), instead of
/// returning the whole range that now holds `last + 1`.
#[test]
fn cursor_find_never_moves_backwards_across_a_replaced_leaf() {
    let tree = tree_of(10);
    let g = tree.pin();
    let mut c = tree.cursor(0, &g);
    let mut last_end = None;
    // Up to [140, 149], the last slot of the first leaf.
    for i in 0..15u64 {
        assert_eq!(c.find(u64::MAX), Some(Value::new(i)));
        last_end = Some(c.last());
    }
    assert_eq!(last_end, Some(149));
    tree.store_range(146..=169, Value::new(99)).unwrap();
    let v = c.find(u64::MAX);
    let (a, b) = (c.index(), c.last());
    assert!(
        a > 149,
        "cursor moved backwards: [{a}, {b}] ({v:?}) after [140, 149]"
    );
    assert_eq!((a, b, v), (170, 179, Some(Value::new(17))));
}

/// The mirror: `find_rev` from the first slot of a leaf, after the writer replaced it.
#[test]
fn cursor_find_rev_never_moves_forwards_across_a_replaced_leaf() {
    let tree = tree_of(10);
    let g = tree.pin();
    let mut c = tree.cursor(u64::MAX, &g);
    let mut first = u64::MAX;
    while let Some(v) = c.find_rev(0) {
        first = c.index();
        if v == Value::new(15) {
            break;
        }
    }
    assert_eq!(first, 150); // [150, 159]: slot 0 of the second leaf
    tree.store_range(130..=153, Value::new(99)).unwrap();
    let v = c.find_rev(0);
    let (a, b) = (c.index(), c.last());
    assert!(
        b < 150,
        "cursor moved forwards: [{a}, {b}] ({v:?}) after [150, 159]"
    );
    assert_eq!((a, b, v), (120, 129, Some(Value::new(12))));
}

/// A cursor's `find` skips the reserved zero entry at its start index as everywhere else.
#[test]
fn cursor_find_skips_a_zero_entry_at_the_start_index() {
    let tree = MapleTree::<Value>::new();
    tree.store_range(27..=32, Value::new(318)).unwrap();
    tree.lock().store_zero_range(0..=0).unwrap();
    let g = tree.pin();
    let mut c = tree.cursor(0, &g);
    assert_eq!(c.find(u64::MAX), Some(Value::new(318)));
    assert_eq!((c.index(), c.last()), (27, 32));
    let mut c = tree.cursor(40, &g);
    tree.lock().store_zero_range(40..=45).unwrap();
    assert_eq!(c.find_rev(0), Some(Value::new(318)));
}

/// One iterator driven from both ends never yields an index twice: the end still on an old
/// leaf stops at what the other end has yielded.
#[test]
fn double_ended_iter_never_yields_an_index_twice() {
    let tree = tree_of(6);
    let g = tree.pin();
    let mut it = tree.iter(&g);
    assert_eq!(it.next().map(|(r, _)| (*r.start(), *r.end())), Some((0, 5)));
    tree.store_range(33..=36, Value::new(99)).unwrap(); // [30, 35] becomes [30, 32]
    let mut back = Vec::new();
    while let Some((r, _)) = it.next_back() {
        let (a, b) = (*r.start(), *r.end());
        back.push((a, b));
        if a <= 33 {
            break;
        }
    }
    assert_eq!(back.last(), Some(&(33, 36)));
    let front: Vec<_> = it.map(|(r, _)| (*r.start(), *r.end())).collect();
    let mut all = vec![(0, 5)];
    all.extend(front);
    all.extend(back.into_iter().rev());
    for w in all.windows(2) {
        assert!(
            w[0].1 < w[1].0,
            "yielded twice or out of order: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
}

/// A cursor whose re-walk finds the tree emptied under it (the writer cleared it) ends its
/// moves there; the next move neither panics nor reads a path it no longer has.
#[test]
fn cursor_moves_after_the_tree_was_cleared_under_it() {
    let tree = tree_of(10);
    let g = tree.pin();
    let mut c = tree.cursor(140, &g);
    assert_eq!(c.find(1000), Some(Value::new(14))); // [140, 149], the first leaf's last
    tree.lock().clear();
    assert_eq!(c.find(1000), None);
    assert_eq!(c.find(1000), None);
    assert_eq!(c.next(1000), None);
    assert_eq!(c.prev(0), None);
    assert_eq!(c.find_rev(0), None);
    tree.store_range(500..=509, Value::new(50)).unwrap();
    c.reset();
    assert_eq!(c.find(1000), Some(Value::new(50)));
}

/// A cursor move answers from the tree as it is at the move, not from a leaf the writer
/// replaced before it (the kernel re-walks when `ma_dead_node` says so): a range made before
/// the previous move and unchanged since is never skipped.
#[test]
fn cursor_moves_read_the_tree_of_their_own_time() {
    let tree = tree_of(6); // [10 i, 10 i + 5]
    let g = tree.pin();
    let mut c = tree.cursor(0, &g);
    assert_eq!(c.find(u64::MAX), Some(Value::new(0))); // [0, 5]
                                                       // A node store in the cursor's leaf: [26, 28] between [20, 25] and [30, 35].
    tree.store_range(26..=28, Value::new(99)).unwrap();
    assert_eq!(c.find(u64::MAX), Some(Value::new(1))); // [10, 15]
    assert_eq!(c.find(u64::MAX), Some(Value::new(2))); // [20, 25]
                                                       // [26, 28] was there before the previous move and is unchanged since: not skipped.
    assert_eq!(c.find(u64::MAX), Some(Value::new(99)));
    assert_eq!((c.index(), c.last()), (26, 28));
    let mut c = tree.cursor(u64::MAX, &g);
    assert_eq!(c.find_rev(0), Some(Value::new(39))); // [390, 395]
    tree.store_range(382..=384, Value::new(98)).unwrap();
    // [380, 385] became [380, 381], [382, 384], [385, 385]: the cursor sees the last.
    assert_eq!(c.find_rev(0), Some(Value::new(38)));
    assert_eq!(c.index(), 385);
}
