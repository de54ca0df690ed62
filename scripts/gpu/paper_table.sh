#!/usr/bin/env bash
# paper_table.sh — run THERE, on the GPU machine (no Go), after
# scripts/gpu/prepare.sh filled .gpu/ here: the paper's headline table in one
# command. L-SGD at batch 2^L against VR RT-MLMC at level L, at equal
# iterations (E epochs of ceil(n/2^L) iterations each), ResNet-18 on
# CIFAR-10, seed after seed, each run followed by the kNN monitor and the
# linear probe on the test set. Settings are those the CPU study chose on
# its validation split (studies/simclr-paper/README.md, "The paper's protocol at L = 9 for 5
# epochs"): L = 9; L-SGD lr 2; VR RT-MLMC lr 1, l_min 4, separate halves,
# D1 1, D2 2, Q_E 10; SGD momentum 0.9, weight decay 5e-4, cosine schedule
# after a warm-up of a tenth of the run, temperature 0.5.
#
#   bash scripts/gpu/paper_table.sh [--precision tf32|bf16|fp32] [--budget S]
#        [--seeds "1 2 3"] [--epochs E] [--allow-cut] [--plan-only] [--tiny]
#        [--dataset SPEC] [--data-dir DIR] [--out DIR]
#
# First it times each arm on the first iterations of its first run (these
# iterations are kept: the run resumes from them), then prints the plan:
# every run (arm and seed), what is done, the minutes each still needs from
# the measured seconds per iteration and the start-up and evaluation time,
# and which of them fit in the budget. Runs that do not fit are named in the
# plan and skipped; --allow-cut starts the first of them anyway and stops it
# at the deadline with a checkpoint. The same command again continues:
# finished runs are kept, a stopped one resumes from its checkpoint (on the
# same machine: the runs live in its /tmp). Last, the table: each arm's
# linear-probe and kNN test accuracy per seed, with mean, standard deviation
# and 95% t-interval over seeds.
#
# Options:
#   --precision P   simclr train --precision (tf32 default; fp32; bf16 where
#                   the build has it): passed through
#   --budget S      seconds this command may take, start-up included (default
#                   540: keep it under the GPU machine's limit on one command)
#   --seeds LIST    seeds to aim at, in order (default "1 2 3")
#   --epochs E      epochs of each run (default 100; --tiny: 2)
#   --allow-cut     start the first run that does not fit, stopped at the
#                   deadline (continue it with the same command)
#   --plan-only     measure nothing, run nothing: the plan from what is known
#   --tiny          a dry run of everything on tiny settings (L = 3, a
#                   ResNet-18 of width 1/16, few iterations), for CI
#   --dataset SPEC, --data-dir DIR  the data (default: CIFAR-10 from
#                   .gpu/cifar10-jpeg.tar.gz, unpacked under $GPU_WORK)
#   --out DIR       the output folder (default $GPU_WORK/paper-table-P)
# Environment: SIMCLR (the binary; default .gpu/simclr), GPU_WORK (default
# /tmp/simclr-gpu), OUT (when set, OUT/paper_table.tar.gz gets the output
# folder without the checkpoints).
#
# The output folder holds runs/ARM-sSEED/ (each a simclr run folder: config.json,
# metrics.jsonl, eval.jsonl, linear_probe.json, checkpoints), logs/ (each
# process's output), paper_table.log (all this command printed), plan.txt,
# times.tsv (each process's seconds, for the estimates) and table.md.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
repo=$(pwd)

die() {
	echo "paper_table.sh: $*" >&2
	exit 2
}

precision=tf32
budget=540
seeds="1 2 3"
epochs=""
allow_cut=0
plan_only=0
tiny=0
dataset=cifar10
data_dir=""
out=""
while (($#)); do
	case $1 in
	--precision | --budget | --seeds | --epochs | --dataset | --data-dir | --out)
		(($# >= 2)) || die "$1 needs a value (try --help)"
		case $1 in
		--precision) precision=$2 ;;
		--budget) budget=$2 ;;
		--seeds) seeds=${2//,/ } ;;
		--epochs) epochs=$2 ;;
		--dataset) dataset=$2 ;;
		--data-dir) data_dir=$2 ;;
		--out) out=$2 ;;
		esac
		shift 2
		;;
	--allow-cut) allow_cut=1 && shift ;;
	--plan-only) plan_only=1 && shift ;;
	--tiny) tiny=1 && shift ;;
	-h | --help)
		awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
		exit 0
		;;
	*) die "unknown argument $1 (try --help)" ;;
	esac
done
case $precision in
tf32 | fp32 | bf16) ;;
*) die "--precision $precision: use tf32, fp32 or bf16" ;;
esac
if ! [[ $budget =~ ^[0-9]+$ ]] || ((budget < 1 || budget > 590)); then
	die "--budget $budget: give seconds, 1 to 590 (keep it under the GPU machine's limit on one command)"
fi
for s in $seeds; do [[ $s =~ ^[0-9]+$ ]] || die "--seeds: $s is not a seed (give e.g. \"1 2 3\")"; done
[[ -n ${seeds// /} ]] || die "--seeds: give at least one seed"
deadline=$((SECONDS + budget))

# shellcheck source=scripts/gpu/lib.sh
source scripts/gpu/lib.sh
simclr=${SIMCLR:-$repo/.gpu/simclr}
[[ -x $simclr ]] || die "no simclr binary at $simclr: run scripts/gpu/prepare.sh on a machine with Go and copy .gpu/ here with the working tree, or set SIMCLR"

# ------------------------------------------------------------- settings
if ((tiny)); then
	L=3 vr_min=2 epochs=${epochs:-2}
	net=(--train-subset 64 --test-subset 64 --width 0.0625 --proj-dim 16 --precise-bn=false --workers 1 --knn-k 5 --log-every 1)
	measure_lsgd=2 measure_vr=2 skip=0
	eval_guess=5 start_guess=5
	out=${out:-$gpu_work/paper-table-tiny-$precision}
else
	L=9 vr_min=4 epochs=${epochs:-100}
	net=(--log-every 1)
	# Enough iterations for a mean within a few per cent: VR RT-MLMC's
	# levels are random, its iterations unequal.
	measure_lsgd=40 measure_vr=300 skip=5
	# Until this table has finished a run: the probe took 21.3 s on an H200
	# (the first GPU run, results/gpu/20261126-h200/train.log), the kNN and
	# the recalibration of batch norm are guessed at 20 s more.
	eval_guess=45 start_guess=20
	out=${out:-$gpu_work/paper-table-$precision}
fi
if ! [[ $epochs =~ ^[0-9]+$ ]] || ((epochs < 1)); then
	die "--epochs $epochs: give a positive whole number"
fi
reserve=15 # seconds kept for the table and the archive at the end
arms=(lsgd vrrt)
declare -A arm_name arm_flags
arm_name[lsgd]="L-SGD, batch $((1 << L)), lr 2"
arm_flags[lsgd]="--estimator lsgd --max-level $L --lr 2"
arm_name[vrrt]="VR RT-MLMC, L $L, l_min $vr_min, separate halves, D2 2, lr 1"
arm_flags[vrrt]="--estimator vr-rtmlmc --min-level $vr_min --max-level $L --halves separate --d1 1 --d2 2 --qe 10 --lr 1"
declare -A measure_iters=([lsgd]=$measure_lsgd [vrrt]=$measure_vr)

mkdir -p "$out/runs" "$out/logs" || die "cannot create $out"
out=$(cd "$out" && pwd)
log=$out/paper_table.log
exec > >(tee -a "$log") 2>&1
tee_pid=$!
times=$out/times.tsv
[[ -f $times ]] || printf 'run\tarm\tprocess_s\titerations\tfinished\tstart_iteration\n' >"$times"

left() { echo $((deadline - SECONDS)); }
say() { printf '\n=== %s  [%s, %ds left]\n' "$*" "$(date -u +%H:%M:%S)" "$(left)"; }

# ------------------------------------------------------------- data
if [[ -z $data_dir ]]; then
	data_dir=$gpu_work/data
	if [[ $dataset == cifar10 && ! -d $data_dir/cifar10-jpeg/test/truck ]]; then
		[[ -f .gpu/cifar10-jpeg.tar.gz ]] || die "no .gpu/cifar10-jpeg.tar.gz: run scripts/gpu/prepare.sh without --no-data, or give --data-dir"
		say "unpacking .gpu/cifar10-jpeg.tar.gz"
		rm -rf "$data_dir/cifar10-jpeg"
		if ! mkdir -p "$data_dir/cifar10-jpeg" || ! tar -xzf .gpu/cifar10-jpeg.tar.gz -C "$data_dir/cifar10-jpeg"; then
			die "unpacking the data failed"
		fi
	fi
fi

# ------------------------------------------------------------- run folders
# The runs in the order they are taken: seed after seed, both arms of a
# seed together, so that a cut table still pairs its arms.
runs=()
for s in $seeds; do
	for a in "${arms[@]}"; do runs+=("$a-s$s"); done
done
arm_of() { echo "${1%-s*}"; }
seed_of() { echo "${1##*-s}"; }

# total_iters: iterations of a run, from a run's config.json (0 before one exists).
total_iters() {
	local f=$out/runs/$1/config.json
	[[ -f $f ]] || {
		echo 0
		return
	}
	grep -o '"total_iterations": *[0-9]*' "$f" | grep -o '[0-9]*$' || echo 0
}
# done_iters: the last iteration in a run's metrics.jsonl (0 when none).
done_iters() {
	local f=$out/runs/$1/metrics.jsonl
	[[ -s $f ]] || {
		echo 0
		return
	}
	tail -n 1 "$f" | grep -o '"iteration":[0-9]*' | grep -o '[0-9]*$' || echo 0
}
# finished: the run has trained its length and holds its probe.
finished() {
	local tot
	tot=$(total_iters "$1")
	((tot > 0)) && (($(done_iters "$1") >= tot)) && [[ -f $out/runs/$1/linear_probe.json ]]
}
# session_starts: the iterations at which the processes of a run started
# (times.tsv), for the rate: the first iterations of a process carry its
# start-up.
session_starts() {
	awk -F'\t' -v r="$1" 'NR > 1 && $1 == r { print $6 }' "$times"
}

# rate ARM: seconds per iteration of ARM, measured on the metrics of its
# runs so far, and how: "S N HOW" (S empty when nothing is measured). Per
# iteration Δwall is regressed on Δimages drawn (VR RT-MLMC's iterations
# differ in size) and the fit is read at the expected images per iteration
# the run's log states, which corrects for a window that drew more or fewer
# large levels than the law does; skipped: the first iterations after each
# process started.
rate() {
	local a=$1 r files=() expect=""
	for r in "${runs[@]}"; do
		[[ $(arm_of "$r") == "$a" && -s $out/runs/$r/metrics.jsonl ]] || continue
		files+=("$r")
	done
	((${#files[@]})) || {
		echo ""
		return
	}
	expect=$(grep -ho 'expected per iteration [0-9.e+]* images' "$out"/logs/"$a"-s*.log 2>/dev/null | head -n 1 | awk '{print $4}')
	for r in "${files[@]}"; do
		awk -v run="$r" -v skip="$skip" -v starts="$(session_starts "$r" | tr '\n' ' ')" '
			BEGIN { n = split(starts, s, " "); for (i = 1; i <= n; i++) start[s[i]] = 1 }
			{
				it = w = im = ""
				if (match($0, /"iteration":[0-9]+/)) it = substr($0, RSTART + 12, RLENGTH - 12) + 0
				if (match($0, /"samples_drawn":[0-9]+/)) im = substr($0, RSTART + 16, RLENGTH - 16) + 0
				if (match($0, /"wall_seconds":[0-9.eE+-]+/)) w = substr($0, RSTART + 15, RLENGTH - 15) + 0
				if (it == "" || w == "") next
				# a process that started at iteration k: skip its first iterations
				for (k in start) if (it > k + 0 && it <= k + skip) { pw = w; pim = im; pit = it; next }
				if (pit != "" && it == pit + 1 && w > pw) print run, w - pw, im - pim
				pw = w; pim = im; pit = it
			}' "$out/runs/$r/metrics.jsonl"
	done | awk -v expect="$expect" '
		{ n++; y = $2; x = $3; sy += y; sx += x; sxx += x * x; sxy += x * y }
		END {
			if (n == 0) { print ""; exit }
			my = sy / n; mx = sx / n; vxx = sxx / n - mx * mx; cxy = sxy / n - mx * my
			est = my; how = "mean of " n " iterations"
			if (expect != "" && vxx > 1e-9 * (mx * mx + 1)) {
				b = cxy / vxx; fit = my + b * (expect - mx)
				if (fit > 0.25 * my && fit < 4 * my) {
					est = fit
					how = sprintf("%d iterations (mean %.4f s at %.0f images drawn each), read at the expected %.4g images", n, my, mx, expect)
				}
			}
			printf "%.6f %d %s\n", est, n, how
		}'
}

# overheads: "START FULL" seconds a process spends outside its iterations:
# START from processes stopped at an iteration limit (start-up, the
# checkpoint), FULL from the ones that finished a run (start-up, the last
# recalibration, kNN and probe); the guesses above until measured. Needs
# the arms' rates (process seconds less iterations x rate).
overheads() {
	local a st=() fu=() line rr
	declare -A rt
	for a in "${arms[@]}"; do
		read -r rr _ <<<"$(rate "$a")"
		rt[$a]=${rr:-0}
	done
	while IFS=$'\t' read -r r a p n fin _; do
		[[ $r == run || -z ${rt[$a]:-} ]] && continue
		line=$(awk -v p="$p" -v n="$n" -v r="${rt[$a]}" 'BEGIN { o = p - n * r; if (o < 0) o = 0; printf "%.1f", o }')
		if [[ $fin == 1 ]]; then fu+=("$line"); else st+=("$line"); fi
	done <"$times"
	local s f
	s=$(printf '%s\n' "${st[@]}" | awk -v g="$start_guess" 'NF { m = ($1 > m) ? $1 : m; n++ } END { print (n ? m : g) }')
	f=$(printf '%s\n' "${fu[@]}" | awk -v g="$s" -v e="$eval_guess" 'NF { m = ($1 > m) ? $1 : m; n++ } END { print (n ? m : g + e) }')
	echo "$s $f ${#st[@]} ${#fu[@]}"
}

# estimate RUN: seconds RUN still needs (empty when its arm is not measured).
estimate() {
	local r=$1 a rr tot doneit
	a=$(arm_of "$r")
	read -r rr _ <<<"$(rate "$a")"
	[[ -n $rr ]] || return 0
	tot=$(total_iters "$r")
	((tot > 0)) || tot=$(total_iters "$(first_run_of "$a")")
	doneit=$(done_iters "$r")
	awk -v rr="$rr" -v tot="$tot" -v d="$doneit" -v full="$ov_full" 'BEGIN { printf "%.0f", (tot - d) * rr + full }'
}
first_run_of() {
	local r
	for r in "${runs[@]}"; do [[ $(arm_of "$r") == "$1" ]] && echo "$r" && return; done
}

# train RUN LIMIT [ITERATIONS_LIMIT]: one simclr process for RUN (new, or
# resumed from its checkpoint), stopped by SIGTERM (a checkpoint) after
# LIMIT seconds, killed 15 s later; its output in logs/RUN.log; one line of
# times.tsv. Returns simclr's status.
train() {
	local r=$1 limit=$2 itlim=${3:-0} a s cmd before start rc after fin=0
	a=$(arm_of "$r") s=$(seed_of "$r")
	local run=$out/runs/$r
	if [[ -f $run/state.safetensors ]]; then
		cmd=(train --resume "$run" --device cuda --precision "$precision" --no-progress --checkpoint-every 4m)
	else
		if [[ -d $run ]]; then
			echo "paper_table.sh: $r has no checkpoint (stopped before its first): starting it again"
			rm -rf "$run"
		fi
		# shellcheck disable=SC2206 # the arm's flags are words
		cmd=(train --device cuda --precision "$precision" --dataset "$dataset" --data-dir "$data_dir"
			--epochs "$epochs" --eval-every "$epochs" --seed "$s" --probe --out "$run" --no-progress
			--checkpoint-every 4m "${net[@]}" ${arm_flags[$a]})
	fi
	((itlim > 0)) && cmd+=(--iterations-limit "$itlim")
	before=$(done_iters "$r")
	echo "--- $r (SIGTERM after ${limit}s): simclr ${cmd[*]}" | tee -a "$out/logs/$r.log"
	start=$SECONDS
	timeout --signal=TERM --kill-after=15 "$limit" "${go_env[@]}" "$simclr" "${cmd[@]}" 2>&1 | tee -a "$out/logs/$r.log"
	rc=${PIPESTATUS[0]}
	after=$(done_iters "$r")
	finished "$r" && fin=1
	printf '%s\t%s\t%d\t%d\t%d\t%d\n' "$r" "$a" $((SECONDS - start)) $((after - before)) "$fin" "$before" >>"$times"
	case $rc in
	0) ;;
	124 | 137) echo "paper_table.sh: $r stopped at the deadline at iteration $after (a checkpoint on SIGTERM): the same command continues it" ;;
	*) echo "paper_table.sh: $r: simclr train exited with status $rc (see logs/$r.log)" ;;
	esac
	return "$rc"
}

# complete RUN: a run that trained its length but lacks its probe or its
# final kNN (stopped during them) gets them from simclr eval.
complete() {
	local r=$1 run=$out/runs/$1 tot
	tot=$(total_iters "$r")
	((tot > 0)) && (($(done_iters "$r") >= tot)) || return 0
	if [[ ! -f $run/linear_probe.json ]] && (($(left) > 30)); then
		timeout --signal=TERM --kill-after=10 $(($(left) - reserve)) "${go_env[@]}" "$simclr" eval linear-probe --run "$run" \
			--device cuda --precision "$precision" 2>&1 | tee -a "$out/logs/$r.log"
	fi
	if ! grep -q "\"iteration\":$tot," "$run/eval.jsonl" 2>/dev/null && [[ ! -f $run/knn.json ]] && (($(left) > 30)); then
		timeout --signal=TERM --kill-after=10 $(($(left) - reserve)) "${go_env[@]}" "$simclr" eval knn --run "$run" \
			--device cuda --precision "$precision" 2>&1 | tee -a "$out/logs/$r.log"
	fi
}

minutes() { awk -v s="$1" 'BEGIN { printf "%.1f", s / 60 }'; }

# ------------------------------------------------------------- measure
say "paper table: ${#runs[@]} runs (${arms[*]} x seeds $seeds), $epochs epochs at L = $L, --precision $precision, budget ${budget}s, output $out"
"${go_env[@]}" "$simclr" version 2>&1 | head -n 3
if ((!plan_only)); then
	for a in "${arms[@]}"; do
		r=$(first_run_of "$a")
		finished "$r" && continue
		# Timed already when its runs hold enough iterations past their
		# processes' starts.
		read -r _ n _ <<<"$(rate "$a")"
		((${n:-0} >= ${measure_iters[$a]} - skip - 1)) && continue
		if (($(left) < 60 + reserve)); then
			echo "paper_table.sh: no time to time $a ($(left)s left)"
			continue
		fi
		say "timing $a on the first ${measure_iters[$a]} iterations of $r (kept: the run resumes from them)"
		train "$r" $(($(left) - reserve)) "${measure_iters[$a]}" || true
	done
fi

# ------------------------------------------------------------- plan
# plan: decides which runs fit in the time left, in order, and prints why.
declare -A decision
plan() {
	local r a est cum=0 lft=$(($(left) - reserve)) cut_used=0 state tot d
	read -r ov_start ov_full n_start n_full <<<"$(overheads)"
	{
		echo "plan at $(date -u +%H:%M:%S) UTC, ${lft}s of the budget left for runs (--precision $precision, $epochs epochs, L = $L):"
		for a in "${arms[@]}"; do
			local rr n how
			read -r rr n how <<<"$(rate "$a")"
			if [[ -n $rr ]]; then
				echo "  $a: ${arm_name[$a]}; $(awk -v r="$rr" 'BEGIN { printf "%.1f ms", 1000 * r }') per iteration ($how)"
			else
				echo "  $a: ${arm_name[$a]}; not measured"
			fi
		done
		echo "  outside the iterations: ${ov_start}s a process at start ($([[ $n_start -gt 0 ]] && echo "measured, $n_start processes" || echo "guessed")), ${ov_full}s for a run's start, kNN and probe ($([[ $n_full -gt 0 ]] && echo "measured, $n_full runs" || echo "guessed: the start plus ${eval_guess}s"))"
		printf '  %-10s %-6s %-22s %10s  %s\n' run seed state "minutes" decision
		for r in "${runs[@]}"; do
			a=$(arm_of "$r")
			tot=$(total_iters "$r")
			d=$(done_iters "$r")
			if finished "$r"; then
				state="done"
			elif ((d > 0)); then
				state="$d of $tot iterations"
			else
				state="new"
			fi
			if [[ $state == "done" ]]; then
				decision[$r]="done"
				printf '  %-10s %-6s %-22s %10s  %s\n' "$r" "$(seed_of "$r")" "$state" "-" "kept"
				continue
			fi
			est=$(estimate "$r")
			if [[ -z $est ]]; then
				decision[$r]="skip"
				printf '  %-10s %-6s %-22s %10s  %s\n' "$r" "$(seed_of "$r")" "$state" "?" "SKIPPED: its arm is not timed (no time to, or --plan-only)"
			elif ((cum + est <= lft)); then
				decision[$r]="run"
				cum=$((cum + est))
				printf '  %-10s %-6s %-22s %10s  %s\n' "$r" "$(seed_of "$r")" "$state" "$(minutes "$est")" "runs (done by $(minutes "$cum") min)"
			elif ((allow_cut && !cut_used && lft - cum > 60)); then
				decision[$r]="cut"
				cut_used=1
				cum=$lft
				printf '  %-10s %-6s %-22s %10s  %s\n' "$r" "$(seed_of "$r")" "$state" "$(minutes "$est")" "starts, stopped at the deadline with a checkpoint (--allow-cut; the same command continues it)"
			else
				decision[$r]="skip"
				printf '  %-10s %-6s %-22s %10s  %s\n' "$r" "$(seed_of "$r")" "$state" "$(minutes "$est")" "SKIPPED: does not fit in the $(minutes $((lft - cum))) min left (run the command again to continue)"
			fi
		done
	} >"$out/plan.txt"
	cat "$out/plan.txt"
}

say "plan"
plan
if ((plan_only)); then
	echo "paper_table.sh: --plan-only: nothing run"
fi

# ------------------------------------------------------------- runs
status=0
if ((!plan_only)); then
	for r in "${runs[@]}"; do
		[[ ${decision[$r]} == run || ${decision[$r]} == cut ]] || continue
		if [[ ${decision[$r]} == run ]]; then
			# Re-plan with what the runs so far measured: a run that no
			# longer fits is skipped, saying so.
			est=$(estimate "$r")
			if [[ -n $est ]] && ((est > $(left) - reserve)); then
				if ((allow_cut)); then
					echo "paper_table.sh: $r now needs $(minutes "$est") min, $(minutes $(($(left) - reserve))) left: started, stopped at the deadline (--allow-cut)"
				else
					echo "paper_table.sh: SKIPPED $r: now estimated at $(minutes "$est") min with $(minutes $(($(left) - reserve))) min left (the first runs were slower than measured); run the command again to continue"
					decision[$r]="skip"
					continue
				fi
			fi
		fi
		if (($(left) - reserve < 20)); then
			echo "paper_table.sh: SKIPPED $r: $(left)s left"
			decision[$r]="skip"
			continue
		fi
		say "run $r: ${arm_name[$(arm_of "$r")]}, seed $(seed_of "$r")"
		train "$r" $(($(left) - reserve))
		rc=$?
		# A run stopped at the deadline it was planned to meet is no failure.
		[[ $rc == 0 || ($rc == 124 && ${decision[$r]} == cut) ]] || status=1
		complete "$r"
	done
fi

# ------------------------------------------------------------- table
# One row per run with a probe: seed, iterations, images drawn, training
# wall seconds, kNN and probe test top-1; then each arm's mean, standard
# deviation and 95% t-interval over its seeds.
say "table"
{
	echo "# The paper's table: L-SGD against VR RT-MLMC at equal iterations"
	echo
	echo "$epochs epochs at L = $L ($(total_iters "$(first_run_of lsgd)") iterations), --precision $precision, dataset $dataset; test set scored (kNN k from the runs' config, linear probe on all training images); $(date -u +%Y-%m-%dT%H:%MZ)"
	echo
	echo "| run | arm | seed | iterations | images drawn | train wall (s) | kNN top-1 | probe top-1 | probe top-5 |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
	for r in "${runs[@]}"; do
		run=$out/runs/$r
		[[ -f $run/linear_probe.json ]] || continue
		last=$(tail -n 1 "$run/metrics.jsonl")
		it=$(grep -o '"iteration":[0-9]*' <<<"$last" | grep -o '[0-9]*$')
		im=$(grep -o '"samples_drawn":[0-9]*' <<<"$last" | grep -o '[0-9]*$')
		wall=$(grep -o '"wall_seconds":[0-9.]*' <<<"$last" | grep -o '[0-9.]*$')
		knn=$(grep "\"iteration\":$it," "$run/eval.jsonl" 2>/dev/null | tail -n 1 | grep -o '"knn_top1":[0-9.]*' | grep -o '[0-9.]*$')
		[[ -z $knn && -f $run/knn.json ]] && knn=$(grep -o '"top1": *[0-9.]*' "$run/knn.json" | grep -o '[0-9.]*$')
		p1=$(grep -o '"top1": *[0-9.]*' "$run/linear_probe.json" | head -n 1 | grep -o '[0-9.]*$')
		p5=$(grep -o '"top5": *[0-9.]*' "$run/linear_probe.json" | head -n 1 | grep -o '[0-9.]*$')
		printf '| %s | %s | %s | %s | %s | %.0f | %s | %s | %s |\n' "$r" "${arm_name[$(arm_of "$r")]}" "$(seed_of "$r")" "$it" "$im" "$wall" "${knn:--}" "$p1" "$p5"
	done
} >"$out/table.md"
awk -F' [|] ' -v names="$(for a in "${arms[@]}"; do printf '%s\t' "${arm_name[$a]}"; done)" '
	# t quantiles (0.975) for 1 to 10 degrees of freedom
	BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228", tq, " "); na = split(names, arm, "\t") }
	/^[|] [a-z]+-s[0-9]+ / {
		a = $2; n[a]++
		for (m = 1; m <= 3; m++) { v = $(m + 6); gsub(/[ |]/, "", v); if (v != "-") { s[a, m] += v; ss[a, m] += v * v; c[a, m]++ } }
	}
	function cell(a, m,   k, mu, sd, h) {
		k = c[a, m]
		if (k == 0) return "-"
		mu = s[a, m] / k
		if (k == 1) return sprintf("%.2f", mu)
		sd = sqrt((ss[a, m] - k * mu * mu) / (k - 1) > 0 ? (ss[a, m] - k * mu * mu) / (k - 1) : 0)
		h = (k - 1 <= 10 ? tq[k - 1] : 1.96) * sd / sqrt(k)
		return sprintf("%.2f ± %.2f [%.2f, %.2f]", mu, sd, mu - h, mu + h)
	}
	END {
		print ""
		print "Mean ± standard deviation over seeds [95% t-interval of the mean], test accuracy in %:"
		print ""
		print "| arm | seeds | kNN top-1 | probe top-1 | probe top-5 |"
		print "|---|---:|---:|---:|---:|"
		for (i = 1; i <= na; i++) if (arm[i] != "") printf "| %s | %d | %s | %s | %s |\n", arm[i], n[arm[i]], cell(arm[i], 1), cell(arm[i], 2), cell(arm[i], 3)
	}' "$out/table.md" >"$out/table.arms"
cat "$out/table.arms" >>"$out/table.md" && rm -f "$out/table.arms"
cat "$out/table.md"
for r in "${runs[@]}"; do
	[[ ${decision[$r]:-} == skip ]] && echo "not in this table's runs yet: $r (skipped; the same command continues)"
	[[ ${decision[$r]:-} == cut && ! -f $out/runs/$r/linear_probe.json ]] && echo "not finished: $r at iteration $(done_iters "$r") of $(total_iters "$r") (the same command continues it)"
done

# ------------------------------------------------------------- archive
if [[ -n ${OUT:-} ]]; then
	mkdir -p "$OUT"
	echo "paper_table.sh: done in ${SECONDS}s; archive $OUT/paper_table.tar.gz (the output folder without checkpoints)"
	exec >&- 2>&-
	wait "$tee_pid" 2>/dev/null
	tar --exclude='*.safetensors' -czf "$OUT/paper_table.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
else
	echo "paper_table.sh: done in ${SECONDS}s; everything is in $out"
	exec >&- 2>&-
	wait "$tee_pid" 2>/dev/null
fi
exit "$status"
