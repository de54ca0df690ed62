package auto

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
)

// Problem is a minimisation problem over []float64 parameters with a biased
// multilevel oracle.
type Problem struct {
	// X0 is the starting point.
	X0 []float64
	// NewOracle makes the problem's oracle with its randomness seeded by
	// seed, and at, which tells it the current and previous iterates
	// (mlmc.Current and mlmc.Previous): the runner calls at before every
	// measurement and estimate, with slices it owns and updates in place.
	// Equal seeds must give equal draws, so that the step candidates are
	// compared on the same samples.
	NewOracle func(seed uint64) (o mlmc.Oracle[[]float64], at func(x, prev []float64), err error)
	// Objective is F(x), exact (se 0) or estimated with a standard error;
	// the step rule scores candidates on it. Needed unless Settings.Step
	// is set.
	Objective func(x []float64) (value, se float64)
	// Project, when set, maps an iterate back into the feasible set after
	// every step.
	Project func(x []float64)
	// Precondition, when set, writes the diagonal scaling of the step at x
	// into d: x <- x - step d .* v.
	Precondition func(x, d []float64)
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
	// if need be, to the one whose noise floor is an eighth of the target gap
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
		s.ReplanAt = 0.05
	}
	if s.MinDraws == 0 {
		s.MinDraws = 16
	}
	// Empty as nil: the step rule divides its budget among the candidates.
	if len(s.Steps) == 0 {
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
	plan, st, err := Start(p, s)
	if err != nil {
		return nil, err
	}
	s, _ = s.withDefaults()
	r, err := newRunner(p, s, p.X0, st.Spent)
	if err != nil {
		return nil, err
	}
	r.observe, r.f0, r.pilot = observe, st.F0, st.Spent
	res := &Result{Plans: []*Plan{plan}}
	if err := r.run(plan, st.ReplanAt); err != nil {
		return nil, err
	}
	if !r.diverged && r.used < s.Target.Budget {
		next, note, spent, err := Replan(p, s, st, r.x, r.used)
		r.used += spent
		r.pilot += spent
		if err != nil {
			return nil, err
		}
		if note != "" {
			res.ReplanNote = note
		} else {
			res.Plans = append(res.Plans, next)
		}
		if err := r.run(next, s.Target.Budget); err != nil {
			return nil, err
		}
	}
	res.X, res.Samples, res.Pilot, res.Diverged = r.x, r.used, r.pilot, r.diverged
	return res, nil
}

// State is what Start learns that a re-plan needs.
type State struct {
	// GradNorm0 is |grad F(x0)|, F0 the objective at x0 (NaN without one).
	GradNorm0, F0 float64
	// First is the plan made at x0.
	First *Plan
	// Spent is the samples the pilot at x0 drew; ReplanAt the run's
	// samples (pilot included) at which to re-plan.
	Spent, ReplanAt int64
}

// Start makes the plan at p.X0 within the first 60% of the pilot: the
// levels measured and chosen (Choose), then the step rule, and says when
// to re-plan. It draws from oracles of its own (NewOracle with seeds
// derived from s.Seed) and leaves p.X0 as it was.
func Start(p Problem, s Settings) (*Plan, *State, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	if p.NewOracle == nil || len(p.X0) == 0 {
		return nil, nil, errors.New("auto: the problem needs a starting point and an oracle")
	}
	if p.Objective == nil && s.Step == 0 {
		return nil, nil, errors.New("auto: the step rule scores candidates on the objective: give the problem an Objective, or set the step")
	}
	r, err := newRunner(p, s, p.X0, 0)
	if err != nil {
		return nil, nil, err
	}
	pilot := float64(s.Target.Budget) * s.PilotShare
	plan, err := r.plan("x0", int64(0.3*pilot), 0)
	if err != nil {
		return nil, nil, err
	}
	if s.Step > 0 {
		plan.Step, plan.Reasons.Step = s.Step, "given"
	} else if err := r.chooseStep(plan, s.Steps, int64(0.3*pilot)); err != nil {
		return nil, nil, err
	}
	at := max(int64(s.ReplanAt*float64(s.Target.Budget)), r.used)
	if plan.Degenerate {
		// No bias could be seen at x0 (every H^l vanished there): re-plan
		// as soon as a first phase of 1% of the budget has moved the
		// iterate off it.
		at = r.used + s.Target.Budget/100
		plan.Reasons.Method += fmt.Sprintf("; every H^l vanished at x0, so the levels are measured again after a first phase of 1%% of the budget, at %d samples", at)
	}
	if s.Step == 0 {
		plan.firstOutlook(r.f0, at)
	}
	r.log(plan)
	return plan, &State{GradNorm0: plan.GradNorm, F0: r.f0, First: plan, Spent: r.used, ReplanAt: at}, nil
}

// firstOutlook says whether the first plan's constant step can hold the gap
// below the target: its noise floor, step x Var / 4 (floorStep), against
// Gap x the drop the step candidates measured, a lower bound on Gap x
// (F(x0) - F*). Above it, the gap stays below the target only after the
// re-plan, at replanAt samples, lowers the step.
func (p *Plan) firstOutlook(f0 float64, replanAt int64) {
	v, best := p.predictedVar(), math.Inf(1)
	for _, sc := range p.Steps {
		best = math.Min(best, sc.Value)
	}
	drop := f0 - best
	if !(v > 0) || !(drop > 0) || math.IsInf(drop, 0) {
		p.Reasons.Outlook = "no noise floor to compare with the target (no measured drop or variance)"
		return
	}
	floor, share := p.Step*v/4, p.Target.Gap*drop
	p.Reasons.Outlook = fmt.Sprintf("the step's noise floor, step x Var / 4 = %.3g, is %.2g times the target's share of the drop the candidates measured (%g x %.4g)",
		floor, floor/share, p.Target.Gap, drop)
	if floor > share {
		p.Reasons.Outlook += fmt.Sprintf(": above it, so the gap can stay below the target only after the re-plan at %d samples lowers the step", replanAt)
	}
}

// replanOutlook predicts the rest of the run under p, re-planned at x after
// the first phase's iters iterations with step step0 brought F from F(x0)
// down by drop, with left samples to go: the iterations left, the step sum
// over them, the noise floor (floorStep) at their start and end, and the
// risks of missing the target that these show.
func (p *Plan) replanOutlook(iters, step0, drop float64, left int64) {
	n := math.Max(float64(left)/p.expectedCost(), 0)
	sum, end := p.Step*n, p.Step
	if p.Decay > 0 {
		sum, end = p.Step*p.Decay*math.Log1p(n/p.Decay), p.Step/(1+n/p.Decay)
	}
	s1, v := iters*step0, p.predictedVar()
	out := fmt.Sprintf("%.0f iterations left at %.3g samples each; their step sum %.3g against the first phase's %.3g (%.0f iterations x %.3g)",
		n, p.expectedCost(), sum, s1, iters, step0)
	var risks []string
	if v > 0 && drop > 0 {
		start, last, share := p.Step*v/4, end*v/4, p.Target.Gap*drop
		out += fmt.Sprintf("; noise floor (step x Var / 4, Var = %.3g) %.3g at the start and %.3g at the end, against the target's share of the drop so far, %g x %.4g = %.3g",
			v, start, last, p.Target.Gap, drop, share)
		if start > drop {
			risks = append(risks, fmt.Sprintf("the noise floor at the start is %.3g times the drop so far: the run first loses ground", start/drop))
		}
		if last > share {
			risks = append(risks, fmt.Sprintf("the noise floor at the end of the budget is %.3g times the target's share: the gap may not stay below it", last/share))
		}
	}
	// A relative margin of 1e-9: the schedule's t0 is set from s1, and
	// rounding must not read as a risk.
	if sum < s1*(1-1e-9) {
		risks = append(risks, "the rest of the budget moves the iterate less than the first phase did (a smaller step sum): unless the gap is already near the target it may not reach it (a smaller L or a larger budget buys iterations)")
	}
	if p.Decay > 0 && p.Step*p.Decay < s1*(1-1e-9) {
		risks = append(risks, fmt.Sprintf("step x t0 = %.3g is below the first phase's step sum: a 1/(1 + t/t0) schedule converges at its 1/t rate only when step x t0 x mu >= 1 (mu the curvature), which the first phase's step sum vouches for; below it the gap may fall as slowly as t^-(step t0 mu)", p.Step*p.Decay))
	}
	if len(risks) == 0 {
		out += "; no risk of missing the target seen"
	} else {
		out += "; at risk: " + strings.Join(risks, "; ")
	}
	p.Reasons.Outlook = out
}

// Replan makes the plan at x, the iterate after spent samples (pilot
// included), within the last 40% of the pilot: the levels measured again
// and chosen with |grad F(x0)| of st, the step the first plan's lowered to
// its noise-floor step (floorStep). When the measurement rules out a new
// plan (an *Error), the first plan is kept with its step lowered alike, and
// note says why. It returns the samples it drew.
func Replan(p Problem, s Settings, st *State, x []float64, spent int64) (plan *Plan, note string, drawn int64, err error) {
	s, err = s.withDefaults()
	if err != nil {
		return nil, "", 0, err
	}
	r, err := newRunner(p, s, x, spent)
	if err != nil {
		return nil, "", 0, err
	}
	r.f0 = st.F0
	pilot := float64(s.Target.Budget) * s.PilotShare
	at := fmt.Sprintf("the re-plan point after %d samples", spent)
	next, err := r.plan(at, int64(0.4*pilot), st.GradNorm0)
	var ae *Error
	switch {
	case errors.As(err, &ae):
		note = "kept the plan made at x0: " + err.Error()
		kept := *st.First
		next = &kept
	case err != nil:
		return nil, "", r.used - spent, err
	}
	next.Step, next.Reasons.Step = st.First.Step, st.First.Reasons.Step
	if s.Step > 0 {
		next.Reasons.Step = "given"
	} else {
		f1, _ := p.Objective(x)
		floorStep(next, st.First.Step, st.F0-f1)
		// The gap must stay below the target, not touch it: the step then
		// decays as 1/(1 + t/t0), so that the noise floor keeps falling.
		// t0 makes the schedule's time scale step x t0 equal to the first
		// phase's, step0 x its iterations: that phase brought F(x0) down
		// to F(x), so its step sum is long enough for the curvature
		// (step x t0 x mu of order one or more, which a 1/t schedule needs
		// to converge at its 1/t rate).
		// The first phase's iterations: its samples over the first plan's
		// expected cost per iteration.
		iters := math.Max(float64(spent-st.Spent)/st.First.expectedCost(), 1)
		t0 := iters * st.First.Step / next.Step
		next.Decay = t0
		next.Reasons.Step += fmt.Sprintf("; then decaying as 1/(1 + t/%.0f), t0 = the first phase's %.0f iterations x its step / this step, so that the noise floor keeps falling", t0, iters)
		if floor := next.Step; st.First.Step/floor > crawl {
			// A constant step 1e4 times below the first would crawl for
			// the whole budget (a noisy problem with a small target):
			// instead the step decays from the first step, as 1/(1 +
			// t/t0), to the floor's after a quarter of the iterations
			// left, a Robbins-Monro schedule that averages the noise out.
			left := math.Max(float64(s.Target.Budget-r.used)/next.expectedCost(), 1)
			t0 := math.Max(left/4/(st.First.Step/floor-1), 1)
			next.Step, next.Decay = st.First.Step, t0
			next.Reasons.Step = fmt.Sprintf("%.3g decaying as 1/(1 + t/%.0f), reaching the floor's step %.3g after a quarter of the %.0f iterations left, since a constant step %.0f times below the first would crawl: %s",
				next.Step, t0, floor, left, st.First.Step/floor, next.Reasons.Step)
		}
	}
	if s.Step == 0 {
		f1, _ := p.Objective(x)
		iters := math.Max(float64(spent-st.Spent)/st.First.expectedCost(), 1)
		next.replanOutlook(iters, st.First.Step, st.F0-f1, s.Target.Budget-r.used)
	}
	r.log(next)
	return next, note, r.used - spent, nil
}

// newRunner is a runner at a copy of x with used samples spent, its oracle
// seeded by the settings and the samples spent.
func newRunner(p Problem, s Settings, x []float64, used int64) (*runner, error) {
	r := &runner{p: p, s: s, ops: mlmc.Float64Ops{Dim: len(x)}, x: slices.Clone(x), prev: slices.Clone(x), used: used, f0: math.NaN()}
	var err error
	// Seeds apart from the trial seed itself, which a harness gives the
	// run's own oracle: the pilot draws other samples than the run.
	if r.o, r.at, err = p.NewOracle(s.Seed ^ 0xa070 ^ uint64(used+1)*0x9e3779b97f4a7c15); err != nil {
		return nil, fmt.Errorf("auto: make the oracle: %w", err)
	}
	if p.Objective != nil && used == 0 {
		r.f0, _ = p.Objective(r.x)
	}
	return r, nil
}

// runner holds a Run's state: the iterate x and the previous one, bound to
// the oracle o, and the samples drawn.
type runner struct {
	p       Problem
	s       Settings
	ops     mlmc.Float64Ops
	o       mlmc.Oracle[[]float64]
	at      func(x, prev []float64)
	observe func(int64, []float64)

	x, prev     []float64
	d           []float64 // the preconditioner's scaling
	used, pilot int64
	iter        int
	diverged    bool
	halvings    int
	f0          float64 // F(x0), NaN without an objective
	seq         uint64  // estimators made, for their seeds
}

// plan measures the levels at x within levelBudget samples and chooses.
func (r *runner) plan(at string, levelBudget int64, gradNorm0 float64) (*Plan, error) {
	r.at(r.x, r.prev)
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
// noise floor is an eighth of the target gap, when that is smaller.
// Constant-step SGD near a minimum with Hessian A and gradient noise covariance S settles
// where E F - F* = step tr(S)/4 (the iterates' stationary covariance P
// solves A P + P A = step S), whatever A is; tr S is the plan's predicted
// variance of its estimator, and the gap at x0, F(x0) - F*, is at least
// drop = F(x0) - F(x) at the re-plan point, so step <= Gap drop / (2 Var).
// An eighth, not all of it: the gap fluctuates about its floor, and the run
// should stay below the target for the rest of its budget, a question of
// the fluctuations' maximum over many nearly independent stretches, not of
// their mean; Replan lets the step decay from there as well.
func floorStep(p *Plan, step0, drop float64) {
	v := p.predictedVar()
	p.Step = step0
	if !(drop > 0) || !(v > 0) {
		p.Reasons.Step += fmt.Sprintf("; kept at the re-plan point: no measurable drop of the objective (%.3g) or variance (%.3g) to size a noise floor", drop, v)
		return
	}
	floor := p.Target.Gap * drop / (2 * v)
	if floor < step0 {
		p.Step = floor
		p.Reasons.Step = fmt.Sprintf("lowered at the re-plan point from %.3g to %.3g, whose noise floor (step x Var / 4, Var = %.3g the plan's predicted variance) is an eighth of the target gap of F(x0) - F >= %.4g",
			step0, floor, v, drop)
		return
	}
	p.Reasons.Step += fmt.Sprintf("; kept at the re-plan point: its noise floor is below an eighth of the target gap (the floor's step %.3g)", floor)
}

// minStepIters is the fewest iterations the step rule runs each candidate
// for. One is not enough: the candidates share their draws, so a single
// iteration is a line search along one noisy estimate, and a run that
// cannot pay for one leaves every candidate at the starting point, its
// scores tied. Four: a stable candidate's error contracts as (1 - g
// lambda)^m along a direction of curvature lambda, and neighbours on the
// grid (a factor sqrt(10) apart) separate only over several iterations
// (g lambda = 0.32 leaves 0.21 of the error after four, its lower
// neighbour 0.66; after one, 0.68 and 0.90), while an unstable one grows
// as |1 - g lambda|^m; more would lower the level the candidates can be
// scored at (each doubling costs a level when the cost doubles per
// level) for little more separation.
const minStepIters = 4

// stepLevel is the highest level ls <= p.MaxLevel at which minStepIters
// iterations of the plan's method, truncated to MinLevel..ls, fit in
// share samples at their worst cost, and that cost; ok is false when none
// does.
func (p *Plan) stepLevel(share int64) (ls int, worst int64, ok bool) {
	for ls = p.MaxLevel; ls >= p.MinLevel; ls-- {
		worst = p.worstCostAt(ls)
		if minStepIters*worst <= share {
			return ls, worst, true
		}
	}
	return p.MinLevel, p.worstCostAt(p.MinLevel), false
}

// worstCostAt is the most samples one estimate of the plan's method on
// levels MinLevel..ls can draw: C_ls for L-SGD and RT-MLMC, sum n_l C_l
// for V-MLMC.
func (p *Plan) worstCostAt(ls int) int64 {
	i := ls - p.MinLevel
	if len(p.costs) <= i {
		return p.worstCost() // a plan made without its levels' costs
	}
	w := p.costs[i]
	if p.Kind.Method == mlmc.VMLMC && p.LevelDraws != nil {
		w = 0
		for j := 0; j <= i; j++ {
			w += float64(p.LevelDraws[j]) * p.costs[j]
		}
	}
	return int64(math.Ceil(w))
}

// configAt is the plan's configuration truncated to MinLevel..ls: its
// law's first levels (mlmc renormalises q_l).
func (p *Plan) configAt(ls int, seed uint64) mlmc.Config {
	c := p.Config(seed)
	n := ls - p.MinLevel + 1
	c.MaxLevel = ls
	if c.LevelProbs != nil {
		c.LevelProbs = c.LevelProbs[:n]
	}
	if c.LevelDraws != nil {
		c.LevelDraws = c.LevelDraws[:n]
	}
	return c
}

// chooseStep is the step rule: from the current x, each candidate runs
// the plan's estimator on the same draws (an oracle and an estimator with
// the same seeds) for an equal share of budget samples, and is scored by the
// objective where it ends. The lowest score wins; scores within twice their
// standard error of the lowest count as ties, which go to the smaller step
// (a short run favours large steps that stall at a higher noise floor).
// Each candidate runs at least minStepIters iterations: where the share
// does not pay for them at the plan's L, the candidates run the plan's
// method truncated to the highest level ls that does (the step is set by
// the curvature of F, which F^ls shares with F^L; the noise of the
// estimator at L is taken into account by the cap below, from L's
// predicted variance), and the plan says so; where no level does, the
// problem cannot be served with this budget (an *Error).
func (r *runner) chooseStep(p *Plan, steps []float64, budget int64) error {
	share := budget / int64(len(steps))
	ls, worst, ok := p.stepLevel(share)
	if !ok {
		return &Error{Measurement: fmt.Sprintf("the step rule gives each of its %d candidates %d samples, fewer than the %d iterations it needs (%d samples each at level %d, the cheapest)",
			len(steps), share, minStepIters, worst, ls),
			Change: "give the run a larger sample budget (the pilot is a fixed share of it), fewer step candidates, or set the step"}
	}
	p.StepLevel = ls
	x, prev := slices.Clone(r.x), slices.Clone(r.x)
	seed := r.s.Seed ^ 0x57e9 ^ uint64(r.used)
	var spent int64
	for _, g := range steps {
		copy(x, r.x)
		copy(prev, r.x)
		o, at, err := r.p.NewOracle(seed)
		if err != nil {
			return fmt.Errorf("auto: step rule: make the oracle: %w", err)
		}
		e, err := mlmc.New(p.Kind, p.configAt(ls, seed), r.ops, o)
		if err != nil {
			return fmt.Errorf("auto: step rule: %w", err)
		}
		v := r.ops.New()
		var used int64
		ok := true
		iters := 0
		// Stop before an estimate could pass the share: the pilot keeps
		// to its budget.
		for ; used+worst <= share && ok; iters++ {
			at(x, prev)
			st, err := e.Estimate(iters, v)
			if err != nil {
				return fmt.Errorf("auto: step rule: %w", err)
			}
			used += st.Samples
			ok = r.step(x, prev, v, g)
		}
		spent += used
		sc := StepScore{Step: g, Value: math.Inf(1), Iterations: iters}
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
	// One notch of the grid (a factor sqrt(10)) below the short run's
	// choice: a short run favours steps too large for the long one.
	p.Step = p.Steps[pick].Step / math.Sqrt(10)
	p.Reasons.Step = fmt.Sprintf("a factor sqrt(10) below %.3g, the lowest objective after %d samples (at least %d iterations) with each of %d candidates on the same draws (%.4g at step %.3g; ties within 2 s.e. go to the smaller step), since a short run favours steps too large for the long one",
		p.Steps[pick].Step, share, minStepIters, len(steps), p.Steps[best].Value, p.Steps[best].Step)
	if ls < p.MaxLevel {
		p.Reasons.Step += fmt.Sprintf("; the candidates ran %s on levels %d..%d, not %d..%d: at L = %d an iteration may cost %d samples, and %d iterations of each candidate do not fit in its %d (the step follows the curvature F^%d shares with F^%d; L's noise is in the cap below)",
			p.Method, p.MinLevel, ls, p.MinLevel, p.MaxLevel, p.MaxLevel, p.worstCostAt(p.MaxLevel), minStepIters, share, ls, p.MaxLevel)
	}
	if p.Steps[pick].Step == slices.Max(steps) || p.Steps[pick].Step == slices.Min(steps) {
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

// step sets prev to x and x to x - g v (preconditioned and projected when
// the problem says); false when x is no longer finite.
func (r *runner) step(x, prev, v []float64, g float64) bool {
	copy(prev, x)
	if r.p.Precondition != nil {
		if len(r.d) != len(x) {
			r.d = make([]float64, len(x))
		}
		r.p.Precondition(x, r.d)
		for i := range x {
			x[i] -= g * r.d[i] * v[i]
		}
	} else {
		for i := range x {
			x[i] -= g * v[i]
		}
	}
	if r.p.Project != nil {
		r.p.Project(x)
	}
	return !slices.ContainsFunc(x, func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) })
}

// run steps with the plan until until samples are drawn (the step whose
// draws would pass it is not taken). Every 1% of the budget it checks the
// iterate: one that left the finite numbers, or (with an objective) whose
// objective is not finite or above F(x0), is put back to the last good
// check and the step halved, at most maxHalvings times; the plan's reason
// records each halving.
func (r *runner) run(p *Plan, until int64) error {
	r.seq++
	e, err := mlmc.New(p.Kind, p.Config(r.s.Seed+r.seq), r.ops, r.o)
	if err != nil {
		return fmt.Errorf("auto: %w", err)
	}
	v := r.ops.New()
	start := r.iter
	every := max(r.s.Target.Budget/100, 1)
	next := r.used + every
	good := slices.Clone(r.x)
	for r.used < until {
		r.at(r.x, r.prev)
		st, err := e.Estimate(r.iter, v)
		if err != nil {
			return fmt.Errorf("auto: %w", err)
		}
		r.iter++
		r.used += st.Samples
		if r.used > r.s.Target.Budget {
			break
		}
		g := p.Step
		if p.Decay > 0 {
			g /= 1 + float64(r.iter-1-start)/p.Decay
		}
		finite := r.step(r.x, r.prev, v, g)
		if r.observe != nil {
			r.observe(r.used, r.x)
		}
		if r.used < next && finite {
			continue
		}
		next = r.used + every
		bad := !finite
		if !bad && r.p.Objective != nil {
			f, _ := r.p.Objective(r.x)
			bad = math.IsNaN(f) || math.IsInf(f, 0) || f > r.f0
		}
		if !bad {
			copy(good, r.x)
			continue
		}
		if r.halvings == maxHalvings {
			r.diverged = true
			p.Reasons.Step += fmt.Sprintf("; the run left F's domain again after %d halvings, at %d samples: stopped", maxHalvings, r.used)
			return nil
		}
		r.halvings++
		copy(r.x, good)
		copy(r.prev, good)
		p.Step /= 2
		p.Reasons.Step += fmt.Sprintf("; halved to %.3g at %d samples, the iterate put back to the last check, after the objective rose above F(x0) or left the finite numbers", p.Step, r.used)
	}
	return nil
}

// maxHalvings bounds the step halvings of a run.
const maxHalvings = 10

// predictedVar is the predicted variance of the plan's estimator.
func (p *Plan) predictedVar() float64 {
	for _, m := range p.Predicted {
		if m.Method == p.Method {
			return m.Var
		}
	}
	return math.NaN()
}

// worstCost is the most samples one estimate of the plan can draw: C_L for
// L-SGD and RT-MLMC, sum n_l C_l for V-MLMC.
func (p *Plan) worstCost() int64 {
	w := 0.0
	for _, m := range p.Predicted {
		if m.Method == mlmc.LSGD.String() || (m.Method == p.Method && p.Kind.Method == mlmc.VMLMC) {
			w = math.Max(w, m.Cost)
		}
	}
	return int64(math.Ceil(w))
}

// expectedCost is the plan's expected samples per iteration.
func (p *Plan) expectedCost() float64 {
	for _, m := range p.Predicted {
		if m.Method == p.Method && m.Cost > 0 {
			return m.Cost
		}
	}
	return 1
}

// crawl is the ratio of the first step to the floor's above which Replan
// decays the step from the first rather than starting at the floor.
const crawl = 1e4
