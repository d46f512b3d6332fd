#!/usr/bin/env python3
"""Counts the public methods of the user-facing types that have a runnable example (a ``` block
in their docs), from rustdoc's JSON output:

    cargo +nightly rustdoc -p maple-tree --lib -- -Z unstable-options --output-format json
    python3 scripts/doc-examples.py target/doc/maple_tree.json [--missing]

A method counts once per type (an inherent method of `MapleTree`, `WriteGuard`, `Cursor`,
`CursorMut`, `Allocator`, `IdAllocator`, `Erased`); trait impls are not counted. Exits 1 if any
lacks an example."""
import json, sys

TYPES = ["MapleTree", "WriteGuard", "Cursor", "CursorMut", "Allocator", "IdAllocator", "Erased"]

def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "target/doc/maple_tree.json"
    show = "--missing" in sys.argv
    doc = json.load(open(path))
    idx = doc["index"]
    total = with_ex = 0
    missing = []
    for item in idx.values():
        if item.get("crate_id") != 0 or "struct" not in item.get("inner", {}):
            continue
        name = item.get("name")
        if name not in TYPES:
            continue
        for impl_id in item["inner"]["struct"]["impls"]:
            impl = idx[str(impl_id)]["inner"]["impl"]
            if impl.get("trait") is not None:
                continue
            for mid in impl["items"]:
                m = idx[str(mid)]
                if "function" not in m["inner"] or m.get("visibility") != "public":
                    continue
                total += 1
                if "```" in (m.get("docs") or ""):
                    with_ex += 1
                else:
                    missing.append(f"{name}::{m['name']}")
    print(f"{with_ex} of {total} public methods have an example")
    if show:
        for m in sorted(missing):
            print("  missing:", m)
    sys.exit(1 if missing else 0)

main()
