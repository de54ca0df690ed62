package main

import (
	"math"
	"math/rand/v2"

	"github.com/simclr-go/simclr/cso"
)

// The Sinkhorn DRO parameters of the paper's experiment (docs/definitions.md,
// section 9): inner samples z ~ N(a, Sigma2 I), entropic temperature Lambda.
const (
	Sigma2 = 0.1
	Lambda = 20.0
)

// predictor is f_x(z) with its gradient in x: the linear model or the MLP.
type predictor interface {
	// dim is the length of x.
	dim() int
	// predict returns f_x(z).
	predict(x, z []float64) float64
	// addGrad adds alpha * grad_x f_x(z) into grad.
	addGrad(x, z []float64, alpha float64, grad []float64)
	// name is "linear" or "mlp (...)", for logs.
	name() string
}

// sinkhorn is the Sinkhorn DRO regression problem as a CSO problem
// (cso.Problem[int, []float64]): the outer sample is a row index, the inner
// sample the row's features perturbed by N(0, Sigma2 I), the inner function
// exp(l/Lambda) with l = (f_x(z) - b)^2, the outer function Lambda log.
//
// A sinkhorn holds scratch space: it is not safe for concurrent use; make
// one per goroutine (they can share the Data).
type sinkhorn struct {
	data  *Data
	model predictor
	sigma float64
	// scratch: losses, residuals and softmax weights of the inner draws
	loss, resid, weight []float64
}

func newSinkhorn(data *Data, model predictor) *sinkhorn {
	return &sinkhorn{data: data, model: model, sigma: math.Sqrt(Sigma2)}
}

func (p *sinkhorn) Dim() int { return p.model.dim() }

// DrawOuter draws a row uniformly.
func (p *sinkhorn) DrawOuter(r *rand.Rand) int { return r.IntN(len(p.data.Y)) }

// DrawInner draws z ~ N(a, Sigma2 I) for the row's features a.
func (p *sinkhorn) DrawInner(r *rand.Rand, row int, reuse []float64) []float64 {
	a := p.data.X[row]
	z := reuse
	if cap(z) < len(a) {
		z = make([]float64, len(a))
	}
	z = z[:len(a)]
	for k, ak := range a {
		z[k] = ak + p.sigma*r.NormFloat64()
	}
	return z
}

// PlugIn returns Lambda log mean_j exp(l_j/Lambda) over the draws and adds
// alpha times its gradient, sum_j softmax_j 2 u_j grad f_x(z_j), into grad.
func (p *sinkhorn) PlugIn(x []float64, row int, zs [][]float64, alpha float64, grad []float64) float64 {
	n := len(zs)
	if cap(p.loss) < n {
		p.loss, p.resid, p.weight = make([]float64, n), make([]float64, n), make([]float64, n)
	}
	loss, resid, weight := p.loss[:n], p.resid[:n], p.weight[:n]
	b := p.data.Y[row]
	for j, z := range zs {
		u := p.model.predict(x, z) - b
		resid[j], loss[j] = u, u*u
	}
	if grad == nil {
		return cso.EntropicRisk(loss, Lambda, nil)
	}
	v := cso.EntropicRisk(loss, Lambda, weight)
	for j, z := range zs {
		if weight[j] != 0 {
			p.model.addGrad(x, z, alpha*weight[j]*2*resid[j], grad)
		}
	}
	return v
}

// linear is f_x(z) = w.z + w0 with x = (w, w0): the intercept is not
// perturbed.
type linear struct{ d int }

func (m linear) dim() int     { return m.d + 1 }
func (m linear) name() string { return "linear" }

func (m linear) predict(x, z []float64) float64 {
	s := x[m.d]
	for k, zk := range z {
		s += x[k] * zk
	}
	return s
}

func (m linear) addGrad(x, z []float64, alpha float64, grad []float64) {
	for k, zk := range z {
		grad[k] += alpha * zk
	}
	grad[m.d] += alpha
}
