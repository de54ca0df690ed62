// Package autoplan is the auto method of package experiment: a Planner
// whose plans are those of package mlmc/auto (a pilot measures the levels
// and chooses the estimator, L, the level law and the step; one re-plan),
// so that a problem run by the harness can be run by auto as well, its
// pilot counted in its cost.
package autoplan

import (
	"flag"
	"fmt"
	"sync"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
)

// Planner plans for the target relative gap Gap with auto's rules. It is
// safe for concurrent use by trials of different seeds.
type Planner struct {
	// Gap is the target relative gap (F - F*)/(F(x0) - F*), or the target
	// error of a problem read on Error.
	Gap float64
	// Rules and PilotShare are auto's (zero values: its defaults).
	Rules      auto.Rules
	PilotShare float64

	mu     sync.Mutex
	states map[uint64]*auto.State // by trial seed: what a re-plan needs
}

// New is a Planner for the target gap.
func New(gap float64) *Planner { return &Planner{Gap: gap} }

// Plan is auto.Start at the trial's start and auto.Replan at its re-plan
// point, translated into the harness's method.
func (pl *Planner) Plan(p experiment.Pilot) (experiment.Plan, error) {
	prob := problem(p.Problem, p.X)
	s := auto.Settings{Target: auto.Target{Gap: pl.Gap, Budget: p.Budget}, Rules: pl.Rules, PilotShare: pl.PilotShare, Seed: p.Seed}
	if p.Previous == nil {
		plan, st, err := auto.Start(prob, s)
		if err != nil {
			return experiment.Plan{}, err
		}
		pl.mu.Lock()
		if pl.states == nil {
			pl.states = map[uint64]*auto.State{}
		}
		pl.states[p.Seed] = st
		pl.mu.Unlock()
		return experiment.Plan{Method: method(plan, p.Seed), Spent: st.Spent, Reasons: reasons(plan, ""), ReplanAt: st.ReplanAt}, nil
	}
	pl.mu.Lock()
	st := pl.states[p.Seed]
	pl.mu.Unlock()
	if st == nil {
		return experiment.Plan{}, fmt.Errorf("auto: re-plan of seed %d without its first plan", p.Seed)
	}
	plan, note, drawn, err := auto.Replan(prob, s, st, p.X, p.Spent)
	if err != nil {
		return experiment.Plan{}, err
	}
	return experiment.Plan{Method: method(plan, p.Seed+1), Spent: drawn, Reasons: reasons(plan, note)}, nil
}

// problem is the harness's problem as auto's, starting at x: the score of
// the step rule is the objective, or where the problem has none its Error.
func problem(p *experiment.Problem, x []float64) auto.Problem {
	score := p.Objective.Value
	if score == nil && p.Error != nil {
		score = func(x []float64) (float64, float64) { return p.Error(x), 0 }
	}
	return auto.Problem{
		X0: x,
		NewOracle: func(seed uint64) (mlmc.Oracle[[]float64], func(x, prev []float64), error) {
			inst, err := p.NewOracle(seed)
			if err != nil {
				return nil, nil, err
			}
			return inst.Oracle, inst.At, nil
		},
		Objective:    score,
		Project:      p.Project,
		Precondition: p.Precondition,
	}
}

func method(p *auto.Plan, seed uint64) experiment.Method {
	return experiment.Method{Kind: p.Kind, Config: p.Config(seed), Step: p.Step, Decay: p.Decay}
}

func reasons(p *auto.Plan, note string) []string {
	r := []string{
		fmt.Sprintf("at %s: %s on levels %d..%d, step %.3g (t0 %.0f)", p.At, p.Method, p.MinLevel, p.MaxLevel, p.Step, p.Decay),
		fmt.Sprintf("pilot: levels %d..%d, %d draws, %d samples; a = %.2f, b = %.2f, c = %.2f (%s)", p.PilotMin, p.PilotMax, p.PilotDraws, p.Samples, p.A.Rate, p.B.Rate, p.C.Rate, p.Regime),
		"method: " + p.Reasons.Method, "L: " + p.Reasons.L, "law: " + p.Reasons.Law, "step: " + p.Reasons.Step,
	}
	if p.Reasons.Outlook != "" {
		r = append(r, "outlook: "+p.Reasons.Outlook)
	}
	if note != "" {
		r = append(r, note)
	}
	return r
}

// Fixed is the auto method planned for gap, run as it is
// (experiment.Fixed) on a trial's whole budget, with the note that says
// how it chooses.
func Fixed(gap float64) *experiment.Tuning {
	return experiment.Fixed(fmt.Sprintf("auto planned for gap %g: a pilot of at most 5%% of each trial's budget, counted in its cost, chooses the estimator, L, the level law and the step (docs/definitions.md, section 11)", gap),
		experiment.Method{Auto: New(gap)})
}

// Flags are the command-line options of the auto method that the
// examples share: --method auto and --gap.
type Flags struct {
	fs     *flag.FlagSet
	method string
	gap    float64
}

// AddFlags registers --method and --gap on fs, with the usage each
// command words for its problem.
func AddFlags(fs *flag.FlagSet, methodUsage, gapUsage string) *Flags {
	f := &Flags{fs: fs}
	fs.StringVar(&f.method, "method", "", methodUsage)
	fs.Float64Var(&f.gap, "gap", 0, gapUsage)
	return f
}

// Gaps reads the parsed flags: nil without --method auto, else the gaps to
// plan for, --gap's or the defaults. A gap outside (0, 1), a gap without
// --method auto and a method other than auto are errors naming the flag.
func (f *Flags) Gaps(defaults []float64) ([]float64, error) {
	switch f.method {
	case "":
		if f.gap != 0 {
			return nil, fmt.Errorf("--gap %g: only --method auto plans for a gap; without it every target is reported", f.gap)
		}
		return nil, nil
	case "auto":
		if f.gap == 0 {
			return defaults, nil
		}
		if !(f.gap > 0 && f.gap < 1) {
			return nil, fmt.Errorf("--gap %g: give a relative gap in (0, 1), e.g. %g", f.gap, defaults[len(defaults)-1])
		}
		return []float64{f.gap}, nil
	}
	if f.fs.Lookup("methods") != nil {
		return nil, fmt.Errorf("--method %q: the only method is auto (the grid's methods are chosen with --methods)", f.method)
	}
	return nil, fmt.Errorf("--method %q: the only method is auto", f.method)
}
