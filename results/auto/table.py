#!/usr/bin/env python3
"""Print the BENCHMARKS.md tables of the auto method from the results files.

    python3 results/auto/table.py

DRO: auto's runs (results/auto/dro-*.jsonl, one summary per planned gap) against
the paper grid's settings rerun on the harness (results/dro/paper-grid/harness.jsonl):
the best-tuned method at each gap is the lowest median, over every method's
overall-tuned setting and its per-gap settings, of the samples after which the gap
stays at or below the target. Pricing: auto's runs (results/auto/pricing-*.jsonl).
"""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GRID = os.path.join(ROOT, "results", "dro", "paper-grid", "harness.jsonl")
# The paper grid per data set: L in 0..10 and 5 steps for L-SGD, V-MLMC,
# RT-MLMC (165), 5 steps for RU and RR (10); the VR versions again with
# D1 in {1, 10} (350): 525 settings on 3 tuning seeds.
GRID_SETTINGS, GRID_SEEDS = 525, 3


def fmt(x):
    return "—" if x is None else f"{x:.3g}"


def best_tuned(grid, target_index):
    """The lowest stays-below median of any method (overall-tuned or per-gap
    setting), and best-tuned L-SGD's."""
    cands, lsgd = [], []
    for m in grid["methods"]:
        med = m["stays_below"][target_index]["median"]
        if med is not None:
            cands.append((med, m["name"], m["setting"]))
            if m["name"] == "L-SGD":
                lsgd.append((med, m["name"], m["setting"]))
    for r in grid["per_target"][target_index]["stays_below"]["methods"]:
        med = r["samples"]["median"]
        if med is not None:
            cands.append((med, r["name"], r["setting"]))
            if r["name"] == "L-SGD":
                lsgd.append((med, r["name"], r["setting"]))
    return (min(cands, key=lambda c: c[0]) if cands else None,
            min(lsgd, key=lambda c: c[0]) if lsgd else None)


def setting(s):
    out = s["method"]
    if s.get("L") is not None:
        out += f" L={s['L']}"
    return out + f" step={s['step']:g}"


def dro():
    grids = {}
    for line in open(GRID):
        g = json.loads(line)
        grids[g["problem"]] = g
    print("| data set | gap | auto (planned for the gap) | its median's interval | trials reached | best-tuned | its setting | auto / best | best-tuned L-SGD | auto / L-SGD | the grid's samples |")
    print("|---|---|---:|---|---|---:|---|---:|---:|---:|---:|")
    for path in sorted(glob.glob(os.path.join(HERE, "dro-*.jsonl"))):
        for line in open(path):
            a = json.loads(line)
            g = grids[a["problem"]]
            gap = float(a["tuning"]["about"].split("gap ")[1].split(":")[0])
            i = a["targets"].index(gap)
            p = a["methods"][0]["stays_below"][i]
            best, lsgd = best_tuned(g, i)
            ratio = lambda b: "—" if b is None or p["median"] is None else f"{p['median'] / b[0]:.2f}"
            cost = GRID_SETTINGS * GRID_SEEDS * g["budget"]
            ci = f"[{fmt(p['median_ci'][0])}, {fmt(p['median_ci'][1])}] ({a['median_ci_coverage']:.0%})"
            print(f"| {a['problem']} | {gap:g} | {fmt(p['median'])} | {ci} | {p['trials_reached']}/{a['trials']} | "
                  f"{fmt(best[0]) if best else '— (none)'} | {best[1] + ' ' + setting(best[2]) if best else ''} | {ratio(best)} | "
                  f"{fmt(lsgd[0]) if lsgd else '— (none)'} | {ratio(lsgd)} | {cost:.3g} |")


def pricing():
    print("| law | steps after which auto stays within 1% of (mu*, p*) | its median's interval | trials reached | first touch | median final error |")
    print("|---|---:|---|---|---:|---:|")
    for path in sorted(glob.glob(os.path.join(HERE, "pricing-*.jsonl"))):
        for line in open(path):
            a = json.loads(line)
            m = a["methods"][0]
            s, f = m["stays_below"][0], m["first_touch"][0]
            ci = f"[{fmt(s['median_ci'][0])}, {fmt(s['median_ci'][1])}] ({a['median_ci_coverage']:.0%})"
            print(f"| {a['problem']} | {fmt(s['median'])} | {ci} | {s['trials_reached']}/{a['trials']} | {fmt(f['median'])} | {fmt(m['final_gap_median'])} |")


if __name__ == "__main__":
    dro()
    print()
    pricing()
