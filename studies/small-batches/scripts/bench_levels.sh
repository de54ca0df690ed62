#!/usr/bin/env bash
# bench_levels.sh — seconds per oracle query at each level 1..L (2^l images,
# 2^(l+1) views) of the width-1/8 ResNet-18 on this CPU, plain loss (h^l) and
# multilevel loss (H^l, one forward), with the machine load before and after
# each measurement (the machine is shared, so single timings are noisy).
#
# Usage: studies/small-batches/scripts/bench_levels.sh [OUT.jsonl] [MAX_LEVEL]
# Prints one JSON object per (level, kind) line into OUT.jsonl (default
# runs/study/bench_levels.jsonl).
set -euo pipefail
out=${1:-runs/study/bench_levels.jsonl}
max_level=${2:-7}
width=${WIDTH:-0.125}
mkdir -p "$(dirname "$out")"
: >"$out"
for l in $(seq 1 "$max_level"); do
	n=$((1 << l))
	# Fewer timed steps at the large levels: each costs ~n/128 s here.
	steps=$((256 / n)); ((steps < 3)) && steps=3; ((steps > 20)) && steps=20
	for kind in plain multilevel; do
		flag=""; [[ $kind == multilevel ]] && flag="--multilevel"
		load_before=$(cut -d' ' -f1 /proc/loadavg)
		json=$(./simclr bench --device cpu --width "$width" --images "$n" --steps "$steps" $flag --json)
		load_after=$(cut -d' ' -f1 /proc/loadavg)
		printf '{"level":%d,"images":%d,"kind":"%s","steps":%d,"load_before":%s,"load_after":%s,"bench":%s}\n' \
			"$l" "$n" "$kind" "$steps" "$load_before" "$load_after" "$json" >>"$out"
	done
done
echo "bench_levels.sh: wrote $out"
