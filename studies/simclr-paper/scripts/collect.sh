#!/usr/bin/env bash
# collect.sh — copy what the tables and figures of the paper-protocol study
# read from runs/paper/NAME into studies/simclr-paper/results/paper/NAME (committed): config.json,
# eval.jsonl, linear_probe.json, test_probe.json where the test set was
# scored, the run's log as train.log.gz, run_one.sh's record as run.json (with
# the commit of the binary that ran, from $SIMCLR.commit), metrics.jsonl
# thinned to at most 250 lines (every k-th and the last), and
# levels-*.json files of `simclr levels` where taken.
# Usage: studies/simclr-paper/scripts/collect.sh NAME...
set -euo pipefail
src=${STUDY_ROOT:-runs/paper}
dst=${RESULTS:-studies/simclr-paper/results/paper}
bin=${SIMCLR:-./simclr-paper}
commit=$(cat "$bin.commit" 2>/dev/null || git rev-parse --short HEAD)
for name in "$@"; do
	run=$src/$name
	[[ -f $src/$name.study.json ]] || { echo "collect.sh: $src/$name.study.json missing: the run has not finished" >&2; exit 1; }
	if [[ $name == levels-* ]]; then
		# simclr levels (studies/small-batches/scripts/levels.sh): the report and its record.
		cp "$src/$name.json" "$dst/$name.json"
		python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); r["commit"] = sys.argv[3]; json.dump(r, open(sys.argv[2], "w"), indent=1)' \
			"$src/$name.study.json" "$dst/$name.run.json" "$commit"
		echo "collect.sh: $name -> $dst/$name.json"
		continue
	fi
	mkdir -p "$dst/$name"
	for f in config.json eval.jsonl linear_probe.json test_probe.json; do
		[[ -f $run/$f ]] && cp "$run/$f" "$dst/$name/$f"
	done
	cp "$src/$name.log" "$dst/$name/train.log"
	python3 - "$src/$name.study.json" "$dst/$name/run.json" "$commit" "$run/metrics.jsonl" "$dst/$name/metrics.jsonl" <<-'PY'
	import json, sys
	study, out, commit, msrc, mdst = sys.argv[1:]
	rec = json.load(open(study))
	rec["commit"] = commit
	json.dump(rec, open(out, "w"), indent=1)
	lines = open(msrc).read().splitlines()
	k = -(-len(lines) // 249)
	keep = lines[::k]
	if keep[-1] != lines[-1]:
	    keep.append(lines[-1])
	open(mdst, "w").write("\n".join(keep) + "\n")
	PY
	# Compressed, as the tables, simclr report and simclr eval read them.
	gzip -9nf "$dst/$name/metrics.jsonl" "$dst/$name/train.log"
	echo "collect.sh: $name -> $dst/$name"
done
