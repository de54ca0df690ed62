package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/simclr-go/simclr/mlmc"
)

// queueOracle is the GI/GI/1 biased oracle of SPEC section 5 over
// gradient vectors (dF/dmu, dF/dp) in []float64.
//
// A draw at level l is the seed of one trajectory's random numbers (U_n,
// V_n), n = 1..2^l. Evaluated at (mu, p) it runs Lindley's recursion from an
// empty queue,
//
//	W_n = (W_(n-1) + V_n/mu - U_n/lambda(p))^+,   X_n = 1{W_n > 0} (X_(n-1) + U_n/lambda(p)),
//
// and estimates Z = E[W_inf + X_inf] by the tail average
// A(T) = (1/(T - T/2)) sum_{n = T/2+1..T} (W_n + X_n) (integer T/2; the first
// half is warm-up from the empty start). Then h^l = alpha + beta A(2^l) and
// H^l = beta (A(2^l) - A(2^(l-1))), both tail averages taken on the same
// trajectory (GradAffine gives alpha and beta). A query at level l costs 2^l
// simulated steps.
//
// This is SPEC section 5's construction as written; the paper's own
// section 4.2 text could not be read here to check it against. Its
// consequence: the two tail averages cover disjoint windows, so Var H^l and
// Var h^l both fall like 2^-l (b = c = 1, every RT level contributes alike)
// and RT-MLMC's variance per simulated step is about 600 times L-SGD's
// (TestRTMLMCVarianceCostAgainstLSGD). MLMC gains only where Var h^L does not
// shrink with L, e.g. terminal values coupled at the end of the run (the
// test's endCoupledTerminal).
type queueOracle struct {
	law Law
	// x and xPrev are the current and previous decisions (mu, p), set by
	// the optimisation loop.
	x, xPrev [2]float64
	// maxLevel bounds the trajectories (2^maxLevel steps).
	maxLevel int
	seeds    *rand.Rand
}

func newQueueOracle(law Law, maxLevel int, seed uint64) *queueOracle {
	return &queueOracle{law: law, maxLevel: maxLevel, seeds: rand.New(rand.NewPCG(seed, 0x51ed))}
}

func (o *queueOracle) MaxLevel() int { return o.maxLevel }

func (o *queueOracle) Draw(level int) (mlmc.Sample, int64, error) {
	if level < 0 || level > o.maxLevel {
		return nil, 0, fmt.Errorf("queue oracle: level %d outside 0..%d", level, o.maxLevel)
	}
	return queueDraw{level: level, seed: o.seeds.Uint64()}, 1 << level, nil
}

func (o *queueOracle) Release(mlmc.Sample) {}

type queueDraw struct {
	level int
	seed  uint64
}

func (o *queueOracle) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	d, ok := s.(queueDraw)
	if !ok {
		return fmt.Errorf("queue oracle: sample of type %T is not one of its draws", s)
	}
	x := o.x
	if at == mlmc.Previous {
		x = o.xPrev
	}
	a, b := GradAffine(o.law, x[0], x[1])
	long, short := tailAverages(o.law, x[0], x[1], d.seed, d.level)
	if diff {
		out[0] += alpha * b[0] * (long - short)
		out[1] += alpha * b[1] * (long - short)
		return nil
	}
	out[0] += alpha * (a[0] + b[0]*long)
	out[1] += alpha * (a[1] + b[1]*long)
	return nil
}

// tailAverages simulates 2^level steps from the seed and returns the tail
// averages of W + X at T = 2^level and at T = 2^(level-1) (0 at level 0).
func tailAverages(law Law, mu, p float64, seed uint64, level int) (long, short float64) {
	r := rand.New(rand.NewPCG(seed, 0))
	invMu, invLam := 1/mu, 1/lambda(p)
	n := 1 << level
	half, quarter := n/2, n/4
	var w, xx, sumLong, sumShort float64
	for i := 1; i <= n; i++ {
		u := r.ExpFloat64() * invLam
		w += law.Sample(r)*invMu - u
		if w > 0 {
			xx += u
		} else {
			w, xx = 0, 0
		}
		switch {
		case i > half:
			sumLong += w + xx
		case i > quarter:
			sumShort += w + xx
		}
	}
	long = sumLong / float64(n-half)
	if level > 0 {
		short = sumShort / float64(half-quarter)
	}
	return long, short
}
