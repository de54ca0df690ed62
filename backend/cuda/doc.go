// Package cuda is the NVIDIA GPU implementation of tensor.Backend. It loads
// the driver (libcuda), cuBLAS, cuDNN 9 and NVRTC at run time through purego,
// so the program builds with CGO_ENABLED=0 and runs on machines without a
// GPU (where Open returns an error and callers fall back to the CPU).
//
// The structure mirrors backend/cpu file by file: convolutions (conv.go) go
// through cuDNN, its legacy API or its backend (graph) API (convgraph.go,
// chosen by Options.ConvAPI), matrix products (layers.go) through cuBLAS, and every other
// kernel is CUDA C in kernels/*.cu, one file per concern beside its Go
// launchers (vector, layers, batchnorm, groupnorm, loss, optim, as backend/cpu's Go
// files), embedded in the binary and compiled by NVRTC for the device at
// start-up and cached on disk (kernels.go). Buffers are device pointers carved from a few large cuMemAlloc
// chunks by an arena allocator; all work is queued on one stream, and a
// Backend is used by one goroutine at a time (a mutex guards it anyway).
//
// Libraries are searched in SIMCLR_CUDA_LIBS (a colon-separated list of
// folders), LD_LIBRARY_PATH, /usr/local/nvidia/lib64 (the mounted driver),
// /usr/local/cuda*, Python wheels
// (site-packages/nvidia/*/lib, e.g. PyTorch's) and the system folders,
// and cuBLAS(Lt), NVRTC and cuDNN are chosen as one set of one CUDA major,
// the driver's where it is whole (libset.go: cuDNN opens the cuBLASLt and
// NVRTC of its own major); Probe reports what was found and the set chosen
// for `simclr devices`.
//
// GraphStep (graph.go) records a small training step as a CUDA graph once
// and replays it with one launch, the optional tensor.StepGraphs.
//
// Device failures do not panic: the first one is remembered, later kernels
// are skipped, and Sync returns it.
package cuda
