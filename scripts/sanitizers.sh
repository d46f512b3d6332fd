#!/usr/bin/env bash
# Miri, ThreadSanitizer and AddressSanitizer runs (nightly only; not part of CI or scripts/test-all.sh).
#
# Miri interprets the unit tests (`--lib`: tree, mm and poll models, at the Miri sizes chosen by
# `cfg(miri)` in the tests) and the integration tests written for it (`observation`,
# `regressions`, and `stress`, whose `stress_tiny` runs real reader threads against a writer),
# under Tree Borrows. `-Zmiri-permissive-provenance`: node and entry words are plain `u64`s that
# round-trip pointers through exposed provenance (`expose_provenance` /
# `with_exposed_provenance`, in `src/tree/node.rs` and `src/entry.rs`), which Miri accepts but warns
# about without the flag and rejects under `-Zmiri-strict-provenance`. `-Zmiri-ignore-leaks`:
# trees built with `MapleTree::new()` use crossbeam-epoch's global default collector, a static
# that is never dropped, so its bags are still allocated at exit (tests with their own `Collector`
# free everything). Tests Miri cannot run are `#[cfg_attr(miri, ignore = "...")]` with the reason:
# real `poll(2)` on OS descriptors, timed stress and benchmark drivers. Expect tens of minutes.
#
# ThreadSanitizer runs the real-thread stress test (and the single-thread observation tests) on a
# sanitized std (`-Zbuild-std`). crossbeam-epoch's build script detects the sanitizer and replaces
# its fences by acquire loads that TSan understands (`crossbeam_sanitize_thread`), so no
# suppressions are needed.
#
# Both run with `--cfg maple_tree_box_nodes`, which gives every node a `Box` of its own instead
# of a place in its tree's slab (`src/tree/node/slab.rs`), so that a use of one freed node is a use
# of freed memory they report. The chunked slab is compiled in every build, so its own unit tests
# run in that build too (`--lib`). AddressSanitizer (`asan`) runs the unit, soundness, stress and
# reader tests the same way.
#
# Usage: scripts/sanitizers.sh [miri|tsan|asan]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*"; }

what="${1:-all}"

if [ "$what" = all ] || [ "$what" = miri ]; then
  step "Miri (tree borrows): unit tests and Miri-sized integration tests"
  rustup +nightly component add miri rust-src
  MIRIFLAGS="${MIRIFLAGS:--Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-ignore-leaks}" \
    RUSTFLAGS="--cfg maple_tree_box_nodes" cargo +nightly miri test --target-dir target/miri \
    --lib --test observation --test regressions --test stress
fi

if [ "$what" = all ] || [ "$what" = tsan ]; then
  step "ThreadSanitizer: stress and observation tests"
  rustup +nightly component add rust-src
  RUSTFLAGS="-Zsanitizer=thread --cfg maple_tree_box_nodes" RUSTDOCFLAGS="-Zsanitizer=thread" TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}" \
    cargo +nightly test -Zbuild-std --target x86_64-unknown-linux-gnu --target-dir target/tsan \
    --release --test stress --test observation
fi

if [ "$what" = all ] || [ "$what" = asan ]; then
  step "AddressSanitizer: unit, soundness, stress and reader tests, one Box per node"
  RUSTFLAGS="-Zsanitizer=address --cfg maple_tree_box_nodes" RUSTDOCFLAGS="-Zsanitizer=address" \
    cargo +nightly test --target x86_64-unknown-linux-gnu --target-dir target/asan \
    --release --lib --test soundness --test stress --test readers_across_writes
fi

step "sanitizer runs passed"
