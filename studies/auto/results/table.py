#!/usr/bin/env python3
"""Print the auto study's tables from the results files.

    python3 studies/auto/results/table.py [DIR]

(DIR: a folder of auto's results files to read instead of this one, for
comparing a rerun with the committed files.)

For each problem and gap: auto (studies/auto/results/dro-*.jsonl, ubsr-*.jsonl,
pricing-*.jsonl: one
summary per gap it was run for, 10 trials) against the comparator, the one
setting the tuning seeds chose for that problem and gap (the smallest median
over the tuning seeds of the samples after which the gap stays below the
target, over every setting the grid scored: studies/dro/results/summary.jsonl,
studies/shortfall-risk/results/gaussian-3-LOSS.summary.json,
studies/pricing/results/gap.jsonl), on its reported trials. The
samples to a gap are the harness's stays-below rule; auto's include its
pilots. Then the target's verdict over the pairs where the
comparator reached the gap in at least half its trials, the pairs no tuned
setting reaches apart, and how often auto's own gap estimate held where it
claimed the target. Where the comparator needs more than a third of the
study's budget, auto is held to the target's 3x by the budget rather than by
its cost: those problems are run again with three times the budget
(budget3x-*.jsonl), printed in their own tables, and a second verdict takes
those pairs from them.
"""
import glob
import gzip
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
AUTO = sys.argv[1] if len(sys.argv) > 1 else HERE


def open_text(path):
    """path, or its compressed form path.gz where path is missing (the
    committed results are kept compressed)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt")
    return open(path)


def fmt(x):
    return "—" if x is None else f"{x:.3g}"


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


def comparator(grid, i):
    """The setting the tuning seeds chose for target i, and its reported
    passage (None where it was not reported)."""
    rows = [r for r in grid["tuning"]["settings"] if r["stays_below"][i] is not None]
    if not rows:
        return None, None
    inf = float("inf")
    best = min(rows, key=lambda r: (r["stays_below"][i], r["score"] if r["score"] is not None else inf))
    for r in grid["per_target"][i]["stays_below"]["methods"]:
        if r["setting"] == best["setting"]:
            return best, r["samples"]
    for m in grid["methods"]:
        if m["setting"] == best["setting"]:
            return best, m["stays_below"][i]
    return best, None


def results(pattern):
    """The files here matching pattern, each read from NAME or, where it is
    kept compressed, NAME.gz."""
    names = {p[:-3] if p.endswith(".gz") else p
             for p in glob.glob(os.path.join(AUTO, pattern)) + glob.glob(os.path.join(AUTO, pattern + ".gz"))}
    return sorted(names)


def auto_runs(pattern):
    for path in results(pattern):
        for line in open_text(path):
            a = json.loads(line)
            gap = float(a["tuning"]["about"].split("gap ")[1].split(":")[0])
            yield path, a, gap


def lower_bound(h, n, alpha=0.05):
    """The one-sided 1 - alpha lower confidence bound on a rate from h
    successes in n trials (Clopper-Pearson: the p at which h or more
    successes have probability alpha), by bisection."""
    if n == 0 or h == 0:
        return 0.0

    def tail(p):  # P(X >= h) for X ~ Binomial(n, p)
        return sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(h, n + 1))

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if tail(mid) < alpha:
            lo = mid
        else:
            hi = mid
    return lo


def held_line(h, n):
    return (f"{h} of the {n} trials where it claimed the target and stopped (the rate at which a claim holds "
            f"is at least {lower_bound(h, n):.2f} with 95% confidence, Clopper-Pearson)")


def held(m):
    claims = [r for r in m.get("auto") or [] if r.get("estimate_held") is not None]
    return sum(1 for r in claims if r["estimate_held"]), len(claims)


def why_missed(m, i):
    """The records' reasons for the trials that did not reach target i,
    counted: the budget ran out with the estimate above the target, the run
    claimed the target but the true gap was above it (its estimate did not
    hold), auto could not serve the trial; and the first stall warning."""
    out, warn = {}, None
    for r, t in zip(m.get("auto") or [], m["stays_below"][i]["trials"]):
        if t is not None:
            continue
        stop = r.get("stopped", "")
        if stop.startswith("auto cannot serve"):
            k = "auto could not serve it"
        elif stop.startswith("the gap estimate"):
            k = "claimed the target, the true gap above it"
        elif "below the target but not claimed" in stop:
            k = "the budget ran out with the estimate below the target, not yet trusted"
        else:
            k = "the budget ran out with the estimate above the target"
        out[k] = out.get(k, 0) + 1
        if warn is None and r.get("warnings"):
            warn = r["warnings"][0]
    return out, warn


PAIRS = []
PAIRS3X = []


def table(title, pattern, grid_of, pairs=PAIRS):
    print(f"### {title}\n")
    print("| problem | gap | auto | trials reached | comparator (tuning seeds' choice) | its median | reached | auto / comparator | estimate held where claimed |")
    print("|---|---|---:|---|---|---:|---|---:|---|")
    for path, a, gap in auto_runs(pattern):
        grid = grid_of(a["problem"])
        i = a["targets"].index(gap)
        m = a["methods"][0]
        p = m["stays_below"][i]
        gi = grid["targets"].index(gap)
        best, cp = comparator(grid, gi)
        ratio = None
        if cp and cp["median"] is not None and p["median"] is not None:
            ratio = p["median"] / cp["median"]
        h, n = held(m)
        cname = setting(best["setting"]) if best else "— (no setting reaches it)"
        print(f"| {a['problem']} | {gap:g} | {fmt(p['median'])} | {p['trials_reached']}/{a['trials']} | {cname} | "
              f"{fmt(cp['median']) if cp else '—'} | {cp['trials_reached'] if cp else 0}/{grid['trials']} | {fmt(ratio)} | {h}/{n} |")
        pairs.append(dict(problem=a["problem"], gap=gap, auto=p, comp=cp, trials=grid["trials"], ratio=ratio,
                          why=why_missed(m, i), held=(h, n), budget=grid["budget"]))
    print()


def summary_of(path, name):
    """The summary of problem name in the JSON-lines file path."""
    for line in open_text(path):
        g = json.loads(line)
        if g["problem"] == name:
            return g
    raise KeyError(name)


def dro_grid(name):
    return summary_of(os.path.join(ROOT, "studies", "dro", "results", "summary.jsonl"), name)


def ubsr_grid(name):
    return json.load(open_text(os.path.join(ROOT, "studies", "shortfall-risk", "results", name.replace("/", "-") + ".summary.json")))


def pricing_grid(name):
    return summary_of(os.path.join(ROOT, "studies", "pricing", "results", "gap.jsonl"), name)


def bound(q):
    """Whether the comparator's median needs more than a third of the budget."""
    return q["comp"] is not None and q["comp"]["median"] is not None and 3 * q["comp"]["median"] > q["budget"]


def ratio_line(held_pairs):
    """The median of auto / comparator over every pair, a pair whose median
    trial auto did not reach counted above all others, and the largest
    ratio, which such a pair leaves unknown."""
    ratios = [q["ratio"] if q["ratio"] is not None else float("inf") for q in held_pairs]
    if not ratios:
        return ""
    med = statistics.median(ratios)
    reached = [r for r in ratios if r != float("inf")]
    out = f"median of auto / comparator over all {len(ratios)} pairs {med:.2f} (target <= 2; a pair auto's median trial did not reach counted above every other)"
    if len(reached) == len(ratios):
        return out + f", largest {max(reached):.2f} (target <= 3)"
    return out + f", largest unknown (target <= 3; {max(reached):.2f} over the {len(reached)} pairs auto's median trial reached)"


def summary(pairs):
    held_pairs = [q for q in pairs if q["comp"] and q["comp"]["trials_reached"] * 2 >= q["trials"]]
    ok8 = [q for q in held_pairs if q["auto"]["trials_reached"] >= 8]
    out = f"pairs: {len(held_pairs)}; auto reaches the gap in at least 8 of 10 trials in {len(ok8)}"
    if held_pairs:
        out += "; " + ratio_line(held_pairs)
    missing = [q for q in held_pairs if q["ratio"] is None]
    if missing:
        out += "; auto's median trial did not reach the gap in " + ", ".join(f"{q['problem']} {q['gap']:g}" for q in missing)
    return out


def verdict():
    print("### The target over the pairs the comparator reaches in at least half its trials\n")
    held_pairs = [q for q in PAIRS if q["comp"] and q["comp"]["trials_reached"] * 2 >= q["trials"]]
    apart = [q for q in PAIRS if q not in held_pairs]
    ok8 = [q for q in held_pairs if q["auto"]["trials_reached"] >= 8]
    print(f"- pairs: {len(held_pairs)}; auto reaches the gap in at least 8 of 10 trials in {len(ok8)}")
    if held_pairs:
        print(f"- {ratio_line(held_pairs)}")
    missing = [q for q in held_pairs if q["ratio"] is None]
    if missing:
        print(f"- pairs where auto's median trial did not reach the gap: " + ", ".join(f"{q['problem']} {q['gap']:g}" for q in missing))
    h = sum(q["held"][0] for q in PAIRS)
    n = sum(q["held"][1] for q in PAIRS)
    print(f"- auto's own gap estimate held in {held_line(h, n)}")
    print(f"- apart (the comparator reaches it in fewer than half its trials, or no setting does): " +
          (", ".join(f"{q['problem']} {q['gap']:g}" for q in apart) or "none"))
    if PAIRS3X:
        again = {(q["problem"], q["gap"]): q for q in PAIRS3X}
        bounded = [q for q in PAIRS if bound(q)]
        taken = [again.get((q["problem"], q["gap"]), q) if bound(q) else q for q in PAIRS]
        print(f"- budget-bound pairs (the comparator's median above a third of the budget): " +
              (", ".join(f"{q['problem']} {q['gap']:g}" for q in bounded) or "none"))
        print(f"- at the study's budget: {summary(PAIRS)}")
        print(f"- the budget-bound pairs from the runs with three times the budget: {summary(taken)}")
        h3 = sum(q["held"][0] for q in PAIRS3X)
        n3 = sum(q["held"][1] for q in PAIRS3X)
        print(f"- in the runs with three times the budget, auto's own gap estimate held in {held_line(h3, n3)}")
    print("\nWhy auto missed, from its records (trials that did not reach the gap, by how the run ended; the first stall warning):\n")
    for q in PAIRS:
        counts, warn = q["why"]
        if counts:
            line = "; ".join(f"{k}: {v}" for k, v in counts.items())
            print(f"- {q['problem']} {q['gap']:g}: {line}" + (f". First warning: {warn}" if warn else ""))


def raw_targets():
    """auto on the raw-target regression files (raw-NAME.jsonl; before it,
    raw-NAME.before.jsonl where kept): per gap, the samples after which the
    gap stays at or below it, from the summary auto was run for that gap."""
    def cells(path):
        out = {}
        for line in open_text(path):
            a = json.loads(line)
            gap = float(a["tuning"]["about"].split("gap ")[1].split(":")[0])
            p = a["methods"][0]["stays_below"][a["targets"].index(gap)]
            out[gap] = f"{fmt(p['median'])} ({p['trials_reached']}/{a['trials']})"
            head = (a["problem"], a["F0"], a["F_star"])
        return head, out
    names = [p for p in results("raw-*.jsonl") if not p.endswith(".before.jsonl")]
    if not names:
        return
    print("### Raw targets (samples after which the gap stays at or below it, median; trials that reached it)\n")
    print("| file | F(x0) | F* | 1% | 0.3% | 0.1% | before: 1% | before: 0.3% | before: 0.1% |")
    print("|---|---:|---:|---|---|---|---|---|---|")
    for path in names:
        (name, f0, fstar), now = cells(path)
        before = path[:-len(".jsonl")] + ".before.jsonl"
        was = cells(before)[1] if results(os.path.basename(before)) else {}
        gaps = (0.01, 0.003, 0.001)
        print(f"| {name} | {f0:.0f} | {fstar:.0f} | " + " | ".join(now.get(g, "") for g in gaps) + " | " +
              " | ".join(was.get(g, "") for g in gaps) + " |")
    print()


if __name__ == "__main__":
    table("DRO (linear, exact F*)", "dro-*.jsonl", dro_grid)
    table("Shortfall risk (gaussian-3)", "ubsr-*.jsonl", ubsr_grid)
    if results("budget3x-*.jsonl"):
        table("DRO at three times the budget (1,200,000 samples)", "budget3x-dro-*.jsonl", dro_grid, PAIRS3X)
        table("Shortfall risk at three times the budget (12,582,912 samples)", "budget3x-ubsr-*.jsonl", ubsr_grid, PAIRS3X)
    table("Pricing (coupled construction, closed-form F*)", "pricing-*.jsonl", pricing_grid)
    raw_targets()
    verdict()
