#!/usr/bin/env bash
# score_test.sh — score a FINAL arm's trained network once on the 10,000
# CIFAR-10 (JPEG q75 rebuild) test images with the linear probe (fitted on
# 10,000 class-balanced training images, as the runs' own probe), into
# runs/paper/NAME/test_probe.json. Never used to choose anything.
# Usage: [SIMCLR=./simclr-paper] scripts/paper/score_test.sh NAME...
set -euo pipefail
root=${STUDY_ROOT:-runs/paper}
bin=${SIMCLR:-./simclr}
for name in "$@"; do
	run=$root/$name
	[[ -f $run/model.safetensors ]] || { echo "score_test.sh: $run has no model.safetensors; train it first" >&2; exit 1; }
	if [[ -f $run/test_probe.json ]]; then
		echo "score_test.sh: $name already scored"
		continue
	fi
	nice -n 10 "$bin" eval linear-probe --checkpoint "$run/model.safetensors" --data-dir data-cache --dataset cifar10 \
		--val-split 0 --train-subset 10000 --test-subset 0 --width 0.125 --device cpu --json >"$run/test_probe.json.tmp"
	mv "$run/test_probe.json.tmp" "$run/test_probe.json"
	echo "score_test.sh: $name test top-1 $(python3 -c "import json;print(json.load(open('$run/test_probe.json'))['top1'])")%"
done
