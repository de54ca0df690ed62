package experiment

import (
	"fmt"
	"math"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
)

// Instance is one trial's oracle, made by Problem.NewOracle for one seed.
type Instance struct {
	// Oracle serves the gradient queries.
	Oracle mlmc.Oracle[[]float64]
	// At tells the oracle the current and previous iterates; the harness
	// calls it before every estimate (the slices are the harness's and
	// change in place between calls).
	At func(x, prev []float64)
	// Cost, when set, is the trial's cumulative cost so far in the unit the
	// budget and the samples to a gap are counted in (the pricing problem:
	// simulated queue steps, which a VR correction spends twice). Nil: the
	// estimator's samples (each draw's cost once).
	Cost func() int64
}

// Objective is what a run's progress is read on: F(x), exact or estimated.
type Objective struct {
	// Value is F(x) and its standard error (0 when exact); +Inf outside the
	// problem's domain.
	Value func(x []float64) (f, se float64)
	// About says how Value is computed, for the report.
	About string
}

// Optimum is F*, the objective's minimum.
type Optimum struct {
	// Value is F*, or with Reached an upper bound on it (+Inf for none).
	Value float64
	// Reached says F* is not known: the experiment takes the lowest value
	// any of its runs reached (starting from Value), and says so.
	Reached bool
}

// Problem is a biased-oracle optimisation problem the harness can run: the
// oracle of each trial, the start, the update's projection and scaling,
// and how progress is measured.
type Problem struct {
	// Name and About name the problem in the report ("housing", "LIBSVM
	// housing_scale: 506 rows ...").
	Name, About string
	// NewOracle makes a trial's oracle with its randomness seeded by seed.
	NewOracle func(seed uint64) (Instance, error)
	// X0 is the starting point.
	X0 []float64
	// Project, when set, maps an iterate back into the feasible set after
	// each step, in place.
	Project func(x []float64)
	// Precondition, when set, writes the diagonal scaling of the step at x
	// into d: x <- x - step * d .* v.
	Precondition func(x, d []float64)
	// Objective and FStar define the relative gap (F(x) - F*)/(F(x0) - F*)
	// the targets are read on.
	Objective Objective
	FStar     Optimum
	// Error, when set, replaces the relative gap: the targets are read on
	// Error(x) directly (the pricing problem: |x - x*|/|x*|), and Objective
	// and FStar may be left zero.
	Error func(x []float64) float64
	// EveryIterate says the objective (or Error) is cheap enough to
	// evaluate after every iterate: the first touch of a target is then
	// read at every iterate; otherwise only at the logged points. It costs
	// one evaluation per iteration, which can exceed the iteration itself:
	// an exact objective that passes over a data set is many oracle
	// queries' worth of work, and RT-MLMC draws a few samples an
	// iteration. On examples/ownoracle's problem (an objective over 200
	// rows, RT-MLMC at about two inner samples an iteration) it took about
	// three quarters of the run's time (BenchmarkEveryIterate there, 2
	// cores of an AMD EPYC: results/ownoracle/every-iterate.txt). Leave it
	// off unless first touches between logged points matter; the
	// stays-below headline reads the logged points alone.
	EveryIterate bool
	// CostName and ErrorName label the axes and tables ("generated inner
	// samples", "(F - F*) / (F(x0) - F*)"); defaults "samples" and
	// "relative gap".
	CostName, ErrorName string
}

func (p *Problem) check() error {
	switch {
	case p.NewOracle == nil:
		return fmt.Errorf("problem %s: no oracle factory (NewOracle)", p.Name)
	case len(p.X0) == 0:
		return fmt.Errorf("problem %s: no starting point (X0)", p.Name)
	case p.Error == nil && p.Objective.Value == nil:
		return fmt.Errorf("problem %s: neither an objective nor an Error to read the targets on", p.Name)
	}
	return nil
}

func (p *Problem) costName() string {
	if p.CostName == "" {
		return "samples"
	}
	return p.CostName
}

func (p *Problem) errorName() string {
	switch {
	case p.ErrorName != "":
		return p.ErrorName
	case p.Error != nil:
		return "error"
	}
	return "(F - F*) / (F(x0) - F*)"
}

// value is what a trace records at x: F(x), or Error(x); +Inf where x or
// the value is not finite.
func (p *Problem) value(x []float64) float64 {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return math.Inf(1)
		}
	}
	var f float64
	if p.Error != nil {
		f = p.Error(x)
	} else {
		f, _ = p.Objective.Value(x)
	}
	if math.IsNaN(f) {
		return math.Inf(1)
	}
	return f
}

// Method is one optimiser the harness runs: an estimator of package mlmc
// with its settings and step rule, or (Auto set) a method that a pilot
// decides. Its name for people is derived (Name), never parsed.
type Method struct {
	// Kind is the estimator.
	Kind mlmc.Kind
	// Config holds its settings (levels, rates, draws, VR); Seed is set per
	// trial.
	Config mlmc.Config
	// Step is the step size and Decay t0 of the schedule
	// Step/(1 + t/t0) at iteration t (0: constant).
	Step, Decay float64
	// Budget, when positive, replaces the protocol's budget for this method.
	Budget int64
	// Auto, when set, makes this the auto method: its Kind, Config, Step
	// and Decay are what Auto's plan says, and the pilot's cost counts in
	// the trial's total.
	Auto Planner `json:"-"`
}

// Family is what tuning chooses within: one estimator kind, or auto.
type Family struct {
	Kind mlmc.Kind
	Auto bool
}

// Family is the method's family.
func (m Method) Family() Family {
	if m.Auto != nil {
		return Family{Auto: true}
	}
	return Family{Kind: m.Kind}
}

// Name is the family's name for people: "L-SGD", "VR RT-MLMC", "auto".
func (f Family) Name() string {
	if f.Auto {
		return "auto"
	}
	n := f.Kind.Method.DisplayName()
	if f.Kind.VR {
		return "VR " + n
	}
	return n
}

// Name is the method's family name.
func (m Method) Name() string { return m.Family().Name() }

// Unbounded says the estimator draws levels from a law on l_min..infinity
// (RU-MLMC, RR-MLMC): it has no top level L.
func (f Family) Unbounded() bool {
	return !f.Auto && f.Kind.Method.Unbounded()
}

// String is a one-line description: "RT-MLMC L=5 step=0.01".
func (m Method) String() string {
	if m.Auto != nil {
		return "auto"
	}
	return m.Name() + " " + m.settings("=", " ")
}

// settings writes the method's settings that are set, each name and value
// joined by eq and the pairs by sep: "L=5 step=0.01", "L 5, step 0.01".
func (m Method) settings(eq, sep string) string {
	var parts []string
	add := func(name string, v any) { parts = append(parts, fmt.Sprint(name, eq, v)) }
	if !m.Family().Unbounded() {
		add("L", m.Config.MaxLevel)
	}
	add("step", m.Step)
	if m.Decay > 0 {
		add("t0", m.Decay)
	}
	if m.Kind.VR && m.Config.D1 > 0 {
		add("D1", m.Config.D1)
	}
	if m.Config.NL > 1 {
		add("NL", m.Config.NL)
	}
	return strings.Join(parts, sep)
}

// Planner is the auto method's planner: from a pilot on the problem it
// decides the estimator, its levels and level law, and the step.
type Planner interface {
	// Plan measures the problem at pilot.X and returns the method to run
	// from there. A plan may ask to be made again later in the run
	// (ReplanAt); the harness then calls Plan with the iterate of that
	// moment and Previous set.
	Plan(pilot Pilot) (Plan, error)
}

// Pilot is what a Planner gets.
type Pilot struct {
	// Problem gives the oracle factory, the start, the projection and the
	// objective (or Error) the planner may score candidate steps on.
	Problem *Problem
	// X is where to measure: Problem.X0 at the start, the current iterate
	// when re-planning. The planner must not modify it.
	X []float64
	// Seed is the trial's seed; a pilot's oracles should derive their own
	// seeds from it.
	Seed uint64
	// Budget is the trial's whole budget and Spent what it has spent so far
	// (0 at the start), both in the problem's cost unit.
	Budget, Spent int64
	// Previous is the plan being replaced, nil at the start.
	Previous *Plan
}

// Plan is a Planner's decision.
type Plan struct {
	// Method is the method to run (its Auto nil).
	Method Method `json:"method"`
	// Spent is the cost the pilot used, added to the trial's total before
	// the method's first iterate.
	Spent int64 `json:"pilot_cost"`
	// Reasons say why each choice was made, for the log and the record.
	Reasons []string `json:"reasons"`
	// ReplanAt, when positive, is the trial cost at which to plan again.
	ReplanAt int64 `json:"replan_at,omitempty"`
}
