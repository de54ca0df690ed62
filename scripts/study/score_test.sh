#!/usr/bin/env bash
# score_test.sh — score a FINAL configuration's trained network once on the
# 2,000 class-balanced CIFAR-10 test images (data-cache/study/final: the same
# 5,000 training images, the test images as its test split) with the linear
# probe, into runs/study/NAME/test_probe.json. Never used to choose anything.
# Usage: scripts/study/score_test.sh NAME...
set -euo pipefail
root=${STUDY_ROOT:-runs/study}
bin=${SIMCLR:-./simclr}
for name in "$@"; do
	run=$root/$name
	[[ -f $run/model.safetensors ]] || { echo "score_test.sh: $run has no model.safetensors; train it first" >&2; exit 1; }
	if [[ -f $run/test_probe.json ]]; then
		echo "score_test.sh: $name already scored: $(python3 -c "import json;print(json.load(open('$run/test_probe.json'))['top1'])")%"
		continue
	fi
	"$bin" eval linear-probe --checkpoint "$run/model.safetensors" --dataset folder:data-cache/study/final \
		--device cpu --train-subset 0 --test-subset 0 --json >"$run/test_probe.json.tmp"
	mv "$run/test_probe.json.tmp" "$run/test_probe.json"
	echo "score_test.sh: $name test top-1 $(python3 -c "import json;print(json.load(open('$run/test_probe.json'))['top1'])")%"
done
