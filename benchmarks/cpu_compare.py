#!/usr/bin/env python3
"""simclr against PyTorch on the same CPU cores, alternating runs.

For each round, each batch size and each loss (plain NT-Xent, multilevel
correction) it runs `simclr bench --device cpu --json` and then
pytorch_simclr_bench.py --device cpu (the order flips every round), each in
its own process so that peak resident memory is that configuration's own.
Alternating matters on a shared machine: other load slows both programs of a
pair alike, so the ratio of a pair is steadier than either time.

It prints every run as a JSON line on stderr and then a Markdown table:
each program's best step time over the rounds (the least disturbed by other
work on the machine) and the ratio of the two bests (PyTorch / simclr, above
1 when simclr is faster), then the median and range over the rounds of
each program's step time and of the per-round speed ratio, the same for
the process CPU time per step (all threads: the step's own cost, whatever
share of the cores it got) and each program's peak resident memory
(largest over the rounds). `uptime` is recorded before and after, with the
CPU model name (/proc/cpuinfo) and OPENBLAS_CORETYPE. Every run, the
table and the machine go to a JSON file (--out, by default
studies/engine-speed/results/cpu/compare-<UTC time>.json in the repository) and the table to
the same name with .md. PyTorch runs with OMP_WAIT_POLICY=PASSIVE unless
--omp-wait-policy says otherwise: GNU OpenMP's default spin-waiting makes
its steps up to ten times slower on cores other processes also use.

    go build -o simclr ./cmd/simclr
    /usr/bin/python3 benchmarks/cpu_compare.py --simclr ./simclr \\
        --images 2,4,8,16,64 --rounds 3
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys


def parse_args():
    p = argparse.ArgumentParser(description="alternating CPU step timings of simclr and PyTorch")
    p.add_argument("--simclr", default="./simclr", help="simclr binary (default %(default)s)")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="Python with torch and torchvision (default %(default)s, Debian's python3-torch)")
    p.add_argument("--images", default="2,4,8,16,64", help="comma-separated images per step (default %(default)s)")
    p.add_argument("--modes", default="plain,multilevel", help="plain, multilevel or both (default %(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (default %(default)s)")
    p.add_argument("--threads", type=int, default=2,
                   help="cores for both programs: PyTorch's intra-op threads, and both processes pinned to "
                        "that many cores of this process's affinity, so that simclr (which uses every core it "
                        "may run on) gets no more than PyTorch (default %(default)s)")
    p.add_argument("--no-pin", action="store_true",
                   help="do not pin the processes to --threads cores (simclr then uses every core it may run on)")
    p.add_argument("--omp-wait-policy", default="PASSIVE", choices=["PASSIVE", "ACTIVE", "default"],
                   help="OMP_WAIT_POLICY of the PyTorch runs (default %(default)s: on cores shared with other "
                        "processes GNU OpenMP's spinning threads make PyTorch's steps ten times slower; "
                        "'default' leaves the environment alone)")
    p.add_argument("--step-budget", type=float, default=1.5,
                   help="approximate seconds of timed steps per run at the issue's step times; "
                        "steps = clamp(budget / (0.08 s x images), 2, 10) (default %(default)s)")
    p.add_argument("--out", default="",
                   help="JSON file of every run and the table (default studies/engine-speed/results/cpu/compare-<UTC time>.json "
                        "in the repository; the table also goes to the same name with .md)")
    a = p.parse_args()
    a.image_list = [int(v) for v in a.images.split(",") if v.strip()]
    a.mode_list = [m.strip() for m in a.modes.split(",") if m.strip()]
    for m in a.mode_list:
        if m not in ("plain", "multilevel"):
            p.error("--modes: %r is neither plain nor multilevel" % m)
    if a.rounds < 1:
        p.error("--rounds %d: must be at least 1" % a.rounds)
    if not os.path.exists(a.simclr):
        p.error("--simclr %s: no such file; build it with `go build -o simclr ./cmd/simclr`" % a.simclr)
    return a


def steps_for(images, budget):
    return max(2, min(10, int(round(budget / (0.08 * images)))))


def pinned_cores(threads, pin):
    """The cores both programs run on: the first `threads` of this process's
    affinity, or None (no pinning) with --no-pin or where affinity is not
    available."""
    if not pin or not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    if threads > len(cores):
        raise SystemExit("--threads %d: this process may run on %d cores only" % (threads, len(cores)))
    return cores[:threads]


def run_json(cmd, env=None, cores=None):
    pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, preexec_fn=pin)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(cmd), out.returncode, out.stderr.strip()[-500:]))
    return json.loads(lines[-1])


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                if key.strip() == "model name" and val.strip():
                    return val.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fmt_range(vals, scale=1.0, digits=0):
    f = "%%.%df" % digits
    return (f + " (" + f + "-" + f + ")") % (statistics.median(vals) * scale, min(vals) * scale, max(vals) * scale)


def main():
    a = parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    torch_script = os.path.join(here, "pytorch_simclr_bench.py")
    torch_env = dict(os.environ)
    if a.omp_wait_policy != "default":
        torch_env["OMP_WAIT_POLICY"] = a.omp_wait_policy
    started = datetime.datetime.now(datetime.timezone.utc)
    out_json = a.out or os.path.join(os.path.dirname(here), "results", "cpu",
                                     "compare-" + started.strftime("%Y%m%dT%H%MZ") + ".json")
    cores = pinned_cores(a.threads, not a.no_pin)
    machine = {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "pinned_cores": cores,
               "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
               "uptime_before": uptime(), "started_utc": started.isoformat(timespec="seconds")}
    print("before: " + machine["uptime_before"], file=sys.stderr, flush=True)
    results = {}  # (images, mode) -> {"simclr": [...], "pytorch": [...]}
    for rnd in range(a.rounds):
        for images in a.image_list:
            for mode in a.mode_list:
                steps = steps_for(images, a.step_budget)
                ml = ["--multilevel"] if mode == "multilevel" else []
                ours = [a.simclr, "bench", "--device", "cpu", "--images", str(images), "--steps", str(steps),
                        "--json"] + ml
                theirs = [a.python, torch_script, "--device", "cpu", "--threads", str(a.threads), "--images",
                          str(images), "--steps", str(steps), "--warmup", "1"] + ml
                order = [("simclr", ours, None), ("pytorch", theirs, torch_env)]
                if rnd % 2 == 1:
                    order.reverse()
                slot = results.setdefault((images, mode), {"simclr": [], "pytorch": []})
                for name, cmd, env in order:
                    res = run_json(cmd, env, cores)
                    res["round"] = rnd
                    print(json.dumps(res), file=sys.stderr, flush=True)
                    slot[name].append(res)
    machine["uptime_after"] = uptime()
    machine["finished_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    print("after: " + machine["uptime_after"], file=sys.stderr, flush=True)

    first = results[(a.image_list[0], a.mode_list[0])]
    lines = [
        "CPU: %s (%d logical CPUs; both programs on %s), OPENBLAS_CORETYPE=%s; %s to %s UTC; load before: %s; after: %s" % (
            machine["cpu_model"], machine["cpu_count"],
            ("cores " + ",".join(str(c) for c in cores)) if cores else "every core (not pinned)",
            machine["openblas_coretype"] or "(unset)",
            machine["started_utc"], machine["finished_utc"], machine["uptime_before"], machine["uptime_after"]),
        "simclr:  " + first["simclr"][0].get("backend", "?"),
        "PyTorch: " + first["pytorch"][0].get("backend", "?") + ", OMP_WAIT_POLICY " + a.omp_wait_policy,
        "%d alternating rounds; best = fastest round, median (range) over the rounds" % a.rounds,
        "",
        "| images (views) | loss | simclr best step, ms | PyTorch best step, ms | ratio of bests | "
        "simclr step, ms | PyTorch step, ms | speed ratio per round | "
        "simclr CPU ms/step | PyTorch CPU ms/step | CPU-time ratio | simclr peak RSS, MB | PyTorch peak RSS, MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    table = []
    for images in a.image_list:
        for mode in a.mode_list:
            slot = results[(images, mode)]
            ours = [r["step_seconds"] for r in slot["simclr"]]
            theirs = [r["step_seconds"] for r in slot["pytorch"]]
            ratios = [t / o for o, t in zip(ours, theirs)]
            ocpu = [r["cpu_seconds_per_step"] for r in slot["simclr"]]
            tcpu = [r["cpu_seconds_per_step"] for r in slot["pytorch"]]
            cratios = [t / o for o, t in zip(ocpu, tcpu)]
            row = {"images": images, "views": 2 * images, "loss": mode,
                   "simclr_best_step_seconds": min(ours), "pytorch_best_step_seconds": min(theirs),
                   "ratio_of_bests": min(theirs) / min(ours),
                   "simclr_step_seconds": ours, "pytorch_step_seconds": theirs, "speed_ratios": ratios,
                   "simclr_cpu_seconds_per_step": ocpu, "pytorch_cpu_seconds_per_step": tcpu,
                   "simclr_peak_rss_mb": max(r["peak_rss_mb"] for r in slot["simclr"]),
                   "pytorch_peak_rss_mb": max(r["peak_rss_mb"] for r in slot["pytorch"])}
            table.append(row)
            lines.append("| %d (%d) | %s | %.0f | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %.0f | %.0f |" % (
                images, 2 * images, mode, min(ours) * 1e3, min(theirs) * 1e3, row["ratio_of_bests"],
                fmt_range(ours, 1e3), fmt_range(theirs, 1e3), fmt_range(ratios, 1, 2),
                fmt_range(ocpu, 1e3), fmt_range(tcpu, 1e3), fmt_range(cratios, 1, 2),
                row["simclr_peak_rss_mb"], row["pytorch_peak_rss_mb"]))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    runs = [r for slot in results.values() for name in ("simclr", "pytorch") for r in slot[name]]
    os.makedirs(os.path.dirname(os.path.abspath(out_json)), exist_ok=True)
    with open(out_json, "w") as f:
        json.dump({"command": sys.argv, "machine": machine, "rounds": a.rounds, "table": table, "runs": runs},
                  f, indent=1)
        f.write("\n")
    md = os.path.splitext(out_json)[0] + ".md"
    with open(md, "w") as f:
        f.write("    " + " ".join(sys.argv) + "\n\n" + text)
    print("wrote %s and %s" % (out_json, md), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
