//! The model against the real kernel (Linux): a register/unregister sequence run on a
//! real userfaultfd and on the model over the same addresses, with the VMA boundaries read from
//! `/proc/self/maps` compared step by step (and the error codes), plus a real missing-page fault
//! resolved from a handler thread. Skipped, with the reason printed, where the syscall is
//! refused.
#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use maple_mm::real::{RealMapping, RealUffd};
use maple_mm::uffd::{mode, UffdCtx, O_CLOEXEC, O_NONBLOCK, UFFD_USER_MODE_ONLY};
use maple_mm::{MapFlags, MapSource, Mm, MmError, Prot, PAGE_SIZE};

const P: u64 = PAGE_SIZE;

fn open() -> Option<RealUffd> {
    let u = match RealUffd::open(UFFD_USER_MODE_ONLY | O_NONBLOCK | O_CLOEXEC) {
        Ok(u) => u,
        Err(e) => {
            println!("skipped: userfaultfd(UFFD_USER_MODE_ONLY) refused: {e}");
            return None;
        }
    };
    match u.api(0) {
        Ok(_) => Some(u),
        Err(e) => {
            println!("skipped: UFFDIO_API refused: {e}");
            None
        }
    }
}

/// VMA boundaries strictly inside `(lo, hi)` according to `/proc/self/maps`.
fn real_boundaries(lo: u64, hi: u64) -> BTreeSet<u64> {
    let text = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let mut b = BTreeSet::new();
    for l in text.lines() {
        let r = l.split(' ').next().unwrap_or("");
        let Some((s, e)) = r.split_once('-') else {
            continue;
        };
        let (Ok(s), Ok(e)) = (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16)) else {
            continue;
        };
        for x in [s, e] {
            if x > lo && x < hi {
                b.insert(x);
            }
        }
    }
    b
}

fn model_boundaries(mm: &Mm, lo: u64, hi: u64) -> BTreeSet<u64> {
    let mut b = BTreeSet::new();
    for v in mm.snapshot() {
        for x in [v.start, v.end] {
            if x > lo && x < hi {
                b.insert(x);
            }
        }
    }
    b
}

fn errno<T>(r: std::io::Result<T>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error()).map(|e| -e)
}

fn model_errno<T>(r: Result<T, MmError>) -> Option<i32> {
    r.err().map(MmError::errno)
}

#[test]
fn register_unregister_splits_agree_with_the_kernel() {
    let Some(real) = open() else { return };
    let Some(real2) = open() else { return };
    // Six pages: a PROT_NONE guard, the four-page VMA of the sequence, a PROT_NONE guard.
    let m = RealMapping::new(6).unwrap();
    m.protect(0, P, Prot::NONE).unwrap();
    m.protect(5 * P, P, Prot::NONE).unwrap();
    let (lo, hi) = (m.addr(), m.addr() + 6 * P);

    let mm = Arc::new(Mm::new());
    mm.mmap(
        lo,
        6 * P,
        Prot::READ | Prot::WRITE,
        MapFlags::PRIVATE | MapFlags::FIXED,
        MapSource::Anon,
    )
    .unwrap();
    mm.mprotect(lo, P, Prot::NONE).unwrap();
    mm.mprotect(lo + 5 * P, P, Prot::NONE).unwrap();
    let model = UffdCtx::new(&mm, UFFD_USER_MODE_ONLY | O_NONBLOCK, false).unwrap();
    model.api(0xAA, 0).unwrap();
    let model2 = UffdCtx::new(&mm, UFFD_USER_MODE_ONLY | O_NONBLOCK, false).unwrap();
    model2.api(0xAA, 0).unwrap();
    let same = |step: &str| {
        assert_eq!(
            real_boundaries(lo, hi),
            model_boundaries(&mm, lo, hi),
            "after {step}"
        );
    };
    same("setup");
    let pg = |i: u64| (i + 1) * P; // offset of page i of the 4-page VMA

    let r = real.register(&m, pg(1), 2 * P, mode::MISSING);
    let s = model.register(&mm, lo + pg(1), 2 * P, mode::MISSING);
    assert_eq!(r.as_ref().ok(), s.as_ref().ok(), "ioctls mask");
    same("register pages 1-2");
    real.register(&m, pg(0), 4 * P, mode::MISSING).unwrap();
    model
        .register(&mm, lo + pg(0), 4 * P, mode::MISSING)
        .unwrap();
    same("register pages 0-3");
    assert_eq!(
        errno(real2.register(&m, pg(0), P, mode::MISSING)),
        Some(-16)
    );
    assert_eq!(
        model_errno(model2.register(&mm, lo + pg(0), P, mode::MISSING)),
        Some(-16)
    );
    assert_eq!(errno(real2.unregister(&m, pg(0), P)), Some(-22));
    assert_eq!(
        model_errno(model2.unregister(&mm, lo + pg(0), P)),
        Some(-22)
    );
    real.unregister(&m, pg(1), P).unwrap();
    model.unregister(&mm, lo + pg(1), P).unwrap();
    same("unregister page 1");
    let r = real.register(&m, pg(1), P, mode::WP);
    let s = model.register(&mm, lo + pg(1), P, mode::WP);
    assert_eq!(r.as_ref().ok(), s.as_ref().ok(), "WP ioctls mask");
    same("register page 1 in WP mode");
    real.unregister(&m, pg(0), 4 * P).unwrap();
    model.unregister(&mm, lo + pg(0), 4 * P).unwrap();
    same("unregister pages 0-3");
    // Errors on the same bad input.
    assert_eq!(
        errno(real.register(&m, pg(0), P, 0)),
        model_errno(model.register(&mm, lo + pg(0), P, 0))
    );
    assert_eq!(
        errno(real.register(&m, pg(0), P, 8)),
        model_errno(model.register(&mm, lo + pg(0), P, 8))
    );
    // Register page 2 and close the fd: release clears it and the VMAs merge back.
    real.register(&m, pg(2), P, mode::MISSING).unwrap();
    model.register(&mm, lo + pg(2), P, mode::MISSING).unwrap();
    same("register page 2");
    drop(real);
    model.release(Some(&mm));
    same("close");
    println!("model and kernel agree on every step of the register/unregister sequence");
}

#[test]
fn real_missing_fault_resolved_by_a_handler_thread() {
    let Some(real) = open() else { return };
    let m = Arc::new(RealMapping::new(2).unwrap());
    real.register(&m, 0, 2 * P, mode::MISSING).unwrap();
    let real = Arc::new(real);
    let handler = {
        let (real, m) = (Arc::clone(&real), Arc::clone(&m));
        std::thread::spawn(move || {
            let t = Instant::now();
            loop {
                if let Some(msg) = real.read_msg().unwrap() {
                    assert_eq!(msg.event, 0x12, "UFFD_EVENT_PAGEFAULT");
                    assert_eq!(msg.address, m.addr() + P);
                    real.copy(&m, P, b"from the handler").unwrap();
                    return msg;
                }
                assert!(t.elapsed() < Duration::from_secs(10), "no fault message");
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    // This read faults (the page is missing and registered) and blocks until the copy.
    let b = m.read_byte(P + 5);
    assert_eq!(b, b"from the handler"[5]);
    let msg = handler.join().unwrap();
    assert_eq!(msg.flags & 1, 0, "a read fault");
    real.unregister(&m, 0, 2 * P).unwrap();
    assert_eq!(m.read_byte(0), 0, "unregistered: a normal zero-fill fault");
}
