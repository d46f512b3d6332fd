//! Fuzz target logic, shared by the cargo-fuzz targets in `fuzz/fuzz_targets/` (nightly,
//! libFuzzer) and by `tests/fuzz_replay.rs` (stable, replays the committed corpora).
//!
//! Each target is a plain `fn(&[u8])` that decodes a structured input with `arbitrary`, drives
//! the public API, and checks it against a model after every step (`validate`, the whole range
//! partition, iteration, exact entry liveness), then drops everything and checks that every
//! entry created was dropped exactly once. It panics on any divergence.
//!
//! Adding a target: write `tests/fuzz_support/<name>.rs` with `pub fn run(data: &[u8])`, list
//! it in [`TARGETS`], add `fuzz/fuzz_targets/<name>.rs` (three lines, copy one) and its
//! `[[bin]]` in `fuzz/Cargo.toml`, and seed `fuzz/corpus/<name>/`.

pub mod cursor_ops;
pub mod dup_ops;
pub mod entry;
pub mod gap_ops;
pub mod harness;
pub mod mm_ops;
pub mod model;
#[allow(dead_code)]
pub mod page_model;
pub mod poll_ops;
pub mod tree_ops;
pub mod uffd_ops;

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
        name: "mm_ops",
        run: mm_ops::run,
        describe: mm_ops::describe,
    },
    Target {
        name: "uffd_ops",
        run: uffd_ops::run,
        describe: uffd_ops::describe,
    },
    Target {
        name: "poll_ops",
        run: poll_ops::run,
        describe: poll_ops::describe,
    },
];
