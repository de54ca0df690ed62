# lib.sh — sourced by scripts/gpu/run_all.sh and scripts/gpu/train_chunk.sh on
# the GPU machine: finds the CUDA libraries simclr loads at run time and sets
#
#   SIMCLR_CUDA_LIBS  (exported) the folders holding libcuda, cuBLAS(Lt), NVRTC
#                     and cuDNN 9: the driver's, the CUDA toolkit's, then the
#                     NVIDIA wheels of /opt/torch/.venv (nvidia/cu13/lib, nvidia/cudnn/lib)
#   gpu_lib_dirs      the same folders as an array
#   go_env            (env LD_LIBRARY_PATH=...) to put before the Go programs
#                     only: cuDNN's runtime-compiled engines dlopen NVRTC and
#                     libcudnn opens cuBLAS by name, while PyTorch must keep the
#                     copies its RPATH finds, which a toolkit folder first in
#                     LD_LIBRARY_PATH could shadow
#   XDG_CACHE_HOME    (exported) $gpu_work/cache, so NVRTC's compiled kernels
#                     are cached for the later simclr processes of the session
#   gpu_work          /tmp/simclr-gpu, scratch space (data, runs, cache)
#   gpu_python        /opt/torch/.venv/bin/python, else python3
# shellcheck shell=bash

gpu_work=${GPU_WORK:-/tmp/simclr-gpu}
mkdir -p "$gpu_work"

gpu_lib_dirs=()
gpu_add_lib_dir() {
	local d
	for d in "${gpu_lib_dirs[@]}"; do [[ $d == "$1" ]] && return; done
	gpu_lib_dirs+=("$1")
}
gpu_torch_site=$(find /opt/torch/.venv/lib -maxdepth 2 -type d -name site-packages 2>/dev/null | head -n 1)
for gpu_pattern in 'libcuda.so.1' 'libcublasLt.so.1[23]*' 'libcublas.so.1[23]*' 'libnvrtc.so.1[23]*' 'libcudnn.so.9*'; do
	while IFS= read -r gpu_f; do
		[[ -n $gpu_f ]] && gpu_add_lib_dir "$(dirname "$gpu_f")"
	done < <(find /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
		/usr/local/cuda-*/lib64 ${gpu_torch_site:+"$gpu_torch_site/nvidia"} -maxdepth 3 -name "$gpu_pattern" 2>/dev/null | sort)
done
SIMCLR_CUDA_LIBS=$(
	IFS=:
	echo "${gpu_lib_dirs[*]}"
)
export SIMCLR_CUDA_LIBS
# shellcheck disable=SC2034 # used by the scripts that source this file
go_env=(env "LD_LIBRARY_PATH=$SIMCLR_CUDA_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
export XDG_CACHE_HOME=$gpu_work/cache
export PYTHONUNBUFFERED=1

# shellcheck disable=SC2034
gpu_python=/opt/torch/.venv/bin/python
[[ -x $gpu_python ]] || gpu_python=$(command -v python3 || echo python3)

# gpu_show_libs prints what was found.
gpu_show_libs() {
	local d f
	echo "SIMCLR_CUDA_LIBS=$SIMCLR_CUDA_LIBS"
	for d in "${gpu_lib_dirs[@]}"; do
		echo "  $d:"
		for f in "$d"/libcuda.so* "$d"/libcublas* "$d"/libcudnn.so* "$d"/libnvrtc*; do
			[[ -e $f ]] && echo "    ${f##*/}"
		done
	done
}
