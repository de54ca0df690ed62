package auto

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// Settings set a Run. Zero values take the defaults stated on each field.
type Settings struct {
	// Target is the relative gap to reach and the most samples to spend.
	Target Target
	Rules  Rules
	// MinLevel is l_min, the lowest level (default 0).
	MinLevel int
	// FirstGap is the first stage's target (default 0.1, or Target.Gap
	// when that is larger); StageRatio the factor by which each stage's
	// target falls, down to Target.Gap (default sqrt(10)).
	FirstGap, StageRatio float64
	// FirstPilot is the first stage's pilot as a share of the budget
	// (default 0.001, doubled while the pilots stay under a tenth of the
	// budget where it measures too few levels): half measures the levels,
	// half scores the step candidates. A later stage's pilot is PilotShare
	// (default 0.1) of that stage's predicted cost, the last stage's
	// samples times StageRatio, and never less than a sixteenth of the
	// first's.
	FirstPilot, PilotShare float64
	// MinDraws is the fewest queries per level a measurement makes
	// (default 16).
	MinDraws int
	// Steps are the first step search's candidates (default 10^(1 -
	// k/2), k = 0..12: 10 down to 1e-5). A later search, after a change
	// of method, tries the last step times 10^(k/2), k = 2 .. -4.
	Steps []float64
	// Step, when positive, is the first step: no step search.
	Step float64
	// Seed seeds the oracles, the estimators and the pilots.
	Seed uint64
	// Log, when set, receives one line per stage and the warnings.
	Log io.Writer
	// Score is F(x) with its standard error, what auto decides on
	// (default the problem's Objective).
	Score func(x []float64) (f, se float64)
	// Value is what the recorders' locations read (default Score's F).
	Value func(x []float64) float64
}

func (s Settings) withDefaults() (Settings, error) {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.FirstGap, 0.1)
	s.FirstGap = math.Max(s.FirstGap, s.Target.Gap)
	def(&s.StageRatio, math.Sqrt(10))
	def(&s.FirstPilot, 0.001)
	def(&s.PilotShare, 0.1)
	if s.MinDraws == 0 {
		s.MinDraws = 16
	}
	if len(s.Steps) == 0 {
		for k := range 13 {
			s.Steps = append(s.Steps, math.Pow(10, 1-float64(k)/2))
		}
	}
	switch {
	case !(s.Target.Gap > 0 && s.Target.Gap < 1):
		return s, fmt.Errorf("auto: target gap %g is not in (0, 1): it is relative to the gap at x0", s.Target.Gap)
	case s.Target.Budget <= 0:
		return s, fmt.Errorf("auto: sample budget %d must be positive", s.Target.Budget)
	case s.MinLevel < 0:
		return s, fmt.Errorf("auto: minimum level %d is negative", s.MinLevel)
	case !(s.StageRatio > 1):
		return s, fmt.Errorf("auto: stage ratio %g must be above 1", s.StageRatio)
	case !(s.FirstPilot > 0 && s.FirstPilot <= 0.05):
		return s, fmt.Errorf("auto: first pilot share %g: give a share of the budget in (0, 0.05]", s.FirstPilot)
	case !(s.PilotShare > 0 && s.PilotShare <= 0.5):
		return s, fmt.Errorf("auto: pilot share %g: give a share of a stage's cost in (0, 0.5]", s.PilotShare)
	}
	for _, g := range s.Steps {
		if !(g > 0) || math.IsInf(g, 0) {
			return s, fmt.Errorf("auto: step candidate %g is not a positive number", g)
		}
	}
	return s, nil
}

// StageTargets are the stages' target gaps: FirstGap falling by
// StageRatio to Target.Gap, the last exactly Target.Gap.
func (s Settings) StageTargets() []float64 {
	s, err := s.withDefaults()
	if err != nil {
		return nil
	}
	var out []float64
	for g := s.FirstGap; g > s.Target.Gap*(1+1e-9); g /= s.StageRatio {
		out = append(out, g)
	}
	return append(out, s.Target.Gap)
}

// Stage is one stage of a run as its record holds it.
type Stage struct {
	// Target is the stage's target gap.
	Target float64 `json:"target"`
	// Plans are the plans the stage ran (more than one where it re-planned:
	// a degenerate start, a raised L).
	Plans []*Plan `json:"plans"`
	// Step is the step at the stage's end; Halvings how often the
	// stationarity test or the safeguard halved it in the stage.
	Step     float64 `json:"step"`
	Halvings int     `json:"halvings,omitempty"`
	// Samples are the run's samples at the stage's end (pilots included),
	// Pilot the stage's pilot samples.
	Samples int64 `json:"samples"`
	Pilot   int64 `json:"pilot"`
	// GapEstimate is the stage's own estimate of the relative gap at its
	// end (null: none), BiasGap its part from the top level's bias.
	GapEstimate nullable `json:"gap_estimate"`
	BiasGap     nullable `json:"bias_gap"`
	// TopBias is the bias of the stage's last L as the run's own draws
	// of H^L read it (nil where its plan drew none: L-SGD, or L = l_min).
	TopBias *TopBias `json:"top_bias,omitempty"`
	// Why says why the stage ended; Notes what happened on the way.
	Why   string   `json:"why"`
	Notes []string `json:"notes,omitempty"`
}

// Record is a run's full record.
type Record struct {
	Target Target   `json:"target"`
	Stages []*Stage `json:"stages"`
	// Samples are all the samples drawn, Pilot the pilots' share.
	Samples int64 `json:"samples"`
	Pilot   int64 `json:"pilot"`
	// GapEstimate is the run's estimate of its relative gap where it
	// stopped (null: none); Stopped why it stopped.
	GapEstimate nullable `json:"gap_estimate"`
	Stopped     string   `json:"stopped"`
	// Warnings are what a user should know (the gap estimate no longer
	// falling, with the measurement and the likely cause).
	Warnings []string `json:"warnings,omitempty"`
	// TrueGap, when a harness knows F*, is the relative gap where the run
	// stopped, and EstimateHeld whether it is at most the target whenever
	// the run claimed to reach it.
	TrueGap      *nullable `json:"true_gap,omitempty"`
	EstimateHeld *bool     `json:"estimate_held,omitempty"`
}

// SetTrueGap records the true relative gap where the run stopped, which a
// harness that knows F* measures, and whether the run's claim to have
// reached the target held.
func (rec *Record) SetTrueGap(gap float64) {
	g := nullable(gap)
	rec.TrueGap = &g
	if rec.Claimed() {
		held := gap <= rec.Target.Gap
		rec.EstimateHeld = &held
	}
}

// Claimed says the run stopped because its own gap estimate reached the
// target.
func (rec *Record) Claimed() bool { return strings.HasPrefix(rec.Stopped, "the gap estimate") }

// Result is a Run's outcome.
type Result struct {
	// X is the run's answer (the average of the last stage's iterates),
	// Iterations its steps, Cost the cost of the last step taken, Samples
	// every sample drawn, pilots included.
	X          []float64
	Iterations int
	Cost       int64
	Samples    int64
	// Reached says the run's own gap estimate reached the target;
	// Diverged that the safeguard gave up.
	Reached, Diverged bool
	Record            *Record
	// Segments are what the run drew samples for, in order: every run of
	// an estimator (the step search's and step checks' short runs
	// included) and every pilot. Replaying them without auto's
	// decisions prices auto's own computing (examples/dro's
	// BenchmarkAutoOwnShare does).
	Segments []Segment
}

// Segment is one part of a run: an estimator run from Start for
// Iterations steps of Step (on the problem's oracle made with OracleSeed,
// from Base samples on with Until the budget it ran under (the driver's
// hard limit; the run ended by its iterations before it); the driver
// averaging its iterates unless Probe: a step candidate's or a step
// check's short run), or, where Pilot is set, a pilot measurement (a
// glance at x0 whose measurement failed holds its samples, not its
// queries).
type Segment struct {
	Method      sgd.Method
	Step        float64
	Start       []float64
	OracleSeed  uint64
	Base, Until int64
	Iterations  int
	Probe       bool
	Pilot       *Measurement
}

// Run minimises p in stages whose targets fall geometrically to
// s.Target.Gap (continuation): each stage measures the levels at the
// current point with a pilot sized to the stage, chooses the method, L
// (never below the largest L an earlier stage needed) and the level law
// (Choose), re-checks the step after any change of method, and runs with
// a step that a stationarity test halves, averaging its iterates, until
// its own gap estimate is at the stage's target. The run stops when the
// last stage's estimate reaches s.Target.Gap, or at the budget. recs see
// the run's answer, the average of the stage's iterates, at every step
// (samples counted with the pilots'); a recorder's Stop ends the run where
// it is, the record saying so. A recorder's Diverge does not end it: where
// the answer leaves F's domain, auto halves its step and goes back to its
// last good average, as it does by itself (the harness's trace reports +Inf
// at such a point, and the run recovers).
func Run(p *sgd.Problem, s Settings, recs ...sgd.Recorder) (*Result, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("auto: %w", err)
	}
	if s.Score == nil {
		s.Score = p.Objective
	}
	if s.Score == nil {
		return nil, errors.New("auto: the stages score the iterates on the objective: give the problem an Objective (or the settings a Score)")
	}
	if s.Value == nil {
		s.Value = func(x []float64) float64 { f, _ := s.Score(x); return f }
	}
	r := &runner{p: p, s: s, x: slices.Clone(p.X0), relay: sgd.NewRelay(s.Value, recs...),
		rec: &Record{Target: s.Target, GapEstimate: nullable(math.NaN())}}
	r.avg = slices.Clone(r.x)
	r.f0, _ = s.Score(r.x)
	if math.IsNaN(r.f0) || math.IsInf(r.f0, 0) {
		return nil, &Error{Measurement: fmt.Sprintf("the objective at x0 is %g", r.f0), Change: "start from a point where the objective is finite"}
	}
	r.halt(r.relay.Send(sgd.Estimated, 0, 0, r.avg, true))
	targets := s.StageTargets()
	ran := 0 // the stages run, not skipped
	for k, eps := range targets {
		if r.done {
			break
		}
		// The last stage is skipped only on the estimate of a stage after
		// the first: the first has no earlier stage's step sum to be held
		// to (minSum), and a short first stage's small drops can read as
		// a gap far below the true one.
		if g := float64(r.rec.GapEstimate); k > 0 && g <= eps && (k < len(targets)-1 || ran > 1) {
			// The last stage's estimate is already below this one's
			// target: nothing to measure here.
			st := &Stage{Target: eps, GapEstimate: nullable(g), BiasGap: nullable(math.NaN()), Samples: r.used, Step: r.step,
				Why: fmt.Sprintf("skipped: the last stage ended with the gap estimate %.3g, already at this target", g)}
			r.rec.Stages = append(r.rec.Stages, st)
			if k == len(targets)-1 {
				r.reached, r.done = true, true
				r.rec.Stopped = fmt.Sprintf("the gap estimate %.3g reached the target %g at %d samples", g, eps, r.used)
			}
			continue
		}
		ran++
		if err := r.stage(k, eps, k == len(targets)-1); err != nil {
			return nil, err
		}
		if r.done {
			break
		}
	}
	if r.halted {
		r.rec.Stopped = fmt.Sprintf("a recorder stopped the run at %d samples", r.used)
	}
	if r.rec.Stopped == "" {
		// An error, or a stage before the last that reached its target
		// as the budget ran out.
		r.rec.Stopped = fmt.Sprintf("the budget of %d samples ran out with the gap estimate at %s", r.s.Target.Budget, fmtGap(float64(r.rec.GapEstimate)))
		if n := len(r.rec.Stages); n > 0 && strings.HasPrefix(r.rec.Stages[n-1].Why, "error: ") {
			r.rec.Stopped = r.rec.Stages[n-1].Why
		}
	}
	res := &Result{X: r.avg, Iterations: r.iters, Cost: r.cost, Samples: r.used, Reached: r.reached, Diverged: r.diverged, Record: r.rec, Segments: r.segments}
	r.rec.Samples, r.rec.Pilot = r.used, r.pilot
	return res, nil
}

// runner is a Run's state.
type runner struct {
	p     *sgd.Problem
	s     Settings
	relay *sgd.Relay
	rec   *Record

	x, avg      []float64 // the iterate and the stage's average of its iterates
	f0          float64
	gradNorm0   float64
	used, pilot int64 // samples drawn, the pilots' among them
	cost        int64 // the cost of the last step taken
	iters       int
	seq         uint64 // oracles and estimators made, for their seeds
	lFloor      int    // the largest L a stage needed
	step        float64
	kappa       float64 // the projected, preconditioned share of the noise
	plan        *Plan
	segments    []Segment
	tap         *topTap // the top level's H^L draws since the stage or its L began, for the record
	// ceiling is the smallest step the run has halved since its plan took
	// over (0: none), above which raiseStep never goes.
	ceiling    float64
	stage0Cost int64 // the first stage's pilot
	lastStage  int64 // the last stage's samples, pilot included
	// lastN is how many iterates the last stage's average held: a stage
	// that runs on with the last plan, without a pilot, continues it.
	lastN int
	// minSum is the step sum a later stage must run before it may end:
	// half the first stage's, which its target's drop took; a stage that
	// ends sooner may be crawling, its small drops read as a small gap.
	minSum float64
	// biasScale is how many times the bias share a plan's fit predicted
	// the run found it, stationary above a target (0 or 1 until then).
	biasScale float64

	// startGap is the gap estimate the stage started from (1 in the
	// first stage): the variance cap's share of F(x0) - F.
	startGap float64

	done, reached, diverged bool
	// halted says a caller's recorder ended the run (Stop).
	halted bool
	// best and bestAt: the lowest gap estimate so far and the samples at
	// which it fell last; warned says the stall warning was given.
	best   float64
	bestAt int64
	warned bool
}

func (r *runner) seed(tag uint64) uint64 {
	r.seq++
	return r.s.Seed ^ tag ^ r.seq*0x9e3779b97f4a7c15
}

func (r *runner) logf(format string, a ...any) {
	if r.s.Log != nil {
		fmt.Fprintf(r.s.Log, format, a...)
	}
}

// pilotBudget is stage k's pilot: the first stage's a share of the
// budget, a later one's a share of its predicted cost, at least a
// sixteenth of the first's. The first pilot, sized before anything is
// known, is large enough to find the levels and the step; a later one
// measures again where a run already is, on a problem whose stages
// cost what the last one did, and a floor as large as the first pilot
// would make it the stage's largest cost on a problem whose whole run
// is a few first pilots.
func (r *runner) pilotBudget(k int) int64 {
	first := int64(r.s.FirstPilot * float64(r.s.Target.Budget))
	if k == 0 || r.lastStage == 0 {
		return first
	}
	return max(first/laterPilotFloor, int64(r.s.PilotShare*float64(r.lastStage)*r.s.StageRatio))
}

// laterPilotFloor is the first pilot over the least pilot a later stage
// takes, and a stage's pilot over its probes' after a degenerate start:
// both measure where a run already is.
const laterPilotFloor = 16

// leastPilot is the least pilot whose measuring half serves Measure:
// MinDraws queries (at least 3, as Measure takes) of the three lowest
// levels and of h at the third, and the cost probe's query of each, at
// the mean costs of the last measurement with three levels of finite,
// positive costs; 0 where there is none.
func (r *runner) leastPilot() int64 {
	for i := len(r.segments) - 1; i >= 0; i-- {
		m := r.segments[i].Pilot
		if m == nil || m.Report == nil || len(m.Report.Levels) < 3 {
			continue
		}
		cost := func(l int) float64 { return m.Report.Levels[l].Images }
		draws := float64(max(r.s.MinDraws, 3))
		half := draws*(cost(0)+cost(1)+2*cost(2)) + cost(0) + cost(1) + cost(2)
		if !(half > 0) || math.IsInf(half, 0) {
			continue // no usable costs in this measurement
		}
		// Clamped to the run's budget before it is converted, so that
		// huge costs cannot overflow; probeShare caps it lower.
		return 2 * int64(math.Ceil(math.Min(half, float64(r.s.Target.Budget))))
	}
	return 0
}

// probeShare is the pilot of a probe after a degenerate start in a stage
// whose pilot is budget: a sixteenth of it (laterPilotFloor), at least
// what three levels cost at the fewest draws (leastPilot) but that floor
// at most the stage's pilot, and at least last, the share the stage's
// last probe ended with (a share it had to double, for a fit that failed
// on too few draws, would fail again).
func (r *runner) probeShare(budget, last int64) int64 {
	return max(last, budget/laterPilotFloor, min(r.leastPilot(), budget))
}

// measure measures the levels at x within budget samples and makes the
// plan for target gap eps, its L at least the floor. The run's first
// measurement glances at x0 first and, where every H^l vanishes there,
// returns the glance's plan.
func (r *runner) measure(at string, eps float64, budget int64) (*Plan, error) {
	oracleSeed := r.seed(0x91107)
	inst, err := r.p.NewOracle(oracleSeed)
	if err != nil {
		return nil, fmt.Errorf("auto: make the oracle: %w", err)
	}
	if inst.At != nil {
		inst.At(r.x, r.x)
	}
	ops := mlmc.Float64Ops{Dim: len(r.x)}
	if r.used == 0 {
		if p, err := r.glance(at, eps, oracleSeed^0x61a9ce, ops); p != nil || err != nil {
			return p, err
		}
	}
	o := inst.Oracle
	var pm *projectedMeans
	if r.gradNorm0 == 0 && r.p.Project != nil {
		pm = newProjectedMeans(o, r.p.Project, r.x)
		o = pm
	}
	m, err := Measure(o, ops, r.s.MinLevel, budget, r.s.MinDraws, r.seed(0x5eed))
	r.used += m.Samples
	r.pilot += m.Samples
	if err != nil {
		return nil, err
	}
	r.segments = append(r.segments, Segment{Pilot: &m, Start: slices.Clone(r.x), OracleSeed: oracleSeed, Base: r.used - m.Samples, Until: r.used})
	if r.gradNorm0 == 0 {
		r.gradNorm0 = GradNorm(m.Report)
		if pm != nil {
			r.gradNorm0 = r.projectedGradNorm(pm, inst.Oracle, &m, r.gradNorm0)
		}
	}
	r.pilotNoiseShare(inst, ops, &m, len(r.segments)-1)
	t := Target{Gap: eps, Budget: r.s.Target.Budget}
	rules := r.s.Rules
	rules.BestFit = true
	// A bias share biasScale times the fit's is the fit's with
	// |grad F(x0)| sqrt(biasScale) times smaller.
	scale := max(r.biasScale, 1)
	p, err := ChooseFrom(m.Report, at, m.Samples, r.gradNorm0/math.Sqrt(scale), t, rules, inst.Oracle.MaxLevel(), r.lFloor)
	if err == nil {
		// The record holds the measured |grad F(x0)|; the plan keeps the
		// scale its bias share was taken with.
		p.GradNorm, p.biasScale = r.gradNorm0, scale
		if scale > 1 {
			p.Reasons.L += fmt.Sprintf("; that |grad F(x0)| is the measured one over sqrt(%.3g): an earlier plan's run was stationary at %.3g times the bias share its fit predicted", scale, scale)
		}
	}
	return p, err
}

// projectedGradNorm is |P grad F(x0)| read from the first measurement's
// top row projected (projectedMeans, projectedReading), or unprojected
// where the projection changed no draw. Every sample counts in the run's.
func (r *runner) projectedGradNorm(pm *projectedMeans, o mlmc.Oracle[[]float64], m *Measurement, unprojected float64) float64 {
	top := m.Report.Top
	g, ok, added, drawn := r.projectedReading(pm, o, top.Level, top.Draws, top.MeanNorm*top.MeanNorm-top.Var/float64(top.Draws), top.Var/float64(top.Draws), float64(top.Images))
	r.used += drawn
	r.pilot += drawn
	m.Samples += drawn
	m.Queries = append(m.Queries, added...)
	r.segments[len(r.segments)-1].Until = r.used
	if !ok {
		return unprojected
	}
	return g
}

// projectedReading is |P grad F(x0)| from pm's row of n draws at level,
// ok false where the projection changed no draw (or is one-sided: a
// box's face). The projected gradient can be a small part of the draws'
// norm (shortfall risk's is), so a row sized for the levels may lose it
// in its noise: while the reading's noise Var/n, relative to the
// reading, is above the unprojected reading's (yRaw with noise noiseRaw,
// the same draws unprojected) and above a sixteenth (a relative standard
// error of about a quarter), the row's draws are doubled, at x0 on o
// (each costing cost samples), while the pilots stay within a tenth of
// the budget (as a failed measurement is repeated). The projection then
// costs the reading no precision the unprojected one had. It returns the
// queries it added and their samples, for the caller to count.
func (r *runner) projectedReading(pm *projectedMeans, o mlmc.Oracle[[]float64], level, n int, yRaw, noiseRaw, cost float64) (g float64, ok bool, added []LevelQueries, drawn int64) {
	y, noise, ok := pm.reading(level, n)
	if !ok {
		return 0, false, nil, 0
	}
	rel := math.Inf(1)
	if yRaw > 0 {
		rel = math.Max(noiseRaw/yRaw, 1.0/16)
	}
	co := &counting[[]float64]{Oracle: o}
	for noise > rel*y && float64(r.used+co.samples)+float64(n)*cost <= float64(r.s.Target.Budget)/10 {
		k, err := pm.more(co, level, n)
		if k > 0 {
			// Drawn, so spent: a replay draws them too.
			added = append(added, LevelQueries{Level: level, Draws: k})
		}
		if err != nil {
			break
		}
		n *= 2
		y, noise, _ = pm.reading(level, n)
	}
	return math.Sqrt(math.Max(y, 0)), true, added, co.samples
}

// glance looks at x0 before the first measurement: half the pilot's
// draws at the three cheapest levels, enough to tell a start where every
// H^l vanishes (a user's x0 = 0 often is one: no bias can be seen there,
// and the plan is L-SGD at the minimum level until the levels are
// measured again away from it) at less than a full measurement's cost.
// The verdict rests on the two corrections it draws, not on the dozen
// levels a measurement may reach; it is never final, as no degenerate
// verdict is: the levels are measured again after the step search.
// Elsewhere it returns no plan, and the full measurement follows on draws
// of its own: the glance's samples are counted and its H^l are not pooled
// with the measurement's.
func (r *runner) glance(at string, eps float64, oracleSeed uint64, ops mlmc.Float64Ops) (*Plan, error) {
	top := r.s.MinLevel + 2
	inst, err := r.p.NewOracle(oracleSeed)
	if err != nil {
		return nil, fmt.Errorf("auto: make the oracle: %w", err)
	}
	if m := inst.Oracle.MaxLevel(); m != mlmc.Unbounded && m < top {
		return nil, nil
	}
	if inst.At != nil {
		inst.At(r.x, r.x)
	}
	co := &counting[[]float64]{Oracle: inst.Oracle}
	rep, err := mlmc.MeasureLevels(co, ops, mlmc.LevelsConfig{MinLevel: r.s.MinLevel, MaxLevel: top, Draws: max(3, r.s.MinDraws/2), Seed: oracleSeed ^ 0x5eed, Untimed: true, Brief: true})
	r.used += co.samples
	r.pilot += co.samples
	if err != nil {
		// Its samples are spent; the full measurement says what is wrong.
		r.segments = append(r.segments, Segment{Pilot: &Measurement{Samples: co.samples}, Start: slices.Clone(r.x), OracleSeed: oracleSeed, Base: r.used - co.samples, Until: r.used})
		return nil, nil
	}
	m := Measurement{Report: rep, Samples: co.samples, Queries: reportQueries(rep)}
	seg := len(r.segments)
	r.segments = append(r.segments, Segment{Pilot: &m, Start: slices.Clone(r.x), OracleSeed: oracleSeed, Base: r.used - m.Samples, Until: r.used})
	if len(rep.Levels) == 0 || !vanishesAbove(rep) {
		// No plan of these rows is degenerate: skip the fit.
		return nil, nil
	}
	t := Target{Gap: eps, Budget: r.s.Target.Budget}
	p, err := ChooseFrom(rep, at, m.Samples, GradNorm(rep), t, r.s.Rules, inst.Oracle.MaxLevel(), r.lFloor)
	if err != nil || !p.Degenerate {
		return nil, nil
	}
	// |grad F(x0)| scales every later plan's bias share (squared): read
	// on the pilot's minimum draws of the glance's top level, the least
	// biased it measured (where the H^l vanish only in the draws made, as
	// at a queue's empty start, the levels are not one), not on the
	// glance's half of them.
	before := co.samples
	var read mlmc.Oracle[[]float64] = co
	var pm *projectedMeans
	if r.p.Project != nil {
		// Read along the feasible set, as the first measurement does
		// (projectedGradNorm).
		pm = newProjectedMeans(co, r.p.Project, r.x)
		read = pm
	}
	yRaw, noiseRaw, err := gradNormAt(read, top, r.s.MinDraws, len(r.x))
	m.Queries = append(m.Queries, LevelQueries{Level: top, Draws: r.s.MinDraws})
	r.used += co.samples - before
	r.pilot += co.samples - before
	gradNorm := math.Sqrt(math.Max(yRaw, 0))
	if err == nil && pm != nil {
		g, ok, added, drawn := r.projectedReading(pm, inst.Oracle, top, r.s.MinDraws, yRaw, noiseRaw, float64(rep.Top.Images))
		m.Queries = append(m.Queries, added...)
		r.used += drawn
		r.pilot += drawn
		co.samples += drawn // the glance's count holds every sample it drew
		if ok {
			gradNorm = g
		}
	}
	m.Samples = co.samples
	r.segments[seg].Until = r.used
	if err != nil || !(gradNorm > 0) {
		return nil, nil
	}
	if p, err = ChooseFrom(rep, at, m.Samples, gradNorm, t, r.s.Rules, inst.Oracle.MaxLevel(), r.lFloor); err != nil || !p.Degenerate {
		return nil, nil
	}
	r.gradNorm0 = gradNorm
	r.pilotNoiseShare(inst, ops, &m, seg)
	return p, nil
}

// gradNormAt is y = |mean h^level|^2 - Var/n over n draws of o (an
// estimate of |grad F|^2 at o's point without the noise's upward bias) and
// the noise Var/n it took off.
func gradNormAt(o mlmc.Oracle[[]float64], level, n, dim int) (y, noise float64, err error) {
	draws, g := newMoments(dim), make([]float64, dim)
	for range n {
		s, _, err := o.Draw(level)
		if err != nil {
			return 0, 0, err
		}
		clear(g)
		err = o.Eval(s, mlmc.Current, false, 1, g)
		o.Release(s)
		if err != nil {
			return 0, 0, err
		}
		draws.add(g)
	}
	y, v := draws.meanSquare()
	return y, v / float64(n), nil
}

// pilotNoiseShare reads the noise share once a run (noiseShare) as a
// part of the pilot m, the run's segment seg: its draws are the pilot's
// queries, so a replay of the segments draws them too.
func (r *runner) pilotNoiseShare(inst sgd.Instance, ops mlmc.Float64Ops, m *Measurement, seg int) {
	if !math.IsNaN(r.kappa) && r.kappa != 0 {
		return
	}
	from := r.used
	var drawn int
	r.kappa, drawn = r.noiseShare(inst, ops)
	if drawn > 0 {
		m.Queries = append(m.Queries, LevelQueries{Level: r.s.MinLevel, Draws: drawn})
		m.Samples += r.used - from
		r.segments[seg].Until = r.used
	}
}

// noiseShare is the share of the gradient noise that sets the noise floor:
// constant-step SGD x <- P(x - step D v) with noise covariance S settles
// where E F - F* = step tr(P D S)/4, so the share is tr(P D S) / tr S,
// estimated as E[(g - E g).P D (g - E g)] / E|g - E g|^2 over draws of
// h^(l_min) at x, with D the preconditioner and P the projection's
// linearisation. A floor computed from tr S alone counts noise the
// projection removes and ignores the preconditioner's scale. 1 without
// either, or where the draws agree.
func (r *runner) noiseShare(inst sgd.Instance, ops mlmc.Float64Ops) (share float64, drawn int) {
	if r.p.Project == nil && r.p.Precondition == nil {
		return 1, 0
	}
	const n = 32
	d := make([]float64, len(r.x))
	for i := range d {
		d[i] = 1
	}
	if r.p.Precondition != nil {
		r.p.Precondition(r.x, d)
	}
	var pr *projector
	if r.p.Project != nil {
		pr = newProjector(r.p.Project, r.x)
	}
	gs, es := make([][]float64, n), make([][]float64, n)
	for k := range n {
		s, c, err := inst.Oracle.Draw(r.s.MinLevel)
		if err != nil {
			return 1, drawn
		}
		r.used += c
		r.pilot += c
		drawn++
		g := ops.New()
		err = inst.Oracle.Eval(s, mlmc.Current, false, 1, g)
		inst.Oracle.Release(s)
		if err != nil {
			return 1, drawn
		}
		e := ops.New()
		for i := range g {
			e[i] = d[i] * g[i]
		}
		if pr != nil {
			pr.direction(e)
		}
		gs[k], es[k] = g, e
	}
	vg, ve := centred(gs, gs), centred(gs, es)
	if !(vg > 0) || math.IsNaN(ve) {
		return 1, drawn
	}
	return ve / vg, drawn
}

func norm(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// centred is the mean of (u - mean u).(v - mean v) over the pairs.
func centred(us, vs [][]float64) float64 {
	mu, mv := make([]float64, len(us[0])), make([]float64, len(vs[0]))
	n := float64(len(us))
	for k := range us {
		for i := range mu {
			mu[i] += us[k][i] / n
			mv[i] += vs[k][i] / n
		}
	}
	s := 0.0
	for k := range us {
		for i := range mu {
			s += (us[k][i] - mu[i]) * (vs[k][i] - mv[i])
		}
	}
	return s / (n - 1)
}

// noiseVar is the plan's predicted variance of the moving part of its
// estimates (noiseShare).
func (r *runner) noiseVar(p *Plan) float64 { return p.predictedVar() * r.noiseFactor() }

// noiseVarHigh is noiseVar on the plan's upper bound of its variance
// (Plan.predictedHigh).
func (r *runner) noiseVarHigh(p *Plan) float64 { return p.predictedVarHigh() * r.noiseFactor() }

// noiseFactor is the share of the estimates' variance that moves the
// iterate, kappa (1 where unmeasured).
func (r *runner) noiseFactor() float64 {
	if !(r.kappa > 0) {
		return 1
	}
	return r.kappa
}

// degenerateProbes bounds how often a stage measures again after a
// degenerate start.
const degenerateProbes = 3

// probeIters are the iterations a degenerate start runs before it
// measures the levels again.
const probeIters = 48

// stage runs stage k to target eps.
func (r *runner) stage(k int, eps float64, last bool) error {
	st := &Stage{Target: eps, GapEstimate: nullable(math.NaN()), BiasGap: nullable(math.NaN())}
	r.rec.Stages = append(r.rec.Stages, st)
	start, pilot0 := r.used, r.pilot
	r.startGap = 1
	if g := float64(r.rec.GapEstimate); k > 0 && g > 0 && g < 1 {
		r.startGap = g
	}
	budget := r.pilotBudget(k)
	if left := r.s.Target.Budget - r.used; k > 0 && budget > left/2 {
		// A pilot may not take the rest of the budget: the last plan
		// runs on, to this stage's target, without one.
		st.Notes = append(st.Notes, fmt.Sprintf("no pilot: one of %d samples needs more than half of the %d samples left, so the last plan runs on", budget, left))
		st.Plans = append(st.Plans, r.plan)
		r.runStage(st, eps, last, budget, true)
		r.endStage(st, k, start)
		return nil
	}
	if k == 0 {
		r.stage0Cost = budget
	}
	at := "x0"
	if k > 0 {
		at = fmt.Sprintf("stage %d's start, %d samples", k, r.used)
	}
	plan, err := r.measure(at, eps, budget/2)
	var ae *Error
	if errors.As(err, &ae) && r.plan != nil {
		// A measurement that rules out a plan (its noise, a bias lost in
		// it) is no verdict on a run under way: the last plan goes on.
		st.Notes = append(st.Notes, "kept the last plan: "+err.Error())
		kept := *r.plan
		kept.At, kept.Steps = at+" (kept)", nil
		plan, err = &kept, nil
	} else {
		err = r.doubled(st, "measured", err, &budget, func(half int64) (err error) {
			plan, err = r.measure(at, eps, half)
			return err
		})
	}
	if err != nil {
		return err
	}
	// A probe after a degenerate start measures again where the step
	// search left the run, as a later stage does, on probeShare (doubled,
	// as any measurement is, while it fails), and a step re-check after
	// it, where the method or L changed, runs on as many. A probe with the
	// whole pilot would make the first stage's pilot the largest cost of a
	// problem whose whole run is a few pilots.
	probeBudget := budget
	for probe := 0; ; probe++ {
		changed := r.plan == nil || plan.Kind != r.plan.Kind || plan.MaxLevel != r.plan.MaxLevel
		if r.s.Step > 0 && r.step == 0 {
			r.step, plan.Reasons.Step = r.s.Step, "given"
		} else if changed && r.step == 0 {
			// A step search whose candidates cannot run their iterations
			// (a glance that found x0 degenerate spent less than a
			// measurement, so the budget did not grow with a failed one)
			// runs again with twice the samples, as a measurement does.
			err := r.chooseStep(plan, r.s.Steps, budget/2, eps)
			err = r.doubled(st, "searched the step", err, &budget, func(half int64) error {
				plan.Steps, plan.Reasons.Step = nil, ""
				return r.chooseStep(plan, r.s.Steps, half, eps)
			})
			if err != nil {
				return err
			}
			r.step = plan.Step
		} else if changed {
			if err := r.recheckStep(plan, probeBudget/2); err != nil {
				return err
			}
			r.step = plan.Step
		} else {
			plan.Step = r.step
			plan.Reasons.Step = "the last stage's step: the method and L are unchanged"
			f, _ := r.s.Score(r.x)
			r.capStep(plan, r.f0-f)
			r.step = plan.Step
		}
		plan.Step = r.step
		r.plan = plan
		r.lFloor = max(r.lFloor, plan.MaxLevel)
		st.Plans = append(st.Plans, plan)
		if !plan.Degenerate || probe == degenerateProbes {
			if plan.Degenerate {
				st.Notes = append(st.Notes, fmt.Sprintf("every H^l still vanished after %d probes: ran on with %s", probe, plan.Method))
			}
			break
		}
		// No bias can be seen here (every H^l vanished): never a verdict.
		// Measure again where the step search left the iterate, and after
		// a few dozen iterations.
		if probe > 0 {
			if err := r.runIters(plan, probeIters); err != nil {
				return err
			}
		}
		if r.done {
			break
		}
		st.Notes = append(st.Notes, fmt.Sprintf("every H^l vanished at %s: measured again at %d samples", plan.At, r.used))
		at := fmt.Sprintf("a probe after a degenerate start, %d samples", r.used)
		last := int64(0) // the share the stage's last probe ended with
		if probe > 0 {
			last = probeBudget
		}
		probeBudget = r.probeShare(budget, last)
		plan, err = r.measure(at, eps, probeBudget/2)
		err = r.doubled(st, "measured", err, &probeBudget, func(half int64) (err error) {
			plan, err = r.measure(at, eps, half)
			return err
		})
		if err != nil {
			return err
		}
	}
	st.Pilot = r.pilot - pilot0
	if !r.done {
		r.runStage(st, eps, last, budget, false)
	}
	r.endStage(st, k, start)
	return nil
}

// doubled repeats what failed with an *Error (err, its first try) on
// twice the samples (budget doubled, f given half of it, as the first
// try was), while the pilot stays within a tenth of the run's budget,
// before giving up: the first pilot is kept small, so that a loose target
// on a cheap problem does not pay for more. what names the repeated work
// in the stage's notes.
func (r *runner) doubled(st *Stage, what string, err error, budget *int64, f func(half int64) error) error {
	var ae *Error
	for errors.As(err, &ae) && r.used+2*(*budget) < r.s.Target.Budget/10 {
		st.Notes = append(st.Notes, what+" again with twice the samples: "+err.Error())
		*budget *= 2
		err = f(*budget / 2)
	}
	return err
}

// endStage records where stage k, begun at start samples, ended and logs
// its line.
func (r *runner) endStage(st *Stage, k int, start int64) {
	st.Step, st.Samples = r.step, r.used
	if r.tap != nil && r.plan != nil && r.tap.level == r.plan.MaxLevel && r.tap.draws.n > 0 {
		tb := r.tap.read()
		share := math.NaN()
		if !math.IsInf(r.plan.intercept, -1) {
			// A plan without a bias fit holds a placeholder rate.
			share = tb.share(r.plan.aG, r.plan.GradNorm)
		}
		st.TopBias = &TopBias{Level: r.tap.level, Draws: tb.n, MeanSq: tb.y, SE: tb.se, Share: nullable(share), Seen: tb.seen}
	}
	r.lastStage = r.used - start
	r.logf("auto stage %d: target %.3g, %s L=%d, step %.3g, %d samples, gap estimate %s: %s\n",
		k+1, st.Target, r.plan.Method, r.plan.MaxLevel, r.step, r.used, fmtGap(float64(st.GapEstimate)), st.Why)
}

func fmtGap(g float64) string {
	if math.IsNaN(g) {
		return "none"
	}
	return fmt.Sprintf("%.3g", g)
}

// method is the plan's estimator with a fresh seed.
func (r *runner) method(p *Plan) sgd.Method {
	return sgd.Method{Kind: p.Kind, Config: p.Config(r.seed(0xe57))}
}

// chunk runs the plan from r.x until the step whose samples reach until
// (or iters iterations when positive; never past the run's budget) on a
// fresh oracle, passing each step's average of the stage's iterates on;
// it returns whether the iterate stayed finite.
func (r *runner) chunk(p *Plan, until int64, iters int, n *int) (bool, error) {
	until = min(until, r.s.Target.Budget)
	if r.used >= until {
		// A measurement may have spent the rest of the budget: the run
		// is over, or a stage's loop would score the same point for ever.
		if r.used >= r.s.Target.Budget {
			r.done = true
		}
		return true, nil
	}
	oracleSeed := r.seed(0x0c1e)
	inst, err := r.p.NewOracle(oracleSeed)
	if err != nil {
		return false, fmt.Errorf("auto: make the oracle: %w", err)
	}
	if p.MaxLevel > p.MinLevel && p.Kind.Method != mlmc.LSGD {
		if r.tap == nil || r.tap.level != p.MaxLevel {
			r.tap = newTopTap(inst.Oracle, p.MaxLevel, r.p.Project, r.x)
		}
		r.tap.Oracle = inst.Oracle
		inst.Oracle = r.tap
	}
	step := r.step
	// A chunk ends after the step whose samples reach until, not at an
	// estimate beyond it, which the driver would draw and drop: only the
	// run's budget is a hard limit.
	seg := Segment{Method: r.method(p), Step: step, Start: slices.Clone(r.x), OracleSeed: oracleSeed, Base: r.used, Until: r.s.Target.Budget}
	avg := &sgd.Average{N: *n, X: r.avg}
	iters0 := r.iters
	var recs []sgd.Recorder
	if len(r.relay.Recs) > 0 {
		// A query can cost a few hundred nanoseconds: without recorders
		// to tell, the driver runs without a call per step.
		// The answer may have moved since the last event the recorders
		// saw (a stage's or a probe's average starts again from the
		// iterate, a safeguard puts it back): before the chunk's first
		// event, the samples up to its start are told with the answer
		// they were spent under, then the chunk's with the answer now.
		base := r.used
		fresh := true
		recs = append(recs, sgd.RecorderFunc(func(op sgd.Op, loc *sgd.Location) sgd.Status {
			if op == sgd.Stepped {
				r.iters = iters0 + loc.Iter
			}
			moved := op == sgd.Stepped
			if fresh {
				// (moved false: the relay's copy, the answer it last saw.)
				fresh, moved = false, true
				if r.halt(r.relay.Send(sgd.Estimated, iters0, base, r.avg, false)) {
					// Stopped at the answer it saw: that is the run's.
					copy(r.avg, r.relay.Seen())
					return sgd.Stop
				}
			}
			if r.halt(r.relay.Send(op, r.iters, loc.Cost, r.avg, moved)) {
				return sgd.Stop
			}
			return sgd.Continue
		}))
	}
	res, err := sgd.Minimize(r.p, inst, seg.Method, sgd.Constant(step), sgd.Settings{X: r.x, Budget: r.s.Target.Budget, Base: r.used, Average: avg, StopAt: until, Iterations: iters}, recs...)
	*n = avg.N
	if err != nil {
		return false, fmt.Errorf("auto: %w", err)
	}
	r.iters = iters0 + res.Iterations
	if res.Iterations > 0 {
		r.cost = res.Cost
	}
	seg.Iterations = res.Iterations
	r.segments = append(r.segments, seg)
	r.used = max(res.Drawn, r.used)
	if r.halted {
		// The caller's recorder ended the run: the iterate stands as it
		// is, not as an instability of the step.
		copy(r.x, res.X)
		return true, nil
	}
	if r.used >= r.s.Target.Budget || res.Drawn > until && until == r.s.Target.Budget {
		r.done = true
	}
	if res.Diverged {
		return false, nil
	}
	copy(r.x, res.X)
	return true, nil
}

// halt ends the run where it is once a caller's recorder has answered
// Stop (st, or at the same event beside another's Diverge, which st would
// report) and reports whether the run is ended so; Diverge alone leaves it
// running (Run).
func (r *runner) halt(st sgd.Status) bool {
	if st == sgd.Stop || r.relay.StopAsked() {
		r.halted, r.done = true, true
	}
	return r.halted
}

// runIters runs iters iterations of the plan (a probe).
func (r *runner) runIters(p *Plan, iters int) error {
	n := 0
	copy(r.avg, r.x)
	_, err := r.chunk(p, r.s.Target.Budget, iters, &n)
	return err
}

// maxLevel is the deepest level the problem's oracle serves (a large
// number where it is unbounded).
func (r *runner) maxLevel() int {
	inst, err := r.p.NewOracle(r.s.Seed)
	if err != nil || inst.Oracle.MaxLevel() == mlmc.Unbounded {
		return r.s.MinLevel + 40
	}
	return inst.Oracle.MaxLevel()
}

// maxStationaryHalvings bounds the stationarity test's halvings in one
// stage: the stages' targets fall by sqrt(10) each, and a flat, noisy
// objective can read as stationary again and again, halving the step to a
// crawl.
const maxStationaryHalvings = 3

// maxBlindMeasures bounds how often a stage measures again while no
// level's mean has stood out of its noise (a measurement each time the
// samples double: five cover a factor 32 of the run).
const maxBlindMeasures = 5

// maxHalvings bounds the safeguard's halvings in a run.
const maxHalvings = 10

// runStage runs the stage's plan in chunks, each a tenth of the samples
// so far (at least 64 iterations), and after each scores the average of
// the stage's iterates: the gap estimate is the last chunk's drop scaled
// by the slowest rate of a converging run (gap falling as 1/samples: the
// gap left is the drop times the samples before the chunk over the
// chunk's), plus the top level's predicted bias share, over F(x0) less
// the objective's estimated minimum. A chunk that does not lower the
// objective beyond its noise is at the step's noise floor: the step is
// halved (a stationarity test). A score that is not finite or above F(x0)
// puts the iterate back to the last checkpoint and halves the step (the
// safeguard). With keepAverage (a stage that runs on with the last plan
// and its step, without a pilot) the average goes on from the last
// stage's instead of starting again at the iterate, unless it is above
// the iterate beyond their noise: nothing about the run changed, and a
// fresh average near the end of the budget would hold only the few
// iterates left where the long one holds the last stage's.
func (r *runner) runStage(st *Stage, eps float64, last bool, pilot int64, keepAverage bool) {
	p := r.plan
	r.tap = nil
	n := 0
	if keepAverage && r.lastN > 0 {
		// Unless the average is above the iterate beyond their noise:
		// the last stage may have given way on a stall that left its
		// average behind a better iterate.
		fa, sea := r.s.Score(r.avg)
		fx, sex := r.s.Score(r.x)
		if fa-fx <= 2*math.Hypot(sea, sex) {
			n = r.lastN
		} else {
			st.Notes = append(st.Notes, fmt.Sprintf("the last stage's average (F = %.6g) was above its iterate (F = %.6g) beyond their noise: the average starts again at the iterate", fa, fx))
		}
	}
	if n == 0 {
		copy(r.avg, r.x)
	}
	defer func() { r.lastN = n }()
	goodAvg := slices.Clone(r.avg)
	fPrev, sePrev := r.s.Score(r.avg)
	var prevEst float64 = math.Inf(1)
	biasGap := p.BiasShare
	if math.IsNaN(biasGap) || math.IsInf(biasGap, 0) {
		biasGap = 0
	}
	st.BiasGap = nullable(biasGap)
	halvings := 0
	var hist [][2]float64 // (iterates averaged, F at the average) since the step last changed
	stepSum, stalls := 0.0, 0
	// unhalved is the step before the stationarity test's halvings since
	// the plan last changed (0: none), fUnhalved F at the average then.
	unhalved, fUnhalved := 0.0, 0.0
	// blind counts the measurements made again while no bias was seen,
	// blindAt the samples at the last (a plan made at a degenerate start's
	// probe is measured again once the samples double).
	blind, blindAt, blindEst := 0, max(r.used, 8*pilot), math.Inf(1)
	// The step-too-small test (raiseStep) watches windows over which the
	// samples double: raiseAt and raiseEst are the window's start and its
	// gap estimate there (infinite: the window starts at the next
	// checkpoint), moving that every checkpoint in it found the run still
	// descending.
	raiseAt, raiseEst, moving := r.used, math.Inf(1), true
	// stallBest is the stage's lowest gap estimate, stallAt the samples at
	// which it last fell by a tenth: a stage that stalls gives way to the
	// next (all but the last).
	stallBest, stallAt := math.Inf(1), r.used
	restartRaise := func() { raiseAt, raiseEst, moving = r.used, math.Inf(1), true }
	defer func() {
		if r.minSum == 0 {
			r.minSum = stepSum / 2
		}
	}()
	for !r.done {
		itBefore := r.iters
		before := r.used
		chunk := max(int64(64*p.expectedCost()), before/10)
		ok, err := r.chunk(p, before+chunk, 0, &n)
		if err != nil {
			st.Why = "error: " + err.Error()
			r.done = true
			return
		}
		if r.halted {
			// A caller's recorder stopped the run: the answer stays the
			// point it saw, no checkpoint scored, nothing more drawn.
			st.Why = "a recorder stopped the run"
			return
		}
		if r.used == before {
			// Nothing drawn (the budget is spent): no checkpoint to score.
			break
		}
		stepSum += r.step * float64(r.iters-itBefore)
		f, se := r.s.Score(r.avg)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) || f > r.f0 {
			if halvings == maxHalvings {
				r.diverged, r.done = true, true
				st.Why = fmt.Sprintf("the iterate left F's domain again after %d halvings of the step: stopped", maxHalvings)
				return
			}
			halvings++
			st.Halvings++
			// Back to the last checkpoint's average, a point known to be
			// good (the iterate there may have been far from it).
			copy(r.x, goodAvg)
			copy(r.avg, goodAvg)
			n = 0
			r.lowerCeiling(r.step)
			r.step /= 2
			restartRaise()
			unhalved = 0
			st.Notes = append(st.Notes, fmt.Sprintf("at %d samples the objective at the average was %g (F(x0) = %g): put back to the last checkpoint, step halved to %.3g", r.used, f, r.f0, r.step))
			if halvings%3 == 0 && !math.IsInf(f, 0) && !math.IsNaN(f) && p.MaxLevel < r.maxLevel() {
				// F rises at ever smaller steps: the steps descend F^L,
				// whose minimiser is not F's (its bias), not F. Two
				// levels deeper, measured again, the step searched again.
				r.lFloor = max(r.lFloor, p.MaxLevel+2)
				np, err := r.measure(fmt.Sprintf("a re-plan after F rose at %d samples", r.used), eps, pilot)
				if err == nil {
					// The halvings were the bias's doing: the step is
					// searched afresh for the deeper L.
					if err := r.chooseStep(np, r.s.Steps, pilot/2, eps); err == nil {
						halvings = 0
						if np.Step != r.step {
							restartRaise()
						}
						r.plan, p, r.step = np, np, np.Step
						r.lFloor = max(r.lFloor, np.MaxLevel)
						st.Plans = append(st.Plans, np)
						st.Notes = append(st.Notes, fmt.Sprintf("F rose at ever smaller steps, the mark of the bias of L: L raised to %d", np.MaxLevel))
						biasGap = np.BiasShare
						if math.IsNaN(biasGap) || math.IsInf(biasGap, 0) {
							biasGap = 0
						}
						fPrev, sePrev = r.s.Score(r.avg)
						hist, stalls, unhalved = hist[:0], 0, 0
					}
				}
			}
			continue
		}
		copy(goodAvg, r.avg)
		drop := fPrev - f
		noise := 2 * math.Hypot(se, sePrev)
		spent := float64(r.used - before)
		// A rise of F at the average is noise of that size: it bounds
		// what is left no better than a drop would.
		left := math.Abs(drop) * float64(before) / math.Max(spent, 1)
		// The average lags behind the iterate while the run still
		// descends, or after the step fell (F(average) above F(iterate));
		// at the step's noise floor the iterate's noise puts it above the
		// average. What the average still lags is left to do.
		fx, sex := r.s.Score(r.x)
		lag := f - fx
		floor := lag <= 2*math.Hypot(se, sex)
		left = math.Max(left, lag)
		// Pooled over the checkpoints since the step last changed: F at
		// the average falls as F* + C/n with the n iterates averaged at
		// a constant step (their noise averages out as 1/n); the fitted
		// F* is less noisy than one chunk's drop.
		hist = append(hist, [2]float64{float64(n), f})
		if len(hist) >= 3 {
			if fStar, ok := fitInverse(hist); ok {
				left = math.Max(left, f-fStar)
			}
		}
		left *= safety
		// The estimate of the gap: what is left of the optimisation, the
		// bias, over F(x0) - F* estimated likewise.
		den := r.f0 - f + left
		est := (left + biasGap*den) / den
		fPrev, sePrev = f, se
		// The claim is the larger of the last two checkpoints' estimates:
		// one could be a lucky drop.
		claim := math.Max(est, prevEst)
		st.GapEstimate = nullable(claim)
		r.rec.GapEstimate = nullable(claim)
		r.watch(claim, p)
		moving = moving && !floor && drop > noise
		if math.IsInf(raiseEst, 1) {
			raiseAt, raiseEst = r.used, claim
		} else if r.used >= 2*raiseAt {
			if r.raiseStep(moving, claim, raiseEst) {
				st.Notes = append(st.Notes, fmt.Sprintf("at %d samples the run was still descending at every checkpoint while its gap estimate fell from %.3g only to %.3g over a doubling of the samples: the step was too small, raised to %.3g", r.used, raiseEst, claim, r.step))
				hist, stalls = hist[:0], 0
			}
			raiseAt, raiseEst, moving = r.used, claim, true
		}
		if claim <= eps && stepSum >= r.minSum {
			st.Why = fmt.Sprintf("the gap estimate %.3g (the last chunk's drop %.3g of the objective at the averaged iterate scaled to what a 1/samples rate leaves, or the average's lag behind the iterate %.3g, plus the bias share %.3g) is at the stage's target at two checkpoints in a row", est, drop, lag, biasGap)
			if last {
				r.reached, r.done = true, true
				// The claim, the larger of the last two checkpoints'
				// estimates, is the record's gap estimate too.
				r.rec.Stopped = fmt.Sprintf("the gap estimate %.3g reached the target %g at %d samples", claim, eps, r.used)
			}
			return
		}
		if claim < 0.9*stallBest || math.IsInf(claim, 1) {
			// The window opens at the first finite estimate: a stage
			// whose first checkpoints have none has not stalled.
			stallBest, stallAt = claim, r.used
		} else if !last && float64(r.used-stallAt) >= stallShare*float64(r.s.Target.Budget) {
			// The stage's estimate has not fallen by a tenth over the
			// share of the budget after which a stall is reported: its
			// plan is held at its floor (the bias of an L chosen for
			// this stage's looser target, or its noise), or its estimate
			// reads the gap too high to end it. The next stage measures
			// again where the run is and plans for its tighter target.
			st.Why = fmt.Sprintf("the gap estimate has stayed at %.3g since %d samples (over %.0f%% of the budget): the next stage plans for its tighter target", stallBest, stallAt, 100*stallShare)
			return
		}
		if p.seen == 0 && !p.Degenerate && blind < maxBlindMeasures && r.used >= 2*blindAt && !r.done {
			// No level's mean stood out of its noise where the plan was
			// made, so its L is the pilot's top level that did not vanish
			// (or an earlier stage's L), not a measured one: the bias
			// may only show where the run has gone (it grows with the
			// distance from a start where the levels agree), and it may
			// stay in the levels' noise while it holds the run far above
			// its target. Each time the samples double, a run converging
			// at the slowest rate auto assumes (the gap as 1/samples)
			// has halved its gap estimate; one that has not is measured
			// again, with a twentieth of the samples so far, and takes
			// the new plan where it is deeper or another method.
			slow := claim > blindEst/2
			blindAt, blindEst = r.used, claim
			if !slow {
				prevEst = est
				continue
			}
			blind++
			// From the average of the stage's iterates, the point the
			// stage scores: a plan whose L is too low drifts the iterate
			// towards F^L's minimiser, which may lie where F rises
			// steeply or is not finite.
			copy(r.x, r.avg)
			n = 0
			np, err := r.measure(fmt.Sprintf("a re-measure at %d samples, no bias seen so far", r.used), eps, r.used/20)
			if err == nil && (np.MaxLevel > p.MaxLevel || np.Kind != p.Kind) {
				if err := r.recheckStep(np, pilot/2); err == nil {
					st.Notes = append(st.Notes, fmt.Sprintf("no bias was seen where the plan was made; measured again at %d samples: %s L=%d", r.used, np.Method, np.MaxLevel))
					if np.Step != r.step {
						restartRaise()
					}
					r.plan, p, r.step = np, np, np.Step
					r.lFloor = max(r.lFloor, np.MaxLevel)
					st.Plans = append(st.Plans, np)
					biasGap = np.BiasShare
					if math.IsNaN(biasGap) || math.IsInf(biasGap, 0) {
						biasGap = 0
					}
					fPrev, sePrev = r.s.Score(r.avg)
					hist, stalls, unhalved = hist[:0], 0, 0
				}
			} else if err == nil && np.seen > 0 {
				// A bias seen, and the plan's L meets it: no more blind.
				p.seen = np.seen
			}
			prevEst = est
			continue
		}
		if floor && drop <= noise {
			stalls++
		} else {
			stalls = 0
		}
		if stalls == 2 && st.Halvings-halvings < maxStationaryHalvings {
			// At the noise floor and no longer improving at two
			// checkpoints in a row: halve the step, and the floor with it
			// (a stationarity test).
			r.lowerCeiling(r.step)
			if unhalved == 0 {
				unhalved, fUnhalved = r.step, f
			}
			r.step /= 2
			st.Halvings++
			hist, stalls = hist[:0], 0
			restartRaise()
		} else if stalls == 2 && p.MaxLevel+2 <= r.maxLevel() {
			// Stationary after every halving the stage allows, its target
			// not reached: what is left is the bias of L, which the
			// measurement's noise hid. Two levels deeper, measured again,
			// the step re-checked (Giles' test of the bias, read off the
			// run rather than off the pilot's noisy means).
			r.lFloor = max(r.lFloor, p.MaxLevel+2)
			// Halvings that did not lower F at the average beyond its
			// noise did not meet the step's noise floor: the check of the
			// new plan's step starts from the step before them, not from
			// one 2^3 times smaller that crawls towards the new L's
			// lower floor.
			from := stepForRaise(r.step, unhalved, fUnhalved, f, noise)
			// The fit of the bias put L's share of the gap at BiasShare
			// (times the scale the plan was made with); the run,
			// stationary at est, shows it larger: later plans scale their
			// fitted bias share by the ratio.
			r.biasScale = max(r.biasScale, max(p.biasScale, 1)*biasScaleSeen(p.BiasShare, est))
			if np, err := r.measure(fmt.Sprintf("a re-plan at %d samples, the stage stationary above its target", r.used), eps, pilot); err == nil {
				halved := r.step
				r.step = from
				if err := r.recheckStep(np, pilot/2); err != nil {
					// The old plan runs on at the step it had.
					r.step = halved
				} else {
					if np.Step != r.step {
						restartRaise()
					}
					r.plan, p, r.step = np, np, np.Step
					// The new plan's average starts afresh (count zero) at
					// the average the check left, its end point where it
					// ran: the old count would give the new plan's
					// iterates almost no weight.
					n = 0
					r.lFloor = max(r.lFloor, np.MaxLevel)
					st.Plans = append(st.Plans, np)
					st.Notes = append(st.Notes, fmt.Sprintf("stationary above the target at %d samples after %d halvings: L raised to %d", r.used, maxStationaryHalvings, np.MaxLevel))
					biasGap = np.BiasShare
					if math.IsNaN(biasGap) || math.IsInf(biasGap, 0) {
						biasGap = 0
					}
					fPrev, sePrev = r.s.Score(r.avg)
					halvings = st.Halvings
				}
			}
			unhalved = 0
			hist, stalls = hist[:0], 0
		}
		prevEst = est
	}
	if st.Why == "" {
		st.Why = fmt.Sprintf("the budget of %d samples ran out", r.s.Target.Budget)
		r.rec.Stopped = st.Why + fmt.Sprintf(" with the gap estimate at %s", fmtGap(float64(st.GapEstimate)))
		if g := float64(st.GapEstimate); g <= eps {
			// Below the target but not claimed: the stage had not run the
			// step sum that lets an estimate end it (small drops of a
			// crawling run read as a small gap).
			r.rec.Stopped += ", below the target but not claimed: the stage had not yet run long enough for its estimate to be trusted"
		}
	}
}

// takeOver clears the ceiling where p, another method or L than the
// run's plan, takes over: a halving tells of the noise floor (or the
// bias) of the estimator it was made with, and an estimator of another
// variance has its floor at another step (L-SGD's variance falls as its
// level's inner samples double; the stationarity test's halvings that
// end in a deeper L were the bias's doing, not the step's). Left in place,
// a ceiling set while the first plan's iterates settled holds every later
// plan's step below it for the rest of the run. The function it returns,
// deferred with the step rule's error, puts the ceiling back where the
// rule failed: the last plan then runs on, and its ceiling with it.
func (r *runner) takeOver(p *Plan) func(*error) {
	saved := r.ceiling
	if r.plan == nil || p.Kind != r.plan.Kind || p.MaxLevel != r.plan.MaxLevel {
		r.ceiling = 0
	}
	return func(err *error) {
		if *err != nil {
			r.ceiling = saved
		}
	}
}

// lowerCeiling records that the run halved step: a raise never returns to
// it while the plan runs on.
func (r *runner) lowerCeiling(step float64) {
	if r.ceiling == 0 || step < r.ceiling {
		r.ceiling = step
	}
}

// raiseStep is the step-too-small test, the stationarity test's mirror,
// run once a window's samples have doubled: where the run was still
// descending at every checkpoint of the window (the average behind the
// iterate and falling, both beyond their noise) while its gap estimate
// did not halve (from est0 to est), the run converges slower than the
// slowest rate auto assumes (the gap as 1/samples) without reaching its
// noise floor, which a smaller step's noise floor would not explain: the
// step is what holds it. It is raised a notch of the step grid (a factor
// sqrt(10)), never to or above a step the run has halved since its plan
// took over; where the raise is too much, the stationarity test or the
// safeguard halve it. The step
// search scores its candidates on a few dozen iterations, where a
// transient of the first steps (the objective first rising at the steps
// that serve a long run) can make it choose a step orders of magnitude
// too small. It says whether it raised the step.
func (r *runner) raiseStep(moving bool, est, est0 float64) bool {
	const notch = 3.1622776601683795 // sqrt(10)
	if !moving || est <= est0/2 || math.IsNaN(est) || math.IsInf(est, 0) {
		return false
	}
	if r.ceiling > 0 && r.step*notch >= r.ceiling {
		return false
	}
	r.step *= notch
	return true
}

// stepForRaise is the step from which the step of a plan with a deeper L
// is checked, after a stage stationary above its target: unhalved, the
// step before the stationarity test's halvings (0: none), where F at the
// average, fUnhalved then, has not fallen beyond its noise since (f): those
// halvings did not meet the step's noise floor, and a step 2^3 times too
// small would crawl towards the new L's lower floor. Otherwise step.
func stepForRaise(step, unhalved, fUnhalved, f, noise float64) float64 {
	if unhalved > 0 && f >= fUnhalved-noise {
		return unhalved
	}
	return step
}

// biasScaleSeen is how many times a plan's fitted bias share the run
// found the bias's share, stationary above its target with gap estimate
// est (1 where the fit's share covers it, or there is none): the pilot's
// fit can miss a bias lost in its noise, and the run is the test of it.
func biasScaleSeen(share, est float64) float64 {
	if !(share > 0) || !(est > share) || math.IsInf(est, 0) {
		return 1
	}
	return est / share
}

// safety multiplies the gap left that the checkpoints measure: the
// estimate must hold when the run claims the target, and its parts are
// noisy.
const safety = 4

// fitInverse fits f = a + b/n by least squares to the points (n, f) and
// returns a, with ok false where the fit has no falling part (b <= 0).
func fitInverse(pts [][2]float64) (float64, bool) {
	var su, sf, suu, suf float64
	k := float64(len(pts))
	for _, p := range pts {
		u := 1 / math.Max(p[0], 1)
		su += u
		sf += p[1]
		suu += u * u
		suf += u * p[1]
	}
	den := k*suu - su*su
	if !(den > 0) {
		return 0, false
	}
	b := (k*suf - su*sf) / den
	if !(b > 0) {
		return 0, false
	}
	return (sf - b*su) / k, true
}

// stallShare is the share of the budget over which a gap estimate that
// no longer falls is reported.
const stallShare = 0.2

// watch tracks the lowest gap estimate and warns, once, when it has not
// fallen over stallShare of the budget.
func (r *runner) watch(est float64, p *Plan) {
	if r.bestAt == 0 || est < r.best*0.9 {
		r.best, r.bestAt = est, r.used
		return
	}
	if float64(r.used-r.bestAt) < stallShare*float64(r.s.Target.Budget) {
		return
	}
	if r.warned {
		return
	}
	r.warned = true
	cause := fmt.Sprintf("the objective at the averaged iterate is not falling beyond its noise while the step fell to %.3g", r.step)
	if r.step < 1e-6*p.Steps0() {
		cause += ": the step has been halved to a crawl, so the steps are too small to move the iterate (a gradient far larger at x0 than near the optimum, for example inner exponentials so large at x0 that only tiny steps are stable, sets the first step; try scaling the parameters or another x0)"
	} else {
		cause += fmt.Sprintf(": the estimator's noise (predicted variance %.3g) or the bias of L = %d may dominate (a larger budget, a deeper L, or a larger gap)", r.noiseVar(p), p.MaxLevel)
	}
	w := fmt.Sprintf("the gap estimate has stayed at %.3g since %d samples (over %.0f%% of the budget): %s", r.best, r.bestAt, 100*stallShare, cause)
	r.rec.Warnings = append(r.rec.Warnings, w)
	r.logf("auto warning: %s\n", w)
}

// Steps0 is the largest step candidate the plan's search scored (0
// without a search).
func (p *Plan) Steps0() float64 {
	m := 0.0
	for _, s := range p.Steps {
		m = math.Max(m, s.Step)
	}
	return m
}

// minStepIters is the fewest iterations the step rule runs each candidate
// for. One is not enough: the candidates share their draws, so a single
// iteration is a line search along one noisy estimate, and a run that
// cannot pay for one leaves every candidate at the starting point, its
// scores tied. Four: a stable candidate's error contracts as (1 - g
// lambda)^m along a direction of curvature lambda, and neighbours on the
// grid (a factor sqrt(10) apart) separate only over several iterations,
// while an unstable one grows as |1 - g lambda|^m.
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

// chooseStep is the step rule, run for every new method: from the current
// x, each candidate runs the plan's estimator on the same draws for an
// equal share of budget samples and is scored by the objective where it
// ends (the largest first; scoreSteps stops where smaller ones are not
// expected to win); the lowest score wins, ties within twice their standard error
// going to the smaller step, and the step is one notch (a factor
// sqrt(10)) below it, since a short run favours steps too large for a
// long one. Then the variance cap: the step's noise floor, step x Var / 4
// with Var the plan's predicted variance of the moving part of its
// estimates (noiseVar), is at most eps x the drop the candidates
// measured. The run continues from where the winning candidate ended:
// its samples are spent.
func (r *runner) chooseStep(p *Plan, steps []float64, budget int64, eps float64) (err error) {
	defer r.takeOver(p)(&err)
	fx, _ := r.s.Score(r.x)
	from := slices.Clone(r.x)
	for try := 0; ; try++ {
		copy(r.x, from)
		copy(r.avg, from)
		if err := r.scoreSteps(p, steps, budget, eps); err != nil {
			return err
		}
		best := math.Inf(1)
		for _, sc := range p.Steps {
			best = math.Min(best, sc.Value)
		}
		// No candidate lowered F (a start where the first steps go
		// uphill, as at a degenerate point): the short runs say nothing
		// of the step but that the smallest moved least. Longer runs,
		// from the same point, up to three times.
		if best < fx || try == 3 || r.used+2*budget > r.s.Target.Budget/5 {
			break
		}
		p.Reasons.Step = ""
		p.Steps = nil
		budget *= 2
	}
	return nil
}

// scoreSteps runs and scores the step candidates (chooseStep).
func (r *runner) scoreSteps(p *Plan, steps []float64, budget int64, eps float64) error {
	// Largest first: on the same draws a short run's end usually rises as
	// the step shrinks below the best, so once two smaller candidates in
	// a row end clearly (beyond the ties' 2 s.e.; a diverged one counts)
	// above the best so far, the smaller ones, which move less still, are
	// not expected to win and are not run (a heuristic: where the ends
	// are not unimodal in the step, a better small step is missed).
	steps = slices.Clone(steps)
	slices.SortFunc(steps, func(a, b float64) int { return cmp.Compare(b, a) })
	p.Steps = p.Steps[:0]
	share := budget / int64(len(steps))
	ls, worst, ok := p.stepLevel(share)
	if !ok {
		// Fewer candidates rather than none: keep the middle of the grid.
		for len(steps) > 3 && !ok {
			steps = steps[1 : len(steps)-1]
			share = budget / int64(len(steps))
			ls, worst, ok = p.stepLevel(share)
		}
		if !ok {
			return &Error{Measurement: fmt.Sprintf("the step rule gives each of its %d candidates %d samples, fewer than the %d iterations it needs (%d samples each at level %d, the cheapest)",
				len(steps), share, minStepIters, worst, ls),
				Change: "give the run a larger sample budget (the pilots are a share of it), or set the step"}
		}
	}
	p.StepLevel = ls
	x, prev := slices.Clone(r.x), slices.Clone(r.x)
	ends := make([][]float64, len(steps))
	seed := r.seed(0x57e9)
	var spent int64
	worse := 0
	for ci, g := range steps {
		if worse >= stepsPastBest {
			break
		}
		copy(x, r.x)
		copy(prev, r.x)
		inst, err := r.p.NewOracle(seed)
		if err != nil {
			return fmt.Errorf("auto: step rule: make the oracle: %w", err)
		}
		m := sgd.Method{Kind: p.Kind, Config: p.configAt(ls, seed)}
		res, err := sgd.Minimize(r.p, inst, m, sgd.Constant(g), sgd.Settings{X: r.x, Budget: share, StopAt: max(share-worst, 1)})
		if err != nil {
			return fmt.Errorf("auto: step rule: %w", err)
		}
		r.segments = append(r.segments, Segment{Method: m, Step: g, Start: slices.Clone(r.x), OracleSeed: seed, Until: share, Iterations: res.Iterations, Probe: true})
		spent += res.Drawn
		sc := StepScore{Step: g, Value: math.Inf(1), Iterations: res.Iterations}
		if !res.Diverged {
			f, se := r.s.Score(res.X)
			if !math.IsNaN(f) {
				sc.Value, sc.SE = f, se
			}
			ends[ci] = res.X
		}
		p.Steps = append(p.Steps, sc)
		worse = 0
		if best := bestStep(p.Steps); best >= 0 {
			for _, s := range p.Steps[best+1:] {
				if s.Value-p.Steps[best].Value > 2*math.Max(s.SE, p.Steps[best].SE) {
					worse++
				} else {
					worse = 0
				}
			}
		}
	}
	r.used += spent
	r.pilot += spent
	best := bestStep(p.Steps)
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
	p.Step = p.Steps[pick].Step / math.Sqrt(10)
	p.Reasons.Step = fmt.Sprintf("a factor sqrt(10) below %.3g, the lowest objective after %d samples with each of %d candidates on the same draws (%.4g at step %.3g; ties within 2 s.e. go to the smaller step)",
		p.Steps[pick].Step, share, len(p.Steps), p.Steps[best].Value, p.Steps[best].Step)
	if len(p.Steps) < len(steps) {
		p.Reasons.Step += fmt.Sprintf("; the %d smaller candidates were not run: the %d below the best ended clearly above it", len(steps)-len(p.Steps), stepsPastBest)
	}
	if ls < p.MaxLevel {
		p.Reasons.Step += fmt.Sprintf("; the candidates ran on levels %d..%d, not %d..%d, to fit %d iterations each", p.MinLevel, ls, p.MinLevel, p.MaxLevel, minStepIters)
	}
	if p.Steps[pick].Step == slices.Max(steps) || p.Steps[pick].Step == slices.Min(steps) {
		p.Reasons.Step += "; at the edge of the candidates"
	}
	// The gap is relative to F(x0) - F*, which is at least the drop from
	// F(x0) to the best candidate's score.
	r.capStep(p, r.f0-p.Steps[best].Value)
	copy(r.x, ends[best])
	copy(r.avg, r.x)
	return nil
}

// stepsPastBest is how many candidates in a row, each smaller than the
// best so far and clearly above it, end the step search.
const stepsPastBest = 2

// bestStep is the index of the lowest finite score, -1 without one.
func bestStep(scores []StepScore) int {
	best := -1
	for i, sc := range scores {
		if !math.IsInf(sc.Value, 1) && (best < 0 || sc.Value < scores[best].Value) {
			best = i
		}
	}
	return best
}

// recheckStep checks the last stage's step for a new method (another
// estimator or L): near the optimum a search among candidates on short
// runs favours the step that moves least, so the step is kept, lowered to
// the new method's variance cap (capStep), and halved while a short run of
// it on the new method leaves F's domain or rises above F(x0) by more than
// ten times F(x0) - F (near the optimum a short run's last iterate sits at
// its noise floor, above F), the run continuing from where the last check
// ended.
func (r *runner) recheckStep(p *Plan, budget int64) (err error) {
	defer r.takeOver(p)(&err)
	p.Step = r.step
	p.Reasons.Step = fmt.Sprintf("the last step %.3g, re-checked for the new method", r.step)
	f, _ := r.s.Score(r.x)
	if old := r.plan; old != nil && old.uncapped > r.step {
		// The last step was held down by the last plan's own noise (the
		// variance cap): a plan whose estimates are less noisy affords a
		// step larger in proportion at the same noise floor, up to the
		// step the cap lowered, the rest of the check as for any step.
		// The new plan's variance is taken at its upper bound: a
		// re-measure has few draws, which read heavy-tailed noise low
		// more often than not.
		vOld, vNew := r.noiseVar(old), r.noiseVarHigh(p)
		if g := math.Min(old.uncapped, r.step*vOld/vNew); vNew > 0 && g > p.Step {
			p.Reasons.Step = fmt.Sprintf("the last step %.3g, which the last plan's variance cap set, raised to %.3g: the moving part of this plan's predicted variance at its upper bound (each measured level's variance plus twice its standard error), %.3g, is %.3g times below the last's (the same noise floor), at most the step before that cap, %.3g",
				r.step, g, vNew, vOld/vNew, old.uncapped)
			p.Step = g
		}
	}
	r.capStep(p, r.f0-f)
	ls, worst, _ := p.stepLevel(budget / 4)
	for range maxHalvings {
		oracleSeed := r.seed(0xc4ec)
		inst, err := r.p.NewOracle(oracleSeed)
		if err != nil {
			return fmt.Errorf("auto: step check: make the oracle: %w", err)
		}
		m := sgd.Method{Kind: p.Kind, Config: p.configAt(ls, r.seed(0xc4ed))}
		res, err := sgd.Minimize(r.p, inst, m, sgd.Constant(p.Step), sgd.Settings{X: r.x, Budget: budget / 4, StopAt: max(budget/4-worst, 1)})
		if err != nil {
			return fmt.Errorf("auto: step check: %w", err)
		}
		r.segments = append(r.segments, Segment{Method: m, Step: p.Step, Start: slices.Clone(r.x), OracleSeed: oracleSeed, Until: budget / 4, Iterations: res.Iterations, Probe: true})
		r.used += res.Drawn
		r.pilot += res.Drawn
		// Only a rise far beyond the noise counts: near the optimum a short
		// run's last iterate sits at its noise floor, which may be above
		// F(x0) when F(x0) - F* is small.
		g, _ := r.s.Score(res.X)
		if !res.Diverged && !math.IsNaN(g) && !math.IsInf(g, 0) && g <= r.f0+10*math.Abs(r.f0-f) {
			copy(r.x, res.X)
			copy(r.avg, r.x)
			return nil
		}
		p.Step /= 2
		// Halved for instability, not noise: a later plan's raise (the
		// uncapped rule) never climbs back above it.
		if p.uncapped > p.Step {
			p.uncapped = p.Step
		}
		p.Reasons.Step += fmt.Sprintf("; halved to %.3g: a short run left F's domain or rose above F(x0)", p.Step)
	}
	return nil
}

// capStep lowers an RT-MLMC plan's step so that its noise floor, step x Var / 4
// with Var the predicted variance of the moving part of its estimates
// (noiseVar: the projection and the preconditioner counted), is at most
// capShare of drop, a lower bound on F(x0) - F*, times the gap the stage
// started from (startGap): a later stage starts near the optimum, and a
// floor of the whole of F(x0) - F* throws its iterates back to where the
// first stage began; their average, which falls only as the iterates'
// noise averages out (and, where F is not quadratic or the projection
// is active, towards a point a constant step biases), then crawls at a
// gap far above the stage's target while it never stops falling, so the
// stationarity test does not halve the step.
func (r *runner) capStep(p *Plan, drop float64) {
	if p.Kind.Method != mlmc.RTMLMC {
		// The cap guards against what a short run rarely meets, RT-MLMC's
		// rare draws of its costly, noisy top levels; the other methods'
		// noise is in every draw, and the step search has seen it. A cap
		// on a drop that short runs barely measured would only crawl.
		return
	}
	if g := r.startGap; g > 0 && g < 1 {
		drop *= g
	}
	v := r.noiseVar(p)
	if math.IsInf(v, 1) {
		// A law whose variance has no finite prediction (a level drawn
		// too rarely for its spread): no floor to set, and a cap would
		// stop the run (step 0). The step stays as chosen (searched, or
		// kept from the last plan).
		p.Reasons.Step += "; not capped: the predicted variance of the estimates' moving part is infinite"
		return
	}
	if !(v > 0) || !(drop > 0) || 2*capShare*drop/v >= p.Step {
		return
	}
	p.Reasons.Step += fmt.Sprintf("; capped from %.3g to %.3g so that its noise floor (step x Var / 4, Var = %.3g the predicted variance of the estimates' moving part) is at most %g of (F(x0) - F) x the gap the stage started from, %.4g",
		p.Step, 2*capShare*drop/v, v, capShare, drop)
	p.uncapped = max(p.uncapped, p.Step)
	p.Step = 2 * capShare * drop / v
}

// capShare is the most of the gap a stage starts from, in units of
// F(x0) - F*, that the noise floor of a step, step x Var / 4, may be. Not
// the stage's target: the stage's answer is the average of its iterates,
// whose error falls below the floor of its iterates; the stationarity
// test halves the step where the average stops improving.
const capShare = 1.0

// predictedVar is the predicted variance of the plan's estimator.
func (p *Plan) predictedVar() float64 { return methodVar(p.Predicted, p.Method) }

// predictedVarHigh is predictedVar's upper bound (Plan.predictedHigh).
func (p *Plan) predictedVarHigh() float64 { return methodVar(p.predictedHigh, p.Method) }

// methodVar is the variance costs give method, NaN where they hold none.
func methodVar(costs []MethodCost, method string) float64 {
	for _, m := range costs {
		if m.Method == method {
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

// Summary is the record in a few lines: one per stage.
func (rec *Record) Summary() string {
	var sb strings.Builder
	for i, st := range rec.Stages {
		method := "no plan"
		if len(st.Plans) > 0 {
			p := st.Plans[len(st.Plans)-1]
			method = fmt.Sprintf("%s L=%d", p.Method, p.MaxLevel)
		}
		fmt.Fprintf(&sb, "stage %d: target %.3g, %s, step %.3g, %d samples, gap estimate %s: %s\n",
			i+1, st.Target, method, st.Step, st.Samples, fmtGap(float64(st.GapEstimate)), st.Why)
	}
	return sb.String()
}
