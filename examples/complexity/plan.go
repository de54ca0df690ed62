package main

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/mlmc"
)

// Regime is a triple (a, b, c) in the paper's convention for the row it is
// used on: a is the rate of |F^l - F| on the (strongly) convex rows and of
// |grad F^l - grad F|^2 on the nonconvex ones, b the rate of Var H^l, c the
// rate of a query's cost.
type Regime struct{ A, B, C float64 }

func (r Regime) String() string { return fmt.Sprintf("(a,b,c)=(%g,%g,%g)", r.A, r.B, r.C) }

// Row is a row of the paper's Table 1: an objective class, with or
// without variance reduction (VR rows are nonconvex).
type Row struct {
	Class Class
	VR    bool
}

func (r Row) String() string {
	if r.VR {
		return "vr-" + r.Class.String()
	}
	return r.Class.String()
}

var methods = []mlmc.Method{mlmc.LSGD, mlmc.VMLMC, mlmc.RTMLMC, mlmc.RUMLMC, mlmc.RRMLMC}

// applicable is false for the table's N.A. cells: RU- and RR-MLMC when
// c >= b, where their expected cost or variance is unbounded.
func applicable(m mlmc.Method, r Regime) bool {
	return !(m == mlmc.RUMLMC || m == mlmc.RRMLMC) || r.C < r.B
}

// predicted is the table's exponent p of the total cost O(eps^-p) of
// estimator m on row row in regime r, with n1 = max(1, c/a) and
// n2 = max(1 + (c-b)/a, c/a); ok is false for N.A. logPower is the power
// of log(1/eps) the theorems hide behind their O-tilde (0 where none).
func predicted(row Row, m mlmc.Method, r Regime) (p float64, logPower int, ok bool) {
	if !applicable(m, r) {
		return 0, 0, false
	}
	a, b, c := r.A, r.B, r.C
	n := math.Max(1, c/a) // n1
	if c >= b {
		n = math.Max(1+(c-b)/a, c/a) // n2
	}
	rt := 0.0 // the extra exponent of RT-MLMC when c >= b
	if c > b {
		rt = (c - b) / a
	}
	// The logarithms of the theorems (RT-MLMC: log^2 when b = c; V-MLMC:
	// log on the strongly convex row, log^3 there when b = c, log^2 on the
	// other rows when b = c).
	switch {
	case m == mlmc.RTMLMC && b == c:
		logPower = 2
	case m == mlmc.VMLMC && row.Class == StronglyConvex && b == c:
		logPower = 3
	case m == mlmc.VMLMC && row.Class == StronglyConvex:
		logPower = 1
	case m == mlmc.VMLMC && b == c:
		logPower = 2
	}
	switch {
	case row.VR:
		switch m {
		case mlmc.LSGD:
			return 3 + 2*c/a, logPower, true
		case mlmc.VMLMC:
			return 1 + 2*n, logPower, true
		default:
			return 3 + 2*rt, logPower, true
		}
	case row.Class == StronglyConvex:
		switch m {
		case mlmc.LSGD:
			return 1 + c/a, logPower, true
		case mlmc.VMLMC:
			return n, logPower, true
		default:
			return 1 + rt, logPower, true
		}
	case row.Class == Convex:
		switch m {
		case mlmc.LSGD:
			return 2 + c/a, logPower, true
		case mlmc.VMLMC:
			return 1 + n, logPower, true
		default:
			return 2 + rt, logPower, true
		}
	default:
		switch m {
		case mlmc.LSGD:
			return 4 + 2*c/a, logPower, true
		case mlmc.VMLMC:
			return 2 + 2*n, logPower, true
		default:
			return 4 + 2*rt, logPower, true
		}
	}
}

// tuning modifies the prescribed settings: dL is added to the level L
// (not for RU/RR, which have none), kappa multiplies the step size
// (V-MLMC: the batch factor N instead, its step being the fixed 1/S_F of
// gradient descent).
type tuning struct {
	DL    int     `json:"dL"`
	Kappa float64 `json:"kappa"`
}

var prescribedTuning = tuning{Kappa: 1}

// setting is everything one run of an estimator needs for one eps.
type setting struct {
	Kind mlmc.Kind
	Cfg  mlmc.Config
	// Step is the step size of iteration t (1-based) for a run of horizon
	// T (0 when the step does not depend on it).
	Step func(t, T int) float64
	// Horizon says the step depends on T (gamma = [V T]^(-1/2)): the
	// horizon is searched, every candidate a fresh run.
	Horizon bool
	// Average says the criterion is on the mean of the metric over the
	// iterates (the theorems' output x_hat uniform over x_1..x_T), rather
	// than on the last iterate (the strongly convex theorems' x_T).
	Average bool
	// Target is eps (F - F*) or eps^2 (|grad F|^2).
	Target float64
	// V is the variance bound of one estimate that the step uses.
	V float64
}

// noiseScale is M_b of the oracles at the start: Var H^l = 2^(-b l) (d +
// |x - x*|^2), largest at the starting point.
func noiseScale(p *problem, cls Class) float64 {
	r2 := 0.0
	xs := xStar(p)
	for i := range p.start {
		r2 += (p.start[i] - xs[i]) * (p.start[i] - xs[i])
	}
	return dim + r2
}

func xStar(p *problem) []float64 {
	switch o := p.oracle.(type) {
	case *mlmc.Synthetic:
		return o.XStar
	case *shaped:
		return o.XStar
	}
	panic("complexity: unknown oracle")
}

// levelFor is the theorems' level L = ceil(log2(4 M_a / target) / a) with
// M_a = 1: target eps on the (strongly) convex rows, eps^2 on the
// nonconvex ones (Theorems 3.1 to 3.3 and 3.5's tables).
func levelFor(a, target float64) int {
	// The small margin keeps an exact power of two from rounding up.
	return max(0, int(math.Ceil(math.Log2(4/target)/a-1e-9)))
}

// prescribe returns the theorem-prescribed setting of estimator m on row
// row in regime r for accuracy eps, modified by tu (prescribedTuning for
// none); p gives S_F, the start and M_b. The paper's theorems, by title
// (docs/definitions.md, "The complexity table, measured"):
//
//   - L-SGD, RT-MLMC ("Total cost of L-SGD", "Expected total cost of
//     RT-MLMC"; RU/RR "Expected total cost of RU-MLMC and RR-MLMC"):
//     strongly convex gamma_t = 1/(t + S^2/mu^2) (RU/RR: 1/(mu (t + 2
//     S/mu^2))), mu = S = 1; convex and nonconvex gamma = [V T]^(-1/2) for
//     the run's horizon T, V the estimator's variance bound.
//   - V-MLMC ("Total cost for V-MLMC when b >= c" and its full version in
//     the appendix): gamma = 1/S_F (convex: 1/(2 S_F)),
//     n_l = ceil(2^(-(b+c)l/2) N), N of order eps^-1 (nonconvex eps^-2)
//     times 1, L+1 or 2^((c-b)(L+1)/2) for c < b, = b, > b.
//   - VR ("(Expected) total costs of variance reduction methods" and its
//     proof): gamma = 1/(3 S_F), D1 = ceil(V/eps^2) (the proof's O(V T)),
//     D2 = Q_E = ceil(1/eps), V-MLMC's N as above.
//
// L = ceil(log2(4 M_a/target)/a) with M_a = 1 everywhere. A step is never
// above 1/S_F (the theorems' "T large enough").
func prescribe(row Row, m mlmc.Method, r Regime, eps float64, tu tuning, p *problem) setting {
	mb := noiseScale(p, row.Class)
	s := setting{Kind: mlmc.Kind{Method: m, VR: row.VR}, Target: eps, Average: row.Class != StronglyConvex}
	if row.Class == Nonconvex {
		s.Target = eps * eps
	}
	L := levelFor(r.A, s.Target) + tu.DL
	L = max(L, 0)
	cfg := mlmc.Config{MinLevel: 0, MaxLevel: L, B: r.B, C: r.C}
	if m == mlmc.VMLMC {
		// N = 4 M_b R^L((c-b)/2) / target: Lemma "Variance and
		// Per-Iteration Cost of V-MLMC" bounds the variance by
		// M_b R^L((c-b)/2) / N, so this N holds it at a quarter of the
		// target; R^L((c-b)/2) is the theorem's factor 1, L+1 or
		// 2^((c-b)(L+1)/2) up to a constant.
		rl := 0.0
		for l := 0; l <= L; l++ {
			rl += math.Exp2((r.C - r.B) * float64(l) / 2)
		}
		cfg.N = math.Ceil(4 * mb * rl / s.Target * tu.Kappa)
	}
	s.V = varianceBound(m, cfg, mb)
	S := p.smooth
	kappa := tu.Kappa
	if m == mlmc.VMLMC {
		kappa = 1
	}
	capped := func(g float64) float64 { return math.Min(g, 1/S) }
	switch {
	case row.VR:
		s.Average = true
		cfg.D1 = max(1, int(math.Ceil(s.V/(eps*eps))))
		cfg.D2 = max(1, int(math.Ceil(1/eps)))
		cfg.QE = cfg.D2
		s.Step = func(int, int) float64 { return capped(kappa / (3 * S)) }
	case m == mlmc.VMLMC:
		g := 1 / S
		if row.Class == Convex {
			g = 1 / (2 * S)
		}
		s.Step = func(int, int) float64 { return g }
	case row.Class == StronglyConvex:
		t0 := 1.0 // S^2/mu^2
		if m == mlmc.RUMLMC || m == mlmc.RRMLMC {
			t0 = 2 // 2 S/mu^2
		}
		s.Step = func(t, _ int) float64 { return capped(kappa / (float64(t) + t0)) }
	default:
		s.Horizon = true
		v := s.V
		s.Step = func(_, T int) float64 { return capped(kappa / math.Sqrt(v*float64(T))) }
	}
	s.Cfg = cfg
	return s
}

// varianceBound is the bound on the variance of one estimate with
// Var H^l <= mb 2^(-b l) (the paper's V_l; h^0 likewise): L-SGD sigma^2 =
// sum_{k<=L} V_k, V-MLMC sum V_l/n_l, RT- and RU-MLMC sum V_l/q_l, RR-MLMC
// sum V_l/P(T >= l). Infinite for RU/RR when c >= b.
func varianceBound(m mlmc.Method, cfg mlmc.Config, mb float64) float64 {
	vl := func(l int) float64 { return mb * math.Exp2(-cfg.B*float64(l)) }
	v := 0.0
	switch m {
	case mlmc.LSGD:
		for l := 0; l <= cfg.MaxLevel; l++ {
			v += vl(l)
		}
	case mlmc.VMLMC:
		for l := 0; l <= cfg.MaxLevel; l++ {
			v += vl(l) / float64(mlmc.VMLMCDraws(l, cfg.B, cfg.C, cfg.N))
		}
	case mlmc.RTMLMC:
		q := mlmc.Truncated(0, cfg.MaxLevel, cfg.B, cfg.C)
		for l := 0; l <= cfg.MaxLevel; l++ {
			v += vl(l) / q.Prob(l)
		}
	case mlmc.RUMLMC, mlmc.RRMLMC:
		if cfg.C >= cfg.B {
			return math.Inf(1)
		}
		g := mlmc.Geometric(0, cfg.B, cfg.C)
		for l := 0; l < 60; l++ {
			if m == mlmc.RUMLMC {
				v += vl(l) / g.Prob(l)
			} else {
				v += vl(l) / g.Tail(l)
			}
		}
	}
	return v
}
