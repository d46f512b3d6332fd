#!/usr/bin/env bash
# The kernel's maple tree as a test oracle: regenerate the committed traces, or run a campaign.
#
#   scripts/kernel-oracle.sh regen            # rewrite tests/kernel-traces/ (fixed seeds; the
#                                             # committed tall tree has 30,000 ranges, the
#                                             # campaign's 100,500)
#   scripts/kernel-oracle.sh campaign SEED    # a fresh campaign (about 2.2 million ops)
#   scripts/kernel-oracle.sh campaign SEED N  # N rounds instead of the default 8
#
# The oracle is the kernel's own lib/maple_tree.c built in userspace by
# ../shared/kernel-oracle/build.sh. Point KERNEL_ORACLE at its trace_debug binary, or set
# ORACLE_DIR to the directory build.sh was (or is to be) run with (default /tmp/kernel-oracle);
# it is built there if missing. Nothing of the kernel goes into the repository: only the
# scripts and the answers the kernel printed.
#
# A campaign generates scripts of every kind (small, wide, alloc, cursor, tall, quirks) from
# SEED, runs each through the oracle and through this crate (maple-tools' kernel_oracle), and
# prints per-family figures and every difference that is not a documented one. Exit status 1
# if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/kernel-oracle-bin.sh
ORACLE=${KERNEL_ORACLE:-$(oracle_bin trace_debug)}
cargo build --release -p maple-tools --bin kernel_oracle >&2
GEN=${CARGO_TARGET_DIR:-target}/release/kernel_oracle

case "${1:-}" in
regen)
    out=tests/kernel-traces
    rm -f "$out"/*.ops "$out"/*.kernel
    mkdir -p "$out"
    # name seed kind ops
    while read -r name seed kind ops; do
        "$GEN" gen "$seed" "$kind" "$ops" > "$out/$name.ops"
        "$ORACLE" < "$out/$name.ops" > "$out/$name.kernel"
    done <<'LIST'
quirks 1 quirks 0
small 101 small 8000
wide 102 wide 6000
alloc 103 alloc 8000
cursor 104 cursor 6000
tall 105 tall 40000
LIST
    "$GEN" check $(for f in "$out"/*.ops; do echo "$f" "${f%.ops}.kernel"; done)
    du -ch "$out"/* | tail -1
    ;;
campaign)
    seed=${2:?seed}
    rounds=${3:-8}
    dir=$(mktemp -d "${TMPDIR:-/tmp}/kernel-oracle-campaign.XXXXXX")
    pairs=()
    for ((r = 0; r < rounds; r++)); do
        for spec in small:100000 wide:60000 alloc:60000 cursor:40000 tall:134000 quirks:0; do
            kind=${spec%%:*} ops=${spec#*:}
            s=$((seed * 1000 + r * 10 + ${#pairs[@]} % 10))
            f="$dir/$kind-$r"
            "$GEN" gen "$s" "$kind" "$ops" > "$f.ops"
            "$ORACLE" < "$f.ops" > "$f.kernel"
            pairs+=("$f.ops" "$f.kernel")
        done
    done
    echo "campaign seed $seed, $rounds rounds, scripts in $dir"
    "$GEN" check "${pairs[@]}"
    ;;
*)
    sed -n '2,9p' "$0" >&2
    exit 2
    ;;
esac
