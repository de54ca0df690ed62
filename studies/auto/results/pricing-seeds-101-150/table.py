#!/usr/bin/env python3
"""Print auto against the tuning seeds' choice on the pricing problem's seeds
101-150 (the files beside this one), or on the seeds of another folder of
the same files (pricing-seeds-151-200), as table.py one folder up does for
seeds 1-10.

    python3 studies/auto/results/pricing-seeds-101-150/table.py [FOLDER]

grid-LAW.jsonl: the grid tuned on seeds 1001-1003 (the same choices as
studies/pricing/results/gap.jsonl), each target's choice run on the
folder's seeds; auto-LAW.jsonl: auto on the same seeds, one summary per gap.
"""
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The comparator's rule and the tables' formats are the study's (table.py
# one folder up).
sys.path.insert(0, os.path.dirname(HERE))
from table import comparator, fmt, setting  # noqa: E402


FOLDER = sys.argv[1] if len(sys.argv) > 1 else HERE


def lines(name):
    with gzip.open(os.path.join(FOLDER, name + ".gz"), "rt") as f:
        yield from f


print("| law | gap | auto | trials reached | comparator (tuning seeds' choice) | its median | reached | auto / comparator | estimate held where claimed |")
print("|---|---|---:|---|---|---:|---|---:|---|")
for law in ["erlang", "exponential", "hyperexponential"]:
    grid = json.loads(next(lines(f"grid-{law}.jsonl")))
    for line in lines(f"auto-{law}.jsonl"):
        a = json.loads(line)
        gap = float(a["tuning"]["about"].split("gap ")[1].split(":")[0])
        m = a["methods"][0]
        p = m["stays_below"][a["targets"].index(gap)]
        best, cp = comparator(grid, grid["targets"].index(gap))
        ratio = p["median"] / cp["median"] if p["median"] and cp and cp["median"] else None
        claims = [r for r in m.get("auto") or [] if r.get("estimate_held") is not None]
        held = sum(1 for r in claims if r["estimate_held"])
        print(f"| {law} | {gap:g} | {fmt(p['median'])} | {p['trials_reached']}/{a['trials']} | {setting(best['setting'])} | "
              f"{fmt(cp['median'] if cp else None)} | {cp['trials_reached'] if cp else 0}/{grid['trials']} | {fmt(ratio)} | {held}/{len(claims)} |")
