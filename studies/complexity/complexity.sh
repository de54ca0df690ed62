#!/usr/bin/env bash
# Measures the paper's Table 1 (studies/complexity/README.md, "The complexity table,
# measured") into studies/complexity/results, as `go run ./examples/complexity` does
# in one process, but with the prescribed and the tuned cells in two
# processes at once (each with two workers), their files then merged and the
# cells fitted again from the merged points by --replot. The files committed
# in studies/complexity/results come from this script.
#
#   studies/complexity/complexity.sh [OUT [FLAGS...]]
#
# OUT defaults to studies/complexity/results; FLAGS go to both processes (e.g.
# --rows convex to measure one row).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-results/complexity}
if [[ $out == -* ]]; then
	echo "complexity.sh: the first argument is the output folder, got the flag $out: give OUT first, e.g. studies/complexity/complexity.sh studies/complexity/results $*" >&2
	exit 2
fi
shift || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/complexity" ./examples/complexity

nice -n 5 "$tmp/complexity" --no-tune --out "$out" "$@" >/dev/null 2>"$tmp/prescribed.log" &
prescribed=$!
nice -n 5 "$tmp/complexity" --only-tuned --out "$tmp/tuned" "$@" >/dev/null 2>"$tmp/tuned.log" &
tuned=$!
# A failed process stops the other: its output would be thrown away, and
# the exit trap removes the folder it writes to.
wait "$prescribed" || { cat "$tmp/prescribed.log" >&2; kill "$tuned" 2>/dev/null || true; wait "$tuned" 2>/dev/null || true; exit 1; }
wait "$tuned" || { cat "$tmp/tuned.log" >&2; exit 1; }

# The prescribed run wrote the N.A. cells and truncation.jsonl; the tuned
# run adds its cells and points, and --replot fits every measured cell
# again from the points and redraws table.md and the figures.
cat "$tmp/tuned/cells.jsonl" >>"$out/cells.jsonl"
cat "$tmp/tuned/points.jsonl" >>"$out/points.jsonl"
# run.log: one line per cell, with its wall time on the shared machine.
grep -h '^\[' "$tmp/prescribed.log" "$tmp/tuned.log" >"$out/run.log" || true
"$tmp/complexity" --replot "$out" >/dev/null
echo "complexity: wrote $out"
