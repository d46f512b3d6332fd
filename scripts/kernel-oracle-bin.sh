# Sourced by the scripts that run the kernel oracle's programs (../shared/kernel-oracle/build.sh
# builds the kernel's own lib/maple_tree.c in userspace; nothing of it goes into the repository).
#
# oracle_bin NAME prints the path of program NAME (trace_debug, bench_slab, ...) under
# $ORACLE_DIR/build (default /tmp/kernel-oracle), building the programs there first if NAME is
# missing. Run from the repository's top directory.
oracle_bin() {
    local dir=${ORACLE_DIR:-/tmp/kernel-oracle}
    if [[ ! -x "$dir/build/$1" ]]; then
        local build=../shared/kernel-oracle/build.sh
        [[ -f "$build" ]] || { echo "no kernel oracle: set ORACLE_DIR (see $0)" >&2; exit 2; }
        bash "$build" "$dir" >&2
    fi
    echo "$dir/build/$1"
}
