#!/usr/bin/env python3
"""Turns benches/modes.rs's alternated run (target/bench-results/modes.json) into the small-tree
table of BENCHMARKS.md and its chart, docs/small-trees-chart.svg.

Every row of modes.json holds one workload at one size: the best round's ns of the three
contenders (the tree written through `exclusive()`, the same through the lock, `BTreeMap` used as
a range map) and the medians of the rounds' ratios. The goals are issue 38's: exclusive ÷
`BTreeMap` at or below 1.0 on every row from 10 to 10,000 ranges, RCU ÷ exclusive at or below 1.3
on every write row, and the mapped copy of the 135-range fork tree at or below 0.5x the range
map's clone. The chart is a grid, a row per workload and a column per size, each cell the
median ratio, green where the goal is met and red, darker the further, where it is not.

Usage: python3 scripts/small-trees-report.py [--modes FILE] [--md FILE] [--svg FILE] [--meta TEXT]
"""

import argparse
import json
import math
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (workload, label, goal of exclusive ÷ BTreeMap or None, a write row: RCU ÷ exclusive ≤ 1.3)
ROWS = [
    ("lookup_hit", "lookup, stored index", 1.0, False),
    ("lookup_miss", "lookup, gap index", 1.0, False),
    ("build", "in-order build, per range", 1.0, True),
    ("iterate", "full iteration, per range", 1.0, False),
    ("iterate_rev", "iteration from the back, per range", 1.0, False),
    ("random_store", "random ranges 1-64 long, per store", 1.0, True),
    ("erase_half", "erase every second range", 1.0, True),
    ("erase_entry", "take out every second range with its entry", 1.0, True),
    ("gap_rev", "empty_area_rev, size 3", 1.0, False),
    ("fork_map", "mapped copy (dup_map; clone + values_mut)", 1.0, False),
    ("create_drop", "tree made and dropped (n: 0 empty, 1 one range)", None, False),
    ("fork_kernel", "kernel fork shape (dup + exact fits)", None, False),
    ("fork135_old", "old bench_forking (135 in-order stores)", None, False),
]
RCU_GOAL = 1.3
FORK_GOAL = 0.5  # fork_map at 135 ranges
GOAL_SIZES = (10, 100, 1_000, 10_000)


def goal_of(workload, n):
    """The goal of exclusive ÷ BTreeMap for this row, or None where the issue sets none."""
    if workload == "fork_map" and n == 135:
        return FORK_GOAL
    for key, _, goal, _ in ROWS:
        if key == workload and n in GOAL_SIZES:
            return goal
    return None


def is_write(workload):
    return any(key == workload and write for key, _, _, write in ROWS)


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:.1f} µs"
    if ns >= 100:
        return f"{ns:,.0f}"
    return f"{ns:.1f}"


def verdict(ratio, goal):
    if goal is None:
        return ""
    shown = round(ratio, 2)
    return "meets" if shown <= goal else f"misses ({shown / goal:.2f}x the goal)"


def ordered(rows):
    order = {key: i for i, (key, _, _, _) in enumerate(ROWS)}
    return sorted(rows, key=lambda r: (order.get(r["workload"], len(order)), r["n"]))


def label_of(workload):
    return next((label for key, label, _, _ in ROWS if key == workload), workload)


def markdown(rows):
    """The table: each contender's best round, the medians of the rounds' ratios with their
    ranges, and the verdicts against the goals."""
    out = ["| workload | n | exclusive ns | RCU ns | BTreeMap ns | exclusive ÷ BTreeMap | rounds' range "
           "| goal | verdict | RCU ÷ exclusive | rounds' range | verdict (≤ 1.3, writes) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for r in ordered(rows):
        w, n = r["workload"], r["n"]
        goal = goal_of(w, n)
        rcu_goal = RCU_GOAL if is_write(w) and n in GOAL_SIZES else None
        out.append(f"| {label_of(w)} | {n:,} | {fmt_ns(r['exclusive_ns'])} | {fmt_ns(r['rcu_ns'])} | "
                   f"{fmt_ns(r['btree_ns'])} | {r['vs_btree']:.2f} | "
                   f"{r['vs_btree_min']:.2f}–{r['vs_btree_max']:.2f} | {'' if goal is None else f'≤ {goal}'} | "
                   f"{verdict(r['vs_btree'], goal)} | {r['ratio']:.2f} | {r['ratio_min']:.2f}–{r['ratio_max']:.2f} | "
                   f"{verdict(r['ratio'], rcu_goal)} |")
    met = [(r, g) for r in rows for g in [goal_of(r["workload"], r["n"])] if g is not None]
    rcu = [r for r in rows if is_write(r["workload"]) and r["n"] in GOAL_SIZES]
    out.append("")
    out.append(f"Rows meeting exclusive ÷ `BTreeMap` goals: {sum(round(r['vs_btree'], 2) <= g for r, g in met)} "
               f"of {len(met)}; write rows meeting RCU ÷ exclusive ≤ {RCU_GOAL}: "
               f"{sum(round(r['ratio'], 2) <= RCU_GOAL for r in rcu)} of {len(rcu)}.")
    return "\n".join(out) + "\n"


def color(ratio, goal):
    """Green at or below the goal; from pale to dark red as the ratio climbs to 8x the goal."""
    if goal is None:
        return "#e8e8e8"
    if round(ratio, 2) <= goal:
        return "#9fd89f" if ratio > goal * 0.75 else "#5cb85c"
    t = min(math.log(ratio / goal) / math.log(8), 1.0)
    r, g, b = 255, int(214 - 170 * t), int(204 - 170 * t)
    return f"#{r:02x}{g:02x}{b:02x}"


def svg(rows, path, meta):
    sizes = sorted({r["n"] for r in rows})
    by = {(r["workload"], r["n"]): r for r in rows}
    workloads = [key for key, _, _, _ in ROWS if any(key == r["workload"] for r in rows)]
    panels = [("exclusive ÷ BTreeMap (goal ≤ 1.0 from 10 to 10,000; fork_map at 135: ≤ 0.5)",
               "vs_btree", goal_of),
              ("RCU ÷ exclusive (write rows: goal ≤ 1.3)", "ratio",
               lambda w, n: RCU_GOAL if is_write(w) and n in GOAL_SIZES else None)]
    left, cell_w, cell_h, top = 330, 64, 20, 70
    width = left + cell_w * len(sizes) + 20
    parts = []
    y = top
    for title, field, goal in panels:
        parts.append(f'<text x="{left}" y="{y}" font-size="12" font-weight="bold">{esc(title)}</text>')
        y += 8
        for i, n in enumerate(sizes):
            parts.append(f'<text x="{left + cell_w * i + cell_w / 2}" y="{y + 12}" font-size="10" '
                         f'text-anchor="middle">n = {n:,}</text>')
        y += 18
        for w in workloads:
            parts.append(f'<text x="{left - 8}" y="{y + 14}" font-size="11" text-anchor="end">{esc(label_of(w))}</text>')
            for i, n in enumerate(sizes):
                r = by.get((w, n))
                if r is None:
                    continue
                v, g = r[field], goal(w, n)
                x = left + cell_w * i
                parts.append(f'<rect x="{x + 1}" y="{y + 1}" width="{cell_w - 2}" height="{cell_h - 2}" '
                             f'fill="{color(v, g)}"><title>{esc(label_of(w))}, n = {n:,}: {v:.2f}</title></rect>')
                parts.append(f'<text x="{x + cell_w / 2}" y="{y + 14}" font-size="11" '
                             f'text-anchor="middle">{v:.2f}</text>')
            y += cell_h
        y += 24
    height = y + 10
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" viewBox="0 0 {width} {height}">',
            f'<rect width="{width}" height="{height}" fill="white"/>',
            f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">'
            f'Small trees: the maple tree timed alternately with BTreeMap (median of rounds\' ratios)</text>',
            f'<text x="{width / 2}" y="40" text-anchor="middle" font-size="11">green: goal met; red: missed '
            f'(darker: further); grey: no goal set. Below 1, the maple tree is faster.</text>',
            f'<text x="{width / 2}" y="55" text-anchor="middle" font-size="11">{esc(meta)}</text>']
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(head + parts + ["</svg>"]) + "\n")


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default=os.path.join(ROOT, "target", "bench-results", "modes.json"))
    ap.add_argument("--md", default=None, help="write the table here (default: standard output)")
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "small-trees-chart.svg"))
    ap.add_argument("--meta", default="", help="a line under the chart's title: commit, date, rounds")
    args = ap.parse_args()
    with open(args.modes) as f:
        rows = json.load(f)
    table = markdown(rows)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table)
    else:
        print(table, end="")
    svg(rows, args.svg, args.meta)


if __name__ == "__main__":
    main()
