package ref

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// SGDStep is one torch.ref.SGD step (dampening 0) on host slices:
//
//	g = grad + WeightDecay*w
//	v = Momentum*v + g
//	d = g + Momentum*v if Nesterov else v
//	w = w - LR*d
//
// v starts at zero, which matches PyTorch's first step (buf = g).
func SGDStep(c tensor.SGDConfig, w, g, v []float32) {
	if len(g) != len(w) || len(v) != len(w) {
		panic(fmt.Sprintf("ref.SGDStep: w has %d, g %d and v %d elements; want equal", len(w), len(g), len(v)))
	}
	g, v = g[:len(w)], v[:len(w)]
	for i, wi := range w {
		gi := g[i] + c.WeightDecay*wi
		vi := c.Momentum*v[i] + gi
		v[i] = vi
		if c.Nesterov {
			gi += c.Momentum * vi
		} else {
			gi = vi
		}
		w[i] = wi - c.LR*gi
	}
}

// LARSStep is one LARS step as in SimCLR on host slices. For an adapted
// tensor, g = grad + WeightDecay*w and trust = Eta*||w||/||g|| (1 when either
// norm is 0); otherwise g = grad and trust = 1. Then v = Momentum*v +
// LR*trust*g and w = w - v. Norms accumulate in float64.
func LARSStep(c tensor.LARSConfig, w, g, v []float32) {
	if len(g) != len(w) || len(v) != len(w) {
		panic(fmt.Sprintf("ref.LARSStep: w has %d, g %d and v %d elements; want equal", len(w), len(g), len(v)))
	}
	g, v = g[:len(w)], v[:len(w)]
	wd := float32(0)
	trust := float32(1)
	if c.Adapt {
		wd = c.WeightDecay
		var ww, gg float64
		for i, wi := range w {
			gi := float64(g[i] + wd*wi)
			ww += float64(wi) * float64(wi)
			gg += gi * gi
		}
		if ww > 0 && gg > 0 {
			trust = float32(float64(c.Eta) * math.Sqrt(ww) / math.Sqrt(gg))
		}
	}
	scale := c.LR * trust
	for i, wi := range w {
		gi := g[i] + wd*wi
		vi := c.Momentum*v[i] + scale*gi
		v[i] = vi
		w[i] = wi - vi
	}
}
