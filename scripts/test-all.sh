#!/usr/bin/env bash
# Runs every test of the workspace (the tree and the member crates under crates/): formatting,
# lints, unit/integration/doc tests (the fuzz-corpus replays included), the loom models, the
# seeds demo's smoke run, a compile of the benchmarks, and each published crate packaged and
# tested from its unpacked `.crate`. README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo doc --no-deps (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "cargo test (unit, property, integration, doc; the short promise stress run included)"
cargo test --workspace --release

step "cargo test in the debug profile (debug assertions and overflow checks on)"
cargo test --workspace

if [ -d loom-tests ]; then
  step "loom models: single writes, sequences of writes, mutants (each prints its executions and time)"
  (cd loom-tests && RUSTFLAGS="--cfg loom --cfg crossbeam_loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
    RUST_BACKTRACE=0 cargo test --release -- --test-threads=1 --nocapture)
fi

step "seeds demo (quick mode): the table must be there"
out=$(cargo run --release --quiet -p maple-seeds -- --quick 2>/dev/null)
printf '%s\n' "$out"
for seed in 000 001 002; do
  printf '%s\n' "$out" | grep -Eq "^$seed +\|" || { echo "seeds: no row for seed $seed"; exit 1; }
done

if [ -d benches ] && ls benches/*.rs >/dev/null 2>&1; then
  step "benchmarks compile"
  cargo bench --workspace --no-run
fi

step "every target compiles off Linux (FreeBSD): the Linux-only parts are gated"
if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-freebsd; then
  cargo check --workspace --all-targets --quiet --target x86_64-unknown-freebsd
else
  echo "skipped: rustup target add x86_64-unknown-freebsd (.ci/run installs it)"
fi

step "each published crate: cargo publish --dry-run, and cargo test on the unpacked .crate"
./scripts/package-check.sh

step "all tests passed"
