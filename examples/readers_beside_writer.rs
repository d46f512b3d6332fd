//! Lock-free readers beside a writer: what a reader may rely on while the tree changes.
//!
//! A writer thread keeps rewriting 64 slots of 100 indices each for about a second: it stores a
//! whole slot, splits one in two halves, stores a random piece of one (trimming what it
//! overlaps) or erases one. Each entry records the range it was stored for. Two reader threads
//! check, without taking any lock:
//! - every index `i` of a slot maps to nothing, or to an entry whose stored range contains `i`
//!   and lies inside the range the entry was stored for (a store may trim it, never grow it);
//! - an iteration yields ranges in increasing order that never overlap, each inside its
//!   entry's range.
//!
//! `cargo run --release --example readers_beside_writer`

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use maple_tree::MapleTree;

const SLOTS: u64 = 64;
const SLOT: u64 = 100; // slot s covers [s * SLOT, s * SLOT + SLOT - 1]

/// The entry: the range it was stored for, and a version number.
struct Rec {
    stored: RangeInclusive<u64>,
    version: u64,
}

impl Rec {
    /// Whether `r` lies inside the range this entry was stored for.
    fn covers(&self, r: &RangeInclusive<u64>) -> bool {
        self.stored.contains(r.start()) && self.stored.contains(r.end())
    }
}

/// A small xorshift generator, so the example needs no dependencies.
fn rand(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn main() {
    let tree = MapleTree::<Box<Rec>>::new();
    let stop = AtomicBool::new(false);
    let (lookups, hits, iterations) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let started = Instant::now();

    let writes = thread::scope(|s| {
        for seed in [1u64, 2] {
            let (tree, stop, lookups, hits, iterations) =
                (&tree, &stop, &lookups, &hits, &iterations);
            s.spawn(move || {
                let mut rng = seed * 0x9E37_79B9_7F4A_7C15;
                while !stop.load(Relaxed) {
                    // Point lookups: one guard for a batch (a guard delays frees: keep it short).
                    let guard = tree.pin();
                    for _ in 0..256 {
                        let i = rand(&mut rng) % (SLOTS * SLOT);
                        lookups.fetch_add(1, Relaxed);
                        if let Some((range, rec)) = tree.load_range(i, &guard) {
                            assert!(range.contains(&i), "{i} not in {range:?}");
                            assert!(rec.covers(&range), "{range:?} grew past {:?}", rec.stored);
                            hits.fetch_add(1, Relaxed);
                        }
                    }
                    // A whole iteration: ordered, non-overlapping, each inside its entry's range.
                    let mut prev_end = None;
                    for (range, rec) in tree.iter(&guard) {
                        assert!(!range.is_empty(), "{range:?}");
                        assert!(prev_end.is_none_or(|p| p < *range.start()), "{range:?}");
                        assert!(rec.covers(&range) && rec.version > 0);
                        prev_end = Some(*range.end());
                    }
                    iterations.fetch_add(1, Relaxed);
                }
            });
        }
        let writer = s.spawn(|| {
            let (mut rng, mut version) = (42u64, 0);
            let mut store = |first: u64, last: u64| {
                version += 1;
                let stored = first..=last;
                let rec = Box::new(Rec {
                    stored: stored.clone(),
                    version,
                });
                tree.store_range(stored, rec).unwrap();
            };
            while started.elapsed() < Duration::from_secs(1) {
                let base = rand(&mut rng) % SLOTS * SLOT;
                match rand(&mut rng) % 4 {
                    0 => store(base, base + SLOT - 1),
                    1 => {
                        store(base, base + SLOT / 2 - 1);
                        store(base + SLOT / 2, base + SLOT - 1);
                    }
                    2 => {
                        let a = base + rand(&mut rng) % SLOT;
                        let b = a + rand(&mut rng) % (base + SLOT - a);
                        store(a, b);
                    }
                    _ => tree.erase_range(base..base + SLOT).unwrap(),
                }
            }
            version
        });
        let writes = writer.join().unwrap();
        stop.store(true, Relaxed);
        writes
    });

    let elapsed = started.elapsed();
    tree.validate().expect("the tree's own invariants hold");
    let (lookups, hits, iterations) = (
        lookups.into_inner(),
        hits.into_inner(),
        iterations.into_inner(),
    );
    println!(
        "{:.2} s: the writer stored {writes} entries ({} ranges now)",
        elapsed.as_secs_f64(),
        tree.count()
    );
    println!("readers: {lookups} lookups ({hits} hit an entry), {iterations} full iterations");
    println!(
        "every lookup and iteration saw ranges that contain their index, in order, never grown"
    );
    assert!(writes > 0 && lookups > 0 && iterations > 0);
}
