#!/usr/bin/env bash
# check.sh OLD NEW DATA OUT — the structure round's before/after check: train
# the same 12-iteration runs with the binary built from main (OLD) and from
# this branch (NEW) and compare sha256 of model.safetensors and of
# metrics.jsonl without its wall-time field; resume with NEW a run folder OLD
# stopped at iteration 5; and compare what `simclr levels --json` (less
# timings and the -opt allocations, which weigh the levels by their measured
# times), `simclr eval knn` and `simclr embed` print or write. The
# predictions themselves are checked exactly by mlmc's
# TestPredictionsMatchFilesOfThePreviousVersion.
# DATA is a folder:PATH image tree (train/CLASS/*.jpg, test/CLASS/*.jpg).
set -euo pipefail
old=$1 new=$2 data=$3 out=$4
mkdir -p "$out"
export SIMCLR_GEMM=built-in # the race between SGEMMs could choose differently in two processes
common=(--dataset "folder:$data" --width 0.125 --min-level 2 --max-level 5 --iterations 12 --probe=false
	--eval-every 0 --no-progress --workers 1 --warmup-epochs 0 --checkpoint-every 0 --seed 7 --qe 3)
hash() { # RUN -> "model=... metrics=..."
	local m j
	m=$(sha256sum <"$1/model.safetensors" | cut -c1-64)
	j=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l); r.pop("wall_seconds",None); print(json.dumps(r,sort_keys=True))' "$1/metrics.jsonl" | sha256sum | cut -c1-64)
	echo "model=$m metrics=$j"
}
fails=0
same() { # WHAT A B
	if [[ $2 == "$3" ]]; then echo "same      $1: $2"; else echo "DIFFERENT $1: old $2, new $3"; fails=$((fails + 1)); fi
}
for est in lsgd vr-rtmlmc rtmlmc vmlmc rumlmc rrmlmc vr-lsgd dcl sogclr; do
	for b in old new; do
		bin=$old; [[ $b == new ]] && bin=$new
		rm -rf "$out/$b-$est"
		"$bin" train "${common[@]}" --estimator "$est" --out "$out/$b-$est" >"$out/$b-$est.log" 2>&1
	done
	same "train $est (12 iterations)" "$(hash "$out/old-$est")" "$(hash "$out/new-$est")"
done
rm -rf "$out/resumed"
"$old" train "${common[@]}" --estimator vr-rtmlmc --iterations-limit 5 --out "$out/resumed" >"$out/resumed-old.log" 2>&1
"$new" train --resume "$out/resumed" --no-progress >"$out/resumed-new.log" 2>&1
same "vr-rtmlmc stopped at 5 by old, resumed to 12 by new, against old's uninterrupted run" "$(hash "$out/old-vr-rtmlmc")" "$(hash "$out/resumed")"
strip='import json,sys
def clean(x):
    if isinstance(x,dict): return {k:clean(v) for k,v in x.items() if "second" not in k and "rel_" not in k and k!="verdict"}
    if isinstance(x,list): return [clean(v) for v in x if not (isinstance(v,dict) and str(v.get("name","")).endswith("-opt"))]
    return x
print(json.dumps(clean(json.load(sys.stdin)),sort_keys=True))'
for b in old new; do
	bin=$old; [[ $b == new ]] && bin=$new
	"$bin" levels --run "$out/old-lsgd" --max-level 4 --draws 4 --device cpu --json 2>/dev/null | python3 -c "$strip" >"$out/$b-levels.json"
	"$bin" eval knn --run "$out/old-lsgd" --knn-k 5 --device cpu --json 2>/dev/null | python3 -c "$strip" >"$out/$b-knn.json"
	"$bin" embed --run "$out/old-lsgd" --device cpu --out "$out/$b-embed.npy" --no-progress >/dev/null 2>&1
done
same "simclr levels --json (timings, the figures relative to them and the time-weighted -opt allocations dropped)" "$(sha256sum <"$out/old-levels.json" | cut -c1-64)" "$(sha256sum <"$out/new-levels.json" | cut -c1-64)"
same "simclr eval knn --json" "$(sha256sum <"$out/old-knn.json" | cut -c1-64)" "$(sha256sum <"$out/new-knn.json" | cut -c1-64)"
same "simclr embed .npy" "$(sha256sum <"$out/old-embed.npy" | cut -c1-64)" "$(sha256sum <"$out/new-embed.npy" | cut -c1-64)"
same "simclr embed .csv" "$(sha256sum <"$out/old-embed.csv" | cut -c1-64)" "$(sha256sum <"$out/new-embed.csv" | cut -c1-64)"
echo "$fails differences"
