#!/usr/bin/env python3
"""Turns the benchmark output into BENCHMARKS.md's tables and chart.

Reads criterion's results (target/criterion/**/new/{benchmark,sample}.json) and the concurrency
and memory results (target/bench-results/concurrent.json, memory.md); writes
target/bench-results/report.md (markdown tables: ns per operation, ratios against each peer,
the SPEC §1.4 goals, the kernel ports, seed 001 and the fork curve) and docs/bench-chart.svg
(every peer's time relative to the maple tree at the largest size measured).

Per benchmark, the figure is the median over criterion's samples of (sample time / iterations),
divided by the benchmark's element count when it declares one: nanoseconds per operation.

Usage: python3 scripts/bench-report.py [--criterion DIR] [--out FILE] [--svg FILE]
"""

import argparse
import glob
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PEERS = ["maple", "maple-rcu", "maple-range", "btreemap", "rangemap", "scc", "skiplist"]
WORKLOADS = [
    ("lookup_hit", "point lookup, stored index"),
    ("lookup_miss", "point lookup, gap index"),
    ("build", "in-order build, per range"),
    ("iterate", "full iteration, per range"),
    ("random_store", "random ranges (1-64 long in [0, 2^32)), per store"),
    ("erase_half", "erase every second range, per erase"),
    ("gap_rev", "empty_area_rev size 3 in a random 10,000-wide window"),
]

# SPEC §1.4's table: the C tree, the peers and the goal, in ns/op on one of these machines.
# "ratio goal" = goal / btreemap, to judge a run on a loaded machine by ratios alone.
SPEC = [
    # key, label, C, btreemap, rangemap, scc, skiplist, goal
    ("build", "in-order store of all ranges", 344, 280, 310, 136, 198, 210),
    ("lookup_hit", "load at a random stored index", 431, 608, 706, 902, 1510, 320),
    ("lookup_miss", "load at a random gap index", 416, 615, 625, None, None, 310),
    ("fork_old", "old bench_forking: 135 stores into a fresh tree", 28759, 12233, 14054, None, None, 12000),
    ("fork_new", "new bench_forking: dup + 135 exact fits (others: clone)", 882, 1380, 1270, None, None, 660),
    ("iterate", "iteration, per entry", 18.9, 13.2, 16.2, 6.3, 48.1, 10),
    ("erase_half", "erase every second range", 257, 202, 363, None, None, 200),
    ("random_store", "1,000,000 random ranges of length 1-64", 1166, 803, 846, None, None, 800),
    ("gap_rev", "empty_area_rev, size 3, random 10,000-wide window", 662, 647, 17497, None, None, 500),
]

# The kernel's fork() gains from __mt_dup (kernel-maple.md §6.5), by VMA count.
# Short workload names for the chart.
SHORT = {
    "lookup_hit": "lookup, stored index",
    "lookup_miss": "lookup, gap index",
    "build": "in-order build",
    "iterate": "full iteration, per range",
    "random_store": "random range stores",
    "erase_half": "erase every second range",
    "gap_rev": "empty_area_rev (size 3)",
}

KERNEL_FORK_GAIN = {21: 2.19, 121: 8.92, 1621: 44.64, 25621: 53.74}


def load_criterion(crit_dir):
    """{full_id: (group, function, value, ns_per_op, ns_min)}"""
    out = {}
    for bj in glob.glob(os.path.join(crit_dir, "**", "new", "benchmark.json"), recursive=True):
        d = os.path.dirname(bj)
        try:
            b = json.load(open(bj))
            s = json.load(open(os.path.join(d, "sample.json")))
        except (OSError, ValueError):
            continue
        per_iter = [t / i for t, i in zip(s["times"], s["iters"]) if i > 0]
        if not per_iter:
            continue
        elems = 1
        tp = b.get("throughput") or {}
        if "Elements" in tp:
            elems = tp["Elements"]
        med = statistics.median(per_iter) / elems
        mn = min(per_iter) / elems
        out[b["full_id"]] = (b["group_id"], b["function_id"], b.get("value_str"), med, mn)
    return out


def fmt_ns(x):
    if x is None:
        return ""
    if x >= 1e6:
        return f"{x / 1e6:.2f} ms"
    if x >= 1e4:
        return f"{x / 1e3:.1f} µs"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.1f}"


def with_unit(x):
    f = fmt_ns(x)
    return f if f.endswith("s") else f + " ns"


def fmt_ratio(x):
    return "" if x is None else f"{x:.2f}"


def peer_table(res, lines):
    sizes = sorted({int(v[2]) for v in res.values() if v[0].startswith("peers/") and v[2] and v[2].isdigit()})
    lines.append("### Peers: ns per operation (median of samples), and maple ÷ peer\n")
    lines.append("`maple` = allocation tree written through `exclusive()`; `maple-rcu` = the same tree "
                 "written through the lock (readers allowed); `maple-range` = plain range tree. "
                 "A ratio below 1 means the maple tree is faster.\n")
    hdr = "| workload | n | " + " | ".join(PEERS) + " | ÷ btreemap | ÷ rangemap | ÷ scc | ÷ skiplist |"
    lines.append(hdr)
    lines.append("|---|---:|" + "---:|" * (len(PEERS) + 4))
    for key, label in WORKLOADS:
        for n in sizes:
            vals = {p: res.get(f"peers/{key}/{p}/{n}") for p in PEERS}
            if not any(vals.values()):
                continue
            ns = {p: (v[3] if v else None) for p, v in vals.items()}
            m = ns["maple"]
            ratios = []
            for p in ["btreemap", "rangemap", "scc", "skiplist"]:
                ratios.append(fmt_ratio(m / ns[p]) if m and ns[p] else "")
            lines.append(f"| {label} | {n:,} | " + " | ".join(fmt_ns(ns[p]) for p in PEERS) + " | "
                         + " | ".join(ratios) + " |")
    lines.append("")


def spec_table(res, lines):
    big = max([int(v[2]) for v in res.values() if v[0].startswith("peers/") and v[2] and v[2].isdigit()] or [0])
    lines.append(f"### SPEC §1.4 goals (this run at n = {big:,})\n")
    lines.append("Absolute goals are in the SPEC machine's ns; this machine's load moves absolute figures "
                 "by 2-5x, so the verdict uses the ratio to `BTreeMap` measured in this run against the "
                 "SPEC's goal ÷ its BTreeMap figure.\n")
    lines.append("| workload | maple ns | btreemap ns | maple ÷ btreemap | goal ÷ btreemap (SPEC) | verdict | "
                 "SPEC goal ns | SPEC C ns |")
    lines.append("|---|---:|---:|---:|---:|---|---:|---:|")
    for key, label, c, bt, rm, sc, sk, goal in SPEC:
        if key.startswith("fork_"):
            form = "old" if key == "fork_old" else "new"
            m = res.get(f"peers/fork135/{form}/maple")
            b = res.get(f"peers/fork135/{form}/btreemap")
        else:
            m = res.get(f"peers/{key}/maple/{big}")
            b = res.get(f"peers/{key}/btreemap/{big}")
        if not m or not b:
            continue
        r = m[3] / b[3]
        g = goal / bt
        verdict = "meets" if r <= g else f"misses by {100 * (r / g - 1):.0f}%"
        lines.append(f"| {label} | {fmt_ns(m[3])} | {fmt_ns(b[3])} | {r:.2f} | {g:.2f} | {verdict} | "
                     f"{goal:,} | {c:,} |")
    lines.append("")


def kernel_tables(res, lines):
    lines.append("### Kernel benchmark ports (ns per iteration; per entry for the passes)\n")
    lines.append("| benchmark | ns |")
    lines.append("|---|---:|")
    for fid, v in sorted(res.items()):
        if v[0].startswith("kernel/") and not v[0].startswith("kernel/fork_scaling"):
            lines.append(f"| {fid} | {fmt_ns(v[3])} |")
    lines.append("")
    on = res.get("kernel/bench_forking/old_append_on")
    off = res.get("kernel/bench_forking/old_append_off")
    lines.append("### Seed 001: old bench_forking, in-place appends on vs off\n")
    lines.append("| mode | appends off ns | appends on ns | improvement (kernel patch: 12%) |")
    lines.append("|---|---:|---:|---:|")
    for mode, sfx in [("exclusive (the kernel's non-RCU tree)", ""), ("RCU mode", "_rcu")]:
        on = res.get(f"kernel/bench_forking/old_append_on{sfx}")
        off = res.get(f"kernel/bench_forking/old_append_off{sfx}")
        if on and off:
            lines.append(f"| {mode} | {fmt_ns(off[3])} | {fmt_ns(on[3])} | {100 * (1 - on[3] / off[3]):.1f}% |")
    lines.append("")
    lines.append("### Fork curve: dup form vs append form (no validation; drop included)\n")
    lines.append("| entries | append ns/fork | dup ns/fork | dup gain (forks/s) | kernel fork() gain |")
    lines.append("|---:|---:|---:|---:|---:|")
    for n in sorted(KERNEL_FORK_GAIN):
        a = res.get(f"kernel/fork_scaling/append/{n}")
        d = res.get(f"kernel/fork_scaling/dup/{n}")
        if a and d:
            ta, td = a[3] * n, d[3] * n
            lines.append(f"| {n:,} | {fmt_ns(ta)} | {fmt_ns(td)} | {100 * (ta / td - 1):+.1f}% | "
                         f"+{KERNEL_FORK_GAIN[n]}% |")
    lines.append("")


def concurrency_table(path, lines):
    if not os.path.exists(path):
        return
    rows = json.load(open(path))
    lines.append("### Concurrency: reader lookups per second alone and beside one busy writer\n")
    lines.append("`ratio` is wall-clock (the SPEC's measure; on two shared cores it includes the writer "
                 "taking the reader's core), `ratio per CPU` divides by the reader thread's own CPU time.\n")
    lines.append("| map | alone /s | with writer /s | ratio (goal ≥ 0.8) | ratio per CPU | writer rewrites /s |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        lines.append(f"| {r['name']} | {r['alone_per_s']:,.0f} | {r['busy_per_s']:,.0f} | {r['ratio']:.3f} | "
                     f"{r['ratio_cpu']:.3f} | {r['writes_per_s']:,.0f} |")
    lines.append("")


def svg_chart(res, path):
    """Grouped horizontal bars: each peer's ns/op ÷ maple's at the largest size (log scale)."""
    import math
    big = max([int(v[2]) for v in res.values() if v[0].startswith("peers/") and v[2] and v[2].isdigit()] or [0])
    colors = {"maple-rcu": "#9ecae1", "btreemap": "#e6550d", "rangemap": "#31a354",
              "scc": "#756bb1", "skiplist": "#636363"}
    peers = list(colors)
    rows = []
    for key, label in WORKLOADS:
        m = res.get(f"peers/{key}/maple/{big}")
        if not m:
            continue
        bars = []
        for p in peers:
            v = res.get(f"peers/{key}/{p}/{big}")
            if v:
                bars.append((p, v[3] / m[3]))
        rows.append((SHORT.get(key, label), m[3], bars))
    for form in ["old", "new"]:
        m = res.get(f"peers/fork135/{form}/maple")
        if m:
            bars = [(p, res[f"peers/fork135/{form}/{p}"][3] / m[3]) for p in peers
                    if f"peers/fork135/{form}/{p}" in res]
            rows.append((f"fork, {form} form, 135 entries", m[3], bars))
    lo, hi = 0.03, 30.0
    W, left, right = 980, 250, 50
    plot_w = W - left - right
    bar_h, gap = 11, 14
    y = 70
    parts = []

    def xpos(r):
        r = min(max(r, lo), hi)
        return left + plot_w * (math.log10(r) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    for label, mns, bars in rows:
        h = bar_h * max(len(bars), 1)
        parts.append(f'<text x="{left - 8}" y="{y + h / 2 - 2}" text-anchor="end" font-size="12">{esc(label)}</text>')
        parts.append(f'<text x="{left - 8}" y="{y + h / 2 + 11}" text-anchor="end" font-size="10" '
                     f'fill="#555">maple: {esc(with_unit(mns))}</text>')
        for i, (p, r) in enumerate(bars):
            x0, x1 = xpos(1.0), xpos(r)
            xa, xb = min(x0, x1), max(x0, x1)
            by = y + i * bar_h
            parts.append(f'<rect x="{xa:.1f}" y="{by}" width="{max(xb - xa, 1):.1f}" height="{bar_h - 2}" '
                         f'fill="{colors[p]}"><title>{p}: {r:.2f}x maple</title></rect>')
            tx = xb + 3 if r >= 1 else xa - 3
            anchor = "start" if r >= 1 else "end"
            parts.append(f'<text x="{tx:.1f}" y="{by + bar_h - 3}" font-size="9" text-anchor="{anchor}">'
                         f'{r:.2f}</text>')
        y += h + gap
    height = y + 40
    axis = []
    for t in [0.03, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30]:
        x = xpos(t)
        axis.append(f'<line x1="{x:.1f}" y1="60" x2="{x:.1f}" y2="{y}" stroke="{"#000" if t == 1 else "#ddd"}" '
                    f'stroke-width="{1.5 if t == 1 else 1}"/>')
        axis.append(f'<text x="{x:.1f}" y="{y + 14}" font-size="10" text-anchor="middle">{t:g}x</text>')
    legend = []
    lx = left
    for p in peers:
        legend.append(f'<rect x="{lx}" y="{height - 18}" width="12" height="10" fill="{colors[p]}"/>'
                      f'<text x="{lx + 16}" y="{height - 9}" font-size="11">{p}</text>')
        lx += 100
    title = f"Peers' time per operation ÷ the maple tree's, {big:,} ranges [10i, 10i+5]"
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
           f'font-family="sans-serif" viewBox="0 0 {W} {height}">',
           f'<rect width="{W}" height="{height}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">{esc(title)}</text>',
           f'<text x="{W / 2}" y="42" text-anchor="middle" font-size="11">right of 1x: the peer is slower than '
           f'the maple tree (allocation tree, exclusive writer); left: faster. Log scale; one run on a shared '
           f'2-core machine</text>']
    svg += axis + parts + legend + ["</svg>"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(svg) + "\n")


def replace_between(text, tag, body):
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    if begin not in text or end not in text:
        return text
    a = text.index(begin) + len(begin)
    b = text.index(end)
    return text[:a] + "\n" + body.strip("\n") + "\n" + text[b:]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--criterion", default=os.path.join(ROOT, "target", "criterion"))
    ap.add_argument("--results", default=os.path.join(ROOT, "target", "bench-results"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "bench-chart.svg"))
    ap.add_argument("--update", default=None,
                    help="also replace the text between <!-- results:begin --> and <!-- results:end --> "
                         "(and the profile:begin/end pair, from target/bench-results/profile/summary.md) "
                         "in this file, e.g. BENCHMARKS.md")
    a = ap.parse_args()
    res = load_criterion(a.criterion)
    if not res:
        sys.exit(f"no criterion results under {a.criterion}: run cargo bench first")
    lines = []
    spec_table(res, lines)
    peer_table(res, lines)
    kernel_tables(res, lines)
    concurrency_table(os.path.join(a.results, "concurrent.json"), lines)
    mem = os.path.join(a.results, "memory.md")
    if os.path.exists(mem):
        lines.append("### Memory\n")
        # Only the table and its caption (a run through `cargo run` may have captured cargo's
        # progress lines too).
        for l in open(mem):
            if l[:1].isdigit():
                lines.append(l.rstrip("\n") + "\n")
            elif l.startswith("|"):
                lines.append(l.rstrip("\n"))
        lines.append("")
    out = a.out or os.path.join(a.results, "report.md")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    svg_chart(res, a.svg)
    if a.update:
        meta = []
        for name in ["commit", "started"]:
            f = os.path.join(a.results, name)
            if os.path.exists(f):
                meta.append(f"{name}: {open(f).read().strip()}")
        body = ("_" + "; ".join(meta) + "_\n\n" if meta else "") + "\n".join(lines)
        text = replace_between(open(a.update).read(), "results", body)
        prof = os.path.join(a.results, "profile", "summary.md")
        if os.path.exists(prof):
            text = replace_between(text, "profile", open(prof).read())
        with open(a.update, "w") as f:
            f.write(text)
    print("\n".join(lines))
    print(f"\nwrote {out} and {a.svg}", file=sys.stderr)


if __name__ == "__main__":
    main()
