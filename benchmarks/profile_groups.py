#!/usr/bin/env python3
"""Where a CPU training step's time goes, by kind of work.

Runs `simclr bench --device cpu --cpuprofile` for each binary at each image
count and groups `go tool pprof -top` by function name (SGEMM kernels and
packing, Winograd transforms, im2col/col2im, batch norm, ReLU, optimizer,
memory moves, the Go runtime and the worker hand-off), printing each
group's share of the profile's samples:

    benchmarks/profile_groups.py --images 2,4,8,16 before=/tmp/simclr_old after=./simclr

Shares, not times: the CPU time per step is in `simclr bench`'s output and
in benchmarks/ab_step.py's. Needs Go (for `go tool pprof`).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# First match wins; patterns are searched in the full function name.
GROUPS = [
    ("SGEMM (kernels, packing, OpenBLAS)", r"simclr/blas\.|runtime\.cgocall|purego\."),
    ("Winograd transforms", r"cpu\.wino"),
    ("im2col/col2im", r"cpu\.(im2col|col2im|scatter)"),
    ("batch norm", r"cpu\.(bn|sumAnd|\(\*Backend\)\.(BatchNorm|batchNorm))"),
    ("ReLU", r"ReLU|relu|positiveMask"),
    ("optimizer", r"SGDStep|LARSStep|optim\."),
    ("memory moves", r"runtime\.(memmove|memclr)"),
    ("worker hand-off and Go runtime", r"runtime\.|sync\.|parallel\.|cpu\.\(\*barrier\)"),
]


def groups_of(binary, profile):
    out = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0", binary, profile],
                         check=True, capture_output=True, text=True).stdout
    total, shares = None, {}
    for line in out.splitlines():
        m = re.search(r"Total samples = ([\d.]+)(ms|s)", line)
        if m:
            total = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
        m = re.match(r"\s*([\d.]+)(ms|s|us|µs)\s+[\d.]+%\s+[\d.]+%\s+[\d.]+(?:ms|s|us|µs)\s+[\d.]+%\s+(.*)$", line)
        if not m:
            continue
        flat = float(m.group(1)) * {"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6}[m.group(2)]
        name = m.group(3)
        group = next((g for g, pat in GROUPS if re.search(pat, name)), "other")
        shares[group] = shares.get(group, 0) + flat
    return total, shares


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("arms", nargs="+", help="NAME=PATH of a simclr binary")
    ap.add_argument("--images", default="2,4,8,16")
    args = ap.parse_args()
    arms = []
    for a in args.arms:
        name, sep, path = a.partition("=")
        if not sep or not os.access(path, os.X_OK):
            sys.exit(f"profile_groups.py: {a!r}: want NAME=PATH of an executable simclr binary")
        arms.append((name, path))
    names = [g for g, _ in GROUPS] + ["other"]
    print(f"benchmarks/profile_groups.py {' '.join(sys.argv[1:])}")
    print("| images | binary | samples, s | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.images.split(",")):
            steps = max(4, min(16, 64 // n))
            for name, path in arms:
                prof = os.path.join(tmp, f"{name}-{n}.pb")
                subprocess.run([path, "bench", "--device", "cpu", "--images", str(n), "--steps", str(steps),
                                "--cpuprofile", prof], check=True, capture_output=True)
                total, shares = groups_of(path, prof)
                cells = " | ".join(f"{100 * shares.get(g, 0) / total:.1f}%" for g in names)
                print(f"| {n} | {name} | {total:.2f} | {cells} |")


if __name__ == "__main__":
    main()
