#!/usr/bin/env bash
# run_one.sh — one training run of the MLMC study into
# runs/study/NAME, with the study's fixed settings (width-1/8 ResNet-18, L = 7,
# the 5,000-image training split, validation on 1,000 held-out training
# images; see make_splits.sh) and the run's own flags. Records the command,
# the machine load before and after, the CPU model and the git commit (the
# binary's, from BINARY.commit beside it where that file exists) in
# runs/study/NAME.study.json, and the log in runs/study/NAME.log.
# A finished run (NAME.study.json with exit code 0) is skipped; an unfinished
# one is started again from scratch, so that its wall time stays one clean
# figure, unless STUDY_RESUME=1: then an unfinished run with a checkpoint
# continues from it (--resume; checkpoints every 10 minutes), for studies
# longer than one sitting, and NAME.study.json counts its segments.
#
# Usage: studies/small-batches/scripts/run_one.sh NAME [simclr train flags...]

# The body is one function, parsed whole before it runs, so editing this
# file while a queue runs cannot change a run under way.
main() {
	set -euo pipefail
	name=$1; shift
	root=${STUDY_ROOT:-runs/study}
	bin=${SIMCLR:-./simclr}
	data=${STUDY_DATA:-data-cache/study/val}
	# The study's fixed flags; another study (studies/simclr-paper/scripts/run_one.sh) sets
	# its own, and STUDY_NICE, the niceness its runs take.
	read -r -a fixed <<<"${STUDY_FLAGS:---dataset folder:$data --device cpu --width 0.125 --max-level 7}"
	out=$root/$name
	if grep -qs '"exit_code": 0' "$root/$name.study.json"; then
		echo "run_one.sh: $name already done, skipped"
		exit 0
	fi
	segments=1
	if [[ ${STUDY_RESUME:-0} == 1 && -f $out/state.safetensors ]]; then
		segments=$(( $(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('segments', 1))" "$root/$name.study.json" 2>/dev/null || echo 1) + 1 ))
		args=(train --resume "$out" --no-progress)
	else
		rm -rf "$out"
		mkdir -p "$root"
		# A fresh start's log is its own: the output is appended below so
		# that a resumed run keeps its earlier segments' lines.
		: >"$root/$name.log"
		every=0
		[[ ${STUDY_RESUME:-0} == 1 ]] && every=10m
		args=(train "${fixed[@]}" --no-progress --checkpoint-every "$every" --out "$out" "$@")
	fi
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	start=$(date -u +%FT%TZ)
	t0=$(date +%s.%N)
	rc=0
	nice -n "${STUDY_NICE:-0}" "$bin" "${args[@]}" >>"$root/$name.log" 2>&1 || rc=$?
	t1=$(date +%s.%N)
	load_after=$(cut -d' ' -f1-3 /proc/loadavg)
	cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
	python3 - "$root/$name.study.json" "$name" "$start" "$t0" "$t1" "$load_before" "$load_after" "$cpu" "$(cat "$bin.commit" 2>/dev/null || git rev-parse --short HEAD)" "$rc" "$segments" "$bin" "${args[@]}" <<-'PY'
	import json, sys
	path, name, start, t0, t1, lb, la, cpu, commit, rc, segments, binary, *args = sys.argv[1:]
	record = {"name": name, "start_utc": start, "command_seconds": float(t1) - float(t0),
	          "load_before": lb, "load_after": la, "cpu": cpu, "nproc": 2, "commit": commit,
	          "exit_code": int(rc), "command": " ".join(["simclr"] + args)}
	try:
	    first = json.load(open(path)) if int(segments) > 1 else None
	except (OSError, ValueError):
	    first = None  # an earlier segment was killed before its record was written
	if first:
	    # A resumed run: the first segment's command and start are kept; the seconds add up
	    # (those of a segment killed before its record are missing: metrics.jsonl has them).
	    record.update(start_utc=first["start_utc"], command=first["command"],
	                  command_seconds=first["command_seconds"] + record["command_seconds"],
	                  resumed_with=" ".join(["simclr"] + args))
	record["segments"] = int(segments)
	json.dump(record, open(path, "w"), indent=1)
	PY
	echo "run_one.sh: $name exit $rc, $(python3 -c "print(round($t1-$t0))") s, load $load_before -> $load_after"
	exit $rc
}
main "$@"
exit
