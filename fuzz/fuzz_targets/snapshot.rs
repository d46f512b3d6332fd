//! cargo-fuzz target `snapshot`: the logic lives in `tests/fuzz_support/snapshot.rs`, shared with
//! the stable corpus replay (`tests/fuzz_replay.rs`).
#![no_main]

#[allow(dead_code)]
#[path = "../../tests/fuzz_support/mod.rs"]
mod fuzz_support;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_support::snapshot::run(data));
