// Package sgd is the one driver of stochastic gradient descent over
// []float64 parameters with an estimator of package mlmc, in the shape of
// gonum's optimize.Minimize: a Problem, a typed Method (the estimator and
// its settings), a step Schedule, and Recorders that watch the run (the
// value at logged points, the first touch of each target gap, the
// stays-below cost, divergence, progress).
//
// An iterate is x <- Project(x - step_t d .* v_t), v_t the estimator's
// estimate at x, step_t the schedule's step at iteration t and d the
// problem's Precondition (1 without one). A run stops before the iterate
// whose draws would pass the budget (docs/definitions.md, section 2 "The
// estimators").
package sgd

import (
	"fmt"
	"math"
	"slices"

	"github.com/simclr-go/simclr/mlmc"
)

// Instance is one run's oracle, made by Problem.NewOracle for one seed.
type Instance struct {
	// Oracle serves the gradient queries.
	Oracle mlmc.Oracle[[]float64]
	// At tells the oracle the current and previous iterates; the driver
	// calls it before every estimate (the slices are the driver's and
	// change in place between calls). Nil: the oracle needs no iterate.
	At func(x, prev []float64)
	// Cost, when set, is the oracle's cumulative cost so far in the unit
	// a budget is counted in (the pricing problem: simulated queue steps,
	// which a VR correction spends twice). Nil: the estimator's samples.
	Cost func() int64
}

// Problem is a minimisation problem over []float64 parameters with a
// biased multilevel oracle.
type Problem struct {
	// X0 is the starting point.
	X0 []float64
	// NewOracle makes a run's oracle with its randomness seeded by seed:
	// equal seeds give equal draws.
	NewOracle func(seed uint64) (Instance, error)
	// Project, when set, maps an iterate back into the feasible set after
	// every step, in place.
	Project func(x []float64)
	// Precondition, when set, writes the diagonal scaling of the step at
	// x into d: x <- x - step d .* v.
	Precondition func(x, d []float64)
	// Objective, when set, is F(x), exact (se 0) or estimated with a
	// standard error; +Inf outside the problem's domain.
	Objective func(x []float64) (f, se float64)
}

// Check says what a problem lacks to be run.
func (p *Problem) Check() error {
	switch {
	case p.NewOracle == nil:
		return fmt.Errorf("no oracle factory (NewOracle)")
	case len(p.X0) == 0:
		return fmt.Errorf("no starting point (X0)")
	}
	return nil
}

// Method is the estimator a run takes its steps with: its kind and
// settings, Config.Seed seeding its level draws.
type Method struct {
	Kind   mlmc.Kind
	Config mlmc.Config
}

func (m Method) String() string {
	return fmt.Sprintf("%s on levels %d..%d", m.Kind, m.Config.MinLevel, m.Config.MaxLevel)
}

// Schedule is a step rule: the step at iteration t = 0, 1, ... of a run.
type Schedule interface {
	Step(t int) float64
}

// Constant is a constant step.
type Constant float64

func (c Constant) Step(int) float64 { return float64(c) }

// Decay is the schedule Step0 / (1 + t / T0); T0 = 0 is a constant step.
type Decay struct{ Step0, T0 float64 }

func (d Decay) Step(t int) float64 {
	if d.T0 > 0 {
		return 1 / (1 + float64(t)/d.T0) * d.Step0
	}
	return d.Step0
}

// ScheduleFunc is a schedule given as a function.
type ScheduleFunc func(t int) float64

func (f ScheduleFunc) Step(t int) float64 { return f(t) }

// Op says what has just happened when a Recorder is called.
type Op int

const (
	// Estimated: an estimate at the iterate X was drawn; Cost counts its
	// draws. The step has not been taken yet, and is not taken when Cost
	// passes the budget.
	Estimated Op = iota
	// Stepped: the iterate moved; X is the new iterate, Cost the cost of
	// the draws that moved it.
	Stepped
)

// Status is a recorder's verdict on the run.
type Status int

const (
	// Continue lets the run go on.
	Continue Status = iota
	// Stop ends the run where it is (a target met, a stage's end).
	Stop
	// Diverge ends the run as diverged: the iterate left the problem's
	// domain.
	Diverge
)

// Location is the run's state as the recorders see it: read it, never
// keep its slices.
type Location struct {
	// Iter is the iterations taken, Cost the cumulative cost (the
	// settings' Base included) of the draws so far.
	Iter int
	Cost int64
	// X is the iterate, Prev the one before; Step the last step taken.
	X, Prev []float64
	Step    float64

	value func(x []float64) float64
	val   float64
	known bool
}

// Value is the settings' Value at X, computed once per iterate; +Inf
// where X is not finite or the value is NaN. Without a Value it is NaN.
func (l *Location) Value() float64 {
	if !l.known {
		l.val, l.known = ValueAt(l.value, l.X), true
	}
	return l.val
}

// ValueAt is value(x), +Inf where x is not finite or the value NaN, NaN
// without a value function.
func ValueAt(value func([]float64) float64, x []float64) float64 {
	if value == nil {
		return math.NaN()
	}
	if !Finite(x) {
		return math.Inf(1)
	}
	f := value(x)
	if math.IsNaN(f) {
		return math.Inf(1)
	}
	return f
}

// Finite says every coordinate of x is a finite number.
func Finite(x []float64) bool {
	return !slices.ContainsFunc(x, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
}

// Recorder watches a run. Record is called after every estimate and every
// step; its Status can end the run.
type Recorder interface {
	Record(op Op, loc *Location) Status
}

// RecorderFunc is a Recorder given as a function.
type RecorderFunc func(op Op, loc *Location) Status

func (f RecorderFunc) Record(op Op, loc *Location) Status { return f(op, loc) }

// Settings set one Minimize call.
type Settings struct {
	// X is the starting point (default the problem's X0); the run works
	// on a copy.
	X []float64
	// Budget is the cost (Base included) the run may not pass: the step
	// whose draws would pass it is not taken.
	Budget int64
	// Base is the cost spent before this call (a pilot, an earlier stage):
	// it is added to the oracle's.
	Base int64
	// Value, when set, is what Location.Value reads (F, or the problem's
	// error).
	Value func(x []float64) float64
	// Average, when set, takes in every iterate after its step, before
	// the recorders hear of it (it may carry on from an earlier run).
	Average *Average
	// StopAt, when positive, ends the run after the step whose cost (Base
	// included) reaches it: a run in chunks takes the step of every
	// estimate it draws, where one that Budget stops draws an estimate
	// and drops it.
	StopAt int64
	// Iterations, when positive, ends the run after that many steps.
	Iterations int
}

// Average is the weighted average of the iterates x_1..x_N that Add has
// taken in, x_t weighted in proportion to t: the weight on the early
// iterates, far from the optimum, fades, and the average keeps the noise
// reduction of a plain mean over the late ones (docs/definitions.md,
// section 11).
type Average struct {
	N int
	X []float64
}

// Add takes x in.
func (a *Average) Add(x []float64) {
	a.N++
	w := 2 / (float64(a.N) + 1)
	for i := range a.X {
		a.X[i] += w * (x[i] - a.X[i])
	}
}

// Result is a run's outcome.
type Result struct {
	// X is the last iterate, Iterations the steps taken, Cost the cost of
	// the draws of the last step taken, Drawn the cost of every draw (the
	// last estimate's, not taken, included).
	X          []float64
	Iterations int
	Cost       int64
	Drawn      int64
	// Diverged says the iterate left the finite numbers or a recorder
	// found it outside the domain; Stopped that a recorder ended the run.
	Diverged, Stopped bool
	// Totals are the estimator's.
	Totals mlmc.Totals
}

// Minimize runs method m with step schedule sched on oracle inst of
// problem p from s.X until the budget, a recorder's Stop or a divergence.
func Minimize(p *Problem, inst Instance, m Method, sched Schedule, s Settings, recs ...Recorder) (*Result, error) {
	r, err := NewRun(p, inst, m, sched, s, recs...)
	if err != nil {
		return nil, err
	}
	for {
		more, err := r.Next()
		if err != nil {
			return nil, err
		}
		if !more {
			return r.Result(), nil
		}
	}
}

// Run is one run of the driver taken an iteration at a time (Next), for
// callers that advance several runs in lockstep; Minimize is its loop.
type Run struct {
	p     *Problem
	inst  Instance
	e     *mlmc.Estimator[[]float64]
	sched Schedule
	s     Settings
	recs  []Recorder
	at    func(x, prev []float64)
	loc   *Location
	d, v  []float64
	t     int
	res   *Result
	ended bool
}

// NewRun is a run of method m with schedule sched on oracle inst of
// problem p, as Minimize makes it.
func NewRun(p *Problem, inst Instance, m Method, sched Schedule, s Settings, recs ...Recorder) (*Run, error) {
	x0 := s.X
	if x0 == nil {
		x0 = p.X0
	}
	if s.Average != nil && len(s.Average.X) != len(x0) {
		return nil, fmt.Errorf("sgd: Settings.Average holds %d coordinates, the iterate %d: give it a vector of the iterate's length", len(s.Average.X), len(x0))
	}
	ops := mlmc.Float64Ops{Dim: len(x0)}
	e, err := mlmc.New(m.Kind, m.Config, ops, inst.Oracle)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.Kind, err)
	}
	r := &Run{p: p, inst: inst, e: e, sched: sched, s: s, recs: recs, at: inst.At,
		loc: &Location{X: slices.Clone(x0), Prev: slices.Clone(x0), Cost: s.Base, value: s.Value},
		d:   make([]float64, len(x0)), v: ops.New(), res: &Result{}}
	if r.at == nil {
		r.at = func(x, prev []float64) {}
	}
	for i := range r.d {
		r.d[i] = 1
	}
	return r, nil
}

// Location is the run's state; read it, never keep its slices.
func (r *Run) Location() *Location { return r.loc }

// Totals are the estimator's totals so far.
func (r *Run) Totals() mlmc.Totals { return r.e.Totals() }

// Result is the run's outcome so far.
func (r *Run) Result() *Result {
	r.res.X, r.res.Totals = r.loc.X, r.e.Totals()
	return r.res
}

func (r *Run) notify(op Op) Status {
	st := Continue
	for _, rec := range r.recs {
		if s := rec.Record(op, r.loc); s > st {
			st = s
		}
	}
	return st
}

// Next draws an estimate at the iterate and, unless its cost passes the
// budget or a recorder says otherwise, takes the step; false when the run
// has ended (Result says how).
func (r *Run) Next() (bool, error) {
	if r.ended {
		return false, nil
	}
	loc, x, prev, res := r.loc, r.loc.X, r.loc.Prev, r.res
	r.at(x, prev)
	if _, err := r.e.Estimate(r.t, r.v); err != nil {
		return false, fmt.Errorf("%s: %w", r.e.Name(), err)
	}
	cost := r.s.Base + r.e.Totals().Samples
	if r.inst.Cost != nil {
		cost = r.s.Base + r.inst.Cost()
	}
	res.Drawn = cost
	loc.Cost = cost
	st := r.notify(Estimated)
	r.ended = true
	switch {
	case cost > r.s.Budget || st == Stop:
		loc.Cost = res.Cost
		if loc.Iter == 0 {
			loc.Cost = r.s.Base
		}
		res.Stopped = st == Stop
		return false, nil
	case st == Diverge:
		res.Diverged = true
		return false, nil
	}
	copy(prev, x)
	if r.p.Precondition != nil {
		r.p.Precondition(x, r.d)
	}
	lr := r.sched.Step(r.t)
	for i := range x {
		x[i] -= lr * r.d[i] * r.v[i]
	}
	if r.p.Project != nil {
		r.p.Project(x)
	}
	r.t++
	loc.Iter++
	loc.Step = lr
	loc.known = false
	res.Iterations, res.Cost = loc.Iter, cost
	if r.s.Average != nil {
		r.s.Average.Add(x)
	}
	st = r.notify(Stepped)
	switch {
	case !Finite(x) || st == Diverge:
		res.Diverged = true
		return false, nil
	case st == Stop || r.s.StopAt > 0 && cost >= r.s.StopAt || r.s.Iterations > 0 && loc.Iter >= r.s.Iterations:
		res.Stopped = true
		return false, nil
	}
	r.ended = false
	return true, nil
}
