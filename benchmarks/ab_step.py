#!/usr/bin/env python3
"""A/B of whole training steps between simclr binaries (or settings).

Runs `simclr bench --device cpu --json` for every arm at every image count,
alternating the arms and flipping their order every round, and prints the
best (lowest) step time and CPU time per step of each arm over the rounds,
then every round's step time. The best round is the one least disturbed by
other work on a shared machine; the alternation spreads slow spells over
every arm alike.

An arm is NAME=PATH, or NAME=PATH,VAR=VALUE,... to run PATH with extra
environment variables (for one binary under two settings):

    benchmarks/ab_step.py --images 2,8 --rounds 4 \\
        before=/tmp/simclr_old after=./simclr \\
        library=./simclr,SIMCLR_GEMM=library
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

from cpu_compare import cpu_model  # the same CPU name as the PyTorch comparison


def load():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def parse_arm(text):
    name, sep, rest = text.partition("=")
    if not sep or not rest:
        sys.exit(f"ab_step.py: arm {text!r}: want NAME=PATH or NAME=PATH,VAR=VALUE,...")
    path, *assignments = rest.split(",")
    env = {}
    for a in assignments:
        var, sep, value = a.partition("=")
        if not sep:
            sys.exit(f"ab_step.py: arm {text!r}: {a!r} is not VAR=VALUE")
        env[var] = value
    if not os.access(path, os.X_OK):
        sys.exit(f"ab_step.py: arm {name}: {path} is not an executable simclr binary (build it with `go build -o {path} ./cmd/simclr`)")
    return name, path, env


def steps_for(images):
    # About 48 images' worth of steps per run, between 3 and 12.
    return max(3, min(12, 48 // images))


def bench(path, env, images, multilevel):
    cmd = [path, "bench", "--device", "cpu", "--images", str(images),
           "--steps", str(steps_for(images)), "--json"]
    if multilevel:
        cmd.append("--multilevel")
    out = subprocess.run(cmd, env={**os.environ, **env}, check=True,
                         capture_output=True, text=True).stdout
    d = json.loads(out)
    return d["step_seconds"], d["cpu_seconds_per_step"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("arms", nargs="+", help="NAME=PATH[,VAR=VALUE...]")
    ap.add_argument("--images", default="2,4,8,16", help="comma-separated image counts")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--multilevel", action="store_true", help="time the multilevel loss")
    args = ap.parse_args()
    arms = [parse_arm(a) for a in args.arms]
    images = [int(x) for x in args.images.split(",")]
    print(f"benchmarks/ab_step.py {' '.join(sys.argv[1:])}")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs); "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
          f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}; load {load()}")
    results = {(n, a[0]): [] for n in images for a in arms}
    for r in range(args.rounds):
        order = arms if r % 2 == 0 else arms[::-1]
        for n in images:
            for name, path, env in order:
                results[(n, name)].append(bench(path, env, n, args.multilevel))
    print(f"load after: {load()}")
    for n in images:
        for name, _, _ in arms:
            rs = results[(n, name)]
            steps = [s for s, _ in rs]
            print(f"images {n:3d} {name:12s} best step {1000 * min(steps):7.1f} ms  "
                  f"best cpu {1000 * min(c for _, c in rs):7.1f} ms  "
                  f"all [{', '.join(f'{1000 * s:.1f}' for s in steps)}]")


if __name__ == "__main__":
    main()
