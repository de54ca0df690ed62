package auto

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/mlmc"
)

// topTap watches the top level's corrections H^L that a run draws anyway
// and keeps their running mean: Giles' estimate of the bias of L,
// |E H^L| / (2^a - 1) with a the rate at which |E H^l| falls, read off the
// run rather than off a pilot's few draws at one point
// (docs/definitions.md, section 11). An estimator adds each H^L into its
// sum with a weight; the tap evaluates the draw once into its own vector,
// keeps it and adds the weighted copy, so the run pays one vector sum per
// top query. Where the plan's top queries are h^L (L-SGD), every every-th
// one is also evaluated as H^L, an extra evaluation a 1/every share of
// the run's.
type topTap struct {
	mlmc.Oracle[[]float64]
	level int
	// every > 0: the top queries are h^L; one in every is also evaluated
	// as H^L.
	every, seen int
	scratch     []float64
	sum         []float64 // sum of the H^L draws
	sq          float64   // sum of |H^L|^2
	n           int
	err         error
	box         tapped // the top draw being evaluated, where none is held
}

// tapped is a top-level draw, which the tap recognises in Eval.
type tapped struct{ s mlmc.Sample }

func newTopTap(o mlmc.Oracle[[]float64], level, dim int, hl bool) *topTap {
	t := &topTap{Oracle: o, level: level, scratch: make([]float64, dim), sum: make([]float64, dim)}
	if hl {
		t.every = topTapEvery
	}
	return t
}

// topTapEvery is how often an L-SGD run's h^L draws are also evaluated as
// H^L: one in 64, so that the extra evaluations (each about two of h^L's)
// cost the run about 3%.
const topTapEvery = 64

func (t *topTap) Draw(level int) (mlmc.Sample, int64, error) {
	s, c, err := t.Oracle.Draw(level)
	if err != nil || level != t.level {
		return s, c, err
	}
	if t.box.s == nil {
		// The estimators hold one draw at a time: the box is reused,
		// a top query costs no allocation.
		t.box.s = s
		return &t.box, c, nil
	}
	return &tapped{s}, c, nil
}

func (t *topTap) Release(s mlmc.Sample) {
	if ts, ok := s.(*tapped); ok {
		s = ts.s
		ts.s = nil
	}
	t.Oracle.Release(s)
}

func (t *topTap) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	ts, ok := s.(*tapped)
	if !ok {
		return t.Oracle.Eval(s, at, diff, alpha, out)
	}
	if at != mlmc.Current {
		return t.Oracle.Eval(ts.s, at, diff, alpha, out)
	}
	if t.every > 0 {
		// h^L for the run as it is; one draw in every also as H^L.
		if err := t.Oracle.Eval(ts.s, at, diff, alpha, out); err != nil {
			return err
		}
		if t.seen++; t.seen%t.every != 0 {
			return nil
		}
		clear(t.scratch)
		if err := t.Oracle.Eval(ts.s, mlmc.Current, true, 1, t.scratch); err != nil {
			// The tap's own evaluation failing is no reason to stop
			// the run: it stops watching.
			t.err, t.every = err, 0
			return nil
		}
		t.take()
		return nil
	}
	if !diff {
		return t.Oracle.Eval(ts.s, at, diff, alpha, out)
	}
	clear(t.scratch)
	if err := t.Oracle.Eval(ts.s, mlmc.Current, true, 1, t.scratch); err != nil {
		return err
	}
	for i, v := range t.scratch {
		out[i] += alpha * v
	}
	t.take()
	return nil
}

func (t *topTap) take() {
	sq := 0.0
	for i, v := range t.scratch {
		t.sum[i] += v
		sq += v * v
	}
	t.sq += sq
	t.n++
}

// topBias is the tap's reading: the squared mean |E H^L|^2 estimated
// without the noise's upward bias, y = |mean|^2 - V/n, and its standard
// error; seen says y stands out of its noise (more than twice it, with at
// least minTopDraws draws).
type topBias struct {
	n       int
	y, se   float64
	seen    bool
	comment string
}

// minTopDraws is the fewest H^L draws a reading of the top level's bias
// stands on.
const minTopDraws = 16

func (t *topTap) read() topBias {
	if t.n < 2 {
		return topBias{n: t.n}
	}
	k := float64(t.n)
	m2 := 0.0
	for _, v := range t.sum {
		m := v / k
		m2 += m * m
	}
	v := math.Max((t.sq-k*m2)/(k-1), 0)
	y := m2 - v/k
	// Var |mean|^2 <= 2 V^2/n^2 + 4 |E Y|^2 V/n (as the pilots' bias fit).
	se := math.Sqrt(2*v*v/(k*k) + 4*math.Max(y, 0)*v/k)
	b := topBias{n: t.n, y: y, se: se, seen: t.n >= minTopDraws && y > 2*se}
	b.comment = fmt.Sprintf("|E H^%d|^2 = %.3g +- %.3g over %d draws of the run", t.level, y, se, t.n)
	return b
}

// share is the relative gap the reading's bias of L accounts for,
// (|E H^L| / (2^aG - 1) / |grad F(x0)|)^2, with aG the plan's rate of
// |E H^l|; NaN without a rate or a gradient norm.
func (b topBias) share(aG, gradNorm float64) float64 {
	if !(aG > 0) || !(gradNorm > 0) || b.n < 2 {
		return math.NaN()
	}
	bias := math.Sqrt(math.Max(b.y, 0)) / (math.Exp2(aG) - 1)
	return (bias / gradNorm) * (bias / gradNorm)
}
