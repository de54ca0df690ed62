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
	draws   moments // of the H^L draws
	box     tapped  // the top draw being evaluated, where none is held
	// pr, where the iterate is projected, projects each draw too, into
	// projected: the bias is read along the feasible set, as
	// |grad F(x0)|, which the reading's share divides it by, is.
	pr        *projector
	projected moments
}

// tapped is a top-level draw, which the tap recognises in Eval.
type tapped struct{ s mlmc.Sample }

// newTopTap taps o's draws at level; project, where not nil, is the
// iterate's projection, linearised at x.
func newTopTap(o mlmc.Oracle[[]float64], level int, project func([]float64), x []float64) *topTap {
	t := &topTap{Oracle: o, level: level, scratch: make([]float64, len(x)), draws: newMoments(len(x))}
	if project != nil {
		t.pr, t.projected = newProjector(project, x), newMoments(len(x))
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

// take adds the draw in scratch to the moments, and projected (scratch is
// the tap's own: the estimate has its weighted copy already).
func (t *topTap) take() {
	t.draws.add(t.scratch)
	if t.pr != nil {
		t.pr.direction(t.scratch)
		t.projected.add(t.scratch)
	}
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

// moments are the running sums of vector draws Y: sum Y, sum |Y|^2 and
// their count.
type moments struct {
	sum []float64
	sq  float64
	n   int
}

func newMoments(dim int) moments { return moments{sum: make([]float64, dim)} }

func (m *moments) add(v []float64) {
	for i, x := range v {
		m.sum[i] += x
		m.sq += x * x
	}
	m.n++
}

// meanSquare is y = |mean|^2 - v/n, an estimate of |E Y|^2 without the
// noise's upward bias, and v the draws' variance (its trace).
func (m *moments) meanSquare() (y, v float64) {
	k := float64(m.n)
	m2 := 0.0
	for _, s := range m.sum {
		mean := s / k
		m2 += mean * mean
	}
	v = math.Max((m.sq-k*m2)/(k-1), 0)
	return m2 - v/k, v
}

// read is the reading of the draws, projected where the projection moved
// them (and unprojected where it was one-sided, a box's face, whose
// clipped draws carry an offset of the noise's size, as |grad F(x0)|'s
// reading falls back).
func (t *topTap) read() topBias {
	n := t.draws.n
	if n < 2 {
		return topBias{n: n}
	}
	k := float64(n)
	m := &t.draws
	if t.pr != nil && t.pr.active && !t.pr.oneSided {
		m = &t.projected
	}
	y, v := m.meanSquare()
	// Var |mean|^2 <= 2 V^2/n^2 + 4 |E Y|^2 V/n (as the pilots' bias fit).
	se := math.Sqrt(2*v*v/(k*k) + 4*math.Max(y, 0)*v/k)
	return topBias{n: n, y: y, se: se, seen: n >= minTopDraws && y > 2*se}
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
