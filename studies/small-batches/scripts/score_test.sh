#!/usr/bin/env bash
# score_test.sh — score a FINAL configuration's trained network once on the
# 2,000 class-balanced CIFAR-10 test images (data-cache/study/final: the same
# 5,000 training images, the test images as its test split) with the linear
# probe, into runs/study/NAME/test_probe.json (scripts/score_test.sh).
# Usage: studies/small-batches/scripts/score_test.sh NAME...
set -euo pipefail
exec "$(dirname "$0")/../score_test.sh" --root "${STUDY_ROOT:-runs/study}" \
	--dataset folder:data-cache/study/final --device cpu --train-subset 0 --test-subset 0 -- "$@"
