// Package cpu is the CPU implementation of tensor.Backend: buffers are Go
// float32 slices, matrix products go through a blas.Gemm (OpenBLAS when the
// system has it, else the pure-Go kernel), and the element-wise kernels run
// on a few goroutines. It is the readable reference the CUDA backend is
// checked against, and it is meant to train ResNet-18 at a usable speed on a
// small machine.
//
// Convolutions use im2col/col2im plus one GEMM per chunk of images, so the
// GEMM's N dimension (images x output positions) is large even in the last
// stage where each image has only 4x4 outputs. The im2col workspace belongs
// to the Backend, grows to the largest chunk once, and is reused, so a
// training step allocates nothing in steady state.
//
// A Backend is not safe for concurrent use by several goroutines: the
// training loop drives it from one goroutine, and the backend parallelises
// each kernel internally.
package cpu
