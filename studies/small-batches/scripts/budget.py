#!/usr/bin/env python3
"""budget.py — equal-wall-time budgets for the MLMC study.

Predicts the seconds of one training iteration of an estimator from measured
seconds per oracle query at each level (studies/small-batches/scripts/bench_levels.sh output;
the smallest time over all files and over the plain and multilevel loss is
taken per level, the least disturbed measurement on a shared machine), and
turns a budget given in L-SGD iterations at level L into an iteration count.

The expectation follows docs/definitions.md, sections 2-3, and mlmc.ExpectedCost (which counts
images; this counts seconds):
  lsgd     one query at level L
  vmlmc    n_l = ceil(2^(-(b+c)l/2) N) queries at each level l_min..L
  rtmlmc   one query at level l with probability q_l ~ 2^(-(b+c)l/2) on l_min..L
  vr-*     per Q_E iterations: D1 estimates once, then Q_E-1 corrections of D2
           estimates each evaluated at x_t and x_{t-1}
A query at level l > l_min costs t_l with shared halves or group norm (one
pass), t_l + 2 t_(l-1) with separate halves (three passes); the base level
is one pass of h^(l_min).

Usage: budget.py --estimator vr-rtmlmc --min-level 4 --halves separate \
           --lsgd-iters 80 [--d1 1 --d2 1 --qe 10] [--bench FILE ...] [--images]
"""
import argparse
import json
import math
import sys


def level_seconds(files):
    best = {}
    for path in files:
        for line in open(path):
            r = json.loads(line)
            t = r["bench"]["step_seconds"]
            best[r["level"]] = min(t, best.get(r["level"], math.inf))
    return best


def query_cost(l, lmin, halves, t):
    if l == lmin or halves != "separate":
        return t[l]
    return t[l] + 2 * t[l - 1]


def estimate_cost(a, t):
    """Expected cost of one estimate v(x) in the units of t."""
    m = a.estimator.removeprefix("vr-")
    L, lmin, r = a.max_level, a.min_level, (a.b + a.c) / 2
    if m == "lsgd":
        return a.lsgd_draws * t[L]
    if m == "vmlmc":
        n = a.vmlmc_n or 2 ** (r * L)
        return sum(math.ceil(2 ** (-r * l) * n) * query_cost(l, lmin, a.halves, t) for l in range(lmin, L + 1))
    if m == "rtmlmc":
        w = {l: 2 ** (-r * l) for l in range(lmin, L + 1)}
        z = sum(w.values())
        return sum(w[l] / z * query_cost(l, lmin, a.halves, t) for l in w)
    sys.exit(f"budget.py: estimator {a.estimator} not modelled (lsgd, vmlmc, rtmlmc and vr- versions)")


def iteration_cost(a, t):
    v = estimate_cost(a, t)
    if not a.estimator.startswith("vr-"):
        return v
    return (a.d1 + (a.qe - 1) * 2 * a.d2) / a.qe * v


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--estimator", required=True)
    p.add_argument("--min-level", type=int, default=1)
    p.add_argument("--max-level", type=int, default=7)
    p.add_argument("--halves", default="shared", choices=["shared", "separate"])
    p.add_argument("--b", type=float, default=1)
    p.add_argument("--c", type=float, default=1)
    p.add_argument("--vmlmc-n", type=float, default=0)
    p.add_argument("--lsgd-draws", type=int, default=1)
    p.add_argument("--lsgd-level", type=int, default=7, help="level of the reference L-SGD")
    p.add_argument("--d1", type=int, default=1)
    p.add_argument("--d2", type=int, default=1)
    p.add_argument("--qe", type=int, default=10)
    p.add_argument("--lsgd-iters", type=float, default=80, help="budget in reference L-SGD iterations")
    p.add_argument("--bench", nargs="+", default=["runs/study/bench_levels.jsonl", "runs/study/bench_levels_r2.jsonl"])
    p.add_argument("--images", action="store_true", help="cost proportional to images (2^l) instead of measured seconds")
    a = p.parse_args()
    t = {l: 2.0 ** l for l in range(0, 20)} if a.images else level_seconds(a.bench)
    per_iter = iteration_cost(a, t)
    ref = t[a.lsgd_level]
    iters = a.lsgd_iters * ref / per_iter
    print(json.dumps({"estimator": a.estimator, "min_level": a.min_level, "halves": a.halves,
                      "d1": a.d1, "d2": a.d2, "qe": a.qe,
                      "cost_per_iteration_in_lsgd_iterations": round(per_iter / ref, 4),
                      "predicted_seconds_per_iteration": None if a.images else round(per_iter, 4),
                      "iterations": round(iters)}))


if __name__ == "__main__":
    main()
