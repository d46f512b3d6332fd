//! Fuzz target logic of the poll model, shared by the cargo-fuzz targets in the repository's
//! `fuzz/fuzz_targets/` (nightly, libFuzzer) and by `tests/fuzz_replay.rs` (stable, replays the
//! committed corpora in `tests/corpus/<target>/`, which `fuzz/corpus/<target>` links to).
//!
//! Each target is a plain `fn(&[u8])` that decodes a structured input with `arbitrary`, drives
//! the public API, checks it against a model after every step and panics on any divergence.

pub mod poll_ops;

/// A fuzz target.
pub struct Target {
    /// Its name: the corpus directory and the cargo-fuzz binary.
    pub name: &'static str,
    /// Runs one input; panics on any divergence.
    pub run: fn(&[u8]),
    /// Pretty-prints the decoded input.
    pub describe: fn(&[u8]) -> String,
}

/// Every target of this crate.
pub const TARGETS: &[Target] = &[Target {
    name: "poll_ops",
    run: poll_ops::run,
    describe: poll_ops::describe,
}];
