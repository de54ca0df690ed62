package cso

import (
	"fmt"
	"math/rand/v2"
)

// Split is the variance of h^l (the trace of its covariance) split by the
// law of total variance into the part from which outer sample was drawn and
// the part from which inner samples were drawn:
//
//	Var h^l = Var_xi E[h^l | xi] + E_xi Var(h^l | xi) = Outer + Inner.
//
// No estimator of package mlmc reduces Outer: every one of them draws one
// outer sample per query. Inner falls like 2^-l.
type Split struct {
	Level        int     `json:"level"`
	Outer        float64 `json:"outer"`
	Inner        float64 `json:"inner"`
	Total        float64 `json:"total"`
	OuterSamples int     `json:"outer_samples"`
	InnerSets    int     `json:"inner_sets"`
}

// VarianceSplit estimates the Split of h^level at x from k outer samples,
// each with j independent sets of 2^level inner draws: Inner is the mean
// within-xi sample variance and Outer the variance of the per-xi means less
// Inner/j (both unbiased).
func VarianceSplit[Xi, Eta any](p Problem[Xi, Eta], x []float64, level, k, j int, r *rand.Rand) (Split, error) {
	if k < 2 || j < 2 {
		return Split{}, fmt.Errorf("cso: variance split needs at least 2 outer samples and 2 inner sets, got %d and %d", k, j)
	}
	dim := p.Dim()
	n := 1 << level
	etas := make([]Eta, n)
	h := make([][]float64, j)
	for i := range h {
		h[i] = make([]float64, dim)
	}
	means := make([][]float64, k)
	within := 0.0
	for a := range k {
		xi := p.DrawOuter(r)
		m := make([]float64, dim)
		for b := range j {
			clear(h[b])
			for e := range etas {
				etas[e] = p.DrawInner(r, xi, etas[e])
			}
			p.PlugIn(x, xi, etas, 1, h[b])
			for d := range m {
				m[d] += h[b][d] / float64(j)
			}
		}
		for b := range j {
			for d := range m {
				dv := h[b][d] - m[d]
				within += dv * dv / float64(j-1)
			}
		}
		means[a] = m
	}
	inner := within / float64(k)
	grand := make([]float64, dim)
	for _, m := range means {
		for d := range grand {
			grand[d] += m[d] / float64(k)
		}
	}
	between := 0.0
	for _, m := range means {
		for d := range grand {
			dv := m[d] - grand[d]
			between += dv * dv / float64(k-1)
		}
	}
	outer := between - inner/float64(j)
	return Split{Level: level, Outer: outer, Inner: inner, Total: outer + inner, OuterSamples: k, InnerSets: j}, nil
}
