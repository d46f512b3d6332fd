//! Regression: a sequence of single-index inserts and erases, delta-debugged by the poll batcher's
//! descriptor-table tests, after which an erase corrupted a neighbour.

const CORE_BUG_OPS: [(bool, u64, u64); 62] = [
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

fn replay_core_bug_ops(tree: &maple_tree::MapleTree<maple_tree::Value>) -> Result<(), String> {
    let mut model = std::collections::BTreeMap::new();
    for (i, &(insert, index, v)) in CORE_BUG_OPS.iter().enumerate() {
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
                    CORE_BUG_OPS[i],
                    model.get(&k)
                ));
            }
        }
    }
    tree.validate().map_err(|e| format!("validate: {e:?}"))
}

#[test]
fn erase_does_not_leak_neighbour_entry_range_tree() {
    replay_core_bug_ops(&maple_tree::MapleTree::new()).unwrap();
}

#[test]
fn erase_does_not_leak_neighbour_entry_alloc_tree() {
    replay_core_bug_ops(&maple_tree::MapleTree::new_alloc()).unwrap();
}
