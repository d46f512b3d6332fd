//! Replays every committed fuzz corpus file (`tests/corpus/<target>/*`) through the same target
//! functions the cargo-fuzz targets run, on stable Rust, so a regression of anything a fuzzer
//! once reached fails the normal test run.

// The poll model is Linux-only.
#![cfg(target_os = "linux")]

#[path = "fuzz_support/mod.rs"]
mod fuzz_support;

use std::path::PathBuf;

use fuzz_support::TARGETS;

fn replay(target: &str) {
    let run = TARGETS
        .iter()
        .find(|t| t.name == target)
        .expect("known target")
        .run;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "corpus {} is empty", dir.display());
    for f in &files {
        let data = std::fs::read(f).expect("read corpus file");
        if let Err(e) = std::panic::catch_unwind(|| run(&data)) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{target}: corpus file {} fails: {msg}", f.display());
        }
    }
    eprintln!("{target}: replayed {} corpus files", files.len());
}

#[test]
fn replay_poll_ops() {
    replay("poll_ops");
}

/// Prints a decoded input and runs it: `FUZZ_TARGET=name FUZZ_INPUT=path cargo test --release
/// --test fuzz_replay describe_input -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: needs FUZZ_TARGET and FUZZ_INPUT"]
fn describe_input() {
    let name = std::env::var("FUZZ_TARGET").expect("FUZZ_TARGET");
    let path = std::env::var("FUZZ_INPUT").expect("FUZZ_INPUT");
    let t = TARGETS
        .iter()
        .find(|t| t.name == name)
        .expect("known target");
    let data = std::fs::read(&path).expect("read FUZZ_INPUT");
    println!("{}", (t.describe)(&data));
    (t.run)(&data);
}
