//! Target `dup_ops`: build a tree, `dup` it (a structural copy with cloned entries), then write
//! to both trees independently; both are checked against their own models after every step,
//! and a same-range replacement of every entry must be all exact fits.

use arbitrary::Arbitrary;

use super::harness::{decode, with_writer, Tut, World, WriteOp, WriterMode};
use super::model::{Content, CyclicModel, Model};

/// Tolerates the known core bug that storing over an entry covering `[0, u64::MAX]` is not an
/// exact fit (see `whole_space_replacement_is_exact_fit` in `tests/fuzz_replay.rs`); set to
/// `false` once it is fixed.
pub const TOLERATE_WHOLE_SPACE_NOT_EXACT_FIT: bool = false;

/// One step.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// A write to the original (`false`) or the copy (`true`, once it exists).
    W(bool, WriteOp),
    /// `dup()` the original into a new copy (dropping the previous copy), through the façade,
    /// a locked guard or an exclusive guard.
    Dup(WriterMode),
    /// Drop the copy.
    DropCopy,
    /// Store a fresh entry over exactly every entry's range (the fork pattern): every store
    /// must be an exact fit and allocate nothing.
    ReplaceAll(bool),
}

/// The decoded input, for reading a crash (`FUZZ_INPUT=file cargo test --test fuzz_replay
/// describe_input -- --ignored --nocapture`).
pub fn describe(data: &[u8]) -> String {
    format!("{:#?}", decode::<Op>(data))
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((cfg, ops)) = decode::<Op>(data) else {
        return;
    };
    let mut w = World::new(&cfg);
    for op in &ops {
        step(&mut w, op);
        w.check_all();
    }
    w.finish();
}

fn target(w: &World, copy: bool) -> usize {
    if copy && w.trees.len() > 1 {
        1
    } else {
        0
    }
}

fn step(w: &mut World, op: &Op) {
    match *op {
        Op::W(copy, ref wop) => {
            let t = target(w, copy);
            w.write(t, wop)
        }
        Op::Dup(mode) => {
            w.trees.truncate(1);
            let first_new = w.ledger.next_serial();
            let created = w.ledger.created();
            let src = &mut w.trees[0];
            let before = src.tree.stats();
            let tree = match mode {
                WriterMode::Facade => src.tree.dup(),
                WriterMode::Locked => src.tree.lock().dup(),
                WriterMode::Exclusive => src.tree.exclusive().dup(),
            };
            let step = w.step;
            // Same kind, same height, as many nodes as the source has live ones.
            assert_eq!(
                tree.is_alloc(),
                src.tree.is_alloc(),
                "step {step}: dup changed the tree kind"
            );
            assert_eq!(
                tree.height(),
                src.tree.height(),
                "step {step}: dup changed the height"
            );
            let st = tree.stats();
            assert_eq!(
                st.nodes_allocated,
                before.nodes_allocated - before.nodes_freed,
                "step {step}: dup allocated a different number of nodes than the source holds"
            );
            // The copy holds the source's ranges with cloned entries: same values, fresh serials.
            let g = tree.pin();
            let mut model = Model::default();
            let mut fresh = std::collections::BTreeSet::new();
            for (a, b, c) in src.model.partition() {
                match c {
                    None => {}
                    Some(Content::Zero) => model.store(a, b, Some(Content::Zero)),
                    Some(Content::Entry { val, serial }) => {
                        let (r, v) = tree
                            .load_range(a, &g)
                            .unwrap_or_else(|| panic!("step {step}: dup lost [{a}, {b}]"));
                        let (x, y) = (*r.start(), *r.end());
                        assert_eq!(
                            (x, y, v.val),
                            (a, b, val),
                            "step {step}: dup changed a range"
                        );
                        assert!(
                            v.serial >= first_new && v.serial != serial,
                            "step {step}: dup shares entry {serial} instead of cloning it"
                        );
                        fresh.insert(v.serial);
                        model.store(
                            a,
                            b,
                            Some(Content::Entry {
                                val,
                                serial: v.serial,
                            }),
                        );
                    }
                }
            }
            drop(g);
            assert_eq!(
                w.ledger.created() - created,
                fresh.len() as u64,
                "step {step}: dup created entries the copy does not hold"
            );
            let cyclic = CyclicModel::default();
            w.trees.push(Tut {
                tree,
                model,
                cyclic,
                next: 0,
            });
        }
        Op::DropCopy => {
            w.trees.truncate(1);
        }
        Op::ReplaceAll(copy) => {
            let t = target(w, copy);
            let mode = w.mode;
            let ents = w.trees[t].model.entries();
            let new: Vec<_> = ents
                .iter()
                .map(|&(a, b, v, _)| (a, b, w.entry(v + 1000)))
                .collect();
            let serials: Vec<_> = new.iter().map(|(_, _, e)| e.serial).collect();
            let tut = &mut w.trees[t];
            let before = tut.tree.stats();
            with_writer(&mut tut.tree, mode, |wr| {
                for (a, b, e) in new {
                    wr.store_range(a, b, e).unwrap();
                }
            });
            let after = tut.tree.stats();
            for (&(a, b, v, _), s) in ents.iter().zip(serials) {
                tut.model.store(
                    a,
                    b,
                    Some(Content::Entry {
                        val: v + 1000,
                        serial: s,
                    }),
                );
            }
            let step = w.step;
            // Known core bug (tests/fuzz_replay.rs `whole_space_replacement_is_exact_fit`): a
            // store over a whole-space entry takes the new-root path. Tolerated until fixed.
            let whole = ents.iter().any(|e| (e.0, e.1) == (0, u64::MAX));
            if !(TOLERATE_WHOLE_SPACE_NOT_EXACT_FIT && whole) {
                assert_eq!(
                    after.exact_fit - before.exact_fit,
                    ents.len() as u64,
                    "step {step}: same-range replacement was not all exact fits"
                );
                assert_eq!(
                    after.nodes_allocated, before.nodes_allocated,
                    "step {step}: exact fits allocated nodes"
                );
            }
        }
    }
}
