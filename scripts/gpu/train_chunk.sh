#!/usr/bin/env bash
# train_chunk.sh — run THERE: one piece of a long simclr training run on the
# GPU machine, for runs longer than one command may take there (10
# minutes). The run lives in /tmp/simclr-gpu/runs/NAME on the machine, which
# may keep it only while the machine stays up: start the next chunk at once.
# Checkpoints (46 MB of weights and more) are too large to copy back (files
# of at most 16 MiB come back from $OUT); the run's small files (config.json, metrics.jsonl, eval.jsonl,
# linear_probe.json) and the log do.
#
#   first chunk:  bash scripts/gpu/train_chunk.sh NAME [BUDGET_S] -- TRAIN_FLAGS...
#   next chunks:  bash scripts/gpu/train_chunk.sh NAME [BUDGET_S]      (resumes)
#
# The first chunk runs `simclr train --device cuda --dataset cifar10
# --data-dir /tmp/simclr-gpu/data --out RUN --no-progress TRAIN_FLAGS...`
# (unpacking .gpu/cifar10-jpeg.tar.gz first); later ones `simclr train
# --resume RUN --device cuda`. BUDGET_S (default 540, at most 560) counts
# from the script's start, data unpacking included: at that point the run
# gets SIGTERM, checkpoints and stops, and 20 s later it is killed if it has
# not, so that everything ends inside the device's 600 s limit (with 20 s
# left for copying the run's small files to $OUT). Example (VR RT-MLMC,
# 512-image top level):
#
#   bash scripts/gpu/train_chunk.sh vr-rt -- --estimator vr-rtmlmc --max-level 9 --epochs 100 --eval-every 10
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

name=${1:-}
[[ -n $name && $name != -* ]] || {
	sed -n '2,24p' "$0"
	exit 2
}
shift
# The device command limit is 600 s: budget + kill_after + the copies
# after the run must stay below it.
budget=540
kill_after=20
max_budget=560
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
	budget=$1
	shift
fi
((budget >= 1 && budget <= max_budget)) || {
	echo "train_chunk.sh: BUDGET_S $budget: use 1..$max_budget (SIGTERM at BUDGET_S, a kill ${kill_after}s later, all inside the 600 s device limit)"
	exit 2
}
[[ ${1:-} == -- ]] && shift

OUT=${OUT:-/tmp/simclr-gpu-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
simclr=$PWD/.gpu/simclr
[[ -x $simclr ]] || {
	echo "train_chunk.sh: no .gpu/simclr: run scripts/gpu/prepare.sh on a machine with Go and copy .gpu/ here"
	exit 1
}
run=$gpu_work/runs/$name
log=$OUT/train-$name.log
data_dir=$gpu_work/data

if [[ -f $run/state.safetensors ]]; then
	(($# == 0)) || echo "train_chunk.sh: $run exists: resuming it, ignoring the flags $*"
	cmd=("${go_env[@]}" "$simclr" train --resume "$run" --device cuda --no-progress --checkpoint-every 4m)
else
	if [[ -d $run ]]; then
		echo "train_chunk.sh: $run has no checkpoint (an earlier chunk failed before its first one): starting it again"
		rm -rf "$run"
	fi
	if [[ ! -d $data_dir/cifar10-jpeg/train/airplane ]]; then
		[[ -f .gpu/cifar10-jpeg.tar.gz ]] || {
			echo "train_chunk.sh: no .gpu/cifar10-jpeg.tar.gz: run scripts/gpu/prepare.sh (without --no-data)"
			exit 1
		}
		mkdir -p "$data_dir/cifar10-jpeg" && tar -xzf .gpu/cifar10-jpeg.tar.gz -C "$data_dir/cifar10-jpeg" || exit 1
	fi
	# A checkpoint every 4 minutes: a chunk killed after its SIGTERM loses
	# at most that (flags given after override it).
	cmd=("${go_env[@]}" "$simclr" train --device cuda --dataset cifar10 --data-dir "$data_dir" --out "$run" --no-progress --checkpoint-every 4m "$@")
fi

# SECONDS counts from the script's start: unpacking the data came out of
# the budget.
left=$((budget - SECONDS))
((left >= 10)) || {
	echo "train_chunk.sh: only ${left}s of the ${budget}s budget left after unpacking the data: run again (the data stay unpacked)" | tee -a "$log"
	exit 0
}
echo "train_chunk.sh: ${cmd[*]} (SIGTERM after ${left}s, kill ${kill_after}s later)" | tee -a "$log"
timeout --signal=TERM --kill-after="$kill_after" "$left" "${cmd[@]}" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
if [[ -d $run ]]; then
	(cd "$run" && tar --exclude='*.safetensors' -czf "$OUT/run-$name.tar.gz" .)
	[[ -f $run/metrics.jsonl ]] && echo "last metrics: $(tail -n 1 "$run/metrics.jsonl")"
	ls -l "$run"
fi
case $rc in
124) echo "train_chunk.sh: stopped at the ${budget}s limit (checkpointed on SIGTERM): run the same command again to continue" ;;
137) echo "train_chunk.sh: killed ${kill_after}s after SIGTERM (no clean stop; the last periodic checkpoint stands): run the same command again to continue" ;;
0) echo "train_chunk.sh: run finished" ;;
*) echo "train_chunk.sh: simclr train exited with status $rc" ;;
esac
[[ $rc == 124 ]] && exit 0
exit "$rc"
