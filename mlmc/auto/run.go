package auto

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/simclr-go/simclr/mlmc"
)

// Problem is a minimisation problem over []float64 parameters with a biased
// multilevel oracle.
type Problem struct {
	// X0 is the starting point.
	X0 []float64
	// NewOracle makes the problem's oracle, evaluating at x (mlmc.Current)
	// and prev (mlmc.Previous): slices the runner owns and updates in
	// place. Equal seeds must give equal draws, so that the step
	// candidates are compared on the same samples.
	NewOracle func(x, prev []float64, seed uint64) (mlmc.Oracle[[]float64], error)
	// Objective is F(x), exact (se 0) or estimated with a standard error;
	// the step rule scores candidates on it. Needed unless Settings.Step
	// is set.
	Objective func(x []float64) (value, se float64)
	// Project, when set, maps an iterate back into the feasible set after
	// every step.
	Project func(x []float64)
}

// Settings set a Run. Zero values take the defaults stated on each field.
type Settings struct {
	Target Target
	Rules  Rules
	// MinLevel is l_min, the lowest level (default 0).
	MinLevel int
	// PilotShare is the pilot's share of Target.Budget, at most 0.05
	// (default 0.05): 30% of it measures the levels at x0, 30% scores the
	// step candidates there, and 40% measures the levels again at the
	// re-plan point.
	PilotShare float64
	// ReplanAt is the share of the budget after which the run measures
	// its levels again and re-plans, once (default 0.25).
	ReplanAt float64
	// MinDraws is the fewest queries per level a measurement makes
	// (default 16).
	MinDraws int
	// Steps are the step candidates at x0 (default 10^(1 - k/2), k =
	// 0..12: 10 down to 1e-5). At the re-plan point the step is lowered,
	// if need be, to the one whose noise floor is half the target gap
	// (floorStep).
	Steps []float64
	// Step, when positive, is the step size: no step rule.
	Step float64
	// Seed seeds the oracles, the estimators and the pilot.
	Seed uint64
	// Log, when set, receives each plan as it is made (Plan.String).
	Log io.Writer
}

func (s Settings) withDefaults() (Settings, error) {
	if s.PilotShare == 0 {
		s.PilotShare = 0.05
	}
	if s.ReplanAt == 0 {
		s.ReplanAt = 0.1
	}
	if s.MinDraws == 0 {
		s.MinDraws = 16
	}
	if s.Steps == nil {
		for k := range 13 {
			s.Steps = append(s.Steps, math.Pow(10, 1-float64(k)/2))
		}
	}
	switch {
	case !(s.PilotShare > 0 && s.PilotShare <= 0.05):
		return s, fmt.Errorf("auto: pilot share %g: the pilot may take at most 5%% of the run's samples (0 < share <= 0.05)", s.PilotShare)
	case !(s.ReplanAt > 0 && s.ReplanAt < 1):
		return s, fmt.Errorf("auto: re-plan point %g is not a share of the budget in (0, 1)", s.ReplanAt)
	case s.Target.Budget <= 0:
		return s, fmt.Errorf("auto: sample budget %d must be positive", s.Target.Budget)
	case s.MinLevel < 0:
		return s, fmt.Errorf("auto: minimum level %d is negative", s.MinLevel)
	}
	for _, g := range s.Steps {
		if !(g > 0) || math.IsInf(g, 0) {
			return s, fmt.Errorf("auto: step candidate %g is not a positive number", g)
		}
	}
	return s, nil
}

// Result is a Run's outcome.
type Result struct {
	// X is the last iterate, Samples every sample drawn (pilot included),
	// Pilot the pilot's share of them.
	X       []float64
	Samples int64
	Pilot   int64
	// Plans holds the plan made at x0 and, when re-planning succeeded, the
	// one made at the re-plan point; ReplanNote says why not otherwise.
	Plans      []*Plan
	ReplanNote string
	// Diverged says the iterate left the finite numbers.
	Diverged bool
}

// Run minimises the problem within s.Target.Budget samples: the pilot at
// x0 (levels, then steps), the run with the plan's estimator and step, one
// re-plan when ReplanAt of the budget is spent, then the rest. observe,
// when set, is called with the samples drawn so far (pilot included) and
// the iterate after every step; the slice is the runner's, to read only.
func Run(p Problem, s Settings, observe func(samples int64, x []float64)) (*Result, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	if p.NewOracle == nil || len(p.X0) == 0 {
		return nil, errors.New("auto: the problem needs a starting point and an oracle")
	}
	if p.Objective == nil && s.Step == 0 {
		return nil, errors.New("auto: the step rule scores candidates on the objective: give the problem an Objective, or set the step")
	}
	r := &runner{p: p, s: s, ops: mlmc.Float64Ops{Dim: len(p.X0)}, observe: observe,
		x: slices.Clone(p.X0), prev: slices.Clone(p.X0)}
	if r.o, err = p.NewOracle(r.x, r.prev, s.Seed); err != nil {
		return nil, fmt.Errorf("auto: make the oracle: %w", err)
	}
	pilot := float64(s.Target.Budget) * s.PilotShare
	f0 := math.NaN()
	if p.Objective != nil {
		f0, _ = p.Objective(r.x)
	}
	plan, err := r.plan("x0", int64(0.3*pilot), 0)
	if err != nil {
		return nil, err
	}
	if s.Step > 0 {
		plan.Step, plan.Reasons.Step = s.Step, "given"
	} else {
		err = r.chooseStep(plan, s.Steps, int64(0.3*pilot))
	}
	r.log(plan)
	if err != nil {
		return nil, err
	}
	res := &Result{Plans: []*Plan{plan}}
	replanAt := int64(s.ReplanAt * float64(s.Target.Budget))
	if err := r.run(plan, replanAt); err != nil {
		return nil, err
	}
	if !r.diverged && r.used < s.Target.Budget {
		at := fmt.Sprintf("the re-plan point after %d samples", r.used)
		next, err := r.plan(at, int64(0.4*pilot), plan.GradNorm)
		var ae *Error
		switch {
		case errors.As(err, &ae):
			res.ReplanNote = "kept the plan made at x0: " + err.Error()
			kept := *plan
			next = &kept
		case err != nil:
			return nil, err
		default:
			res.Plans = append(res.Plans, next)
		}
		next.Step, next.Reasons.Step = plan.Step, plan.Reasons.Step
		if s.Step > 0 {
			next.Reasons.Step = "given"
		} else {
			f1, _ := p.Objective(r.x)
			floorStep(next, plan.Step, f0-f1)
		}
		r.log(next)
		if err := r.run(next, s.Target.Budget); err != nil {
			return nil, err
		}
	}
	res.X, res.Samples, res.Pilot, res.Diverged = r.x, r.used, r.pilot, r.diverged
	return res, nil
}

// runner holds a Run's state: the iterate x and the previous one, bound to
// the oracle o, and the samples drawn.
type runner struct {
	p       Problem
	s       Settings
	ops     mlmc.Float64Ops
	o       mlmc.Oracle[[]float64]
	observe func(int64, []float64)

	x, prev     []float64
	used, pilot int64
	iter        int
	diverged    bool
	seq         uint64 // estimators made, for their seeds
}

// plan measures the levels at x within levelBudget samples and chooses.
func (r *runner) plan(at string, levelBudget int64, gradNorm0 float64) (*Plan, error) {
	m, err := Measure(r.o, r.ops, r.s.MinLevel, levelBudget, r.s.MinDraws, r.s.Seed^0x91107^uint64(r.used))
	r.used += m.Samples
	r.pilot += m.Samples
	if err != nil {
		return nil, err
	}
	if gradNorm0 == 0 {
		gradNorm0 = GradNorm(m.Report)
	}
	return Choose(m.Report, at, m.Samples, gradNorm0, r.s.Target, r.s.Rules, r.o.MaxLevel())
}

func (r *runner) log(p *Plan) {
	if r.s.Log != nil {
		fmt.Fprint(r.s.Log, p.String())
	}
}

// floorStep lowers p's step from the first plan's, step0, to the one whose
// noise floor is half the target gap, when that is smaller. Constant-step
// SGD near a minimum with Hessian A and gradient noise covariance S settles
// where E F - F* = step tr(S)/4 (the iterates' stationary covariance P
// solves A P + P A = step S), whatever A is; tr S is the plan's predicted
// variance of its estimator, and the gap at x0, F(x0) - F*, is at least
// drop = F(x0) - F(x) at the re-plan point, so step <= 2 Gap drop / Var.
func floorStep(p *Plan, step0, drop float64) {
	v := p.predictedVar()
	p.Step = step0
	if !(drop > 0) || !(v > 0) {
		p.Reasons.Step += fmt.Sprintf("; kept at the re-plan point: no measurable drop of the objective (%.3g) or variance (%.3g) to size a noise floor", drop, v)
		return
	}
	floor := 2 * p.Target.Gap * drop / v
	if floor < step0 {
		p.Step = floor
		p.Reasons.Step = fmt.Sprintf("lowered at the re-plan point from %.3g to %.3g, whose noise floor (step x Var / 4, Var = %.3g the plan's predicted variance) is half the target gap of F(x0) - F >= %.4g",
			step0, floor, v, drop)
		return
	}
	p.Reasons.Step += fmt.Sprintf("; kept at the re-plan point: its noise floor is below half the target gap (the floor's step %.3g)", floor)
}

// chooseStep is the step rule: from the current x, each candidate runs
// the plan's estimator on the same draws (an oracle and an estimator with
// the same seeds) for an equal share of budget samples, and is scored by the
// objective where it ends. The lowest score wins; scores within twice their
// standard error of the lowest count as ties, which go to the smaller step
// (a short run favours large steps that stall at a higher noise floor).
func (r *runner) chooseStep(p *Plan, steps []float64, budget int64) error {
	share := budget / int64(len(steps))
	x, prev := slices.Clone(r.x), slices.Clone(r.x)
	seed := r.s.Seed ^ 0x57e9 ^ uint64(r.used)
	var spent int64
	for _, g := range steps {
		copy(x, r.x)
		copy(prev, r.x)
		o, err := r.p.NewOracle(x, prev, seed)
		if err != nil {
			return fmt.Errorf("auto: step rule: make the oracle: %w", err)
		}
		e, err := mlmc.New(p.Kind, p.Config(seed), r.ops, o)
		if err != nil {
			return fmt.Errorf("auto: step rule: %w", err)
		}
		v := r.ops.New()
		var used int64
		ok := true
		for it := 0; used < share && ok; it++ {
			st, err := e.Estimate(it, v)
			if err != nil {
				return fmt.Errorf("auto: step rule: %w", err)
			}
			used += st.Samples
			ok = r.step(x, prev, v, g)
		}
		spent += used
		sc := StepScore{Step: g, Value: math.Inf(1)}
		if ok {
			f, se := r.p.Objective(x)
			if !math.IsNaN(f) {
				sc.Value, sc.SE = f, se
			}
		}
		p.Steps = append(p.Steps, sc)
	}
	r.used += spent
	r.pilot += spent
	best := -1
	for i, sc := range p.Steps {
		if !math.IsInf(sc.Value, 1) && (best < 0 || sc.Value < p.Steps[best].Value) {
			best = i
		}
	}
	if best < 0 {
		return &Error{Measurement: fmt.Sprintf("every step candidate (%.3g .. %.3g) diverged within %d samples", slices.Max(steps), slices.Min(steps), share),
			Change: "give smaller step candidates"}
	}
	pick := best
	for i, sc := range p.Steps {
		tol := 2 * math.Max(sc.SE, p.Steps[best].SE)
		if sc.Value-p.Steps[best].Value <= tol && sc.Step < p.Steps[pick].Step {
			pick = i
		}
	}
	p.Step = p.Steps[pick].Step
	p.Reasons.Step = fmt.Sprintf("the lowest objective after %d samples with each of %d candidates on the same draws (%.4g at step %.3g); ties within 2 s.e. go to the smaller step",
		share, len(steps), p.Steps[best].Value, p.Steps[best].Step)
	if p.Step == slices.Max(steps) || p.Step == slices.Min(steps) {
		p.Reasons.Step += "; at the edge of the candidates"
	}
	// A short run rarely meets an RT-MLMC estimate's rare large levels, so
	// it can favour a step that the variance makes unstable: cap the step
	// so that its noise floor (floorStep) is at most half the drop the
	// candidates measured, F(x0) - best score.
	f0, _ := r.p.Objective(r.x)
	if v := p.predictedVar(); v > 0 {
		if drop := f0 - p.Steps[best].Value; drop > 0 && 2*drop/v < p.Step {
			p.Reasons.Step += fmt.Sprintf("; lowered from %.3g to %.3g so that its noise floor (step x Var / 4, Var = %.3g predicted) is at most half the drop %.4g",
				p.Step, 2*drop/v, v, drop)
			p.Step = 2 * drop / v
		}
	}
	return nil
}

// step sets prev to x and x to x - g v (projected); false when x is no
// longer finite.
func (r *runner) step(x, prev, v []float64, g float64) bool {
	copy(prev, x)
	for i := range x {
		x[i] -= g * v[i]
	}
	if r.p.Project != nil {
		r.p.Project(x)
	}
	return !slices.ContainsFunc(x, func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) })
}

// run steps with the plan until until samples are drawn (the step whose
// draws would pass it is not taken).
func (r *runner) run(p *Plan, until int64) error {
	r.seq++
	e, err := mlmc.New(p.Kind, p.Config(r.s.Seed+r.seq), r.ops, r.o)
	if err != nil {
		return fmt.Errorf("auto: %w", err)
	}
	v := r.ops.New()
	for r.used < until {
		st, err := e.Estimate(r.iter, v)
		if err != nil {
			return fmt.Errorf("auto: %w", err)
		}
		r.iter++
		r.used += st.Samples
		if r.used > r.s.Target.Budget {
			break
		}
		if !r.step(r.x, r.prev, v, p.Step) {
			r.diverged = true
			return nil
		}
		if r.observe != nil {
			r.observe(r.used, r.x)
		}
	}
	return nil
}

// predictedVar is the predicted variance of the plan's estimator.
func (p *Plan) predictedVar() float64 {
	for _, m := range p.Predicted {
		if m.Method == p.Method {
			return m.Var
		}
	}
	return math.NaN()
}
