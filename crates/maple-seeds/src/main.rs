//! The crate's main demonstration: the three seed patches reproduced side by side, on real data.
//!
//! ```text
//! cargo run --release -p maple-seeds                    # default run (well under a minute)
//! cargo run --release -p maple-seeds -- --quick         # smoke run (CI)
//! cargo run --release -p maple-seeds -- --maps FILE --reps 5 --format json
//! ```
//!
//! - **seed 001** (three-way append, "maple_tree: optimize mas_wr_append(), also improve
//!   duplicating VMAs"): building the VMA tree of a fork by in-order appends, appends on vs off,
//!   on this process's own `/proc/self/maps` layout and on the kernel's 135-entry
//!   `bench_forking` shape; plus the `__mt_dup` way of forking.
//! - **seed 000** ("userfaultfd: early return in dup_userfaultfd()"): fork+exit of that layout
//!   with and without the early return.
//! - **seed 002** ("fs/select.c: batch user writes in do_sys_poll"): poll2 with per-descriptor,
//!   per-chunk and single-window copy-out.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use maple_tree::{MapleTree, Value};

/// One row of the result table.
struct Row {
    seed: &'static str,
    workload: String,
    reported: String,
    before: f64,
    after: f64,
    unit: &'static str,
    counters: String,
}

impl Row {
    /// Improvement as the patch states it: before / after for times, after / before for rates.
    fn ratio(&self) -> f64 {
        if self.unit.ends_with("/s") {
            self.after / self.before
        } else {
            self.before / self.after
        }
    }
}

struct Opts {
    maps: Option<String>,
    reps: usize,
    quick: bool,
    format: String,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        maps: None,
        reps: 3,
        quick: false,
        format: "table".into(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--maps" => o.maps = Some(args.next().ok_or("--maps needs a file")?),
            "--reps" => {
                o.reps = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n: &usize| n > 0)
                    .ok_or("--reps needs a positive number")?
            }
            "--quick" => o.quick = true,
            "--format" => {
                o.format = args.next().ok_or("--format needs table, json or csv")?;
                if !["table", "json", "csv"].contains(&o.format.as_str()) {
                    return Err(format!("unknown format {}", o.format));
                }
            }
            "--json" => o.format = "json".into(),
            "--csv" => o.format = "csv".into(),
            "-h" | "--help" => {
                println!(
                    "usage: seeds [--quick] [--reps N] [--maps FILE] [--format table|json|csv]\n\
                     Reproduces seed 001 (three-way append), seed 000 (dup_userfaultfd early\n\
                     return) and seed 002 (batched poll copy-out) and prints a table."
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other} (try --help)")),
        }
    }
    Ok(o)
}

fn progress(msg: &str) {
    eprint!("\r\x1b[2K{msg}");
    let _ = std::io::stderr().flush();
}

/// `[start, end-1]` of every mapping in a `/proc/PID/maps` text.
fn parse_maps_ranges(text: &str) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    for line in text.lines() {
        let Some(range) = line.split_whitespace().next() else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
            if a < b {
                v.push((a, b - 1));
            }
        }
    }
    v
}

/// The VMA layout (its maps text): a file given on the command line, this process's own maps, or
/// the bundled capture when `/proc` is unavailable.
fn layout(opts: &Opts) -> Result<(String, String), String> {
    if let Some(p) = &opts.maps {
        let t = std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?;
        return Ok((p.clone(), t));
    }
    match std::fs::read_to_string("/proc/self/maps") {
        Ok(t) => Ok(("/proc/self/maps".into(), t)),
        Err(_) => Ok((
            "bundled capture (crates/maple-mm/data/maps/rust-program.maps)".into(),
            include_str!("../../maple-mm/data/maps/rust-program.maps").to_string(),
        )),
    }
}

/// Runs `f` repeatedly for about `budget`, `reps` times, returning the best mean in ns per call.
fn time_per_call(budget: Duration, reps: usize, mut f: impl FnMut()) -> f64 {
    // Calibrate the batch size.
    let mut batch = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        if t.elapsed() >= budget / 10 || batch >= 1 << 24 {
            break;
        }
        batch *= 2;
    }
    let mut best = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        let mut n = 0u64;
        while t.elapsed() < budget / reps as u32 {
            for _ in 0..batch {
                f();
            }
            n += batch;
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    best
}

/// The old `dup_mmap`: a fresh allocation tree filled by in-order appends (the kernel's old
/// `bench_forking`: 135 stores, validate, destroy).
fn fork_by_appends(ranges: &[(u64, u64)], append: bool, validate: bool) -> maple_tree::Stats {
    let mut t = MapleTree::<Value>::new_alloc();
    t.set_append(append);
    {
        let mut w = t.exclusive();
        for (i, &(a, b)) in ranges.iter().enumerate() {
            w.store_range(a..=b, Value::new(i as u64))
                .expect("valid range");
        }
    }
    if validate {
        t.validate().expect("valid tree");
    }
    t.stats()
}

/// The new `dup_mmap`: `__mt_dup`, then every entry replaced by an exact fit.
fn fork_by_dup(src: &MapleTree<Value>, validate: bool) -> maple_tree::Stats {
    let mut t = src.dup();
    {
        let mut w = t.exclusive();
        let mut c = w.cursor(0);
        while let Some(v) = c.find(u64::MAX) {
            let nv = Value::new(v.get() + 1);
            c.store(nv).expect("exact fit");
        }
    }
    if validate {
        t.validate().expect("valid tree");
    }
    t.stats()
}

fn seed_001(opts: &Opts, rows: &mut Vec<Row>, name: &str, ranges: &[(u64, u64)]) {
    let budget = if opts.quick {
        Duration::from_millis(60)
    } else {
        Duration::from_millis(1500)
    };
    let reps = if opts.quick { 1 } else { opts.reps };
    progress(&format!("seed 001: {name}: appends off"));
    let off = time_per_call(budget, reps, || {
        fork_by_appends(ranges, false, true);
    });
    progress(&format!("seed 001: {name}: appends on"));
    let on = time_per_call(budget, reps, || {
        fork_by_appends(ranges, true, true);
    });
    let s_on = fork_by_appends(ranges, true, false);
    let s_off = fork_by_appends(ranges, false, false);
    rows.push(Row {
        seed: "001",
        workload: format!("fork by in-order appends, {name} ({} VMAs)", ranges.len()),
        reported: "17,874.83 -> 15,738.38 ms (1.14x, ~12%)".into(),
        before: off,
        after: on,
        unit: "ns/fork",
        counters: format!(
            "on: {} three-way + {} end + {} start appends, {} append splits, {} node stores; off: {} node stores, {} splits",
            s_on.append_three_way,
            s_on.append_end,
            s_on.append_start,
            s_on.append_split,
            s_on.node_store,
            s_off.node_store,
            s_off.split
        ),
    });
    // The dup way, against the appends way with appends on.
    let src = MapleTree::<Value>::new_alloc();
    for (i, &(a, b)) in ranges.iter().enumerate() {
        src.store_range(a..=b, Value::new(i as u64))
            .expect("valid range");
    }
    progress(&format!("seed 001: {name}: dup + exact fits"));
    let dup = time_per_call(budget, reps, || {
        fork_by_dup(&src, true);
    });
    let s_dup = fork_by_dup(&src, false);
    rows.push(Row {
        seed: "001",
        workload: format!("fork by __mt_dup + exact fits vs appends, {name}"),
        reported: "fork() +2% (21 VMAs) .. +54% (25,621 VMAs)".into(),
        before: on,
        after: dup,
        unit: "ns/fork",
        counters: format!(
            "dup: {} nodes copied, {} exact fits, 0 splits ({})",
            s_dup.nodes_allocated, s_dup.exact_fit, s_dup.split
        ),
    });
}

/// Seed 000: fork+exit of the layout with and without `dup_userfaultfd`'s early return, in both
/// cost settings (the faithful one, where the VMA lock only moves, and the amplified one).
fn seed_000(opts: &Opts, rows: &mut Vec<Row>, maps_text: &str, name: &str) {
    use maple_mm::uffd::{fork_exit_run, CostSetting};
    use maple_mm::{Mm, MmConfig};
    let mm = match Mm::from_maps(maps_text, MmConfig::default()) {
        Ok(mm) => mm,
        Err(e) => {
            eprintln!("\nseed 000: cannot replay the maps: {e:?}");
            return;
        }
    };
    let vmas = mm.read().vmas().count();
    let reps: u32 = if opts.quick {
        20
    } else {
        400 * opts.reps as u32
    };
    for (label, cost) in [
        ("faithful", CostSetting::Faithful),
        ("amplified", CostSetting::Amplified),
    ] {
        progress(&format!("seed 000: fork+exit, {label}"));
        // Alternate before/after a few times and keep the best of each (noisy machines).
        let (mut off_best, mut on_best) = (f64::MAX, f64::MAX);
        let (mut off_c, mut on_c) = (None, None);
        for _ in 0..if opts.quick { 1 } else { opts.reps } {
            let (Ok(off), Ok(on)) = (
                fork_exit_run(&mm, false, cost, reps),
                fork_exit_run(&mm, true, cost, reps),
            ) else {
                eprintln!("\nseed 000: fork failed");
                return;
            };
            off_best = off_best.min(off.mean.as_nanos() as f64);
            on_best = on_best.min(on.mean.as_nanos() as f64);
            off_c = Some(off);
            on_c = Some(on);
        }
        let (Some(off), Some(on)) = (off_c, on_c) else {
            return;
        };
        rows.push(Row {
            seed: "000",
            workload: format!("fork+exit, {name} ({vmas} VMAs, no uffd), {label} cost"),
            reported: "no figure; saves a lock+store per VMA".into(),
            before: off_best,
            after: on_best,
            unit: "ns/fork",
            counters: format!(
                "dup_userfaultfd start-write calls {} -> {}, flag writes {} -> {}, child VMA lock acquisitions {} -> {}",
                off.counters.dup_uffd_start_write_calls,
                on.counters.dup_uffd_start_write_calls,
                off.counters.uffd_flag_writes,
                on.counters.uffd_flag_writes,
                off.child_lock_acquisitions,
                on.child_lock_acquisitions
            ),
        });
    }
}

/// Seed 002: poll2 (128 descriptors, POLLOUT, timeout 0) per-descriptor vs per-chunk vs one
/// window, with the SMAP-calibrated window cost; with real protection keys where available.
fn seed_002(opts: &Opts, rows: &mut Vec<Row>) {
    use maple_poll::will_it_scale::{per_call_costs, Testcase};
    use maple_poll::{pkeys_available, CopyOut, WindowCost, WindowMode};
    let budget = if opts.quick {
        Duration::from_millis(150)
    } else {
        Duration::from_millis(2000)
    };
    let mut modes = vec![("SMAP-calibrated model", WindowMode::Model(WindowCost::SMAP))];
    match pkeys_available() {
        Ok(_) => modes.push(("real protection keys (WRPKRU)", WindowMode::Pkey)),
        Err(why) => eprintln!("\nseed 002: protection keys unavailable ({why}); model only"),
    }
    for (label, mode) in modes {
        for tc in [Testcase::Poll2, Testcase::Poll1] {
            progress(&format!("seed 002: {tc:?}, {label}"));
            let costs = match per_call_costs(tc, mode, budget) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("\nseed 002: {tc:?} with {label} failed: {e:?}");
                    continue;
                }
            };
            let get = |s: CopyOut| costs.iter().find(|c| c.copy_out == s);
            let (Some(before), Some(chunk), Some(single)) = (
                get(CopyOut::PerFdPutUser),
                get(CopyOut::PerChunkUnsafe),
                get(CopyOut::SingleWindowUnsafe),
            ) else {
                continue;
            };
            for (name, after) in [("per-chunk (seed)", chunk), ("one window (merged)", single)] {
                rows.push(Row {
                    seed: "002",
                    workload: format!("{tc:?} per-fd vs {name}, {label}"),
                    reported: if tc == Testcase::Poll2 {
                        "poll2 +25% x86 SMAP, +49% Power9 KUAP".into()
                    } else {
                        "poll1: no change expected".into()
                    },
                    before: before.ns_per_call,
                    after: after.ns_per_call,
                    unit: "ns/call",
                    counters: format!(
                        "copy-out windows/call: {:.0} -> {:.0}; bytes out: {:.0} -> {:.0}",
                        before.write_windows_per_call,
                        after.write_windows_per_call,
                        before.bytes_out_per_call,
                        after.bytes_out_per_call
                    ),
                });
            }
        }
    }
}

fn render(opts: &Opts, rows: &[Row], source: &str) -> String {
    let mut out = String::new();
    match opts.format.as_str() {
        "json" => {
            out.push_str("[\n");
            for (i, r) in rows.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "  {{\"seed\": \"{}\", \"workload\": {:?}, \"reported\": {:?}, \"before\": {:.1}, \"after\": {:.1}, \"unit\": \"{}\", \"ratio\": {:.3}, \"counters\": {:?}}}{}",
                    r.seed,
                    r.workload,
                    r.reported,
                    r.before,
                    r.after,
                    r.unit,
                    r.ratio(),
                    r.counters,
                    if i + 1 < rows.len() { "," } else { "" }
                );
            }
            out.push_str("]\n");
        }
        "csv" => {
            out.push_str("seed,workload,reported,before,after,unit,ratio,counters\n");
            for r in rows {
                let _ = writeln!(
                    out,
                    "{},\"{}\",\"{}\",{:.1},{:.1},{},{:.3},\"{}\"",
                    r.seed,
                    r.workload,
                    r.reported,
                    r.before,
                    r.after,
                    r.unit,
                    r.ratio(),
                    r.counters
                );
            }
        }
        _ => {
            let _ = writeln!(out, "VMA layout: {source}");
            let _ = writeln!(
                out,
                "{:<5} | {:<58} | {:<42} | {:>12} | {:>12} | {:>6} | counters",
                "seed", "workload", "patch reported", "before", "after", "ratio"
            );
            let _ = writeln!(out, "{}", "-".repeat(160));
            for r in rows {
                let _ = writeln!(
                    out,
                    "{:<5} | {:<58} | {:<42} | {:>12} | {:>12} | {:>5.2}x | {}",
                    r.seed,
                    r.workload,
                    r.reported,
                    format!("{:.0} {}", r.before, r.unit),
                    format!("{:.0} {}", r.after, r.unit),
                    r.ratio(),
                    r.counters
                );
            }
        }
    }
    out
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("seeds: {e}");
            std::process::exit(2);
        }
    };
    let (source, maps_text) = match layout(&opts) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("seeds: {e}");
            std::process::exit(2);
        }
    };
    let ranges = parse_maps_ranges(&maps_text);
    let mut rows = Vec::new();
    seed_001(&opts, &mut rows, "this layout", &ranges);
    let bench_forking: Vec<(u64, u64)> = (0..=134u64).map(|i| (i * 10, i * 10 + 5)).collect();
    seed_001(&opts, &mut rows, "bench_forking shape", &bench_forking);
    seed_000(&opts, &mut rows, &maps_text, "this layout");
    seed_002(&opts, &mut rows);
    progress("");
    eprintln!();
    print!("{}", render(&opts, &rows, &source));
}
