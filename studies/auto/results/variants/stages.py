#!/usr/bin/env python3
"""Print what the variant records quote of auto's stage records, from the
full result files of a version (the JSON lines `examples/pricing --targets
gap --method auto --json` writes, one line per gap):

    python3 stages.py trials FILE GAP SEED [SEED...]
        each stage of those seeds' runs for GAP: its target, the last plan's
        method, L, the first level whose H^l vanished in all the pilot's
        draws (-: none), the pilot's top level, the step, the samples at the
        stage's end and its gap estimate
    python3 stages.py depth FILE [FILE...]
        over every plan of every run whose L the fit set (not raised to an
        earlier stage's L, not kept from the last plan) and whose pilot saw
        a vanished tail from level z: how many plans put L at each distance
        L - (z - 1) from the last level that did not vanish
"""
import collections
import json
import re
import sys

VANISHED = re.compile(r"vanished in all \d+ draws from level (\d+) on")


def runs(path):
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            auto = next(m for m in row["methods"] if m["name"] == "auto")
            for i, rec in enumerate(auto["auto"]):
                yield row["first_seed"] + i, rec


def vanished_from(plan):
    m = VANISHED.search(plan["reasons"]["L"])
    return int(m.group(1)) if m else None


def trials(path, gap, seeds):
    for seed, rec in runs(path):
        if rec["target"]["gap"] != gap or seed not in seeds:
            continue
        print("seed %d, gap %g: %s" % (seed, gap, rec["stopped"]))
        for st in rec["stages"]:
            plans = [p for p in st["plans"] or [] if p]
            if not plans:
                print("  stage %.3g: %s" % (st["target"], st["why"]))
                continue
            p = plans[-1]
            z = vanished_from(p)
            est = st["gap_estimate"]
            print("  stage %.3g: %s L %d, vanished from %s, pilot top %d, step %.3g, %d samples, gap estimate %s"
                  % (st["target"], p["method"], p["max_level"], "-" if z is None else z,
                     p["pilot_max_level"], st["step"], st["samples"],
                     "none" if est is None else "%.3g" % est))


def depth(paths):
    count = collections.Counter()
    for path in paths:
        for _, rec in runs(path):
            for st in rec["stages"]:
                for p in st["plans"] or []:
                    if not p:
                        continue
                    z = vanished_from(p)
                    if z is None or "raised to" in p["reasons"]["L"] or "kept" in p["at"]:
                        continue
                    count[p["max_level"] - (z - 1)] += 1
    for d in sorted(count):
        print("L - (z - 1) = %d: %d plans" % (d, count[d]))


if __name__ == "__main__":
    if sys.argv[1] == "trials":
        trials(sys.argv[2], float(sys.argv[3]), {int(s) for s in sys.argv[4:]})
    else:
        depth(sys.argv[2:])
