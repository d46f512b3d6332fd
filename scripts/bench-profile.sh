#!/usr/bin/env bash
# Instruction counts per operation (valgrind callgrind; independent of the machine's load) for
# the benchmark workloads, the maple tree beside the BTreeMap range map, plus the functions that
# cost the most in each maple workload. Output: target/bench-results/profile/ (one callgrind file
# and one annotated top list per run) and summary.md.
#
# Usage: scripts/bench-profile.sh [N]   (N ranges, default 1,000,000)
#        scripts/bench-profile.sh --small [N...]   (the small-tree set: every row at each N,
#        default 10 100 1000 10000, with tree creation and drop and the mapped copy; output
#        small.md, one line per workload and N: maple, maple-rcu and btreemap side by side)
#        scripts/bench-profile.sh --floors [N...]   (what the small-tree rows' costs come from:
#        the allocation tree beside a plain range tree, which tracks no gaps, and the usual
#        ranges [10i, 10i+5] beside dense ones [10i, 10i+9], one slot per range instead of two;
#        output floors.md)
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/bench-results/profile
mkdir -p "$out"
cargo build --release -p maple-tools --bin profile
bin=${CARGO_TARGET_DIR:-target}/release/profile

# Instructions per operation of one run: `count WORKLOAD MAP N`.
count() {
  local f="$out/cg.$1.$2.$3"
  local line ops ir
  line=$(valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file="$f" \
    "$bin" "$1" "$2" "$3" 2>"$f.log")
  ops=$(sed -n 's/.*ops=\([0-9]*\).*/\1/p' <<<"$line")
  ir=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$f.log")
  echo $((ir / ops))
}

if [[ "${1:-}" == "--floors" ]]; then
  shift
  sizes=("$@")
  [[ ${#sizes[@]} -gt 0 ]] || sizes=(10 100 1000 10000)
  {
    printf '| workload | n | maple (allocation tree) | maple-plain (range tree) | maple-plain, dense | btreemap | btreemap, dense |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|\n'
  } > "$out/floors.md"
  for n in "${sizes[@]}"; do
    for w in build random_store erase_half iterate iterate_rev fork_map; do
      a=$(count "$w" maple "$n")
      p=$(count "$w" maple-plain "$n")
      b=$(count "$w" btreemap "$n")
      pd="" bd=""
      case $w in
        build | iterate | iterate_rev | fork_map)
          pd=$(PROFILE_DENSE=1 count "$w" maple-plain "$n")
          bd=$(PROFILE_DENSE=1 count "$w" btreemap "$n")
          ;;
      esac
      printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$w" "$n" "$a" "$p" "$pd" "$b" "$bd" | tee -a "$out/floors.md"
    done
  done
  exit 0
fi

if [[ "${1:-}" == "--small" ]]; then
  shift
  sizes=("$@")
  [[ ${#sizes[@]} -gt 0 ]] || sizes=(10 100 1000 10000)
  printf '| workload | n | maple | maple-rcu | btreemap | maple ÷ btreemap | rcu ÷ maple |\n|---|---:|---:|---:|---:|---:|---:|\n' > "$out/small.md"
  row() { # WORKLOAD N [no-rcu]
    local m r b
    m=$(count "$1" maple "$2")
    if [[ "${3:-}" == no-rcu ]]; then r=""; else r=$(count "$1" maple-rcu "$2"); fi
    b=$(count "$1" btreemap "$2")
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$m" "$r" "$b" \
      "$(awk -v a="$m" -v b="$b" 'BEGIN{printf "%.2f", a/b}')" \
      "$( [[ -n "$r" ]] && awk -v a="$r" -v b="$m" 'BEGIN{printf "%.2f", a/b}')" | tee -a "$out/small.md"
  }
  row create_drop 0
  row create_drop 1
  for n in "${sizes[@]}"; do
    for w in lookup_hit lookup_miss build iterate iterate_rev random_store erase_half gap_rev; do
      case $w in
        lookup_* | iterate* | gap_rev) row "$w" "$n" no-rcu ;;
        *) row "$w" "$n" ;;
      esac
    done
    row fork_map "$n" no-rcu
  done
  row fork_map 135 no-rcu
  exit 0
fi

n="${1:-1000000}"
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
  "dup maple 135" "dup_drop maple 135" "fork_map maple 135" "fork_map btreemap 135"
  "fork_old maple 21" "fork_new maple 21" "fork_old maple 121" "fork_new maple 121"
  "fork_old maple 1621" "fork_new maple 1621" "fork_old maple 25621" "fork_new maple 25621"
  "slot_store maple" "slot_store maple-rcu" "node_store maple" "node_store maple-rcu"
  "rewrite maple" "rewrite maple-rcu" "rewrite btreemap"
  "create_drop maple 0" "create_drop maple-rcu 0" "create_drop btreemap 0"
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
    | awk '!seen[$3]++' | head -25 > "$out/cg.$1.$2.$size.top" || true
done
