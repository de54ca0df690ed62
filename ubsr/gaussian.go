package ubsr

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GaussianSR is the exact shortfall risk of a Gaussian payoff X ~ N(m, s^2),
// s > 0, and its derivative in s (its derivative in m is -1), from the loss's
// Gaussian integrals (docs/definitions.md, section 12):
//
//	SR = the root t of E l(-m - t + s U) = lambda,
//	dSR/ds = E[l'(Y) U] / E l'(Y),  Y = -m - SR + s U,  U ~ N(0, 1).
func GaussianSR(l Loss, lambda, m, s float64) (sr, dSRds float64, err error) {
	if l.Gaussian == nil {
		return 0, 0, fmt.Errorf("ubsr: %s: no Gaussian integrals: the closed form needs Loss.Gaussian", l.Name)
	}
	if !(s > 0) {
		return 0, 0, fmt.Errorf("ubsr: Gaussian shortfall risk needs a positive standard deviation, not %g", s)
	}
	f := func(t float64) (float64, float64) {
		v, d, _ := l.Gaussian(-m-t, s)
		return v - lambda, -d
	}
	t, err := solveDecreasing(f, -m, math.Max(1, s), DefaultTol, l.Name, lambda)
	if err != nil {
		return 0, 0, err
	}
	_, d, du := l.Gaussian(-m-t, s)
	return t, du / d, nil
}

// GaussianPortfolio is the payoff X(theta) = theta . R of a portfolio with
// Gaussian returns R ~ N(Mu, Cov): X ~ N(theta . Mu, theta' Cov theta) and
// X'(theta) = R. It is a Problem (with Xi the return vector R) and has the
// exact shortfall risk and gradient (SR).
type GaussianPortfolio struct {
	Mu  []float64
	Cov [][]float64
	// chol is the lower Cholesky factor of Cov.
	chol [][]float64
}

// NewGaussianPortfolio makes the portfolio of returns with means mu,
// standard deviations sd and one correlation rho between every pair.
func NewGaussianPortfolio(mu, sd []float64, rho float64) (*GaussianPortfolio, error) {
	d := len(mu)
	if d == 0 || len(sd) != d {
		return nil, fmt.Errorf("ubsr: %d means and %d standard deviations: want as many, at least one", d, len(sd))
	}
	cov := make([][]float64, d)
	for i := range cov {
		cov[i] = make([]float64, d)
		for j := range cov[i] {
			c := rho
			if i == j {
				c = 1
			}
			cov[i][j] = c * sd[i] * sd[j]
		}
	}
	chol, err := cholesky(cov)
	if err != nil {
		return nil, fmt.Errorf("ubsr: portfolio covariance (correlation %g): %w", rho, err)
	}
	return &GaussianPortfolio{Mu: mu, Cov: cov, chol: chol}, nil
}

func cholesky(a [][]float64) ([][]float64, error) {
	n := len(a)
	l := make([][]float64, n)
	for i := range l {
		l[i] = make([]float64, n)
		for j := 0; j <= i; j++ {
			s := a[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			if i == j {
				if !(s > 0) {
					return nil, fmt.Errorf("not positive definite (pivot %d is %g)", i, s)
				}
				l[i][i] = math.Sqrt(s)
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	return l, nil
}

// Dim is the number of assets.
func (p *GaussianPortfolio) Dim() int { return len(p.Mu) }

// Draw draws a return vector R = Mu + chol z, z standard normal.
func (p *GaussianPortfolio) Draw(r *rand.Rand, reuse []float64) []float64 {
	d := len(p.Mu)
	if cap(reuse) < 2*d {
		reuse = make([]float64, 2*d)
	}
	out, z := reuse[:d], reuse[d:2*d]
	for i := range z {
		z[i] = r.NormFloat64()
	}
	for i := range out {
		s := p.Mu[i]
		for k := 0; k <= i; k++ {
			s += p.chol[i][k] * z[k]
		}
		out[i] = s
	}
	return out
}

// Payoff is theta . R, with gradient R.
func (p *GaussianPortfolio) Payoff(theta, r, grad []float64) float64 {
	return LinearPayoff(theta, r, grad)
}

// LinearPayoff is the payoff of a portfolio theta of assets with returns
// r, X = theta . r, and writes its gradient r into grad when grad is not
// nil: the Payoff of any Problem whose draw is a vector of returns.
func LinearPayoff(theta, r, grad []float64) float64 {
	x := 0.0
	for i, t := range theta {
		x += t * r[i]
	}
	if grad != nil {
		copy(grad, r)
	}
	return x
}

// SR is the exact shortfall risk at theta and, when grad is not nil, its
// gradient -Mu + (dSR/ds) Cov theta / s (docs/definitions.md, section 12).
func (p *GaussianPortfolio) SR(l Loss, lambda float64, theta, grad []float64) (float64, error) {
	d := len(p.Mu)
	m, s2 := 0.0, 0.0
	ct := make([]float64, d)
	for i := range d {
		m += theta[i] * p.Mu[i]
		for j := range d {
			ct[i] += p.Cov[i][j] * theta[j]
		}
		s2 += theta[i] * ct[i]
	}
	s := math.Sqrt(s2)
	sr, ds, err := GaussianSR(l, lambda, m, s)
	if err != nil {
		return 0, err
	}
	if grad != nil {
		for i := range d {
			grad[i] = -p.Mu[i] + ds*ct[i]/s
		}
	}
	return sr, nil
}
