//! Unit tests of the VMA manager (the model-based ones live in `tests/mm_*.rs`).

use super::*;

const P: u64 = PAGE_SIZE;
const RW: Prot = Prot::from_bits(3);
const PRIV: MapFlags = MapFlags::PRIVATE;

fn fixed() -> MapFlags {
    MapFlags::PRIVATE | MapFlags::FIXED
}

fn spans(mm: &Mm) -> Vec<(u64, u64)> {
    mm.snapshot().iter().map(|v| (v.start, v.end)).collect()
}

fn file(kind: FileKind, writable: bool) -> Arc<MappedFile> {
    MappedFile::new("/tmp/f", (8, 1), 42, kind, writable)
}

#[test]
fn top_down_placement_below_mmap_base() {
    let mm = Mm::new();
    let base = mm.config().mmap_base;
    let a = mm.mmap(0, 3 * P, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(a, base - 3 * P);
    // Incompatible (read-only) neighbour: placed right below, not merged.
    let b = mm.mmap(0, P, Prot::READ, PRIV, MapSource::Anon).unwrap();
    assert_eq!(b, a - P);
    assert_eq!(mm.map_count(), 2);
    // Compatible neighbour: merged.
    let c = mm.mmap(0, P, Prot::READ, PRIV, MapSource::Anon).unwrap();
    assert_eq!(c, b - P);
    assert_eq!(spans(&mm), vec![(c, a), (a, base)]);
    mm.validate().unwrap();
}

#[test]
fn bottom_up_placement() {
    let cfg = MmConfig {
        bottom_up: true,
        ..MmConfig::default()
    };
    let mm = Mm::with_config(cfg.clone());
    let a = mm.mmap(0, 2 * P, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(a, cfg.unmapped_base);
    let b = mm.mmap(0, P, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(b, a + 2 * P);
    assert_eq!(mm.map_count(), 1);
}

#[test]
fn hint_is_used_when_free_and_ignored_when_not() {
    let mm = Mm::new();
    let a = mm.mmap(0x4000_0000, P, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(a, 0x4000_0000);
    let b = mm
        .mmap(0x4000_0000, P, Prot::READ, PRIV, MapSource::Anon)
        .unwrap();
    assert_ne!(b, a);
    // An unaligned hint is rounded down (round_hint_to_min, arch_get_unmapped_area_topdown).
    let c = mm.mmap(0x5000_0001, P, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(c, 0x5000_0000);
}

#[test]
fn stack_guard_gap_is_respected() {
    let mm = Mm::new();
    let gap = mm.config().stack_guard_gap;
    let stack = 0x7000_0000_0000u64;
    mm.mmap(
        stack,
        8 * P,
        RW,
        fixed() | MapFlags::GROWSDOWN,
        MapSource::Anon,
    )
    .unwrap();
    // A hint right below the stack is refused (it would sit in the guard gap)...
    let a = mm.mmap(stack - P, P, RW, PRIV, MapSource::Anon).unwrap();
    assert_ne!(a, stack - P);
    // ...and a top-down search whose only room is just below the stack leaves the gap free.
    let w = mm.write();
    let info = UnmappedAreaInfo {
        length: P,
        low_limit: 0,
        high_limit: stack,
        topdown: true,
        ..Default::default()
    };
    let found = w.vm_unmapped_area(&info).unwrap();
    assert!(found + P <= stack - gap, "{found:#x} inside the guard gap");
    assert_eq!(found, stack - gap - P);
}

#[test]
fn alignment_of_vm_unmapped_area() {
    let mm = Mm::new();
    mm.mmap(0x20_0000 + P, P, RW, fixed(), MapSource::Anon)
        .unwrap();
    let w = mm.write();
    for topdown in [false, true] {
        let info = UnmappedAreaInfo {
            length: 5 * P,
            low_limit: 0x10_0000,
            high_limit: 0x100_0000,
            align_mask: 0x1f_ffff,
            topdown,
            ..Default::default()
        };
        let a = w.vm_unmapped_area(&info).unwrap();
        assert_eq!(a % 0x20_0000, 0);
        assert!(w.vmas_in(a, a + 5 * P).next().is_none());
        assert_eq!(a, if topdown { 0xe0_0000 } else { 0x40_0000 });
    }
    let too_big = UnmappedAreaInfo {
        length: 1 << 30,
        low_limit: 0,
        high_limit: 1 << 20,
        ..Default::default()
    };
    assert_eq!(w.vm_unmapped_area(&too_big), Err(MmError::NoMem));
}

#[test]
fn fixed_replaces_and_noreplace_refuses() {
    let mm = Mm::new();
    let a = 0x1000_0000;
    mm.mmap(a, 4 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.write_bytes(a + P, b"x").unwrap();
    let before = mm.render_maps();
    assert_eq!(
        mm.mmap(
            a + 3 * P,
            2 * P,
            RW,
            PRIV | MapFlags::FIXED_NOREPLACE,
            MapSource::Anon
        ),
        Err(MmError::Exist)
    );
    assert_eq!(mm.render_maps(), before);
    mm.mmap(a + P, P, Prot::READ, fixed(), MapSource::Anon)
        .unwrap();
    assert_eq!(
        spans(&mm),
        vec![(a, a + P), (a + P, a + 2 * P), (a + 2 * P, a + 4 * P)]
    );
    assert!(!mm.is_populated(a + P), "the replaced page is dropped");
    mm.validate().unwrap();
}

#[test]
fn bad_arguments_are_typed_errors_and_change_nothing() {
    let mm = Mm::new();
    let a = mm.mmap(0, 4 * P, RW, PRIV, MapSource::Anon).unwrap();
    let before = mm.render_maps();
    let cases: Vec<(MmError, Result<u64, MmError>)> = vec![
        (MmError::Inval, mm.mmap(0, 0, RW, PRIV, MapSource::Anon)),
        (
            MmError::Inval,
            mm.mmap(0, P, Prot::from_bits(8), PRIV, MapSource::Anon),
        ),
        (
            MmError::Inval,
            mm.mmap(0, P, RW, MapFlags::from_bits(0), MapSource::Anon),
        ),
        (
            MmError::Inval,
            mm.mmap(0, P, RW, MapFlags::from_bits(0x2 | 0x40), MapSource::Anon),
        ),
        (
            MmError::Inval,
            mm.mmap(a + 1, P, RW, fixed(), MapSource::Anon),
        ),
        (
            MmError::NoMem,
            mm.mmap(0, u64::MAX, RW, PRIV, MapSource::Anon),
        ),
        (
            MmError::NoMem,
            mm.mmap(
                mm.config().task_size - P,
                2 * P,
                RW,
                fixed(),
                MapSource::Anon,
            ),
        ),
        (MmError::Perm, mm.mmap(P, P, RW, fixed(), MapSource::Anon)),
        (
            MmError::Inval,
            mm.mmap(
                0,
                P,
                RW,
                PRIV,
                MapSource::File {
                    file: file(FileKind::Regular, true),
                    offset: 7,
                },
            ),
        ),
        (
            MmError::Overflow,
            mm.mmap(
                0,
                2 * P,
                RW,
                PRIV,
                MapSource::File {
                    file: file(FileKind::Regular, true),
                    offset: !(P - 1),
                },
            ),
        ),
        (
            MmError::Access,
            mm.mmap(
                0,
                P,
                RW,
                MapFlags::SHARED,
                MapSource::File {
                    file: file(FileKind::Regular, false),
                    offset: 0,
                },
            ),
        ),
        (
            MmError::Inval,
            mm.mmap(
                0,
                P,
                RW,
                PRIV | MapFlags::GROWSDOWN,
                MapSource::File {
                    file: file(FileKind::Regular, true),
                    offset: 0,
                },
            ),
        ),
    ];
    for (want, got) in cases {
        assert_eq!(got, Err(want));
    }
    assert_eq!(mm.munmap(a + 1, P).err(), Some(MmError::Inval));
    assert_eq!(mm.munmap(a, 0).err(), Some(MmError::Inval));
    assert_eq!(mm.munmap(!(P - 1), 2 * P).err(), Some(MmError::Inval));
    assert_eq!(mm.mprotect(a + 1, P, Prot::READ), Err(MmError::Inval));
    assert_eq!(
        mm.mprotect(a, P, Prot::from_bits(0x10)),
        Err(MmError::Inval)
    );
    assert_eq!(
        mm.mprotect(a + 8 * P, 2 * P, Prot::READ),
        Err(MmError::NoMem),
        "nothing mapped at the start"
    );
    assert_eq!(
        mm.mprotect(a - P, 2 * P, Prot::READ),
        Err(MmError::NoMem),
        "hole before"
    );
    assert_eq!(mm.mprotect(a, 0, Prot::READ), Ok(()));
    assert_eq!(
        mm.madvise(a + 8 * P, 2 * P, Advice::DontFork),
        Err(MmError::NoMem)
    );
    assert_eq!(
        mm.mremap(a + P, 4 * P, 8 * P, MremapFlags::MAYMOVE, 0),
        Err(MmError::Fault)
    );
    assert_eq!(
        mm.mremap(a, P, 0, MremapFlags::MAYMOVE, 0),
        Err(MmError::Inval)
    );
    assert_eq!(
        mm.mremap(a, P, 2 * P, MremapFlags::FIXED, a + 8 * P),
        Err(MmError::Inval)
    );
    assert_eq!(
        mm.mremap(
            a,
            2 * P,
            2 * P,
            MremapFlags::MAYMOVE | MremapFlags::FIXED,
            a + P
        ),
        Err(MmError::Inval)
    );
    assert_eq!(mm.render_maps(), before);
    mm.validate().unwrap();
}

#[test]
fn shared_file_mapping_without_write_access() {
    let mm = Mm::new();
    let f = file(FileKind::Regular, false);
    let a = mm
        .mmap(
            0,
            2 * P,
            Prot::READ,
            MapFlags::SHARED,
            MapSource::File { file: f, offset: 0 },
        )
        .unwrap();
    let v = mm.vma_lookup(a).unwrap();
    assert!(v.desc.flags.contains(VmFlags::MAYSHARE));
    assert!(!v.desc.flags.intersects(VmFlags::MAYWRITE | VmFlags::SHARED));
    // mprotect cannot add PROT_WRITE without VM_MAYWRITE.
    assert_eq!(mm.mprotect(a, P, RW), Err(MmError::Access));
}

#[test]
fn munmap_splits_and_returns_pieces() {
    let mm = Mm::new();
    let a = 0x1000_0000;
    mm.mmap(a, 10 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.mmap(a + 10 * P, 2 * P, Prot::READ, fixed(), MapSource::Anon)
        .unwrap();
    let removed = mm.munmap(a + 3 * P, 8 * P).unwrap();
    let r: Vec<(u64, u64, u64)> = removed
        .iter()
        .map(|v| (v.start, v.end, v.desc.pgoff))
        .collect();
    assert_eq!(
        r,
        vec![
            (a + 3 * P, a + 10 * P, (a >> 12) + 3),
            (a + 10 * P, a + 11 * P, (a >> 12) + 10)
        ]
    );
    assert_eq!(spans(&mm), vec![(a, a + 3 * P), (a + 11 * P, a + 12 * P)]);
    // Punch a hole in the middle: one VMA becomes two.
    mm.munmap(a + P, P).unwrap();
    assert_eq!(
        spans(&mm),
        vec![(a, a + P), (a + 2 * P, a + 3 * P), (a + 11 * P, a + 12 * P)]
    );
    // Unmapping nothing is fine.
    assert_eq!(mm.munmap(a + 5 * P, P).unwrap().len(), 0);
    mm.validate().unwrap();
}

#[test]
fn file_offsets_decide_merging() {
    let mm = Mm::new();
    let f = file(FileKind::Regular, true);
    let a = 0x2000_0000;
    let src = |off| MapSource::File {
        file: Arc::clone(&f),
        offset: off,
    };
    mm.mmap(a, 2 * P, Prot::READ, fixed(), src(0)).unwrap();
    mm.mmap(a + 2 * P, P, Prot::READ, fixed(), src(2 * P))
        .unwrap(); // contiguous: merges
    assert_eq!(mm.map_count(), 1);
    mm.mmap(a + 3 * P, P, Prot::READ, fixed(), src(7 * P))
        .unwrap(); // not contiguous
    assert_eq!(mm.map_count(), 2);
    // Another open of the same path is another file: no merge.
    let g = file(FileKind::Regular, true);
    mm.mmap(
        a + 4 * P,
        P,
        Prot::READ,
        fixed(),
        MapSource::File {
            file: g,
            offset: 8 * P,
        },
    )
    .unwrap();
    assert_eq!(mm.map_count(), 3);
    // mprotect of the middle of the first VMA: split, pgoffs follow.
    mm.mprotect(a + P, P, RW).unwrap();
    let s = mm.snapshot();
    assert_eq!(
        s.iter().map(|v| v.desc.pgoff).collect::<Vec<_>>(),
        vec![0, 1, 2, 7, 8]
    );
    mm.mprotect(a + P, P, Prot::READ).unwrap();
    // Making the private file page writable charged it (VM_ACCOUNT), and read-only again does
    // not uncharge a file mapping: the middle page no longer merges back.
    assert_eq!(mm.map_count(), 5);
    assert!(mm.snapshot()[1].desc.flags.contains(VmFlags::ACCOUNT));
    mm.validate().unwrap();
}

#[test]
fn mprotect_merges_across_several_vmas() {
    let mm = Mm::new();
    let a = 0x3000_0000;
    for i in 0..6u64 {
        let prot = if i % 2 == 0 { RW } else { Prot::READ };
        mm.mmap(a + i * P, P, prot, fixed(), MapSource::Anon)
            .unwrap();
    }
    assert_eq!(mm.map_count(), 6);
    mm.mprotect(a + P, 4 * P, Prot::READ).unwrap();
    assert_eq!(spans(&mm), vec![(a, a + P), (a + P, a + 6 * P)]);
    mm.mprotect(a, 6 * P, Prot::NONE).unwrap();
    assert_eq!(spans(&mm), vec![(a, a + 6 * P)]);
    mm.validate().unwrap();
}

#[test]
fn in_place_flag_change_keeps_the_vma_object() {
    let mm = Mm::new();
    let a = mm.mmap(0, 2 * P, RW, PRIV, MapSource::Anon).unwrap();
    let before = {
        let g = mm.pin();
        mm.tree().load(a, &g).map(|v| v as *const Vma).unwrap()
    };
    mm.mprotect(a, 2 * P, Prot::READ).unwrap();
    let g = mm.pin();
    let v = mm.tree().load(a, &g).unwrap();
    assert_eq!(v as *const Vma, before);
    assert_eq!(v.flags() & VmFlags::PROT_MASK, VmFlags::READ);
}

#[test]
fn max_map_count_is_enforced_without_side_effects() {
    let cfg = MmConfig {
        max_map_count: 3,
        ..MmConfig::default()
    };
    let mm = Mm::with_config(cfg);
    let a = 0x1000_0000;
    mm.mmap(a, 10 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.mprotect(a + P, P, Prot::READ).unwrap(); // 3 VMAs
    let before = mm.render_maps();
    assert_eq!(mm.munmap(a + 5 * P, P).err(), Some(MmError::NoMem));
    assert_eq!(mm.mprotect(a + 5 * P, P, Prot::READ), Err(MmError::NoMem));
    assert_eq!(
        mm.mmap(a + 20 * P, P, Prot::READ, fixed(), MapSource::Anon),
        Err(MmError::NoMem)
    );
    assert_eq!(mm.render_maps(), before);
    // Operations that do not add VMAs still work at the limit.
    mm.mprotect(a + P, P, RW).unwrap();
    assert_eq!(mm.map_count(), 1);
    mm.validate().unwrap();
}

#[test]
fn find_vma_and_friends() {
    let mm = Mm::new();
    let (a, b) = (0x1000_0000, 0x2000_0000);
    mm.mmap(a, P, RW, fixed(), MapSource::Anon).unwrap();
    mm.mmap(b, 2 * P, Prot::READ, fixed(), MapSource::Anon)
        .unwrap();
    let r = mm.read();
    assert_eq!(r.find_vma(0).map(Vma::start), Some(a));
    assert_eq!(r.find_vma(a + P).map(Vma::start), Some(b));
    assert_eq!(r.find_vma(b + P).map(Vma::start), Some(b));
    assert!(r.find_vma(b + 2 * P).is_none());
    assert!(r.vma_lookup(a + P).is_none());
    assert_eq!(r.vma_lookup(b + P + 5).map(Vma::start), Some(b));
    let (v, p) = r.find_vma_prev(a + P);
    assert_eq!((v.map(Vma::start), p.map(Vma::start)), (Some(b), Some(a)));
    let (v, p) = r.find_vma_prev(b);
    assert_eq!((v.map(Vma::start), p.map(Vma::start)), (Some(b), Some(a)));
    let (v, p) = r.find_vma_prev(a);
    assert_eq!((v.map(Vma::start), p.map(Vma::start)), (Some(a), None));
    let (v, p) = r.find_vma_prev(b + 5 * P);
    assert_eq!((v.map(Vma::start), p.map(Vma::start)), (None, Some(b)));
    assert_eq!(r.vmas_in(a + P, b).count(), 0);
    assert_eq!(r.vmas_in(a, b + 1).count(), 2);
    assert_eq!(r.vmas_in(b, b).count(), 0);
    assert_eq!(
        r.vmas().rev().map(Vma::start).collect::<Vec<_>>(),
        vec![b, a]
    );
}

#[test]
fn mremap_shrink_grow_move() {
    let mm = Mm::new();
    let a = 0x1000_0000;
    mm.mmap(a, 4 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.write_bytes(a, b"page0").unwrap();
    mm.write_bytes(a + 3 * P, b"page3").unwrap();
    // Shrink.
    assert_eq!(mm.mremap(a, 4 * P, 2 * P, MremapFlags::NONE, 0), Ok(a));
    assert_eq!(spans(&mm), vec![(a, a + 2 * P)]);
    assert!(!mm.is_populated(a + 3 * P));
    // Grow in place.
    assert_eq!(mm.mremap(a, 2 * P, 6 * P, MremapFlags::NONE, 0), Ok(a));
    assert_eq!(spans(&mm), vec![(a, a + 6 * P)]);
    // Blocked: cannot grow without moving.
    mm.mmap(a + 6 * P, P, Prot::READ, fixed(), MapSource::Anon)
        .unwrap();
    assert_eq!(
        mm.mremap(a, 6 * P, 8 * P, MremapFlags::NONE, 0),
        Err(MmError::NoMem)
    );
    // Move.
    let b = mm.mremap(a, 6 * P, 8 * P, MremapFlags::MAYMOVE, 0).unwrap();
    assert_ne!(b, a);
    let mut buf = [0u8; 5];
    mm.read_bytes(b, &mut buf).unwrap();
    assert_eq!(&buf, b"page0");
    assert_eq!(
        mm.vma_lookup(b).unwrap().desc.pgoff,
        a >> PAGE_SHIFT,
        "anon pgoff moves with the VMA"
    );
    assert!(mm.vma_lookup(a).is_none());
    // Fixed move over an existing mapping.
    let c = 0x5000_0000;
    mm.mmap(c, 3 * P, Prot::READ, fixed(), MapSource::Anon)
        .unwrap();
    assert_eq!(
        mm.mremap(
            b,
            2 * P,
            2 * P,
            MremapFlags::MAYMOVE | MremapFlags::FIXED,
            c
        ),
        Ok(c)
    );
    mm.read_bytes(c, &mut buf).unwrap();
    assert_eq!(&buf, b"page0");
    assert_eq!(
        mm.vma_lookup(c + 2 * P).unwrap().desc.flags & VmFlags::PROT_MASK,
        VmFlags::READ
    );
    mm.validate().unwrap();
}

#[test]
fn madvise_fork_flags_and_dontneed() {
    let mm = Mm::new();
    let a = 0x1000_0000;
    mm.mmap(a, 4 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.write_bytes(a, b"data").unwrap();
    mm.write_bytes(a + 2 * P, b"wipe").unwrap();
    mm.madvise(a + 2 * P, P, Advice::WipeOnFork).unwrap();
    mm.madvise(a + 3 * P, P, Advice::DontFork).unwrap();
    assert_eq!(mm.map_count(), 3);
    let child = mm.fork().unwrap();
    assert_eq!(spans(&child), vec![(a, a + 2 * P), (a + 2 * P, a + 3 * P)]);
    let mut buf = [0u8; 4];
    child.read_bytes(a + 2 * P, &mut buf).unwrap();
    assert_eq!(&buf, &[0; 4], "WIPEONFORK: the child's copy is empty");
    child.read_bytes(a, &mut buf).unwrap();
    assert_eq!(&buf, b"data");
    mm.madvise(a, 4 * P, Advice::DoFork).unwrap();
    mm.madvise(a, 4 * P, Advice::KeepOnFork).unwrap();
    assert_eq!(mm.map_count(), 1);
    mm.madvise(a, P, Advice::DontNeed).unwrap();
    mm.read_bytes(a, &mut buf).unwrap();
    assert_eq!(&buf, &[0; 4]);
    let f = file(FileKind::Regular, true);
    let b = mm
        .mmap(0, P, RW, PRIV, MapSource::File { file: f, offset: 0 })
        .unwrap();
    assert_eq!(mm.madvise(b, P, Advice::WipeOnFork), Err(MmError::Inval));
}

#[test]
fn shared_pages_stay_shared_after_fork() {
    let mm = Mm::new();
    let a = mm
        .mmap(0, P, RW, MapFlags::SHARED, MapSource::Anon)
        .unwrap();
    let p = mm.mmap(0, P, RW, PRIV, MapSource::Anon).unwrap();
    mm.write_bytes(a, b"one").unwrap();
    mm.write_bytes(p, b"one").unwrap();
    let child = mm.fork().unwrap();
    child.write_bytes(a, b"two").unwrap();
    child.write_bytes(p, b"two").unwrap();
    let mut buf = [0u8; 3];
    mm.read_bytes(a, &mut buf).unwrap();
    assert_eq!(
        &buf, b"two",
        "MAP_SHARED: the parent sees the child's write"
    );
    mm.read_bytes(p, &mut buf).unwrap();
    assert_eq!(&buf, b"one", "MAP_PRIVATE: copy-on-write");
    // Shared anonymous mappings are shmem files that never merge with each other.
    let b = mm
        .mmap(
            a - P,
            P,
            RW,
            MapFlags::SHARED | MapFlags::FIXED,
            MapSource::Anon,
        )
        .unwrap();
    assert_eq!(b, a - P);
    assert!(mm.render_maps().contains("/dev/zero (deleted)"));
    assert_eq!(mm.read().vmas_in(b, a + P).count(), 2);
}

#[test]
fn access_faults() {
    let mm = Mm::new();
    let a = mm
        .mmap(0, 2 * P, Prot::READ, PRIV, MapSource::Anon)
        .unwrap();
    let mut buf = [1u8; 8];
    mm.read_bytes(a + P - 4, &mut buf).unwrap();
    assert_eq!(buf, [0; 8]);
    assert_eq!(mm.write_bytes(a, b"x"), Err(MmError::Fault));
    assert_eq!(mm.read_bytes(a + 2 * P - 4, &mut buf), Err(MmError::Fault));
    assert_eq!(mm.read_bytes(u64::MAX - 2, &mut buf), Err(MmError::Fault));
    assert_eq!(mm.resident_pages(), 0);
}

#[test]
fn vma_write_lock_lasts_until_mmap_write_unlock() {
    let mm = Mm::new();
    let a = mm.mmap(0, P, RW, PRIV, MapSource::Anon).unwrap();
    let g = mm.pin();
    {
        let r = mm.lock_vma_under_rcu(a, &g).unwrap();
        assert_eq!(r.start(), a);
        // A second reader shares the lock.
        let r2 = mm.lock_vma_under_rcu(a, &g).unwrap();
        drop((r, r2));
    }
    let calls = mm.lock_state().start_write_calls();
    let acq = mm.lock_state().lock_acquisitions();
    {
        let w = mm.write();
        let v = w.vma_lookup(a).unwrap();
        assert!(v.start_write(mm.lock_state()));
        assert!(
            !v.start_write(mm.lock_state()),
            "second call only compares the stamp"
        );
        assert!(v.is_write_locked(mm.lock_state()));
        assert_eq!(
            mm.lock_vma_under_rcu(a, &g).err(),
            Some(VmaLockMiss::Locked)
        );
    }
    assert_eq!(mm.lock_state().start_write_calls() - calls, 2);
    assert_eq!(mm.lock_state().lock_acquisitions() - acq, 1);
    assert!(mm.lock_vma_under_rcu(a, &g).is_ok());
    // A VMA replaced by a writer is stale for a reader that found it before.
    let old: &Vma = mm.tree().load(a, &g).unwrap();
    mm.mprotect(a, P, Prot::READ).unwrap(); // in place: same object
    assert!(!old.is_detached());
    mm.munmap(a, P).unwrap();
    assert!(old.is_detached());
    assert!(
        old.start_read(mm.lock_state()),
        "unlocked again after the writer is done"
    );
    old.end_read();
    assert_eq!(mm.lock_vma_under_rcu(a, &g).err(), Some(VmaLockMiss::NoVma));
}

#[test]
fn with_vma_counts_paths() {
    let mm = Mm::new();
    let a = mm.mmap(0, P, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(mm.with_vma(a, |v| v.map(Vma::start)), Some(a));
    assert_eq!(mm.with_vma(a + P, |v| v.map(Vma::start)), None);
    let s = mm.lookup_stats();
    assert_eq!((s.lockless, s.fallback), (1, 1));
}

#[test]
fn fork_both_ways_equal_and_independent() {
    let mm = Mm::new();
    // Fewer under Miri (it interprets every step); 0x1000a000 must stay one of them.
    let n = if cfg!(miri) { 24 } else { 200 };
    for i in 0..n {
        let prot = if i % 3 == 0 { Prot::READ } else { RW };
        mm.mmap(0x1000_0000 + i * 2 * P, P, prot, fixed(), MapSource::Anon)
            .unwrap();
    }
    mm.madvise(0x1000_0000 + 10 * P, P, Advice::DontFork)
        .unwrap();
    mm.mmap(
        0x2000_0000,
        P,
        RW,
        fixed() | MapFlags::LOCKED,
        MapSource::Anon,
    )
    .unwrap();
    let parent_text = mm.render_maps();
    let expect: String = parent_text
        .lines()
        .filter(|l| !l.starts_with("1000a000"))
        .map(|l| format!("{l}\n"))
        .collect();
    for mode in [DupMode::Append, DupMode::Dup] {
        let child = mm.fork_with(mode, &mut NoHook).unwrap();
        child.validate().unwrap();
        assert_eq!(child.render_maps(), expect, "{mode:?}");
        assert_eq!(child.map_count(), n as usize);
        assert!(!child
            .vma_lookup(0x2000_0000)
            .unwrap()
            .desc
            .flags
            .contains(VmFlags::LOCKED));
        assert!(mm
            .vma_lookup(0x2000_0000)
            .unwrap()
            .desc
            .flags
            .contains(VmFlags::LOCKED));
        child.munmap(0x1000_0000, 0x1000_0000).unwrap();
        assert_eq!(child.map_count(), 1);
        assert_eq!(mm.render_maps(), parent_text);
        mm.validate().unwrap();
        // Every child VMA was write-locked under the child's (released) fork lock.
        assert_eq!(child.lock_state().seq(), 2);
    }
}

struct FailAt(usize, usize);

impl ForkHook for FailAt {
    fn dup_vma(&mut self, _env: &ForkEnv<'_>, _child: &Vma) -> Result<(), MmError> {
        self.1 += 1;
        if self.1 == self.0 {
            Err(MmError::NoMem)
        } else {
            Ok(())
        }
    }
}

#[test]
fn failed_fork_leaves_the_parent_intact() {
    let mm = Mm::new();
    for i in 0..50u64 {
        mm.mmap(0x1000_0000 + i * 2 * P, P, RW, fixed(), MapSource::Anon)
            .unwrap();
    }
    let text = mm.render_maps();
    for mode in [DupMode::Append, DupMode::Dup] {
        let mut hook = FailAt(20, 0);
        assert_eq!(mm.fork_with(mode, &mut hook).err(), Some(MmError::NoMem));
        assert_eq!(mm.render_maps(), text);
        mm.validate().unwrap();
        let g = mm.pin();
        assert!(mm.tree().iter(&g).all(|(_, v)| !v.is_detached()));
    }
}

#[test]
fn maps_parse_errors() {
    let cfg = MmConfig::default;
    let bad = [
        ("1000-0 r--p 00000000 00:00 0\n", "empty or unaligned range"),
        (
            "1000-2001 r--p 00000000 00:00 0\n",
            "empty or unaligned range",
        ),
        ("zz-2000 r--p 00000000 00:00 0\n", "bad start address"),
        ("1000-2000 r--q 00000000 00:00 0\n", "bad permissions"),
        (
            "1000-2000 r--p 00000010 00:00 0\n",
            "anonymous mapping with an offset",
        ),
        (
            "1000-2000 r--p 00000010 08:01 5 /x\n",
            "unaligned file offset",
        ),
        (
            "1000-3000 r--p 00000000 00:00 0\n2000-4000 r--p 00000000 00:00 0\n",
            "ranges overlap or are not sorted",
        ),
        ("1000-2000 r--p\n", "missing offset"),
        ("1000-2000 r--p 0 00 0\n", "bad device"),
    ];
    for (text, reason) in bad {
        let e = Mm::from_maps(text, cfg()).unwrap_err();
        assert_eq!(e.reason, reason, "{text:?}");
    }
}

// ----- the running kernel's answers (each also run live in tests/mm_live_kernel.rs) ---

const B: u64 = 0x6000_0000_0000;
const R: Prot = Prot::READ;

fn perms(mm: &Mm) -> Vec<(u64, u64, u64)> {
    mm.snapshot()
        .iter()
        .map(|v| {
            (
                (v.start - B) / P,
                (v.end - B) / P,
                v.desc.flags.bits() & 0x7,
            )
        })
        .collect()
}

fn ro_file() -> Arc<MappedFile> {
    file(FileKind::Regular, false)
}

#[test]
fn class1_failing_mprotect_and_madvise_apply_up_to_the_failure() {
    let mm = Mm::new();
    mm.mmap(B, 4 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.munmap(B + 2 * P, P).unwrap();
    assert_eq!(mm.mprotect(B, 4 * P, R), Err(MmError::NoMem));
    assert_eq!(perms(&mm), vec![(0, 2, 1), (3, 4, 3)]);
    // madvise skips the hole, advises both pieces, then reports it.
    assert_eq!(mm.madvise(B, 4 * P, Advice::DontFork), Err(MmError::NoMem));
    assert!(mm
        .snapshot()
        .iter()
        .all(|v| v.desc.flags.contains(VmFlags::DONTCOPY)));

    // EACCES at the second VMA: the first one changed.
    let mm = Mm::new();
    mm.mmap(B, 2 * P, R, fixed(), MapSource::Anon).unwrap();
    let src = MapSource::File {
        file: ro_file(),
        offset: 0,
    };
    let shared = MapFlags::SHARED | MapFlags::FIXED;
    mm.mmap(B + 2 * P, 2 * P, R, shared, src).unwrap();
    assert_eq!(mm.mprotect(B, 4 * P, RW), Err(MmError::Access));
    assert_eq!(perms(&mm), vec![(0, 2, 3), (2, 4, 1)]);

    // EINVAL for WIPEONFORK on shared memory: the private VMA before it is marked.
    let mm = Mm::new();
    mm.mmap(B, 2 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.mmap(B + 2 * P, 2 * P, RW, shared, MapSource::Anon)
        .unwrap();
    assert_eq!(
        mm.madvise(B, 4 * P, Advice::WipeOnFork),
        Err(MmError::Inval)
    );
    let s = mm.snapshot();
    assert!(s[0].desc.flags.contains(VmFlags::WIPEONFORK));
    assert!(!s[1].desc.flags.contains(VmFlags::WIPEONFORK));
}

#[test]
fn class2_errno_order() {
    let shared = MapFlags::SHARED | MapFlags::FIXED;
    let mm = Mm::new();
    let rw_file = MapSource::File {
        file: file(FileKind::Regular, true),
        offset: 0,
    };
    mm.mmap(B, 2 * P, RW, shared, rw_file).unwrap();
    mm.munmap(B, P).unwrap();
    assert_eq!(
        mm.madvise(B, 2 * P, Advice::WipeOnFork),
        Err(MmError::Inval)
    );

    let mm = Mm::new();
    let ro = || MapSource::File {
        file: ro_file(),
        offset: 0,
    };
    mm.mmap(B, 2 * P, R, shared, ro()).unwrap();
    mm.munmap(B + P, P).unwrap();
    assert_eq!(mm.mprotect(B, 2 * P, RW), Err(MmError::Access));

    let noreplace = MapFlags::SHARED | MapFlags::FIXED_NOREPLACE;
    assert_eq!(mm.mmap(B, 2 * P, RW, noreplace, ro()), Err(MmError::Exist));
    assert_eq!(
        mm.mmap(B + 0x10, 2 * P, RW, shared, ro()),
        Err(MmError::Inval)
    );
    assert_eq!(
        mm.mmap(B + 8 * P, 2 * P, RW, shared, ro()),
        Err(MmError::Access)
    );
}

#[test]
fn class3_mremap_over_several_vmas() {
    let mm = Mm::new();
    mm.mmap(B, 2 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.mmap(B + 2 * P, 2 * P, R, fixed(), MapSource::Anon)
        .unwrap();
    assert_eq!(mm.mremap(B, 4 * P, 4 * P, MremapFlags::NONE, 0), Ok(B));
    assert_eq!(mm.mremap(B, 4 * P, P, MremapFlags::NONE, 0), Ok(B));
    assert_eq!(perms(&mm), vec![(0, 1, 3)]);
    // Growing still needs the range inside one VMA.
    mm.mmap(B + P, P, R, fixed(), MapSource::Anon).unwrap();
    assert_eq!(
        mm.mremap(B, 2 * P, 3 * P, MremapFlags::MAYMOVE, 0),
        Err(MmError::Fault)
    );

    // 6.17: a move of an unchanged size moves every VMA, gaps kept.
    let mm = Mm::new();
    let mv = MremapFlags::MAYMOVE | MremapFlags::FIXED;
    mm.mmap(B + 10 * P, 2 * P, RW, fixed(), MapSource::Anon)
        .unwrap();
    mm.mmap(B + 12 * P, 2 * P, R, fixed(), MapSource::Anon)
        .unwrap();
    mm.mmap(B + 15 * P, P, RW, fixed(), MapSource::Anon)
        .unwrap();
    assert_eq!(
        mm.mremap(B + 10 * P, 6 * P, 6 * P, mv, B + 30 * P),
        Ok(B + 30 * P)
    );
    assert_eq!(perms(&mm), vec![(30, 32, 3), (32, 34, 1), (35, 36, 3)]);
    // A hole at the start: EFAULT.
    assert_eq!(
        mm.mremap(B + 29 * P, 3 * P, 3 * P, mv, B + 50 * P),
        Err(MmError::Fault)
    );
}

#[test]
fn class4_unfaulted_anon_move_takes_the_new_offset_and_merges() {
    let mv = MremapFlags::MAYMOVE | MremapFlags::FIXED;
    let mm = Mm::new();
    mm.mmap(B, 4 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.mmap(B + 20 * P, 2 * P, RW, fixed(), MapSource::Anon)
        .unwrap();
    mm.mremap(B + 20 * P, 2 * P, 2 * P, mv, B + 4 * P).unwrap();
    assert_eq!(perms(&mm), vec![(0, 6, 3)]);
    // Once a page was written, the moved VMA keeps its offset (and anon_vma): two VMAs.
    let mm = Mm::new();
    mm.mmap(B, 4 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.mmap(B + 20 * P, 2 * P, RW, fixed(), MapSource::Anon)
        .unwrap();
    mm.write_bytes(B + 20 * P, b"x").unwrap();
    mm.mremap(B + 20 * P, 2 * P, 2 * P, mv, B + 4 * P).unwrap();
    assert_eq!(perms(&mm), vec![(0, 4, 3), (4, 6, 3)]);
}

#[test]
fn class5_untouched_neighbours_never_merge() {
    let text = "\
600000000000-600000001000 r--p 00000000 00:00 0 
600000001000-600000002000 rw-p 00000000 00:00 0 
600000002000-600000003000 rw-p 00000000 00:00 0 
";
    let mm = Mm::from_maps(text, MmConfig::default()).unwrap();
    mm.mprotect(B, 3 * P, RW).unwrap();
    // The changed VMA merges with its neighbour; the boundary between the two untouched ones
    // stays.
    assert_eq!(perms(&mm), vec![(0, 2, 3), (2, 3, 3)]);
}

#[test]
fn class6_unaligned_hint_rounds_down() {
    let mm = Mm::new();
    let a = mm
        .mmap(0x6000_0008_f849, 0x9000, RW, PRIV, MapSource::Anon)
        .unwrap();
    assert_eq!(a, 0x6000_0008_f000);
}

#[test]
fn class7_thp_alignment_of_2mib_anon_maps() {
    let mm = Mm::new();
    let base = mm.config().mmap_base;
    let a = mm.mmap(0, 2 << 20, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(a % (2 << 20), 0);
    // thp_get_unmapped_area: search len + 2 MiB below mmap_base, align up inside it.
    let want = (base - (4 << 20)).next_multiple_of(2 << 20);
    let want = if want == base - (4 << 20) {
        want + (2 << 20)
    } else {
        want
    };
    assert_eq!(a, want);
    // Not a multiple of 2 MiB: no alignment (the hole left above the aligned block is used).
    let b = mm.mmap(0, 3 * P, RW, PRIV, MapSource::Anon).unwrap();
    assert_eq!(b, base - 3 * P);
    // A hint disables the alignment.
    let c = mm
        .mmap(0x6000_0000_1000, 2 << 20, RW, PRIV, MapSource::Anon)
        .unwrap();
    assert_eq!(c, 0x6000_0000_1000);
}

#[test]
fn class8_vm_account() {
    let mm = Mm::new();
    let f = file(FileKind::Regular, true);
    let src = |off| MapSource::File {
        file: Arc::clone(&f),
        offset: off,
    };
    mm.mmap(B + 20 * P, 2 * P, R, fixed(), src(20 * P)).unwrap();
    mm.mmap(B + 22 * P, 2 * P, RW, fixed(), src(22 * P))
        .unwrap();
    mm.mprotect(B + 22 * P, 2 * P, R).unwrap();
    let s = mm.snapshot();
    assert_eq!(s.len(), 2, "VM_ACCOUNT keeps them apart");
    assert!(s[1].desc.flags.contains(VmFlags::ACCOUNT));
    assert!(!s[0].desc.flags.contains(VmFlags::ACCOUNT));
    // A never-written anonymous VMA made read-only is uncharged, and then merges.
    let mm = Mm::new();
    mm.mmap(B, 2 * P, R, fixed(), MapSource::Anon).unwrap();
    mm.mmap(B + 2 * P, 2 * P, RW, fixed(), MapSource::Anon)
        .unwrap();
    mm.mprotect(B + 2 * P, 2 * P, R).unwrap();
    assert_eq!(perms(&mm), vec![(0, 4, 1)]);
    // Shared and NORESERVE mappings are not charged.
    let shared = MapFlags::SHARED | MapFlags::FIXED;
    mm.mmap(B + 8 * P, P, RW, shared, MapSource::Anon).unwrap();
    mm.mmap(
        B + 9 * P,
        P,
        RW,
        fixed() | MapFlags::NORESERVE,
        MapSource::Anon,
    )
    .unwrap();
    assert!(mm.snapshot()[1..]
        .iter()
        .all(|v| !v.desc.flags.contains(VmFlags::ACCOUNT)));
}

#[test]
fn class9_anon_vma_identity() {
    let mm = Mm::new();
    mm.mmap(B, 2 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.write_bytes(B, b"a").unwrap();
    mm.mmap(B + 3 * P, 2 * P, RW, fixed(), MapSource::Anon)
        .unwrap();
    mm.write_bytes(B + 3 * P, b"b").unwrap();
    mm.mmap(B + 2 * P, P, RW, fixed(), MapSource::Anon).unwrap();
    assert_eq!(perms(&mm), vec![(0, 3, 3), (3, 5, 3)]);
    let s = mm.snapshot();
    assert_ne!(s[0].desc.anon_vma, s[1].desc.anon_vma);
    assert!(s[0].desc.anon_vma.is_some());

    // A split inherits it (so the pieces merge back); a fork child gets a fresh one per VMA,
    // so there they do not.
    let mm = Mm::new();
    mm.mmap(B, 4 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.write_bytes(B, b"a").unwrap();
    mm.mprotect(B + P, P, R).unwrap();
    let child = mm.fork().unwrap();
    mm.mprotect(B + P, P, RW).unwrap();
    assert_eq!(mm.map_count(), 1);
    child.mprotect(B + P, P, RW).unwrap();
    assert_eq!(child.map_count(), 3);
    let c = child.snapshot();
    assert!(c.iter().all(|v| v.desc.anon_vma.is_some_and(|a| a.forked)));
    // A new neighbour does not merge with a fork child's VMA that has an anon_vma.
    child
        .mmap(B + 4 * P, P, RW, fixed(), MapSource::Anon)
        .unwrap();
    assert_eq!(child.map_count(), 4);
}

#[test]
fn class8_unchanged_protection_keeps_the_charge() {
    // A fork child's WIPEONFORK VMA has no anon_vma; an mprotect that does not change its
    // protection returns before the accounting (mprotect_fixup), one that does uncharges it.
    let mm = Mm::new();
    mm.mmap(B, 2 * P, RW, fixed(), MapSource::Anon).unwrap();
    mm.write_bytes(B, b"a").unwrap();
    mm.mprotect(B, 2 * P, Prot::NONE).unwrap();
    mm.madvise(B, 2 * P, Advice::WipeOnFork).unwrap();
    let child = mm.fork().unwrap();
    assert!(child.snapshot()[0].desc.anon_vma.is_none());
    child.mprotect(B + P, P, Prot::NONE).unwrap();
    assert_eq!(child.map_count(), 1);
    child.mprotect(B + P, P, R).unwrap();
    let s = child.snapshot();
    assert_eq!(s.len(), 2);
    assert!(s[0].desc.flags.contains(VmFlags::ACCOUNT));
    assert!(!s[1].desc.flags.contains(VmFlags::ACCOUNT));
}
