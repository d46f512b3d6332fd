//! Replays scripts of the kernel oracle's op language (see `scripts/kernel-oracle.sh`) on this
//! crate and compares every answer with the one the kernel's own `lib/maple_tree.c` printed.
//!
//! Shared by `tests/kernel_oracle.rs` (the committed traces) and maple-tools' `kernel_oracle`
//! (the generator and the campaign checker).
//!
//! A difference is accepted only when it is one of these, each named in the report:
//! - [`Allowed::RootForm`]: a cursor line while the kernel keeps the tree's only entry, at
//!   index 0, in its root pointer (a form this crate does not have; see the crate docs on
//!   cursors for what differs);
//! - [`Allowed::InsertWholeSpace`] (kernel bug 1): `insert 0 MAX` on a one-leaf tree succeeds
//!   in the kernel; here it says occupied. The crate's tree then takes the kernel's content so
//!   that the rest of the script still compares;
//! - [`Allowed::PrevRootEntry`] (kernel bug 2): `prev` with a lower limit above 0 returns the
//!   lone entry at `[0, 0]` in the kernel;
//! - [`Allowed::RevSearchWholeSpace`] (kernel bug 3): top-down gap search (`gap_hi`, `ralloc`)
//!   with `max = MAX` says busy in the kernel where this crate finds a free range (which is
//!   checked to be free); an allocation is then undone here to keep the trees equal;
//! - [`Allowed::WholeSpaceThenErase`] (kernel bug 4): erasing the entry of a store over
//!   `[0, MAX]` leaves the kernel an empty leaf rather than an empty tree. Its gap searches and
//!   allocations then say busy (after such a store and an erase since the last `init`), undone
//!   here the same way; its cursors report that leaf's `[0, MAX]` range as active (or
//!   overflow/underflow) where this crate's empty tree says none;
//! - [`Allowed::LimitBeforeWalk`] (kernel bug 5): the oracle refused a cursor step (`unsafe`)
//!   that would crash the kernel; the steps before it are compared, that step and the rest of
//!   the line are not (the crate's answer there is tested in `tests/kernel_cases.rs`).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use maple_tree::{Error, MapleTree, Status, Value};

/// The op families of the language, in report order.
pub const FAMILIES: &[&str] = &[
    "init", "store", "insert", "erase", "load", "find", "next", "prev", "walk", "gap_lo", "gap_hi",
    "alloc", "ralloc", "cyclic", "dump", "validate", "cursor",
];

/// A documented reason for a difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Allowed {
    /// The kernel keeps a lone entry at index 0 in its root pointer (status `root`).
    RootForm,
    /// Kernel bug 1: `insert_range(0, MAX)` on a single leaf overwrites everything.
    InsertWholeSpace,
    /// Kernel bug 2: `prev` with `min > 0` returns a lone entry at `[0, 0]`.
    PrevRootEntry,
    /// Kernel bug 3: top-down gap search with `max = MAX` misses the leftmost subtree.
    RevSearchWholeSpace,
    /// Kernel bug 4: after a store over `[0, MAX]` and an erase, gap search always fails.
    WholeSpaceThenErase,
    /// Kernel bug 5: a step the oracle refused because it would dereference a null node.
    LimitBeforeWalk,
}

impl Allowed {
    /// Why the difference is accepted.
    pub fn reason(self) -> &'static str {
        match self {
            Allowed::RootForm => "root form: the kernel keeps a lone entry at 0 in its root pointer; this crate always has a leaf",
            Allowed::InsertWholeSpace => "kernel bug 1: insert 0..MAX on a single leaf succeeds in 6.12",
            Allowed::PrevRootEntry => "kernel bug 2: prev with min > 0 returns the lone entry at [0, 0]",
            Allowed::RevSearchWholeSpace => "kernel bug 3: top-down gap search with max = MAX misses the leftmost subtree",
            Allowed::WholeSpaceThenErase => "kernel bug 4: erasing a [0, MAX] entry leaves an empty leaf (gap search fails; cursors see an active [0, MAX])",
            Allowed::LimitBeforeWalk => "kernel bug 5: the oracle refused a step that dereferences a null node",
        }
    }
}

/// What the kernel's root pointer holds, as far as the crate's content tells (the kernel's
/// rules: a non-NULL store of exactly `[0, 0]` into an empty tree stays in the root pointer; any
/// other store into it makes a leaf; a write that leaves nothing makes the root NULL, except an
/// erase of a whole-space entry, which leaves an empty leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KRoot {
    Null,
    Entry,
    Node,
    /// A leaf whose only slot is an empty `[0, MAX]`: what the kernel keeps after the entry of
    /// a whole-space store is erased (an exact-fit NULL store). This crate's tree is empty then;
    /// it is the state behind kernel bug 4.
    EmptyLeaf,
}

/// Per-family figures of one replay.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Ops per family.
    pub ops: BTreeMap<&'static str, u64>,
    /// Cursor steps run.
    pub cursor_steps: u64,
    /// Cursor steps the kernel answered (all but those the oracle refused, and the rest of
    /// their lines).
    pub kernel_steps: u64,
    /// Accepted differences per (family, reason).
    pub allowed: BTreeMap<(&'static str, Allowed), u64>,
    /// Unexplained differences (a description of each, the first few only).
    pub diffs: Vec<String>,
    /// Number of unexplained differences.
    pub ndiffs: u64,
}

impl Report {
    /// Adds another report's figures.
    pub fn merge(&mut self, o: &Report) {
        for (k, v) in &o.ops {
            *self.ops.entry(k).or_default() += v;
        }
        self.cursor_steps += o.cursor_steps;
        self.kernel_steps += o.kernel_steps;
        for (k, v) in &o.allowed {
            *self.allowed.entry(*k).or_default() += v;
        }
        for d in &o.diffs {
            if self.diffs.len() < 20 {
                self.diffs.push(d.clone());
            }
        }
        self.ndiffs += o.ndiffs;
    }

    /// Total ops.
    pub fn total_ops(&self) -> u64 {
        self.ops.values().sum()
    }

    /// A table of the figures.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{:<10} {:>10}", "family", "ops");
        for f in FAMILIES {
            if let Some(n) = self.ops.get(f) {
                let _ = writeln!(s, "{f:<10} {n:>10}");
            }
        }
        let _ = writeln!(s, "{:<10} {:>10}", "total", self.total_ops());
        let _ = writeln!(
            s,
            "cursor steps: {} run, {} answered by the kernel",
            self.cursor_steps, self.kernel_steps
        );
        for ((f, a), n) in &self.allowed {
            let _ = writeln!(s, "accepted: {n} x {f}: {}", a.reason());
        }
        let _ = writeln!(s, "unexplained differences: {}", self.ndiffs);
        for d in &self.diffs {
            let _ = writeln!(s, "  {d}");
        }
        s
    }
}

fn family(op: &str) -> &'static str {
    FAMILIES
        .iter()
        .copied()
        .find(|f| *f == op)
        .unwrap_or("unknown")
}

fn err(e: Error) -> String {
    let (name, errno) = match e {
        Error::Occupied => ("EEXIST", -17),
        Error::NoRoom => ("EBUSY", -16),
        _ => ("EINVAL", -22),
    };
    // The library's own errno for the error (`Error::errno`) must be the kernel's.
    assert_eq!(
        e.errno(),
        errno,
        "{e:?}: errno {} is not -{name}",
        e.errno()
    );
    format!("err -{name}")
}

fn val(v: Option<Value>) -> String {
    match v {
        Some(v) => v.get().to_string(),
        None => "null".into(),
    }
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Start => "start",
        Status::Active => "active",
        Status::None => "none",
        Status::Pause => "pause",
        Status::Overflow => "overflow",
        Status::Underflow => "underflow",
        _ => "unknown", // `Status` is non-exhaustive
    }
}

fn num(t: &str) -> u64 {
    t.parse()
        .unwrap_or_else(|_| panic!("bad number {t:?} in script"))
}

/// This crate, driven by the op language.
pub struct Driver {
    tree: MapleTree<Value>,
    root: KRoot,
    /// A store over `[0, MAX]` happened since the last `init` (kernel bug 4's trigger).
    whole_space: bool,
    /// Before the current op, the tree held exactly one entry, over `[0, MAX]`.
    whole: bool,
}

impl Default for Driver {
    fn default() -> Self {
        Self::new()
    }
}

impl Driver {
    /// An empty plain tree (as the oracle before its first `init`).
    pub fn new() -> Self {
        Driver {
            tree: MapleTree::new(),
            root: KRoot::Null,
            whole_space: false,
            whole: false,
        }
    }

    /// After a successful write: the kernel's root form. `zero` is whether the write was a
    /// non-NULL write of exactly `[0, 0]`.
    fn wrote(&mut self, zero: bool, null: bool) {
        let empty = self.tree.is_empty();
        self.root = if empty {
            if null && (self.whole || self.root == KRoot::EmptyLeaf) {
                KRoot::EmptyLeaf
            } else {
                KRoot::Null
            }
        } else {
            match self.root {
                KRoot::Null | KRoot::Entry if zero => KRoot::Entry,
                KRoot::Entry if null => KRoot::Entry,
                _ => KRoot::Node,
            }
        };
    }

    /// Runs one op line; returns its output lines.
    pub fn run(&mut self, line: &str) -> Vec<String> {
        let t: Vec<&str> = line.split_whitespace().collect();
        let a = |i: usize| num(t[i]);
        let one = |s: String| vec![s];
        if matches!(t[0], "store" | "erase") {
            let g = self.tree.pin();
            let mut it = self.tree.iter(&g);
            self.whole =
                matches!(it.next(), Some((r, _)) if r == (0..=u64::MAX)) && it.next().is_none();
        }
        let tree = &self.tree;
        match t[0] {
            "init" => {
                self.tree = if a(1) & 1 == 1 {
                    MapleTree::new_alloc()
                } else {
                    MapleTree::new()
                };
                self.root = KRoot::Null;
                self.whole_space = false;
                one("ok".into())
            }
            "store" => {
                let (f, l, v) = (a(1), a(2), a(3));
                let r = if v == 0 {
                    tree.erase_range(f..=l)
                } else {
                    tree.store_range(f..=l, Value::new(v))
                };
                match r {
                    Ok(()) => {
                        if f == 0 && l == u64::MAX {
                            self.whole_space = true;
                        }
                        self.wrote(f == 0 && l == 0 && v != 0, v == 0);
                        one("ok".into())
                    }
                    Err(e) => one(err(e)),
                }
            }
            "insert" => {
                let (f, l, v) = (a(1), a(2), a(3));
                match tree.insert_range(f..=l, Value::new(v)) {
                    Ok(()) => {
                        self.wrote(f == 0 && l == 0, false);
                        one("ok".into())
                    }
                    Err(e) => one(err(e)),
                }
            }
            "erase" => {
                let i = a(1);
                let v = tree.get(i);
                tree.erase(i);
                if v.is_some() {
                    self.wrote(false, true);
                }
                one(val(v))
            }
            "load" => one(val(tree.get(a(1)))),
            "find" => {
                let (mut i, max) = (a(1), a(2));
                let g = tree.pin();
                match tree.find(&mut i, max, &g) {
                    Some(v) => one(format!("{} {i}", v.get())),
                    None => one(format!("null {i}")),
                }
            }
            "next" => {
                let g = tree.pin();
                one(val(tree.next(a(1), a(2), &g).map(|x| x.1)))
            }
            "prev" => {
                let g = tree.pin();
                one(val(tree.prev(a(1), a(2), &g).map(|x| x.1)))
            }
            "walk" => {
                let g = tree.pin();
                let mut c = tree.cursor(a(1), &g);
                let v = c.walk();
                one(format!("{} {} {}", val(v), c.index(), c.last()))
            }
            "gap_lo" | "gap_hi" => {
                let (min, max, size) = (a(1), a(2), a(3));
                let r = if t[0] == "gap_lo" {
                    tree.empty_area(min..=max, size)
                } else {
                    tree.empty_area_rev(min..=max, size)
                };
                match r {
                    Ok(s) => one(format!("{s} {}", s.wrapping_add(size - 1))),
                    Err(e) => one(err(e)),
                }
            }
            "alloc" | "ralloc" => {
                let (size, min, max, v) = (a(1), a(2), a(3), a(4));
                let r = if t[0] == "alloc" {
                    tree.alloc_range(min..=max, size, Value::new(v))
                } else {
                    tree.alloc_rrange(min..=max, size, Value::new(v))
                };
                match r {
                    Ok(r) => {
                        let s = *r.start();
                        self.wrote(s == 0 && size == 1, false);
                        one(s.to_string())
                    }
                    Err(e) => one(err(e)),
                }
            }
            "cyclic" => {
                let (lo, hi, mut next, v) = (a(1), a(2), a(3), a(4));
                match tree.alloc_cyclic(lo..=hi, &mut next, Value::new(v)) {
                    Ok((s, wrapped)) => {
                        self.wrote(s == 0, false);
                        one(format!("{} {s} {next}", u8::from(wrapped)))
                    }
                    Err(e) => one(err(e)),
                }
            }
            "dump" => {
                let g = tree.pin();
                let mut out: Vec<String> = tree
                    .iter(&g)
                    .map(|(r, v)| format!("{} {} {}", r.start(), r.end(), v.get()))
                    .collect();
                out.push("end".into());
                out
            }
            "validate" => match tree.validate() {
                Ok(()) => one("ok".into()),
                Err(e) => one(format!("err {e:?}")),
            },
            "cursor" => one(self.cursor(&t)),
            op => panic!("unknown op {op:?}"),
        }
    }

    fn cursor(&self, t: &[&str]) -> String {
        let g = self.tree.pin();
        let mut c = self.tree.cursor(num(t[1]), &g);
        let mut items = Vec::new();
        for step in &t[2..] {
            let (name, lim) = match step.split_once(':') {
                Some((n, l)) => (n, num(l)),
                None => (*step, 0),
            };
            let v = match name {
                "walk" => Some(c.walk()),
                "pause" => {
                    c.pause();
                    None
                }
                "set" => {
                    c.set(lim);
                    None
                }
                "find" => Some(c.find(lim)),
                "find_rev" => Some(c.find_rev(lim)),
                "next" => Some(c.next(lim)),
                "prev" => Some(c.prev(lim)),
                "find_range" => Some(c.find_range(lim)),
                "find_range_rev" => Some(c.find_range_rev(lim)),
                "next_range" => Some(c.next_range(lim)),
                "prev_range" => Some(c.prev_range(lim)),
                s => panic!("unknown cursor step {s:?}"),
            };
            let v = match v {
                Some(v) => val(v.map(|x| Value::new(x.get()))),
                None => "-".into(),
            };
            items.push(format!(
                "{v} {} {} {}",
                c.index(),
                c.last(),
                status_name(c.status())
            ));
        }
        items.join(" ; ")
    }
}

/// Whether `[s, s + size - 1]` is free in `tree` (checks a crate answer the kernel missed).
fn free(tree: &MapleTree<Value>, s: u64, size: u64) -> bool {
    let Some(e) = s.checked_add(size - 1) else {
        return false;
    };
    let g = tree.pin();
    let mut i = s;
    tree.find(&mut i, e, &g).is_none()
}

/// Replays `script` on a fresh [`Driver`] and compares each op's output with `kernel` (the
/// oracle's output for the same script). `name` labels the differences.
pub fn replay(name: &str, script: &str, kernel: &str) -> Report {
    let mut d = Driver::new();
    let mut rep = Report::default();
    let mut kl = kernel.lines();
    for (ln, line) in script.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        let fam = family(t[0]);
        *rep.ops.entry(fam).or_default() += 1;
        let root_before = d.root;
        let got = d.run(line);
        let mut want = Vec::new();
        loop {
            let Some(k) = kl.next() else {
                panic!("{name}: the kernel's output ends before line {}", ln + 1);
            };
            want.push(k.to_string());
            if fam != "dump" || k == "end" {
                break;
            }
        }
        if fam == "cursor" {
            rep.cursor_steps += (t.len() - 2) as u64;
            rep.kernel_steps += want[0]
                .split(" ; ")
                .filter(|s| !s.starts_with("unsafe "))
                .count() as u64;
        }
        if got == want {
            continue;
        }
        let allowed = classify(&mut d, root_before, &t, &want, &got);
        match allowed {
            Some(a) => {
                if std::env::var_os("KERNEL_ORACLE_VERBOSE").is_some() {
                    eprintln!(
                        "{name}:{}: accepted ({a:?}): `{line}`\n    kernel: {}\n    crate:  {}",
                        ln + 1,
                        want.join(" | "),
                        got.join(" | ")
                    );
                }
                *rep.allowed.entry((fam, a)).or_default() += 1
            }
            None => {
                rep.ndiffs += 1;
                if rep.diffs.len() < 20 {
                    rep.diffs.push(format!(
                        "{name}:{}: `{line}`\n    kernel: {}\n    crate:  {}",
                        ln + 1,
                        want.join(" | "),
                        got.join(" | ")
                    ));
                }
            }
        }
    }
    rep
}

/// Decides whether a difference is one of the documented ones; re-synchronises the crate's tree
/// with the kernel's where the difference changed the kernel's content.
fn classify(
    d: &mut Driver,
    root_before: KRoot,
    t: &[&str],
    want: &[String],
    got: &[String],
) -> Option<Allowed> {
    let a = |i: usize| num(t[i]);
    let (w, g) = (want[0].as_str(), got[0].as_str());
    match t[0] {
        "cursor" => {
            let wi: Vec<&str> = w.split(" ; ").collect();
            let gi: Vec<&str> = g.split(" ; ").collect();
            if let Some(u) = wi.iter().position(|s| s.starts_with("unsafe ")) {
                if wi[..u] == gi[..u] && wi.len() == u + 1 {
                    return Some(Allowed::LimitBeforeWalk);
                }
            }
            if root_before == KRoot::Entry {
                return Some(Allowed::RootForm);
            }
            if root_before == KRoot::EmptyLeaf {
                return Some(Allowed::WholeSpaceThenErase);
            }
            // On an empty tree a reverse find that finds nothing leaves the kernel's state in
            // `ma_root` (range [0, 0]); this crate says none there, and only there: every
            // differing step must be such a one, and every other step equal.
            let u = wi
                .iter()
                .position(|s| s.starts_with("unsafe "))
                .unwrap_or(wi.len());
            let complete = if u < wi.len() {
                gi.len() > u
            } else {
                gi.len() == wi.len()
            };
            let same = |(k, g): (&&str, &&str)| {
                k == g
                    || k.strip_suffix(" root")
                        .is_some_and(|p| g.strip_suffix(" none") == Some(p))
            };
            (complete && wi[..u].iter().zip(&gi[..u]).all(same)).then_some(Allowed::RootForm)
        }
        "prev" => {
            // The kernel returned the lone entry at [0, 0] though `min > 0`.
            let at0 = d.tree.get(0).map(|v| v.get().to_string());
            (root_before == KRoot::Entry && a(2) > 0 && g == "null" && at0.as_deref() == Some(w))
                .then_some(Allowed::PrevRootEntry)
        }
        "insert" if a(1) == 0 && a(2) == u64::MAX && w == "ok" && g == "err -EEXIST" => {
            if d.tree.height() > 1 {
                return None;
            }
            d.tree.store_range(0..=u64::MAX, Value::new(a(3))).unwrap();
            d.whole_space = true;
            d.root = KRoot::Node;
            Some(Allowed::InsertWholeSpace)
        }
        "gap_lo" | "gap_hi" | "alloc" | "ralloc" | "cyclic" if w == "err -EBUSY" => {
            let bug4 = d.whole_space;
            let bug3 = matches!(t[0], "gap_hi" | "ralloc") && t[2] == u64::MAX.to_string()
                || t[0] == "ralloc" && a(3) == u64::MAX;
            if !(bug3 || bug4) {
                return None;
            }
            // The crate's answer must be a real fit of the window, now (gap ops) or before the
            // allocation (then it is undone, as the kernel allocated nothing).
            let (start, size, lo, hi) = match t[0] {
                "gap_lo" | "gap_hi" => {
                    let s: u64 = g.split(' ').next()?.parse().ok()?;
                    if !free(&d.tree, s, a(3)) {
                        return None;
                    }
                    (s, a(3), a(1), a(2))
                }
                "alloc" | "ralloc" => {
                    let s: u64 = g.parse().ok()?;
                    d.tree.erase_range(s..=s + (a(1) - 1)).unwrap();
                    if !free(&d.tree, s, a(1)) {
                        return None;
                    }
                    (s, a(1), a(2), a(3))
                }
                _ => {
                    let s: u64 = g.split(' ').nth(1)?.parse().ok()?;
                    d.tree.erase_range(s..=s).unwrap();
                    (s, 1, a(1), a(2))
                }
            };
            d.wrote(false, true);
            let inside = start >= lo && start.checked_add(size - 1).is_some_and(|e| e <= hi);
            if !inside {
                return None;
            }
            Some(if bug4 {
                Allowed::WholeSpaceThenErase
            } else {
                Allowed::RevSearchWholeSpace
            })
        }
        _ => None,
    }
}
