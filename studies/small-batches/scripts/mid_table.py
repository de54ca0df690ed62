#!/usr/bin/env python3
"""mid_table.py — one Markdown row per `simclr levels --json` file:
the network's training loss where it was measured, the variance of h^(l_min)
and of h^L, the fitted b and c (seconds), and the predicted variance x wall
time relative to L-SGD of RT-MLMC (the run's allocation, b = c = 1) and of the best
MLMC estimator (V-MLMC, RT-MLMC, their -opt allocations and VR versions), so
that the diagnostics of many networks read at a glance.

Usage: mid_table.py LABEL=LEVELS.json=RUN_DIR ...
(RUN_DIR: the run folder whose metrics.jsonl gives the loss; its last 10
lines' mean of L_B - log(2N-1).)
"""
import json
import sys


def loss_gap(run):
    try:
        lines = [json.loads(l) for l in open(f"{run}/metrics.jsonl")][-10:]
        gaps = [m["loss_minus_log_2n_minus_1"] for m in lines if m.get("loss_minus_log_2n_minus_1") is not None]
        return f"{sum(gaps) / len(gaps):+.2f}" if gaps else ""
    except OSError:
        return ""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("| network (half-way) | construction | loss gap | Var h^(l_min) | Var h^L | fitted b | fitted c (s) | RT-MLMC var x s / L-SGD | best MLMC var x s / L-SGD |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for arg in sys.argv[1:]:
        label, path, run = arg.split("=")
        r = json.load(open(path))
        est = {e["name"]: e for e in r["estimators"]}
        mlmc = [e for n, e in est.items() if "lsgd" not in n and e.get("rel_seconds") is not None]
        best = min(mlmc, key=lambda e: e["rel_seconds"])
        rt = est.get("rtmlmc", {}).get("rel_seconds")
        base = r["levels"][0]
        b, c = r.get("fit_b") or {}, r.get("fit_c_seconds") or {}
        print(f"| {label} | {r['halves']} | {loss_gap(run)} | {base['var']:.3g} | {r['top']['var']:.3g} | "
              f"{b.get('rate', float('nan')):.2f} ± {b.get('se', float('nan')):.2f} | {c.get('rate', float('nan')):.2f} | "
              f"{rt:.2f} | {best['rel_seconds']:.2f} ({best['name']}) |")


if __name__ == "__main__":
    main()
