package auto

import (
	"math"

	"github.com/simclr-go/simclr/mlmc"
)

// topTap watches the top level's corrections H^L of the draws an MLMC run
// makes anyway and keeps their running mean: Giles' estimate of the bias
// of L, |E H^L| / (2^a - 1) with a the rate at which |E H^l| falls, read
// off the run rather than off a pilot's few draws at one point
// (docs/definitions.md, section 11). An estimator adds each H^L into its
// sum with a weight; the tap has the oracle evaluate the draw into the
// tap's own vector, keeps it and adds the weighted copy, so the run pays
// one vector sum per top query and the oracle evaluates each draw as
// often as without the tap (an oracle's evaluation may move its state, as
// a queue simulation's does). Under L-SGD no H^L is drawn: no tap.
type topTap struct {
	mlmc.Oracle[[]float64]
	level   int
	scratch []float64
	sum     []float64 // sum of the H^L draws
	sq      float64   // sum of |H^L|^2
	n       int
	box     tapped // the top draw being evaluated, where none is held
	// pr, where the iterate is projected, projects each draw too, into
	// psum and psq: the bias is read along the feasible set, as
	// |grad F(x0)|, which the reading's share divides it by, is.
	pr         *projector
	psum       []float64
	psq        float64
	projection []float64 // a draw projected
}

// tapped is a top-level draw, which the tap recognises in Eval.
type tapped struct{ s mlmc.Sample }

// newTopTap taps o's draws at level; project, where not nil, is the
// iterate's projection, linearised at x.
func newTopTap(o mlmc.Oracle[[]float64], level int, project func([]float64), x []float64) *topTap {
	t := &topTap{Oracle: o, level: level, scratch: make([]float64, len(x)), sum: make([]float64, len(x))}
	if project != nil {
		t.pr = newProjector(project, x)
		t.psum, t.projection = make([]float64, len(x)), make([]float64, len(x))
	}
	return t
}

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
	if at != mlmc.Current || !diff {
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
	if t.pr == nil {
		return
	}
	copy(t.projection, t.scratch)
	t.pr.direction(t.projection)
	sq = 0
	for i, v := range t.projection {
		t.psum[i] += v
		sq += v * v
	}
	t.psq += sq
}

// topBias is the tap's reading: the squared mean |E H^L|^2 estimated
// without the noise's upward bias, y = |mean|^2 - V/n, and its standard
// error; seen says y stands out of its noise (more than twice it, with at
// least minTopDraws draws).
type topBias struct {
	n     int
	y, se float64
	seen  bool
}

// minTopDraws is the fewest H^L draws a reading of the top level's bias
// stands on.
const minTopDraws = 16

// meanSquare is, from the sum of n vector draws Y and the sum of their
// squared norms sq, y = |mean|^2 - v/n, an estimate of |E Y|^2 without the
// noise's upward bias, and v the draws' variance (its trace).
func meanSquare(sum []float64, sq float64, n int) (y, v float64) {
	k := float64(n)
	m2 := 0.0
	for _, s := range sum {
		m := s / k
		m2 += m * m
	}
	v = math.Max((sq-k*m2)/(k-1), 0)
	return m2 - v/k, v
}

// read is the reading of the draws, projected where the projection moved
// them (and unprojected where it was one-sided, a box's face, whose
// clipped draws carry an offset of the noise's size, as |grad F(x0)|'s
// reading falls back).
func (t *topTap) read() topBias {
	if t.n < 2 {
		return topBias{n: t.n}
	}
	k := float64(t.n)
	sum, sq := t.sum, t.sq
	if t.pr != nil && t.pr.active && !t.pr.oneSided {
		sum, sq = t.psum, t.psq
	}
	y, v := meanSquare(sum, sq, t.n)
	// Var |mean|^2 <= 2 V^2/n^2 + 4 |E Y|^2 V/n (as the pilots' bias fit).
	se := math.Sqrt(2*v*v/(k*k) + 4*math.Max(y, 0)*v/k)
	return topBias{n: t.n, y: y, se: se, seen: t.n >= minTopDraws && y > 2*se}
}

// TopBias is a stage's reading of the bias of its top level L from the
// run's own draws (Giles' estimate): MeanSq = |mean H^L|^2 - Var/n over
// Draws draws, SE its standard error, Share the relative gap that bias
// accounts for, (|E H^L| / (2^a - 1) / |grad F(x0)|)^2 (null without a
// rate), Seen whether MeanSq stands out of its noise.
type TopBias struct {
	Level  int      `json:"level"`
	Draws  int      `json:"draws"`
	MeanSq float64  `json:"mean_sq"`
	SE     float64  `json:"se"`
	Share  nullable `json:"share"`
	Seen   bool     `json:"seen"`
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
