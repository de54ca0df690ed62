package cuda

import "github.com/simclr-go/simclr/tensor"

// The optimiser steps (kernels/optim.cu; the CPU counterpart is
// backend/cpu/optim.go).

// SGDStep is torch.optim.SGD on one tensor (tensor.SGDConfig).
func (b *Backend) SGDStep(c tensor.SGDConfig, w, g, v tensor.Buffer) {
	n := sameLen("SGDStep", w, g, v)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(w, v)
	if n > 0 {
		b.launch("k_sgd", gridFor(n, b.sms), 1, b.buf(w), b.buf(g), b.buf(v), n, c.LR, c.Momentum, c.WeightDecay, c.Nesterov)
	}
}

// LARSStep is LARS (tensor.LARSConfig); the trust ratio is computed and
// used on the device, so the step does not synchronise.
func (b *Backend) LARSStep(c tensor.LARSConfig, w, g, v tensor.Buffer) {
	n := sameLen("LARSStep", w, g, v)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(w, v)
	if n == 0 {
		return
	}
	trust := b.scalars + scalarTrust
	wd := float32(0)
	if c.Adapt {
		wd = c.WeightDecay
		grid := reduceGrid(n)
		b.launch("k_lars_partial", grid, 1, b.buf(w), b.buf(g), n, wd, b.partial)
		b.launch("k_lars_trust", 1, 1, b.partial, grid, c.Eta, trust)
	}
	b.launch("k_lars_update", gridFor(n, b.sms), 1, b.buf(w), b.buf(g), b.buf(v), n, c.LR, c.Momentum, wd, trust, c.Adapt)
}
