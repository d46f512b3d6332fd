#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each, one after another (one fuzzer at a time: the
# machines have 2 shared cores), and prints per target: executions, coverage (libFuzzer's final
# cov/ft), new crash artifacts, and the wall time.
#
#   fuzz/run-all.sh SECONDS [TARGET...]
#
# Needs nightly and cargo-fuzz (`cargo install cargo-fuzz`). Uses AddressSanitizer
# (cargo-fuzz's default) and release optimisations. The working corpus is
# fuzz/corpus-work/<target> (not committed), seeded from the committed fuzz/corpus/<target>;
# crash inputs land in fuzz/artifacts/<target>/. Logs: fuzz/logs/<target>.log.
set -uo pipefail
cd "$(dirname "$0")"

secs="${1:?usage: run-all.sh SECONDS [TARGET...]}"
shift
if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^maple-tree-fuzz$')
fi

cargo +nightly fuzz build -O >/dev/null 2>&1 || { cargo +nightly fuzz build -O; exit 1; }
mkdir -p logs
printf '%-12s %12s %8s %8s %8s %8s\n' target execs cov ft crashes seconds
status=0
for t in "${targets[@]}"; do
  mkdir -p "corpus-work/$t" "artifacts/$t"
  before=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  start=$(date +%s)
  cargo +nightly fuzz run -O "$t" "corpus-work/$t" "corpus/$t" -- \
    -max_total_time="$secs" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 -max_len=1024 -len_control=20 \
    >"logs/$t.log" 2>&1
  rc=$?
  end=$(date +%s)
  after=$(ls "artifacts/$t" 2>/dev/null | wc -l)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "logs/$t.log" | tail -1)
  covline=$(grep -E '^#[0-9]+' "logs/$t.log" | grep -E 'cov: ' | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$covline")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$covline")
  printf '%-12s %12s %8s %8s %8s %8s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$((after - before))" "$((end - start))"
  if [ "$rc" -ne 0 ] || [ "$after" -ne "$before" ]; then
    status=1
    grep -m1 -A3 'panicked' "logs/$t.log" | sed 's/^/    /'
    ls -t "artifacts/$t" | head -3 | sed "s|^|    artifact: fuzz/artifacts/$t/|"
  fi
done
exit "$status"
