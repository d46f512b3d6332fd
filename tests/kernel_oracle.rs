//! The kernel as an oracle: replays the committed traces of `tests/kernel-traces/` (scripts in
//! the kernel oracle's op language and the answers the real Linux 6.12 `lib/maple_tree.c`
//! printed for them) on this crate, op by op, and fails at the first difference that is not one
//! of the documented ones (see `kernel_oracle_support`). Regenerate the traces, or run a long
//! campaign, with `scripts/kernel-oracle.sh`.

mod kernel_oracle_support;

use std::path::PathBuf;

use kernel_oracle_support::{replay, Allowed, Report, FAMILIES};

fn traces() -> Vec<(String, String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernel-traces");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let p = e.expect("dir entry").path();
            (p.extension()? == "ops").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let read = |ext: &str| {
                let p = dir.join(format!("{n}.{ext}"));
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            };
            let (ops, kernel) = (read("ops"), read("kernel"));
            (n, ops, kernel)
        })
        .collect()
}

fn check(name: &str) -> Report {
    let (n, ops, kernel) = traces()
        .into_iter()
        .find(|t| t.0 == name)
        .unwrap_or_else(|| panic!("no trace {name}"));
    let rep = replay(&format!("tests/kernel-traces/{n}.ops"), &ops, &kernel);
    assert!(
        rep.ndiffs == 0,
        "{n}: {} difference(s) from the kernel; the first:\n{}\n\n{}",
        rep.ndiffs,
        rep.diffs[0],
        rep.table()
    );
    eprintln!("{n}:\n{}", rep.table());
    rep
}

#[test]
fn small_index_spaces() {
    let r = check("small");
    assert!(r.cursor_steps > 10_000);
}

#[test]
fn wide_indices() {
    check("wide");
}

#[test]
fn allocation_churn() {
    let r = check("alloc");
    for f in ["alloc", "ralloc", "cyclic", "gap_lo", "gap_hi"] {
        assert!(r.ops.get(f).copied().unwrap_or(0) > 300, "few {f} ops");
    }
}

#[test]
fn cursor_lines() {
    let r = check("cursor");
    assert!(r.ops["cursor"] > 3_000);
}

#[test]
fn tall_tree() {
    let r = check("tall");
    assert!(r.ops["store"] > 25_000);
}

/// Each documented difference is met where the quirks trace triggers it, and nothing else
/// differs there.
#[test]
fn documented_kernel_bugs() {
    let r = check("quirks");
    for (family, a) in [
        ("cursor", Allowed::RootForm),
        ("insert", Allowed::InsertWholeSpace),
        ("prev", Allowed::PrevRootEntry),
        ("gap_hi", Allowed::RevSearchWholeSpace),
        ("ralloc", Allowed::RevSearchWholeSpace),
        ("gap_hi", Allowed::WholeSpaceThenErase),
        ("cursor", Allowed::WholeSpaceThenErase),
        ("cursor", Allowed::LimitBeforeWalk),
    ] {
        assert!(
            r.allowed.contains_key(&(family, a)),
            "the quirks trace no longer shows {a:?} on {family} ({})",
            a.reason()
        );
    }
}

/// Every op family of the language is in the committed traces.
#[test]
fn every_family_is_covered() {
    let mut all = Report::default();
    for (n, ops, kernel) in traces() {
        all.merge(&replay(&n, &ops, &kernel));
    }
    for f in FAMILIES {
        assert!(all.ops.get(f).copied().unwrap_or(0) > 0, "no {f} op");
    }
    assert_eq!(all.ndiffs, 0, "{}", all.table());
}

/// The replay is not vacuous: a changed kernel answer, of a cursor step or of a plain op, is
/// reported with its line, and so is a kernel bug's answer outside the bug's conditions.
#[test]
fn replay_catches_differences() {
    let (_, ops, kernel) = traces()
        .into_iter()
        .find(|t| t.0 == "small")
        .expect("small trace");
    // Flip the status of the first active cursor step.
    let (i, line) = kernel
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(" active"))
        .expect("an active step");
    let mut lines: Vec<String> = kernel.lines().map(String::from).collect();
    lines[i] = line.replacen(" active", " overflow", 1);
    let r = replay("small", &ops, &(lines.join("\n") + "\n"));
    assert_eq!(r.ndiffs, 1, "{}", r.table());
    // A load that answers another value.
    let script = "init 0\nstore 10 20 7\nload 15\nprev 30 0\n";
    assert_eq!(replay("t", script, "ok\nok\n7\n7\n").ndiffs, 0);
    assert_eq!(replay("t", script, "ok\nok\n8\n7\n").ndiffs, 1);
    // A kernel-bug answer where the bug's conditions do not hold: bug 2 needs a lone entry at
    // [0, 0] and min > 0; bug 3 needs max = MAX.
    let script = "init 0\nstore 0 0 5\nstore 9 9 6\nprev 9 3\n";
    assert_eq!(replay("t", script, "ok\nok\nok\n5\n").ndiffs, 1);
    let script = "init 1\nstore 10 20 7\ngap_hi 0 100 5\n";
    assert_eq!(replay("t", script, "ok\nok\nerr -EBUSY\n").ndiffs, 1);
}
