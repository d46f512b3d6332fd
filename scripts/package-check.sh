#!/usr/bin/env bash
# Packages each published crate of the workspace as `cargo publish` would (a dry run: nothing is
# uploaded), then runs `cargo test --release` on each unpacked `.crate`, outside the repository,
# so a test that needs a file the package does not carry fails here rather than for a user.
# The member crates' dependency on maple-tree is pointed at the unpacked maple-tree crate.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=${CARGO_TARGET_DIR:-$root/target}

# `cargo publish --workspace` verifies each crate against the others through a local registry
# whose sources cargo unpacks under `$CARGO_HOME/registry/src/-<hash>/` and never unpacks again
# for the same name and version: drop such copies of this workspace's crates left by an earlier
# run (crates.io's own directories are named after their index, not `-<hash>`), or the check
# would build this version against last run's sources.
cargo_home=${CARGO_HOME:-$HOME/.cargo}
for crate in maple-tree maple-mm maple-poll; do
  rm -rf "$cargo_home"/registry/src/-*/"$crate"-0.1.0
done

cargo publish --dry-run --workspace --exclude maple-seeds --exclude maple-tools
cargo package --workspace --exclude maple-seeds --exclude maple-tools --no-verify --quiet

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for crate in maple-tree maple-mm maple-poll; do
  tar xzf "$target/package/$crate-0.1.0.crate" -C "$scratch"
done
for crate in maple-tree maple-mm maple-poll; do
  printf -- '-- cargo test on the unpacked %s crate\n' "$crate"
  # A package drops the path-only dev-dependency of each crate on itself that turns on its
  # experiment knobs for its own tests (`bench-internals`, and the tree's `serde` for its
  # snapshot tests): turned on here instead.
  features=bench-internals
  [ "$crate" = maple-tree ] && features=bench-internals,serde
  (cd "$scratch/$crate-0.1.0" && CARGO_TARGET_DIR="$target" cargo test --release --quiet \
    --features "$features" \
    --config "patch.crates-io.maple-tree.path=\"$scratch/maple-tree-0.1.0\"" 2>&1 |
    grep -E '^(test result|error|failures:|    [a-z_:]+$)' || true
   test "${PIPESTATUS[0]}" -eq 0)
done
