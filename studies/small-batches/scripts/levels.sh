#!/usr/bin/env bash
# levels.sh — `simclr levels` (per-level mean, variance and cost of H^l,
# fitted b and c, telescoping check, predicted variance x cost per estimator)
# on a study run's network, as JSON into runs/study/NAME.json, with the
# command, load and machine in runs/study/NAME.study.json (as run_one.sh).
# Usage: studies/small-batches/scripts/levels.sh NAME RUN [simclr levels flags...]
#   e.g. levels.sh levels-init-group runs/study/init-group --random-init --draws 16

# The body is one function, parsed whole before it runs, so editing this
# file while a queue runs cannot change a run under way.
main() {
	set -euo pipefail
	name=$1 run=$2; shift 2
	root=${STUDY_ROOT:-runs/study}
	bin=${SIMCLR:-./simclr}
	if grep -qs '"exit_code": 0' "$root/$name.study.json"; then
		echo "levels.sh: $name already done, skipped"
		exit 0
	fi
	args=(levels --run "$run" --device cpu --json "$@")
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	start=$(date -u +%FT%TZ)
	t0=$(date +%s.%N)
	rc=0
	nice -n 10 "$bin" "${args[@]}" >"$root/$name.json.tmp" 2>"$root/$name.log" || rc=$?
	t1=$(date +%s.%N)
	[[ $rc == 0 ]] && mv "$root/$name.json.tmp" "$root/$name.json"
	load_after=$(cut -d' ' -f1-3 /proc/loadavg)
	cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
	python3 - "$root/$name.study.json" "$name" "$start" "$t0" "$t1" "$load_before" "$load_after" "$cpu" "$(git rev-parse --short HEAD)" "$rc" "${args[@]}" <<-'PY'
	import json, sys
	path, name, start, t0, t1, lb, la, cpu, commit, rc, *args = sys.argv[1:]
	json.dump({"name": name, "start_utc": start, "command_seconds": float(t1) - float(t0),
	           "load_before": lb, "load_after": la, "cpu": cpu, "nproc": 2, "commit": commit,
	           "exit_code": int(rc), "command": " ".join(["simclr"] + args)},
	          open(path, "w"), indent=1)
	PY
	echo "levels.sh: $name exit $rc, $(python3 -c "print(round($t1-$t0))") s, load $load_before -> $load_after"
	exit $rc
}
main "$@"
exit
