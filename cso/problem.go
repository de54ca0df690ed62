package cso

import (
	"math"
	"math/rand/v2"
)

// Problem is a CSO problem over parameters x in R^Dim, with outer samples of
// type Xi and inner samples of type Eta.
//
// Methods are called from one goroutine at a time per Problem value, except
// PlugIn, which must be safe to call concurrently on distinct grad vectors
// (VarianceSplit and the callers' evaluation loops may fan out).
type Problem[Xi, Eta any] interface {
	// Dim is the length of x and of the gradient.
	Dim() int
	// DrawOuter draws xi.
	DrawOuter(r *rand.Rand) Xi
	// DrawInner draws eta given xi. reuse is an Eta made by an earlier
	// call that is no longer needed (the zero value at first): a problem
	// whose Eta holds memory (a slice) may fill and return it instead of
	// allocating.
	DrawInner(r *rand.Rand, xi Xi, reuse Eta) Eta
	// PlugIn returns the plug-in value f_xi( (1/n) sum_j g(x; xi, eta_j) )
	// over the n = len(etas) inner draws and, when grad is not nil, adds
	// alpha times its gradient in x into grad.
	PlugIn(x []float64, xi Xi, etas []Eta, alpha float64, grad []float64) float64
}

// EntropicRisk returns lambda log( (1/n) sum_j exp(l_j / lambda) ) for the n
// losses l_j, computed with log-sum-exp so that no exponential overflows,
// and writes into weights (when not nil; len n) the softmax weights
// exp(l_j/lambda) / sum_k exp(l_k/lambda): the risk's derivative in each
// l_j, so its gradient in x is sum_j weights_j grad l_j (docs/definitions.md,
// section 9).
func EntropicRisk(losses []float64, lambda float64, weights []float64) float64 {
	top := math.Inf(-1)
	for _, l := range losses {
		top = math.Max(top, l)
	}
	sum := 0.0
	for j, l := range losses {
		e := math.Exp((l - top) / lambda)
		sum += e
		if weights != nil {
			weights[j] = e
		}
	}
	if weights != nil {
		for j := range weights[:len(losses)] {
			weights[j] /= sum
		}
	}
	return top + lambda*math.Log(sum/float64(len(losses)))
}
