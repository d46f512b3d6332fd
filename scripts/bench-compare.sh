#!/usr/bin/env bash
# Criterion benchmarks of two commits side by side, as ratios within one run: each commit's bench
# binaries are built in a worktree of their own, then run alternately (before, after; the order
# swaps every round), each round's results kept apart (CRITERION_HOME per side and round). The
# table gives, per benchmark, both medians of the last round and after ÷ before, median and
# min-max over the rounds (below 1.00: the after commit is faster).
#
# Usage: scripts/bench-compare.sh BEFORE AFTER [ROUNDS] [FILTER]
#   BEFORE, AFTER: commits (anything `git rev-parse` takes); ROUNDS: default 3; FILTER: a
#   criterion filter (a regex over benchmark ids), default everything.
#   BENCHES="kernel peers" picks the bench targets (default: kernel and peers).
#   MAPLE_BENCH_QUICK=1 makes each benchmark a few hundred milliseconds (a smoke run).
# Output: target/bench-compare/<before>-<after>/summary.md (and the table on stdout); the builds
# are cached in $BENCH_COMPARE_CACHE (default /tmp/maple-bench-compare).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,15p' "$0"; exit 2; }
before=$(git rev-parse --short "$1") after=$(git rev-parse --short "$2")
rounds="${3:-3}" filter="${4:-}"
benches=(${BENCHES:-kernel peers})
# A worktree and a target dir per commit, kept for reuse, outside this workspace (an old commit
# may not be a workspace member).
cache="${BENCH_COMPARE_CACHE:-${TMPDIR:-/tmp}/maple-bench-compare}"
out="$PWD/target/bench-compare/$before-$after"
mkdir -p "$out"

# Builds the bench targets of commit $1 and prints their executables, one per line.
build() {
  local rev=$1 wt="$cache/$1/src"
  mkdir -p "$cache/$rev"
  [ -d "$wt" ] || git worktree add -q --detach "$wt" "$rev"
  local args=()
  for b in "${benches[@]}"; do args+=(--bench "$b"); done
  (cd "$wt" && CARGO_TARGET_DIR="$cache/$rev/target" cargo bench "${args[@]}" --no-run \
    --message-format=json 2>"$cache/$rev/build.log") |
    python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["executable"])'
}

mapfile -t bins_before < <(build "$before")
mapfile -t bins_after < <(build "$after")
[ ${#bins_before[@]} -gt 0 ] && [ ${#bins_after[@]} -gt 0 ] || { echo "no bench binaries"; exit 1; }

run() { # side round binaries...
  local side=$1 round=$2; shift 2
  for bin in "$@"; do
    echo "round $round: $side $(basename "$bin")" >&2
    CRITERION_HOME="$out/criterion-$side-$round" "$bin" --bench --noplot ${filter:+"$filter"} \
      >"$out/log-$side-$round-$(basename "$bin")" 2>&1
  done
}
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    run before "$r" "${bins_before[@]}"; run after "$r" "${bins_after[@]}"
  else
    run after "$r" "${bins_after[@]}"; run before "$r" "${bins_before[@]}"
  fi
done

python3 - "$out" "$rounds" "$before" "$after" <<'EOF' | tee "$out/summary.md"
import json, os, statistics, sys
out, rounds, before, after = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def medians(home):
    """Benchmark id -> median time (ns) of one side's round."""
    res = {}
    for dirpath, _, files in os.walk(home):
        if "estimates.json" in files and os.path.basename(dirpath) == "new":
            bid = os.path.relpath(os.path.dirname(dirpath), home)
            with open(os.path.join(dirpath, "estimates.json")) as f:
                res[bid] = json.load(f)["median"]["point_estimate"]
    return res

sides = {s: [medians(f"{out}/criterion-{s}-{r}") for r in range(1, rounds + 1)]
         for s in ("before", "after")}
ids = sorted(set.intersection(*(set(m) for ms in sides.values() for m in ms)))
print(f"after ({after}) / before ({before}), criterion medians, {rounds} alternated rounds\n")
print("| benchmark | before (ns) | after (ns) | after / before | min-max |")
print("|---|---:|---:|---:|---|")
for bid in ids:
    ratios = [a[bid] / b[bid] for a, b in zip(sides["after"], sides["before"])]
    print(f"| {bid} | {sides['before'][-1][bid]:.1f} | {sides['after'][-1][bid]:.1f} "
          f"| {statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |")
EOF
