#!/usr/bin/env bash
# figures.sh — a paper-protocol study's accuracy plots (validation kNN as lines, the
# probe as markers; mean over seeds with a band from the lowest to the highest seed)
# against iterations, images drawn and wall time, from the committed run files of
# every final arm that RESULTS/arms.json names. Runs whose evaluation period differs
# from their arm's other seeds (the 1-epoch study's L-SGD seed 1) are drawn apart by
# --merge-seeds.
# Usage: studies/simclr-paper/scripts/figures.sh [RESULTS [OUT]]
#   (from the repository root; defaults studies/simclr-paper/results/paper and
#   studies/simclr-paper/img/paper; the 10-epoch small-batch study:
#   studies/small-batches/results/contrastive10 studies/small-batches/img)
set -euo pipefail
R=${1:-studies/simclr-paper/results/paper}
out=${2:-studies/simclr-paper/img/$(basename "$R")}
bin=${SIMCLR:-./simclr}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mapfile -t runs < <(python3 -c '
import json, sys
root = sys.argv[1]
for arm in json.load(open(root + "/arms.json"))["arms"]:
    for run in arm["runs"]:
        print(root + "/" + run)' "$R")
"$bin" report --merge-seeds "${runs[@]}" --out "$tmp" >/dev/null
mkdir -p "$out"
cp "$tmp"/accuracy_vs_{iterations,samples,wall}.png "$out"/
echo "figures.sh: wrote $out/accuracy_vs_{iterations,samples,wall}.png"
