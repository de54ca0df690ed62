#!/usr/bin/env bash
# run_one.sh — one training run of the paper-protocol study into
# runs/paper/NAME: the full CIFAR-10 (JPEG q75 rebuild) training set less a
# 5,000-image class-balanced validation split (--val-split 5000, never
# trained on; the kNN monitor and the probe score it), L = 9 (L-SGD batch
# 512, an epoch = 88 iterations), ResNet-18 of width 1/8, with the kNN memory
# bank and the probe's training features cut to 10,000 class-balanced
# training images (--eval-train-subset; training uses all 45,000), and the
# run's own flags. Records the command, the machine load before and after,
# the CPU model and the git commit in runs/paper/NAME.study.json, and the log
# in runs/paper/NAME.log. A finished run is skipped; an unfinished one is
# started again from scratch.
#
# Usage: scripts/study/run_one.sh NAME [simclr train flags...]

# The body is one function, parsed whole before it runs, so editing this
# file while a queue runs cannot change a run under way.
main() {
	set -euo pipefail
	name=$1; shift
	root=${STUDY_ROOT:-runs/paper}
	bin=${SIMCLR:-./simclr}
	out=$root/$name
	if grep -qs '"exit_code": 0' "$root/$name.study.json"; then
		echo "run_one.sh: $name already done, skipped"
		exit 0
	fi
	rm -rf "$out"
	mkdir -p "$root"
	args=(train --data-dir data-cache --dataset cifar10 --val-split 5000 --eval-train-subset 10000
		--device cpu --width 0.125 --max-level 9 --workers 1
		--no-progress --checkpoint-every 0 --out "$out" "$@")
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	start=$(date -u +%FT%TZ)
	t0=$(date +%s.%N)
	rc=0
	nice -n 10 "$bin" "${args[@]}" >"$root/$name.log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	# A half-length run for the mid-training diagnostics stops with a
	# checkpoint at --iterations-limit, which simclr reports as an
	# interruption (exit 1): that is this run's planned end.
	if [[ $rc == 1 && " $* " == *" --iterations-limit "* ]] && grep -q "checkpoint saved; continue with" "$root/$name.log"; then
		rc=0
	fi
	load_after=$(cut -d' ' -f1-3 /proc/loadavg)
	cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
	python3 - "$root/$name.study.json" "$name" "$start" "$t0" "$t1" "$load_before" "$load_after" "$cpu" "$(git rev-parse --short HEAD)" "$rc" "$bin" "${args[@]}" <<-'PY'
	import json, sys
	path, name, start, t0, t1, lb, la, cpu, commit, rc, binary, *args = sys.argv[1:]
	json.dump({"name": name, "start_utc": start, "command_seconds": float(t1) - float(t0),
	           "load_before": lb, "load_after": la, "cpu": cpu, "nproc": 2, "commit": commit,
	           "exit_code": int(rc), "command": " ".join(["simclr"] + args)},
	          open(path, "w"), indent=1)
	PY
	echo "run_one.sh: $name exit $rc, $(python3 -c "print(round($t1-$t0))") s, load $load_before -> $load_after"
	exit $rc
}
main "$@"
exit
