//! fork+exit with the userfaultfd model's `dup_userfaultfd`, seed patch ("userfaultfd: early
//! return in dup_userfaultfd()") off versus on, over real and synthetic layouts (21 to 25,621
//! VMAs) with none, some (every other) or all of the VMAs registered to a context without
//! `EVENT_FORK` (such VMAs take the reset path in both variants).
//!
//! Each case is run under both cost settings (`maple_mm::uffd::CostSetting`), named in the
//! benchmark id:
//! `faithful` (the child VMA is write-locked for the `VM_LOCKED_MASK` clear anyway, so the early
//! return only moves the lock: expect a few ns per VMA) and `amplified` (that later step does not
//! lock, so the early return saves a whole lock acquisition per unregistered VMA). Before timing,
//! each case prints its deterministic counters (`maple_mm::uffd::ForkCounters`) to stderr.
//!
//! `MAPLE_BENCH_QUICK=1` for a smoke run.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use maple_mm::uffd::{mode, CostSetting, DupUffd, UffdCtx};
use maple_mm::{DupMode, MapFlags, MapSource, Mm, MmConfig, Prot, VmFlags, PAGE_SIZE};

const SIZES: [usize; 10] = [21, 121, 221, 421, 821, 1621, 3221, 6421, 12821, 25621];

fn quick() -> bool {
    std::env::var_os("MAPLE_BENCH_QUICK").is_some_and(|v| v != "0")
}

fn synthetic(n: usize) -> Mm {
    let mm = Mm::new();
    for i in 0..n as u64 {
        let prot = if i % 2 == 0 {
            Prot::READ | Prot::WRITE
        } else {
            Prot::READ
        };
        mm.mmap(
            0x1000_0000 + i * PAGE_SIZE,
            PAGE_SIZE,
            prot,
            MapFlags::PRIVATE | MapFlags::FIXED,
            MapSource::Anon,
        )
        .expect("synthetic layout");
    }
    mm
}

/// The layouts, as recipes: a real capture's text, or a synthetic size.
enum Layout {
    Real(String, String),
    Synthetic(usize),
}

impl Layout {
    fn name(&self) -> String {
        match self {
            Layout::Real(n, _) => n.clone(),
            Layout::Synthetic(n) => format!("synthetic-{n}"),
        }
    }

    fn build(&self) -> Mm {
        match self {
            Layout::Real(_, text) => {
                Mm::from_maps(text, MmConfig::default()).expect("parse capture")
            }
            Layout::Synthetic(n) => synthetic(*n),
        }
    }
}

fn layouts() -> Vec<Layout> {
    let mut out = Vec::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/maps");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "maps"));
    files.sort();
    for p in files {
        let text = std::fs::read_to_string(&p).expect("capture");
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        out.push(Layout::Real(name, text));
    }
    out.extend(SIZES.iter().map(|&n| Layout::Synthetic(n)));
    out
}

#[derive(Clone, Copy)]
enum Reg {
    None,
    Some,
    All,
}

impl Reg {
    fn name(self) -> &'static str {
        match self {
            Reg::None => "none",
            Reg::Some => "some",
            Reg::All => "all",
        }
    }
}

/// Registers every registrable (anonymous, `VM_MAYWRITE`) VMA, or every other one.
fn register(mm: &Mm, reg: Reg) -> usize {
    if let Reg::None = reg {
        return 0;
    }
    let ctx = UffdCtx::with_features(mm, 0);
    let targets: Vec<(u64, u64)> = mm
        .snapshot()
        .iter()
        .filter(|v| v.desc.kind.is_anon() && v.desc.flags.contains(VmFlags::MAYWRITE))
        .map(|v| (v.start, v.end))
        .collect();
    let mut n = 0;
    for (i, (s, e)) in targets.into_iter().enumerate() {
        if matches!(reg, Reg::Some) && i % 2 == 1 {
            continue;
        }
        ctx.register(mm, s, e - s, mode::MISSING).expect("register");
        n += 1;
    }
    n
}

fn uffd_fork(c: &mut Criterion) {
    let mut g = c.benchmark_group("uffd-fork+exit");
    for layout in layouts() {
        let name = layout.name();
        for reg in [Reg::None, Reg::Some, Reg::All] {
            // A fresh copy of the layout per registration level.
            let mm = layout.build();
            let registered = register(&mm, reg);
            let vmas = mm.map_count();
            for cost in [CostSetting::Faithful, CostSetting::Amplified] {
                let cost_name = match cost {
                    CostSetting::Faithful => "faithful",
                    CostSetting::Amplified => "amplified",
                };
                for seed in [false, true] {
                    let mut hook = DupUffd::new(seed, cost);
                    let child = mm.fork_with(DupMode::Dup, &mut hook).expect("fork");
                    let k = hook.counters();
                    eprintln!(
                        "counters {name} vmas={vmas} registered={registered} cost={cost_name} seed={}: \
                         dup_uffd_start_write={} uffd_flag_writes={} child_vma_lock_acquisitions={} \
                         child_start_write_total={}",
                        if seed { "on" } else { "off" },
                        k.dup_uffd_start_write_calls,
                        k.uffd_flag_writes,
                        child.lock_state().lock_acquisitions(),
                        child.lock_state().start_write_calls()
                    );
                    drop(child);
                    let id = format!("{name}/{vmas}vmas/reg-{}/{cost_name}", reg.name());
                    let label = if seed { "seed-on" } else { "seed-off" };
                    g.bench_with_input(BenchmarkId::new(label, id), &mm, |b, mm| {
                        b.iter(|| {
                            let mut hook = DupUffd::new(seed, cost);
                            mm.fork_with(DupMode::Dup, &mut hook).expect("fork").exit()
                        })
                    });
                }
            }
        }
    }
    g.finish();
}

fn config() -> Criterion {
    let c = Criterion::default();
    if quick() {
        c.warm_up_time(Duration::from_millis(30))
            .measurement_time(Duration::from_millis(150))
            .sample_size(10)
    } else {
        c.warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
            .sample_size(20)
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = uffd_fork
}
criterion_main!(benches);
