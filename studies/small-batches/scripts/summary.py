#!/usr/bin/env python3
"""summary.py — the MLMC study's table from its run folders.

For every runs/study/NAME (or the folders given) it reads config.json,
metrics.jsonl, eval.jsonl, linear_probe.json (the validation probe: the
study trains on folder:data-cache/study/val, whose test split is 1,000
held-out TRAINING images), test_probe.json (score_test.sh: the 2,000 test
images, scored once per final configuration) and NAME.study.json (command,
load, machine), and prints a Markdown table: configuration, images drawn,
oracle evaluations, wall time, validation kNN and probe, test probe, load.

Usage: summary.py [--root runs/study] [--json] [RUN ...]
"""
import argparse
import glob
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import budget  # noqa: E402 (the study's cost model, next to this file)

# The first batch of runs' per-level timings; the second batch, whose machine no longer had
# them, wrote the same "used" figures back as bench_used.jsonl (see plan2.txt).
BENCH = ["runs/study/bench_levels.jsonl", "runs/study/bench_levels_r2.jsonl", "runs/study/bench_used.jsonl"]


def predicted_cost(cfg, iterations):
    """Predicted cost of the run in L-SGD iterations at level 7 (budget.py)."""
    try:
        t = budget.level_seconds([f for f in BENCH if os.path.exists(f)])
        a = types.SimpleNamespace(estimator=cfg["estimator"], min_level=cfg["min_level"], max_level=cfg["max_level"],
                                  halves=cfg.get("halves") or "shared", b=cfg["b"], c=cfg["c"], vmlmc_n=cfg["vmlmc_n"],
                                  lsgd_draws=max(1, cfg.get("lsgd_draws") or 1), d1=cfg["d1"], d2=cfg["d2"], qe=cfg["qe"])
        return iterations * budget.iteration_cost(a, t) / t[7]
    except (KeyError, OSError, ValueError, SystemExit, TypeError):
        return None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    except OSError:
        pass
    return out


def describe(cfg):
    est = cfg.get("estimator", "?")
    parts = [est]
    norm = cfg.get("norm") or "batch"
    halves = cfg.get("halves") or "shared"
    parts.append("group" if norm == "group" else f"batch/{halves}" if est.removeprefix("vr-") != "lsgd" else "batch")
    if est.removeprefix("vr-") != "lsgd":
        parts.append(f"l_min {cfg.get('min_level')}")
    elif cfg.get("max_level") != 7:
        parts.append(f"batch {2 ** cfg.get('max_level')}")
    if est.startswith("vr-"):
        parts.append(f"D1 {cfg.get('d1')} D2 {cfg.get('d2')} Q_E {cfg.get('qe')}")
    if est.removeprefix("vr-") == "vmlmc" and cfg.get("vmlmc_n"):
        parts.append(f"N {cfg.get('vmlmc_n'):g}")
    if cfg.get("augment") not in (None, "", "default", "simclr"):
        parts.append(f"augment {cfg.get('augment')}")
    return ", ".join(parts)


def row(run):
    cfg = read_json(os.path.join(run, "config.json"))
    if cfg is None:
        return None
    name = os.path.basename(run.rstrip("/"))
    metrics = read_jsonl(os.path.join(run, "metrics.jsonl"))
    evals = read_jsonl(os.path.join(run, "eval.jsonl"))
    probe = read_json(os.path.join(run, "linear_probe.json")) or {}
    test = read_json(os.path.join(run, "test_probe.json")) or {}
    study = read_json(run.rstrip("/") + ".study.json") or {}
    last = metrics[-1] if metrics else {}
    return {
        "name": name,
        "config": describe(cfg),
        "estimator": cfg.get("estimator"),
        "norm": cfg.get("norm") or "batch",
        "halves": cfg.get("halves") or "shared",
        "min_level": cfg.get("min_level"),
        "max_level": cfg.get("max_level"),
        "lr": cfg.get("lr"),
        "seed": cfg.get("seed"),
        "iterations": last.get("iteration"),
        "images_drawn": last.get("samples_drawn"),
        "evaluations": last.get("evaluations"),
        "predicted_cost": predicted_cost(cfg, last.get("iteration") or 0),
        "train_seconds": last.get("wall_seconds"),
        "command_seconds": study.get("command_seconds"),
        "knn_val": evals[-1]["knn_top1"] if evals else None,
        "probe_val": probe.get("top1"),
        "probe_test": test.get("top1"),
        "load": f"{study.get('load_before', '?').split()[0]}-{study.get('load_after', '?').split()[0]}" if study else "",
        "start_utc": study.get("start_utc"),
        "command": study.get("command"),
        "finished": bool(probe),
    }


def fmt(v, kind):
    if v is None:
        return ""
    if kind == "pct":
        return f"{v:.1f}%"
    if kind == "int":
        return f"{v:,}"
    if kind == "sec":
        return f"{v / 60:.1f} min" if v >= 120 else f"{v:.0f} s"
    return str(v)


def mean_sd(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return ""
    m = sum(xs) / len(xs)
    if len(xs) == 1:
        return f"{m:.1f}%"
    sd = (sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5
    return f"{m:.1f} ± {sd:.1f}%"


def final_table(root, groups):
    """One line per configuration: mean ± standard deviation over its seeds."""
    print("| configuration | runs | seeds | images drawn | train wall (load) | val kNN | val probe | test probe |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for g in groups:
        label, _, names = g.partition("=")
        rows = [row(os.path.join(root, n)) for n in names.split(",")]
        rows = [r for r in rows if r]
        walls = ", ".join(f"{fmt(r['train_seconds'], 'sec')} ({r['load'].split('-')[0]})" for r in rows)
        print(f"| {label} | {', '.join(r['name'] for r in rows)} | {len(rows)} | {fmt(rows[0]['images_drawn'], 'int')} | {walls} | "
              f"{mean_sd([r['knn_val'] for r in rows])} | {mean_sd([r['probe_val'] for r in rows])} | "
              f"{mean_sd([r['probe_test'] for r in rows])} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default="runs/study")
    p.add_argument("--json", action="store_true")
    p.add_argument("--final", nargs="+", metavar="LABEL=RUN,RUN,...",
                   help="print the final-configuration table instead: mean and spread over the listed runs (seeds)")
    p.add_argument("runs", nargs="*")
    a = p.parse_args()
    if a.final:
        final_table(a.root, a.final)
        return
    runs = a.runs or sorted(d for d in glob.glob(os.path.join(a.root, "*")) if os.path.isdir(d))
    rows = [r for r in (row(d) for d in runs) if r and (r["iterations"] or 0) > 1]
    rows.sort(key=lambda r: r["start_utc"] or "")
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print("| run | configuration | lr | seed | iterations | predicted cost (L-SGD its) | images drawn | oracle evaluations | train wall | val kNN | val probe | test probe | load (1 min) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['name']} | {r['config']} | {r['lr']:g} | {r['seed']} | {fmt(r['iterations'], 'int')} | "
              f"{'' if r['predicted_cost'] is None else round(r['predicted_cost'])} | "
              f"{fmt(r['images_drawn'], 'int')} | {fmt(r['evaluations'], 'int')} | {fmt(r['train_seconds'], 'sec')} | "
              f"{fmt(r['knn_val'], 'pct')} | {fmt(r['probe_val'], 'pct')} | {fmt(r['probe_test'], 'pct')} | {r['load']} |")


if __name__ == "__main__":
    main()
