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
        over every plan of every run whose L the bound on the bias set (not
        raised to an earlier stage's L, not kept from the last plan, not set
        where no level's bias stood out) and whose pilot saw a vanished tail
        from level z: how many plans put L at each distance L - (z - 1)
        from the last level that did not vanish
    python3 stages.py raises FILE
        for every run that did not reach its gap: each plan whose step was
        raised from the last plan's by the ratio of their predicted
        variances, where it was made and by what factor
"""
import collections
import json
import re
import sys

VANISHED = re.compile(r"vanished in all \d+ draws from level (\d+) on")


def runs(path):
    """Each run's seed, record and samples to stay below its gap (None:
    never), one line per gap."""
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            auto = next(m for m in row["methods"] if m["name"] == "auto")
            gap = auto["auto"][0]["target"]["gap"]
            reached = auto["stays_below"][row["targets"].index(gap)]["trials"]
            for i, rec in enumerate(auto["auto"]):
                yield row["first_seed"] + i, rec, reached[i]


def vanished_from(plan):
    m = VANISHED.search(plan["reasons"]["L"])
    return int(m.group(1)) if m else None


def trials(path, gap, seeds):
    for seed, rec, _ in runs(path):
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
        for _, rec, _ in runs(path):
            for st in rec["stages"]:
                for p in st["plans"] or []:
                    if not p:
                        continue
                    z = vanished_from(p)
                    why = p["reasons"]["L"]
                    if z is None or "raised to" in why or "kept" in p["at"] or "not trusted" in why:
                        continue
                    count[p["max_level"] - (z - 1)] += 1
    for d in sorted(count):
        print("L - (z - 1) = %d: %d plans" % (d, count[d]))


RAISE = re.compile(r"the last step ([0-9.e+-]+), which the last plan.s variance cap set, raised to ([0-9.e+-]+)")


def raises(path):
    for seed, rec, reached in runs(path):
        if reached is not None:
            continue
        found = []
        for st in rec["stages"]:
            for p in st["plans"] or []:
                m = RAISE.search(p["reasons"]["step"]) if p else None
                if m:
                    found.append("%s: x%.1f" % (p["at"], float(m.group(2)) / float(m.group(1))))
        print("seed %d, gap %g, not reached: %s" % (seed, rec["target"]["gap"], "; ".join(found) or "no raise"))


if __name__ == "__main__":
    if sys.argv[1] == "trials":
        trials(sys.argv[2], float(sys.argv[3]), {int(s) for s in sys.argv[4:]})
    elif sys.argv[1] == "raises":
        raises(sys.argv[2])
    else:
        depth(sys.argv[2:])
