// Package tensor defines the compute backend interface that the layers, the
// model, the loss and the optimizers run on.
//
// A Backend owns float32 buffers (Go slices on the CPU, device memory on a
// GPU) and executes the kernels of one training step on them. Work may be
// queued asynchronously: results are only guaranteed visible to the host
// after Download or Sync. Every kernel writes its outputs (it never
// accumulates into them) unless its comment says otherwise, so callers need
// not zero gradient buffers between steps; fan-out (a residual branch) is
// summed explicitly with Add.
//
// Layouts: images are NCHW (N images, C channels, H rows, W columns), row
// major; matrices are row major; a Linear weight is (Out, In) and a convolution
// weight is (K, C, R, S), as in PyTorch, so checkpoints map one to one onto
// torchvision tensors.
//
// Backends implement this interface; the CPU backend (backend/cpu) is the
// readable reference and the CUDA backend (backend/cuda) mirrors it kernel by
// kernel.
package tensor
