#!/usr/bin/env bash
# Second GPU call: memcheck with one cuDNN, torchvision load of a GPU-trained
# checkpoint, CPU/GPU loss on one seed, and the Xeon host's CPU comparison.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
repo=$(pwd)
OUT=${OUT:-/tmp/out2}; mkdir -p "$OUT"
exec > >(tee -a "$OUT/checks2.log") 2>&1
source scripts/gpu/lib.sh
py=$gpu_python
S=$repo/.gpu/simclr
venv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
data=$gpu_work/data
t0=$SECONDS
say() { echo; echo "=== $* [$(date -u +%H:%M:%S), $((SECONDS - t0))s]"; }
mkdir -p "$data/cifar10-jpeg" && tar -xzf .gpu/cifar10-jpeg.tar.gz -C "$data/cifar10-jpeg"

say "A: simclr devices under compute-sanitizer (which cuDNN, why)"
timeout 60 "${go_env[@]}" /usr/local/cuda/bin/compute-sanitizer --tool memcheck --report-api-errors no "$S" devices 2>&1 | grep -E "cudnn|library set|versions|cuda available|COMPUTE|ERROR" 
echo "ldd-style: which libcudnn sub-libraries exist"
ls /usr/lib/x86_64-linux-gnu/ | grep -i cudnn | head -20
ls $venv/cudnn/lib | head -20
readelf -d $venv/cudnn/lib/libcudnn.so.9 2>/dev/null | grep -E "RUNPATH|RPATH|NEEDED"
dpkg -S /usr/lib/x86_64-linux-gnu/libcudnn.so.9 2>&1 | head -2

say "B: memcheck with SIMCLR_CUDA_LIBS pinned to the wheels' CUDA 13 set"
SIMCLR_CUDA_LIBS=$venv/cu13/lib:$venv/cudnn/lib RUN_BUDGET_S=220 timeout 250 bash scripts/gpu/run_all.sh memcheck >/dev/null 2>&1
cat "$OUT/summary.txt"; grep -E "device cuda|ERROR SUMMARY|error\(s\)" "$OUT/memcheck.log" | head
rm -f "$OUT/run_all.log"

say "C: 300 L-SGD iterations at 256 images, tf32, seed 1, then embed on GPU and CPU and load into torchvision"
run=$gpu_work/runs/tv
common=(--dataset cifar10 --data-dir "$data" --estimator lsgd --max-level 8 --iterations 300 --log-every 1 --checkpoint-every 0 --eval-every 0 --no-progress --probe=false --seed 1)
timeout 120 "${go_env[@]}" "$S" train --device cuda --precision tf32 "${common[@]}" --out "$run" 2>&1 | grep -vE "^iter " | tail -5
timeout 60 "${go_env[@]}" "$S" embed --device cuda --precision fp32 --run "$run" --split test --out "$gpu_work/f_gpu.npy" --no-progress 2>&1 | tail -2
timeout 120 "${go_env[@]}" "$S" embed --device cpu --run "$run" --split test --out "$gpu_work/f_cpu.npy" --no-progress 2>&1 | tail -2
timeout 120 "$py" scripts/simclr_torch.py "$run/model.safetensors" --inputs .gpu/x128.npy --features "$gpu_work/f_torch.npy" 2>&1 | tail -3
"$py" - "$gpu_work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
g = np.load(d + "/f_gpu.npy"); c = np.load(d + "/f_cpu.npy"); t = np.load(d + "/f_torch.npy")
n = t.shape[0]
def rel(a, b):
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))
def relnorm(a, b):
    return float(np.max(np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)))
print("features: gpu", g.shape, "cpu", c.shape, "torch", t.shape, "value range", float(t.min()), float(t.max()))
print("torchvision vs simclr embed on GPU (fp32), first %d test images: max elementwise rel (above 1) %.3g, max row rel-norm %.3g" % (n, rel(g[:n], t), relnorm(g[:n], t)))
print("torchvision vs simclr embed on CPU, first %d test images: max elementwise rel (above 1) %.3g, max row rel-norm %.3g" % (n, rel(c[:n], t), relnorm(c[:n], t)))
print("simclr GPU vs CPU embed, all %d test images: max elementwise rel (above 1) %.3g, max row rel-norm %.3g" % (g.shape[0], rel(g, c), relnorm(g, c)))
PY
cp "$run/metrics.jsonl" "$gpu_work/metrics-gpu-tf32-300.jsonl"

say "D: the same seed on the CPU (this host's Xeon, 16 cores) and on the GPU in fp32, first 40 iterations"
timeout 40 "${go_env[@]}" "$S" train --device cuda --precision fp32 "${common[@]}" --iterations-limit 40 --out "$gpu_work/runs/fp32" 2>&1 | grep -vE "^iter " | tail -2
timeout 120 "${go_env[@]}" "$S" train --device cpu "${common[@]}" --iterations-limit 40 --out "$gpu_work/runs/cpu" 2>&1 | grep -vE "^iter " | tail -2
"$py" - "$gpu_work" <<'PY'
import sys, json
d = sys.argv[1]
def load(p):
    try:
        return {r["iteration"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r}
    except OSError:
        return {}
g = load(d + "/metrics-gpu-tf32-300.jsonl"); f = load(d + "/runs/fp32/metrics.jsonl"); c = load(d + "/runs/cpu/metrics.jsonl")
print("iteration  cpu  gpu-fp32  gpu-tf32")
for i in sorted(c):
    if i in (1, 2, 3, 5, 10, 20, 30, 40) or i == max(c):
        print(i, "%.5f" % c[i], "%.5f" % f.get(i, float("nan")), "%.5f" % g.get(i, float("nan")))
common = [i for i in c if i in f and i in g]
if common:
    print("max |cpu - gpu fp32| over %d iterations: %.3g; max |cpu - gpu tf32|: %.3g" % (len(common), max(abs(c[i] - f[i]) for i in common), max(abs(c[i] - g[i]) for i in common)))
print("gpu tf32 300 iterations: loss at 1 %.4f, mean of 1-10 %.4f, mean of 291-300 %.4f" % (g[1], sum(g[i] for i in range(1, 11)) / 10, sum(g[i] for i in range(291, 301)) / 10))
PY
(cd "$gpu_work" && tar -czf "$OUT/runs2.tar.gz" metrics-gpu-tf32-300.jsonl runs/fp32/metrics.jsonl runs/fp32/config.json runs/cpu/metrics.jsonl runs/cpu/config.json runs/tv/config.json 2>/dev/null)

say "E: CPU step against PyTorch on this Intel Xeon host, 2 cores (taskset 0,1), 2 threads"
left=$((545 - (SECONDS - t0)))
if ((left > 60)); then
  lscpu | grep -E "Model name|^CPU\(s\)|Thread|MHz|L3" 
  timeout $((left - 10)) taskset -c 0,1 "${go_env[@]}" "$py" .gpu/benchmarks/cpu_compare.py --simclr "$S" --python "$py" --images 2,8,16 --rounds 3 --threads 2 --out "$OUT/compare-xeon.json" 2>&1 | tail -30
else
  echo "skipped: ${left}s left"
fi
say "done"
