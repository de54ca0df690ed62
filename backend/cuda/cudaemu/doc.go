// Package cudaemu builds an emulated CUDA stack for tests: libcuda.so.1,
// libnvrtc.so.12, libcublas.so.12 (with an empty libcublasLt.so.12) and
// libcudnn.so.9, compiled from the C in csrc/ with the system C compiler,
// that run on the host CPU. Pointing SIMCLR_CUDA_LIBS at the folder Build
// returns makes backend/cuda load them through its ordinary library search
// and purego calls, so its code runs end to end without a GPU: the
// project's own kernels are compiled by the emulated NVRTC with the host
// C++ compiler (behind csrc/kernel_shim.h) and run block by block with a
// real barrier for __syncthreads; cuBLAS and cuDNN are reference loops.
// Stream capture records what is queued on a capturing stream (launches,
// copies, memsets, cuBLAS and cuDNN calls) and a graph launch replays it.
// docs/gpu.md says what this proves and what it cannot.
//
// It builds on Linux and macOS (it loads what it compiles with dlopen);
// on Windows the package is empty.
package cudaemu
