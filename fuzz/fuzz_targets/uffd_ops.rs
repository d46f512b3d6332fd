//! cargo-fuzz target `uffd_ops`: the logic lives in `crates/maple-mm/tests/fuzz_support/uffd_ops.rs`, shared with the
//! stable corpus replay (`fuzz_replay.rs` beside it).
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/maple-mm/tests/fuzz_support/mod.rs"]
mod fuzz_support;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_support::uffd_ops::run(data));
