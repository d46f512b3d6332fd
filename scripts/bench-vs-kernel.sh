#!/usr/bin/env bash
# The kernel's C tree and this crate on the same workloads, timed alternately: ratios per row.
#
#   scripts/bench-vs-kernel.sh [ROUNDS]      # default 5 rounds
#
# The C side is `bench_slab` (the kernel's own lib/maple_tree.c built in userspace with a
# slab-like node allocator by ../shared/kernel-oracle/build.sh); set BENCH_SLAB to its binary, or
# ORACLE_DIR to the directory build.sh was (or is to be) run with (default /tmp/kernel-oracle),
# where it is built if missing. The Rust side is maple-tools' kernel_workloads, the same workloads
# with the same inputs (its checksums are the C tree's). Each round runs both programs, pinned
# to one CPU when there are two or more, and the two take turns going first, so slow drift of
# the machine falls on both. Per row: the median over the rounds of maple ÷ C within a round,
# its range, and each side's median ns. Rows ending in `_locked` are this crate's writes through
# the writer lock (RCU mode) divided by the C tree's non-RCU row.
#
# Output: the table on stdout and in target/bench-results/vs-kernel.md, the rounds' raw lines
# in target/bench-results/vs-kernel/. Nothing of the kernel goes into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}

source scripts/kernel-oracle-bin.sh
C=${BENCH_SLAB:-$(oracle_bin bench_slab)}
cargo build --release -p maple-tools --bin kernel_workloads >&2
RUST=${CARGO_TARGET_DIR:-target}/release/kernel_workloads
out=target/bench-results/vs-kernel
rm -rf "$out"
mkdir -p "$out"
pin=()
if command -v taskset >/dev/null && [[ $(nproc) -ge 2 ]]; then
    pin=(taskset -c 1)
fi

for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then order="c maple"; else order="maple c"; fi
    for side in $order; do
        if [[ $side == c ]]; then bin=$C; else bin=$RUST; fi
        "${pin[@]}" "$bin" > "$out/round-$r-$side.txt"
    done
    echo "round $r of $rounds done ($order)" >&2
done

python3 - "$out" "$rounds" <<'PY' | tee target/bench-results/vs-kernel.md
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])

def rows(path):
    d = {}
    for line in open(path):
        if line.startswith('#') or not line.strip():
            continue
        name, ns = line.split()
        d[name] = float(ns)
    return d

c = [rows(f"{out}/round-{r}-c.txt") for r in range(1, rounds + 1)]
m = [rows(f"{out}/round-{r}-maple.txt") for r in range(1, rounds + 1)]
print(f"maple ÷ C tree (`bench_slab`), {rounds} alternated rounds, ns per op")
print()
print("| row | C tree ns | maple ns | maple ÷ C | rounds' range |")
print("|---|---:|---:|---:|---:|")
for name in m[0]:
    cname = name.removesuffix("_locked")
    if cname not in c[0]:
        continue
    ratios = [mr[name] / cr[cname] for mr, cr in zip(m, c)]
    cns = statistics.median(cr[cname] for cr in c)
    mns = statistics.median(mr[name] for mr in m)
    print(f"| {name} | {cns:,.1f} | {mns:,.1f} | {statistics.median(ratios):.2f} "
          f"| {min(ratios):.2f}–{max(ratios):.2f} |")
PY
