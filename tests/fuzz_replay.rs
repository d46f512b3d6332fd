//! Replays every committed fuzz corpus file (`tests/corpus/<target>/*`) through the same target
//! functions the cargo-fuzz targets run, on stable Rust, so a regression of anything a fuzzer
//! once reached fails the normal test run. Also holds the minimised reproducers of bugs the
//! fuzzers found, as plain tests.

#[path = "fuzz_support/mod.rs"]
mod fuzz_support;

use std::path::PathBuf;

use fuzz_support::TARGETS;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("corpus")
        .join(target)
}

fn replay(target: &str) {
    let run = TARGETS
        .iter()
        .find(|t| t.name == target)
        .expect("known target")
        .run;
    let dir = corpus_dir(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "corpus {} is empty", dir.display());
    for f in &files {
        let data = std::fs::read(f).expect("read corpus file");
        let r = std::panic::catch_unwind(|| run(&data));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{target}: corpus file {} fails: {msg}", f.display());
        }
    }
    eprintln!("{target}: replayed {} corpus files", files.len());
}

#[test]
fn replay_tree_ops() {
    replay("tree_ops");
}

#[test]
fn replay_cursor_ops() {
    replay("cursor_ops");
}

#[test]
fn replay_gap_ops() {
    replay("gap_ops");
}

#[test]
fn replay_dup_ops() {
    replay("dup_ops");
}

#[test]
fn replay_snapshot() {
    replay("snapshot");
}

#[test]
fn every_target_has_a_replay_test_and_a_fuzz_binary() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let this = std::fs::read_to_string(root.join("tests/fuzz_replay.rs")).unwrap();
    // The cargo-fuzz crate is its own package, so a published `.crate` does not hold it: check
    // it where it exists (the repository), and the corpora everywhere.
    let Ok(cargo) = std::fs::read_to_string(root.join("fuzz/Cargo.toml")) else {
        eprintln!("fuzz/ is not part of this package: checked the replay tests only");
        for name in TARGETS.iter().map(|t| t.name) {
            assert!(
                this.contains(&format!("replay(\"{name}\")")),
                "no replay test for {name}"
            );
        }
        return;
    };
    for name in TARGETS.iter().map(|t| t.name) {
        assert!(
            this.contains(&format!("replay(\"{name}\")")),
            "no replay test for {name}"
        );
        assert!(
            cargo.contains(&format!("name = \"{name}\"")),
            "no [[bin]] for {name} in fuzz/Cargo.toml"
        );
        assert!(
            root.join(format!("fuzz/fuzz_targets/{name}.rs")).is_file(),
            "no fuzz_targets/{name}.rs"
        );
    }
}

/// Prints a decoded input and runs it: `FUZZ_TARGET=tree_ops FUZZ_INPUT=path cargo test
/// --release --test fuzz_replay describe_input -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: needs FUZZ_TARGET and FUZZ_INPUT"]
fn describe_input() {
    let name = std::env::var("FUZZ_TARGET").expect("FUZZ_TARGET");
    let path = std::env::var("FUZZ_INPUT").expect("FUZZ_INPUT");
    let t = TARGETS
        .iter()
        .find(|t| t.name == name)
        .expect("known target");
    let data = std::fs::read(&path).expect("read FUZZ_INPUT");
    println!("{}", (t.describe)(&data));
    (t.run)(&data);
}

/// Runs every file of a directory through a target and prints the time per input:
/// `FUZZ_TARGET=mm_ops FUZZ_DIR=fuzz/corpus-work/mm_ops cargo test --release --test fuzz_replay
/// time_dir -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: needs FUZZ_TARGET and FUZZ_DIR"]
fn time_dir() {
    let name = std::env::var("FUZZ_TARGET").expect("FUZZ_TARGET");
    let dir = std::env::var("FUZZ_DIR").expect("FUZZ_DIR");
    let t = TARGETS
        .iter()
        .find(|t| t.name == name)
        .expect("known target");
    let repeat: usize = std::env::var("FUZZ_REPEAT").map_or(1, |r| r.parse().expect("FUZZ_REPEAT"));
    let mut slow = Vec::new();
    let start = std::time::Instant::now();
    let mut n = 0;
    for _ in 0..repeat {
        for e in std::fs::read_dir(&dir).expect("FUZZ_DIR") {
            let p = e.expect("dir entry").path();
            let data = std::fs::read(&p).expect("read");
            let t0 = std::time::Instant::now();
            (t.run)(&data);
            slow.push((t0.elapsed(), p));
            n += 1;
        }
    }
    slow.sort();
    println!("{n} inputs in {:?}", start.elapsed());
    for (d, p) in slow.iter().rev().take(5) {
        println!("{d:?} {}", p.display());
    }
}

/// The model itself against the kernel's `check_empty_area_window` table (lib/test_maple_tree.c),
/// so the oracle cannot drift: entries `[i*10, i*10+9]` for i in 1..=20, then `[160, 169]` erased.
#[test]
fn model_matches_kernel_empty_area_window_table() {
    use fuzz_support::model::{Content, Model};
    use maple_tree::Error::{InvalidWindow, NoRoom};
    let mut m = Model::default();
    for i in 1..=20u64 {
        m.store(
            i * 10,
            i * 10 + 9,
            Some(Content::Entry { val: i, serial: i }),
        );
    }
    m.store(160, 169, None);
    let rev = |a, b, s| m.empty_area(a, b, s, true);
    let fwd = |a, b, s| m.empty_area(a, b, s, false);
    assert_eq!(rev(5, 90, 10), Err(NoRoom));
    assert_eq!(rev(6, 90, 5), Err(NoRoom));
    assert_eq!(rev(5, 90, 5), Ok(5));
    assert_eq!(rev(5, 217, 9), Ok(161));
    assert_eq!(rev(100, 218, 3), Ok(216));
    assert_eq!(rev(100, 218, 16), Err(NoRoom));
    assert_eq!(rev(167, 200, 4), Err(NoRoom));
    assert_eq!(rev(100, 162, 4), Err(NoRoom));
    assert_eq!(fwd(0, 100, 9), Ok(0));
    assert_eq!(fwd(0, 100, 4), Ok(0));
    assert_eq!(fwd(0, 100, 11), Err(NoRoom));
    assert_eq!(fwd(5, 100, 6), Err(NoRoom));
    assert_eq!(fwd(0, 8, 10), Err(InvalidWindow));
    assert_eq!(fwd(100, 163, 6), Err(NoRoom));
}

/// The model's `alloc_cyclic` against the kernel's `alloc_cyclic_testing` numbers
/// (lib/test_maple_tree.c).
#[test]
fn model_matches_kernel_alloc_cyclic() {
    use fuzz_support::model::{Content, CyclicModel, Model};
    let mut m = Model::default();
    let mut cy = CyclicModel::default();
    let mut next = 0u64;
    for k in 0..100u64 {
        let (i, searched) = cy.expect(&m, 2, u64::MAX, next).unwrap();
        assert_eq!((i, cy.reported(searched)), (2 + k, false));
        cy.apply(i, searched);
        m.store(i, i, Some(Content::Zero));
        next = i + 1;
    }
    let mut m = Model::default();
    let mut cy = CyclicModel::default();
    let mut next = u64::MAX - 1;
    let mut call = || {
        let (i, searched) = cy.expect(&m, 2, u64::MAX, next).unwrap();
        let r = cy.reported(searched);
        cy.apply(i, searched);
        m.store(i, i, Some(Content::Zero));
        next = i.wrapping_add(1);
        (i, r)
    };
    assert_eq!(call(), (u64::MAX - 1, false));
    assert_eq!(call(), (u64::MAX, false));
    assert_eq!(call(), (2, true));
    assert_eq!(call(), (3, false));
}

/// The per-step checks are not vacuous: a change behind the model's back, an entry the model
/// thinks is gone, and a cursor position the model disagrees with are all caught.
#[test]
fn checks_catch_divergences() {
    use fuzz_support::harness::{Config, Ix, Space, World, WriteOp, WriterMode};
    use fuzz_support::model::Content;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    let cfg = Config {
        alloc: true,
        space: Space::Small,
        mode: WriterMode::Locked,
        appends: true,
    };
    let mut w = World::new(&cfg);
    w.write(
        0,
        &WriteOp::AppendRun {
            start: Ix::Small(0),
            count: 500,
            width: 3,
            gap: 1,
        },
    );
    w.check_all();
    // A write the model does not know about.
    w.trees[0].tree.erase(40);
    assert!(
        catch_unwind(AssertUnwindSafe(|| w.check(0))).is_err(),
        "partition check missed an erase"
    );
    w.trees[0].model.store(40, 43, None);
    w.check_all();
    // The model forgets an entry the tree still holds: liveness must notice.
    let (a, b, _, _) = w.trees[0].model.entries()[3];
    w.trees[0].model.store(a, b, Some(Content::Zero));
    assert!(
        catch_unwind(AssertUnwindSafe(|| w.check_live())).is_err(),
        "liveness check missed a leak"
    );
    w.trees[0].tree.lock().store_zero_range(a..=b).unwrap();
    w.check_all();
    w.finish();
}

/// Entries `[10, 15]` and `[20, 25]` (the scenarios below).
fn two_entries() -> maple_tree::MapleTree<maple_tree::Value> {
    let t = maple_tree::MapleTree::new();
    t.store_range(10..=15, maple_tree::Value::new(1)).unwrap();
    t.store_range(20..=25, maple_tree::Value::new(2)).unwrap();
    t
}

/// Kernel `mas_next_setup`, case `ma_underflow` ("the user expects the mas to be one before
/// where it is"): `mas_next` after an underflow first returns the entry at the current
/// position. (Reported from this file; fixed in the core.)
#[test]
fn kernel_next_after_underflow_returns_current_entry() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(12, &g);
    assert_eq!(c.walk().map(|v| v.get()), Some(1));
    assert_eq!(c.prev(10), None); // index 10 <= min 10: underflow at once, still on [10, 15]
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (10, 15, Status::Underflow)
    );
    // Kernel: returns the entry at the current position, [10, 15].
    assert_eq!(c.next(u64::MAX).map(|v| v.get()), Some(1));
    assert_eq!((c.index(), c.last(), c.status()), (10, 15, Status::Active));
}

/// Kernel `mas_find_rev_setup`, case `ma_overflow`: the state becomes active and
/// `mas_prev_slot` moves to the previous entry. (Reported from this file; fixed in the core.)
#[test]
fn kernel_find_rev_after_overflow_moves_back() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(22, &g);
    assert_eq!(c.walk().map(|v| v.get()), Some(2));
    assert_eq!(c.next(22), None); // last 25 >= max 22: overflow at once, still on [20, 25]
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (20, 25, Status::Overflow)
    );
    // Kernel: the previous entry, [10, 15].
    assert_eq!(c.find_rev(0).map(|v| v.get()), Some(1));
    assert_eq!((c.index(), c.last(), c.status()), (10, 15, Status::Active));
}

/// Found by `dup_ops` (corpus `regress-whole-space-exact-fit`): `dup` documents that storing
/// replacement entries over the same ranges afterwards is always an exact fit, but a store over
/// an entry covering the whole index space takes the new-root path (a fresh leaf is allocated,
/// `exact_fit` not counted). The contents stay correct. Ops: `store_range(.., a)`,
/// `dup()`, then on the copy `store_range(.., b)`: expected one exact fit and no node
/// allocated; actual `new_root` + 1 and one node allocated. (Same without `dup`.)
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
    assert_eq!(
        after.exact_fit - before.exact_fit,
        1,
        "not an exact fit: {after:?}"
    );
    assert_eq!(
        after.nodes_allocated, before.nodes_allocated,
        "allocated: {after:?}"
    );
}

/// Kernel `mas_next_range` shares `mas_next_setup`: after an underflow it first returns the
/// entry at the current position, as `mas_next` does. The crate's `next_range` moves on to the
/// following (empty) range `[16, 19]` instead.
#[test]
fn kernel_next_range_after_underflow_returns_current_entry() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(12, &g);
    assert_eq!(c.walk().map(|v| v.get()), Some(1));
    assert_eq!(c.prev(10), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (10, 15, Status::Underflow)
    );
    assert_eq!(c.next_range(u64::MAX).map(|v| v.get()), Some(1));
    assert_eq!((c.index(), c.last(), c.status()), (10, 15, Status::Active));
}

/// Kernel `mas_prev_range` shares `mas_prev_setup`: after an overflow it first returns the
/// entry at the current position, as `mas_prev` does. The crate's `prev_range` moves on to the
/// preceding (empty) range `[16, 19]` instead.
#[test]
fn kernel_prev_range_after_overflow_returns_current_entry() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(22, &g);
    assert_eq!(c.walk().map(|v| v.get()), Some(2));
    assert_eq!(c.next(22), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (20, 25, Status::Overflow)
    );
    assert_eq!(c.prev_range(0).map(|v| v.get()), Some(2));
    assert_eq!((c.index(), c.last(), c.status()), (20, 25, Status::Active));
}

/// Kernel `mas_next_setup` from underflow returns the current range only if it holds an
/// entry; on an empty range it goes on to `mas_next_slot`, so `mas_next_range` moves to the
/// next range. Here: underflow on the empty `[16, 19]`, then `next_range` gives `[20, 25]`.
#[test]
fn kernel_next_range_after_underflow_on_empty_moves() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(17, &g);
    assert_eq!(c.walk(), None);
    assert_eq!(c.prev(16), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (16, 19, Status::Underflow)
    );
    assert_eq!(c.next_range(u64::MAX).map(|v| v.get()), Some(2));
    assert_eq!((c.index(), c.last(), c.status()), (20, 25, Status::Active));
}

/// Kernel `mas_next_setup` checks `last >= max` before anything else: from underflow on
/// `[10, 15]`, `next_range(12)` overflows and returns nothing.
#[test]
fn kernel_next_range_after_underflow_respects_max() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(12, &g);
    assert_eq!(c.walk().map(|v| v.get()), Some(1));
    assert_eq!(c.prev(10), None);
    assert_eq!(c.next_range(12).map(|v| v.get()), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (10, 15, Status::Overflow)
    );
}

/// Mirror of the above for `prev_range` after overflow on the empty `[16, 19]`: the kernel
/// moves to `[10, 15]`.
#[test]
fn kernel_prev_range_after_overflow_on_empty_moves() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(17, &g);
    assert_eq!(c.walk(), None);
    assert_eq!(c.next(19), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (16, 19, Status::Overflow)
    );
    assert_eq!(c.prev_range(0).map(|v| v.get()), Some(1));
    assert_eq!((c.index(), c.last(), c.status()), (10, 15, Status::Active));
}

/// Kernel `mas_prev_setup` checks `index <= min` first: from overflow on `[20, 25]`,
/// `prev_range(20)` underflows and returns nothing.
#[test]
fn kernel_prev_range_after_overflow_respects_min() {
    use maple_tree::Status;
    let t = two_entries();
    let g = t.pin();
    let mut c = t.cursor(22, &g);
    assert_eq!(c.walk().map(|v| v.get()), Some(2));
    assert_eq!(c.next(22), None);
    assert_eq!(c.prev_range(20).map(|v| v.get()), None);
    assert_eq!(
        (c.index(), c.last(), c.status()),
        (20, 25, Status::Underflow)
    );
}

/// The cursor model on seeded random inputs as well as the corpus: the model follows the
/// kernel's status machine (itself checked against the kernel by `tests/kernel_oracle.rs`), so
/// any divergence of the cursor from it fails here too, with the failing seed.
#[test]
fn cursor_ops_random_inputs() {
    let run = TARGETS
        .iter()
        .find(|t| t.name == "cursor_ops")
        .expect("known target")
        .run;
    let mut x = 0x5eed_c0de_u64;
    for seed in 0..120u64 {
        let len = 64 + (seed as usize * 37) % 2000;
        let data: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let r = std::panic::catch_unwind(|| run(&data));
        assert!(r.is_ok(), "cursor_ops: random input {seed} fails");
    }
}
