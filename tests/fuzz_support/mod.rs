//! Fuzz target logic of the tree, shared by the cargo-fuzz targets in `fuzz/fuzz_targets/`
//! (nightly, libFuzzer) and by `tests/fuzz_replay.rs` (stable, replays the committed corpora in
//! `tests/corpus/<target>/`, which `fuzz/corpus/<target>` links to). The targets of the kernel
//! models built on the tree live with their crates (`crates/maple-mm/tests/fuzz_support/`,
//! `crates/maple-poll/tests/fuzz_support/`).
//!
//! Each target is a plain `fn(&[u8])` that decodes a structured input with `arbitrary`, drives
//! the public API, and checks it against a model after every step (`validate`, the whole range
//! partition, iteration, exact entry liveness), then drops everything and checks that every
//! entry created was dropped exactly once. It panics on any divergence.
//!
//! Adding a target: write `tests/fuzz_support/<name>.rs` with `pub fn run(data: &[u8])`, list
//! it in [`TARGETS`], add `fuzz/fuzz_targets/<name>.rs` (three lines, copy one) and its
//! `[[bin]]` in `fuzz/Cargo.toml`, seed `tests/corpus/<name>/` and link `fuzz/corpus/<name>` to it.

pub mod cursor_ops;
pub mod dup_ops;
pub mod entry;
pub mod gap_ops;
pub mod harness;
pub mod model;
pub mod snapshot;
pub mod tree_ops;

/// A fuzz target.
pub struct Target {
    /// Its name: the corpus directory and the cargo-fuzz binary.
    pub name: &'static str,
    /// Runs one input; panics on any divergence.
    pub run: fn(&[u8]),
    /// Pretty-prints the decoded input.
    pub describe: fn(&[u8]) -> String,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "tree_ops",
        run: tree_ops::run,
        describe: tree_ops::describe,
    },
    Target {
        name: "cursor_ops",
        run: cursor_ops::run,
        describe: cursor_ops::describe,
    },
    Target {
        name: "gap_ops",
        run: gap_ops::run,
        describe: gap_ops::describe,
    },
    Target {
        name: "dup_ops",
        run: dup_ops::run,
        describe: dup_ops::describe,
    },
    Target {
        name: "snapshot",
        run: snapshot::run,
        describe: snapshot::describe,
    },
];
