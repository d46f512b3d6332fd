//! When a write hands the entries it released to the collector: only after its last
//! publishing store. A deterministic replay of the stress test's "reader reached a dropped
//! entry", on the default collector, in a test binary of its own (the default
//! collector is process-global: no other test may pin while this one steers the epoch).
//!
//! The failure needs a spanning store (`mas_wr_spanning_store`'s rebuild) that releases many
//! entries before it publishes the new subtree. If a release hands its drop to the collector
//! at once, the writer's pacing flush (every 64 deferrals) pushes the bag of dropped entries
//! to the global queue, sealed with the current epoch `w`, while the old leaves are still
//! linked; the same flush then advances the epoch to `w + 1`. A reader that pins now (at
//! `w + 1`) loads a released entry from the old leaf. Once the writer unpins, the epoch may
//! reach `w + 2` while the reader is still pinned at `w + 1`: the bag is expired, and the entry
//! is dropped under the reader.
//!
//! The test steers every step: the bag of hook entries (entries whose `Drop` pauses the writer
//! and lets the reader in) is made to expire exactly at the writer's flush, the reader pins
//! from inside that flush, and the epoch is then advanced past the victims' bag while the
//! reader still holds its guard. The assertion reads only drop flags, never the entry after a
//! possible drop.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use maple_tree::MapleTree;

const SERIALS: usize = 1024;
static DROPPED: [AtomicU8; SERIALS] = [const { AtomicU8::new(0) }; SERIALS];
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// The hook's handshake: the writer paused inside its flush; the reader has read.
static HOOK_FIRED: AtomicBool = AtomicBool::new(false);
static READER_DONE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set on the thread that runs the spanning store: hooks act only there.
    static VICTIM_WRITER: Cell<bool> = const { Cell::new(false) };
}

struct Item {
    serial: usize,
    hook: bool,
}

impl Item {
    fn boxed(hook: bool) -> Box<Item> {
        let serial = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(serial < SERIALS);
        Box::new(Item { serial, hook })
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        let prev = DROPPED[self.serial].fetch_add(1, Ordering::SeqCst);
        assert_eq!(prev, 0, "entry {} dropped twice", self.serial);
        if self.hook && VICTIM_WRITER.with(Cell::get) && !HOOK_FIRED.swap(true, Ordering::SeqCst) {
            // Inside the spanning store's collect: let the reader in, wait until it has read.
            let start = Instant::now();
            while !READER_DONE.load(Ordering::SeqCst) {
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "reader never came"
                );
                std::thread::yield_now();
            }
        }
    }
}

fn wait_for(flag: &AtomicBool) {
    let start = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "handshake timed out"
        );
        std::thread::yield_now();
    }
}

#[test]
fn released_entries_reach_the_collector_after_publication() {
    let mut tree = MapleTree::<Box<Item>>::new(); // the default collector
    {
        let mut w = tree.exclusive(); // no readers: nothing deferred, no seals
        for i in 0..20u64 {
            w.store_range(10 * i..=10 * i + 5, Item::boxed(true))
                .unwrap();
        }
        for i in 100..200u64 {
            w.store_range(10 * i..=10 * i + 5, Item::boxed(false))
                .unwrap();
        }
    }
    let tree = Arc::new(tree);

    // The hook entries' drops, all in one bag sealed at epoch `g`, while this thread stays
    // pinned at `g` (the blocker): the flush advances the epoch to `w = g + 1` and no further.
    // A thread's first pin collects (and may advance the epoch past the blocker's): take it
    // first, so that the blocker is pinned at the epoch its flush seals the bag with.
    drop(crossbeam_epoch::pin());
    let blocker = crossbeam_epoch::pin();
    for i in 0..20u64 {
        // Exact fits: each releases one hook entry, deferred on this thread's (nested) pin.
        tree.store_range(10 * i..=10 * i + 5, Item::boxed(false))
            .unwrap();
    }
    blocker.flush();

    let ready = Arc::new(AtomicBool::new(false));
    let go = Arc::new(AtomicBool::new(false));
    let writer = {
        let (tree, ready, go) = (Arc::clone(&tree), Arc::clone(&ready), Arc::clone(&go));
        std::thread::spawn(move || {
            VICTIM_WRITER.with(|v| v.set(true));
            // Pinned at `w`; this first pin's collect cannot advance past the blocker, and the
            // hooks' bag (sealed at `g`) is not expired yet. The write's own pins nest in it,
            // so its only collect is the pacing flush's.
            let outer = crossbeam_epoch::pin();
            ready.store(true, Ordering::SeqCst);
            wait_for(&go);
            // Spans the leaves of the 100 victims: a rebuild releasing every one of them.
            tree.store_range(1000..=1999, Item::boxed(false)).unwrap();
            drop(outer);
        })
    };
    wait_for(&ready);
    drop(blocker);
    go.store(true, Ordering::SeqCst);

    // The writer's flush advanced the epoch to `w + 1` and ran a hook: pin there and read.
    let start = Instant::now();
    while !HOOK_FIRED.load(Ordering::SeqCst) && !writer.is_finished() {
        assert!(start.elapsed() < Duration::from_secs(30), "writer stuck");
        std::thread::yield_now();
    }
    assert!(
        HOOK_FIRED.load(Ordering::SeqCst),
        "no hook entry was dropped on the writer's thread during the spanning store: the \
         test's epoch steering no longer matches the collector"
    );
    let guard = tree.pin();
    let seen = tree.load(1500, &guard).map(|e| e.serial);
    READER_DONE.store(true, Ordering::SeqCst);
    writer.join().unwrap();

    // Advance the epoch past everything the spanning store deferred (this thread stays pinned
    // at `w + 1` through `guard`) and collect.
    for _ in 0..64 {
        crossbeam_epoch::pin().flush();
    }
    let victims_dropped = (20..120).filter(|&s| DROPPED[s].load(Ordering::SeqCst) == 1);
    assert!(
        victims_dropped.count() > 0,
        "the collector ran none of the spanning store's drops: the check below would be vacuous"
    );
    if let Some(s) = seen {
        assert_eq!(
            DROPPED[s].load(Ordering::SeqCst),
            0,
            "entry {s}, loaded by a reader pinned during the write, was dropped while the \
             reader's guard was alive"
        );
    }
    drop(guard);
    drop(Arc::try_unwrap(tree).ok().expect("writer joined"));
    for _ in 0..64 {
        crossbeam_epoch::pin().flush();
    }
    let n = NEXT.load(Ordering::Relaxed);
    for (s, d) in DROPPED[..n].iter().enumerate() {
        assert_eq!(
            d.load(Ordering::SeqCst),
            1,
            "entry {s} not dropped exactly once"
        );
    }
}
