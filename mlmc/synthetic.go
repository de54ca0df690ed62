package mlmc

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Synthetic is an oracle with known rates a, b, c over []float64 vectors,
// for testing estimators against exact expectations, variances and costs.
//
// Objective: F(x) = |x - X*|^2 / 2; level l approximates it with a bias of
// size Ma 2^(-a l) in a fixed unit direction u:
//
//	grad F^l(x) = (x - X*) + Ma 2^(-a l) u,   grad F(x) = x - X*.
//
// A draw at level l is a seed for independent standard normal vectors
// xi_k, eta_k (k = 0..l, dimension d), and
//
//	h^l(x) = grad F^l(x) + sum_{k=0..l} s_k (xi_k + eta_k .* (x - X*)),   s_k^2 = Mb 2^(-b k),
//
// so h^l and h^(l-1) share xi_0..xi_(l-1), eta_0..eta_(l-1), and
//
//	H^l(x) = h^l - h^(l-1) = grad F^l(x) - grad F^(l-1)(x) + s_l (xi_l + eta_l .* (x - X*))
//
// has total variance E|H^l - E H^l|^2 = Mb 2^(-b l) (d + |x - X*|^2). The
// noise depends on x (through eta), so a VR correction v(x_t; s) - v(x_{t-1}; s)
// does not cancel it. A query at level l costs round(2^(c l)) samples.
type Synthetic struct {
	XStar   []float64 // the minimiser of F
	Dir     []float64 // u, the unit direction of the bias
	A, B, C float64   // rates
	Ma, Mb  float64   // bias and variance constants
	// Max is the largest level served (Unbounded for none).
	Max int
	// X and XPrev are the current and previous parameters, owned by the
	// caller (Eval reads them).
	X, XPrev []float64

	rng *rand.Rand
}

// syntheticDraw is Synthetic's Sample.
type syntheticDraw struct {
	level int
	seed  uint64
}

// NewSynthetic makes a synthetic oracle in dim dimensions with rates a, b, c,
// Ma = Mb = 1, X* = (1, 2, ..., dim)/dim, u = (1, ..., 1)/sqrt(dim), no
// maximum level, X = XPrev = 0.
func NewSynthetic(dim int, a, b, c float64, seed uint64) *Synthetic {
	s := &Synthetic{
		XStar: make([]float64, dim), Dir: make([]float64, dim),
		A: a, B: b, C: c, Ma: 1, Mb: 1, Max: Unbounded,
		X: make([]float64, dim), XPrev: make([]float64, dim),
		rng: rand.New(rand.NewPCG(seed, 0x5deece66d)),
	}
	for i := range dim {
		s.XStar[i] = float64(i+1) / float64(dim)
		s.Dir[i] = 1 / math.Sqrt(float64(dim))
	}
	return s
}

// MaxLevel is Max.
func (s *Synthetic) MaxLevel() int { return s.Max }

// Cost is round(2^(c l)), the cost of a query at level l.
func (s *Synthetic) Cost(l int) int64 { return int64(math.Round(math.Exp2(s.C * float64(l)))) }

// Draw records a seed for the level-l noise.
func (s *Synthetic) Draw(level int) (Sample, int64, error) {
	if level < 0 || (s.Max != Unbounded && level > s.Max) {
		return nil, 0, fmt.Errorf("synthetic oracle: level %d outside 0..%d", level, s.Max)
	}
	return syntheticDraw{level: level, seed: s.rng.Uint64()}, s.Cost(level), nil
}

// Release does nothing: a draw is a seed.
func (s *Synthetic) Release(Sample) {}

// Eval adds alpha h^l or alpha H^l at X or XPrev into out.
func (s *Synthetic) Eval(smp Sample, at Point, diff bool, alpha float64, out []float64) error {
	d, ok := smp.(syntheticDraw)
	if !ok {
		return fmt.Errorf("synthetic oracle: sample of type %T is not one of its draws", smp)
	}
	x := s.X
	if at == Previous {
		x = s.XPrev
	}
	if len(out) != len(x) {
		panic(fmt.Sprintf("mlmc: Synthetic.Eval: out has length %d, parameters %d", len(out), len(x)))
	}
	l := d.level
	// Mean part: grad F^l, or grad F^l - grad F^(l-1).
	biasCoef := s.Ma * math.Exp2(-s.A*float64(l))
	first := 0
	if diff {
		biasCoef -= s.Ma * math.Exp2(-s.A*float64(l-1))
		first = l
	}
	for i := range out {
		g := biasCoef * s.Dir[i]
		if !diff {
			g += x[i] - s.XStar[i]
		}
		out[i] += alpha * g
	}
	// Noise part: levels first..l, each from its own stream of the seed so
	// that the level-k noise is the same at every level >= k.
	for k := first; k <= l; k++ {
		sk := math.Sqrt(s.Mb * math.Exp2(-s.B*float64(k)))
		r := rand.New(rand.NewPCG(d.seed, uint64(k)))
		for i := range out {
			xi, eta := r.NormFloat64(), r.NormFloat64()
			out[i] += alpha * sk * (xi + eta*(x[i]-s.XStar[i]))
		}
	}
	return nil
}

// Grad writes grad F^l(x) into out; a negative level gives grad F(x).
func (s *Synthetic) Grad(level int, x, out []float64) {
	bias := 0.0
	if level >= 0 {
		bias = s.Ma * math.Exp2(-s.A*float64(level))
	}
	for i := range out {
		out[i] = x[i] - s.XStar[i] + bias*s.Dir[i]
	}
}

// NoiseVar is the total variance E|g - E g|^2 of h^l (diff false) or H^l
// (diff true) at x.
func (s *Synthetic) NoiseVar(l int, diff bool, x []float64) float64 {
	r2 := 0.0
	for i := range x {
		r2 += (x[i] - s.XStar[i]) * (x[i] - s.XStar[i])
	}
	first := 0
	if diff {
		first = l
	}
	v := 0.0
	for k := first; k <= l; k++ {
		v += s.Mb * math.Exp2(-s.B*float64(k))
	}
	return v * (float64(len(x)) + r2)
}
