package cso_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/cso"
	"github.com/simclr-go/simclr/mlmc"
)

// shift is a one-parameter CSO problem with a closed form: xi is uniform on
// Centers, eta ~ N(xi, Sigma^2), and F(x) = E_xi lambda log E exp((x-eta)^2/lambda),
// so that F_xi(x) = -(lambda/2) log r + (x - xi)^2 / r with
// r = 1 - 2 Sigma^2/lambda, and grad F_xi = 2 (x - xi) / r.
type shift struct {
	Centers       []float64
	Sigma, Lambda float64
	losses, w     []float64
}

func (p *shift) Dim() int                                      { return 1 }
func (p *shift) DrawOuter(r *rand.Rand) float64                { return p.Centers[r.IntN(len(p.Centers))] }
func (p *shift) DrawInner(r *rand.Rand, xi, _ float64) float64 { return xi + p.Sigma*r.NormFloat64() }

func (p *shift) PlugIn(x []float64, _ float64, etas []float64, alpha float64, grad []float64) float64 {
	p.losses, p.w = p.losses[:0], append(p.w[:0], make([]float64, len(etas))...)
	for _, e := range etas {
		p.losses = append(p.losses, (x[0]-e)*(x[0]-e))
	}
	v := cso.EntropicRisk(p.losses, p.Lambda, p.w)
	if grad != nil {
		for j, e := range etas {
			grad[0] += alpha * p.w[j] * 2 * (x[0] - e)
		}
	}
	return v
}

func (p *shift) exactGrad(x float64) float64 {
	r := 1 - 2*p.Sigma*p.Sigma/p.Lambda
	g := 0.0
	for _, c := range p.Centers {
		g += 2 * (x - c) / r / float64(len(p.Centers))
	}
	return g
}

func TestEntropicRisk(t *testing.T) {
	for _, c := range []struct {
		name   string
		losses []float64
		lambda float64
	}{
		{"small", []float64{0.1, 0.5, 2}, 1},
		{"equal", []float64{3, 3, 3, 3}, 20},
		{"huge", []float64{1e4, 2e4, 1.5e4}, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := make([]float64, len(c.losses))
			v := cso.EntropicRisk(c.losses, c.lambda, w)
			if math.IsInf(v, 0) || math.IsNaN(v) {
				t.Fatalf("value %g", v)
			}
			naive := 0.0
			for _, l := range c.losses {
				naive += math.Exp(l/c.lambda) / float64(len(c.losses))
			}
			if n := c.lambda * math.Log(naive); !math.IsInf(n, 0) && math.Abs(n-v) > 1e-12*math.Abs(n) {
				t.Errorf("value %.15g, naive formula %.15g", v, n)
			}
			sum := 0.0
			for j := range c.losses {
				sum += w[j]
				h := 1e-6 * (1 + math.Abs(c.losses[j]))
				lp := append([]float64(nil), c.losses...)
				lm := append([]float64(nil), c.losses...)
				lp[j] += h
				lm[j] -= h
				fd := (cso.EntropicRisk(lp, c.lambda, nil) - cso.EntropicRisk(lm, c.lambda, nil)) / (2 * h)
				if math.Abs(fd-w[j]) > 1e-6 {
					t.Errorf("weight %d = %g, finite differences %g", j, w[j], fd)
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("weights sum to %g", sum)
			}
		})
	}
}

// TestOracle checks costs, the outer batch, replay at the previous point,
// H^l as h^l less the mean of the half-sample plug-ins, and the errors.
func TestOracle(t *testing.T) {
	p := &shift{Centers: []float64{-1, 0, 2}, Sigma: 0.8, Lambda: 4}
	o, err := cso.New[float64, float64](p, cso.Config{MaxLevel: 6, OuterBatch: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	x, prev := []float64{0.3}, []float64{-0.2}
	o.SetPoints(x, prev)
	s, cost, err := o.Draw(4)
	if err != nil || cost != 3*16 {
		t.Fatalf("cost %d, err %v; want 48 (3 outer samples x 2^4)", cost, err)
	}
	h, hh, hp, hp2 := []float64{0}, []float64{0}, []float64{0}, []float64{0}
	for _, c := range []struct {
		at   mlmc.Point
		diff bool
		out  []float64
	}{{mlmc.Current, false, h}, {mlmc.Current, true, hh}, {mlmc.Previous, false, hp}, {mlmc.Previous, false, hp2}} {
		if err := o.Eval(s, c.at, c.diff, 1, c.out); err != nil {
			t.Fatal(err)
		}
	}
	if hp[0] != hp2[0] || hp[0] == h[0] {
		t.Errorf("h at x_(t-1) %g then %g, at x_t %g: a replay must be exact and use x_(t-1)", hp[0], hp2[0], h[0])
	}
	if !(math.Abs(hh[0]) < math.Abs(h[0])) {
		t.Errorf("|H^4| = %g is not below |h^4| = %g", math.Abs(hh[0]), math.Abs(h[0]))
	}
	o.Release(s)
	if _, _, err := o.Draw(7); err == nil || !strings.Contains(err.Error(), "0..6") {
		t.Errorf("draw above the maximum level: error %v", err)
	}
	s0, _, _ := o.Draw(0)
	if err := o.Eval(s0, mlmc.Current, true, 1, h); err == nil {
		t.Error("H^0 evaluated without an error")
	}
	if _, err := cso.New[float64, float64](p, cso.Config{OuterBatch: -1}); err == nil {
		t.Error("outer batch -1 accepted")
	}
}

// TestRRMLMCUnbiased checks that RR-MLMC on the oracle has the exact
// gradient as its expectation (the levels are unbounded up to 20, and the
// antithetic H^l decay with b = 2 > c = 1), by a z-test at 99.9%.
func TestRRMLMCUnbiased(t *testing.T) {
	p := &shift{Centers: []float64{-1, 0, 2}, Sigma: 0.8, Lambda: 4}
	o, err := cso.New[float64, float64](p, cso.Config{MaxLevel: 20, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	x := []float64{0.5}
	o.SetPoints(x, x)
	e, err := mlmc.New(mlmc.Kind{Method: mlmc.RRMLMC}, mlmc.Config{B: 2, C: 1, Seed: 3}, mlmc.Float64Ops{Dim: 1}, o)
	if err != nil {
		t.Fatal(err)
	}
	const k = 20000
	v := []float64{0}
	var s1, s2 float64
	for it := range k {
		if _, err := e.Estimate(it, v); err != nil {
			t.Fatal(err)
		}
		s1 += v[0]
		s2 += v[0] * v[0]
	}
	m := s1 / k
	se := math.Sqrt((s2/k - m*m) / k)
	want := p.exactGrad(x[0])
	if z := (m - want) / se; math.Abs(z) > mlmc.NormalCritical(0.999, 1) {
		t.Errorf("mean of RR-MLMC %.5g ± %.2g, exact gradient %.5g (z = %.2f)", m, se, want, z)
	}
	// h^0 alone is biased: its mean is clearly off the exact gradient.
	var h1, h2 float64
	r := rand.New(rand.NewPCG(4, 5))
	for range k {
		xi := p.DrawOuter(r)
		g := []float64{0}
		p.PlugIn(x, xi, []float64{p.DrawInner(r, xi, 0)}, 1, g)
		h1 += g[0] / k
		h2 += g[0] * g[0] / k
	}
	if se0 := math.Sqrt((h2 - h1*h1) / k); math.Abs(h1-want) < 6*se0 {
		t.Errorf("E h^0 = %.5g ± %.2g is within 6 standard errors of the exact %.5g: the test problem has no bias to remove", h1, se0, want)
	}
}

// TestVarianceSplit checks the split on the shift problem: at a high level
// E[h^l | xi] is nearly grad F_xi, so Outer is the variance of
// 2 (x - xi)/r over the centers, known exactly; Inner falls like 2^-l
// (inner draws with a small relative variance: Sigma 0.5).
func TestVarianceSplit(t *testing.T) {
	p := &shift{Centers: []float64{-1, 0, 2}, Sigma: 0.5, Lambda: 4}
	x := []float64{0.5}
	r := rand.New(rand.NewPCG(6, 7))
	rr := 1 - 2*p.Sigma*p.Sigma/p.Lambda
	var m, m2 float64
	for _, c := range p.Centers {
		g := 2 * (x[0] - c) / rr
		m += g / 3
		m2 += g * g / 3
	}
	wantOuter := m2 - m*m
	s8, err := cso.VarianceSplit[float64, float64](p, x, 8, 2000, 4, r)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := cso.VarianceSplit[float64, float64](p, x, 2, 2000, 4, r)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s8.Outer-wantOuter) > 0.1*wantOuter {
		t.Errorf("outer part %.4g at level 8, want %.4g (within 10%%)", s8.Outer, wantOuter)
	}
	if !(s8.Inner < s2.Inner/16) {
		t.Errorf("inner part %.4g at level 8 is not below a sixteenth of level 2's %.4g", s8.Inner, s2.Inner)
	}
	if _, err := cso.VarianceSplit[float64, float64](p, x, 2, 1, 4, r); err == nil {
		t.Error("a split from one outer sample accepted")
	}
}
