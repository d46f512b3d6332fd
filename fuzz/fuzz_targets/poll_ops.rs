//! cargo-fuzz target `poll_ops`: the logic lives in `crates/maple-poll/tests/fuzz_support/poll_ops.rs`, shared with the
//! stable corpus replay (`fuzz_replay.rs` beside it).
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/maple-poll/tests/fuzz_support/mod.rs"]
mod fuzz_support;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_support::poll_ops::run(data));
