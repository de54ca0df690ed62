# lib.sh — sourced by scripts/gpu/run_all.sh and scripts/gpu/train_chunk.sh on
# the GPU machine: finds the CUDA libraries simclr loads at run time and sets
#
#   gpu_lib_dirs      the folders holding libcuda, cuBLAS(Lt), NVRTC and
#                     cuDNN 9, in this order: the driver's
#                     (/usr/local/nvidia/lib64, the system folder), the CUDA
#                     toolkit's (/usr/local/cuda, then /usr/local/cuda-*
#                     newest first), then the NVIDIA wheels of
#                     /opt/torch/.venv (nvidia/cu13/lib, nvidia/cudnn/lib);
#                     symlinked folders are followed
#   go_env            (env LD_LIBRARY_PATH=...) to put before the Go programs
#                     only: the folders above join simclr's search without
#                     pinning any (SIMCLR_CUDA_LIBS would: its copies win
#                     whatever their CUDA major), so simclr chooses one set
#                     of one CUDA major itself and `simclr devices` says
#                     which; cuDNN's runtime-compiled engines dlopen NVRTC
#                     and libcudnn opens cuBLAS by name, while PyTorch must
#                     keep the copies its RPATH finds, which a toolkit folder
#                     first in LD_LIBRARY_PATH could shadow. A
#                     SIMCLR_CUDA_LIBS set before is left as it is.
#   XDG_CACHE_HOME    (exported) $gpu_work/cache, so NVRTC's compiled kernels
#                     are cached for the later simclr processes of the run
#   gpu_work          /tmp/simclr-gpu, scratch space (data, runs, cache)
#   gpu_python        /opt/torch/.venv/bin/python, else python3
# shellcheck shell=bash

gpu_work=${GPU_WORK:-/tmp/simclr-gpu}
mkdir -p "$gpu_work"

gpu_lib_dirs=()
gpu_lib_real=()
# gpu_add_lib_dir appends a folder unless it is one already listed under
# another name (/usr/local/cuda/lib64 and /usr/local/cuda-13.0/lib64 are
# often the same folder).
gpu_add_lib_dir() {
	local d real
	real=$(realpath -e "$1" 2>/dev/null || echo "$1")
	for d in "${gpu_lib_real[@]}"; do [[ $d == "$real" ]] && return; done
	gpu_lib_dirs+=("$1")
	gpu_lib_real+=("$real")
}
# GPU_SYS_ROOT prefixes every system folder below (for trying the search on
# a fake tree; empty on the machines).
gpu_sys=${GPU_SYS_ROOT:-}
gpu_torch_site=$(find -L "$gpu_sys/opt/torch/.venv/lib" -maxdepth 2 -type d -name site-packages 2>/dev/null | head -n 1)
# Folders in the documented order (the driver's, the toolkit's, the wheels'),
# each searched with find -L: /usr/local/cuda and its lib64 are often
# symlinks (to /usr/local/cuda-13.0/...), which plain find does not enter.
# Within a folder the matches are sorted, so the order does not depend on
# the file system's.
gpu_roots=("$gpu_sys/usr/local/nvidia/lib64" "$gpu_sys/usr/local/nvidia/lib" "$gpu_sys/usr/lib/x86_64-linux-gnu"
	"$gpu_sys/usr/local/cuda/lib64" "$gpu_sys/usr/local/cuda/targets/x86_64-linux/lib")
while IFS= read -r gpu_f; do
	gpu_roots+=("$gpu_f")
done < <(find -L "$gpu_sys/usr/local" -maxdepth 2 -path "$gpu_sys/usr/local/cuda-*/lib64" 2>/dev/null | sort -rV)
[[ -n $gpu_torch_site ]] && gpu_roots+=("$gpu_torch_site/nvidia")
for gpu_root in "${gpu_roots[@]}"; do
	[[ -d $gpu_root ]] || continue
	while IFS= read -r gpu_f; do
		[[ -n $gpu_f ]] && gpu_add_lib_dir "$(dirname "$gpu_f")"
	done < <(find -L "$gpu_root" -maxdepth 3 \( -name 'libcuda.so.1' -o -name 'libcublasLt.so.1[23]*' -o -name 'libcublas.so.1[23]*' \
		-o -name 'libnvrtc.so.1[23]*' -o -name 'libcudnn.so.9*' \) 2>/dev/null | sort)
done
gpu_lib_path=$(
	IFS=:
	echo "${gpu_lib_dirs[*]}"
)
# shellcheck disable=SC2034 # used by the scripts that source this file
go_env=(env "LD_LIBRARY_PATH=$gpu_lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
export XDG_CACHE_HOME=$gpu_work/cache
export PYTHONUNBUFFERED=1

# shellcheck disable=SC2034
gpu_python=/opt/torch/.venv/bin/python
[[ -x $gpu_python ]] || gpu_python=$(command -v python3 || echo python3)

# gpu_show_libs prints what was found.
gpu_show_libs() {
	local d f
	echo "library folders (LD_LIBRARY_PATH of the Go programs): $gpu_lib_path"
	[[ -n ${SIMCLR_CUDA_LIBS:-} ]] && echo "SIMCLR_CUDA_LIBS=$SIMCLR_CUDA_LIBS (set before: pins its copies)"
	for d in "${gpu_lib_dirs[@]}"; do
		echo "  $d:"
		for f in "$d"/libcuda.so* "$d"/libcublas* "$d"/libcudnn.so* "$d"/libnvrtc*; do
			[[ -e $f ]] && echo "    ${f##*/}"
		done
	done
}
