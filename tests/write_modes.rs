//! The write paths build the same tree: every write through `exclusive()` (in place: the slot
//! stores, the in-place node store, the in-place leaf split) and every write through the lock
//! (copy-on-write; the direct leaf split) leaves the tree node for node as the same write
//! through the lock with the direct leaf split turned off (every split a rebuild), compared by
//! their dumps with node addresses left out, each tree validated after every operation.

use maple_tree::{MapleTree, Options, Stats, Value, WriteGuard};
use proptest::prelude::*;

/// A write of the sequence.
#[derive(Clone, Copy, Debug)]
enum Op {
    Store(u64, u64, u64),
    Erase(u64, u64),
    Remove(u64),
}

/// `t`'s dump without node addresses (the two trees' nodes live at different addresses).
fn shape(t: &mut MapleTree<Value>) -> String {
    let dump = t.lock().dump();
    let mut out = String::with_capacity(dump.len());
    for line in dump.lines() {
        let mut hide = false;
        for word in line.split_whitespace() {
            out.push_str(if hide { "_" } else { word });
            out.push(' ');
            hide = matches!(word, "node" | "parent" | "root");
        }
        out.push('\n');
    }
    out
}

/// Applies `ops` to one tree through `exclusive()`, to one through the lock and to one through
/// the lock with every split a rebuild, comparing their shapes; returns the three trees'
/// statistics.
fn run(ops: &[Op], alloc: bool) -> [Stats; 3] {
    let opts = || Options::new().alloc(alloc);
    let mut x = MapleTree::<Value>::with_options(opts());
    let mut r = MapleTree::<Value>::with_options(opts());
    let mut g = MapleTree::<Value>::with_options(opts());
    g.set_leaf_split(false);
    for (step, &op) in ops.iter().enumerate() {
        let want = apply(&mut g.lock(), op);
        assert_eq!(apply(&mut x.exclusive(), op), want, "step {step}: {op:?}");
        assert_eq!(apply(&mut r.lock(), op), want, "step {step}: {op:?}");
        for (name, t) in [("exclusive", &mut x), ("lock", &mut r), ("rebuild", &mut g)] {
            if let Err(e) = t.validate() {
                panic!("step {step}: {op:?}: {name}: {e}\n{}", t.lock().dump());
            }
        }
        // Shapes after every write while the trees are small, then every 20th and the last
        // (a dump per write of a large tree is quadratic; a difference, once made, stays).
        if step >= 500 && step % 20 != 0 && step + 1 != ops.len() {
            continue;
        }
        let want = shape(&mut g);
        for (name, t) in [("exclusive", &mut x), ("lock", &mut r)] {
            let got = shape(t);
            assert!(
                got == want,
                "step {step}: {op:?}: {name} differs from the rebuild\n{name}:\n{got}\nrebuild:\n{want}"
            );
        }
    }
    [x.stats(), r.stats(), g.stats()]
}

/// One write through `w` (a write guard of either mode); what `erase` returned, if it ran.
fn apply(w: &mut WriteGuard<'_, Value>, op: Op) -> Option<(u64, u64)> {
    match op {
        Op::Store(a, b, v) => {
            w.store_range(a..=b, Value::new(v)).unwrap();
            None
        }
        Op::Erase(a, b) => {
            w.erase_range(a..=b).unwrap();
            None
        }
        Op::Remove(i) => w.erase(i).map(|e| {
            let r = e.range();
            (*r.start(), *r.end())
        }),
    }
}

/// A small deterministic generator (xorshift64*), so the long runs need no seed file.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random range stores (1–64 long, as the benchmark's) with erases mixed in, over `space`.
fn random_ops(seed: u64, n: usize, space: u64) -> Vec<Op> {
    let mut g = Rng(seed);
    (0..n)
        .map(|i| {
            let a = g.below(space);
            let b = a.saturating_add(g.below(64)).min(space);
            match g.below(10) {
                0..=6 => Op::Store(a, b, i as u64),
                7 | 8 => Op::Erase(a, b),
                _ => Op::Remove(a),
            }
        })
        .collect()
}

#[test]
fn random_stores_build_the_same_tree_on_every_path() {
    for alloc in [false, true] {
        for (seed, space) in [(1, 3_000), (2, 40_000), (3, u64::MAX - 1)] {
            let [sx, sr, sg] = run(&random_ops(seed, 4_000, space), alloc);
            let what = format!("alloc {alloc}, seed {seed}");
            assert_eq!(sx.split, sg.split, "{what}");
            assert_eq!(sr.split, sg.split, "{what}");
            // The direct split ran in both modes, and only when on.
            assert!(sx.leaf_split > 0, "{what}: {sx:?}");
            assert!(sr.leaf_split > 0, "{what}: {sr:?}");
            assert_eq!(sg.leaf_split, 0, "{what}");
        }
    }
}

#[test]
fn in_order_and_reverse_builds_match() {
    for alloc in [false, true] {
        let fwd: Vec<Op> = (0..1_000u64)
            .map(|i| Op::Store(10 * i, 10 * i + 5, i))
            .collect();
        let rev: Vec<Op> = (0..1_000u64)
            .rev()
            .map(|i| Op::Store(10 * i, 10 * i + 5, i))
            .collect();
        // Every second range filled in between: splits in the middle of full leaves.
        let mid: Vec<Op> = (0..1_000u64)
            .map(|i| Op::Store(10 * i, 10 * i + 5, i))
            .chain((0..1_000u64).map(|i| Op::Store(10 * i + 7, 10 * i + 8, i)))
            .collect();
        for ops in [fwd, rev, mid] {
            run(&ops, alloc);
        }
    }
}

fn op(space: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..space, 0..24u64, any::<u16>()).prop_map(move |(a, l, v)| Op::Store(a, (a + l).min(space), u64::from(v))),
        2 => (0..space, 0..24u64).prop_map(move |(a, l)| Op::Erase(a, (a + l).min(space))),
        1 => (0..space).prop_map(Op::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_writes_build_the_same_tree_on_every_path(
        alloc in any::<bool>(),
        ops in proptest::collection::vec(op(600), 1..700),
    ) {
        run(&ops, alloc);
    }
}
