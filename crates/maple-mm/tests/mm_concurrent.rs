//! Lock-free VMA lookups on real threads while a writer maps, unmaps and reprotects.
//!
//! Readers use `lock_vma_under_rcu` (and the `with_vma` fallback path) on random addresses of a
//! window the writer keeps changing. A reader must never get a VMA that does not contain its
//! address, nor a detached (unmapped or replaced) VMA, and while it holds the VMA read lock the
//! VMA must not change. Iteration under a guard must yield entries inside their VMA's bounds,
//! covering all of them unless the VMA is being replaced (detached). Time-bounded:
//! `MM_STRESS_MS` (default 1500).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use maple_mm::{MapFlags, MapSource, Mm, Prot, VmFlags, VmaLockMiss, PAGE_SIZE};

const BASE: u64 = 0x1000_0000;
const PAGES: u64 = 96;

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn duration() -> Duration {
    let ms = std::env::var("MM_STRESS_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    Duration::from_millis(ms)
}

#[test]
fn lockless_lookups_during_mmap_munmap_mprotect() {
    let mm = Arc::new(Mm::new());
    let stop = Arc::new(AtomicBool::new(false));
    let hits = Arc::new(AtomicU64::new(0));
    let misses = Arc::new(AtomicU64::new(0));
    let writer_ops = Arc::new(AtomicU64::new(0));

    let writer = {
        let (mm, stop, writer_ops) = (Arc::clone(&mm), Arc::clone(&stop), Arc::clone(&writer_ops));
        std::thread::spawn(move || {
            let mut s = 0x9e37_79b9_7f4a_7c15u64;
            while !stop.load(Ordering::Relaxed) {
                let p = xorshift(&mut s) % PAGES;
                let n = 1 + xorshift(&mut s) % 12;
                let n = n.min(PAGES - p);
                let addr = BASE + p * PAGE_SIZE;
                let prot = if xorshift(&mut s) % 2 == 0 {
                    Prot::READ
                } else {
                    Prot::READ | Prot::WRITE
                };
                match xorshift(&mut s) % 4 {
                    0 | 1 => {
                        mm.mmap(
                            addr,
                            n * PAGE_SIZE,
                            prot,
                            MapFlags::PRIVATE | MapFlags::FIXED,
                            MapSource::Anon,
                        )
                        .unwrap();
                    }
                    2 => {
                        mm.munmap(addr, n * PAGE_SIZE).unwrap();
                    }
                    _ => {
                        let _ = mm.mprotect(addr, n * PAGE_SIZE, prot);
                    }
                }
                if writer_ops.fetch_add(1, Ordering::Relaxed) % 512 == 0 {
                    mm.validate().unwrap();
                }
            }
        })
    };

    let readers: Vec<_> = (0..2u64)
        .map(|id| {
            let (mm, stop, hits, misses) = (
                Arc::clone(&mm),
                Arc::clone(&stop),
                Arc::clone(&hits),
                Arc::clone(&misses),
            );
            std::thread::spawn(move || {
                let mut s = 0x1234_5678_9abc_def1u64 ^ (id << 32);
                let mut rounds = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let guard = mm.pin();
                    for _ in 0..256 {
                        let addr = BASE + xorshift(&mut s) % (PAGES * PAGE_SIZE);
                        match mm.lock_vma_under_rcu(addr, &guard) {
                            Ok(v) => {
                                assert!(v.contains(addr), "{addr:#x} not in {v:?}");
                                assert!(!v.is_detached(), "detached VMA handed out: {v:?}");
                                let f1 = v.flags();
                                std::hint::spin_loop();
                                let f2 = v.flags();
                                assert_eq!(f1, f2, "flags changed under the VMA read lock");
                                assert!(f1.contains(VmFlags::READ));
                                assert!(!v.is_detached(), "detached under the VMA read lock");
                                hits.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(VmaLockMiss::Locked | VmaLockMiss::Stale) => {
                                misses.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(VmaLockMiss::NoVma) => {}
                        }
                        // The fault path: lock-free with fallback to the mmap lock.
                        mm.with_vma(addr, |v| {
                            if let Some(v) = v {
                                assert!(v.contains(addr));
                                assert!(!v.is_detached());
                            }
                        });
                    }
                    // Iteration. (Strict ordering of the yielded ranges is a tree property that
                    // the core does not keep yet: tests/mm_core_bugs.rs.)
                    for (r, v) in mm.tree().range(BASE..=BASE + PAGES * PAGE_SIZE, &guard) {
                        let (first, last) = (*r.start(), *r.end());
                        // An entry only ever covers part of its VMA; less than all of it only
                        // while a writer is replacing it (trimmed by a neighbouring store), and
                        // such a VMA was detached before the first store.
                        assert!(first >= v.start() && last < v.end(), "entry beyond its VMA");
                        if (first, last + 1) != (v.start(), v.end()) {
                            assert!(v.is_detached(), "a live VMA trimmed in the tree: {v:?}");
                        }
                    }
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();

    std::thread::sleep(duration());
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    mm.validate().unwrap();
    let (h, m, w) = (
        hits.load(Ordering::Relaxed),
        misses.load(Ordering::Relaxed),
        writer_ops.load(Ordering::Relaxed),
    );
    let stats = mm.lookup_stats();
    println!("writer ops {w}, lock-free hits {h}, misses {m}, with_vma stats {stats:?}");
    assert!(w > 100, "the writer barely ran");
    assert!(h > 100, "the readers barely found anything");
}

#[test]
fn a_read_locked_vma_blocks_the_writer_until_released() {
    let mm = Arc::new(Mm::new());
    let a = mm
        .mmap(
            BASE,
            4 * PAGE_SIZE,
            Prot::READ,
            MapFlags::PRIVATE | MapFlags::FIXED,
            MapSource::Anon,
        )
        .unwrap();
    let guard = mm.pin();
    let v = mm.lock_vma_under_rcu(a, &guard).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (mm, done) = (Arc::clone(&mm), Arc::clone(&done));
        std::thread::spawn(move || {
            mm.munmap(BASE, PAGE_SIZE).unwrap();
            done.store(true, Ordering::Release);
        })
    };
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(100) {
        assert!(
            !done.load(Ordering::Acquire),
            "munmap finished while the VMA was read-locked"
        );
        assert!(!v.is_detached());
        std::thread::yield_now();
    }
    drop(v);
    writer.join().unwrap();
    assert!(done.load(Ordering::Acquire));
    assert!(mm.vma_lookup(BASE).is_none());
    assert_eq!(
        mm.vma_lookup(BASE + PAGE_SIZE).unwrap().start,
        BASE + PAGE_SIZE
    );
}
