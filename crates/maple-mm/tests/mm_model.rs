//! Property test of the VMA manager against a page-granular model (the model, its operations
//! and the checks live in `fuzz_support/page_model.rs`, shared with the fuzz target `mm_ops`).
//!
//! Every operation — mmap (fixed, fixed-noreplace, hinted; anonymous, shared anonymous, private
//! and shared file), munmap, mprotect, madvise, mremap, writes and fork (both ways, with the
//! userfaultfd hook, seed patch on or off, continuing with the parent or the child), and
//! userfaultfd register/unregister/release/copy on two contexts — is applied to both, with the
//! model (which also keeps a per-page context id) predicting errors (`EEXIST`, `ENOMEM` for
//! holes and for `max_map_count`, `EINVAL`, `EBUSY`, `ENOENT`, `EFAULT`).
//! After every step: the tree validates, the VMAs expand to exactly the model's pages, the number
//! of VMAs equals the number of maximal runs of the model (merging is maximal, but for the
//! boundaries the kernel leaves unmerged after dropping a userfaultfd context), and the populated
//! pages hold the model's bytes.

#[allow(dead_code)]
#[path = "fuzz_support/page_model.rs"]
mod page_model;

use maple_mm::{FileKind, MappedFile, MmConfig, PAGE_SIZE};
use page_model::{check, Op, Src, World, WINDOW};
use proptest::prelude::*;

fn src() -> impl Strategy<Value = Src> {
    prop_oneof![
        4 => Just(Src::Anon),
        1 => Just(Src::SharedAnon),
        3 => (0..3u64, 0..6u64, any::<bool>()).prop_map(|(id, off, shared)| Src::File { id, off, shared }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let page = 0..WINDOW;
    let n = 1..10u64;
    prop_oneof![
        6 => (page.clone(), n.clone(), 0..8u32, src(), prop::bool::weighted(0.2))
            .prop_map(|(page, n, prot, src, noreplace)| Op::Map { page, n, prot, src, noreplace }),
        1 => (page.clone(), n.clone(), 0..8u32).prop_map(|(page, n, prot)| Op::MapHint { page, n, prot }),
        1 => (n.clone(), 0..8u32).prop_map(|(n, prot)| Op::MapAnywhere { page: 0, n, prot }),
        2 => (page.clone(), n.clone()).prop_map(|(page, n)| Op::Lookup { page, n }),
        3 => (page.clone(), n.clone()).prop_map(|(page, n)| Op::Unmap { page, n }),
        5 => (page.clone(), n.clone(), 0..8u32).prop_map(|(page, n, prot)| Op::Protect { page, n, prot }),
        2 => (page.clone(), n.clone(), 0..5u8).prop_map(|(page, n, advice)| Op::Advise { page, n, advice }),
        2 => (page.clone(), 1..6u64, 1..10u64, 0..3u8, page.clone())
            .prop_map(|(page, old, new, how, to)| Op::Remap { page, old, new, how, to }),
        3 => (page.clone(), any::<u8>()).prop_map(|(page, byte)| Op::Write { page, byte }),
        1 => (any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(dup, keep_child, seed)| Op::Fork { dup, keep_child, seed }),
        6 => (page.clone(), n.clone(), 1..8u64, 0..2usize)
            .prop_map(|(page, n, mode, which)| Op::Register { page, n, mode, which }),
        2 => (page.clone(), n, 0..2usize).prop_map(|(page, n, which)| Op::Unregister { page, n, which }),
        1 => (0..2usize).prop_map(|which| Op::Release { which }),
        4 => (page, 0..2usize, any::<u8>()).prop_map(|(page, which, byte)| Op::Copy { page, which, byte }),
    ]
}

fn run(ops: Vec<Op>, max: usize) {
    let mut w = World::new(max, page_model::files());
    for op in &ops {
        w.step(op);
        check(&w.mm, &w.model, max);
    }
}

/// 128 cases, or `PROPTEST_CASES` (an explicit `cases` would override the variable).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn mm_against_page_model(ops in prop::collection::vec(op(), 1..60)) {
        run(ops, 65530);
    }

    #[test]
    fn mm_against_page_model_at_max_map_count(ops in prop::collection::vec(op(), 1..60), max in 2..8usize) {
        run(ops, max);
    }
}

#[test]
fn model_runs_agree_on_a_hand_made_case() {
    // A guard against a model that always agrees: three VMAs, two merge candidates.
    let ops = vec![
        Op::Map {
            page: 0,
            n: 4,
            prot: 3,
            src: Src::Anon,
            noreplace: false,
        },
        Op::Protect {
            page: 1,
            n: 2,
            prot: 1,
        },
        Op::Map {
            page: 8,
            n: 2,
            prot: 1,
            src: Src::File {
                id: 0,
                off: 0,
                shared: false,
            },
            noreplace: false,
        },
        Op::Map {
            page: 10,
            n: 2,
            prot: 1,
            src: Src::File {
                id: 0,
                off: 2,
                shared: false,
            },
            noreplace: false,
        },
    ];
    let cfg = MmConfig::default();
    let files = (0..3u64)
        .map(|i| MappedFile::new("/f", (8, 1), (1 << 40) + i, FileKind::Regular, true))
        .collect();
    let _ = cfg;
    let mut w = World::new(65530, files);
    for op in &ops {
        w.step(op);
    }
    assert_eq!(w.model.runs(), 4);
    assert_eq!(w.mm.map_count(), 4);
    check(&w.mm, &w.model, 65530);
    assert_eq!(PAGE_SIZE, 4096);
}
