// Package optim holds the optimizers of the trainer: SGD (PyTorch semantics)
// and LARS (SimCLR semantics) on host slices, the learning-rate schedule, and
// Optimizer, which applies one of them to every parameter tensor of an
// nn.Params through a tensor.Backend. The host steps are internal/ref's, the
// same code the CPU backend runs.
package optim

import (
	"github.com/simclr-go/simclr/internal/ref"
	"github.com/simclr-go/simclr/tensor"
)

// SGDStepSlice is one torch.optim.SGD step (dampening 0) on host slices:
//
//	g = grad + WeightDecay*w
//	v = Momentum*v + g
//	d = g + Momentum*v if Nesterov else v
//	w = w - LR*d
//
// v starts at zero, which matches PyTorch's first step (buf = g).
func SGDStepSlice(c tensor.SGDConfig, w, g, v []float32) { ref.SGDStep(c, w, g, v) }

// LARSStepSlice is one LARS step as in SimCLR on host slices. For an adapted
// tensor, g = grad + WeightDecay*w and trust = Eta*||w||/||g|| (1 when either
// norm is 0); otherwise g = grad and trust = 1. Then v = Momentum*v +
// LR*trust*g and w = w - v. Norms accumulate in float64.
func LARSStepSlice(c tensor.LARSConfig, w, g, v []float32) { ref.LARSStep(c, w, g, v) }
