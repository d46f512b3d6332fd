#!/usr/bin/env bash
# Instruction counts per operation (valgrind callgrind; independent of the machine's load) for
# the benchmark workloads, the maple tree beside the BTreeMap range map, plus the functions that
# cost the most in each maple workload. Output: target/bench-results/profile/ (one callgrind file
# and one annotated top list per run) and summary.md.
#
# Usage: scripts/bench-profile.sh [N]   (N ranges, default 1,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-1000000}"
out=target/bench-results/profile
mkdir -p "$out"
cargo build --release -p maple-tools --bin profile
bin=${CARGO_TARGET_DIR:-target}/release/profile
runs=(
  "lookup_hit maple" "lookup_hit btreemap"
  "lookup_miss maple" "lookup_miss btreemap"
  "build maple" "build maple-rcu" "build btreemap"
  "iterate maple" "iterate maple-rcu" "iterate btreemap"
  "iterate_rev maple" "iterate_rev btreemap"
  "random_store maple" "random_store maple-rcu" "random_store btreemap"
  "erase_half maple" "erase_half maple-rcu" "erase_half btreemap"
  "gap_rev maple" "gap_rev btreemap"
  "fork_old maple 135" "fork_old maple-rcu 135" "fork_new maple 135"
  "dup maple 135" "dup_drop maple 135"
  "fork_old maple 21" "fork_new maple 21" "fork_old maple 121" "fork_new maple 121"
  "fork_old maple 1621" "fork_new maple 1621" "fork_old maple 25621" "fork_new maple 25621"
  "slot_store maple" "slot_store maple-rcu" "node_store maple" "node_store maple-rcu"
  "rewrite maple" "rewrite maple-rcu" "rewrite btreemap"
)
printf '| workload | map | n | operations | instructions per operation |\n|---|---|---:|---:|---:|\n' > "$out/summary.md"
for r in "${runs[@]}"; do
  set -- $r
  size="${3:-$n}"
  f="$out/cg.$1.$2.$size"
  line=$(valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file="$f" \
    "$bin" "$1" "$2" "$size" 2>"$f.log")
  ops=$(sed -n 's/.*ops=\([0-9]*\).*/\1/p' <<<"$line")
  ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$f.log")
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$size" "$ops" "$((ir / ops))" | tee -a "$out/summary.md"
  # Top functions by inclusive cost, the crate's and the allocator's only, names shortened.
  callgrind_annotate --inclusive=yes "$f" 2>/dev/null \
    | grep -E 'maple_tree::|malloc|free|memcpy|memmove|crossbeam_epoch|alloc::' \
    | sed -E 's#^ *([0-9,]+) \( *([0-9.]+)%\) +[^:]*:#\1 \2% #; s# \[/.*##' \
    | awk '!seen[$3]++' | head -25 > "$f.top" || true
done
