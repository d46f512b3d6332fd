//! fork+exit of real and synthetic layouts, `dup_mmap` the old way (in-order appends into a
//! fresh tree) versus the new way (`dup` of the tree, then exact-fit replacement of every entry).
//!
//! Layouts: the committed `/proc/PID/maps` captures (`data/maps/*.maps`), the running
//! benchmark's own `/proc/self/maps`, and synthetic address spaces of 21 to 25,621 VMAs (the
//! VMA counts of the spawn benchmark of the `__mt_dup` series, the commit "fork: use __mt_dup()
//! to duplicate maple tree in dup_mmap()").
//!
//! `MAPLE_BENCH_QUICK=1` shrinks warm-up and measurement to a few hundred milliseconds per case
//! (a smoke run); `cargo bench --bench fork -- dup` filters as usual.

#![allow(missing_docs)] // criterion_group! generates undocumented items

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use maple_mm::{DupMode, MapFlags, MapSource, Mm, MmConfig, NoHook, Prot, PAGE_SIZE};

/// Synthetic VMA counts (21 + 100·2^k, as in the kernel patch's table).
const SIZES: [usize; 10] = [21, 121, 221, 421, 821, 1621, 3221, 6421, 12821, 25621];

fn quick() -> bool {
    std::env::var_os("MAPLE_BENCH_QUICK").is_some_and(|v| v != "0")
}

/// `n` one-page anonymous VMAs with alternating protection (so that none merge).
fn synthetic(n: usize) -> Mm {
    let mm = Mm::new();
    let base = 0x1000_0000u64;
    for i in 0..n as u64 {
        let prot = if i % 2 == 0 {
            Prot::READ | Prot::WRITE
        } else {
            Prot::READ
        };
        mm.mmap(
            base + i * PAGE_SIZE,
            PAGE_SIZE,
            prot,
            MapFlags::PRIVATE | MapFlags::FIXED,
            MapSource::Anon,
        )
        .expect("synthetic layout");
    }
    assert_eq!(mm.map_count(), n);
    mm
}

fn real_layouts() -> Vec<(String, Mm)> {
    let mut out = Vec::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data/maps");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "maps"));
    files.sort();
    for p in files {
        let text = std::fs::read_to_string(&p).expect("capture");
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        out.push((
            name,
            Mm::from_maps(&text, MmConfig::default()).expect("parse capture"),
        ));
    }
    if let Ok(text) = std::fs::read_to_string("/proc/self/maps") {
        if let Ok(mm) = Mm::from_maps(&text, MmConfig::default()) {
            out.push(("self".into(), mm));
        }
    }
    out
}

fn fork_exit(c: &mut Criterion) {
    let mut layouts = real_layouts();
    for n in SIZES {
        layouts.push((format!("synthetic-{n}"), synthetic(n)));
    }
    let mut g = c.benchmark_group("fork+exit");
    for (name, mm) in &layouts {
        let id = format!("{name}/{}vmas", mm.map_count());
        for (label, mode) in [("old-append", DupMode::Append), ("new-dup", DupMode::Dup)] {
            g.bench_with_input(BenchmarkId::new(label, &id), mm, |b, mm| {
                b.iter(|| {
                    let child = mm.fork_with(mode, &mut NoHook).expect("fork");
                    child.exit()
                })
            });
        }
    }
    g.finish();
}

fn config() -> Criterion {
    let c = Criterion::default();
    if quick() {
        c.warm_up_time(Duration::from_millis(50))
            .measurement_time(Duration::from_millis(200))
            .sample_size(10)
    } else {
        c.warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sample_size(30)
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = fork_exit
}
criterion_main!(benches);
