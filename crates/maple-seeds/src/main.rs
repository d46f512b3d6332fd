//! The crate's main demonstration: four kernel patches reproduced side by side, on real data.
//!
//! ```text
//! cargo run --release -p maple-seeds                    # default run (about 20 seconds)
//! cargo run --release -p maple-seeds -- --quick         # smoke run (CI, about a second)
//! cargo run --release -p maple-seeds -- --explain       # the rules and the glossary, no run
//! cargo run --release -p maple-seeds -- --maps FILE --reps 5 --format json
//! ```
//!
//! One section per patch, in [`PATCHES`]:
//!
//! - **"maple_tree: optimize mas_wr_append(), also improve duplicating VMAs"** (the three-way
//!   append): building the VMA tree of a fork by in-order appends, appends off vs on, on this
//!   process's own `/proc/self/maps` layout and on the 135-entry shape of the kernel's
//!   `bench_forking` (lib/test_maple_tree.c). The tree has no switch for the three-way case
//!   alone, so "off" is wider than the patch (see the section's first lines).
//! - **"fork: use __mt_dup() to duplicate maple tree in dup_mmap()"**: the same two layouts,
//!   copied by appends vs by `__mt_dup` and an exact fit per entry.
//! - **"userfaultfd: early return in dup_userfaultfd()"**: fork+exit of that layout with and
//!   without the early return.
//! - **"fs/select.c: batch user writes in do_sys_poll"**: will-it-scale's poll2 and poll1 with
//!   one user-access window per descriptor vs per chunk (as posted) and one window (as merged).
//!
//! Every row is measured `--reps` times (before and after alternating, their order swapped each
//! repetition) and gets two verdicts, by the rules in [`RULES`]: the direction (is the effect
//! there in every repetition) and the magnitude (is the ratio's spread within [`TOL`] of the
//! patch's figure, larger or smaller). A row whose magnitude is not "within" points to a note
//! on the cause, printed once per cause.

// Off Linux the poll patch has no rows, so its helpers go unused there.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use maple_tree::{MapleTree, Value};

/// Widest line of the table output.
const WIDTH: usize = 100;

/// Magnitude tolerance: a row's spread is "within" the patch's figure when it reaches the figure
/// ±5% (for "no change": 0.95-1.05, which is also the direction's band).
const TOL: f64 = 0.05;

/// The verdict rules, printed above the table and by `--explain` (ASCII, under 100 columns).
const RULES: &str = "\
ratio = time before / time after (above 1: the patched code is faster), the median of the
  repetitions; min-max: the lowest and the highest of them.
direction: \"reproduced\" when every repetition shows the patch's effect (a speed-up: every
  ratio above 1.00; \"no change\": every ratio within 0.95-1.05), else \"not reproduced\".
magnitude: the min-max against the patch's figure: \"within\" when it reaches the figure +-5%,
  \"larger\" or \"smaller\" when it is wholly above or below that; \"no figure\" when the patch
  gave none. A letter after it points to the cause, printed once under the section.";

/// The four patches, in the order the output shows them.
const PATCHES: [Patch; 4] = [
    Patch {
        short: "mas_wr_append",
        title: "maple_tree: optimize mas_wr_append(), also improve duplicating VMAs",
        changed: "The patch added the three-way append: a new range that falls strictly inside \
                  the tree's last range is written in place, as two new slots, instead of \
                  rebuilding the node. Fork copied the VMA tree by in-order appends, which \
                  take this path wherever a VMA does not touch the one before it. The first row \
                  of each layout times that copy with the three-way append off (before: the \
                  node store, as before the patch) and on (after).",
        switch: "The rows marked \"(wider)\" use a wider switch: \"off\" also turns off \
                 the end and start appends the kernel already had and the append split (this \
                 crate's own); the counts show which ran.",
        reported: "bench_forking 17,874.83 -> 15,738.38 ms (1.14x)",
        unit: "ns per fork",
    },
    Patch {
        short: "__mt_dup",
        title: "fork: use __mt_dup() to duplicate maple tree in dup_mmap()",
        changed: "The patch made fork copy the parent's VMA tree node by node (__mt_dup) and then \
                  replace each entry in place (an exact fit), instead of re-inserting every range \
                  by appends. Each row times the two ways of building the child's tree: appends \
                  (before) and __mt_dup (after).",
        switch: "",
        reported: "fork() +2.19% (21 VMAs), +8.92% (121), +44.64% (1,621), +53.74% (25,621); \
                   each row is held to the figure at the nearest VMA count",
        unit: "ns per fork",
    },
    Patch {
        short: "dup_userfaultfd",
        title: "userfaultfd: early return in dup_userfaultfd()",
        changed: "The patch made fork skip, for a VMA without a userfaultfd context, the VMA \
                  write lock (vma_start_write) and the flag write that dup_userfaultfd() did for \
                  every VMA. Each row times fork+exit of this layout without (before) and with \
                  (after) the early return.",
        switch: "",
        reported: "no figure (a speed-up, no number given)",
        unit: "ns per fork",
    },
    Patch {
        short: "do_sys_poll",
        title: "fs/select.c: batch user writes in do_sys_poll",
        changed: "The patch made poll() write its results back to user memory in one \
                  user-access window per batch instead of one per descriptor. Each row times \
                  one poll() call with a window per descriptor (before) and batched (after): one \
                  window per chunk of descriptors as the patch was posted, or one for the whole \
                  array as Linux merged it.",
        switch: "",
        reported: "will-it-scale poll2 (128 descriptors) +25% on x86 with SMAP, +49% on Power9 \
                   with KUAP; poll1 (1 descriptor) unchanged",
        unit: "ns per call",
    },
];

/// Index of each patch in [`PATCHES`].
const P_APPEND: usize = 0;
const P_DUP: usize = 1;
const P_UFFD: usize = 2;
const P_POLL: usize = 3;

struct Patch {
    /// A short name for the JSON/CSV rows and the summary.
    short: &'static str,
    title: &'static str,
    /// One plain paragraph: what the patch changed and what each row measures.
    changed: &'static str,
    /// Where this demo's switch differs from the patch's before/after (empty: it does not).
    switch: &'static str,
    reported: &'static str,
    unit: &'static str,
}

/// What the patch says its effect is.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    /// A speed-up, with the patch's figure as a ratio when it gives one.
    Faster(Option<f64>),
    /// No change.
    NoChange,
}

/// The magnitude verdict: the ratio's spread against the patch's figure.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Magnitude {
    Within,
    Larger,
    Smaller,
    NoFigure,
}

impl Magnitude {
    fn word(self) -> &'static str {
        match self {
            Magnitude::Within => "within",
            Magnitude::Larger => "larger",
            Magnitude::Smaller => "smaller",
            Magnitude::NoFigure => "no figure",
        }
    }
}

/// Why a row's magnitude is not the patch's: shared by every row with the same `id`, printed
/// once.
#[derive(Clone, Debug)]
struct Cause {
    id: &'static str,
    text: String,
}

/// One row of the result table.
struct Row {
    /// Index into [`PATCHES`].
    patch: usize,
    workload: String,
    expect: Expect,
    /// Median over the repetitions, ns.
    before: f64,
    /// Median over the repetitions, ns.
    after: f64,
    /// before ÷ after of each repetition.
    ratios: Vec<f64>,
    counters: String,
    /// Why the ratio is not the patch's figure (shown when the magnitude is not "within").
    cause: Option<Cause>,
}

impl Row {
    fn new(patch: usize, workload: String, expect: Expect) -> Row {
        Row {
            patch,
            workload,
            expect,
            before: 0.0,
            after: 0.0,
            ratios: Vec::new(),
            counters: String::new(),
            cause: None,
        }
    }

    /// Records the repetitions' before/after times (ns).
    fn measured(mut self, reps: &[(f64, f64)]) -> Row {
        self.before = median(reps.iter().map(|r| r.0).collect());
        self.after = median(reps.iter().map(|r| r.1).collect());
        self.ratios = reps.iter().map(|&(b, a)| b / a).collect();
        self
    }

    /// The improvement as the patches state it: before ÷ after of the times (above 1: faster).
    fn ratio(&self) -> f64 {
        median(self.ratios.clone())
    }

    fn min(&self) -> f64 {
        self.ratios.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn max(&self) -> f64 {
        self.ratios
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// The direction verdict: the effect is there in every repetition.
    fn reproduced(&self) -> bool {
        match self.expect {
            Expect::Faster(_) => self.min() > 1.0,
            Expect::NoChange => self.min() >= 1.0 - TOL && self.max() <= 1.0 + TOL,
        }
    }

    fn direction(&self) -> &'static str {
        if self.reproduced() {
            "reproduced"
        } else {
            "not reproduced"
        }
    }

    /// The patch's figure as a ratio, if it has one.
    fn figure(&self) -> Option<f64> {
        match self.expect {
            Expect::Faster(f) => f,
            Expect::NoChange => Some(1.0),
        }
    }

    /// The magnitude verdict, at the precision printed (two decimals), so that "1.19-1.20"
    /// reaches a band that starts at 1.197.
    fn magnitude(&self) -> Magnitude {
        let Some(f) = self.figure() else {
            return Magnitude::NoFigure;
        };
        let r2 = |x: f64| (x * 100.0).round();
        if r2(self.min()) > r2(f * (1.0 + TOL)) {
            Magnitude::Larger
        } else if r2(self.max()) < r2(f * (1.0 - TOL)) {
            Magnitude::Smaller
        } else {
            Magnitude::Within
        }
    }

    /// The cause shown for this row: only when the magnitude is larger or smaller.
    fn shown_cause(&self) -> Option<&Cause> {
        match self.magnitude() {
            Magnitude::Larger | Magnitude::Smaller => self.cause.as_ref(),
            _ => None,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Plain-words meanings of the terms the output uses (term, meaning); the footer shows those
/// that appear above it, `--explain` all of them. Each fits one line of 100 columns.
const GLOSSARY: [(&str, &str); 36] = [
    (
        "VMA",
        "one mapped range of a process's memory (a line of /proc/PID/maps)",
    ),
    (
        "fork",
        "creating a child process; the kernel copies the parent's VMAs and VMA tree",
    ),
    (
        "maple tree",
        "the kernel's tree of ranges; each process keeps its VMAs in one",
    ),
    (
        "node",
        "one block of the tree, holding up to 16 ranges in its slots",
    ),
    ("slot", "one place in a node: a range's entry (here, a VMA)"),
    ("entry", "the value stored for a range"),
    (
        "in-place append",
        "a write into the tree's last range that only adds slots after it",
    ),
    (
        "three-way append",
        "the new range falls strictly inside the last range: two slots added",
    ),
    (
        "end and start appends",
        "the new range shares the last range's end or start: one slot",
    ),
    (
        "append split",
        "this crate's own quick split of a full last node during in-order appends",
    ),
    (
        "node store",
        "a write that rebuilds the whole node as a new copy: the slow path",
    ),
    ("split", "a full node divided in two (the generic way)"),
    (
        "exact fit",
        "a write over exactly one existing range: only that slot changes",
    ),
    (
        "__mt_dup",
        "the kernel's copy of a whole maple tree, node by node",
    ),
    (
        "bench_forking",
        "the kernel's test that builds a 135-VMA tree the way fork did",
    ),
    (
        "unixbench spawn",
        "a benchmark that forks and reaps children in a loop",
    ),
    (
        "userfaultfd",
        "a file through which a program handles its own page faults",
    ),
    (
        "userfaultfd context",
        "the link from a VMA to the userfaultfd that watches it",
    ),
    (
        "vma_start_write",
        "taking one VMA's write lock before changing it",
    ),
    (
        "faithful cost",
        "fork as the kernel does it: the child's VMA lock is taken later anyway",
    ),
    (
        "amplified cost",
        "an experiment: the later lock is skipped, so the early return saves it",
    ),
    (
        "will-it-scale",
        "a suite of small system-call loops used to time kernel changes",
    ),
    (
        "poll2",
        "will-it-scale's test: poll() on 128 descriptors, none waiting, in a loop",
    ),
    ("poll1", "the same on 1 descriptor"),
    ("descriptor", "a number a process uses to name an open file"),
    (
        "user-access window",
        "a span in which kernel code may touch user memory; costs time",
    ),
    (
        "SMAP",
        "an x86 guard: the kernel touches user memory only inside a window",
    ),
    ("KUAP", "the same guard on IBM Power9 processors"),
    (
        "SMAP model",
        "each window costs a fixed 3.4 ns, set so that the patch's poll2 is 1.25x",
    ),
    (
        "real pkeys",
        "windows opened and closed with the CPU's protection keys, at real cost",
    ),
    (
        "protection keys",
        "an x86 feature that lets a program switch its memory access on and off",
    ),
    (
        "CPUID.7.0:ECX.PKU",
        "the CPU's flag saying whether it has protection keys",
    ),
    (
        "posted",
        "the patch as first sent to the mailing list: one window per chunk of 510",
    ),
    (
        "merged",
        "what Linux took in the end (v5.11): one window for the whole array",
    ),
    (
        "put_user",
        "a kernel write of one value to user memory, in its own window",
    ),
    ("ns, us, ms", "nanoseconds, microseconds, milliseconds"),
];

struct Opts {
    maps: Option<String>,
    reps: usize,
    quick: bool,
    format: String,
}

const USAGE: &str = "\
usage: seeds [--quick] [--reps N] [--maps FILE] [--format table|json|csv] [--explain]
Reproduces four kernel patches, one section each, and prints per row the times before and
after, their ratio (median of N repetitions, default 3) with its min-max, the patch's own
figure, and two verdicts: direction and magnitude (--explain: the rules and a glossary).
  --quick     short timings (a smoke run of about a second)
  --maps F    the VMA layout from a /proc/PID/maps file (default: this process's own)
  --format    table (default), json ({\"summary\", \"settings\", \"rows\"}) or csv (one line
              per row, the settings in every line)";

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
            "--explain" => {
                print!("{}", explain());
                std::process::exit(0);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                for p in &PATCHES {
                    println!("  {}", p.title);
                }
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other} (try --help)")),
        }
    }
    Ok(o)
}

/// `--explain`: the rules, what each patch changed and the whole glossary.
fn explain() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "How to read the seeds demo\n\n{RULES}\n");
    for p in &PATCHES {
        let _ = writeln!(out, "== {} ==", p.title);
        wrap(&mut out, "", "", p.changed, WIDTH);
        if !p.switch.is_empty() {
            wrap(&mut out, "", "", p.switch, WIDTH);
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "Terms");
    glossary(&mut out, |_| true);
    out
}

/// The glossary lines for the terms `keep` selects, aligned.
fn glossary(out: &mut String, keep: impl Fn(&str) -> bool) {
    for (term, meaning) in GLOSSARY.iter().filter(|(t, _)| keep(t)) {
        let _ = writeln!(out, "  {term:<21} {meaning}");
    }
}

/// A progress line on stderr, rewritten in place; only when stderr is a terminal (no escape
/// codes in logs or pipes).
fn progress(msg: &str) {
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r\x1b[2K{msg}");
        let _ = err.flush();
    }
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

/// Runs `f` in batches for about `budget` and returns the best batch's mean, in ns per call
/// (other load on the machine only ever makes a batch slower).
fn best_ns_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    // Calibrate the batch size to about half a millisecond (at most a twentieth of the budget):
    // short enough that many batches run without being preempted on a shared machine.
    let target = (budget / 20).min(Duration::from_micros(500));
    let mut batch = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        if t.elapsed() >= target || batch >= 1 << 24 {
            break;
        }
        batch *= 2;
    }
    let mut best = f64::MAX;
    let t = Instant::now();
    while t.elapsed() < budget {
        let b = Instant::now();
        for _ in 0..batch {
            f();
        }
        best = best.min(b.elapsed().as_nanos() as f64 / batch as f64);
    }
    best
}

/// `reps` repetitions of (before, after), the two alternating and their order swapped on every
/// other repetition so that neither always runs first.
fn repeat(
    reps: usize,
    mut before: impl FnMut() -> f64,
    mut after: impl FnMut() -> f64,
) -> Vec<(f64, f64)> {
    (0..reps)
        .map(|i| {
            if i % 2 == 0 {
                let b = before();
                (b, after())
            } else {
                let a = after();
                (before(), a)
            }
        })
        .collect()
}

/// Which in-place appends a fork by appends may take.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Appends {
    /// None (the wider "before").
    Off,
    /// All but the three-way append (the patch's own "before").
    NoThreeWay,
    /// All (the patch's "after").
    On,
}

/// The old `dup_mmap`: a fresh allocation tree filled by in-order appends (the kernel's old
/// `bench_forking`: 135 stores, validate, destroy).
fn fork_by_appends(ranges: &[(u64, u64)], appends: Appends, validate: bool) -> maple_tree::Stats {
    let mut t = MapleTree::<Value>::new_alloc();
    t.set_append(appends != Appends::Off);
    t.set_three_way_append(appends == Appends::On);
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

/// The kernel's fork() gain from "fork: use __mt_dup() to duplicate maple tree in dup_mmap()"
/// (forks per second, unixbench spawn) at the VMA count nearest `n`, as a ratio.
fn mt_dup_figure(n: usize) -> (f64, usize) {
    const GAIN: [(usize, f64); 4] = [(21, 2.19), (121, 8.92), (1621, 44.64), (25621, 53.74)];
    let &(at, pct) = GAIN
        .iter()
        .min_by_key(|(c, _)| c.abs_diff(n))
        .expect("non-empty");
    (1.0 + pct / 100.0, at)
}

const WHY_APPEND: &str = "the patch's 1.14x is the kernel's whole bench_forking loop, where the \
source walk, the node preallocation, a validate and the destroy surround the stores; this loop has only \
the stores, a validate and the drop, so the stores the patch speeds up are a larger share of the \
time (and the \"(wider)\" rows switch off more than the patch did)";
const WHY_DUP: &str = "the patch timed a whole fork() (unixbench spawn: page tables, VMA copies, the exit), \
of which the VMA tree is a small part; here only the tree's copy (with a validate and the drop) is timed";
const WHY_POLL1: &str =
    "poll1 opens one window either way, so its ratio should be 1.00; another one is \
noise on the shared machine";
const WHY_PKEYS: &str =
    "real protection-key windows cost what this CPU makes them cost, not the 3.4 ns \
of the SMAP model";

/// Two sections' rows on one layout: appends off vs on ("maple_tree: optimize mas_wr_append()")
/// and appends vs `__mt_dup` ("fork: use __mt_dup()").
fn patch_append(opts: &Opts, rows: &mut Vec<Row>, name: &str, ranges: &[(u64, u64)]) {
    let budget = Duration::from_millis(if opts.quick { 20 } else { 500 });
    let n = ranges.len();
    let s_on = fork_by_appends(ranges, Appends::On, false);
    for (before, wider) in [(Appends::NoThreeWay, false), (Appends::Off, true)] {
        progress(&format!("mas_wr_append: {name}: {before:?} vs on"));
        let reps = repeat(
            opts.reps,
            || {
                best_ns_per_call(budget, || {
                    fork_by_appends(ranges, before, true);
                })
            },
            || {
                best_ns_per_call(budget, || {
                    fork_by_appends(ranges, Appends::On, true);
                })
            },
        );
        let s_off = fork_by_appends(ranges, before, false);
        let mut row = Row::new(
            P_APPEND,
            if wider {
                format!("{name} (wider)")
            } else {
                format!("{name}, {n} VMAs")
            },
            Expect::Faster(Some(17_874.83 / 15_738.38)),
        )
        .measured(&reps);
        row.counters = format!(
            "on: {} three-way, {} end, {} start appends, {} append splits, {} node stores; \
             off: {} three-way, {} end appends, {} node stores, {} splits",
            s_on.append_three_way,
            s_on.append_end,
            s_on.append_start,
            s_on.append_split,
            s_on.node_store,
            s_off.append_three_way,
            s_off.append_end,
            s_off.node_store,
            s_off.split
        );
        row.cause = Some(Cause {
            id: "append",
            text: WHY_APPEND.into(),
        });
        rows.push(row);
    }

    // The dup way, against the appends way with appends on.
    let src = MapleTree::<Value>::new_alloc();
    for (i, &(a, b)) in ranges.iter().enumerate() {
        src.store_range(a..=b, Value::new(i as u64))
            .expect("valid range");
    }
    progress(&format!("__mt_dup: {name}: appends vs __mt_dup"));
    let reps = repeat(
        opts.reps,
        || {
            best_ns_per_call(budget, || {
                fork_by_appends(ranges, Appends::On, true);
            })
        },
        || {
            best_ns_per_call(budget, || {
                fork_by_dup(&src, true);
            })
        },
    );
    let s_dup = fork_by_dup(&src, false);
    let (fig, at) = mt_dup_figure(n);
    let mut row = Row::new(
        P_DUP,
        format!("{name}, {n} VMAs"),
        Expect::Faster(Some(fig)),
    )
    .measured(&reps);
    row.counters = format!(
        "dup: {} nodes copied, {} exact fits, {} splits; held to +{:.2}% (at {at} VMAs)",
        s_dup.nodes_allocated,
        s_dup.exact_fit,
        s_dup.split,
        (fig - 1.0) * 100.0
    );
    row.cause = Some(Cause {
        id: "dup",
        text: WHY_DUP.into(),
    });
    rows.push(row);
}

/// fork+exit of the layout with and without `dup_userfaultfd`'s early return, in both cost
/// settings (the faithful one, where the VMA lock only moves, and the amplified one).
fn patch_uffd(opts: &Opts, rows: &mut Vec<Row>, maps_text: &str) {
    use maple_mm::uffd::{fork_exit_run, CostSetting};
    use maple_mm::{Mm, MmConfig};
    let mm = match Mm::from_maps(maps_text, MmConfig::default()) {
        Ok(mm) => mm,
        Err(e) => {
            eprintln!("seeds: dup_userfaultfd: cannot replay the maps: {e:?}");
            return;
        }
    };
    let vmas = mm.read().vmas().count();
    let forks: u32 = if opts.quick { 40 } else { 400 };
    for (label, cost) in [
        ("faithful", CostSetting::Faithful),
        ("amplified", CostSetting::Amplified),
    ] {
        progress(&format!("dup_userfaultfd: fork+exit, {label} cost"));
        // Per repetition, the best of four alternating rounds of each (other load only ever
        // makes a round slower).
        let mut failed = false;
        let mut run = |on: bool| match fork_exit_run(&mm, on, cost, forks / 4) {
            Ok(r) => r.mean.as_nanos() as f64,
            Err(_) => {
                failed = true;
                f64::NAN
            }
        };
        let mut reps = Vec::new();
        for i in 0..opts.reps {
            let (mut off, mut on) = (f64::INFINITY, f64::INFINITY);
            for j in 0..4 {
                if (i + j) % 2 == 0 {
                    off = off.min(run(false));
                    on = on.min(run(true));
                } else {
                    on = on.min(run(true));
                    off = off.min(run(false));
                }
            }
            reps.push((off, on));
        }
        let (Ok(off), Ok(on), false) = (
            fork_exit_run(&mm, false, cost, 1),
            fork_exit_run(&mm, true, cost, 1),
            failed,
        ) else {
            eprintln!("seeds: dup_userfaultfd: fork failed");
            return;
        };
        let mut row = Row::new(
            P_UFFD,
            format!("{vmas} VMAs, {label} cost"),
            Expect::Faster(None),
        )
        .measured(&reps);
        row.counters = format!(
            "vma_start_write in dup_userfaultfd {} -> {}, flag writes {} -> {}, \
             child VMA locks taken {} -> {}{}",
            off.counters.dup_uffd_start_write_calls,
            on.counters.dup_uffd_start_write_calls,
            off.counters.uffd_flag_writes,
            on.counters.uffd_flag_writes,
            off.child_lock_acquisitions,
            on.child_lock_acquisitions,
            if cost == CostSetting::Faithful {
                " (only moved, as in the kernel)"
            } else {
                " (saved: the later flag clear takes none)"
            }
        );
        rows.push(row);
    }
}

/// will-it-scale's poll2 (128 descriptors, POLLOUT, timeout 0) and poll1: per-descriptor vs
/// per-chunk vs one window, with the SMAP-calibrated window cost; with real protection keys
/// where available. Linux only, as the poll model is.
#[cfg(target_os = "linux")]
fn patch_poll(opts: &Opts, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    use maple_poll::will_it_scale::{per_call_costs, CallCost, Testcase};
    use maple_poll::{pkeys_available, CopyOut, WindowCost, WindowMode};
    let budget = Duration::from_millis(if opts.quick { 50 } else { 700 });
    let mut modes = vec![("SMAP model", WindowMode::Model(WindowCost::SMAP))];
    match pkeys_available() {
        Ok(_) => modes.push(("real pkeys", WindowMode::Pkey)),
        Err(why) => notes.push(format!(
            "protection keys unavailable ({why}): poll rows use the SMAP model only"
        )),
    }
    let pair_ns = WindowCost::SMAP.open_ns + WindowCost::SMAP.close_ns;
    for (label, mode) in modes {
        for tc in [Testcase::Poll2, Testcase::Poll1] {
            progress(&format!("do_sys_poll: {tc:?}, {label}"));
            let mut runs: Vec<Vec<CallCost>> = Vec::new();
            for _ in 0..opts.reps {
                match per_call_costs(tc, mode, budget) {
                    Ok(c) => runs.push(c),
                    Err(e) => {
                        eprintln!("seeds: do_sys_poll: {tc:?} with {label} failed: {e:?}");
                        break;
                    }
                }
            }
            if runs.len() < opts.reps {
                continue;
            }
            let get = |run: &[CallCost], s: CopyOut| {
                run.iter().find(|c| c.copy_out == s).map(|c| c.ns_per_call)
            };
            for (name, strategy) in [
                ("posted", CopyOut::PerChunkUnsafe),
                ("merged", CopyOut::SingleWindowUnsafe),
            ] {
                let reps: Option<Vec<(f64, f64)>> = runs
                    .iter()
                    .map(|run| Some((get(run, CopyOut::PerFdPutUser)?, get(run, strategy)?)))
                    .collect();
                let Some(reps) = reps else { continue };
                let last = &runs[runs.len() - 1];
                let (Some(b), Some(a)) = (
                    last.iter().find(|c| c.copy_out == CopyOut::PerFdPutUser),
                    last.iter().find(|c| c.copy_out == strategy),
                ) else {
                    continue;
                };
                let (tc_name, expect) = match tc {
                    Testcase::Poll2 => ("poll2", Expect::Faster(Some(1.25))),
                    _ => ("poll1", Expect::NoChange),
                };
                let mut row =
                    Row::new(P_POLL, format!("{tc_name} {name}, {label}"), expect).measured(&reps);
                row.counters = format!(
                    "windows per call {:.0} -> {:.0}, bytes written {:.0} -> {:.0}",
                    b.write_windows_per_call,
                    a.write_windows_per_call,
                    b.bytes_out_per_call,
                    a.bytes_out_per_call
                );
                row.cause = Some(match tc {
                    Testcase::Poll2 if label == "SMAP model" => {
                        // The window cost was calibrated so that 128 -> 1 windows is 1.25x on the
                        // kernel's poll2 call of about 1.74 µs; on the model's call, faster or
                        // slower, the same saving is a different share: predict it.
                        let saved = (b.write_windows_per_call - a.write_windows_per_call) * pair_ns;
                        let predicted = (row.after + saved) / row.after;
                        let (speed, share) = if row.after < 1740.0 {
                            ("faster (it has no system-call entry or exit)", "larger")
                        } else {
                            ("slower (a loaded machine)", "smaller")
                        };
                        Cause {
                            id: "poll2-smap",
                            text: format!(
                                "the SMAP model's window cost is set to give the patch's 1.25x on a \
                                 kernel poll2 call of ~1.74 us; the model's call is {speed}: {}, \
                                 so the same ~{saved:.0} ns saved is a {share} share: \
                                 {predicted:.2}x predicted",
                                with_unit(row.after)
                            ),
                        }
                    }
                    Testcase::Poll2 => Cause {
                        id: "poll2-pkeys",
                        text: WHY_PKEYS.into(),
                    },
                    _ => Cause {
                        id: "poll1",
                        text: WHY_POLL1.into(),
                    },
                });
                rows.push(row);
            }
        }
    }
}

/// `"…"` with JSON's escapes.
fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A CSV field, quoted, with inner quotes doubled.
fn csv_str(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Greedy word wrap of `text` to `width` columns, every line starting with `indent`, the first
/// with `first` instead.
fn wrap(out: &mut String, first: &str, indent: &str, text: &str, width: usize) {
    let mut line = String::from(first);
    let mut fresh = true;
    for w in text.split_whitespace() {
        if !fresh && line.chars().count() + 1 + w.chars().count() > width {
            let _ = writeln!(out, "{line}");
            line = String::from(indent);
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(w);
        fresh = false;
    }
    let _ = writeln!(out, "{line}");
}

/// `12,345 ns`: nanoseconds below 100,000, then microseconds, then milliseconds (at most 9
/// columns up to 99,999 ms).
fn with_unit(ns: f64) -> String {
    let (v, unit) = if ns < 1e5 {
        (ns, "ns")
    } else if ns < 1e8 {
        (ns / 1e3, "us")
    } else {
        (ns / 1e6, "ms")
    };
    let digits = (v.round() as u64).to_string();
    let mut s = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            s.push(',');
        }
        s.push(c);
    }
    format!("{s} {unit}")
}

/// The run's settings, printed above the table and carried by JSON and CSV.
struct Settings {
    reps: usize,
    quick: bool,
    /// Where the VMA layout came from.
    maps: String,
    /// VMAs in that layout.
    vmas: usize,
    /// `git rev-parse --short HEAD` of the checkout (or `SEEDS_COMMIT`), if known.
    commit: Option<String>,
}

/// The commit: `SEEDS_COMMIT` if set, else `git rev-parse --short HEAD` in this crate's source
/// directory (none when git or the checkout is not there).
fn commit() -> Option<String> {
    if let Ok(c) = std::env::var("SEEDS_COMMIT") {
        return Some(c).filter(|c| !c.is_empty());
    }
    let out = std::process::Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "rev-parse",
            "--short",
            "HEAD",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let c = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !c.is_empty()).then_some(c)
}

/// Counts over the rows: (rows, direction reproduced, magnitude within / larger / smaller / no
/// figure).
fn tally<'a>(rows: impl Iterator<Item = &'a Row>) -> (usize, usize, [usize; 4]) {
    let (mut n, mut ok, mut m) = (0, 0, [0; 4]);
    for r in rows {
        n += 1;
        ok += usize::from(r.reproduced());
        m[r.magnitude() as usize] += 1;
    }
    (n, ok, m)
}

fn summary_line(rows: &[Row]) -> String {
    let (n, ok, m) = tally(rows.iter());
    format!(
        "summary: {n} rows; direction reproduced in {ok} of {n}; magnitude within {}, larger {}, \
         smaller {}, no figure {}",
        m[0], m[1], m[2], m[3]
    )
}

/// One table row's cells, two spaces apart (one when the line would pass [`WIDTH`]).
fn table_line(cells: [&str; 8]) -> String {
    let [w, b, a, r, mm, p, d, m] = cells;
    let line = format!("  {w:<24} {b:>9} {a:>9}  {r:>5}  {mm:>9}  {p:>5}  {d:<14}  {m}");
    if line.trim_end().chars().count() <= WIDTH {
        return line.trim_end().to_string();
    }
    format!("  {w} {b} {a} {r} {mm} {p} {d} {m}")
        .trim_end()
        .to_string()
}

/// The output in `format`; `color` puts the verdicts in green or red (only for a terminal).
fn render(format: &str, rows: &[Row], set: &Settings, notes: &[String], color: bool) -> String {
    let mut out = String::new();
    let commit = set.commit.as_deref().unwrap_or("");
    match format {
        "json" => {
            let (n, ok, m) = tally(rows.iter());
            let _ = writeln!(out, "{{");
            let _ = writeln!(
                out,
                "  \"summary\": {{\"rows\": {n}, \"direction_reproduced\": {ok}, \"magnitude\": \
                 {{\"within\": {}, \"larger\": {}, \"smaller\": {}, \"no_figure\": {}}}, \
                 \"tolerance\": {TOL}, \"patches\": [",
                m[0], m[1], m[2], m[3]
            );
            for (i, p) in PATCHES.iter().enumerate() {
                let (pn, pok, pm) = tally(rows.iter().filter(|r| r.patch == i));
                let _ = writeln!(
                    out,
                    "    {{\"patch\": {}, \"short\": {}, \"rows\": {pn}, \"direction_reproduced\": \
                     {pok}, \"magnitude_within\": {}}}{}",
                    json_str(p.title),
                    json_str(p.short),
                    pm[0],
                    if i + 1 < PATCHES.len() { "," } else { "" }
                );
            }
            let _ = writeln!(out, "  ]}},");
            let _ = writeln!(
                out,
                "  \"settings\": {{\"repetitions\": {}, \"quick\": {}, \"maps\": {}, \"vmas\": {}, \
                 \"commit\": {}, \"os\": {}}},",
                set.reps,
                set.quick,
                json_str(&set.maps),
                set.vmas,
                set.commit.as_deref().map_or("null".to_string(), json_str),
                json_str(std::env::consts::OS)
            );
            let notes: Vec<String> = notes.iter().map(|n| json_str(n)).collect();
            let _ = writeln!(out, "  \"notes\": [{}],", notes.join(", "));
            let _ = writeln!(out, "  \"rows\": [");
            for (i, r) in rows.iter().enumerate() {
                let p = &PATCHES[r.patch];
                let ratios: Vec<String> = r.ratios.iter().map(|x| format!("{x:.3}")).collect();
                let _ = writeln!(
                    out,
                    "    {{\"patch\": {}, \"short\": {}, \"workload\": {}, \"reported\": {}, \
                     \"patch_ratio\": {}, \"before_ns\": {:.1}, \"after_ns\": {:.1}, \"unit\": {}, \
                     \"ratio\": {:.3}, \"ratio_min\": {:.3}, \"ratio_max\": {:.3}, \"ratios\": [{}], \
                     \"direction\": {}, \"magnitude\": {}, \"verdict\": {}, \"cause\": {}, \
                     \"counters\": {}}}{}",
                    json_str(p.title),
                    json_str(p.short),
                    json_str(&r.workload),
                    json_str(p.reported),
                    r.figure().map_or("null".to_string(), |f| format!("{f:.3}")),
                    r.before,
                    r.after,
                    json_str(p.unit),
                    r.ratio(),
                    r.min(),
                    r.max(),
                    ratios.join(", "),
                    json_str(r.direction()),
                    json_str(r.magnitude().word()),
                    json_str(r.direction()),
                    json_str(r.shown_cause().map_or("", |c| &c.text)),
                    json_str(&r.counters),
                    if i + 1 < rows.len() { "," } else { "" }
                );
            }
            let _ = writeln!(out, "  ]\n}}");
        }
        "csv" => {
            out.push_str(
                "patch,workload,patch_ratio,before_ns,after_ns,unit,ratio,ratio_min,ratio_max,\
                 direction,magnitude,cause,counters,repetitions,quick,maps,commit\n",
            );
            for r in rows {
                let p = &PATCHES[r.patch];
                let _ = writeln!(
                    out,
                    "{},{},{},{:.1},{:.1},{},{:.3},{:.3},{:.3},{},{},{},{},{},{},{},{}",
                    csv_str(p.title),
                    csv_str(&r.workload),
                    r.figure().map_or(String::new(), |f| format!("{f:.3}")),
                    r.before,
                    r.after,
                    csv_str(p.unit),
                    r.ratio(),
                    r.min(),
                    r.max(),
                    r.direction(),
                    r.magnitude().word(),
                    csv_str(r.shown_cause().map_or("", |c| &c.text)),
                    csv_str(&r.counters),
                    set.reps,
                    set.quick,
                    csv_str(&set.maps),
                    commit
                );
            }
        }
        _ => render_table(&mut out, rows, set, notes, color),
    }
    out
}

/// The letter of the `i`th cause: a, b, ...
fn letter(i: usize) -> char {
    (b'a' + (i % 26) as u8) as char
}

fn render_table(out: &mut String, rows: &[Row], set: &Settings, notes: &[String], color: bool) {
    let _ = writeln!(
        out,
        "Four kernel patches reproduced on maple-tree, maple-mm and maple-poll"
    );
    let commit = set
        .commit
        .as_deref()
        .map_or(String::new(), |c| format!(", commit {c}"));
    wrap(
        out,
        "run: ",
        "  ",
        &format!(
            "{} repetition{} per row{}, VMA layout from {} ({} VMAs){commit}",
            set.reps,
            if set.reps == 1 { "" } else { "s" },
            if set.quick {
                " (--quick: short timings)"
            } else {
                ""
            },
            set.maps,
            set.vmas
        ),
        WIDTH,
    );
    let _ = writeln!(out, "{RULES}");
    for n in notes {
        wrap(out, "note: ", "  ", n, WIDTH);
    }
    // Causes get letters in the order they first show, and their text once.
    let mut letters: Vec<&'static str> = Vec::new();
    for (p, patch) in PATCHES.iter().enumerate() {
        let _ = writeln!(out);
        let _ = writeln!(out, "== {} ==", patch.title);
        wrap(out, "", "", patch.changed, WIDTH);
        if !patch.switch.is_empty() {
            wrap(out, "", "", patch.switch, WIDTH);
        }
        wrap(out, "kernel: ", "  ", patch.reported, WIDTH);
        let head = format!("workload, time {}", patch.unit.replace("ns ", ""));
        let _ = writeln!(
            out,
            "{}",
            table_line([
                &head,
                "before",
                "after",
                "ratio",
                "min-max",
                "patch",
                "direction",
                "magnitude"
            ])
        );
        let mut new_causes: Vec<(char, &Cause)> = Vec::new();
        let section: Vec<&Row> = rows.iter().filter(|r| r.patch == p).collect();
        if section.is_empty() {
            let _ = writeln!(out, "  (no rows on this system)");
        }
        for r in section {
            let mut magnitude = r.magnitude().word().to_string();
            if let Some(c) = r.shown_cause() {
                let i = match letters.iter().position(|&id| id == c.id) {
                    Some(i) => i,
                    None => {
                        letters.push(c.id);
                        new_causes.push((letter(letters.len() - 1), c));
                        letters.len() - 1
                    }
                };
                let letter = letter(i);
                magnitude = format!("{magnitude} ({letter})");
            }
            let patch_fig = match r.expect {
                Expect::Faster(Some(f)) => format!("{f:.2}x"),
                Expect::Faster(None) => "> 1".into(),
                Expect::NoChange => "1.00x".into(),
            };
            let line = table_line([
                &r.workload,
                &with_unit(r.before),
                &with_unit(r.after),
                &format!("{:.2}x", r.ratio()),
                &format!("{:.2}-{:.2}", r.min(), r.max()),
                &patch_fig,
                r.direction(),
                &magnitude,
            ]);
            if color {
                let c = if r.reproduced() { "32" } else { "31" };
                let d = r.direction();
                let _ = writeln!(
                    out,
                    "{}",
                    line.replacen(d, &format!("\x1b[{c}m{d}\x1b[0m"), 1)
                );
            } else {
                let _ = writeln!(out, "{line}");
            }
            if !r.counters.is_empty() {
                wrap(out, "      counts: ", "        ", &r.counters, WIDTH);
            }
        }
        for (letter, c) in new_causes {
            wrap(out, &format!("  ({letter}) "), "      ", &c.text, WIDTH);
        }
    }
    let _ = writeln!(out);
    let summary = summary_line(rows);
    wrap(out, "", "  ", &summary, WIDTH);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Terms used above (seeds --explain: the rules and every term):"
    );
    let above = out.clone();
    glossary(out, |t| match t {
        "ns, us, ms" => above.contains(" ns"),
        t => above.contains(t),
    });
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
    let mut notes = Vec::new();
    patch_append(&opts, &mut rows, "this layout", &ranges);
    let bench_forking: Vec<(u64, u64)> = (0..=134u64).map(|i| (i * 10, i * 10 + 5)).collect();
    patch_append(&opts, &mut rows, "bench_forking", &bench_forking);
    patch_uffd(&opts, &mut rows, &maps_text);
    #[cfg(target_os = "linux")]
    patch_poll(&opts, &mut rows, &mut notes);
    #[cfg(not(target_os = "linux"))]
    notes.push("the poll model is Linux-only: no rows for do_sys_poll on this system".to_string());
    // Section order: the two layouts' rows of each patch together.
    rows.sort_by_key(|r| r.patch);
    progress("");
    let color = opts.format == "table"
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let set = Settings {
        reps: opts.reps,
        quick: opts.quick,
        maps: source,
        vmas: ranges.len(),
        commit: commit(),
    };
    print!("{}", render(&opts.format, &rows, &set, &notes, color));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(patch: usize, expect: Expect, reps: &[(f64, f64)]) -> Row {
        let mut r = Row::new(patch, "x".repeat(24), expect).measured(reps);
        r.counters = "counter ".repeat(40);
        r.cause = Some(Cause {
            id: "append",
            text: WHY_APPEND.into(),
        });
        r
    }

    fn settings() -> Settings {
        Settings {
            reps: 3,
            quick: true,
            maps: "/proc/self/maps".into(),
            vmas: 30,
            commit: Some("0123abc".into()),
        }
    }

    #[test]
    fn direction_rule() {
        // A speed-up in every repetition: reproduced; one repetition at no change: not.
        assert!(row(0, Expect::Faster(Some(1.14)), &[(12.0, 10.0), (11.0, 10.0)]).reproduced());
        assert!(!row(0, Expect::Faster(Some(1.14)), &[(12.0, 10.0), (10.0, 10.0)]).reproduced());
        assert!(!row(0, Expect::Faster(None), &[(9.0, 10.0)]).reproduced());
        // No change expected: every ratio within 0.95-1.05.
        assert!(row(3, Expect::NoChange, &[(10.2, 10.0), (9.8, 10.0)]).reproduced());
        assert!(!row(3, Expect::NoChange, &[(10.2, 10.0), (12.0, 10.0)]).reproduced());
    }

    #[test]
    fn magnitude_rule() {
        let f = Expect::Faster(Some(1.14));
        // 1.14 +-5% is 1.083-1.197: a spread that reaches it is within.
        assert_eq!(row(0, f, &[(11.5, 10.0)]).magnitude(), Magnitude::Within);
        assert_eq!(
            row(0, f, &[(12.5, 10.0), (11.9, 10.0)]).magnitude(),
            Magnitude::Within
        );
        assert_eq!(
            row(0, f, &[(15.0, 10.0), (16.0, 10.0)]).magnitude(),
            Magnitude::Larger
        );
        assert_eq!(
            row(0, f, &[(10.5, 10.0), (10.7, 10.0)]).magnitude(),
            Magnitude::Smaller
        );
        assert_eq!(
            row(2, Expect::Faster(None), &[(20.0, 10.0)]).magnitude(),
            Magnitude::NoFigure
        );
        assert_eq!(
            row(3, Expect::NoChange, &[(10.2, 10.0)]).magnitude(),
            Magnitude::Within
        );
        assert_eq!(
            row(3, Expect::NoChange, &[(12.0, 10.0)]).magnitude(),
            Magnitude::Larger
        );
        // At the printed precision: 1.195-1.199 shows as 1.20, which reaches 1.197.
        assert_eq!(row(0, f, &[(11.96, 10.0)]).magnitude(), Magnitude::Within);
        // The cause shows only when the magnitude is larger or smaller.
        assert!(row(0, f, &[(11.5, 10.0)]).shown_cause().is_none());
        assert!(row(0, f, &[(20.0, 10.0)]).shown_cause().is_some());
    }

    /// Rows of every patch with the widest figures a row can have (99,999 ms, ratios up to
    /// 99.99), two sharing a cause.
    fn wide_rows() -> Vec<Row> {
        let mut rows = vec![
            row(
                P_APPEND,
                Expect::Faster(Some(1.14)),
                &[(9.0e10, 1.0e9), (9.99e10, 1.0e9)],
            ),
            row(P_APPEND, Expect::Faster(Some(1.14)), &[(3.0, 1.0)]),
            row(P_DUP, Expect::Faster(Some(1.09)), &[(1.09, 1.0)]),
            row(P_UFFD, Expect::Faster(None), &[(2.0, 1.0)]),
            row(P_POLL, Expect::NoChange, &[(1.2, 1.0)]),
        ];
        rows[2].cause = Some(Cause {
            id: "dup",
            text: WHY_DUP.into(),
        });
        rows[4].cause = Some(Cause {
            id: "poll1",
            text: WHY_POLL1.into(),
        });
        rows
    }

    #[test]
    fn table_fits_100_columns_one_section_per_patch() {
        let notes = vec!["a note ".repeat(30)];
        let out = render("table", &wide_rows(), &settings(), &notes, false);
        for line in out.lines() {
            assert!(
                line.chars().count() <= WIDTH,
                "{} columns: {line}",
                line.chars().count()
            );
            assert!(line.is_ascii(), "not ASCII: {line}");
        }
        for p in &PATCHES {
            assert_eq!(out.matches(&format!("\n== {} ==\n", p.title)).count(), 1);
        }
        assert!(!out.contains('\x1b'));
        // Both verdicts on every row; the shared cause's text once, its letter twice.
        // (the widest row drops to single spaces between its cells).
        let rows_with = |w: &str| {
            out.lines()
                .filter(|l| l.starts_with("  xxxx") && l.contains(w))
                .count()
        };
        assert_eq!(rows_with(" reproduced ") - rows_with(" not reproduced "), 4);
        assert_eq!(rows_with(" not reproduced "), 1);
        assert_eq!(out.matches("larger (a)\n").count(), 2);
        assert_eq!(out.matches("(a) the patch's 1.14x").count(), 1);
        assert_eq!(rows_with("  within"), 1);
        assert_eq!(rows_with("  no figure"), 1);
        assert!(out.contains("larger (b)\n"), "{out}");
        assert!(out.contains(
            "summary: 5 rows; direction reproduced in 4 of 5; magnitude within 1, larger 3,"
        ));
        // No paragraph twice.
        let mut paras: Vec<&str> = out.split("\n\n").collect();
        let n = paras.len();
        paras.sort_unstable();
        paras.dedup();
        assert_eq!(paras.len(), n);
        // The glossary footer names the terms the table uses.
        let terms = &out[out.find("Terms used above").expect("a footer")..];
        for t in [
            "VMA",
            "bench_forking",
            "__mt_dup",
            "SMAP",
            "KUAP",
            "poll2",
            "will-it-scale",
        ] {
            assert!(terms.contains(&format!("\n  {t} ")), "no {t} in {terms}");
        }
    }

    #[test]
    fn explain_fits_100_columns() {
        let e = explain();
        for line in e.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
        for (t, _) in &GLOSSARY {
            assert!(e.contains(&format!("\n  {t} ")), "{t}");
        }
    }

    #[test]
    fn units() {
        assert_eq!(with_unit(12_345.4), "12,345 ns");
        assert_eq!(with_unit(1_234_567.0), "1,235 us");
        assert_eq!(with_unit(2.5e9), "2,500 ms");
    }

    #[test]
    fn machine_formats() {
        let mut rows = wide_rows();
        rows[0].workload = "a \"quoted\" name".into();
        let csv = render("csv", &rows, &settings(), &[], false);
        assert!(csv.contains("\"a \"\"quoted\"\" name\""));
        assert_eq!(csv.lines().count(), rows.len() + 1);
        assert!(csv
            .lines()
            .nth(1)
            .unwrap()
            .ends_with(",3,true,\"/proc/self/maps\",0123abc"));
        let json = render("json", &rows, &settings(), &["n".into()], false);
        assert!(json.starts_with("{\n  \"summary\": {\"rows\": 5, \"direction_reproduced\": 4,"));
        assert!(json.contains("\"settings\": {\"repetitions\": 3, \"quick\": true,"));
        assert!(json.contains("\"commit\": \"0123abc\""));
        assert!(json.contains("\"workload\": \"a \\\"quoted\\\" name\""));
        assert!(json.contains("\"direction\": \"reproduced\", \"magnitude\": \"larger\""));
        assert_eq!(json.matches("\"direction\": ").count(), rows.len());
        assert!(json.trim_end().ends_with("]\n}"));
    }
}
