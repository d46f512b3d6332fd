#!/usr/bin/env bash
# Ordering mutants: weakens each Release/Acquire row of the publication protocol to Relaxed, one
# at a time, in the one place that defines it (src/tree/node/ord.rs, read by the shipping build
# and the loom build alike), runs the loom models that must catch it, and restores the file (also
# on failure or Ctrl-C). Prints "caught" (a model failed, as it must) or "NOT CAUGHT" per mutant,
# and exits non-zero if any mutant survives.
#
#   scripts/ordering-mutants.sh          # each mutant against the models listed for it below
#   scripts/ordering-mutants.sh --all    # each mutant against every model of models.rs and
#                                        # sequences.rs (slow: up to about 6 min a mutant)
#
# Each mutant rebuilds the crate under loom (about 13 s) and runs two models; the default run
# took 1 min 46 s on 2 busy cores, so scripts/test-all.sh runs it after the loom suite. `--all`
# shows every model a mutant breaks (each row, through tests/models.rs alone, broke 4 to 13).
# The broken twins of tests/mutants.rs are not run: they weaken orderings through the loom knobs
# and must fail whatever the constants are.
set -euo pipefail
cd "$(dirname "$0")/.."

file=src/tree/node/ord.rs
all=0
[ "${1:-}" = "--all" ] && all=1

# constant | its ordering | the models (tests/models.rs, sequences.rs, read_paths.rs) that must catch it
mutants=(
  "P9_PUBLISH_PIVOT|Release|append_end append_three_way"
  "P1_PUBLISH_ROOT|Release|append_split_grow_root split_grow_root"
  "P3_P5_PUBLISH_SLOT|Release|exact_fit node_store_two_levels"
  "P9_LOAD_PIVOT|Acquire|append_end append_three_way"
  "P3_P5_LOAD_SLOT|Acquire|exact_fit node_store_two_levels"
  "P1_LOAD_ROOT|Acquire|append_split_grow_root split_grow_root"
  "P12_STORE_GAP|Release|empty_area_across_an_append_split empty_area_across_an_append_split_climb"
  "P12_LOAD_EDGE_GAP|Acquire|empty_area_across_an_append_split empty_area_across_an_append_split_climb"
)

backup=$(mktemp)
cp -p "$file" "$backup"
logs=$(mktemp -d)
# A plain copy (a new mtime), so that cargo rebuilds the restored file rather than keep the
# last mutant's artifacts.
restore() {
  cp "$backup" "$file"
  rm -f "$backup"
}
trap restore EXIT INT TERM

export RUSTFLAGS="--cfg loom --cfg crossbeam_loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export RUST_BACKTRACE=0

survived=0
for m in "${mutants[@]}"; do
  IFS='|' read -r name from tests <<<"$m"
  cp "$backup" "$file"
  sed -i "s/const ${name}: Ordering = Ordering::${from};/const ${name}: Ordering = Ordering::Relaxed;/" "$file"
  if ! grep -q "const ${name}: Ordering = Ordering::Relaxed;" "$file"; then
    echo "ordering-mutants: no 'const ${name}: Ordering = Ordering::${from};' in ${file}" >&2
    exit 2
  fi
  filter=()
  if [ "$all" = 0 ]; then
    # shellcheck disable=SC2206 # the test names are words
    filter=(--exact $tests)
  fi
  log="$logs/${name}.log"
  start=$(date +%s)
  set +e
  (cd loom-tests && cargo test --release --no-fail-fast --test models --test sequences --test read_paths -- \
    --test-threads=1 "${filter[@]}") >"$log" 2>&1
  rc=$?
  set -e
  secs=$(($(date +%s) - start))
  failed=$(grep -E '^test .* FAILED$' "$log" | awk '{print $2}' | tr '\n' ' ' || true)
  if [ "$rc" != 0 ] && [ -n "$failed" ]; then
    cv=$(grep -c 'Causality violation' "$log" || true)
    echo "caught      ${name} ${from} -> Relaxed (${secs}s, ${cv} causality violation(s)): ${failed}"
  elif [ "$rc" != 0 ]; then
    echo "ordering-mutants: ${name}: cargo failed without a failing model (build error?), see ${log}" >&2
    tail -20 "$log" >&2
    exit 2
  else
    echo "NOT CAUGHT  ${name} ${from} -> Relaxed (${secs}s): ran ${tests:-every model}"
    survived=$((survived + 1))
  fi
done
echo "ordering-mutants: ${survived} mutant(s) not caught (logs in ${logs})"
[ "$survived" = 0 ]
