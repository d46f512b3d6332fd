#!/usr/bin/env python3
"""Counts, per public type, the public methods that have a runnable example (a ``` block in
their docs), from rustdoc's JSON output:

    cargo +nightly rustdoc -p maple-tree --lib -- -Z unstable-options --output-format json
    python3 scripts/doc-examples.py [target/doc/maple_tree.json]

The types are every public struct, enum and union of the crate (`MapleTree`, `WriteGuard`,
`Cursor`, `CursorMut`, `Allocator`, `IdAllocator`, `Erased`, `Options`, `Value`, `Error`, ...);
a method counts once per type, from all of the type's inherent impl blocks (trait impls are not
counted). Prints "N of M" per type with methods and in total, then the methods missing an
example; exits 1 if any lacks one."""
import json
import sys


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "target/doc/maple_tree.json"
    with open(path) as f:
        doc = json.load(f)
    idx = doc["index"]
    per_type = {}  # path -> (with example, total)
    missing = []
    for item_id, p in doc["paths"].items():
        if p.get("crate_id") != 0 or p.get("kind") not in ("struct", "enum", "union"):
            continue
        item = idx.get(item_id)
        if item is None or item.get("visibility") != "public":
            continue
        name = "::".join(p["path"][1:]) if len(p["path"]) > 1 else p["path"][0]
        short = p["path"][-1]
        seen = set()
        n = m = 0
        for impl_id in item["inner"][p["kind"]]["impls"]:
            impl = idx[str(impl_id)]["inner"]["impl"]
            if impl.get("trait") is not None:
                continue
            for mid in impl["items"]:
                meth = idx[str(mid)]
                if "function" not in meth["inner"] or meth.get("visibility") != "public":
                    continue
                if meth["name"] in seen:
                    continue
                seen.add(meth["name"])
                m += 1
                if "```" in (meth.get("docs") or ""):
                    n += 1
                else:
                    missing.append(f"{short}::{meth['name']}")
        per_type[short] = (n, m, name)
    total_n = sum(n for n, _, _ in per_type.values())
    total_m = sum(m for _, m, _ in per_type.values())
    width = max(len(t) for t in per_type) if per_type else 0
    for t in sorted(per_type, key=lambda t: (-per_type[t][1], t)):
        n, m, _ = per_type[t]
        if m:
            print(f"{t:<{width}}  {n:>3} of {m:<3}")
    print(f"{'total':<{width}}  {total_n:>3} of {total_m:<3} public methods have an example")
    for name in sorted(missing):
        print("  missing:", name)
    sys.exit(1 if missing else 0)


main()
