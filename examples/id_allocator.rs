//! A cyclic id allocator (as the kernel's PID and IPC id allocators): ids come from a window,
//! searching upward from the last one handed out and wrapping, so a freed id is not reused at
//! once.
//!
//! Two writer threads allocate ids with `alloc_cyclic` and free their oldest ones with `erase`;
//! they share the cyclic cursor (`next`) through a `Mutex<u64>`, since the tree keeps no cursor
//! of its own. Two reader threads look ids up meanwhile without any lock (`get`, and `load`
//! under a guard). At the end every live id maps to the session its writer recorded.
//!
//! `cargo run --release --example id_allocator`

use maple_tree::{MapleTree, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::thread;

const FIRST_ID: u64 = 300; // ids below are reserved, as PIDs below 300 after the first wrap
const LAST_ID: u64 = 4095;
const PER_WRITER: u64 = 20_000; // allocations per writer
const KEEP: usize = 1_000; // live ids per writer; older ones are freed

/// The entry: which writer holds the id and its serial number there (`Value` fits 63 bits).
fn session(writer: u64, serial: u64) -> Value {
    Value::new(writer << 32 | serial)
}

fn main() {
    let tree = MapleTree::<Value>::new_alloc();
    let next = Mutex::new(FIRST_ID); // the cyclic cursor, shared by the writers
    let wraps = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let (hits, misses) = (AtomicU64::new(0), AtomicU64::new(0));

    let live: Vec<VecDeque<(u64, Value)>> = thread::scope(|s| {
        for reader in 0..2u64 {
            let (tree, done, hits, misses) = (&tree, &done, &hits, &misses);
            s.spawn(move || {
                let (mut id, mut h, mut m) = (FIRST_ID + reader, 0, 0);
                while !done.load(Relaxed) {
                    // `get` pins for you; `load` reads under a guard you hold (cheaper in a loop).
                    let guard = tree.pin();
                    for _ in 0..64 {
                        id = if id >= LAST_ID { FIRST_ID } else { id + 7 };
                        match tree.load(id, &guard) {
                            Some(v) => {
                                assert!(v.get() >> 32 < 2, "id {id}: {v:?} is no session");
                                h += 1;
                            }
                            None => m += 1,
                        }
                    }
                    drop(guard);
                    assert!(tree.get(LAST_ID + 1).is_none()); // never allocated
                }
                hits.fetch_add(h, Relaxed);
                misses.fetch_add(m, Relaxed);
            });
        }
        let writers: Vec<_> = (0..2u64)
            .map(|writer| {
                let (tree, next, wraps) = (&tree, &next, &wraps);
                s.spawn(move || {
                    let mut mine = VecDeque::new();
                    for serial in 0..PER_WRITER {
                        let entry = session(writer, serial);
                        let mut cursor = next.lock().unwrap();
                        let (id, wrapped) = tree
                            .alloc_cyclic(entry, FIRST_ID, LAST_ID, &mut cursor)
                            .expect("the window has room: at most 2 * KEEP ids are live");
                        drop(cursor);
                        wraps.fetch_add(wrapped as u64, Relaxed);
                        mine.push_back((id, entry));
                        if mine.len() > KEEP {
                            let (old, _) = mine.pop_front().unwrap();
                            assert_eq!(tree.erase(old), Some((old, old)));
                        }
                    }
                    mine
                })
            })
            .collect();
        let live = writers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Relaxed);
        live
    });

    // Every id a writer still holds maps to its session; nothing else is allocated.
    let mut ids: Vec<u64> = Vec::new();
    for (id, entry) in live.iter().flatten() {
        assert_eq!(tree.get(*id), Some(*entry));
        ids.push(*id);
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2 * KEEP);
    assert_eq!(tree.count(), 2 * KEEP);
    let window = LAST_ID - FIRST_ID + 1;
    let wraps = wraps.into_inner();
    assert!(
        wraps >= 2 * PER_WRITER / window - 1,
        "the cursor wrapped only {wraps} times"
    );
    println!(
        "allocated {} ids in [{FIRST_ID}, {LAST_ID}], freed {}",
        2 * PER_WRITER,
        2 * PER_WRITER - 2 * KEEP as u64
    );
    println!(
        "live: {} ids, the cyclic cursor wrapped {wraps} times",
        tree.count()
    );
    let (hits, misses) = (hits.into_inner(), misses.into_inner());
    println!(
        "readers: {} lock-free lookups, {hits} found a session, {misses} a free id",
        hits + misses
    );
    assert!(hits + misses > 0);
}
