#!/usr/bin/env bash
# Runs every benchmark and writes the report: criterion's results under target/criterion, the
# concurrency and memory tables under target/bench-results, then BENCHMARKS' tables and chart
# from scripts/bench-report.py. MAPLE_BENCH_QUICK=1 for a smoke run (a few minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/bench-results
cargo bench --bench kernel 2>&1 | tee target/bench-results/kernel.txt
cargo bench --bench peers 2>&1 | tee target/bench-results/peers.txt
cargo bench --bench concurrent 2>&1 | tee target/bench-results/concurrent.txt
if [ -n "${MAPLE_BENCH_QUICK:-}" ] && [ "${MAPLE_BENCH_QUICK}" != 0 ]; then n=100000; else n=1000000; fi
cargo run --release --example memory -- "$n" | tee target/bench-results/memory.md
python3 scripts/bench-report.py
