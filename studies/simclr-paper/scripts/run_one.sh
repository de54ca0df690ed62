#!/usr/bin/env bash
# run_one.sh — one training run of the paper-protocol study into
# runs/paper/NAME: the full CIFAR-10 (JPEG q75 rebuild) training set less a
# 5,000-image class-balanced validation split (--val-split 5000, never
# trained on; the kNN monitor and the probe score it), L = 9 (L-SGD batch
# 512, an epoch = 88 iterations), ResNet-18 of width 1/8, with the kNN memory
# bank and the probe's training features cut to 10,000 class-balanced
# training images (--eval-train-subset; training uses all 45,000), and the
# run's own flags, at niceness 10. studies/small-batches/scripts/run_one.sh does the run and
# its record (command, load, CPU model, commit in runs/paper/NAME.study.json,
# the log in runs/paper/NAME.log; a finished run is skipped).
#
# Usage: studies/simclr-paper/scripts/run_one.sh NAME [simclr train flags...]
set -euo pipefail
export STUDY_ROOT=${STUDY_ROOT:-runs/paper}
export STUDY_NICE=${STUDY_NICE:-10}
export STUDY_FLAGS="--data-dir data-cache --dataset cifar10 --val-split 5000 --eval-train-subset 10000 --device cpu --width 0.125 --max-level 9 --workers 1"
exec "$(dirname "$0")/../study/run_one.sh" "$@"
