// Package cpu is the CPU implementation of tensor.Backend: buffers are Go
// float32 slices, matrix products go through a blas.Gemm (OpenBLAS when the
// system has it, else the pure-Go kernel; with OpenBLAS, each product shape
// goes to whichever of the two a race at its first call found faster), and
// every kernel runs on a few worker goroutines, one per core. It is the
// readable reference the CUDA backend is checked against, and it trains
// ResNet-18 at a usable speed on a small machine.
//
// The 3x3 stride-1 convolutions (most of ResNet-18's FLOPs) use Winograd
// F(2x2,3x3) (winograd.go): 16 GEMMs per layer on transformed 4x4 tiles,
// 2.25x fewer multiplications than a direct convolution, shared among the
// workers by GEMM, with the tile transforms in AVX2 assembly where the CPU
// has it. convAlgorithm (conv_policy.go) says which layers, and why.
//
// The other convolutions use im2col/col2im plus GEMMs. Each worker takes
// a contiguous share of the images and runs its own single-threaded GEMMs
// on chunks of them: the chunk is sized so the GEMM's N dimension (images
// x output positions) is large even in the last stage, where an image has
// only 4x4 outputs. Splitting over images rather than inside each GEMM keeps both
// cores busy through im2col, col2im and the GEMMs alike, where a
// multi-threaded BLAS would leave its threads spin-waiting while the
// lowering runs (a third of the CPU time when measured). Each worker's
// workspace belongs to the Backend, grows to the largest chunk once and is
// reused, so a training step allocates nothing in steady state. Weight
// gradients are summed over workers in a fixed order, so results are
// deterministic for a given worker count.
//
// Backward kernels overwrite their outputs (dx, dw, dgamma, ...); they do
// not accumulate into them.
//
// A Backend is not meant to be driven by several goroutines at once: the
// training loop calls it from one goroutine and it parallelises each
// kernel internally (a mutex keeps the convolution workspaces safe anyway).
package cpu
