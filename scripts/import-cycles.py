#!/usr/bin/env python3
"""Fails if the modules of a crate import each other in a circle.

For each crate of the workspace and of its side packages (the libraries and binaries under
src/, crates/*/src/ and loom-tests/src/, and every test, bench, example and fuzz target that
declares modules), every `use` of a path inside the
crate (`crate::`, `super::`, `self::`, or a module declared beside the file), and every such
path written in code (`crate::select::f()`), becomes an arrow
from the importing file to the file of the module named, resolved as far as the path names
modules (a name re-exported by a module points at that module, not at where it is defined).
An arrow from a module to one of its ancestors (`use super::X` in a child) runs back up the
module tree: it is counted and listed with --verbose, not treated as a circle, because a
parent holds its children's shared definitions. Any other circle of arrows (a strongly
connected set of two or more files) is an error.

Usage: scripts/import-cycles.py [--verbose] [CRATE_SRC_DIR_OR_ROOT_FILE ...]
"""
import os
import re
import sys

USE_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M | re.S)
# A path written in code (`crate::select::f(..)`, `super::node::Node`), outside `use` lines.
PATH_RE = re.compile(r"\b(?:crate|super|self)(?:::\w+)+")
MOD_RE = re.compile(r"^\s*((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
PATH_ATTR_RE = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def module_files(src):
    """Maps module paths (tuples) to files, starting from a crate root: a file, or a directory's
    lib.rs or main.rs. A `#[path = ".."]` module is found where the attribute says (relative to
    the declaring file's directory) and, like a mod.rs, holds its children in its own directory."""
    mods = {}
    if os.path.isfile(src):
        root = src
    else:
        roots = [f for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(src, f))]
        if not roots:
            return mods
        root = os.path.join(src, roots[0])
    owners = {root}  # files whose children sit beside them (crate roots, mod.rs, #[path] files)
    stack = [((), root)]
    while stack:
        path, f = stack.pop()
        if path in mods:
            continue
        mods[path] = f
        base = os.path.basename(f)
        d = os.path.dirname(f)
        if f in owners or base == "mod.rs":
            child_dir = d
        else:
            child_dir = os.path.join(d, base[:-3])
        for attrs, name in MOD_RE.findall(strip_comments(open(f, encoding="utf-8").read())):
            at = PATH_ATTR_RE.search(attrs)
            if at:
                cands = [os.path.normpath(os.path.join(d, at.group(1)))]
                owners.add(cands[0])
            else:
                cands = [os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")]
            for cand in cands:
                if os.path.exists(cand):
                    stack.append((path + (name,), cand))
                    break
    return mods


def crate_roots(root):
    """Every crate of the workspace and its side packages that has modules to check: the
    library or binary of each src/ directory, each binary under src/bin/, and each test, bench,
    example and fuzz target file."""
    out = []
    for pkg in ["."] + sorted(
        os.path.join(top, c)
        for top in ("crates",)
        for c in os.listdir(os.path.join(root, top))
        if os.path.isdir(os.path.join(root, top, c))
    ) + ["loom-tests", "fuzz"]:
        p = os.path.normpath(os.path.join(root, pkg))
        if os.path.isdir(os.path.join(p, "src")):
            out.append(os.path.join(p, "src"))
        for sub in ("src/bin", "tests", "benches", "examples", "fuzz_targets"):
            dd = os.path.join(p, sub)
            if os.path.isdir(dd):
                out += sorted(os.path.join(dd, f) for f in os.listdir(dd) if f.endswith(".rs"))
    return out


def expand(tree):
    """Splits a use tree (`a::{b, c::d as e}`) into its paths (lists of segments)."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)
    out = []

    def rec(prefix, t):
        if "{" not in t:
            out.append(prefix + [s for s in t.split("::") if s])
            return
        head, _, rest = t.partition("{")
        body = rest[: rest.rfind("}")]
        pre = prefix + [s for s in head.split("::") if s]
        depth, cur = 0, ""
        for ch in body + ",":
            if ch == "," and depth == 0:
                if cur:
                    rec(pre, cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch

    rec([], tree)
    return out


def resolve(mods, here, segs):
    """The module path a `use` path names, as far as it names modules, or None."""
    segs = [s for s in segs if s]
    if not segs:
        return None
    if segs[0] == "crate":
        cur, rest = (), segs[1:]
    elif segs[0] in ("super", "self"):
        cur, rest = here, segs
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                cur = cur[:-1]
            rest = rest[1:]
    elif here + (segs[0],) in mods:
        cur, rest = here, segs
    else:
        return None  # another crate, std, or a name from the prelude
    for s in rest:
        if cur + (s,) in mods:
            cur = cur + (s,)
        else:
            break
    return cur


def arrows(mods):
    edges = {f: set() for f in mods.values()}
    by_file = {f: p for p, f in mods.items()}
    for f, here in by_file.items():
        text = strip_comments(open(f, encoding="utf-8").read())
        for tree in USE_RE.findall(text):
            for segs in expand(tree):
                target = resolve(mods, here, segs)
                if target is None or target == here:
                    continue
                edges[f].add(mods[target])
        for path in PATH_RE.findall(USE_RE.sub("", text)):
            target = resolve(mods, here, path.split("::"))
            if target is not None and target != here:
                edges[f].add(mods[target])
    return edges, by_file


def cycles(edges):
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]

    def strong(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            strong(v)
    return out


def main():
    args = sys.argv[1:]
    verbose = "--verbose" in args
    srcs = [a for a in args if a != "--verbose"]
    if not srcs:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        srcs = crate_roots(root)
    bad = single = 0
    for src in srcs:
        mods = module_files(src)
        if len(mods) <= 1:
            single += 1  # no module to import another: nothing to check
            continue
        edges, by_file = arrows(mods)
        up = []
        for f, ts in edges.items():
            for t in list(ts):
                if by_file[f][: len(by_file[t])] == by_file[t]:
                    up.append((f, t))
                    ts.discard(t)
        found = cycles(edges)
        rel = lambda f: os.path.relpath(f)
        print(f"import-cycles: {rel(src)}: {len(mods)} modules, "
              f"{sum(map(len, edges.values()))} arrows, {len(up)} back up to an ancestor, "
              f"{len(found)} circles")
        if verbose:
            for f, t in sorted(up):
                print(f"  up: {rel(f)} -> {rel(t)}")
        for comp in found:
            bad += 1
            print("  circle: " + ", ".join(rel(f) for f in comp))
            members = set(comp)
            for f in comp:
                for t in sorted(edges[f] & members):
                    print(f"    {rel(f)} -> {rel(t)}")
    if single:
        print(f"import-cycles: {single} crates of one file (or none), nothing to check")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
