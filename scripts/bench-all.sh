#!/usr/bin/env bash
# Runs every benchmark of the tree and writes the report: RUNS full runs (default 1) of the
# kernel ports, the peers, the concurrency benchmark and the alternated RCU ÷ exclusive modes
# benchmark, each run's criterion output kept under target/bench-results/run-K/, then the
# memory table, then scripts/bench-report.py with the median of the runs (tables in
# target/bench-results/report.md, BENCHMARKS.md updated in place, docs/bench-chart.svg).
# Where the kernel's C tree can be had (BENCH_SLAB, ORACLE_DIR or ../shared/kernel-oracle, as
# for scripts/bench-vs-kernel.sh), VS_KERNEL_ROUNDS (default 5) alternated rounds of it against
# maple-tools' kernel_workloads go into the report too; VS_KERNEL_ROUNDS=0 skips them.
# MAPLE_BENCH_QUICK=1 for a smoke run (a couple of minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-1}"
out=target/bench-results
mkdir -p "$out"
git rev-parse --short HEAD > "$out/commit" 2>/dev/null || true
date -u > "$out/started"
rm -f "$out/vs-kernel.md"
args=()
for k in $(seq 1 "$runs"); do
  rm -rf target/criterion
  cargo bench --bench kernel 2>&1 | tee "$out/kernel.txt"
  cargo bench --bench peers 2>&1 | tee "$out/peers.txt"
  cargo bench --bench concurrent 2>&1 | tee "$out/concurrent.txt"
  cargo bench --bench modes 2>&1 | tee "$out/modes.txt"
  rm -rf "$out/run-$k"
  mkdir -p "$out/run-$k"
  cp -r target/criterion "$out/run-$k/criterion"
  cp "$out/concurrent.json" "$out/run-$k/concurrent.json"
  cp "$out/modes.json" "$out/run-$k/modes.json"
  args+=(--criterion "$out/run-$k/criterion" --concurrent "$out/run-$k/concurrent.json"
         --modes "$out/run-$k/modes.json")
done
if [ -n "${MAPLE_BENCH_QUICK:-}" ] && [ "${MAPLE_BENCH_QUICK}" != 0 ]; then n=100000; else n=1000000; fi
cargo run -q --release -p maple-tools --bin memory -- "$n" | tee "$out/memory.md"
vsk_rounds=${VS_KERNEL_ROUNDS:-5}
if [ -n "${MAPLE_BENCH_QUICK:-}" ] && [ "${MAPLE_BENCH_QUICK}" != 0 ]; then vsk_rounds=0; fi
if [ "$vsk_rounds" -gt 0 ] && { [ -n "${BENCH_SLAB:-}" ] ||
    [ -x "${ORACLE_DIR:-/tmp/kernel-oracle}/build/bench_slab" ] ||
    [ -f ../shared/kernel-oracle/build.sh ]; }; then
  bash scripts/bench-vs-kernel.sh "$vsk_rounds"
fi
if [ -n "${MAPLE_BENCH_QUICK:-}" ] && [ "${MAPLE_BENCH_QUICK}" != 0 ]; then
  # A smoke run touches neither BENCHMARKS.md nor the committed chart.
  python3 scripts/bench-report.py "${args[@]}" --svg "$out/bench-chart.svg"
else
  python3 scripts/bench-report.py "${args[@]}" --update BENCHMARKS.md
fi
