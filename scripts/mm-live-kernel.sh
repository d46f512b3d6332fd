#!/usr/bin/env bash
# The long live-kernel differential: `Mm` against the running Linux kernel, op by
# op (tests/mm_live_kernel.rs), over SEEDS seeds of OPS ops each (default 8 x 2600 = 20,800 ops;
# even seeds touch pages, odd seeds never do), plus the scripted reproducers. Prints the
# agreement per op kind and every mismatch; fails unless every op agreed.
#
#   scripts/mm-live-kernel.sh [SEEDS [OPS [FIRST_SEED]]]
#
# CARGO_TARGET_DIR is honoured. Linux only; where fork or the fixed reservation is refused the
# test prints why and passes.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-8}
ops=${2:-2600}
first=${3:-1}
echo "kernel: $(uname -sr); seeds $first..$((first + seeds - 1)) x $ops ops"
MM_LIVE_SEEDS=$seeds MM_LIVE_OPS=$ops MM_LIVE_SEED0=$first \
    cargo test --release -p maple-mm --test mm_live_kernel -- --nocapture --test-threads=1
