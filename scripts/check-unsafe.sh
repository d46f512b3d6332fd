#!/usr/bin/env bash
# Fails if `unsafe` (a block, fn, impl or trait) appears in src/ outside the three files allowed to
# hold it: src/tree/node.rs (raw nodes), src/tree/node/slab.rs (their memory) and src/entry.rs (entry
# words). Comments, doc comments and
# string literals are ignored, and so are lint attributes such as `#![deny(unsafe_code)]`
# (`unsafe_code`/`unsafe_op_in_unsafe_fn` are not the keyword). With `--count`, prints the
# per-file number of `unsafe` keywords and of `unsafe {` blocks instead (comments stripped) and always succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed=("src/tree/node.rs" "src/tree/node/slab.rs" "src/entry.rs")
# Only the tree and the crate root files are checked: `src/mm` and `src/poll` are another layer.
scope=(src/tree src/entry.rs src/lib.rs src/error.rs src/migration.rs src/loom_knobs.rs src/sync.rs)

# Prints `line<TAB>code` for every line of a Rust file, with comments and string literals blanked.
strip() {
  awk '
    BEGIN { inblock = 0 }
    {
      line = $0; out = ""; i = 1; n = length(line)
      while (i <= n) {
        c = substr(line, i, 1); c2 = substr(line, i, 2)
        if (inblock) {
          if (c2 == "*/") { inblock = 0; i += 2 } else { i++ }
          continue
        }
        if (c2 == "//") break
        if (c2 == "/*") { inblock = 1; i += 2; continue }
        if (c == "\"") {
          i++
          while (i <= n && substr(line, i, 1) != "\"") {
            if (substr(line, i, 1) == "\\") i++
            i++
          }
          i++; out = out "\"\""; continue
        }
        out = out c; i++
      }
      printf "%d\t%s\n", NR, out
    }' "$1"
}

count=0
[ "${1:-}" = "--count" ] && count=1
status=0
while IFS= read -r f; do
  hits=$(strip "$f" | grep -E '(^|[^A-Za-z0-9_])unsafe([^A-Za-z0-9_]|$)' || true)
  if [ "$count" = 1 ]; then
    kw=$(printf '%s' "$hits" | grep -oE '(^|[^A-Za-z0-9_])unsafe([^A-Za-z0-9_]|$)' | grep -c . || true)
    blocks=$(printf '%s' "$hits" | grep -oE 'unsafe *\{' | grep -c . || true)
    printf '%-28s keywords %3s  blocks %3s\n' "$f" "$kw" "$blocks"
    continue
  fi
  for a in "${allowed[@]}"; do [ "$f" = "$a" ] && continue 2; done
  if [ -n "$hits" ]; then
    while IFS=$'\t' read -r ln code; do
      echo "check-unsafe: $f:$ln: unsafe outside node.rs, node/slab.rs and entry.rs: $(echo "$code" | sed 's/^ *//')"
    done <<< "$hits"
    status=1
  fi
done < <(find "${scope[@]}" -name '*.rs' 2>/dev/null | sort)
if [ "$count" = 0 ] && [ "$status" = 0 ]; then
  echo "check-unsafe: unsafe only in ${allowed[*]}"
fi
exit $status
