#!/usr/bin/env bash
# The long run of the reader-side promise checker (tests/stress.rs, module `promise`): 1 writer
# and 3 readers, appends on, both tree kinds (`new()` then `new_alloc()`), each for
# MAPLE_STRESS_SECS seconds (default 600: at least ten minutes per kind), workloads mixing issue
# 13's "clear, 8 stores, [80, 85], [73, 75]" loop, in-order builds, random stores and erases.
#
#   ./scripts/stress-long.sh                    # 10 minutes per tree kind, seed 0x135eed
#   MAPLE_STRESS_SECS=60 MAPLE_STRESS_SEED=0x42 ./scripts/stress-long.sh
#
# Prints per tree kind the phases, writes, reads checked and time; fails (non-zero) with the first
# observation the checker cannot explain (the read's window, the writes in it, what it saw).
set -euo pipefail
cd "$(dirname "$0")/.."

export MAPLE_STRESS_SECS="${MAPLE_STRESS_SECS:-600}"
export MAPLE_STRESS_SEED="${MAPLE_STRESS_SEED:-0x135eed}"
export MAPLE_STRESS_READERS="${MAPLE_STRESS_READERS:-3}"
export MAPLE_STRESS_APPEND="${MAPLE_STRESS_APPEND:-1}"

echo "stress-long: ${MAPLE_STRESS_SECS}s per tree kind, seed ${MAPLE_STRESS_SEED}, ${MAPLE_STRESS_READERS} readers, appends ${MAPLE_STRESS_APPEND}, at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
start=$(date +%s)
cargo test --release --test stress -- --exact promise_range_tree promise_alloc_tree \
  --test-threads=1 --nocapture
echo "stress-long: passed in $(( $(date +%s) - start ))s"
