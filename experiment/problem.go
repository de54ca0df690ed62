package experiment

import (
	"fmt"
	"math"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// Instance is one trial's oracle, made by Problem.NewOracle for one seed
// (package mlmc/sgd's).
type Instance = sgd.Instance

// Optimum is F*, the objective's minimum.
type Optimum struct {
	// Value is F*, or with Reached an upper bound on it (+Inf for none).
	Value float64
	// Reached says F* is not known: the experiment takes the lowest value
	// any of its runs reached (starting from Value), and says so.
	Reached bool
}

// Problem is a biased-oracle optimisation problem the harness can run: the
// driver's problem (package mlmc/sgd: the oracle of each trial, the start,
// the update's projection and scaling, the objective F) and how progress
// is measured and named.
type Problem struct {
	sgd.Problem
	// Name and About name the problem in the report ("housing", "LIBSVM
	// housing_scale: 506 rows ...").
	Name, About string
	// ObjectiveAbout says how the Objective is computed, for the report.
	ObjectiveAbout string
	// FStar with the Objective defines the relative gap
	// (F(x) - F*)/(F(x0) - F*) the targets are read on.
	FStar Optimum
	// Error, when set, replaces the relative gap: the targets are read on
	// Error(x) directly (the pricing problem: |x - x*|/|x*|), and Objective
	// and FStar may be left zero. auto plans for a relative objective gap
	// and claims one: with an Objective, FStar must then be its optimum
	// (known, not Reached), on which the auto records' true gap and
	// whether their claims held are read; without one they are read on
	// Error.
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
	// cores of an AMD EPYC: studies/own-oracle/results/every-iterate.txt). Leave it
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
	case p.Error == nil && p.Objective == nil:
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
		f, _ = p.Objective(x)
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
	// Auto, when set, makes this the auto method (package mlmc/auto) with
	// these settings: its stages choose the estimator, the levels and the
	// step, and their pilots count in the trial's cost. The harness sets
	// the budget, the seed and what the run's recorders read.
	Auto *auto.Settings `json:"-"`
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
