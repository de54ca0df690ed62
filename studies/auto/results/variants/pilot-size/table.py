#!/usr/bin/env python3
"""Print the pilot-size record's table from the compact files beside this
one: for each problem and target gap, auto's median samples to stay at or
below the gap (a trial that never does counted above every other: "—" where
that is the median) and the trials that reached it, per version.

    python3 table.py base A S M MG O F G
"""
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def median(trials):
    v = sorted(float("inf") if t is None else t for t in trials)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def fmt(x):
    return "—" if x == float("inf") else "%.3g" % x


def main(names):
    runs = []
    for n in names:
        with gzip.open(os.path.join(HERE, n + ".json.gz"), "rt") as f:
            runs.append(json.load(f))
    print("| problem | gap | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    # The problems every run holds (a version run on some problems only
    # is compared on those).
    for prob in sorted(set(runs[0]).intersection(*runs[1:])):
        for i, gap in enumerate(runs[0][prob]["targets"]):
            cells = []
            for r in runs:
                t = r[prob]["stays_below"][i]
                reached = sum(x is not None for x in t)
                cells.append("%s (%d/%d)" % (fmt(median(t)), reached, len(t)))
            print("| %s | %g | %s |" % (prob, gap, " | ".join(cells)))


if __name__ == "__main__":
    main(sys.argv[1:])
