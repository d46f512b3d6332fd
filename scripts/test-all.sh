#!/usr/bin/env bash
# Runs every test of the crate: formatting, lints, unit/integration/doc tests (the fuzz-corpus
# replay included), the loom models, and a compile of the benchmarks. README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy --all-targets -D warnings"
cargo clippy --all-targets -- -D warnings

step "unsafe only in src/tree/node.rs and src/entry.rs"
scripts/check-unsafe.sh

step "cargo doc --no-deps (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet

step "cargo test (unit, property, integration, doc; the short promise stress run included)"
cargo test --release

step "cargo test in the debug profile (debug assertions and overflow checks on)"
cargo test

if [ -d loom-tests ]; then
  step "loom models: single writes, sequences of writes, mutants (each prints its executions and time)"
  (cd loom-tests && RUSTFLAGS="--cfg loom --cfg crossbeam_loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
    RUST_BACKTRACE=0 cargo test --release -- --test-threads=1 --nocapture)
fi

step "seeds demo (quick mode): the table must be there"
out=$(cargo run --release --quiet --example seeds -- --quick 2>/dev/null)
printf '%s\n' "$out"
for seed in 000 001 002; do
  printf '%s\n' "$out" | grep -Eq "^$seed +\|" || { echo "seeds: no row for seed $seed"; exit 1; }
done

if [ -d benches ] && ls benches/*.rs >/dev/null 2>&1; then
  step "benchmarks compile"
  cargo bench --no-run
fi

step "all tests passed"
