//! cargo-fuzz target `mm_ops`: the logic lives in `crates/maple-mm/tests/fuzz_support/mm_ops.rs`, shared with the
//! stable corpus replay (`fuzz_replay.rs` beside it).
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/maple-mm/tests/fuzz_support/mod.rs"]
mod fuzz_support;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_support::mm_ops::run(data));
