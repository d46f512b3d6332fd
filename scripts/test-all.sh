#!/usr/bin/env bash
# Runs every test of the workspace (the tree and the member crates under crates/): formatting,
# lints, unit/integration/doc tests (the fuzz-corpus replays included), the loom models, the
# seeds demo's smoke run, the user examples, a short run of the developer tools
# (crates/maple-tools), a compile of the benchmarks, and each published crate packaged and
# tested from its unpacked `.crate`. README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s ==\n' "$*"; }

step "cargo fmt --check (the workspace, loom-tests/ and fuzz/)"
cargo fmt --all --check
(cd loom-tests && cargo fmt --check)
(cd fuzz && cargo fmt --check)

step "cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "unsafe only in the node and entry layers: the crate denies unsafe_code, allowed on those two alone"
grep -qx '#!\[deny(unsafe_code)\]' src/lib.rs || { echo "src/lib.rs lost #![deny(unsafe_code)]"; exit 1; }
allows=$(grep -rln 'allow(unsafe_code)' src | sort | tr '\n' ' ')
[ "$allows" = "src/lib.rs src/tree/mod.rs " ] || { echo "allow(unsafe_code) outside lib.rs/tree/mod.rs: $allows"; exit 1; }
[ "$(grep -c 'allow(unsafe_code)' src/lib.rs src/tree/mod.rs | paste -sd' ')" = "src/lib.rs:1 src/tree/mod.rs:1" ] \
  || { echo "more than the two allowed modules carry allow(unsafe_code)"; exit 1; }

step "no circle of module imports in any crate"
python3 scripts/import-cycles.py

step "cargo doc --no-deps (no warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "without std: the tree builds for bare-metal targets (x86-64; 32-bit RISC-V and Arm, which lack 64-bit atomics), with and without serde"
for target in x86_64-unknown-none riscv32imac-unknown-none-elf thumbv7em-none-eabihf; do
  if rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    cargo build -p maple-tree --no-default-features --target "$target" --quiet
    cargo build -p maple-tree --no-default-features --features serde --target "$target" --quiet
  else
    echo "skipped $target: rustup target add $target (.ci/run installs it)"
  fi
done

step "without std: the tree's tests (lib, integration, doc) with std off on the host"
cargo test -p maple-tree --no-default-features --release --quiet

step "cargo test (unit, property, integration, doc; the short promise stress run included)"
cargo test --workspace --release

step "stress: readers beside a writer on every write path, 30 s per tree kind (STRESS_SECS)"
# The runs above give it 2.5 s per kind; the dropped-entry race (tests/reclaim_order.rs) needed about 8.
STRESS_SECS="${CI_STRESS_SECS:-30}" cargo test --release --test stress -- --exact \
  stress_range_tree stress_alloc_tree --test-threads=1 --nocapture

step "cargo test in the debug profile (debug assertions and overflow checks on)"
cargo test --workspace

# Their own target directory: the loom cfgs change every artifact of the workspace.
step "loom models of maple-mm: the per-VMA lock, the uffd event handshake, their broken twins (each must fail)"
RUSTFLAGS="--cfg loom --cfg crossbeam_loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" \
  LOOM_MAX_PREEMPTIONS="${MM_LOOM_MAX_PREEMPTIONS:-3}" RUST_BACKTRACE=0 \
  cargo test --release -p maple-mm --test loom_vma_lock --test loom_uffd_event -- --test-threads=1 --nocapture

step "loom models of maple-poll: the wake-up handshake, a file's lifetime across poll, their broken twins (each must fail)"
RUSTFLAGS="--cfg loom --cfg crossbeam_loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" \
  LOOM_MAX_PREEMPTIONS="${POLL_LOOM_MAX_PREEMPTIONS:-3}" RUST_BACKTRACE=0 \
  cargo test --release -p maple-poll --test loom_poll_wake --test loom_file_ref -- --test-threads=1 --nocapture

if [ -d loom-tests ]; then
  step "loom models: single writes, sequences of writes, mutants (each prints its executions and time)"
  (cd loom-tests && RUSTFLAGS="--cfg loom --cfg crossbeam_loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" \
    RUST_BACKTRACE=0 cargo test --release -- --test-threads=1 --nocapture)
  step "ordering mutants: each Release/Acquire row of src/tree/node/ord.rs weakened to Relaxed must fail a loom model"
  scripts/ordering-mutants.sh
fi

step "seeds demo (quick mode): one section per patch, both verdicts on every row, lines fit 100 columns"
out=$(cargo run --release --quiet -p maple-seeds -- --quick)
printf '%s\n' "$out"
# Each patch's section (from its "== title ==" line to the next one) must have its rows (at
# least: 2 layouts for appends and for __mt_dup; 2 cost settings; poll2 and poll1 x 2
# strategies), each ending in the ratio, its min-max, the patch's figure, the direction verdict
# and the magnitude verdict (with the letter of its cause, if any).
for want in "2 maple_tree: optimize mas_wr_append(), also improve duplicating VMAs" \
            "2 fork: use __mt_dup() to duplicate maple tree in dup_mmap()" \
            "2 userfaultfd: early return in dup_userfaultfd()" \
            "4 fs/select.c: batch user writes in do_sys_poll"; do
  n=${want%% *} title=${want#* }
  heads=$(printf '%s\n' "$out" | grep -cxF "== $title ==" || true)
  [ "$heads" -eq 1 ] || { echo "seeds: $heads headings \"== $title ==\" (want 1)"; exit 1; }
  rows=$(printf '%s\n' "$out" | awk -v t="== $title ==" '$0 == t { s = 1; next } /^== / { s = 0 }
    s && /[0-9]x +[0-9.]+-[0-9.]+ +([0-9.]+x|> 1) +(reproduced|not reproduced) +(within|larger|smaller|no figure)( \([a-z]\))?$/' | wc -l)
  [ "$rows" -ge "$n" ] || { echo "seeds: $rows of $n rows with both verdicts for \"$title\""; exit 1; }
done
printf '%s\n' "$out" | grep -q '^summary: [0-9]* rows; direction reproduced in ' \
  || { echo "seeds: no summary line"; exit 1; }
wide=$(printf '%s\n' "$out" | awk 'length($0) > 100' | wc -l)
[ "$wide" -eq 0 ] || { echo "seeds: $wide lines wider than 100 columns"; exit 1; }
if printf '%s\n' "$out" | grep -q $'\e'; then echo "seeds: escape codes in output to a pipe"; exit 1; fi
cargo run --release --quiet -p maple-seeds -- --quick --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
rows, s, st = d["rows"], d["summary"], d["settings"]
assert rows and s["rows"] == len(rows), "summary row count"
assert all(r["direction"] and r["magnitude"] for r in rows), "both verdicts per row"
assert s["direction_reproduced"] == sum(r["direction"] == "reproduced" for r in rows)
assert len(s["patches"]) == 4 and all(p["rows"] > 0 for p in s["patches"]), "rows per patch"
assert st["repetitions"] >= 1 and st["maps"] and "commit" in st, "settings"
' || { echo "seeds: --format json lacks its summary, settings or a verdict per row"; exit 1; }

step "user examples (examples/guest_memory, id_allocator, symbolizer, readers_beside_writer)"
for ex in guest_memory id_allocator symbolizer readers_beside_writer; do
  cargo run --release --quiet --example "$ex"
done

step "developer tools (crates/maple-tools): each program once on a small input (they assert what they measure)"
cargo build --release --quiet -p maple-tools
bin=${CARGO_TARGET_DIR:-target}/release
for w in build lookup_hit lookup_miss random_store erase_half iterate iterate_rev gap gap_rev \
         fork_old fork_new dup dup_drop slot_store node_store rewrite; do
  for m in maple maple-rcu btreemap; do
    case "$m:$w" in btreemap:gap | btreemap:fork_* | btreemap:dup* | btreemap:slot_store) continue ;; esac
    "$bin/profile" "$w" "$m" 2000 >/dev/null
  done
done
"$bin/kernel_workloads" --quick >/dev/null
"$bin/memory" 10000 >/dev/null
for op in none build btree_build fork fork_noval erase random gap load; do "$bin/op_probe" "$op" >/dev/null; done
"$bin/perf_probe" 10000 >/dev/null
"$bin/iter_probe" iter >/dev/null
"$bin/iter_probe" load >/dev/null
# The kernel oracle's checker on the committed traces (tests/kernel_oracle.rs replays them too).
"$bin/kernel_oracle" check $(for f in tests/kernel-traces/*.ops; do echo "$f" "${f%.ops}.kernel"; done) >/dev/null

if [ -d benches ] && ls benches/*.rs >/dev/null 2>&1; then
  step "benchmarks compile"
  cargo bench --workspace --no-run
fi

step "every target compiles off Linux (FreeBSD): the Linux-only parts are gated"
if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-freebsd; then
  cargo check --workspace --all-targets --quiet --target x86_64-unknown-freebsd
else
  echo "skipped: rustup target add x86_64-unknown-freebsd (.ci/run installs it)"
fi

step "each published crate: cargo publish --dry-run, and cargo test on the unpacked .crate"
./scripts/package-check.sh

step "all tests passed"
