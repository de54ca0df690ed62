#!/usr/bin/env python3
"""Write the raw-target regression files of the auto study into a folder.

    python3 studies/auto/results/rawtargets.py OUT [DATA]

OUT/synth-S.txt (S = 1, 2, 3): LIBSVM rows of 300 rows, 5 features uniform on
[-1, 1], target y = N(300, 50^2) + sum_k beta_k x_k with beta_k uniform on
[-60, 60] (seeded by S). OUT/synth-large.txt: 500 rows, 8 features uniform on
[0, 100], y = N(1000, 200^2) + sum_k beta_k (x_k - 50)/50 with beta_k uniform
on [-100, 100] (seed 1). With DATA (the DRO data folder), also
OUT/bike-hour-600.txt: 600 rows drawn (seed 1) from UCI Bike Sharing's
hourly file, its 12 features and the raw count cnt (1 to 977) as the target.
Nothing here is scaled: the example scales the features and leaves the
targets as given.
"""
import csv
import os
import random
import sys


def synth(path, seed, rows=300, features=5, amp=60.0):
    r = random.Random(seed)
    beta = [r.uniform(-1, 1) * amp for _ in range(features)]
    with open(path, "w") as f:
        for _ in range(rows):
            x = [r.uniform(-1, 1) for _ in range(features)]
            y = r.gauss(300, 50) + sum(b * v for b, v in zip(beta, x))
            f.write("%.3f " % y + " ".join("%d:%.4f" % (k + 1, v) for k, v in enumerate(x)) + "\n")


def synth_large(path, seed=1, rows=500, features=8):
    r = random.Random(seed)
    beta = [r.uniform(-1, 1) * 100 for _ in range(features)]
    with open(path, "w") as f:
        for _ in range(rows):
            x = [r.uniform(0, 100) for _ in range(features)]
            y = r.gauss(1000, 200) + sum(b * (v - 50) / 50 for b, v in zip(beta, x))
            f.write("%.3f " % y + " ".join("%d:%.4f" % (k + 1, v) for k, v in enumerate(x)) + "\n")


def bike(path, data):
    feats = ["season", "yr", "mnth", "hr", "holiday", "weekday", "workingday", "weathersit", "temp", "atemp", "hum", "windspeed"]
    rows = list(csv.DictReader(open(os.path.join(data, "bike_hour.csv"))))
    rows = random.Random(1).sample(rows, 600)
    with open(path, "w") as f:
        for row in rows:
            f.write(row["cnt"] + " " + " ".join("%d:%s" % (i + 1, row[k]) for i, k in enumerate(feats)) + "\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for s in (1, 2, 3):
        synth(os.path.join(out, "synth-%d.txt" % s), s)
    synth_large(os.path.join(out, "synth-large.txt"))
    if len(sys.argv) > 2:
        bike(os.path.join(out, "bike-hour-600.txt"), sys.argv[2])


if __name__ == "__main__":
    main()
