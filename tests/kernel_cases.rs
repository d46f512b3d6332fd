//! Kernel test cases (lib/test_maple_tree.c, tools/testing/radix-tree/maple.c), ported in our own
//! words from the reference's descriptions, plus five bugs of the 6.12 tree that this crate fixes
//! (README.md, "Kernel-identical semantics"), each a "6.12 quirk" below.

use maple_tree::{Error, MapleTree, Status, Value};

fn v(x: u64) -> Value {
    Value::new(x)
}

fn ranges(t: &MapleTree<Value>) -> Vec<(u64, u64, u64)> {
    let g = t.pin();
    t.iter(&g)
        .map(|(r, x)| (*r.start(), *r.end(), x.get()))
        .collect()
}

/// `[i*step, i*step+len]` for i in 0..n.
fn filled(alloc: bool, n: u64, step: u64, len: u64) -> MapleTree<Value> {
    let t = if alloc {
        MapleTree::new_alloc()
    } else {
        MapleTree::new()
    };
    for i in 0..n {
        t.store_range(i * step..=i * step + len, v(i)).unwrap();
    }
    t.validate().unwrap();
    t
}

#[test]
fn check_ranges_overlap_and_invalid() {
    let t = MapleTree::<Value>::new();
    t.insert_range(10..=15, v(1)).unwrap();
    t.insert_range(20..=25, v(2)).unwrap();
    assert_eq!(t.insert_range(17..=22, v(3)), Err(Error::Occupied));
    #[allow(clippy::reversed_empty_ranges)]
    let bad = 26..=1;
    assert_eq!(t.insert_range(bad.clone(), v(3)), Err(Error::InvalidRange));
    assert_eq!(t.store_range(bad.clone(), v(3)), Err(Error::InvalidRange));
    assert_eq!(t.erase_range(bad), Err(Error::InvalidRange));
    assert_eq!(ranges(&t), [(10, 15, 1), (20, 25, 2)]);
    t.insert_range(16..=19, v(4)).unwrap();
    assert_eq!(ranges(&t), [(10, 15, 1), (16, 19, 4), (20, 25, 2)]);
    t.validate().unwrap();
}

#[test]
fn empty_area_window_table() {
    // [i*10, i*10+9] for i = 1..=20, then [160,169] emptied: gaps [0,9], [160,169], [210,MAX].
    for alloc in [true, false] {
        let t = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::new()
        };
        for i in 1..=20u64 {
            t.store_range(i * 10..=i * 10 + 9, v(i)).unwrap();
        }
        t.erase_range(160..=169).unwrap();
        t.validate().unwrap();
        let rev = |a, b, s| t.empty_area_rev(a..=b, s);
        let fwd = |a, b, s| t.empty_area(a..=b, s);
        assert_eq!(rev(5, 90, 10), Err(Error::NoRoom));
        assert_eq!(rev(6, 90, 5), Err(Error::NoRoom));
        assert_eq!(rev(5, 90, 5), Ok(5));
        assert_eq!(rev(5, 217, 9), Ok(161));
        assert_eq!(rev(100, 218, 3), Ok(216));
        assert_eq!(rev(100, 218, 16), Err(Error::NoRoom));
        assert_eq!(rev(167, 200, 4), Err(Error::NoRoom));
        assert_eq!(rev(100, 162, 4), Err(Error::NoRoom));
        assert_eq!(fwd(0, 100, 9), Ok(0));
        assert_eq!(fwd(0, 100, 4), Ok(0));
        assert_eq!(fwd(0, 100, 11), Err(Error::NoRoom));
        assert_eq!(fwd(5, 100, 6), Err(Error::NoRoom));
        assert_eq!(fwd(0, 8, 10), Err(Error::InvalidWindow));
        assert_eq!(fwd(100, 163, 6), Err(Error::NoRoom));
        // Window errors.
        assert_eq!(fwd(10, 5, 1), Err(Error::InvalidWindow));
        assert_eq!(fwd(0, 100, 0), Err(Error::InvalidWindow));
    }
}

#[test]
fn empty_tree_gaps() {
    let t = MapleTree::<Value>::new_alloc();
    assert_eq!(t.empty_area(5..=100, 10), Ok(5));
    assert_eq!(t.empty_area_rev(5..=100, 10), Ok(91));
    assert_eq!(t.empty_area(0..=u64::MAX, u64::MAX), Ok(0));
}

#[test]
fn alloc_cyclic_sequence_and_wrap() {
    let t = MapleTree::<Value>::new_alloc();
    let mut next = 0;
    for i in 0..100u64 {
        assert_eq!(
            t.alloc_cyclic(2..=1000, &mut next, v(i)),
            Ok((2 + i, false))
        );
    }
    assert_eq!(next, 102);
    // Free one behind, fill to the end, then wrap to it.
    t.erase(50);
    let mut next = 999;
    assert_eq!(t.alloc_cyclic(2..=1000, &mut next, v(1)), Ok((999, false)));
    assert_eq!(t.alloc_cyclic(2..=1000, &mut next, v(1)), Ok((1000, false)));
    assert_eq!(t.alloc_cyclic(2..=1000, &mut next, v(1)), Ok((50, true)));
    assert_eq!(next, 51);
    t.validate().unwrap();

    // The kernel's wrap test: ULONG_MAX - 1, ULONG_MAX, then 2 reported as wrapped.
    let t = MapleTree::<Value>::new_alloc();
    let mut next = u64::MAX - 1;
    assert_eq!(
        t.alloc_cyclic(2..=u64::MAX, &mut next, v(1)),
        Ok((u64::MAX - 1, false))
    );
    assert_eq!(
        t.alloc_cyclic(2..=u64::MAX, &mut next, v(2)),
        Ok((u64::MAX, false))
    );
    assert_eq!(next, 0);
    assert_eq!(t.alloc_cyclic(2..=u64::MAX, &mut next, v(3)), Ok((2, true)));
    assert_eq!(
        t.alloc_cyclic(2..=u64::MAX, &mut next, v(4)),
        Ok((3, false))
    );

    // Full.
    let t = MapleTree::<Value>::new_alloc();
    let mut next = 0;
    for _ in 0..3 {
        t.alloc_cyclic(5..=7, &mut next, v(0)).unwrap();
    }
    assert_eq!(t.alloc_cyclic(5..=7, &mut next, v(0)), Err(Error::NoRoom));
    // Not an allocation tree.
    let t = MapleTree::<Value>::new();
    assert_eq!(
        t.alloc_cyclic(5..=7, &mut next, v(0)),
        Err(Error::NotAllocTree)
    );
    assert_eq!(t.alloc_range(0..=10, 1, v(0)), Err(Error::NotAllocTree));
}

#[test]
fn find_rev_examples() {
    // 201 entries [i*10, i*10+5].
    let t = filled(false, 201, 10, 5);
    let g = t.pin();
    let mut c = t.cursor(1000, &g);
    assert_eq!(c.find_rev(1000).map(|x| x.get()), Some(100));
    assert_eq!(c.find_rev(1000), None);
    let mut c = t.cursor(999, &g);
    assert_eq!(c.find_rev(997), None);
    let mut c = t.cursor(1000, &g);
    assert_eq!(c.find_rev(900).map(|x| x.get()), Some(100));
    assert_eq!(c.find_rev(900).map(|x| x.get()), Some(99));
    let mut c = t.cursor(20, &g);
    let got: Vec<_> = (0..4).map(|_| c.find_rev(0).map(|x| x.get())).collect();
    assert_eq!(got, [Some(2), Some(1), Some(0), None]);
    assert_eq!(c.status(), Status::Underflow);
}

#[test]
fn prev_limits() {
    let t = filled(false, 100, 10, 5);
    let g = t.pin();
    let mut c = t.cursor(20, &g);
    assert_eq!(c.prev(19), None);
    let mut c = t.cursor(80, &g);
    assert_eq!(c.prev(76), None);
    let mut c = t.cursor(80, &g);
    assert_eq!(c.prev(70).map(|x| x.get()), Some(7));
}

/// `check_state_handling` on a tree with 0x1000-0x1500, 0x2000-0x2500, 0x3000-0x3500.
#[test]
fn state_handling() {
    let t = MapleTree::<Value>::new();
    t.store_range(0x1000..=0x1500, v(1)).unwrap();
    t.store_range(0x2000..=0x2500, v(2)).unwrap();
    t.store_range(0x3000..=0x3500, v(3)).unwrap();
    let g = t.pin();
    let mut c = t.cursor(0x1200, &g);
    assert_eq!(c.walk().map(|x| x.get()), Some(1));
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (0x1000, 0x1500, Status::Active)
    );
    c.set(0x1600);
    assert_eq!(c.walk(), None);
    assert_eq!((c.index(), c.last()), (0x1501, 0x1fff));

    // next into the limit: overflow with the empty range inspected, then a wider limit goes on.
    c.set(0x2000);
    assert_eq!(c.walk().map(|x| x.get()), Some(2));
    assert_eq!(c.next(0x2999), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (0x2501, 0x2fff, Status::Overflow)
    );
    assert_eq!(c.next(u64::MAX).map(|x| x.get()), Some(3));
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (0x3000, 0x3500, Status::Active)
    );
    // prev after overflow returns the last entry.
    assert_eq!(c.next(u64::MAX), None);
    assert_eq!(c.status(), Status::Overflow);
    assert_eq!(c.prev(0).map(|x| x.get()), Some(3));

    // prev into the limit: underflow, then a lower limit goes on.
    c.set(0x2000);
    assert_eq!(c.walk().map(|x| x.get()), Some(2));
    assert_eq!(c.prev(0x1600), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (0x1501, 0x1fff, Status::Underflow)
    );
    assert_eq!(c.prev(0).map(|x| x.get()), Some(1));
    // find after underflow returns the entry at the current position.
    assert_eq!(c.prev(0), None);
    assert_eq!(c.status(), Status::Underflow);
    assert_eq!(c.find(u64::MAX).map(|x| x.get()), Some(1));

    // find stays active at its limit, with the empty range it stopped at.
    c.set(0x2000);
    assert_eq!(c.find(u64::MAX).map(|x| x.get()), Some(2));
    assert_eq!(c.find(0x2700), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (0x2501, 0x2fff, Status::Active)
    );
    assert_eq!(c.find(0x5000).map(|x| x.get()), Some(3));

    // pause resumes after last.
    c.set(0);
    assert_eq!(c.find(u64::MAX).map(|x| x.get()), Some(1));
    c.pause();
    assert_eq!(c.status(), Status::Pause);
    assert_eq!(c.find(u64::MAX).map(|x| x.get()), Some(2));

    // next_range / prev_range step over empty ranges.
    c.set(0x1000);
    assert_eq!(c.walk().map(|x| x.get()), Some(1));
    assert_eq!(c.next_range(u64::MAX), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (0x1501, 0x1fff, Status::Active)
    );
    assert_eq!(c.next_range(u64::MAX).map(|x| x.get()), Some(2));
    assert_eq!(c.prev_range(0), None);
    assert_eq!((c.index(), c.last()), (0x1501, 0x1fff));

    // Empty tree: walk gives the whole space and status none.
    let e = MapleTree::<Value>::new();
    let g = e.pin();
    let mut c = e.cursor(5, &g);
    assert_eq!(c.walk(), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (0, u64::MAX, Status::None)
    );
    assert_eq!(c.find(u64::MAX), None);
    assert_eq!(c.next(u64::MAX), None);
}

/// 6.12 quirk 5: a cursor that hits its limit before it has walked, moved again with a
/// wider limit, must work (the 6.12 tree dereferenced a null node).
#[test]
fn quirk_limit_before_walk() {
    let t = filled(false, 50, 10, 5);
    let g = t.pin();
    let mut c = t.cursor(100, &g);
    assert_eq!(c.next(100), None);
    assert_eq!(c.status(), Status::Overflow);
    assert_eq!(c.next(u64::MAX).map(|x| x.get()), Some(11));
    let mut c = t.cursor(100, &g);
    assert_eq!(c.find(50), None);
    assert_eq!(c.find(u64::MAX).map(|x| x.get()), Some(10));
    let mut c = t.cursor(100, &g);
    assert_eq!(c.prev(100), None);
    assert_eq!(c.prev(0).map(|x| x.get()), Some(9));
}

/// 6.12 quirk 1: `insert_range(0, u64::MAX)` on a single-leaf tree must say occupied.
#[test]
fn quirk_insert_whole_space_single_leaf() {
    let t = MapleTree::<Value>::new();
    t.store(5, v(5)).unwrap();
    assert_eq!(t.height(), 1);
    assert_eq!(t.insert_range(0..=u64::MAX, v(1)), Err(Error::Occupied));
    assert_eq!(ranges(&t), [(5, 5, 5)]);
    let t = filled(false, 1000, 10, 5);
    assert_eq!(t.insert_range(0..=u64::MAX, v(1)), Err(Error::Occupied));
}

/// 6.12 quirk 2: `prev` with a lower limit above 0 must not return an entry at `[0, 0]`.
#[test]
fn quirk_prev_min_above_zero() {
    let t = MapleTree::<Value>::new();
    t.store(0, v(0)).unwrap();
    t.store(10, v(10)).unwrap();
    let g = t.pin();
    assert!(t.prev(10, 5, &g).is_none());
    assert_eq!(
        t.prev(10, 0, &g)
            .map(|(r, x)| (*r.start(), *r.end(), x.get())),
        Some((0, 0, 0))
    );
    let mut c = t.cursor(10, &g);
    assert_eq!(c.prev(5), None);
    let mut c = t.cursor(10, &g);
    assert_eq!(c.find_rev(5).map(|x| x.get()), Some(10));
    assert_eq!(c.find_rev(5), None);
    let mut c = t.cursor(10, &g);
    assert_eq!(c.walk().map(|x| x.get()), Some(10));
    assert_eq!(c.prev_range(5), None);
    assert_eq!((c.index(), c.last()), (1, 9));
    assert_eq!(c.prev_range(5), None);
    assert_eq!(c.status(), Status::Underflow);
}

/// 6.12 quirk 3: top-down gap search with `max = u64::MAX` finds gaps in the leftmost
/// subtree (and alloc_rrange with it).
#[test]
fn quirk_rev_search_whole_space() {
    let t = MapleTree::<Value>::new_alloc();
    for i in 0..2000u64 {
        t.store_range(i * 10 + 3..=i * 10 + 9, v(i)).unwrap();
    }
    // Fill the top so that only the leftmost subtree has a gap of 3.
    t.store_range(20_000..=u64::MAX, v(1)).unwrap();
    assert!(t.height() >= 3);
    assert_eq!(t.empty_area_rev(0..=u64::MAX, 3), Ok(19_990));
    assert_eq!(t.empty_area_rev(0..=u64::MAX, 4), Err(Error::NoRoom));
    assert_eq!(t.alloc_rrange(0..=u64::MAX, 3, v(9)), Ok(19_990..=19_992));
    t.validate().unwrap();
}

/// 6.12 quirk 4: after storing over `[0, u64::MAX]` and erasing, gap search works.
#[test]
fn quirk_whole_space_then_erase() {
    let t = MapleTree::<Value>::new_alloc();
    t.store_range(0..=u64::MAX, v(1)).unwrap();
    assert_eq!(t.empty_area(0..=100, 1), Err(Error::NoRoom));
    assert_eq!(t.erase(77).map(|e| e.range()), Some(0..=u64::MAX));
    assert!(t.is_empty());
    assert_eq!(t.empty_area(0..=100, 1), Ok(0));
    assert_eq!(t.empty_area_rev(0..=100, 1), Ok(100));
    t.validate().unwrap();
}

#[test]
fn null_store_widening() {
    // 5001 ranges [i*10, i*10+5]; NULL over [49800, 49815] merges with the empty neighbours.
    let t = filled(true, 5001, 10, 5);
    let mut w = t.lock();
    let mut c = w.cursor(0);
    c.set_range(49800..=49815);
    c.store_null().unwrap();
    assert_eq!((c.index(), c.last()), (49796, 49819));
    // A value across empty-bounded boundaries keeps exactly its range.
    c.set_range(49907..=49928);
    c.store(v(7)).unwrap();
    assert_eq!((c.index(), c.last()), (49907, 49928));
    drop(w);
    t.validate().unwrap();
    let g = t.pin();
    assert_eq!(
        t.load_range(49907, &g).map(|(r, _)| (*r.start(), *r.end())),
        Some((49907, 49928))
    );
    assert_eq!(t.load(49906, &g), None);
    assert_eq!(t.load(49905, &g).map(|x| x.get()), Some(4990));
}

/// `check_iteration`: writes through the cursor while iterating keep the iteration right.
#[test]
fn iteration_with_writes() {
    let t = filled(false, 126, 10, 9);
    let mut w = t.lock();
    let mut c = w.cursor(0);
    let mut seen = vec![];
    let mut done = std::collections::HashSet::new();
    while let Some(x) = c.find(u64::MAX) {
        let x = x.get();
        seen.push(x);
        if seen.len() > 300 {
            panic!("runaway iteration: {seen:?}");
        }
        if !done.insert(x) {
            continue;
        }
        match x {
            76 => {
                // Overwrite part of the current entry.
                c.set_range(760..=765);
                c.store(v(1076)).unwrap();
            }
            78 => {
                c.set_range(780..=785);
                c.store(v(1078)).unwrap();
            }
            92 => {
                c.set_range(925..=929);
                c.store(v(1092)).unwrap();
            }
            _ => {}
        }
    }
    drop(w);
    // After 76's head was replaced, the iteration went on with the [766,769] remainder (76).
    let pos = seen.iter().position(|&x| x == 76).unwrap();
    assert_eq!(&seen[pos..pos + 5], &[76, 76, 77, 78, 78]);
    assert_eq!(seen.iter().filter(|&&x| x == 92).count(), 1);
    assert_eq!(seen.iter().filter(|&&x| x == 93).count(), 1);
    assert_eq!(seen.len(), 126 + 2);
    assert_eq!(*seen.last().unwrap(), 125);
    let g = t.pin();
    assert_eq!(t.load(767, &g).map(|x| x.get()), Some(76));
    assert_eq!(t.load(762, &g).map(|x| x.get()), Some(1076));
    assert_eq!(t.load(786, &g).map(|x| x.get()), Some(78));
    assert_eq!(t.load(927, &g).map(|x| x.get()), Some(1092));
    t.validate().unwrap();
}

#[test]
fn index_zero_and_max() {
    for alloc in [false, true] {
        let t = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::new()
        };
        t.store(0, v(0)).unwrap();
        t.store(u64::MAX, v(9)).unwrap();
        t.store_range(u64::MAX - 10..=u64::MAX - 1, v(8)).unwrap();
        assert_eq!(
            ranges(&t),
            [
                (0, 0, 0),
                (u64::MAX - 10, u64::MAX - 1, 8),
                (u64::MAX, u64::MAX, 9)
            ]
        );
        let g = t.pin();
        let mut i = u64::MAX;
        assert_eq!(t.find(&mut i, u64::MAX, &g).map(|x| x.get()), Some(9));
        assert_eq!(i, 0, "find wraps the index to 0 after u64::MAX");
        assert_eq!(t.find_after(&mut i, u64::MAX, &g), None);
        assert_eq!(
            t.iter(&g).rev().map(|(_, x)| x.get()).collect::<Vec<_>>(),
            [9, 8, 0]
        );
        assert_eq!(
            t.erase(u64::MAX).map(|e| e.range()),
            Some(u64::MAX..=u64::MAX)
        );
        assert_eq!(t.erase(0).map(|e| e.range()), Some(0..=0));
        assert_eq!(t.empty_area_rev(0..=u64::MAX, 1), Ok(u64::MAX));
        assert_eq!(t.empty_area(0..=u64::MAX, 1), Ok(0));
        t.validate().unwrap();
    }
}

#[test]
fn mt_find_and_for_each() {
    let t = MapleTree::<Value>::new();
    t.store(0, v(0)).unwrap();
    let mut p = 1u64;
    while p < 1 << 40 {
        t.store(p, v(p)).unwrap();
        p *= 4;
    }
    t.lock().store_zero_range(64..=64).unwrap();
    let g = t.pin();
    let mut i = 17;
    assert_eq!(t.find(&mut i, 512, &g).map(|x| x.get()), Some(256));
    assert_eq!(i, 257);
    let mut i = 17;
    assert_eq!(t.find(&mut i, 20, &g), None);
    assert_eq!(i, 17);
    // mt_for_each skips the zero entry.
    let mut i = 0;
    let mut got = vec![];
    if let Some(x) = t.find(&mut i, u64::MAX, &g) {
        got.push(x.get());
        while let Some(x) = t.find_after(&mut i, u64::MAX, &g) {
            got.push(x.get());
        }
    }
    assert!(!got.contains(&64));
    assert_eq!(got.len(), 20);
    assert_eq!(t.load(64, &g), None);
    // The zero entry occupies its range.
    assert_eq!(t.insert(64, v(1)), Err(Error::Occupied));
    assert_eq!(t.erase(64).map(|e| e.range()), Some(64..=64));
    t.insert(64, v(64)).unwrap();
    t.validate().unwrap();
}

#[test]
fn seq_and_rev_seq() {
    for alloc in [false, true] {
        let t = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::new()
        };
        for i in 0..=1000u64 {
            t.store(i, v(i)).unwrap();
            if i % 97 == 0 {
                t.validate().unwrap();
            }
            assert!(t.get(i + 1).is_none());
        }
        for i in 0..=1000u64 {
            assert_eq!(t.get(i), Some(v(i)));
        }
        let t = if alloc {
            MapleTree::<Value>::new_alloc()
        } else {
            MapleTree::new()
        };
        for i in (1..=1000u64).rev() {
            t.store(i, v(i)).unwrap();
            assert!(t.get(i - 1).is_none());
        }
        t.validate().unwrap();
        assert_eq!(t.count(), 1000);
    }
}

#[test]
fn erase_until_empty_and_rebuild() {
    for alloc in [false, true] {
        let t = filled(alloc, 3000, 9, 10);
        assert!(t.height() >= 3);
        for i in (0..3000u64).rev() {
            assert!(t.erase(i * 9 + 5).is_some());
            if i % 101 == 0 {
                t.validate().unwrap();
            }
        }
        assert!(t.is_empty());
        assert_eq!(t.height(), 0);
        for i in 0..3000u64 {
            t.store_range(i * 9..=i * 9 + 4, v(i)).unwrap();
        }
        t.validate().unwrap();
        assert_eq!(t.count(), 3000);
        // Erase from the left too.
        for i in 0..3000u64 {
            t.erase(i * 9);
        }
        assert!(t.is_empty());
        t.validate().unwrap();
    }
}

#[test]
fn spanning_store_over_thousands() {
    let t = filled(true, 5001, 10, 5);
    let h = t.height();
    t.erase_range(1200..=2380).unwrap();
    t.validate().unwrap();
    t.store_range(9..=50006, v(1)).unwrap();
    t.validate().unwrap();
    assert_eq!(ranges(&t), [(0, 5, 0), (9, 50006, 1)]);
    assert!(t.height() < h);
    // NULL over almost everything widens to the whole space.
    t.erase_range(6..=50006).unwrap();
    t.erase_range(0..=5).unwrap();
    assert!(t.is_empty());
}

#[test]
fn spanning_store_height_shrinks() {
    // `check_spanning_store_height`: singletons until height 3, then one store over many.
    let t = MapleTree::<Value>::new();
    let mut i = 0u64;
    while t.height() < 3 {
        t.store(i, v(i)).unwrap();
        i += 1;
    }
    t.store_range(90..=140, v(0)).unwrap();
    t.validate().unwrap();
    assert!(t.height() <= 3);
    // Replace all but 20 entries: two leaves remain under one root.
    t.store_range(10..=i - 10, v(1)).unwrap();
    t.validate().unwrap();
    assert_eq!(t.height(), 2);
    // Ten entries and the trailing empty range fit one leaf under the root.
    t.store_range(5..=u64::MAX - 5, v(1)).unwrap();
    assert_eq!(t.height(), 1);
    t.validate().unwrap();
}

#[test]
fn node_overwrite() {
    // `check_node_overwrite`: 4000 ranges [i*100, i*100+50], NULL over [319951, 367950].
    let t = filled(false, 4000, 100, 50);
    t.erase_range(319_951..=367_950).unwrap();
    t.validate().unwrap();
    let g = t.pin();
    assert_eq!(
        t.load_range(319_900, &g)
            .map(|(r, _)| (*r.start(), *r.end())),
        Some((319_900, 319_950))
    );
    assert!(t.load(330_000, &g).is_none());
}

#[test]
fn bnode_min_spanning() {
    // 51 ranges [i*10, i*10+9] stored in descending order, then NULL over [240, 509].
    let t = MapleTree::<Value>::new();
    for i in (0..=50u64).rev() {
        t.store_range(i * 10..=i * 10 + 9, v(i)).unwrap();
    }
    t.erase_range(240..=509).unwrap();
    t.validate().unwrap();
    assert_eq!(t.count(), 24);
}

#[test]
fn dup_is_structural_and_exact_fit() {
    for alloc in [false, true] {
        let t = filled(alloc, 1000, 10, 5);
        let mut d = t.dup();
        d.validate().unwrap();
        assert_eq!(ranges(&t), ranges(&d));
        assert_eq!(t.height(), d.height());
        assert_eq!(t.dump().lines().count(), d.dump().lines().count());
        let before = d.stats();
        {
            let mut w = d.exclusive();
            let mut c = w.cursor(0);
            while let Some(x) = c.find(u64::MAX) {
                let x = x.get();
                c.store(v(x + 10_000)).unwrap();
            }
        }
        let after = d.stats();
        assert_eq!(after.exact_fit - before.exact_fit, 1000);
        assert_eq!(
            after.nodes_allocated, before.nodes_allocated,
            "no allocation"
        );
        d.validate().unwrap();
        // Independent afterwards.
        assert_eq!(t.get(16), None);
        assert_eq!(t.get(12), Some(v(1)));
        assert_eq!(d.get(12), Some(v(10_001)));
        d.erase_range(0..=5000).unwrap();
        assert_eq!(t.count(), 1000);
    }
}

#[test]
fn write_paths_are_taken() {
    let mut t = MapleTree::<Value>::new_alloc();
    let s0 = t.stats();
    t.store_range(10..=15, v(1)).unwrap(); // new root
    t.store_range(20..=25, v(2)).unwrap(); // three-way append
    t.store_range(30..=u64::MAX, v(3)).unwrap(); // +1 append at the end
    let s = t.stats();
    assert_eq!(s.new_root - s0.new_root, 1);
    assert_eq!(s.append_three_way, 1);
    assert_eq!(s.append_end, 1);
    t.store_range(20..=25, v(4)).unwrap();
    assert_eq!(t.stats().exact_fit, 1);
    // Slot store through the shared reference becomes a node store.
    t.store_range(22..=27, v(5)).unwrap();
    assert_eq!(t.stats().node_store, 1);
    assert_eq!(t.stats().slot_store, 0);
    // In exclusive mode it is in place.
    t.exclusive().store_range(21..=28, v(6)).unwrap();
    assert_eq!(
        t.stats().slot_store3 + t.stats().slot_store,
        1,
        "{:?}",
        t.stats()
    );
    t.validate().unwrap();
    // Split up to a new root.
    for i in 0..40u64 {
        t.store_range(100 + i * 10..=105 + i * 10, v(i)).unwrap();
    }
    let s = t.stats();
    assert!(s.split >= 1 && s.grow >= 1 && t.height() == 2, "{s:?}");
    assert!(
        s.append_split >= 1,
        "in-order appends split by truncation: {s:?}"
    );
    t.validate().unwrap();
    // Keep appending until the root itself is truncated and a third level grows.
    for i in 40..2000u64 {
        t.store_range(100 + i * 10..=105 + i * 10, v(i)).unwrap();
    }
    assert!(t.height() >= 3);
    t.validate().unwrap();
    let g = t.pin();
    let starts: Vec<u64> = t.iter(&g).map(|(r, _)| *r.start()).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    // Each new range sits inside the [30, MAX] entry stored above, whose pieces remain between.
    assert_eq!(
        starts.iter().filter(|&&a| a >= 500 && a % 10 == 0).count(),
        1960
    );
    assert_eq!(
        starts.iter().filter(|&&a| a >= 500 && a % 10 == 6).count(),
        1960
    );
    drop(g);
    // Rebalance after erases.
    for i in 0..12u64 {
        t.erase(100 + i * 10);
    }
    assert!(t.stats().rebalance >= 1, "{:?}", t.stats());
    // Spanning store.
    t.store_range(5..=400, v(0)).unwrap();
    assert!(t.stats().spanning_store >= 1);
    t.validate().unwrap();
    // Appends off: the three-way case becomes a node store.
    t.set_append(false);
    let before = t.stats();
    t.erase_range(1000..=u64::MAX).unwrap();
    t.store_range(2000..=2005, v(1)).unwrap();
    let after = t.stats();
    assert_eq!(after.append_three_way, before.append_three_way);
    t.validate().unwrap();
}

#[test]
fn send_sync_and_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MapleTree<Value>>();
    assert_send_sync::<MapleTree<std::sync::Arc<String>>>();
    assert_send_sync::<MapleTree<Box<u64>>>();

    let t = std::sync::Arc::new(filled(false, 1000, 10, 5));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let t = t.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                let mut first = true;
                while first || !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    first = false;
                    for i in (0..10_000u64).step_by(7) {
                        let g = t.pin();
                        if let Some(x) = t.load(i, &g) {
                            // Old value i/10, or a new value 100_000 + i/10.
                            let x = x.get();
                            assert!(x == i / 10 || x == 100_000 + i / 10, "index {i} read {x}");
                            n += 1;
                        }
                    }
                }
                n
            })
        })
        .collect();
    for round in 0..20u64 {
        for i in 0..1000u64 {
            let val = if round % 2 == 0 { 100_000 + i } else { i };
            t.store_range(i * 10..=i * 10 + 5, v(val)).unwrap();
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    t.validate().unwrap();
}

#[test]
fn dumps() {
    let t = filled(true, 40, 10, 5);
    let d = t.dump();
    assert!(d.contains("height 2"));
    assert!(d.contains("value 39"));
    let dot = t.dump_dot();
    assert!(dot.starts_with("digraph maple"));
    assert_eq!(dot.matches("->").count() + 1, dot.matches("label=").count());
}

/// Leaving underflow with `next` returns the entry at the current position; leaving overflow
/// with `find_rev` moves to the previous entry (the kernel's `mas_next`/`mas_find_rev` setup;
/// found by the fuzz campaign's differential model).
#[test]
fn leaving_underflow_and_overflow() {
    let t = MapleTree::<Value>::new();
    t.store_range(10..=15, v(1)).unwrap();
    t.store_range(20..=25, v(2)).unwrap();
    let g = t.pin();
    let mut c = t.cursor(12, &g);
    assert_eq!(c.walk().map(|x| x.get()), Some(1));
    assert_eq!(c.prev(10), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (10, 15, Status::Underflow)
    );
    assert_eq!(c.next(u64::MAX).map(|x| x.get()), Some(1));
    assert_eq!((c.index(), c.last(), c.status()), (10, 15, Status::Active));

    let mut c = t.cursor(22, &g);
    assert_eq!(c.walk().map(|x| x.get()), Some(2));
    assert_eq!(c.next(22), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (20, 25, Status::Overflow)
    );
    assert_eq!(c.find_rev(0).map(|x| x.get()), Some(1));
    assert_eq!((c.index(), c.last(), c.status()), (10, 15, Status::Active));
}

/// In-order builds fill leaves to all 16 slots (eight `[range][gap]` pairs, as the kernel's
/// rightmost split leaves them), with or without readers (`exclusive()` in place, the lock by
/// copy-on-write of the leaf and its parent), in both tree kinds: most append splits are fills,
/// and the nodes per range match the kernel's 34.3 bytes per range for a range tree (more for
/// allocation trees, whose internal nodes hold 10 children).
#[test]
fn in_order_build_fills_leaves() {
    let n = 20_000u64;
    for alloc in [false, true] {
        for exclusive in [false, true] {
            let mut t = if alloc {
                MapleTree::<Value>::new_alloc()
            } else {
                MapleTree::<Value>::new()
            };
            {
                let mut w = if exclusive { t.exclusive() } else { t.lock() };
                for i in 1..=n {
                    w.store_range(10 * i..=10 * i + 5, v(i)).unwrap();
                }
            }
            t.validate().unwrap();
            assert_eq!(t.count() as u64, n);
            let s = t.stats();
            let what = format!("alloc {alloc}, exclusive {exclusive}: {s:?}");
            assert!(s.append_fill * 10 >= s.append_split * 8, "{what}");
            let bytes = (s.nodes_allocated - s.nodes_freed) as f64 * 256.0 / n as f64;
            let bound = if alloc { 37.0 } else { 35.0 };
            assert!(bytes <= bound, "{bytes:.1} B/range, {what}");
        }
    }
}
