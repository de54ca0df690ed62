#!/usr/bin/env bash
# make_docs.sh — the MLMC study's figures and tables for its README:
#   studies/small-batches/img/accuracy_vs_{wall,samples,iterations}.png (simclr
#   report over the runs named below), and
#   studies/small-batches/img/levels_{variance,seconds}.png (levelsplot over the
#   simclr levels JSON files); tables on stdout (summary.py, levels_table.py).
# Usage: [OUT=studies/small-batches/img] [LEVELS=1] studies/small-batches/scripts/make_docs.sh RUN_NAME...
# (runs under runs/study; LEVELS=0 skips the levels plot and the tables)
set -euo pipefail
root=${STUDY_ROOT:-runs/study}
out=${OUT:-studies/small-batches/img}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=()
for n in "$@"; do runs+=("$root/$n"); done
./simclr report "${runs[@]}" --out "$tmp" >/dev/null
cp "$tmp"/accuracy_*.png "$out"/ # the loss plots mix levels (2^l-image losses), so they are left out
[[ ${LEVELS:-1} == 0 ]] && exit 0
levels=()
for f in "$root"/levels-*.json; do
	[[ -f $f && $f != *.study.json ]] || continue
	n=$(basename "$f" .json)
	levels+=("${n#levels-}=$f")
done
if ((${#levels[@]})); then
	go run ./scripts/study/levelsplot -out "$out" "${levels[@]}"
fi
python3 studies/small-batches/scripts/summary.py --root "$root"
echo
python3 studies/small-batches/scripts/levels_table.py "${levels[@]}"
