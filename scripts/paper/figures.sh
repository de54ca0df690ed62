#!/usr/bin/env bash
# figures.sh — the paper-protocol study's accuracy plots (validation kNN as lines, the
# probe as markers; mean over seeds with a band from the lowest to the highest seed)
# against iterations, images drawn and wall time, from the committed run files.
# The seed-1 L-SGD run evaluated only at its end (its eval period differs), so
# --merge-seeds draws it apart from seeds 2 and 3.
# Usage: scripts/paper/figures.sh [OUT] (default docs/img/paper)
set -euo pipefail
out=${1:-docs/img/paper}
bin=${SIMCLR:-./simclr}
R=results/paper
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" report --merge-seeds $R/lsgd-t-lr2 $R/lsgd-lr2-s2 $R/lsgd-lr2-s3 \
	$R/vrrt-t-lr1 $R/vrrt-lr1-s2 $R/vrrt-lr1-s3 $R/rt-t-lr0.5 $R/rt-lr0.5-s2 $R/rt-lr0.5-s3 \
	$R/rt-meas-lr0.5-s1 $R/rt-meas-lr0.5-s2 $R/rt-meas-lr0.5-s3 \
	$R/sgd64-t-lr2 $R/sgd64-lr2-s2 $R/sgd64-lr2-s3 $R/lsgd-it22-lr2-s1 $R/lsgd-it22-lr2-s2 --out "$tmp" >/dev/null
mkdir -p "$out"
cp "$tmp"/accuracy_vs_{iterations,samples,wall}.png "$out"/
echo "figures.sh: wrote $out/accuracy_vs_{iterations,samples,wall}.png"
