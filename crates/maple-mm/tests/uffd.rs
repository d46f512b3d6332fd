//! The userfaultfd-context model: handshake, the register/unregister rules (`userfaultfd_register`,
//! `userfaultfd_unregister`) case by
//! case, faults, non-cooperative events with `mmap_changing`, the three fork outcomes, and the
//! seed patch's counters (kernel commit "userfaultfd: early return in dup_userfaultfd()").

use std::sync::Arc;
use std::time::Duration;

use maple_mm::uffd::{
    feature, ioctl, mode, CostSetting, DupUffd, UffdCtx, UffdMsg, O_NONBLOCK, UFFD_API,
    UFFD_USER_MODE_ONLY,
};
use maple_mm::{
    Advice, DupMode, FileKind, ForkEnv, ForkHook, MapFlags, MapSource, MappedFile, Mm, MmError,
    MremapFlags, Prot, VmFlags, Vma, PAGE_SIZE,
};

const P: u64 = PAGE_SIZE;
const RW: Prot = Prot::from_bits(3);
const BASE: u64 = 0x1000_0000;

fn fixed() -> MapFlags {
    MapFlags::PRIVATE | MapFlags::FIXED
}

/// A 4-page anonymous VMA at `BASE + P` between PROT_NONE guard pages (the layout of the
/// kernel experiment of `tests/uffd_real.rs`).
fn guarded() -> Arc<Mm> {
    let mm = Arc::new(Mm::new());
    mm.mmap(BASE, P, Prot::NONE, fixed(), MapSource::Anon)
        .unwrap();
    mm.mmap(BASE + P, 4 * P, RW, fixed(), MapSource::Anon)
        .unwrap();
    mm.mmap(BASE + 5 * P, P, Prot::NONE, fixed(), MapSource::Anon)
        .unwrap();
    assert_eq!(mm.map_count(), 3);
    mm
}

fn ctx(mm: &Mm, features: u64) -> Arc<UffdCtx> {
    let c = UffdCtx::new(mm, O_NONBLOCK | UFFD_USER_MODE_ONLY, true).unwrap();
    c.api(UFFD_API, features).unwrap();
    c
}

/// The VMAs of the 4-page region as page spans relative to its start.
fn region(mm: &Mm) -> Vec<(u64, u64)> {
    mm.snapshot()
        .iter()
        .filter(|v| v.start >= BASE + P && v.end <= BASE + 5 * P)
        .map(|v| ((v.start - BASE - P) / P, (v.end - BASE - P) / P))
        .collect()
}

fn page(i: u64) -> u64 {
    BASE + P + i * P
}

#[test]
fn syscall_and_api_handshake() {
    let mm = Mm::new();
    assert_eq!(UffdCtx::new(&mm, 0x40, true).err(), Some(MmError::Inval));
    assert_eq!(
        UffdCtx::new(&mm, O_NONBLOCK, false).err(),
        Some(MmError::Perm)
    );
    let c = UffdCtx::new(&mm, O_NONBLOCK | UFFD_USER_MODE_ONLY, false).unwrap();
    // Nothing works before the handshake.
    assert_eq!(c.read(true).err(), Some(MmError::Inval));
    assert!(c.poll().err);
    let mm2 = Arc::new(Mm::new());
    let a = mm2
        .mmap(0, P, RW, MapFlags::PRIVATE, MapSource::Anon)
        .unwrap();
    let c2 = UffdCtx::new(&mm2, O_NONBLOCK | UFFD_USER_MODE_ONLY, false).unwrap();
    assert_eq!(
        c2.register(&mm2, a, P, mode::MISSING).err(),
        Some(MmError::Inval)
    );
    assert_eq!(c.api(0xAB, 0), Err(MmError::Inval));
    assert_eq!(
        c.api(UFFD_API, feature::EVENT_FORK),
        Err(MmError::Perm),
        "EVENT_FORK needs CAP_SYS_PTRACE"
    );
    assert_eq!(c.api(UFFD_API, 1 << 20), Err(MmError::Inval));
    let r = c
        .api(UFFD_API, feature::EVENT_UNMAP | feature::WP_ASYNC)
        .unwrap();
    assert_eq!(r.features, 0x1ffff);
    assert_eq!(r.ioctls, ioctl::REGISTER | ioctl::UNREGISTER | ioctl::API);
    assert_eq!(
        c.features() & feature::WP_UNPOPULATED,
        feature::WP_UNPOPULATED,
        "WP_ASYNC implies WP_UNPOPULATED"
    );
    assert!(c.is_initialized());
    assert_eq!(
        c.api(UFFD_API, 0),
        Err(MmError::Inval),
        "a second handshake"
    );
    // A privileged creator may ask for EVENT_FORK.
    let p = UffdCtx::new(&mm, 0, true).unwrap();
    assert!(p.api(UFFD_API, feature::EVENT_FORK).is_ok());
    assert!(p.poll().err, "EPOLLERR for a blocking fd");
    assert!(!c.poll().err);
}

#[test]
fn register_table_of_section_a3() {
    let mm = guarded();
    let u = ctx(&mm, 0);
    let other = ctx(&mm, 0);
    // Register pages 1-2: three VMAs.
    let ioctls = u.register(&mm, page(1), 2 * P, mode::MISSING).unwrap();
    assert_eq!(region(&mm), vec![(0, 1), (1, 3), (3, 4)]);
    assert_eq!(
        ioctls,
        ioctl::RANGE_IOCTLS & !ioctl::WRITEPROTECT & !ioctl::CONTINUE
    );
    mm.validate().unwrap();
    // Register pages 0-3 on the same context: merges back to one VMA.
    u.register(&mm, page(0), 4 * P, mode::MISSING).unwrap();
    assert_eq!(region(&mm), vec![(0, 4)]);
    // Register page 0 on another context: EBUSY.
    assert_eq!(
        other.register(&mm, page(0), P, mode::MISSING),
        Err(MmError::Busy)
    );
    // Unregister page 0 through another context: EINVAL.
    assert_eq!(other.unregister(&mm, page(0), P), Err(MmError::Inval));
    // Unregister page 1: three VMAs.
    u.unregister(&mm, page(1), P).unwrap();
    assert_eq!(region(&mm), vec![(0, 1), (1, 2), (2, 4)]);
    // Register page 1 in WP mode: still three (different flags).
    let ioctls = u.register(&mm, page(1), P, mode::WP).unwrap();
    assert_ne!(ioctls & ioctl::WRITEPROTECT, 0);
    assert_eq!(region(&mm), vec![(0, 1), (1, 2), (2, 4)]);
    // Unregister 0-3: one VMA.
    u.unregister(&mm, page(0), 4 * P).unwrap();
    assert_eq!(region(&mm), vec![(0, 4)]);
    assert!(mm.snapshot().iter().all(|v| v.desc.uffd.is_none()));
    // Register page 2, then close: release clears the registration and re-merges.
    u.register(&mm, page(2), P, mode::MISSING).unwrap();
    assert_eq!(region(&mm), vec![(0, 2), (2, 3), (3, 4)]);
    u.release(Some(&mm));
    assert_eq!(region(&mm), vec![(0, 4)]);
    assert_eq!(
        u.register(&mm, page(0), P, mode::MISSING),
        Err(MmError::Inval),
        "released"
    );
    mm.validate().unwrap();
}

#[test]
fn register_rules_and_errors() {
    let mm = guarded();
    let u = ctx(&mm, 0);
    let before = mm.render_maps();
    assert_eq!(
        u.register(&mm, page(0), P, 0),
        Err(MmError::Inval),
        "mode 0"
    );
    assert_eq!(
        u.register(&mm, page(0), P, 8),
        Err(MmError::Inval),
        "unknown mode bit"
    );
    assert_eq!(
        u.register(&mm, page(0) + 1, P, mode::MISSING),
        Err(MmError::Inval),
        "unaligned"
    );
    assert_eq!(
        u.register(&mm, page(0), P + 1, mode::MISSING),
        Err(MmError::Inval),
        "length"
    );
    assert_eq!(
        u.register(&mm, page(0), 0, mode::MISSING),
        Err(MmError::Inval),
        "empty"
    );
    assert_eq!(
        u.register(&mm, !(P - 1), P, mode::MISSING),
        Err(MmError::Inval),
        "beyond TASK_SIZE"
    );
    assert_eq!(
        u.register(&mm, 0x7000_0000, P, mode::MISSING),
        Err(MmError::Inval),
        "no VMA"
    );
    assert_eq!(
        u.register(&mm, page(0), P, mode::MINOR),
        Err(MmError::Inval),
        "MINOR on anonymous memory"
    );
    let other_mm = Mm::new();
    assert_eq!(
        u.register(&other_mm, page(0), P, mode::MISSING),
        Err(MmError::Srch)
    );
    // A regular file cannot be registered; unregistering over it fails too.
    let f = MappedFile::new("/f", (8, 1), 7, FileKind::Regular, true);
    mm.mmap(
        BASE + 8 * P,
        P,
        RW,
        fixed(),
        MapSource::File { file: f, offset: 0 },
    )
    .unwrap();
    assert_eq!(
        u.register(&mm, BASE + 8 * P, P, mode::MISSING),
        Err(MmError::Inval)
    );
    assert_eq!(u.unregister(&mm, BASE + 8 * P, P), Err(MmError::Inval));
    // shmem without VM_MAYWRITE: EPERM; with it, MINOR is fine.
    let ro = MappedFile::new("/dev/shm/ro", (0, 1), 8, FileKind::Shmem, false);
    mm.mmap(
        BASE + 10 * P,
        P,
        Prot::READ,
        MapFlags::SHARED | MapFlags::FIXED,
        MapSource::File {
            file: ro,
            offset: 0,
        },
    )
    .unwrap();
    assert_eq!(
        u.register(&mm, BASE + 10 * P, P, mode::MISSING),
        Err(MmError::Perm)
    );
    let rw = MappedFile::new("/dev/shm/rw", (0, 1), 9, FileKind::Shmem, true);
    mm.mmap(
        BASE + 12 * P,
        P,
        RW,
        MapFlags::SHARED | MapFlags::FIXED,
        MapSource::File {
            file: rw,
            offset: 0,
        },
    )
    .unwrap();
    let io = u.register(&mm, BASE + 12 * P, P, mode::MINOR).unwrap();
    assert_ne!(io & ioctl::CONTINUE, 0);
    // hugetlb: basic ioctls, huge-page alignment.
    let h = MappedFile::new("/dev/hugepages/h", (0, 2), 10, FileKind::Hugetlb, true);
    let hb = 0x4000_0000;
    mm.mmap(
        hb,
        2 << 20,
        RW,
        MapFlags::SHARED | MapFlags::FIXED,
        MapSource::File { file: h, offset: 0 },
    )
    .unwrap();
    assert_eq!(
        u.register(&mm, hb + P, P, mode::MISSING),
        Err(MmError::Inval),
        "hugetlb start"
    );
    assert_eq!(
        u.register(&mm, hb, P, mode::MISSING),
        Err(MmError::Inval),
        "hugetlb end inside the VMA"
    );
    assert_eq!(
        u.register(&mm, hb, 2 << 20, mode::MISSING),
        Ok(ioctl::RANGE_IOCTLS_BASIC & !ioctl::WRITEPROTECT & !ioctl::CONTINUE)
    );
    u.unregister(&mm, hb, 2 << 20).unwrap();
    // Holes are allowed: registering over the guards and beyond only touches VMAs.
    u.register(&mm, BASE, 8 * P, mode::MISSING).unwrap();
    assert!(mm
        .snapshot()
        .iter()
        .filter(|v| v.end <= BASE + 6 * P)
        .all(|v| v.desc.uffd.is_some()));
    // The mode is replaced, not added to; a VMA that already has every requested bit is skipped.
    u.register(&mm, page(0), 4 * P, mode::WP).unwrap();
    let v = mm.vma_lookup(page(0)).unwrap();
    assert_eq!(v.desc.flags & VmFlags::UFFD_FLAGS, VmFlags::UFFD_WP);
    u.register(&mm, page(0), 4 * P, mode::MISSING | mode::WP)
        .unwrap();
    u.register(&mm, page(1), P, mode::MISSING).unwrap(); // has MISSING already: skipped, no split
    assert_eq!(region(&mm), vec![(0, 4)]);
    assert_eq!(
        mm.vma_lookup(page(1)).unwrap().desc.flags & VmFlags::UFFD_FLAGS,
        VmFlags::UFFD_MISSING | VmFlags::UFFD_WP
    );
    mm.validate().unwrap();
    let _ = before;
}

/// Reads the next message, waiting up to a few seconds.
fn next_msg(u: &UffdCtx) -> UffdMsg {
    for _ in 0..5000 {
        match u.read(true) {
            Ok(m) => return m,
            Err(MmError::Again) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("read: {e}"),
        }
    }
    panic!("no message");
}

#[test]
fn missing_faults_block_until_resolved() {
    let mm = guarded();
    let u = ctx(&mm, 0);
    u.register(&mm, page(0), 4 * P, mode::MISSING).unwrap();
    assert_eq!(u.read(true).err(), Some(MmError::Again));
    assert!(!u.poll().input);
    let spawn = |i: u64, write: bool| {
        let mm = Arc::clone(&mm);
        std::thread::spawn(move || {
            if write {
                mm.write_bytes(page(i) + 5, b"w").map(|_| Vec::new())
            } else {
                let mut b = vec![0u8; 4];
                mm.read_bytes(page(i), &mut b).map(|_| b)
            }
        })
    };
    let t0 = spawn(0, false);
    let m0 = next_msg(&u);
    let t1 = spawn(1, true);
    let m1 = next_msg(&u);
    assert_eq!(u.queued_faults(), (0, 2));
    let (
        UffdMsg::Pagefault {
            address: a0,
            flags: f0,
        },
        UffdMsg::Pagefault {
            address: a1,
            flags: f1,
        },
    ) = (m0, m1)
    else {
        panic!("page faults expected");
    };
    assert_eq!(
        (a0, f0, a1, f1),
        (page(0), 0, page(1), 1),
        "page-aligned addresses, write flag"
    );
    // COPY fills page 0 and wakes its fault.
    u.copy(&mm, page(0), b"data", false).unwrap();
    assert_eq!(t0.join().unwrap().unwrap(), b"data");
    // WAKE without filling: the fault retries, faults again and queues a new message.
    u.wake(&mm, page(1), P).unwrap();
    let UffdMsg::Pagefault { address, .. } = next_msg(&u) else {
        panic!()
    };
    assert_eq!(address, page(1));
    u.zeropage(&mm, page(1), P, false).unwrap();
    assert!(t1.join().unwrap().is_ok());
    let mut b = [9u8; 6];
    mm.read_bytes(page(1), &mut b).unwrap();
    assert_eq!(b, [0, 0, 0, 0, 0, b'w']);
    // Filling a populated page: EEXIST; outside the registration: ENOENT.
    assert_eq!(u.copy(&mm, page(0), b"x", false), Err(MmError::Exist));
    assert_eq!(u.copy(&mm, BASE, b"x", false), Err(MmError::NoEnt));
    assert_eq!(u.copy(&mm, page(0) + 1, b"x", false), Err(MmError::Inval));
    // Unregister wakes a waiting fault, which then completes as a normal fault.
    let t2 = spawn(2, false);
    let _ = next_msg(&u);
    u.unregister(&mm, page(2), P).unwrap();
    assert_eq!(t2.join().unwrap().unwrap(), vec![0; 4]);
    // Release wakes the rest.
    let t3 = spawn(3, true);
    let _ = next_msg(&u);
    u.release(Some(&mm));
    assert!(t3.join().unwrap().is_ok());
    assert!(u.poll().hup);
    mm.validate().unwrap();
}

#[test]
fn blocking_read_waits_for_a_fault_and_sigbus_never_blocks() {
    let mm = guarded();
    let u = UffdCtx::new(&mm, UFFD_USER_MODE_ONLY, false).unwrap();
    u.api(UFFD_API, 0).unwrap();
    u.register(&mm, page(0), P, mode::MISSING).unwrap();
    let reader = {
        let u = Arc::clone(&u);
        std::thread::spawn(move || u.read(false))
    };
    std::thread::sleep(Duration::from_millis(20));
    let faulter = {
        let mm = Arc::clone(&mm);
        std::thread::spawn(move || mm.write_bytes(page(0), b"z"))
    };
    let msg = reader.join().unwrap().unwrap();
    assert!(matches!(msg, UffdMsg::Pagefault { address, .. } if address == page(0)));
    u.copy(&mm, page(0), b"Z", false).unwrap();
    faulter.join().unwrap().unwrap();
    // SIGBUS: the fault fails at once.
    let s = ctx(&mm, feature::SIGBUS);
    s.register(&mm, page(1), P, mode::MISSING).unwrap();
    assert_eq!(mm.write_bytes(page(1), b"z"), Err(MmError::Fault));
    assert_eq!(s.queued_faults(), (0, 0));
}

#[test]
fn unmap_remap_remove_events_gate_fills() {
    let mm = guarded();
    let u = ctx(
        &mm,
        feature::EVENT_UNMAP | feature::EVENT_REMAP | feature::EVENT_REMOVE,
    );
    u.register(&mm, page(0), 4 * P, mode::MISSING).unwrap();
    // munmap blocks until the monitor reads UNMAP; meanwhile mmap_changing gates fills.
    let t = {
        let mm = Arc::clone(&mm);
        std::thread::spawn(move || mm.munmap(page(3), P))
    };
    while u.mmap_changing() == 0 {
        std::thread::yield_now();
    }
    assert_eq!(u.copy(&mm, page(0), b"x", false), Err(MmError::Again));
    assert_eq!(u.zeropage(&mm, page(0), P, false), Err(MmError::Again));
    let UffdMsg::Unmap { start, end } = next_msg(&u) else {
        panic!("UNMAP expected")
    };
    assert_eq!((start, end), (page(3), page(4)));
    t.join().unwrap().unwrap();
    assert_eq!(u.mmap_changing(), 0);
    // mremap (move) with EVENT_REMAP: the new mapping stays registered; REMAP then UNMAP of the
    // old range.
    let t = {
        let mm = Arc::clone(&mm);
        std::thread::spawn(move || {
            mm.mremap(
                page(0),
                2 * P,
                2 * P,
                MremapFlags::MAYMOVE | MremapFlags::FIXED,
                BASE + 64 * P,
            )
        })
    };
    let UffdMsg::Remap { from, to, len } = next_msg(&u) else {
        panic!("REMAP expected")
    };
    assert_eq!((from, to, len), (page(0), BASE + 64 * P, 2 * P));
    let UffdMsg::Unmap { start, end } = next_msg(&u) else {
        panic!("UNMAP expected")
    };
    assert_eq!((start, end), (page(0), page(2)));
    assert_eq!(t.join().unwrap(), Ok(BASE + 64 * P));
    assert!(mm.vma_lookup(BASE + 64 * P).unwrap().desc.uffd.is_some());
    // madvise(DONTNEED): REMOVE, delivered before the pages go.
    u.zeropage(&mm, page(2), P, false).unwrap();
    let t = {
        let mm = Arc::clone(&mm);
        std::thread::spawn(move || mm.madvise(page(2), P, Advice::DontNeed))
    };
    let UffdMsg::Remove { start, end } = next_msg(&u) else {
        panic!("REMOVE expected")
    };
    assert_eq!((start, end), (page(2), page(3)));
    t.join().unwrap().unwrap();
    assert!(!mm.is_populated(page(2)));
    assert_eq!(u.mmap_changing(), 0);
    mm.validate().unwrap();
}

#[test]
fn without_the_features_no_events_and_mremap_drops_the_registration() {
    let mm = guarded();
    let u = ctx(&mm, 0);
    u.register(&mm, page(0), 4 * P, mode::MISSING).unwrap();
    mm.munmap(page(3), P).unwrap();
    mm.madvise(page(2), P, Advice::DontNeed).unwrap();
    let to = mm
        .mremap(
            page(0),
            2 * P,
            2 * P,
            MremapFlags::MAYMOVE | MremapFlags::FIXED,
            BASE + 64 * P,
        )
        .unwrap();
    let v = mm.vma_lookup(to).unwrap();
    assert!(v.desc.uffd.is_none() && !v.desc.flags.intersects(VmFlags::UFFD_FLAGS));
    assert_eq!(u.queued_events(), 0);
    assert_eq!(u.mmap_changing(), 0);
    mm.validate().unwrap();
}

/// A layout of `n` one-page anonymous VMAs (alternating protection, so none merge).
fn layout(n: u64) -> Arc<Mm> {
    let mm = Arc::new(Mm::new());
    for i in 0..n {
        let prot = if i % 2 == 0 { RW } else { Prot::READ };
        mm.mmap(BASE + i * P, P, prot, fixed(), MapSource::Anon)
            .unwrap();
    }
    mm
}

#[test]
fn fork_outcome_a_and_b() {
    let mm = layout(6);
    let u = ctx(&mm, 0); // no EVENT_FORK
    u.register(&mm, BASE, 2 * P, mode::MISSING).unwrap();
    let parent_before = mm.snapshot();
    for seed in [true, false] {
        for dup in [DupMode::Append, DupMode::Dup] {
            let mut hook = DupUffd::new(seed, CostSetting::Faithful);
            let child = mm.fork_with(dup, &mut hook).unwrap();
            child.validate().unwrap();
            let c = child.snapshot();
            assert_eq!(c.len(), 6, "fork never merges");
            for (p, k) in parent_before.iter().zip(&c) {
                assert_eq!((p.start, p.end), (k.start, k.end));
                assert!(k.desc.uffd.is_none(), "(b): the child loses the context");
                assert_eq!(k.desc.flags, p.desc.flags.without(VmFlags::UFFD_FLAGS));
            }
            // The parent is untouched.
            let now = mm.snapshot();
            assert!(now.iter().zip(&parent_before).all(|(a, b)| a.same_as(b)));
            assert_eq!(hook.counters().child_contexts, 0);
        }
    }
}

#[test]
fn fork_outcome_c_event_fork() {
    let mm = layout(6);
    let u = ctx(&mm, feature::EVENT_FORK);
    let v = ctx(&mm, feature::EVENT_FORK);
    u.register(&mm, BASE, 2 * P, mode::MISSING).unwrap(); // two VMAs (different prot)
    v.register(&mm, BASE + 4 * P, P, mode::WP).unwrap();
    let monitor = {
        let (u, v) = (Arc::clone(&u), Arc::clone(&v));
        std::thread::spawn(move || {
            // Both parents' mmap_changing are raised while the fork waits.
            while u.mmap_changing() == 0 || v.mmap_changing() == 0 {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(50));
            let a = next_msg(&u);
            let b = next_msg(&v);
            (a, b)
        })
    };
    let t = std::time::Instant::now();
    let mut hook = DupUffd::new(true, CostSetting::Faithful);
    let child = mm.fork_with(DupMode::Dup, &mut hook).unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(50),
        "fork returned before the monitor read the events"
    );
    let (a, b) = monitor.join().unwrap();
    let (UffdMsg::Fork { ctx: cu }, UffdMsg::Fork { ctx: cv }) = (a, b) else {
        panic!("FORK events expected")
    };
    assert_eq!(hook.counters().child_contexts, 2);
    assert_eq!(hook.delivered(), 2);
    assert_eq!((u.mmap_changing(), v.mmap_changing()), (0, 0));
    assert_eq!(cu.mm_id(), child.id());
    let c = child.snapshot();
    // One child context per parent context, shared by that context's VMAs; flags kept.
    assert!(Arc::ptr_eq(c[0].desc.uffd.as_ref().unwrap(), &cu));
    assert!(Arc::ptr_eq(c[1].desc.uffd.as_ref().unwrap(), &cu));
    assert!(Arc::ptr_eq(c[4].desc.uffd.as_ref().unwrap(), &cv));
    assert!(
        c[0].desc.flags.contains(VmFlags::UFFD_MISSING)
            && c[4].desc.flags.contains(VmFlags::UFFD_WP)
    );
    assert!(c[2].desc.uffd.is_none());
    assert_eq!(cu.features(), u.features());
    child.validate().unwrap();
    // The child's context serves the child.
    cu.unregister(&child, BASE, 2 * P).unwrap();
    assert!(child.vma_lookup(BASE).unwrap().desc.uffd.is_none());
}

#[test]
fn fork_event_fork_monitor_closes_first() {
    let mm = layout(4);
    let u = ctx(&mm, feature::EVENT_FORK);
    u.register(&mm, BASE, 2 * P, mode::MISSING).unwrap();
    let closer = {
        let (u, mm) = (Arc::clone(&u), Arc::clone(&mm));
        std::thread::spawn(move || {
            while u.mmap_changing() == 0 {
                std::thread::yield_now();
            }
            u.release(Some(&mm));
        })
    };
    let mut hook = DupUffd::new(true, CostSetting::Faithful);
    let child = mm.fork_with(DupMode::Dup, &mut hook).unwrap();
    closer.join().unwrap();
    assert_eq!(hook.delivered(), 0);
    // userfaultfd_release_new: the child's VMAs are reset.
    assert!(child
        .snapshot()
        .iter()
        .all(|v| v.desc.uffd.is_none() && !v.desc.flags.intersects(VmFlags::UFFD_FLAGS)));
    child.validate().unwrap();
    mm.validate().unwrap();
}

/// `DupUffd`, failing at the `n`th VMA (1-based).
struct FailAt(DupUffd, usize, usize);

impl ForkHook for FailAt {
    fn dup_vma(&mut self, env: &ForkEnv<'_>, child: &Vma) -> Result<(), MmError> {
        self.2 += 1;
        if self.2 == self.1 {
            return Err(MmError::NoMem);
        }
        self.0.dup_vma(env, child)
    }
    fn complete(&mut self, child: &Mm) {
        self.0.complete(child)
    }
    fn fail(&mut self) {
        self.0.fail()
    }
}

#[test]
fn fork_failure_runs_dup_userfaultfd_fail() {
    let mm = layout(4);
    let u = ctx(&mm, feature::EVENT_FORK);
    u.register(&mm, BASE, P, mode::MISSING).unwrap();
    let mut hook = FailAt(DupUffd::new(true, CostSetting::Faithful), 3, 0);
    assert_eq!(
        mm.fork_with(DupMode::Dup, &mut hook).err(),
        Some(MmError::NoMem)
    );
    assert_eq!(hook.0.counters().child_contexts, 1);
    assert_eq!(u.mmap_changing(), 0, "fail drops the raised mmap_changing");
    assert_eq!(u.queued_events(), 0, "no FORK event after a failed fork");
    mm.validate().unwrap();
}

#[test]
fn seed_patch_counters_are_exact() {
    const N: u64 = 100;
    const R: u64 = 10; // registered VMAs (context without EVENT_FORK)
    let mm = layout(N);
    let u = ctx(&mm, 0);
    for i in 0..R {
        u.register(&mm, BASE + 2 * i * P, P, mode::MISSING).unwrap();
    }
    // The amplified setting is an experiment knob (feature `bench-internals`, on in this
    // repository through the crate's dev-dependency on itself).
    let costs = [
        CostSetting::Faithful,
        #[cfg(feature = "bench-internals")]
        CostSetting::Amplified,
    ];
    for cost in costs {
        for seed in [false, true] {
            for dup in [DupMode::Append, DupMode::Dup] {
                let mut hook = DupUffd::new(seed, cost);
                let child = mm.fork_with(dup, &mut hook).unwrap();
                let c = hook.counters();
                let ls = child.lock_state();
                let unregistered = N - R;
                let (uffd_calls, flag_writes) = if seed { (R, R) } else { (N, N) };
                assert_eq!(
                    c.dup_uffd_start_write_calls, uffd_calls,
                    "{cost:?} seed={seed}"
                );
                assert_eq!(c.uffd_flag_writes, flag_writes);
                match cost {
                    CostSetting::Faithful => {
                        // The lock only moves: one acquisition per child VMA either way.
                        assert_eq!(ls.lock_acquisitions(), N);
                        assert_eq!(ls.start_write_calls(), N + uffd_calls);
                    }
                    #[cfg(feature = "bench-internals")]
                    CostSetting::Amplified => {
                        assert_eq!(ls.lock_acquisitions(), uffd_calls);
                        assert_eq!(ls.start_write_calls(), uffd_calls);
                    }
                }
                let _ = unregistered;
                child.validate().unwrap();
            }
        }
    }
    // The seed patch's headline: N VMAs without a context, N vs 0 start-write calls.
    let plain = layout(N);
    for (seed, want) in [(false, N), (true, 0)] {
        let mut hook = DupUffd::new(seed, CostSetting::Faithful);
        let child = plain.fork_with(DupMode::Dup, &mut hook).unwrap();
        assert_eq!(hook.counters().dup_uffd_start_write_calls, want);
        assert_eq!(hook.counters().uffd_flag_writes, want);
        assert_eq!(child.lock_state().lock_acquisitions(), N);
        assert_eq!(child.lock_state().start_write_calls(), N + want);
    }
}
