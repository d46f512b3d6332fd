#!/usr/bin/env bash
# The long runs of tests/stress.rs, both tree kinds (`new()` then `new_alloc()`):
#
# 1. The reader-side stress (`stress_range_tree`, `stress_alloc_tree`): 3 lock-free readers
#    checking every entry they reach (live, stored over the range reported, versions per index
#    never going backwards, iterations ordered and skipping no sentinel) beside a writer on every
#    write path, RCU and exclusive phases alternating. Each seed of STRESS_SEEDS runs
#    STRESS_SECS seconds per kind (default: 5 seeds x 120 s = ten minutes per kind).
# 2. The promise checker (module `promise`, tests promise_range_tree promise_alloc_tree): every
#    read API (loads, first/last, next/prev, find, iterators and gaps from both ends, every
#    cursor move, empty_area*) replayed against the writer's log, MAPLE_STRESS_SECS per kind
#    (default 600), seed MAPLE_STRESS_SEED. MAPLE_STRESS_STRICT_GAPS=1 / _LIMITS=1 / _MOVES=1
#    turn the gated checks into failures (see tests/stress.rs).
#
#   ./scripts/stress-long.sh                         # both parts, defaults (about 40 minutes)
#   ./scripts/stress-long.sh readers                 # part 1 only
#   STRESS_SECS=30 STRESS_SEEDS="7 8" ./scripts/stress-long.sh readers
#   MAPLE_STRESS_SECS=60 MAPLE_STRESS_SEED=0x42 ./scripts/stress-long.sh promise
#
# Prints per run the rounds, writes, reader checks and path counters; fails (non-zero) at the
# first thing a reader or the checker cannot explain.
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-all}"
export STRESS_SECS="${STRESS_SECS:-120}"
seeds="${STRESS_SEEDS:-1 2 3 4 5}"
export MAPLE_STRESS_SECS="${MAPLE_STRESS_SECS:-600}"
export MAPLE_STRESS_SEED="${MAPLE_STRESS_SEED:-0x135eed}"
export MAPLE_STRESS_READERS="${MAPLE_STRESS_READERS:-3}"
export MAPLE_STRESS_APPEND="${MAPLE_STRESS_APPEND:-1}"

echo "stress-long ($what) at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
start=$(date +%s)
if [ "$what" = all ] || [ "$what" = readers ]; then
  echo "readers: ${STRESS_SECS}s per tree kind per seed, seeds: $seeds"
  for seed in $seeds; do
    STRESS_SEED="$seed" cargo test --release --test stress -- --exact stress_range_tree \
      stress_alloc_tree --test-threads=1 --nocapture 2>&1 | grep -E '^(stress|test |thread)'
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "stress-long: seed $seed failed"; exit 1; }
  done
fi
if [ "$what" = all ] || [ "$what" = promise ]; then
  echo "promise: ${MAPLE_STRESS_SECS}s per tree kind, seed ${MAPLE_STRESS_SEED}, ${MAPLE_STRESS_READERS} readers, appends ${MAPLE_STRESS_APPEND}"
  cargo test --release --test stress -- --exact promise_range_tree promise_alloc_tree \
    --test-threads=1 --nocapture
fi
echo "stress-long: passed in $(( $(date +%s) - start ))s"
