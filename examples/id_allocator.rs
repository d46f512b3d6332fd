//! A cyclic id allocator (as the kernel's PID and IPC id allocators): ids come from a window,
//! searching upward from the last one handed out and wrapping, so a freed id is not reused at
//! once.
//!
//! `maple_tree::IdAllocator` keeps the cyclic position for you and can be shared by any number
//! of threads. Two writer threads open sessions with `alloc_with` (the session is built from its
//! id under the writer lock, so no reader ever sees an id without its final session) and close
//! their oldest ones with `free`. Two reader threads look ids up meanwhile without any lock
//! (`load` under a guard, `contains`). At the end every live id maps to the session its writer
//! recorded.
//!
//! `cargo run --release --example id_allocator`

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread;

use maple_tree::{Error, IdAllocator};

const FIRST_ID: u64 = 300; // ids below are reserved, as PIDs below 300 after the first wrap
const LAST_ID: u64 = 4095;
const PER_WRITER: u64 = 20_000; // allocations per writer
const KEEP: usize = 1_000; // live ids per writer; older ones are freed

/// The entry of an id: the session that holds it.
#[derive(Debug)]
struct Session {
    /// The session's own id, known when the session is built (`alloc_with`).
    id: u64,
    /// Which writer opened it, and its serial number there.
    writer: u64,
    serial: u64,
}

/// Opens a session for `writer`: allocates the next id and stores its session, built from the
/// id under the writer lock (readers find either no id or this very session, never a
/// placeholder).
fn open(ids: &IdAllocator<Arc<Session>>, writer: u64, serial: u64) -> Result<u64, Error> {
    ids.alloc_with(|id| Arc::new(Session { id, writer, serial }))
}

fn main() -> Result<(), Error> {
    let ids = IdAllocator::<Arc<Session>>::new(FIRST_ID..=LAST_ID)?;
    let done = AtomicBool::new(false);
    let (hits, misses) = (AtomicU64::new(0), AtomicU64::new(0));

    // Per writer: its live (id, serial) pairs, oldest first, and how often its ids wrapped.
    let writers: Vec<(VecDeque<(u64, u64)>, u64)> = thread::scope(|s| {
        for reader in 0..2u64 {
            let (ids, done, hits, misses) = (&ids, &done, &hits, &misses);
            s.spawn(move || {
                let (mut id, mut h, mut m) = (FIRST_ID + reader, 0, 0);
                while !done.load(Relaxed) {
                    // `load` borrows the entry under a guard you hold (cheaper than `get` in a
                    // loop, and no `Arc` clone).
                    let guard = ids.pin();
                    for _ in 0..64 {
                        id = if id >= LAST_ID { FIRST_ID } else { id + 7 };
                        match ids.load(id, &guard) {
                            Some(session) => {
                                // Never a placeholder: the session of an id names that id.
                                assert_eq!(session.id, id, "{session:?}");
                                assert!(session.writer < 2, "{session:?}");
                                h += 1;
                            }
                            None => m += 1,
                        }
                    }
                    drop(guard);
                    assert!(!ids.contains(LAST_ID + 1)); // outside the window: never allocated
                }
                hits.fetch_add(h, Relaxed);
                misses.fetch_add(m, Relaxed);
            });
        }
        let writers: Vec<_> = (0..2u64)
            .map(|writer| {
                let ids = &ids;
                s.spawn(move || {
                    let mut mine = VecDeque::new();
                    let (mut last, mut wraps) = (0, 0);
                    for serial in 0..PER_WRITER {
                        let id = open(ids, writer, serial)
                            .expect("the window has room: at most 2 * KEEP ids are live");
                        // Ids only go up until the search wraps to the window's start (the other
                        // writer allocates between ours: we skip the ids it takes).
                        wraps += (id < last) as u64;
                        last = id;
                        mine.push_back((id, serial));
                        if mine.len() > KEEP {
                            let (old, old_serial) = mine.pop_front().unwrap();
                            // `free` hands back the id's range and, borrowed, its session
                            // (dropped once no reader can still be looking at it).
                            let freed = ids.free(old).expect("allocated");
                            assert_eq!(freed.range(), old..=old);
                            let session = freed.entry().expect("a session");
                            assert_eq!((session.writer, session.serial), (writer, old_serial));
                        }
                    }
                    (mine, wraps)
                })
            })
            .collect();
        let writers = writers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Relaxed);
        writers
    });

    // Every id a writer still holds maps to its session; nothing else is allocated.
    let mut live: Vec<u64> = Vec::new();
    for (writer, (mine, _)) in writers.iter().enumerate() {
        for &(id, serial) in mine {
            let session = ids.get(id).expect("live");
            assert_eq!(
                (session.id, session.writer, session.serial),
                (id, writer as u64, serial)
            );
            live.push(id);
        }
    }
    live.sort_unstable();
    let guard = ids.pin();
    let allocated: Vec<u64> = ids.iter(&guard).map(|(id, _)| *id.start()).collect();
    drop(guard);
    assert_eq!(allocated, live);
    assert_eq!(ids.len(), 2 * KEEP);

    // 40,000 allocations in a window of 3,796 ids: the search wrapped about ten times. A writer
    // sees a wrap as an id lower than its previous one (it may miss some: a wrap while the
    // other writer ran alone for a whole window looks like no wrap to it).
    let wraps = writers.iter().map(|&(_, w)| w).max().unwrap_or(0);
    assert!(wraps >= 1, "the ids never wrapped");

    // The id just freed is not handed out again: the search goes on from after it.
    let id = open(&ids, 2, 0)?;
    assert!(ids.free(id).is_some());
    let next = open(&ids, 2, 1)?;
    assert_ne!(next, id);
    assert_eq!(ids.get(next).map(|s| s.id), Some(next));

    println!(
        "allocated {} ids in {:?}, freed {}; the search wrapped at least {wraps} times",
        2 * PER_WRITER,
        ids.window(),
        2 * PER_WRITER - 2 * KEEP as u64
    );
    println!(
        "freed id {id}, the next allocation got {next}; live: {} ids",
        ids.len()
    );
    let (hits, misses) = (hits.into_inner(), misses.into_inner());
    println!(
        "readers: {} lock-free lookups, {hits} found a session, {misses} a free id",
        hits + misses
    );
    assert!(hits + misses > 0);
    Ok(())
}
