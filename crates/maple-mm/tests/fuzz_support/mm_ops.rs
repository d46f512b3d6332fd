//! Target `mm_ops`: the VMA manager (`maple_mm`) against the page model of
//! [`page_model`](super::page_model) (shared with the property test `tests/mm_model.rs`).
//!
//! Operations: mmap (fixed, fixed-noreplace, hinted, unhinted with top-down or bottom-up
//! placement; anonymous, shared anonymous, private and shared file), munmap, mprotect, madvise,
//! mremap (in place, may-move, fixed), writes, fork (append or `dup`, seed patch on or off,
//! continuing with the parent or the child, the other one exiting), userfaultfd
//! register/unregister/release/copy on two contexts, and the lookups (`find_vma`, `vma_lookup`,
//! `find_vma_prev`, `vmas_in`, `lock_vma_under_rcu`, `with_vma`). The model predicts every error
//! code it can decide and the placement of unhinted mappings. After every step the tree
//! validates, the VMAs expand to exactly the model's pages and the VMA count equals the number of
//! maximal mergeable runs of the model.
//!
//! The address-space configuration comes from the input: `max_map_count` (default or 2..=9),
//! bottom-up or top-down placement, and whether `mmap_base`/`TASK_UNMAPPED_BASE` sit at the
//! edges of the 48-page window the operations address (so unhinted mappings land among the
//! fixed ones) or at the x86-64 defaults.

use arbitrary::{Arbitrary, Unstructured};
use maple_mm::{MmConfig, PAGE_SIZE};

use super::page_model::{addr, check, files, wpage, Op, Src, World, BASE, WINDOW};

/// Operations decoded from one input at most.
const MAX_MM_OPS: usize = 128;

/// Per-run choices.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Cfg {
    /// `max_map_count`: 0 (mod 4) the default, else `2 + max % 8`.
    pub max: u8,
    /// Bottom-up placement.
    pub bottom_up: bool,
    /// `mmap_base` at the window's top and `TASK_UNMAPPED_BASE` at its bottom.
    pub window_bases: bool,
}

/// One step, compactly encoded (pages modulo the window, counts 1..=9).
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum In {
    /// Fixed mmap; `src`: 0..=3 anonymous, 4 shared anonymous, else file `off % 3` at page
    /// offset `off / 3 % 6`, shared if `src` is odd.
    Map {
        page: u8,
        n: u8,
        prot: u8,
        src: u8,
        off: u8,
        noreplace: bool,
    },
    /// Hinted anonymous mmap.
    MapHint { page: u8, n: u8, prot: u8 },
    /// Unhinted anonymous mmap.
    MapAnywhere { n: u8, prot: u8 },
    /// munmap.
    Unmap { page: u8, n: u8 },
    /// mprotect.
    Protect { page: u8, n: u8, prot: u8 },
    /// madvise (DONTNEED, DONTFORK, DOFORK, WIPEONFORK, KEEPONFORK).
    Advise { page: u8, n: u8, advice: u8 },
    /// mremap (`how`: in place, may move, fixed to `to`).
    Remap {
        page: u8,
        old: u8,
        new: u8,
        how: u8,
        to: u8,
    },
    /// A one-byte write.
    Write { page: u8, byte: u8 },
    /// fork.
    Fork {
        dup: bool,
        keep_child: bool,
        seed: bool,
    },
    /// UFFDIO_REGISTER (`mode` 1..=7).
    Register {
        page: u8,
        n: u8,
        mode: u8,
        which: bool,
    },
    /// UFFDIO_UNREGISTER.
    Unregister { page: u8, n: u8, which: bool },
    /// Closing a context.
    Release { which: bool },
    /// UFFDIO_COPY of one byte.
    Copy { page: u8, which: bool, byte: u8 },
    /// The lookups at a page (and over `n` pages).
    Lookup { page: u8, n: u8 },
}

fn pg(p: u8) -> u64 {
    u64::from(p) % WINDOW
}

fn cnt(n: u8) -> u64 {
    1 + u64::from(n) % 9
}

impl In {
    /// The model's operation.
    pub fn op(self) -> Op {
        match self {
            In::Map {
                page,
                n,
                prot,
                src,
                off,
                noreplace,
            } => Op::Map {
                page: pg(page),
                n: cnt(n),
                prot: u32::from(prot % 8),
                src: match src % 8 {
                    0..=3 => Src::Anon,
                    4 => Src::SharedAnon,
                    s => Src::File {
                        id: u64::from(off % 3),
                        off: u64::from(off / 3 % 6),
                        shared: s % 2 == 1,
                    },
                },
                noreplace,
            },
            In::MapHint { page, n, prot } => Op::MapHint {
                page: pg(page),
                n: cnt(n),
                prot: u32::from(prot % 8),
            },
            In::MapAnywhere { n, prot } => Op::MapAnywhere {
                page: 0,
                n: cnt(n),
                prot: u32::from(prot % 8),
            },
            In::Unmap { page, n } => Op::Unmap {
                page: pg(page),
                n: cnt(n),
            },
            In::Protect { page, n, prot } => Op::Protect {
                page: pg(page),
                n: cnt(n),
                prot: u32::from(prot % 8),
            },
            In::Advise { page, n, advice } => Op::Advise {
                page: pg(page),
                n: cnt(n),
                advice: advice % 5,
            },
            In::Remap {
                page,
                old,
                new,
                how,
                to,
            } => Op::Remap {
                page: pg(page),
                old: 1 + u64::from(old) % 5,
                new: cnt(new),
                how: how % 3,
                to: pg(to),
            },
            In::Write { page, byte } => Op::Write {
                page: pg(page),
                byte,
            },
            In::Fork {
                dup,
                keep_child,
                seed,
            } => Op::Fork {
                dup,
                keep_child,
                seed,
            },
            In::Register {
                page,
                n,
                mode,
                which,
            } => Op::Register {
                page: pg(page),
                n: cnt(n),
                mode: 1 + u64::from(mode) % 7,
                which: usize::from(which),
            },
            In::Unregister { page, n, which } => Op::Unregister {
                page: pg(page),
                n: cnt(n),
                which: usize::from(which),
            },
            In::Release { which } => Op::Release {
                which: usize::from(which),
            },
            In::Copy { page, which, byte } => Op::Copy {
                page: pg(page),
                which: usize::from(which),
                byte,
            },
            In::Lookup { page, n } => Op::Lookup {
                page: pg(page),
                n: u64::from(n) % 12,
            },
        }
    }
}

/// Decodes the configuration and up to [`MAX_MM_OPS`] steps.
pub fn decode(data: &[u8]) -> Option<(Cfg, Vec<In>)> {
    let mut u = Unstructured::new(data);
    let cfg = Cfg::arbitrary(&mut u).ok()?;
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_MM_OPS {
        match In::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    Some((cfg, ops))
}

/// The address-space configuration of a run.
pub fn mm_config(cfg: &Cfg) -> MmConfig {
    let mut c = MmConfig {
        bottom_up: cfg.bottom_up,
        ..MmConfig::default()
    };
    if cfg.max % 4 != 0 {
        c.max_map_count = 2 + usize::from(cfg.max % 8);
    }
    if cfg.window_bases {
        c.mmap_base = addr(wpage(WINDOW));
        c.unmapped_base = BASE;
    }
    debug_assert_eq!(BASE % PAGE_SIZE, 0);
    c
}

/// The decoded input (`FUZZ_TARGET=mm_ops FUZZ_INPUT=file cargo test --release --test
/// fuzz_replay describe_input -- --ignored --nocapture`).
pub fn describe(data: &[u8]) -> String {
    match decode(data) {
        Some((cfg, ops)) => {
            let ops: Vec<Op> = ops.into_iter().map(In::op).collect();
            format!("{cfg:?}\n{:#?}\n{ops:#?}", mm_config(&cfg))
        }
        None => "undecodable".into(),
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((cfg, ops)) = decode(data) else {
        return;
    };
    let mc = mm_config(&cfg);
    let mut w = World::with_config(mc, files());
    for op in ops {
        let op = op.op();
        w.step(&op);
        check(&w.mm, &w.model, w.max);
    }
}
