#!/usr/bin/env bash
# run_all.sh — run THERE, on the GPU machine (no Go, no internet), after
# scripts/gpu/prepare.sh filled .gpu/ here and it was copied there with the working tree:
#
#   bash scripts/gpu/run_all.sh   (the working tree with .gpu/, under 10 minutes)
#
# One command, about 6-8 minutes by default (at most RUN_BUDGET_S), every
# result under $OUT. Steps, in order of priority (each guarded: a failure or
# a timeout is recorded, the rest go on; a step that would overrun the
# overall deadline is cut short or skipped):
#
#   info      nvidia-smi, the machine, the CUDA libraries found and exported
#   devices   simclr version and simclr devices (what --device auto sees)
#   parity    .gpu/cuda.test -test.v: CPU/GPU parity of every kernel in
#             every precision its tests cover (fp32, tf32, bf16 where built),
#             then .gpu/collective.test: NCCL's collectives on the GPU
#   bench     simclr bench --device cuda --json, --images 2 8 32 128 512,
#             in each of BENCH_PRECISIONS (tf32 bf16; plus --multilevel at
#             512); a precision the build refuses is recorded, the rest go on
#   convapi   simclr bench --precision bf16 at CONVAPI_IMAGES (512 64) with
#             cuDNN's legacy convolution API and with its backend (graph)
#             API (SIMCLR_CUDNN_CONV_API=legacy, then graph: the heuristics'
#             first engine, then graph with SIMCLR_CUDNN_GRAPH_TUNE=8: the
#             fastest of 8 timed), tagged bf16-legacy, bf16-graph and
#             bf16-graph-tuned in bench_simclr.jsonl; the graph runs'
#             fallbacks to the legacy API (shapes the backend API has no
#             engine for) are counted in the summary
#   torch     benchmarks/pytorch_simclr_bench.py on the same sizes: tf32
#             (float32 storage, as simclr's tf32), then PyTorch's fast path
#             (bf16 autocast, channels-last)
#   graphs    .gpu/cuda.test -test.bench GraphStep: the training step at
#             2, 8 and 32 images, eager against recorded and replayed as a
#             CUDA graph, in tf32 and bf16 (ms/step, replays/step)
#   train     a short simclr train on CIFAR-10 (JPEG copy) on the GPU:
#             lsgd, max-level 8, TRAIN_ITERS iterations, then the linear probe
#   memcheck  compute-sanitizer memcheck on a few training steps
#             (simclr train, tiny run) and a multilevel bench step
#   gobench   .gpu/cuda.test -test.bench: per-convolution TFLOP/s, NTXent,
#             ResNet-18 step in tf32 and fp32 (not GraphStep: graphs has it)
#   torch-compile  (not in the default list) the PyTorch reference with torch.compile
#   paper-table    (not in the default list) scripts/gpu/paper_table.sh with
#             the time left: the paper's table, as many runs as fit
#
# Usage: bash scripts/gpu/run_all.sh [STEP...]      (default: info to gobench)
# Environment (all optional):
#   GRAPH_BENCHTIME=50x  timed steps of each graphs benchmark
#   RUN_BUDGET_S=540   overall deadline in seconds (560 when paper-table is
#                      asked for; the tool stops a command at 600)
#   BENCH_STEPS=20     timed steps per bench (simclr and PyTorch)
#   BENCH_IMAGES="2 8 32 128 512"
#   BENCH_PRECISIONS="tf32 bf16"   simclr bench --precision, each in turn
#   CONVAPI_IMAGES="512 64"   convapi's batch sizes (above 32: no step graphs, which
#                            the backend API's convolutions refuse)
#   CONVAPI_PRECISIONS="bf16" convapi's precisions (tf32 also runs on both APIs)
#   CONVAPI_TUNE=8     engine configs timed per shape by convapi's graph-tuned
#   BENCH_PRECISION=tf32   the PyTorch reference's --precision, and simclr's
#                      in train (fp32 for strict float32 in both programs)
#   TRAIN_ITERS=300    iterations of the short training run
#   TRAIN_PROBE=1      0 skips the linear probe after the short run
#   TABLE_PRECISION=$BENCH_PRECISION   paper-table's --precision
#   TABLE_ARGS=""      more paper_table.sh options (e.g. --seeds 1 --allow-cut)
#
# Files under $OUT (the tool returns at most 8): run_all.log (everything),
# cuda_test.log, bench_simclr.jsonl, bench_torch.jsonl, train_run.tar.gz
# (train.log, config.json, metrics.jsonl, eval.jsonl, linear_probe.json),
# memcheck.log, summary.txt, and with paper-table paper_table.tar.gz. See
# docs/gpu.md.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
repo=$(pwd)

OUT=${OUT:-/tmp/simclr-gpu-out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
export OUT # paper_table.sh leaves its archive there
BENCH_STEPS=${BENCH_STEPS:-20}
BENCH_IMAGES=${BENCH_IMAGES:-"2 8 32 128 512"}
BENCH_PRECISIONS=${BENCH_PRECISIONS:-"tf32 bf16"}
BENCH_PRECISION=${BENCH_PRECISION:-tf32}
CONVAPI_IMAGES=${CONVAPI_IMAGES:-"512 64"}
CONVAPI_PRECISIONS=${CONVAPI_PRECISIONS:-bf16}
CONVAPI_TUNE=${CONVAPI_TUNE:-8}
TRAIN_ITERS=${TRAIN_ITERS:-300}
GRAPH_BENCHTIME=${GRAPH_BENCHTIME:-50x}
TRAIN_PROBE=${TRAIN_PROBE:-1}
TABLE_PRECISION=${TABLE_PRECISION:-$BENCH_PRECISION}
TABLE_ARGS=${TABLE_ARGS:-}

all_steps="info devices parity bench convapi torch graphs torch-compile train memcheck gobench paper-table"
steps=("$@")
if ((${#steps[@]} == 0)); then
	steps=(info devices parity bench convapi torch graphs train memcheck gobench)
fi
for s in "${steps[@]}"; do
	[[ " $all_steps " == *" $s "* ]] || {
		echo "run_all.sh: unknown step $s (steps: $all_steps)" >&2
		exit 2
	}
done
# The default steps took about 4 minutes before convapi and graphs (on an
# H200 on 2026-11-26: torch 23-29 s a precision, train 50 s, the rest a few
# seconds each); convapi's six runs add one to two minutes, more where the
# backend API's engines compile at run time, and graphs is held to 90 s;
# the paper's table takes whatever is left of the device's 10 minutes.
default_budget=540
[[ " ${steps[*]} " == *" paper-table "* ]] && default_budget=560
RUN_BUDGET_S=${RUN_BUDGET_S:-$default_budget}
deadline=$((SECONDS + RUN_BUDGET_S))

exec > >(tee -a "$OUT/run_all.log") 2>&1
tee_pid=$!
summary="$OUT/summary.txt"
: >"$summary"

say() { printf '\n=== %s  [%s, %ds left]\n' "$*" "$(date -u +%H:%M:%S)" $((deadline - SECONDS)); }

# record STEP STATUS SECONDS NOTE: one line of the summary table.
record() { printf '%-22s %-8s %5ss  %s\n' "$1" "$2" "$3" "${4:-}" >>"$summary"; }

# guard NAME BUDGET LOG CMD...: runs CMD with at most BUDGET seconds (less
# when the overall deadline is nearer), stdout and stderr appended to LOG and
# shown; SIGTERM at the limit (simclr train checkpoints on it), SIGKILL 15 s
# later. Records the outcome; returns CMD's status (124 on a timeout).
guard() {
	local name=$1 budget=$2 log=$3
	shift 3
	local left=$((deadline - SECONDS - 5))
	if ((left < 20)); then
		echo "--- $name: skipped, ${left}s left before the deadline"
		record "$name" SKIPPED 0 "no time left (RUN_BUDGET_S=$RUN_BUDGET_S)"
		return 125
	fi
	((budget > left)) && budget=$left
	echo "--- $name (limit ${budget}s): $*" | tee -a "$log"
	local start=$SECONDS rc
	timeout --signal=TERM --kill-after=15 "$budget" "$@" 2>&1 | tee -a "$log"
	rc=${PIPESTATUS[0]}
	local took=$((SECONDS - start)) status=ok note=""
	case $rc in
	0) ;;
	124 | 137) status=TIMEOUT ;;
	*) status="FAIL($rc)" ;;
	esac
	# The command's last line says why it failed.
	[[ $status != ok ]] && note=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-110)
	echo "--- $name: $status in ${took}s" | tee -a "$log"
	record "$name" "$status" "$took" "$note"
	return "$rc"
}

want() {
	local s
	for s in "${steps[@]}"; do [[ $s == "$1" ]] && return 0; done
	return 1
}

# ---------------------------------------------------------------- libraries
# simclr loads libcuda, cuBLAS(Lt), cuDNN 9 and NVRTC with purego: lib.sh finds
# their folders and sets go_env (LD_LIBRARY_PATH for the Go programs), from
# which simclr chooses one set of one CUDA major (`devices` says which).
# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
python=$gpu_python
simclr=$repo/.gpu/simclr
cudatest=$repo/.gpu/cuda.test
collectivetest=$repo/.gpu/collective.test
gosimclr=("${go_env[@]}" "$simclr")
gocudatest=("${go_env[@]}" "$cudatest")
bench_py=$repo/.gpu/benchmarks/pytorch_simclr_bench.py
[[ -f $bench_py ]] || bench_py=$repo/benchmarks/pytorch_simclr_bench.py
sanitizer=$(command -v compute-sanitizer || find -L /usr/local -maxdepth 4 -path '/usr/local/cuda*' -name compute-sanitizer -type f 2>/dev/null | sort | head -n 1)

missing=""
[[ -x $simclr ]] || missing+=" .gpu/simclr"
[[ -x $cudatest ]] || missing+=" .gpu/cuda.test"
if [[ -n $missing ]]; then
	echo "run_all.sh: missing$missing: run scripts/gpu/prepare.sh on a machine with Go and copy .gpu/ here"
fi

# ---------------------------------------------------------------- info
if want info; then
	say info
	cat .gpu/BUILD.txt 2>/dev/null
	uname -a
	echo "cpus: $(nproc)"
	free -g | head -n 2
	nvidia-smi
	nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
	command -v nvcc >/dev/null && nvcc --version | tail -n 2
	echo "compute-sanitizer: ${sanitizer:-not found}"
	"$python" -c 'import torch, torchvision; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(), "torchvision", torchvision.__version__)' 2>&1
	gpu_show_libs
	record info ok 0 "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
fi

# ---------------------------------------------------------------- devices
if want devices; then
	say devices
	guard version 20 "$gpu_work/devices.log" "${gosimclr[@]}" version
	guard devices 60 "$gpu_work/devices.log" "${gosimclr[@]}" devices
fi

# ---------------------------------------------------------------- parity
if want parity; then
	say "parity: cuda.test -test.v"
	# The tests read testdata/ relative to the package folder.
	# Every test of the package runs: the parity tests of each precision
	# (fp32, tf32, and bf16 where the build has them) and the whole-step ones.
	# (The parity tests of cuDNN's backend API build a plan per shape and
	# direction, some with engines compiled at run time: 60 s more.)
	(cd backend/cuda && guard parity 240 "$OUT/cuda_test.log" "${gocudatest[@]}" -test.v -test.count=1 -test.timeout=230s)
	grep -E -- '--- (FAIL|SKIP)' "$OUT/cuda_test.log" | head -n 20 | sed 's/^/  /' >>"$summary"
	grep -q -- '--- SKIP: TestParity' "$OUT/cuda_test.log" && record parity-skipped WARN 0 "parity tests skipped: no usable GPU for the Go backend (see cuda_test.log)"
	# Top-level tests only (subtests are indented): how many passed, failed
	# and skipped, and of the parity tests per precision named in them.
	awk '/^--- (PASS|FAIL|SKIP): Test/ { n[$2]++; if ($3 ~ /^TestParity/) p[$2]++
			if (tolower($3) ~ /bf16/) b[$2]++ }
		END { printf "  cuda.test: %d passed, %d failed, %d skipped; TestParity*: %d passed, %d failed, %d skipped; *BF16*: %d passed, %d failed, %d skipped\n",
			n["PASS:"], n["FAIL:"], n["SKIP:"], p["PASS:"], p["FAIL:"], p["SKIP:"], b["PASS:"], b["FAIL:"], b["SKIP:"] }' "$OUT/cuda_test.log" >>"$summary"
	# NCCL on the GPU, loaded for the CUDA major of the chosen library set
	# (it skips, saying why, where no NCCL is found).
	if [[ -x $collectivetest ]]; then
		# In its package folder: a test builds a fake NCCL from testdata/.
		(cd collective && guard parity-nccl 60 "$OUT/cuda_test.log" "${go_env[@]}" "$collectivetest" -test.v -test.count=1 -test.run 'NCCL' -test.timeout=50s)
		grep -E -- '--- (FAIL|SKIP): TestNCCL' "$OUT/cuda_test.log" | sed 's/^/  /' >>"$summary"
	else
		record parity-nccl SKIPPED 0 "no .gpu/collective.test (an older prepare.sh)"
	fi
fi

# ---------------------------------------------------------------- bench
# bench_one NAME ARGS...: one simclr bench, its JSON line tagged with the
# precision asked for (bench_precision) and appended to bench_simclr.jsonl.
bench_one() {
	local name=$1 p=$2
	shift 2
	: >"$gpu_work/bench.out"
	guard "$name" 75 "$gpu_work/bench.out" "${gosimclr[@]}" bench --device cuda --precision "$p" --steps "$BENCH_STEPS" --json "$@"
	local rc=$?
	grep '^{' "$gpu_work/bench.out" | sed "s/^{/{\"bench_precision\":\"$p\",/" >>"$OUT/bench_simclr.jsonl"
	return "$rc"
}
if want bench; then
	for p in $BENCH_PRECISIONS; do
		say "bench: simclr bench --device cuda --precision $p"
		refused=0
		for n in $BENCH_IMAGES; do
			bench_one "bench-$p-$n" "$p" --images "$n"
			rc=$?
			# A precision this build or GPU refuses (a flag not yet known,
			# or no bf16 support) fails at once, the same at every size.
			if ((rc != 0 && rc != 124 && rc != 137)) && grep -v '^--- ' "$gpu_work/bench.out" | grep -qiE 'precision|bf16|unknown flag|invalid argument'; then
				refused=1
				record "bench-$p" SKIPPED 0 "the other sizes: simclr refused --precision $p (see bench-$p-$n)"
				break
			fi
		done
		((refused)) || bench_one "bench-$p-512-multilevel" "$p" --images 512 --multilevel
	done
fi

# ---------------------------------------------------------------- convapi
# The same bf16 step on cuDNN's two convolution APIs: the legacy one
# (cudnnFind*, implicit GEMM only for bf16 NHWC) and the backend (graph)
# one, whose engines hold the fast bf16 kernels. The graph runs may fall
# back to the legacy API for a shape, one stderr line each ("... run on
# cuDNN's legacy API"): counted, so that a graph number is known to be
# all graph or not.
if want convapi; then
	for p in $CONVAPI_PRECISIONS; do
		# graph-tuned times the first CONVAPI_TUNE usable engine configs of
		# each shape and direction and keeps the fastest.
		for api in legacy graph graph-tuned; do
			tune=1
			[[ $api == graph-tuned ]] && tune=$CONVAPI_TUNE
			say "convapi: simclr bench --precision $p, SIMCLR_CUDNN_CONV_API=${api%-tuned} SIMCLR_CUDNN_GRAPH_TUNE=$tune"
			for n in $CONVAPI_IMAGES; do
				: >"$gpu_work/bench.out"
				guard "convapi-$p-$api-$n" 90 "$gpu_work/bench.out" env "SIMCLR_CUDNN_CONV_API=${api%-tuned}" "SIMCLR_CUDNN_GRAPH_TUNE=$tune" \
					"${gosimclr[@]}" bench --device cuda --precision "$p" --steps "$BENCH_STEPS" --json --images "$n"
				grep '^{' "$gpu_work/bench.out" | sed "s/^{/{\"bench_precision\":\"$p-$api\",/" >>"$OUT/bench_simclr.jsonl"
				if [[ $api != legacy ]]; then
					fallbacks=$(grep -c "run on cuDNN's legacy API" "$gpu_work/bench.out")
					echo "  convapi-$p-$api-$n: $fallbacks shape/direction(s) fell back to the legacy API" >>"$summary"
					grep "run on cuDNN's legacy API" "$gpu_work/bench.out" | head -n 3 | cut -c1-200 | sed 's/^/    /' >>"$summary"
				fi
			done
		done
	done
fi

# ---------------------------------------------------------------- torch
torch_images=$(echo "$BENCH_IMAGES" | tr ' ' ',')
torch_bench() { # NAME BUDGET ARGS...
	local name=$1 budget=$2
	shift 2
	: >"$gpu_work/torch.out"
	guard "$name" "$budget" "$gpu_work/torch.out" "$python" "$bench_py" --images "$torch_images" --steps "$BENCH_STEPS" --warmup 5 "$@"
	grep '^{' "$gpu_work/torch.out" >>"$OUT/bench_torch.jsonl"
}
if want torch; then
	say "torch: PyTorch reference"
	torch_bench torch-"$BENCH_PRECISION" 150 --precision "$BENCH_PRECISION"
	torch_bench torch-bf16-cl 150 --precision "$BENCH_PRECISION" --amp bf16 --channels-last
fi
if want torch-compile; then
	say "torch-compile: PyTorch reference with torch.compile"
	torch_bench torch-bf16-cl-compile 300 --precision "$BENCH_PRECISION" --amp bf16 --channels-last --compile
fi

# ---------------------------------------------------------------- graphs
# Small steps eager against CUDA graphs (BenchmarkGraphStep): what the host's
# overhead per call costs at MLMC's small levels, and what a graph saves.
if want graphs; then
	say "graphs: cuda.test -test.bench GraphStep, eager vs graph at 2, 8, 32 images"
	graph_log=$gpu_work/graph_bench.log
	: >"$graph_log"
	(cd backend/cuda && guard graphs 90 "$graph_log" "${gocudatest[@]}" -test.run '^$' -test.bench '^BenchmarkGraphStep$' -test.benchtime "$GRAPH_BENCHTIME" -test.timeout=85s)
	cat "$graph_log" >>"$OUT/cuda_test.log"
	grep -E '^BenchmarkGraphStep' "$graph_log" | awk '{ for (i = 1; i <= NF; i++) if ($(i) == "ms/step" || $(i) == "replays/step") printf "%s %s  ", $(i-1), $(i); print "  " $1 }' | sed 's/^/  /' >>"$summary"
fi

# ---------------------------------------------------------------- train
# The loaders read DIR/cifar10-jpeg/{train,test}/CLASS/*.jpg (data/datasets).
data_dir=$gpu_work/data
unpack_cifar() {
	[[ -d $data_dir/cifar10-jpeg/train/airplane && -d $data_dir/cifar10-jpeg/test/truck ]] && return 0
	if [[ ! -f .gpu/cifar10-jpeg.tar.gz ]]; then
		echo "no .gpu/cifar10-jpeg.tar.gz: run scripts/gpu/prepare.sh (without --no-data)" | tee -a "$gpu_work/unpack.log"
		record unpack-cifar10 FAIL 0 "no .gpu/cifar10-jpeg.tar.gz"
		return 1
	fi
	rm -rf "$data_dir/cifar10-jpeg"
	mkdir -p "$data_dir/cifar10-jpeg" &&
		guard unpack-cifar10 90 "$gpu_work/unpack.log" tar -xzf .gpu/cifar10-jpeg.tar.gz -C "$data_dir/cifar10-jpeg"
}
if want train; then
	say "train: short L-SGD run on CIFAR-10 (JPEG q75 rebuild)"
	if unpack_cifar; then
		run=$gpu_work/runs/lsgd-L8
		rm -rf "$run"
		probe=(--probe=false)
		[[ $TRAIN_PROBE == 1 ]] && probe=(--probe --probe-baseline)
		guard train 300 "$gpu_work/train.log" "${gosimclr[@]}" train --device cuda --precision "$BENCH_PRECISION" \
			--dataset cifar10 --data-dir "$data_dir" --estimator lsgd --max-level 8 \
			--iterations "$TRAIN_ITERS" --log-every 10 --checkpoint-every 0 --eval-every 0 \
			--no-progress --out "$run" "${probe[@]}"
		if [[ -d $run ]]; then
			# The log travels inside the archive: the tool returns 8 files.
			cp "$gpu_work/train.log" "$run/train.log" 2>/dev/null
			(cd "$run" && tar --exclude='*.safetensors' -czf "$OUT/train_run.tar.gz" .)
			[[ -f $run/metrics.jsonl ]] && echo "metrics.jsonl: $(wc -l <"$run/metrics.jsonl") lines; first and last:" &&
				head -n 1 "$run/metrics.jsonl" && tail -n 1 "$run/metrics.jsonl"
			[[ -f $run/linear_probe.json ]] && cat "$run/linear_probe.json"
		fi
		grep -E '^(run |linear probe)' "$gpu_work/train.log" | sed 's/^/  /' >>"$summary"
	fi
fi

# ---------------------------------------------------------------- memcheck
# memcheck_ours LOG: the memory errors compute-sanitizer reported in our own
# kernels (k_*, from the kernel sources), one line each, then a count of
# those in other code (cuDNN's and cuBLAS's kernels, whose reports under
# memcheck are not ours to fix), on stdout. Returns 1 when any is ours.
memcheck_ours() {
	local ours
	ours=$(grep -rhoE '__global__[[:space:]]+void[[:space:]]+k_[A-Za-z0-9_]+' backend/cuda | awk '{print $NF}' | sort -u | tr '\n' ' ')
	awk -v names="$ours" '
		BEGIN { n = split(names, a, " "); for (i = 1; i <= n; i++) known[a[i]] = 1 }
		# An error report starts with a line that is not indented after the
		# prefix; its first "at" line names the function it happened in.
		/^========= [^ ]/ { head = $0; seen = 0; next }
		/^=========[[:space:]]+at / && !seen && head != "" {
			seen = 1
			line = $0; kern = ""
			while (match(line, /k_[A-Za-z0-9_]+/)) {
				k = substr(line, RSTART, RLENGTH)
				if (k in known) { kern = k; break }
				line = substr(line, RSTART + RLENGTH)
			}
			if (kern != "") { print "ours: " kern ": " substr(head, 11); mine++ } else other++
		}
		END { printf "memcheck: %d error(s) in our kernels, %d in library code (not ours, ignored)\n", mine, other; exit mine > 0 }
	' "$1"
}

if want memcheck; then
	say "memcheck: compute-sanitizer"
	if [[ -z $sanitizer ]]; then
		record memcheck SKIPPED 0 "compute-sanitizer not found"
	else
		# API errors (cuDNN probing engines that do not apply, by design)
		# are not reported; kernel memory errors are, and only those in our
		# kernels decide (memcheck_ours), so no --error-exitcode.
		#
		# Under compute-sanitizer the cuDNN that simclr opens by its path is
		# not the one that runs: the process reported the cuDNN of the first
		# folder in LD_LIBRARY_PATH holding a libcudnn.so.9 (Debian's 9.14 in
		# /usr/lib/x86_64-linux-gnu) beside the sub-libraries of the chosen
		# one (the wheel's 9.19), and every convolution failed with
		# CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH. So the folder of the
		# cuDNN that `simclr devices` chooses goes first here.
		cudnn_dir=$("${gosimclr[@]}" devices 2>/dev/null | awk '$1 == "cudnn" && $2 ~ /^\// {print $2; exit}')
		cudnn_dir=${cudnn_dir%/*}
		echo "memcheck: cuDNN folder first in LD_LIBRARY_PATH: ${cudnn_dir:-none found}"
		sanitize=(env "LD_LIBRARY_PATH=${cudnn_dir:+$cudnn_dir:}$gpu_lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
			"$sanitizer" --tool memcheck --report-api-errors no --print-limit 200 --leak-check no)
		: >"$OUT/memcheck.log"
		if unpack_cifar; then
			guard memcheck-train 200 "$OUT/memcheck.log" "${sanitize[@]}" "$simclr" train --device cuda \
				--dataset cifar10 --data-dir "$data_dir" --train-subset 512 --test-subset 256 \
				--estimator vr-rtmlmc --min-level 1 --max-level 3 --iterations 4 --qe 2 \
				--log-every 1 --checkpoint-every 0 --eval-every 0 --probe=false --no-progress \
				--out "$gpu_work/runs/memcheck"
		fi
		guard memcheck-bench 150 "$OUT/memcheck.log" "${sanitize[@]}" "$simclr" bench --device cuda \
			--images 4 --steps 2 --multilevel
		# bf16's kernels (the conversions to and from NHWC bf16) run only
		# under --precision bf16.
		guard memcheck-bench-bf16 150 "$OUT/memcheck.log" "${sanitize[@]}" "$simclr" bench --device cuda \
			--precision bf16 --images 4 --steps 2 --multilevel
		# (kept out of $OUT: the tool returns at most 8 files)
		ours_txt=$gpu_work/memcheck_ours.txt
		if memcheck_ours "$OUT/memcheck.log" >"$ours_txt"; then
			record memcheck ok 0 "$(tail -n 1 "$ours_txt")"
		else
			record memcheck FAIL 0 "$(tail -n 1 "$ours_txt")"
		fi
		cat "$ours_txt" >>"$OUT/memcheck.log"
		head -n 10 "$ours_txt" | sed 's/^/  /' >>"$summary"
	fi
fi

# ---------------------------------------------------------------- gobench
if want gobench; then
	say "gobench: cuda.test -test.bench"
	(cd backend/cuda && guard gobench 150 "$OUT/cuda_test.log" "${gocudatest[@]}" -test.run '^$' -test.bench '^Benchmark(Conv|NTXent|ResNet18Step)$' -test.benchtime 10x -test.timeout=140s)
fi

# ---------------------------------------------------------------- paper-table
# The paper's table (scripts/gpu/paper_table.sh) in the time left: its plan
# says which runs fit; it leaves OUT/paper_table.tar.gz.
if want paper-table; then
	say "paper-table: scripts/gpu/paper_table.sh"
	table_budget=$((deadline - SECONDS - 25))
	if ((table_budget < 60)); then
		record paper-table SKIPPED 0 "${table_budget}s left: give RUN_BUDGET_S more, or run it alone"
	else
		# The script keeps its own deadline (table_budget, checkpoints on
		# SIGTERM); the guard's limit only backs it up.
		# shellcheck disable=SC2086 # TABLE_ARGS are words
		guard paper-table $((table_budget + 20)) "$gpu_work/paper_table.out" bash scripts/gpu/paper_table.sh \
			--precision "$TABLE_PRECISION" --budget "$table_budget" $TABLE_ARGS
		awk '/^[|] arm [|] seeds/ { f = 1 } f && !/^[|]/ { f = 0 } f' "$gpu_work/paper_table.out" | sed 's/^/  /' >>"$summary"
		grep -E 'SKIPPED|not finished' "$gpu_work/paper_table.out" | head -n 8 | sed 's/^/  /' >>"$summary"
	fi
fi

# ---------------------------------------------------------------- summary
say summary
cat "$summary"
if [[ -s $OUT/bench_simclr.jsonl || -s $OUT/bench_torch.jsonl ]]; then
	"$python" - "$OUT/bench_simclr.jsonl" "$OUT/bench_torch.jsonl" <<'PY' | tee -a "$summary"
import json, sys
rows = {}
def load(path, tag_of):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        rows.setdefault(r.get("batch_images"), {})[tag_of(r)] = r
load(sys.argv[1], lambda r: ("simclr-ml-" if r.get("multilevel") else "simclr-")
     + str(r.get("bench_precision") or r.get("precision") or "?"))
load(sys.argv[2], lambda r: "torch-" + ("bf16" if r.get("amp") == "bf16" else r.get("precision", "?"))
     + ("-compile" if r.get("compile") else ""))
tags = sorted({t for v in rows.values() for t in v}, key=lambda t: (not t.startswith("simclr"), t))
print("\nviews/s (step ms; peak GPU MiB of buffers); torch-bf16 is bf16 autocast with channels-last")
print("%6s " % "images" + " ".join("%24s" % t for t in tags))
for n in sorted(k for k in rows if k is not None):
    cells = []
    for t in tags:
        r = rows[n].get(t)
        if r is None:
            cells.append("%24s" % "-")
        elif "error" in r or not r.get("views_per_sec"):
            cells.append("%24s" % ("ERR " + str(r.get("error", ""))[:20]))
        else:
            mem = r.get("peak_gpu_mb")
            cells.append("%24s" % ("%.0f (%.1f ms%s)" % (r["views_per_sec"], 1e3 * r["step_seconds"],
                                                          "; %.0f MiB" % mem if mem else "")))
    print("%6d " % n + " ".join(cells))
PY
fi

# The tool returns files of at most 16 MiB.
for f in "$OUT"/*; do
	if [[ -f $f ]] && (($(stat -c %s "$f") > 15 * 1024 * 1024)); then
		tail -c $((15 * 1024 * 1024)) "$f" >"$f.tmp" && mv "$f.tmp" "$f"
	fi
done
status=0
grep -qE '^[a-z0-9-]+ +(FAIL|TIMEOUT)' "$summary" && status=1
nfiles=$(find "$OUT" -type f | wc -l)
((nfiles > 8)) && echo "run_all.sh: WARNING: $nfiles files under $OUT, keep at most 8 to copy back"
echo "run_all.sh: done in ${SECONDS}s, exit status $status; files in $OUT: $(find "$OUT" -maxdepth 1 -type f -printf '%f ')"
# Let tee finish writing run_all.log before the tool collects $OUT.
exec >&- 2>&-
wait "$tee_pid" 2>/dev/null
exit "$status"
