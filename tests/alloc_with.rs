//! Allocation with the entry built from its place (`alloc_*_with`, `IdAllocator`): readers
//! beside the writers never see anything at an allocated range but the entry built for that
//! very range, and every entry made is dropped exactly once.
//!
//! Each entry records the range it was built for. Writers allocate (lowest and highest fit,
//! aligned, cyclic) and free at random; readers look every range up through `load_range`,
//! `iter`, `get` and a cursor and check that the range they found is the one the entry
//! records. A placeholder stored first and overwritten after (what `alloc_range` forced
//! before the `_with` forms) fails this at once: `placeholder_twin` shows the check catching it.
//!
//! `MAPLE_ALLOC_WITH_SECS` sets the run time (default 2 s).

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use maple_tree::{Error, IdAllocator, MapleTree};

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// An entry that knows the range it was built for (`u64::MAX..=0` for a placeholder).
struct Item {
    range: RangeInclusive<u64>,
}

impl Item {
    fn new(range: RangeInclusive<u64>) -> Box<Item> {
        LIVE.fetch_add(1, Ordering::Relaxed);
        Box::new(Item { range })
    }
}

impl Drop for Item {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

fn secs() -> f64 {
    std::env::var("MAPLE_ALLOC_WITH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0)
}

/// One writer thread's step, run until the readers are stopped.
type Writer = Box<dyn FnMut(&mut Rng) + Send>;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Readers' checks over the whole window: the number of ranges checked; panics on a range
/// whose entry records another range.
fn check_all(tree: &MapleTree<Box<Item>>, rng: &mut Rng, window: u64) -> u64 {
    let guard = tree.pin();
    let mut n = 0;
    for (r, item) in tree.iter(&guard) {
        assert_eq!(item.range, r, "iter: a range holding another range's entry");
        n += 1;
    }
    for _ in 0..64 {
        let i = rng.next() % window;
        if let Some((r, item)) = tree.load_range(i, &guard) {
            assert_eq!(item.range, r, "load_range({i}): another range's entry");
            n += 1;
        }
        if let Some(item) = tree.load(i, &guard) {
            assert!(
                item.range.contains(&i),
                "load({i}): entry built for {:?}",
                item.range
            );
            n += 1;
        }
    }
    let mut c = tree.cursor(rng.next() % window, &guard);
    while let Some(item) = c.find(window) {
        assert_eq!(item.range, c.range(), "cursor: another range's entry");
        n += 1;
    }
    n
}

/// Runs `writers` beside three readers for the configured time; returns (writes, checks).
fn run(tree: &Arc<MapleTree<Box<Item>>>, window: u64, writers: Vec<Writer>) -> (u64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let checks = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(writers.len() + 3 + 1));
    let mut threads = Vec::new();
    for (k, mut w) in writers.into_iter().enumerate() {
        let (stop, writes, start) = (stop.clone(), writes.clone(), start.clone());
        threads.push(thread::spawn(move || {
            let mut rng = Rng(0x9e37_79b9 + k as u64);
            start.wait();
            while !stop.load(Ordering::Relaxed) {
                w(&mut rng);
                writes.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for k in 0..3 {
        let (tree, stop, checks, start) =
            (tree.clone(), stop.clone(), checks.clone(), start.clone());
        threads.push(thread::spawn(move || {
            let mut rng = Rng(0x1234_5678 + k);
            start.wait();
            while !stop.load(Ordering::Relaxed) {
                checks.fetch_add(check_all(&tree, &mut rng, window), Ordering::Relaxed);
            }
        }));
    }
    start.wait();
    thread::sleep(Duration::from_secs_f64(secs()));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("a thread panicked");
    }
    (
        writes.load(Ordering::Relaxed),
        checks.load(Ordering::Relaxed),
    )
}

const WINDOW: u64 = 1 << 16;

#[test]
fn readers_see_only_the_final_entry_of_range_allocations() {
    let before = LIVE.load(Ordering::Relaxed);
    {
        let tree = Arc::new(MapleTree::<Box<Item>>::new_alloc());
        let mk = |tree: &Arc<MapleTree<Box<Item>>>, kind: u64| -> Writer {
            let tree = tree.clone();
            Box::new(move |rng: &mut Rng| {
                let size = 1 + rng.next() % 32;
                let r = match (kind + rng.next()) % 4 {
                    0 => tree.alloc_range_with(..WINDOW, size, Item::new),
                    1 => tree.alloc_rrange_with(..WINDOW, size, Item::new),
                    2 => tree.alloc_range_aligned_with(..WINDOW, size, 64, Item::new),
                    _ => tree.alloc_rrange_aligned_with(..WINDOW, size, 16, Item::new),
                };
                match r {
                    Ok(_) | Err(Error::NoRoom) => {}
                    Err(e) => panic!("allocation failed: {e}"),
                }
                // Free about as much as is allocated.
                if let Some(e) = tree.erase(rng.next() % WINDOW) {
                    let item = e.entry().expect("an allocated range holds its entry");
                    assert_eq!(item.range, e.range(), "erase: another range's entry");
                }
            })
        };
        let (writes, checks) = run(&tree, WINDOW, vec![mk(&tree, 0), mk(&tree, 1)]);
        tree.validate().unwrap();
        assert!(
            writes > 100 && checks > 100,
            "{writes} writes, {checks} checks"
        );
        eprintln!("range allocations: {writes} writes, {checks} checks");
    }
    assert_reclaimed(before);
}

#[test]
fn readers_see_only_the_final_entry_of_id_allocations() {
    let before = LIVE.load(Ordering::Relaxed);
    {
        let ids = Arc::new(IdAllocator::<Box<Item>>::new(1..WINDOW).unwrap());
        let mut threads = Vec::new();
        let stop = Arc::new(AtomicBool::new(false));
        for k in 0..2u64 {
            let (ids, stop) = (ids.clone(), stop.clone());
            threads.push(thread::spawn(move || {
                let mut rng = Rng(77 + k);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    match ids.alloc_with(|id| Item::new(id..=id)) {
                        Ok(id) => assert!((1..WINDOW).contains(&id)),
                        Err(Error::NoRoom) => {}
                        Err(e) => panic!("{e}"),
                    }
                    ids.free(1 + rng.next() % (WINDOW - 1));
                    n += 1;
                }
                n
            }));
        }
        let mut readers = Vec::new();
        for k in 0..2u64 {
            let (ids, stop) = (ids.clone(), stop.clone());
            readers.push(thread::spawn(move || {
                let mut rng = Rng(99 + k);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let guard = ids.pin();
                    for (r, item) in ids.iter(&guard) {
                        assert_eq!(item.range, r, "an id holding another id's entry");
                        n += 1;
                    }
                    let id = 1 + rng.next() % (WINDOW - 1);
                    if let Some(item) = ids.load(id, &guard) {
                        assert_eq!(item.range, id..=id);
                    }
                }
                n
            }));
        }
        thread::sleep(Duration::from_secs_f64(secs()));
        stop.store(true, Ordering::Relaxed);
        let writes: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        let checks: u64 = readers.into_iter().map(|t| t.join().unwrap()).sum();
        ids.tree().validate().unwrap();
        assert!(
            writes > 100 && checks > 100,
            "{writes} writes, {checks} checks"
        );
        eprintln!("id allocations: {writes} writes, {checks} checks");
    }
    assert_reclaimed(before);
}

/// Every entry made since `before` has been dropped, once the collector has run the deferred
/// drops (other tests of this binary run at the same time: wait for the count, bounded).
fn assert_reclaimed(before: usize) {
    let t = Instant::now();
    while LIVE.load(Ordering::Relaxed) > before && t.elapsed() < Duration::from_secs(20) {
        crossbeam_epoch::pin().flush();
        thread::yield_now();
    }
    assert!(LIVE.load(Ordering::Relaxed) <= before, "entries leaked");
}

/// The twin: a placeholder stored first and overwritten after its range is known is what the
/// readers' check catches (the shape `alloc_range` forced before the `_with` forms).
#[test]
fn placeholder_twin() {
    // Up to five runs: one is nearly always enough (readers saw placeholders about 500 times
    // a second when this was the only way).
    let caught = (0..5).any(|_| placeholder_run());
    assert!(caught, "the readers' check never saw the placeholder");
}

/// One run of the twin: whether a reader caught a placeholder.
fn placeholder_run() -> bool {
    let tree = Arc::new(MapleTree::<Box<Item>>::new_alloc());
    let w = tree.clone();
    let writer: Writer = Box::new(move |rng: &mut Rng| {
        let size = 1 + rng.next() % 32;
        // The placeholder's range is deliberately inverted: no real range is `u64::MAX..=0`.
        #[allow(clippy::reversed_empty_ranges)]
        let placeholder = Item::new(u64::MAX..=0);
        if let Ok(r) = w.alloc_range(..WINDOW, size, placeholder) {
            w.store_range(r.clone(), Item::new(r)).unwrap();
        }
        w.erase(rng.next() % WINDOW);
    });
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(&tree, WINDOW, vec![writer]);
    }))
    .is_err()
}
