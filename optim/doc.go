// Package optim holds the optimizers of the trainer: Optimizer applies SGD
// (PyTorch semantics) or LARS (SimCLR semantics) to every parameter tensor
// of an nn.Params through a tensor.Backend, and Schedule is the
// learning-rate schedule. The steps themselves are the backend's kernels,
// whose host reference is internal/ref's.
package optim
