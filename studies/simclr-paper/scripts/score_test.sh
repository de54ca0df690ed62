#!/usr/bin/env bash
# score_test.sh — score a FINAL arm's trained network once on the 10,000
# CIFAR-10 (JPEG q75 rebuild) test images with the linear probe (fitted on
# 10,000 class-balanced training images, as the runs' own probe), into
# runs/paper/NAME/test_probe.json (scripts/score_test.sh, at nice 10).
# Usage: [SIMCLR=./simclr-paper] studies/simclr-paper/scripts/score_test.sh NAME...
set -euo pipefail
exec nice -n 10 "$(dirname "$0")/../score_test.sh" --root "${STUDY_ROOT:-runs/paper}" \
	--data-dir data-cache --dataset cifar10 --val-split 0 --train-subset 10000 --test-subset 0 \
	--width 0.125 --device cpu -- "$@"
