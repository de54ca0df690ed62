package experiment

import (
	"fmt"
	"math"
	"slices"

	"github.com/simclr-go/simclr/mlmc"
)

// Trace is one trial's outcome.
type Trace struct {
	Seed uint64 `json:"seed"`
	// Values[k] is F (or the problem's Error) at the last iterate whose
	// cumulative cost is at most the k-th logged point (x0 before any);
	// +Inf outside the domain or after divergence.
	Values []float64 `json:"-"`
	// First[i] is the cost at which the i-th target was first touched, read
	// at every iterate when the problem allows it (Problem.EveryIterate and
	// a known F*), else -1 until the protocol reads it off Values.
	First []int64 `json:"-"`
	// Diverged says an iterate left the finite numbers.
	Diverged bool `json:"diverged,omitempty"`
	// Iterations, Cost and Final: the iterates within the budget, the cost
	// of the last of them, and it.
	Iterations int       `json:"iterations"`
	Cost       int64     `json:"cost"`
	Final      []float64 `json:"-"`
	// Plans are the auto method's plans, in order.
	Plans []Plan `json:"plans,omitempty"`

	firstRead bool // First was read during the run
}

// gauge turns recorded values into gaps: the relative gap, or the
// problem's Error as it is.
type gauge struct {
	err       bool
	f0, fStar float64
}

func (g gauge) gap(v float64) float64 {
	if g.err {
		return v
	}
	return (v - g.fStar) / (g.f0 - g.fStar)
}

// Trial runs method m from the problem's x0 with one seed until the next
// iterate would pass budget, recording the value at every logged point
// (points, increasing). An iterate is x <- Project(x - step_t * d .* v_t),
// v_t the estimator's estimate, step_t = Step/(1 + t/Decay), d the
// problem's Precondition (1 without one). g reads the first touch of each
// target at every iterate when the problem allows it.
func trial(p *Problem, m Method, seed uint64, budget int64, points []int64, targets []float64, g gauge, everyIterate bool) (Trace, error) {
	tr := Trace{Seed: seed, Values: make([]float64, len(points)), First: make([]int64, len(targets)), firstRead: everyIterate}
	for i := range tr.First {
		tr.First[i] = -1
	}
	x, prev := slices.Clone(p.X0), slices.Clone(p.X0)
	d := make([]float64, len(x))
	for i := range d {
		d[i] = 1
	}
	v := make([]float64, len(x))
	var cost int64
	planner := m.Auto
	replan := int64(-1)
	if planner != nil {
		pl, err := planner.Plan(Pilot{Problem: p, X: slices.Clone(x), Seed: seed, Budget: budget})
		if err != nil {
			return tr, fmt.Errorf("auto, seed %d: plan at x0: %w", seed, err)
		}
		tr.Plans = append(tr.Plans, pl)
		m, cost, replan = pl.Method, pl.Spent, pl.ReplanAt
	}
	run, err := newRunner(p, m, seed, cost)
	if err != nil {
		return tr, err
	}
	last := p.value(x) // the value at x, NaN until computed
	k := 0
	for it := 0; ; it++ {
		if replan > 0 && cost >= replan {
			prevPlan := tr.Plans[len(tr.Plans)-1]
			pl, err := planner.Plan(Pilot{Problem: p, X: slices.Clone(x), Seed: seed, Budget: budget, Spent: cost, Previous: &prevPlan})
			if err != nil {
				return tr, fmt.Errorf("auto, seed %d: plan again at cost %d: %w", seed, cost, err)
			}
			tr.Plans = append(tr.Plans, pl)
			m, replan = pl.Method, pl.ReplanAt
			cost += pl.Spent
			if run, err = newRunner(p, m, seed, cost); err != nil {
				return tr, err
			}
			// The new estimator starts afresh (a VR one with a fresh estimate).
			it = 0
		}
		run.inst.At(x, prev)
		if _, err := run.est.Estimate(it, v); err != nil {
			return tr, fmt.Errorf("%s, seed %d: %w", m, seed, err)
		}
		cost = run.cost()
		// Logged points before this iterate's cost belong to the last one.
		for ; k < len(points) && points[k] < cost; k++ {
			if math.IsNaN(last) {
				last = p.value(x)
			}
			tr.Values[k] = last
		}
		if cost > budget {
			break
		}
		copy(prev, x)
		if p.Precondition != nil {
			p.Precondition(x, d)
		}
		lr := m.Step
		if m.Decay > 0 {
			lr = 1 / (1 + float64(it)/m.Decay) * m.Step
		}
		for i := range x {
			x[i] -= lr * d[i] * v[i]
		}
		if p.Project != nil {
			p.Project(x)
		}
		tr.Iterations++
		tr.Cost = cost
		last = math.NaN()
		if everyIterate {
			last = p.value(x)
			for i, target := range targets {
				if tr.First[i] < 0 && g.gap(last) <= target {
					tr.First[i] = cost
				}
			}
		}
		if slices.ContainsFunc(x, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }) {
			tr.Diverged = true
			for ; k < len(points); k++ {
				tr.Values[k] = math.Inf(1)
			}
			break
		}
	}
	for ; k < len(points); k++ {
		if math.IsNaN(last) {
			last = p.value(x)
		}
		tr.Values[k] = last
	}
	tr.Final = x
	return tr, nil
}

// runner is one estimator on one trial's oracle.
type runner struct {
	inst Instance
	est  *mlmc.Estimator[[]float64]
	// base is the trial's cost before this estimator's first draw (the
	// pilots').
	base int64
}

func newRunner(p *Problem, m Method, seed uint64, base int64) (*runner, error) {
	inst, err := p.NewOracle(seed)
	if err != nil {
		return nil, fmt.Errorf("%s, seed %d: oracle: %w", m, seed, err)
	}
	if inst.At == nil {
		inst.At = func(x, prev []float64) {}
	}
	cfg := m.Config
	cfg.Seed = seed
	e, err := mlmc.New(m.Kind, cfg, mlmc.Float64Ops{Dim: len(p.X0)}, inst.Oracle)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m, err)
	}
	return &runner{inst: inst, est: e, base: base}, nil
}

// cost is the trial's cumulative cost.
func (r *runner) cost() int64 {
	if r.inst.Cost != nil {
		return r.base + r.inst.Cost()
	}
	return r.base + r.est.Totals().Samples
}

// Trial runs method m from the problem's x0 with one seed until the next
// iterate would pass budget, and returns its trace with the value logged at
// the budget only: for a run's last iterate (Trace.Final).
func Trial(p *Problem, m Method, seed uint64, budget int64) (Trace, error) {
	if err := p.check(); err != nil {
		return Trace{}, err
	}
	return trial(p, m, seed, budget, []int64{budget}, nil, gauge{err: true}, false)
}
