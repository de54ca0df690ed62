#!/usr/bin/env bash
# make_docs.sh — the MLMC study's figures and tables for BENCHMARKS.md:
#   docs/img/mlmc-study/accuracy_vs_{wall,samples,iterations}.png and
#   loss_vs_*.png (simclr report over the runs named below), and
#   docs/img/mlmc-study/levels_{variance,seconds}.png (levelsplot over the
#   simclr levels JSON files); tables on stdout (summary.py, levels_table.py).
# Usage: scripts/study/make_docs.sh RUN_NAME...   (runs under runs/study)
set -euo pipefail
root=${STUDY_ROOT:-runs/study}
out=docs/img/mlmc-study
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=()
for n in "$@"; do runs+=("$root/$n"); done
./simclr report "${runs[@]}" --out "$tmp" >/dev/null
cp "$tmp"/*.png "$out"/
levels=()
for f in "$root"/levels-*.json; do
	[[ -f $f ]] || continue
	n=$(basename "$f" .json)
	levels+=("${n#levels-}=$f")
done
if ((${#levels[@]})); then
	go run ./scripts/study/levelsplot -out "$out" "${levels[@]}"
fi
python3 scripts/study/summary.py --root "$root"
echo
python3 scripts/study/levels_table.py "${levels[@]}"
