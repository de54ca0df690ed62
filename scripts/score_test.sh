#!/usr/bin/env bash
# score_test.sh — score each FINAL trained network once on its test images
# with the linear probe (`simclr eval linear-probe`), into ROOT/NAME/test_probe.json,
# and print its top-1 accuracy; a network already scored is not scored again.
# Never used to choose anything. studies/small-batches/scripts/score_test.sh and
# studies/simclr-paper/scripts/score_test.sh give each study's data and probe flags.
# Usage: [SIMCLR=./simclr] scripts/score_test.sh --root ROOT [EVAL FLAGS...] -- NAME...
set -euo pipefail
[[ ${1:-} == --root && $# -ge 2 ]] || { echo "usage: scripts/score_test.sh --root ROOT [EVAL FLAGS...] -- NAME..." >&2; exit 2; }
root=$2
shift 2
flags=()
while [[ $# -gt 0 && $1 != -- ]]; do
	flags+=("$1")
	shift
done
[[ ${1:-} == -- ]] || { echo "score_test.sh: end the eval flags with -- and name the runs after it" >&2; exit 2; }
shift
bin=${SIMCLR:-./simclr}
top1() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['top1'])" "$1"; }
for name in "$@"; do
	run=$root/$name
	[[ -f $run/model.safetensors ]] || { echo "score_test.sh: $run has no model.safetensors; train it first" >&2; exit 1; }
	if [[ -f $run/test_probe.json ]]; then
		echo "score_test.sh: $name already scored: $(top1 "$run/test_probe.json")%"
		continue
	fi
	"$bin" eval linear-probe --checkpoint "$run/model.safetensors" "${flags[@]}" --json >"$run/test_probe.json.tmp"
	mv "$run/test_probe.json.tmp" "$run/test_probe.json"
	echo "score_test.sh: $name test top-1 $(top1 "$run/test_probe.json")%"
done
