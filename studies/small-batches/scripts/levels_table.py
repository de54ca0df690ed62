#!/usr/bin/env python3
"""levels_table.py — Markdown tables from `simclr levels --json` files.

Usage: levels_table.py NAME=FILE.json ...
Prints, for all files side by side: per level the variance of H^l (h^l at the
lowest level) and the seconds per query; then per file the fitted b and c,
the telescoping check and each estimator's predicted variance x cost relative
to L-SGD (below 1: cheaper than L-SGD for the same variance).
"""
import json
import sys


def main():
    runs = []
    for arg in sys.argv[1:]:
        name, _, path = arg.partition("=")
        runs.append((name, json.load(open(path))))
    if not runs:
        sys.exit(__doc__)
    levels = sorted({st["level"] for _, r in runs for st in r["levels"]})
    print("| level | images | " + " | ".join(f"Var ({n}) | s/query ({n})" for n, _ in runs) + " |")
    print("|---:|---:|" + "---:|---:|" * len(runs))
    for l in levels:
        cells = []
        for _, r in runs:
            st = next((s for s in r["levels"] if s["level"] == l), None)
            cells += [f"{st['var']:.3g} ± {st['var_se']:.1g}", f"{st['seconds']:.3f}"] if st else ["", ""]
        print(f"| {l} | {2 ** l} | " + " | ".join(cells) + " |")
    print("| h^L | " + str(2 ** runs[0][1]["max_level"]) + " | " +
          " | ".join(f"{r['top']['var']:.3g} ± {r['top']['var_se']:.1g} | {r['top']['seconds']:.3f}" for _, r in runs) + " |")
    print()
    print("| | " + " | ".join(n for n, _ in runs) + " |")
    print("|---|" + "---|" * len(runs))

    def fit(f):
        return f"{f['rate']:.2f} ± {f['se']:.2f}"
    print("| fitted b (Var H^l ~ 2^-bl) | " + " | ".join(fit(r["fit_b"]) for _, r in runs) + " |")
    print("| fitted c, images | " + " | ".join(fit(r["fit_c_images"]) for _, r in runs) + " |")
    print("| fitted c, seconds | " + " | ".join(fit(r["fit_c_seconds"]) for _, r in runs) + " |")
    tel = []
    for _, r in runs:
        t = r["telescope"]
        zmax = max(abs(z) for z in t["z"]) if t.get("z") else float("nan")
        tel.append(f"{'pass' if t.get('pass') else 'FAIL'}: max abs z {zmax:.1f} (critical {t.get('critical', float('nan')):.1f}); "
                   f"diff {t['diff_norm']:.3g} vs noise {t['noise_norm']:.3g}")
    print("| telescoping check | " + " | ".join(tel) + " |")
    names = [p["name"] for p in runs[0][1]["estimators"]]
    for name in names:
        cells = []
        for _, r in runs:
            p = next((p for p in r["estimators"] if p["name"] == name), None)
            cells.append(f"{p['rel_seconds']:.3g} (images {p['rel_images']:.3g})" if p else "")
        print(f"| {name}: variance x seconds / L-SGD's | " + " | ".join(cells) + " |")
    print()
    for n, r in runs:
        print(f"- {n}: {r.get('verdict', '')}")


if __name__ == "__main__":
    main()
