package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/simclr-go/simclr/mlmc"
)

// Class is an objective class of the paper's Table 1.
type Class int

const (
	StronglyConvex Class = iota // F - F* <= eps, Synthetic's quadratic
	Convex                      // F - F* <= eps, the quartic-Huber sum
	Nonconvex                   // |grad F|^2 <= eps^2, the cosine-bumped quadratic
)

var classNames = [...]string{"strongly-convex", "convex", "nonconvex"}

func (c Class) String() string { return classNames[c] }

// dim is the dimension of every objective: small, so that a query is cheap
// and the ε grids reach far, but more than one so that the bias direction
// and the noise are vectors.
const dim = 2

// problem is one objective with its oracle for one trial: the parameters
// x (read by the oracle through X and XPrev), the suboptimality or squared
// gradient norm the criterion compares with the target, and the
// smoothness constant the prescribed steps use.
type problem struct {
	oracle mlmc.Oracle[[]float64]
	x, xp  []float64 // current and previous parameters, shared with the oracle
	// metric is F(x) - F* (strongly convex, convex) or |grad F(x)|^2
	// (nonconvex): what the ε criterion compares.
	metric func(x []float64) float64
	smooth float64 // S_F
	start  []float64
}

// objective makes the problem of class cls with the paper's rates
// (a, b, c) in that row's convention and a seeded noise stream. The bias
// rate of the gradient is a on the (strongly) convex rows, where |F^l - F|
// = 2^(-al) |u.(x - x*)| decays as the gradient bias does, and a/2 on the
// nonconvex rows, where the paper's a is the rate of |grad F^l - grad F|^2.
func objective(cls Class, a, b, c float64, seed uint64) *problem {
	switch cls {
	case StronglyConvex:
		s := mlmc.NewSynthetic(dim, a, b, c, seed)
		p := &problem{oracle: s, x: s.X, xp: s.XPrev, smooth: 1, start: make([]float64, dim)}
		xs := s.XStar
		p.metric = func(x []float64) float64 {
			f := 0.0
			for i := range x {
				f += (x[i] - xs[i]) * (x[i] - xs[i]) / 2
			}
			return f
		}
		return p
	case Convex:
		o := newShaped(quarticHuber{}, a, b, c, seed)
		p := &problem{oracle: o, x: o.X, xp: o.XPrev, smooth: quarticHuber{}.smooth(),
			start: []float64{o.XStar[0] + 1.5, o.XStar[1] - 1.5}}
		p.metric = func(x []float64) float64 {
			f := 0.0
			for i := range x {
				f += quarticHuber{}.value(x[i] - o.XStar[i])
			}
			return f
		}
		return p
	default:
		o := newShaped(cosineBump{}, a/2, b, c, seed)
		p := &problem{oracle: o, x: o.X, xp: o.XPrev, smooth: cosineBump{}.smooth(),
			start: []float64{o.XStar[0] + 2.5, o.XStar[1] - 2.5}}
		p.metric = func(x []float64) float64 {
			g := 0.0
			for i := range x {
				d := cosineBump{}.deriv(x[i] - o.XStar[i])
				g += d * d
			}
			return g
		}
		return p
	}
}

// shape is a separable objective F(x) = sum_i phi(x_i - x*_i) with phi
// minimal (and stationary only) at 0.
type shape interface {
	value(u float64) float64
	deriv(u float64) float64
	smooth() float64 // sup |phi''|
}

// quarticHuber is phi(u) = u^4/4 for |u| <= 1, continued by the quadratic
// 1/4 + (|u|-1) + 3(|u|-1)^2/2 that matches it to the second derivative:
// convex, 3-smooth, and not strongly convex (phi”(0) = 0), so SGD needs
// the convex rate and gradient descent slows down near the minimum.
type quarticHuber struct{}

func (quarticHuber) value(u float64) float64 {
	if r := math.Abs(u); r > 1 {
		return 0.25 + (r - 1) + 1.5*(r-1)*(r-1)
	}
	return u * u * u * u / 4
}

func (quarticHuber) deriv(u float64) float64 {
	if r := math.Abs(u); r > 1 {
		return math.Copysign(1+3*(r-1), u)
	}
	return u * u * u
}

func (quarticHuber) smooth() float64 { return 3 }

// cosineBump is phi(u) = u^2/2 + 2(1 - cos u): phi” = 1 + 2 cos u is
// negative on |u| in (2pi/3, 4pi/3) (mod 2pi), so F is nonconvex, yet
// phi'(u) = u + 2 sin u vanishes
// only at u = 0 (u + 2 sin u = 0 needs sin u = -u/2: sin u has the sign of
// u on (0, pi], and |u/2| > 1 beyond 2), so x* is the only stationary
// point, F* = 0, and |phi'| grows without flat regions where a far-away
// point would pass as stationary.
type cosineBump struct{}

func (cosineBump) value(u float64) float64 { return u*u/2 + 2*(1-math.Cos(u)) }
func (cosineBump) deriv(u float64) float64 { return u + 2*math.Sin(u) }
func (cosineBump) smooth() float64         { return 3 }

// shaped is mlmc.Synthetic's oracle with its quadratic replaced by a
// separable shape: grad F^l(x) = grad F(x) + Ma 2^(-A l) u, and h^l adds
// the same noise as Synthetic's, sum_{k<=l} s_k (xi_k + eta_k .* (x - x*))
// with s_k^2 = Mb 2^(-b k), so Var H^l = Mb 2^(-b l) (d + |x - x*|^2) and
// a level-l query costs round(2^(c l)) samples.
type shaped struct {
	phi      shape
	XStar    []float64
	Dir      []float64
	A, B, C  float64
	X, XPrev []float64
	// Max is the largest level served (mlmc.Unbounded for none): the
	// truncation study of RU- and RR-MLMC caps it.
	Max int

	rng   *rand.Rand
	noise rand.PCG // reseeded per level; one value, so Eval allocates nothing
	nrng  *rand.Rand
}

type shapedDraw struct {
	level int
	seed  uint64
}

func newShaped(phi shape, a, b, c float64, seed uint64) *shaped {
	o := &shaped{phi: phi, A: a, B: b, C: c, Max: mlmc.Unbounded,
		XStar: make([]float64, dim), Dir: make([]float64, dim),
		X: make([]float64, dim), XPrev: make([]float64, dim),
		rng: rand.New(rand.NewPCG(seed, 0x5deece66d))}
	for i := range dim {
		o.XStar[i] = float64(i+1) / dim
		o.Dir[i] = 1 / math.Sqrt(dim)
	}
	o.nrng = rand.New(&o.noise)
	return o
}

func (o *shaped) MaxLevel() int { return o.Max }

// Cost is round(2^(c l)), as Synthetic's.
func (o *shaped) Cost(l int) int64 { return int64(math.Round(math.Exp2(o.C * float64(l)))) }

func (o *shaped) Draw(level int) (mlmc.Sample, int64, error) {
	if level < 0 || (o.Max != mlmc.Unbounded && level > o.Max) {
		return nil, 0, fmt.Errorf("shaped oracle: level %d outside 0..%d", level, o.Max)
	}
	return shapedDraw{level: level, seed: o.rng.Uint64()}, o.Cost(level), nil
}

func (o *shaped) Release(mlmc.Sample) {}

func (o *shaped) Eval(smp mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	d, ok := smp.(shapedDraw)
	if !ok {
		return fmt.Errorf("shaped oracle: sample of type %T is not one of its draws", smp)
	}
	x := o.X
	if at == mlmc.Previous {
		x = o.XPrev
	}
	l := d.level
	bias := math.Exp2(-o.A * float64(l))
	first := 0
	if diff {
		bias -= math.Exp2(-o.A * float64(l-1))
		first = l
	}
	for i := range out {
		g := bias * o.Dir[i]
		if !diff {
			g += o.phi.deriv(x[i] - o.XStar[i])
		}
		out[i] += alpha * g
	}
	for k := first; k <= l; k++ {
		sk := math.Sqrt(math.Exp2(-o.B * float64(k)))
		o.noise.Seed(d.seed, uint64(k))
		for i := range out {
			xi, eta := o.nrng.NormFloat64(), o.nrng.NormFloat64()
			out[i] += alpha * sk * (xi + eta*(x[i]-o.XStar[i]))
		}
	}
	return nil
}
