#!/usr/bin/env python3
"""Print auto against the tuning seeds' choice on the pricing problem's seeds
101-150 (the files beside this one), as table.py one folder up does for
seeds 1-10.

    python3 studies/auto/results/pricing-seeds-101-150/table.py

grid-LAW.jsonl: the grid tuned on seeds 1001-1003 (the same choices as
studies/pricing/results/gap.jsonl), each target's choice run on seeds
101-150; auto-LAW.jsonl: auto on the same seeds, one summary per gap.
"""
import gzip
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def lines(name):
    with gzip.open(os.path.join(HERE, name + ".gz"), "rt") as f:
        yield from f


def comparator(grid, i):
    """The setting the tuning seeds chose for target i (the smallest median
    over them of the steps after which the gap stays below it) and its
    passage on the reported seeds."""
    rows = [r for r in grid["tuning"]["settings"] if r["stays_below"][i] is not None]
    inf = float("inf")
    best = min(rows, key=lambda r: (r["stays_below"][i], r["score"] if r["score"] is not None else inf))
    for r in grid["per_target"][i]["stays_below"]["methods"]:
        if r["setting"] == best["setting"]:
            return best, r["samples"]
    for m in grid["methods"]:
        if m["setting"] == best["setting"]:
            return best, m["stays_below"][i]
    return best, None


def setting(s):
    out = s["method"]
    if s.get("L") is not None:
        out += f" L={s['L']}"
    out += f" step={s['step']:g}"
    if s.get("decay"):
        out += f" t0={s['decay']:g}"
    if s.get("d1"):
        out += f" D1={s['d1']}"
    return out


def fmt(x):
    return "—" if x is None else f"{x:.3g}"


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
