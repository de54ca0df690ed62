#!/usr/bin/env bash
# queue.sh — run the study's plan one run at a time. The plan (default
# studies/small-batches/queues/plan.txt) holds one run a line: NAME then its simclr train
# flags; '#' starts a comment. A NAME starting with levels- runs
# levels.sh NAME RUN [simclr levels flags] instead (per-level diagnostics). The file is read again before every run, so
# lines may be added or reordered while the queue works; finished runs are
# skipped (run_one.sh), failed ones are reported and not retried.
# Run it in the background so a closed session loses nothing:
#   nohup studies/small-batches/scripts/queue.sh > runs/study/queue.log 2>&1 &
# RUN_ONE names another runner with run_one.sh's interface (e.g.
# studies/simclr-paper/scripts/run_one.sh, with STUDY_ROOT=runs/paper).

# The body is one function, parsed whole before it runs, so editing this
# file while a queue runs cannot change a run under way.
main() {
	set -uo pipefail
	plan=${1:-scripts/study/plan.txt}
	root=${STUDY_ROOT:-runs/study}
	run_one=${RUN_ONE:-scripts/study/run_one.sh}
	declare -A tried
	while :; do
		next=""
		while read -r name rest; do
			[[ -z $name || $name == \#* ]] && continue
			[[ -n ${tried[$name]:-} ]] && continue
			grep -qs '"exit_code": 0' "$root/$name.study.json" && continue
			next="$name $rest"; break
		done <"$plan"
		[[ -z $next ]] && break
		read -r name rest <<<"$next"
		tried[$name]=1
		echo "queue.sh: $(date -u +%T) start $name: $rest"
		# shellcheck disable=SC2086 # the plan's flags are split on purpose
		if [[ $name == levels-* ]]; then
			studies/small-batches/scripts/levels.sh "$name" $rest || echo "queue.sh: $name FAILED (see $root/$name.log)"
		else
			"$run_one" "$name" $rest || echo "queue.sh: $name FAILED (see $root/$name.log)"
		fi
	done
	echo "queue.sh: $(date -u +%T) plan done"
}
main "$@"
exit
