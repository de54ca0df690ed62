#!/usr/bin/env bash
# run_one.sh — one training run of the MLMC study into
# runs/study/NAME, with the study's fixed settings (width-1/8 ResNet-18, L = 7,
# the 5,000-image training split, validation on 1,000 held-out training
# images; see make_splits.sh) and the run's own flags. Records the command,
# the machine load before and after, the CPU model and the git commit in
# runs/study/NAME.study.json, and the log in runs/study/NAME.log.
# A finished run (NAME.study.json with exit code 0) is skipped; an unfinished
# one is started again from scratch, so that its wall time stays one clean
# figure.
#
# Usage: scripts/study/run_one.sh NAME [simclr train flags...]

# The body is one function, parsed whole before it runs, so editing this
# file while a queue runs cannot change a run under way.
main() {
	set -euo pipefail
	name=$1; shift
	root=${STUDY_ROOT:-runs/study}
	bin=${SIMCLR:-./simclr}
	data=${STUDY_DATA:-data-cache/study/val}
	# The study's fixed flags; another study (scripts/paper/run_one.sh) sets
	# its own, and STUDY_NICE, the niceness its runs take.
	read -r -a fixed <<<"${STUDY_FLAGS:---dataset folder:$data --device cpu --width 0.125 --max-level 7}"
	out=$root/$name
	if grep -qs '"exit_code": 0' "$root/$name.study.json"; then
		echo "run_one.sh: $name already done, skipped"
		exit 0
	fi
	rm -rf "$out"
	mkdir -p "$root"
	args=(train "${fixed[@]}" --no-progress --checkpoint-every 0 --out "$out" "$@")
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	start=$(date -u +%FT%TZ)
	t0=$(date +%s.%N)
	rc=0
	nice -n "${STUDY_NICE:-0}" "$bin" "${args[@]}" >"$root/$name.log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
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
