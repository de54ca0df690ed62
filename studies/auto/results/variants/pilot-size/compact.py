#!/usr/bin/env python3
"""Keep of a folder of auto's result files (NAME.jsonl, as the study's
eval.sh writes them) what the pilot-size record reads: per file and target
gap, from the run of auto that aimed at that gap, the samples after which
each trial's gap stays at or below it (null: not within the budget).

    python3 compact.py FOLDER OUT.json.gz
"""
import gzip
import json
import os
import sys


def main(folder, out):
    kept = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".jsonl"):
            continue
        gaps, trials = [], []
        with open(os.path.join(folder, name)) as f:
            # One line per run, each run of auto aiming at its own target:
            # the gap's figures are those of the run that aimed at it.
            for line in f:
                row = json.loads(line)
                auto = next(m for m in row["methods"] if m["name"] == "auto")
                gap = auto["auto"][0]["target"]["gap"]
                gaps.append(gap)
                trials.append(auto["stays_below"][row["targets"].index(gap)]["trials"])
        kept[name[: -len(".jsonl")]] = {"targets": gaps, "stays_below": trials}
    # No name and no time in the gzip header, as gzip -n writes it: the
    # same runs give the same bytes.
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(json.dumps(kept, sort_keys=True, separators=(",", ":")).encode())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
