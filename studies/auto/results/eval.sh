#!/bin/sh
# The auto study's runs, smallest first, each file written when its run
# ends (run from the repository root; DATA is the folder of the DRO data).
# Usage: sh studies/auto/results/eval.sh DATA [OUT]
# (OUT: the folder to write to, default this one; table.py OUT reads it.)
set -u
DATA=${1:-data-cache/dro}
OUT=${2:-studies/auto/results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(mktemp -d)
go build -o $BIN/dro ./examples/dro
go build -o $BIN/ubsr ./examples/ubsr
go build -o $BIN/pricing ./examples/pricing
for ds in mg mpg housing; do
	$BIN/dro --dataset $ds --method auto --trials 10 --json --data-dir "$DATA" > $OUT/dro-$ds.jsonl.part 2> $OUT/dro-$ds.log &&
		mv $OUT/dro-$ds.jsonl.part $OUT/dro-$ds.jsonl
done
# The raw-target files, written under a temporary folder as OUT/NAME.txt (the
# path the results record).
RAW=$(mktemp -d)
python3 "$HERE/rawtargets.py" "$RAW/OUT" "$DATA"
for name in synth-1 synth-2 synth-3 synth-large bike-hour-600; do
	(cd "$RAW" && $BIN/dro --dataset libsvm:OUT/$name.txt --method auto --trials 10 --json) > $OUT/raw-$name.jsonl.part 2> $OUT/raw-$name.log &&
		mv $OUT/raw-$name.jsonl.part $OUT/raw-$name.jsonl
done
for loss in entropic quadratic-hinge expectile; do
	$BIN/ubsr --method auto --loss $loss --trials 10 --budget 4194304 --workers 2 --json $OUT/ubsr-$loss.jsonl.part > $OUT/ubsr-$loss.txt 2>&1 &&
		mv $OUT/ubsr-$loss.jsonl.part $OUT/ubsr-$loss.jsonl
done
for law in exponential erlang hyperexponential; do
	$BIN/pricing --targets gap --method auto --law $law --seeds 10 --workers 2 --json --png "" > $OUT/pricing-$law.jsonl.part 2> $OUT/pricing-$law.log &&
		mv $OUT/pricing-$law.jsonl.part $OUT/pricing-$law.jsonl
done
# Where the comparator needs more than a third of the study's budget, auto at
# the target's 3x is budget-bound: those problems again with three times the
# budget (table.py's second verdict).
$BIN/dro --dataset housing --method auto --trials 10 --json --data-dir "$DATA" --budget 1200000 > $OUT/budget3x-dro-housing.jsonl.part 2> $OUT/budget3x-dro-housing.log &&
	mv $OUT/budget3x-dro-housing.jsonl.part $OUT/budget3x-dro-housing.jsonl
for loss in entropic quadratic-hinge expectile; do
	$BIN/ubsr --method auto --loss $loss --trials 10 --budget 12582912 --workers 2 --json $OUT/budget3x-ubsr-$loss.jsonl.part > $OUT/budget3x-ubsr-$loss.txt 2>&1 &&
		mv $OUT/budget3x-ubsr-$loss.jsonl.part $OUT/budget3x-ubsr-$loss.jsonl
done
