//! Seed 002 reproduced: will-it-scale's poll2 (128 regular files, `POLLOUT`, timeout 0, the
//! array refilled every call) with each copy-out strategy, under the SMAP-calibrated window model
//! and, where the CPU has them, real protection-key windows; poll1 as the control; the running
//! kernel's own `poll(2)` on 128 real tmpfiles for scale. After criterion's groups, a
//! will-it-scale style summary prints ops/s and the speed-up over per-descriptor windows.
//!
//! `MAPLE_BENCH_QUICK=1` shrinks warm-up and measurement to a few hundred milliseconds.

#[cfg(target_os = "linux")]
#[path = "poll/linux.rs"]
mod linux;

fn main() {
    #[cfg(target_os = "linux")]
    linux::main();
    #[cfg(not(target_os = "linux"))]
    eprintln!("the poll model is Linux-only: nothing to measure on this system");
}
