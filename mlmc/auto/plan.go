package auto

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
)

// Error says why auto cannot serve a problem: the measurement that rules
// it out and what to change.
type Error struct {
	Measurement string
	Change      string
}

func (e *Error) Error() string {
	return "auto cannot serve this problem: " + e.Measurement + "; " + e.Change
}

// Target is what a run must reach.
type Target struct {
	// Gap is the relative optimality gap (F(x) - F*)/(F(x0) - F*) the run
	// aims at, in (0, 1).
	Gap float64 `json:"gap"`
	// Budget is the run's samples, the pilot's included.
	Budget int64 `json:"budget"`
}

// Rules are the stated constants of the choices. Zero values take the
// defaults stated on each field.
type Rules struct {
	// BiasShare is phi: L is the smallest level whose predicted gap from
	// bias is at most phi x Gap (default 0.1).
	BiasShare float64 `json:"-"`
	// Margin is how much smaller another method's predicted variance x
	// cost must be than the table's method's to replace it (default 2:
	// about the predictions' uncertainty, from K draws per level and the
	// extrapolation beyond the pilot's levels).
	Margin float64 `json:"margin"`
	// MinIterations is the fewest iterations a method's cost per
	// iteration must leave within the budget (default 1000): the table's
	// "requires mini-batch" row made concrete, since V-MLMC's n_l grow with L.
	MinIterations int `json:"min_iterations"`
	// EqualRates is the least tolerance within which b and c count as
	// equal: |b - c| <= max(2 SE(b), EqualRates) (default 0.1).
	EqualRates float64 `json:"equal_rates"`
	// BestFit chooses L on the best fit of the bias instead of its 95%
	// upper bound (Run's stages, which measure again and never lower L).
	BestFit bool `json:"best_fit,omitempty"`
}

func (r Rules) withDefaults() Rules {
	if r.BiasShare == 0 {
		r.BiasShare = 0.1
	}
	if r.Margin == 0 {
		r.Margin = 2
	}
	if r.MinIterations == 0 {
		r.MinIterations = 1000
	}
	if r.EqualRates == 0 {
		r.EqualRates = 0.1
	}
	return r
}

// Rate is a fitted rate and its standard error.
type Rate struct {
	Rate float64 `json:"rate"`
	SE   float64 `json:"se"`
}

// String is "1.00 ± 0.05", "1.00" without a standard error, "not fitted"
// without a rate.
func (r Rate) String() string {
	switch {
	case math.IsNaN(r.Rate):
		return "not fitted"
	case math.IsNaN(r.SE):
		return fmt.Sprintf("%.2f", r.Rate)
	}
	return fmt.Sprintf("%.2f ± %.2f", r.Rate, r.SE)
}

// nullable is a float64 as a plan's JSON holds it: a value that is not
// finite (not fitted, not bounded, diverged) is written as null, which JSON
// can hold and NaN not, and null is read back as NaN. Every float of a plan
// that may be unknown goes through it, so that each reads back as written.
type nullable float64

func (f nullable) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func (f *nullable) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*f = nullable(math.NaN())
		return nil
	}
	return json.Unmarshal(data, (*float64)(f))
}

// rateJSON is a Rate in JSON.
type rateJSON struct {
	Rate nullable `json:"rate"`
	SE   nullable `json:"se"`
}

// MarshalJSON writes a rate or standard error that could not be fitted as
// null.
func (r Rate) MarshalJSON() ([]byte, error) {
	return json.Marshal(rateJSON{nullable(r.Rate), nullable(r.SE)})
}

// UnmarshalJSON reads what MarshalJSON wrote, null (or a missing field) as
// NaN.
func (r *Rate) UnmarshalJSON(data []byte) error {
	v := rateJSON{nullable(math.NaN()), nullable(math.NaN())}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	r.Rate, r.SE = float64(v.Rate), float64(v.SE)
	return nil
}

// MethodCost is a method's predicted variance and cost per iteration at the
// plan's L, from the measured (and extrapolated) levels.
type MethodCost struct {
	Method string  `json:"method"`
	Var    float64 `json:"var"`
	Cost   float64 `json:"cost"` // samples per iteration
	// VarCost is Var x Cost: the samples needed for a given variance, the
	// per-iteration figure of the paper's bias-variance-cost comparison.
	VarCost float64 `json:"var_cost"`
}

// Plan is auto's choice, with the reason for each part: a serialisable
// value a run records.
type Plan struct {
	// At says where the levels were measured ("x0", or the re-plan point).
	At string `json:"at"`
	// Levels measured by the pilot, with Draws queries each.
	PilotMin   int   `json:"pilot_min_level"`
	PilotMax   int   `json:"pilot_max_level"`
	PilotDraws int   `json:"pilot_draws"`
	Samples    int64 `json:"pilot_samples"` // the measurement's samples
	// A is the table's a (the squared gradient bias decays as 2^(-a l),
	// twice the rate of |E H^l|); B and C the variance and cost rates.
	A      Rate   `json:"a"`
	B      Rate   `json:"b"`
	C      Rate   `json:"c"`
	Regime string `json:"regime"` // "b > c", "b = c", "b < c", or "H^l = 0"
	// Degenerate says every H^l vanished to rounding where the levels were
	// measured: no bias can be seen there (Run re-plans early).
	Degenerate bool `json:"degenerate,omitempty"`
	// GradNorm is |grad F(x0)|, BiasShare the predicted relative gap from
	// bias at L, (|bias_L| / |grad F(x0)|)^2.
	GradNorm  float64 `json:"grad_norm_x0"`
	BiasShare float64 `json:"-"`

	Kind     mlmc.Kind `json:"-"`
	Method   string    `json:"method"`
	MinLevel int       `json:"min_level"`
	MaxLevel int       `json:"max_level"`
	// LevelProbs (RT-MLMC) or LevelDraws (V-MLMC) is the law on
	// MinLevel..MaxLevel.
	LevelProbs []float64    `json:"level_probs,omitempty"`
	LevelDraws []int        `json:"level_draws,omitempty"`
	Predicted  []MethodCost `json:"predicted"`
	// Step is the step size (0 until a step rule has set it), Steps the
	// candidates and their scores.
	Step float64 `json:"step,omitempty"`
	// Decay is t0 of the step schedule Step/(1 + t/t0), t the iterations
	// since the plan took over (0: constant).
	Decay float64     `json:"decay_t0,omitempty"`
	Steps []StepScore `json:"steps,omitempty"`
	// StepLevel is the top level at which the step candidates ran: MaxLevel,
	// or a lower level when the step rule's share of the pilot pays for
	// fewer than minStepIters iterations of each candidate at MaxLevel.
	StepLevel int `json:"step_level"`

	Reasons Reasons `json:"reasons"`
	Target  Target  `json:"target"`
	Rules   Rules   `json:"rules"`

	// The bias bound's fit, log2 |E H^l| <= intercept - aG l, and how it
	// was made, for finish and the reasons.
	intercept, aG float64
	aNote         string
	notFalling    *Error
	// bestBias is the bias of the best fit alone (nil without a fit),
	// seen the levels whose mean stood out of its noise, vanishedFrom
	// the first level of a tail whose H^l vanished in all draws (0:
	// none), whose bias the best fit takes as zero.
	bestBias     func(L int) float64
	seen         int
	vanishedFrom int
	// costs are C_l on MinLevel..MaxLevel, measured or extrapolated, for
	// the step rule's cost per iteration at lower levels.
	costs []float64
	// biasScale is the factor the run's earlier stages put on the fit's
	// bias share when the plan was made (1: none).
	biasScale float64
	// uncapped is the step before the variance cap lowered it (0 where
	// it did not): what the plan's noise alone held it below.
	uncapped float64
	// predictedHigh is Predicted with each measured level's variance
	// raised by twice its standard error and its second moment by as
	// much (the means, and the |grad F^L|^2 RT-MLMC's variance subtracts,
	// at their measured values; the laws unchanged; levels above the
	// measured ones scaled from the raised top one; L-SGD's h^L
	// interpolated between the two rows' raised variances): an upper
	// bound a step raised on the plan's variance stands on. Only the
	// variances are raised: heavy-tailed noise, which few draws read low,
	// enters through them.
	predictedHigh []MethodCost
}

// Reasons says why each part of a Plan is what it is.
type Reasons struct {
	Method string `json:"method"`
	L      string `json:"L"`
	Law    string `json:"law"`
	Step   string `json:"step,omitempty"`
	// Outlook is what the plan predicts for the rest of the run, with the
	// risks of missing the target it can see (Start and Replan set it).
	Outlook string `json:"outlook,omitempty"`
}

// StepScore is one candidate of the step rule: the objective after a short
// run of Iterations iterations with that step (+Inf when it diverged).
type StepScore struct {
	Step       float64 `json:"step"`
	Value      float64 `json:"value"`
	SE         float64 `json:"se,omitempty"`
	Iterations int     `json:"iterations"`
}

// MarshalJSON writes a bias share that could not be bounded as null.
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan
	return json.Marshal(struct {
		plain
		BiasShare nullable `json:"bias_share"`
	}{plain(p), nullable(p.BiasShare)})
}

// UnmarshalJSON reads a recorded plan, its method by mlmc.ParseKind.
func (p *Plan) UnmarshalJSON(data []byte) error {
	type plain Plan
	v := struct {
		*plain
		BiasShare nullable `json:"bias_share"`
	}{plain: (*plain)(p), BiasShare: nullable(math.NaN())}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	p.BiasShare = float64(v.BiasShare)
	k, err := mlmc.ParseKind(p.Method)
	if err != nil {
		return fmt.Errorf("auto plan: %w", err)
	}
	p.Kind = k
	return nil
}

// Config is the estimator configuration of the plan.
func (p *Plan) Config(seed uint64) mlmc.Config {
	return mlmc.Config{MinLevel: p.MinLevel, MaxLevel: p.MaxLevel, Seed: seed,
		LevelProbs: p.LevelProbs, LevelDraws: p.LevelDraws}
}

// String is the plan as a run prints it: each choice with its reason.
func (p *Plan) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "auto plan at %s: %s on levels %d..%d", p.At, p.Method, p.MinLevel, p.MaxLevel)
	if p.Step > 0 {
		fmt.Fprintf(&sb, ", step %.3g", p.Step)
	}
	if p.Decay > 0 {
		fmt.Fprintf(&sb, "/(1 + t/%.0f)", p.Decay)
	}
	fmt.Fprintf(&sb, "\n  pilot: levels %d..%d, %d draws each, %d samples; a = %s, b = %s, c = %s (%s)\n",
		p.PilotMin, p.PilotMax, p.PilotDraws, p.Samples, p.A, p.B, p.C, p.Regime)
	fmt.Fprintf(&sb, "  method: %s\n  L: %s\n  law: %s\n", p.Reasons.Method, p.Reasons.L, p.Reasons.Law)
	if p.Reasons.Step != "" {
		fmt.Fprintf(&sb, "  step: %s\n", p.Reasons.Step)
	}
	if p.Reasons.Outlook != "" {
		fmt.Fprintf(&sb, "  outlook: %s\n", p.Reasons.Outlook)
	}
	return sb.String()
}

// level is one level's statistics as the plan uses them: measured within
// the pilot's levels, extrapolated with the fitted rates above them.
type level struct {
	l                  int
	varY, moment2, img float64
	measured           bool
}

// GradNorm is |grad F^Lp(x)| at the measurement's parameters: the norm of
// the mean of its h^Lp draws, less the part noise adds (E|mean|^2 =
// |E h|^2 + Var/K). It is 0 when noise explains the whole norm.
func GradNorm(rep *mlmc.LevelsReport) float64 {
	t := rep.Top
	return math.Sqrt(math.Max(t.MeanNorm*t.MeanNorm-t.Var/float64(t.Draws), 0))
}

// Choose makes the plan of one measurement: rep measured at the point
// named at, gradNorm0 = |grad F(x0)| (GradNorm of the measurement at x0),
// for target t with rules r, over an oracle serving levels up to oracleMax
// (mlmc.Unbounded for any). It is a pure function; the step is left 0.
func Choose(rep *mlmc.LevelsReport, at string, samples int64, gradNorm0 float64, t Target, r Rules, oracleMax int) (*Plan, error) {
	return ChooseFrom(rep, at, samples, gradNorm0, t, r, oracleMax, rep.MinLevel)
}

// ChooseFrom is Choose with L at least floor: a continuation's stage never
// lowers L below the largest an earlier stage needed, since the bias
// measured at a looser target is no reason to lose the accuracy a tighter
// one bought.
func ChooseFrom(rep *mlmc.LevelsReport, at string, samples int64, gradNorm0 float64, t Target, r Rules, oracleMax int, floor int) (*Plan, error) {
	r = r.withDefaults()
	if !(t.Gap > 0 && t.Gap < 1) {
		return nil, fmt.Errorf("auto: target gap %g is not in (0, 1): it is relative to the gap at x0", t.Gap)
	}
	p, bias, err := fit(rep, at, samples, gradNorm0, t, r, true)
	if err != nil {
		return nil, err
	}
	if p.notFalling != nil {
		return nil, p.notFalling
	}
	share := func(L int) float64 { return math.Pow(bias(L)/gradNorm0, 2) }
	boundNote := ""
	if r.BestFit && p.bestBias != nil {
		// A continuation measures again at every stage and never lowers
		// L: the best fit of the bias (Giles' |E H^L| / (2^a - 1) pooled
		// over the levels), not its 95% bound, which noise alone can put
		// a dozen levels too deep.
		share = func(L int) float64 { return math.Pow(p.bestBias(L)/gradNorm0, 2) }
		boundNote = " (the best fit of the bias, not its 95% bound: later stages measure again)"
	}
	limit := r.BiasShare * t.Gap
	cap := rep.MinLevel + 40
	if oracleMax != mlmc.Unbounded {
		cap = oracleMax
	}
	L := rep.MinLevel
	for L < cap && share(L) > limit {
		L++
	}
	// unseen is the reason for L where no level's mean stands out of its
	// noise, fallback the note where the bound meets the rule at no level.
	unseen, fallback := "", ""
	if r.BestFit && p.bestBias != nil && p.seen == 0 {
		// No level's mean stands out of its noise: the fit of the bias
		// is a fit to noise, and its rate says nothing (a near-zero
		// rate fitted to noise puts L a dozen levels deep, where
		// RT-MLMC's rare, costly draws have a variance that no step
		// survives), nor a shallow one (a fast rate fitted to noise puts
		// L below levels whose bias the pilot could not see, and a run at
		// L = l_min then sits at the minimiser of F^(l_min)). The pilot's
		// top level is as deep as the pilot can see a bias; later stages
		// measure again, and raise L.
		top, tail := rep.MaxLevel, ""
		if p.vanishedFrom > 0 {
			// The levels from vanishedFrom on showed no H^l at all: the
			// deepest level whose bias the pilot could see is the one
			// before them, and the best fit takes those above as zero.
			top = p.vanishedFrom - 1
			tail = fmt.Sprintf("; H^l vanished in all %d draws from level %d on, whose bias the best fit takes as zero (the law keeps the rule of three)", rep.Draws, p.vanishedFrom)
		}
		L = min(top, cap)
		unseen = fmt.Sprintf("the pilot's top level that did not vanish, %d: no |E H^l| stands out of its noise at any level above the minimum, so the fitted rate (a = %.2f) is not trusted and no bias was seen below it%s; |grad F(x0)| = %.3g", L, p.A.Rate, tail, gradNorm0)
		share = func(int) float64 { return 0 }
	}
	if share(L) > limit && p.bestBias != nil && unseen == "" {
		// The bound is statistical: with the levels' means lost in their
		// noise it may not meet the rule at any level. The best fit then
		// decides, and the plan says so.
		best := func(L int) float64 { return math.Pow(p.bestBias(L)/gradNorm0, 2) }
		for L = rep.MinLevel; L < cap && best(L) > limit; L++ {
		}
		if best(L) <= limit {
			fallback = fmt.Sprintf("; the 95%% bound meets the rule at no level up to %d (%.3g there), so the best fit decides (its share %.3g at L)", cap, share(cap), best(L))
		}
	}
	if share(L) > limit && fallback == "" {
		return nil, &Error{Measurement: fmt.Sprintf("at the largest level the oracle serves (%d) the bound on the gap from bias is %.3g of the gap at x0 (a = %.2f%s), above %g x %g",
			L, share(L), p.A.Rate, p.aNote, r.BiasShare, t.Gap),
			Change: "ask for a larger gap, serve deeper levels, or give the pilot more draws (a larger run budget): the bound is statistical, and a bias lost in the levels' noise is bounded by the noise"}
	}
	floorNote := ""
	if floor > L {
		L = min(floor, cap)
		floorNote = fmt.Sprintf("; raised to %d, the largest L an earlier stage needed", L)
	}
	p.MaxLevel, p.BiasShare = L, share(L)
	if unseen != "" {
		p.Reasons.L = unseen + floorNote
	} else {
		p.Reasons.L = fmt.Sprintf("the smallest level whose predicted gap from bias, (|bias_L| / |grad F(x0)|)^2 = %.3g, is at most %g x the target gap %g; |bias_L| = %.3g extrapolated with a = %.2f%s, |grad F(x0)| = %.3g%s",
			p.BiasShare, r.BiasShare, t.Gap, math.Sqrt(p.BiasShare)*gradNorm0, p.A.Rate, p.aNote, gradNorm0, fallback) + boundNote + floorNote
	}
	p.finish(rep, t, r)
	return p, nil
}

// ChooseAtLevel makes the plan of a measurement whose top level is the
// objective's own, as for SimCLR, whose objective is the loss of a batch of
// 2^L images (the run's L): the method and the law at L = rep.MaxLevel by
// the same rules as Choose, for a run of t.Budget samples (t.Gap is not
// used). The bias share is reported for information.
func ChooseAtLevel(rep *mlmc.LevelsReport, at string, samples int64, t Target, r Rules) (*Plan, error) {
	r = r.withDefaults()
	g := GradNorm(rep)
	p, bias, err := fit(rep, at, samples, g, t, r, false)
	if err != nil {
		return nil, err
	}
	p.MaxLevel = rep.MaxLevel
	p.BiasShare = math.Pow(bias(p.MaxLevel-1)/g, 2)
	if p.notFalling != nil || !(g > 0) {
		p.BiasShare = math.NaN() // not bounded, or |grad F| lost in the pilot's noise
	}
	p.Reasons.L = fmt.Sprintf("the run's top level: its objective is the level-%d loss itself", p.MaxLevel)
	if math.IsNaN(p.BiasShare) {
		p.Reasons.L += "; the last correction's share of |grad F|^2 is not bounded (|grad F| lost in the pilot's noise, or the bias bound not falling)"
	} else {
		p.Reasons.L += fmt.Sprintf("; the last correction's predicted share of |grad F|^2, (|bias_(L-1)| / |grad F|)^2, is %.3g", p.BiasShare)
	}
	p.finish(rep, t, r)
	return p, nil
}

// fit reads the regime, the rates and the bias bound from a measurement:
// bias(L) bounds |grad F^L - grad F|.
func fit(rep *mlmc.LevelsReport, at string, samples int64, gradNorm0 float64, t Target, r Rules, needGrad bool) (*Plan, func(int) float64, error) {
	if len(rep.Levels) < 3 {
		return nil, nil, &Error{Measurement: fmt.Sprintf("the pilot measured %d levels", len(rep.Levels)),
			Change: "the rates need three: give the pilot a larger budget"}
	}
	p := &Plan{At: at, PilotMin: rep.MinLevel, PilotMax: rep.MaxLevel, PilotDraws: rep.Draws, Samples: samples,
		GradNorm: gradNorm0, Target: t, Rules: r, MinLevel: rep.MinLevel}
	finite := 0
	for _, st := range rep.Levels {
		if !math.IsNaN(st.Var) && !math.IsInf(st.Var, 0) && !math.IsNaN(st.Moment2) && !math.IsInf(st.Moment2, 0) {
			finite++
		}
	}
	if finite == 0 {
		return nil, nil, &Error{Measurement: fmt.Sprintf("the variance of H^l is not finite at any of levels %d..%d (%d draws each)",
			rep.MinLevel, rep.MaxLevel, rep.Draws),
			Change: "the oracle's gradients are not finite at these parameters: check the oracle at x0 (its NaNs or infinities) or start from another x0"}
	}
	// H^l that vanish to rounding at every level above the minimum: the
	// levels agree here (for DRO's linear model at x = 0 every inner draw
	// gives the same loss), so there is no bias to correct at this point
	// and no rate to fit.
	scale := rep.Levels[0].Moment2
	if vanishesAbove(rep) {
		p.Regime = "H^l = 0"
		p.Degenerate = true
		p.A, p.B, p.C = Rate{math.NaN(), math.NaN()}, Rate{math.NaN(), math.NaN()}, Rate{rep.FitCImages.Rate, 0}
		p.aNote = fmt.Sprintf(" (|H^l| is below %g |h^%d| at every level above it: zero to rounding)", roundingShare, rep.MinLevel)
		p.intercept, p.aG = math.Inf(-1), 1
		return p, func(int) float64 { return 0 }, nil
	}
	if needGrad && (!(gradNorm0 > 0) || math.IsInf(gradNorm0, 0)) {
		top := rep.Top
		return nil, nil, &Error{Measurement: fmt.Sprintf("|grad F(x0)| is not above the pilot's noise: read as %.3g (along the feasible set where the iterate is projected); the pilot's top row, unprojected, has |mean h^%d| = %.3g over %d draws, noise %.3g",
			gradNorm0, top.Level, top.MeanNorm, top.Draws, math.Sqrt(top.Var/float64(top.Draws))),
			Change: "the gap is relative to x0's: start from a point that is not already optimal, or give the pilot a larger budget"}
	}
	// b and c from mlmc's fits; the cost in samples, the unit of the budget.
	p.B = Rate{rep.FitB.Rate, rep.FitB.SE}
	p.C = Rate{rep.FitCImages.Rate, rep.FitCImages.SE}
	if math.IsNaN(p.C.SE) {
		p.C.SE = 0
	}
	if !(p.C.Rate > 0) {
		return nil, nil, &Error{Measurement: fmt.Sprintf("the cost per query does not grow with the level (fitted c = %.3g on levels %d..%d)", p.C.Rate, rep.MinLevel, rep.MaxLevel),
			Change: "levels that cost the same give no reason for MLMC: use the top level directly (L-SGD) or check the oracle's Draw costs"}
	}
	// Levels whose H^l vanishes to rounding (a coupled construction whose
	// two halves have coalesced): no bias and no variance there. When they
	// are the top levels, F^l stops changing above the last level that
	// does not vanish as far as the pilot's draws show: the best fit
	// takes the bias of any L at or above it as zero, the 95% bound is
	// the rule of three.
	zeroTail := rep.MaxLevel + 1 // the first level of the vanishing tail
	for i := len(rep.Levels) - 1; i >= 1 && rep.Levels[i].Moment2 <= roundingShare*roundingShare*scale; i-- {
		zeroTail = rep.Levels[i].Level
	}
	fitLevels := rep.Levels[1 : zeroTail-rep.MinLevel]
	bRate := p.B.Rate
	if math.IsNaN(bRate) || zeroTail <= rep.MaxLevel || rep.Levels[0].Draws != rep.Draws {
		// mlmc's fit needs every variance positive, and is of the first
		// measurement's rows: fit on the rows used, where positive.
		var ls, ys []float64
		for _, st := range fitLevels {
			if st.Var > 0 && !math.IsInf(st.Var, 0) {
				ls = append(ls, float64(st.Level))
				ys = append(ys, math.Log2(st.Var))
			}
		}
		if len(ls) >= 2 {
			sl, _, se := mlmc.LineFit(ls, ys)
			p.B = Rate{-sl, se}
			bRate = -sl
		}
	}
	if math.IsNaN(bRate) {
		return nil, nil, &Error{Measurement: "the variance rate b could not be fitted: " + rep.FitB.Note,
			Change: "give the pilot a larger budget (more draws per level) or check that H^l's variance is finite"}
	}
	switch tol := math.Max(2*p.B.SE, r.EqualRates); {
	case math.Abs(bRate-p.C.Rate) <= tol || math.IsNaN(p.B.SE) && math.Abs(bRate-p.C.Rate) <= r.EqualRates:
		p.Regime = "b = c"
	case bRate > p.C.Rate:
		p.Regime = "b > c"
	default:
		p.Regime = "b < c"
	}

	// The bias: |E H^l|^2 = A 2^(-2 a_g (l - l1)) fitted by weighted least
	// squares to y_l = |mean|^2 - Var/K, an unbiased estimate of |E H^l|^2,
	// over every level above the minimum (pooling them resolves a bias no
	// single level's noise shows), for each a_g on a grid; the bias bound of
	// level L is the largest among the fits the measurement cannot reject
	// (chi^2 within 4 of the best, about 95%) with a_g >= b/2 (|E H^l|^2 <=
	// E|H^l|^2, which falls at b), each with A at its upper 2-s.e. value.
	if len(fitLevels) < 2 {
		// At most one level before the vanishing tail: its mean is the
		// whole bias below it. No best fit here: a continuation bounds
		// the tail by the rule of three. (A measurement reaches this
		// only where the vanished rows keep rounding residues of
		// positive variance for b's fit; with exact zeros b cannot be
		// fitted from the one level below the tail, and fit fails
		// first.)
		p.A = Rate{math.NaN(), math.NaN()}
		p.aNote = fmt.Sprintf(" (H^l vanished in all %d draws from level %d on: its bias is bounded by the rule of three, not taken as zero)", rep.Draws, zeroTail)
		p.intercept, p.aG = math.Inf(-1), 1
		tail := zeroTailBias(rep, zeroTail)
		return p, func(L int) float64 {
			if L >= zeroTail-1 {
				return tail(L)
			}
			st := rep.Levels[zeroTail-1-rep.MinLevel]
			return math.Sqrt(math.Max(st.Moment2, 0))
		}, nil
	}
	bf, err := fitBias(fitLevels, bRate)
	if err != nil {
		return nil, nil, err
	}

	if zeroTail <= rep.MaxLevel {
		// The levels vanish from zeroTail on: whatever the means do below
		// it (a queue's transient grows before the couplings coalesce),
		// the bias at or above zeroTail-1 is the tail's (the rule of
		// three; zero under the best fit), not the fit's.
		bf.zeroFrom, bf.notFalling = zeroTail, ""
		bf.tail = zeroTailBias(rep, zeroTail)
	}
	if bf.notFalling != "" {
		p.notFalling = &Error{Measurement: bf.notFalling,
			Change: "the levels do not approximate one objective ever more closely: check the oracle's H^l (the telescoping check of the levels' report) or its level construction"}
	}
	p.A = Rate{2 * bf.best, 2 * bf.se}
	aG, intercept := math.Max(bf.best, bf.low), 0.5*math.Log2(bf.ampUp(bf.best))+math.Max(bf.best, bf.low)*bf.l1
	p.bestBias = func(L int) float64 {
		if bf.zeroFrom > 0 && L >= bf.zeroFrom-1 {
			// The best fit of a level whose H^l vanished in all K draws:
			// P(H^l != 0) at its most likely value given none of K
			// draws, zero, as the best fit takes the fitted levels at
			// their most likely means. The rule of three is the 95%
			// bound, which the best fit does not use anywhere else; the
			// law's variance keeps it (where a floor puts L in the
			// tail, such a level is still drawn), and a later stage's
			// pilot that reaches those levels, with draws of its own,
			// may see a tail that does not vanish.
			return 0
		}
		a := math.Max(bf.best, bf.low)
		return math.Sqrt(math.Max(bf.amp[bf.index(a)], 0)) * math.Exp2(-a*(float64(L+1)-bf.l1)) / (1 - math.Exp2(-a))
	}
	aNote := fmt.Sprintf(" (|E H^l| stands out of its noise at %d of %d levels; the bound is the largest of the fits with a >= %.2f that the measurement does not reject)",
		bf.seen, bf.n, 2*bf.low)
	if bf.zeroFrom > 0 {
		if r.BestFit {
			aNote += fmt.Sprintf("; H^l vanished in all %d draws from level %d on: the best fit takes the bias at or above level %d at its most likely value, zero, and the 95%% bound there, the rule of three (P(H^l != 0) <= 3/K), stays in the law", rep.Draws, bf.zeroFrom, bf.zeroFrom-1)
		} else {
			aNote += fmt.Sprintf("; H^l vanished in all %d draws from level %d on, so the bias at or above level %d is bounded by the rule of three (P(H^l != 0) <= 3/K), not taken as zero", rep.Draws, bf.zeroFrom, bf.zeroFrom-1)
		}
	}
	p.aNote = aNote
	p.seen, p.vanishedFrom = bf.seen, bf.zeroFrom
	p.intercept, p.aG = intercept, aG
	return p, bf.bias, nil
}

// rateGrid is the bias fits' grid of rates a, -1 to 4 in steps of 0.01,
// and 2^-a at each: read only, shared by every fit.
var rateGrid = func() (g struct{ a, half []float64 }) {
	const step = 0.01
	for a := -1.0; a <= 4+step/2; a += step {
		g.a = append(g.a, a)
		g.half = append(g.half, math.Exp2(-a))
	}
	// Clipped: an append to a fit's copy never writes into the shared
	// arrays.
	n := len(g.a)
	g.a, g.half = g.a[:n:n], g.half[:n:n]
	return g
}()

// biasFit is the pooled fit of |E H^l|^2 = A 2^(-2 a (l - l1)) over the
// levels above the minimum.
type biasFit struct {
	ls, ys, ws []float64
	l1         float64
	grid       []float64 // a on the grid (rateGrid's, read only)
	half       []float64 // 2^-a at each a
	bestIndex  int       // the grid's least chi^2
	amp, ase   []float64 // A and its standard error at each a
	chi2       []float64
	best, se   float64 // the best a and half the width of chi^2 <= min + 1
	low        float64 // the least a the bound admits, max(b/2, 0.05)
	seen, n    int
	notFalling string
	// zeroFrom, when positive, is the first level of a vanishing tail:
	// the bias of L >= zeroFrom-1 is tail(L).
	zeroFrom int
	tail     func(L int) float64
}

func (f *biasFit) ampUp(a float64) float64 {
	i := f.index(a)
	return math.Max(f.amp[i], 0) + 2*f.ase[i]
}

func (f *biasFit) index(a float64) int {
	i := int(math.Round((a - f.grid[0]) / (f.grid[1] - f.grid[0])))
	return min(max(i, 0), len(f.grid)-1)
}

// bias bounds |grad F^L - grad F| = |sum over l > L of E H^l| by the
// largest tail sum, sqrt(A_up) 2^(-a (L+1-l1)) / (1 - 2^-a), over the
// admissible fits.
func (f *biasFit) bias(L int) float64 {
	if f.zeroFrom > 0 && L >= f.zeroFrom-1 {
		return f.tail(L)
	}
	minChi := f.chi2[f.bestIndex]
	n := L + 1 - int(f.l1)
	worst := 0.0
	for i, a := range f.grid {
		if a < f.low || f.chi2[i] > minChi+4 {
			continue
		}
		h := f.half[i] // 2^-a
		b := math.Sqrt(math.Max(f.amp[i], 0)+2*f.ase[i]) * powInt(h, n) / (1 - h)
		worst = math.Max(worst, b)
	}
	if worst == 0 && !(f.ampUp(f.low) == 0) {
		// Every admissible rate is rejected (the fit prefers a slower
		// one): bound at the least admissible rate.
		a := f.low
		worst = math.Sqrt(f.ampUp(a)) * math.Exp2(-a*(float64(L+1)-f.l1)) / (1 - math.Exp2(-a))
	}
	return worst
}

// powInt is x^n by squaring.
func powInt(x float64, n int) float64 {
	if n < 0 {
		return 1 / powInt(x, -n)
	}
	p := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			p *= x
		}
		x *= x
	}
	return p
}

// fitBias fits the levels' means (levels above the minimum) with the
// variance rate b setting the least admissible bias rate.
func fitBias(levels []mlmc.LevelStat, b float64) (*biasFit, error) {
	f := &biasFit{low: 0.05}
	if b/2 > f.low {
		f.low = b / 2
	}
	for _, st := range levels {
		v, k := st.Var, float64(st.Draws)
		y := st.MeanNorm*st.MeanNorm - v/k
		// Var |mean|^2 <= 2 (tr S)^2/K^2 + 4 |E Y|^2 tr S / K for a mean
		// of K draws with covariance S (tr S = Var).
		s2 := 2*v*v/(k*k) + 4*math.Max(y, 0)*v/k
		if math.IsNaN(y) || math.IsInf(y, 0) || !(s2 > 0) || math.IsInf(s2, 0) {
			continue
		}
		if len(f.ls) == 0 {
			f.l1 = float64(st.Level)
		}
		if y > 2*math.Sqrt(s2) {
			f.seen++
		}
		f.ls = append(f.ls, float64(st.Level))
		f.ys = append(f.ys, y)
		f.ws = append(f.ws, 1/s2)
	}
	f.n = len(f.ls)
	if f.n < 2 {
		return nil, &Error{Measurement: fmt.Sprintf("the mean and variance of H^l are finite at %d levels above the minimum", f.n),
			Change: "the bias rate needs two: check the oracle's H^l, or give the pilot a larger budget"}
	}
	xs := make([]float64, f.n) // 2^(-2 a (l - l1)) at each level, for one a
	// The grid's rates and their 2^-a shared by every fit, its three
	// columns in one allocation: a fit runs at every measurement, and its
	// garbage and its powers are auto's own cost (the levels are whole
	// numbers: each power is the last one's times 2^(-2a) per level, not
	// an exponential of its own).
	f.grid, f.half = rateGrid.a, rateGrid.half
	points := len(f.grid)
	buf := make([]float64, 3*points)
	f.amp, f.ase, f.chi2 = buf[:0:points], buf[points:points:2*points], buf[2*points:2*points]
	for _, h := range f.half {
		var sff, syf float64
		x, at, hh := 1.0, f.l1, h*h
		for i, l := range f.ls {
			for ; at < l; at++ {
				x *= hh
			}
			xs[i] = x
			sff += f.ws[i] * x * x
			syf += f.ws[i] * f.ys[i] * x
		}
		amp := math.Max(syf/sff, 0)
		chi := 0.0
		for i := range f.ls {
			r := f.ys[i] - amp*xs[i]
			chi += f.ws[i] * r * r
		}
		f.amp = append(f.amp, amp)
		f.ase = append(f.ase, 1/math.Sqrt(sff))
		f.chi2 = append(f.chi2, chi)
	}
	bi := 0
	for i, c := range f.chi2 {
		if c < f.chi2[bi] {
			bi = i
		}
	}
	f.best, f.bestIndex = f.grid[bi], bi
	lo, hi := f.best, f.best
	for i, c := range f.chi2 {
		if c <= f.chi2[bi]+1 {
			lo, hi = math.Min(lo, f.grid[i]), math.Max(hi, f.grid[i])
		}
	}
	f.se = (hi - lo) / 2
	if f.best <= 0 && f.amp[bi] > 2*f.ase[bi] {
		f.notFalling = fmt.Sprintf("the bias is not falling: |E H^l| on levels %d..%d fits 2^(%.2f l) (a = %.2f, %d levels where the mean stands out of the noise)",
			int(f.ls[0]), int(f.ls[f.n-1]), -f.best, 2*f.best, f.seen)
	}
	return f, nil
}

// finish sets the method and its law at p.MaxLevel.
func (p *Plan) finish(rep *mlmc.LevelsReport, t Target, r Rules) {
	L, bRate, intercept, aG := p.MaxLevel, p.B.Rate, p.intercept, p.aG
	// Per-level statistics on MinLevel..L.
	lastM := rep.Levels[len(rep.Levels)-1]
	// Levels above the measured ones fall at b, or not at all where no b
	// was fitted (a degenerate plan, whose every H^l vanished, raised above
	// its levels by an earlier stage's L): math.Max would carry a NaN rate
	// into every extrapolated variance, and from there into the laws.
	bExt := 0.0
	if bRate > 0 {
		bExt = bRate
	}
	var lev, high []level
	for l := rep.MinLevel; l <= L; l++ {
		if i := l - rep.MinLevel; i < len(rep.Levels) {
			st := rep.Levels[i]
			lev = append(lev, level{l: l, varY: st.Var, moment2: st.Moment2, img: st.Images, measured: true})
			high = append(high, level{l: l, varY: st.Var + 2*st.VarSE, moment2: st.Moment2 + 2*st.VarSE, img: st.Images, measured: true})
			continue
		}
		d := float64(l - lastM.Level)
		v := lastM.Var * math.Exp2(-bExt*d)
		vHigh := (lastM.Var + 2*lastM.VarSE) * math.Exp2(-bExt*d)
		m := math.Exp2(intercept - aG*float64(l))
		img := lastM.Images * math.Exp2(p.C.Rate*d)
		lev = append(lev, level{l: l, varY: v, moment2: v + m*m, img: img})
		high = append(high, level{l: l, varY: vHigh, moment2: vHigh + m*m, img: img})
	}
	boundVanished(lev, rep)
	boundVanished(high, rep)
	// Var h^L: measured at l_min (the first level's h) and at L_p (the top
	// row); between them the inner part, V(h^l_min) - V(h^L_p), taken to
	// fall as the samples of a query grow, 2^(-c (L - l_min)); above L_p
	// the top row's.
	// The upper bound (predictedHigh) interpolates the two rows' bounds
	// alike, wherever level 0's bound is the larger (whether or not its
	// point value is).
	topVar, topHigh := rep.Top.Var, rep.Top.Var+2*rep.Top.VarSE
	if L < rep.MaxLevel {
		share := math.Exp2(-p.C.Rate * float64(L-rep.MinLevel))
		if v0 := rep.Levels[0].Var; v0 > topVar {
			topVar += (v0 - topVar) * share
		}
		topHigh += math.Max(rep.Levels[0].Var+2*rep.Levels[0].VarSE-topHigh, 0) * share
	}
	topCost := lev[len(lev)-1].img
	p.costs = make([]float64, 0, len(lev))
	for _, lv := range lev {
		p.costs = append(p.costs, lv.img)
	}

	if L == rep.MinLevel {
		p.Kind, p.Method = mlmc.Kind{Method: mlmc.LSGD}, mlmc.LSGD.String()
		p.Predicted = []MethodCost{{Method: p.Method, Var: topVar, Cost: topCost, VarCost: topVar * topCost}}
		p.predictedHigh = []MethodCost{{Method: p.Method, Var: topHigh, Cost: topCost, VarCost: topHigh * topCost}}
		p.Reasons.Method = fmt.Sprintf("the bias at the minimum level %d is already below the target's share: no level to correct, so every MLMC estimator is L-SGD", L)
		if p.Degenerate {
			p.Reasons.Method = fmt.Sprintf("every H^l vanished at %s, so no bias can be seen there (which says nothing of the bias elsewhere): L-SGD at the minimum level %d only until the levels are measured again away from this point", p.At, L)
		}
		p.Reasons.Law = "L-SGD has one level"
		return
	}
	// RT-MLMC's variance subtracts |E v|^2 at the measured point (not at
	// x0, whose gradient a re-plan normalises the bias by).
	p.Predicted = predict(lev, lev, topVar, topCost, GradNorm(rep))
	p.predictedHigh = predict(high, lev, topHigh, topCost, GradNorm(rep))
	p.choose(lev, t, r)
}

// predict is each method's variance and cost per iteration at L with the
// variance-optimal allocations of the levels in law (mlmc.PredictEstimators'
// -opt rows), their moments from lev: L-SGD one h^L; RT-MLMC q_l
// proportional to sqrt(E|Y_l|^2 / C_l), variance sum E|Y_l|^2/q_l -
// |grad F^L|^2; V-MLMC n_l = ceil of sqrt(Var_l / C_l) / sqrt(Var_L / C_L),
// variance sum Var_l / n_l.
func predict(lev, law []level, topVar, topCost, grad float64) []MethodCost {
	out := []MethodCost{{Method: mlmc.LSGD.String(), Var: topVar, Cost: topCost, VarCost: topVar * topCost}}
	q := rtLaw(law)
	rt := MethodCost{Method: mlmc.RTMLMC.String()}
	for i, lv := range lev {
		rt.Var += lv.moment2 / q[i]
		rt.Cost += q[i] * lv.img
	}
	rt.Var = math.Max(rt.Var-grad*grad, 0)
	rt.VarCost = rt.Var * rt.Cost
	vm := MethodCost{Method: mlmc.VMLMC.String()}
	for i, n := range vmLaw(law) {
		vm.Var += lev[i].varY / float64(n)
		vm.Cost += float64(n) * lev[i].img
	}
	vm.VarCost = vm.Var * vm.Cost
	return append(out, rt, vm)
}

// boundVanished gives each level above the minimum whose H^l vanished
// to rounding in all its K draws (and each level extrapolated above a top
// level that did) the second moment the measurement allows, not zero:
// such a level is only rarely non-zero, P(H^l != 0) <= 3/K at 95% (the
// rule of three), and where it is non-zero about as large as the nearest
// lower level that did not vanish, l_0, so E|H^l|^2 <= (3/K) E|H^(l_0)|^2
// 2^-(l - l_0 - 1), the chance halving per level: the bound the bias of
// such levels takes (zeroTailBias). RT-MLMC divides a draw of level l by
// q_l, so a law fitted to a moment of zero (q_l at its floor) multiplies
// the rare non-zero draw by up to the floor's inverse, a jump no step
// survives, while the plan predicts no variance from the level; with the
// bound the law, the predicted variance and the step's variance cap see
// what the measurement cannot rule out.
func boundVanished(lev []level, rep *mlmc.LevelsReport) {
	zero := roundingShare * roundingShare * rep.Levels[0].Moment2
	if !(zero >= 0) || math.IsInf(zero, 0) {
		return
	}
	ref, draws, lastVanished := 0, rep.Draws, false
	for i := 1; i < len(lev); i++ {
		lv := &lev[i]
		vanished := lastVanished
		if lv.measured {
			draws = rep.Levels[i].Draws
			// Read off the measurement, not lv: an upper bound's raised
			// moments (Plan.predictedHigh) vanish where the point's do.
			vanished = rep.Levels[i].Moment2 <= zero
			lastVanished = vanished
		}
		if !vanished {
			ref = i
			continue
		}
		if draws <= 0 {
			continue
		}
		m := 3 / float64(draws) * math.Max(lev[ref].moment2, 0) * math.Exp2(-float64(lv.l-lev[ref].l-1))
		lv.moment2 = math.Max(lv.moment2, m)
		lv.varY = math.Max(lv.varY, m)
	}
}

func rtLaw(lev []level) []float64 {
	q := make([]float64, len(lev))
	sum := 0.0
	for i, lv := range lev {
		q[i] = math.Sqrt(math.Max(lv.moment2, 0) / lv.img)
		sum += q[i]
	}
	if sum == 0 {
		// Every level's second moment zero: none to weigh by, so each
		// level alike (a moment that is not finite is left to fail in the
		// estimator's check of the law, which names it).
		for i := range q {
			q[i] = 1
		}
		sum = float64(len(q))
	}
	// A level whose H^l vanished in every draw still needs a positive
	// probability (RT-MLMC's estimate divides by it, and the level is
	// only rarely non-zero, not bias-free): a floor of 1e-6 of the law.
	for i := range q {
		q[i] = math.Max(q[i]/sum, 1e-6)
	}
	sum = 0
	for _, v := range q {
		sum += v
	}
	for i := range q {
		q[i] /= sum
	}
	return q
}

func vmLaw(lev []level) []int {
	top := lev[len(lev)-1]
	ref := math.Sqrt(top.varY / top.img)
	n := make([]int, len(lev))
	if !(ref > 0) || math.IsInf(ref, 0) {
		// No top-level variance to scale by: one draw per level, not a
		// conversion of NaN or Inf to int, which Go leaves to the
		// platform.
		for i := range n {
			n[i] = 1
		}
		return n
	}
	for i, lv := range lev {
		n[i] = max(1, int(math.Ceil(math.Sqrt(lv.varY/lv.img)/ref-1e-9)))
	}
	return n
}

// choose sets the method and its law: the paper's Table 1 for the regime,
// then the measured constants.
func (p *Plan) choose(lev []level, t Target, r Rules) {
	a, b, c := p.A.Rate, p.B.Rate, p.C.Rate
	// Exponents of 1/eps in the table's strongly convex row (the other rows
	// order the methods alike).
	var rtExp, vmExp float64
	lsExp := 1 + c/a
	if p.Regime == "b > c" {
		rtExp, vmExp = 1, math.Max(1, c/a)
	} else {
		d := math.Max(c-b, 0)
		rtExp, vmExp = 1+d/a, math.Max(1+d/a, c/a)
	}
	table := fmt.Sprintf("Table 1 of the paper (section 1.3), regime %s: total cost RT-MLMC O(eps^-%.2f), V-MLMC O(eps^-%.2f) and needs mini-batches, L-SGD O(eps^-%.2f)",
		p.Regime, rtExp, vmExp, lsExp)
	if p.Regime != "b > c" {
		table += "; RU-MLMC and RR-MLMC are not applicable (b <= c)"
	}
	lsBut, vmBut := "; but the table's orders are asymptotic, and at this L the ", "; but at this L the "
	if p.Degenerate {
		// Every H^l vanished where the levels were measured: no rates, so
		// no order; the predictions alone decide.
		table = "no rates were fitted (every H^l vanished where the levels were measured), so Table 1 of the paper (section 1.3) orders no method"
		lsBut, vmBut = "; at this L the ", "; at this L the "
	}
	by := map[string]MethodCost{}
	for _, m := range p.Predicted {
		by[m.Method] = m
	}
	rt, ls, vm := by["rtmlmc"], by["lsgd"], by["vmlmc"]
	consts := fmt.Sprintf("predicted variance x cost at L = %d: L-SGD %.3g, RT-MLMC %.3g, V-MLMC %.3g", p.MaxLevel, ls.VarCost, rt.VarCost, vm.VarCost)
	// RT-MLMC's exponent is never above the others' (n1 >= 1, n2 >= 1 +
	// (c-b)/a, c/a > (c-b)/a), and it needs no mini-batch: the table's
	// method. Another replaces it only when the constants favour it by
	// Margin.
	iters := func(m MethodCost) float64 { return float64(t.Budget) / m.Cost }
	switch {
	case ls.VarCost*r.Margin < rt.VarCost && ls.VarCost <= vm.VarCost:
		p.Kind = mlmc.Kind{Method: mlmc.LSGD}
		p.Reasons.Method = table + lsBut + consts +
			fmt.Sprintf(": L-SGD by more than the margin %g", r.Margin)
	case vm.VarCost*r.Margin < rt.VarCost && iters(vm) >= float64(r.MinIterations):
		p.Kind = mlmc.Kind{Method: mlmc.VMLMC}
		p.Reasons.Method = table + vmBut + consts +
			fmt.Sprintf(": V-MLMC by more than the margin %g, with %.0f iterations in the budget", r.Margin, iters(vm))
	default:
		p.Kind = mlmc.Kind{Method: mlmc.RTMLMC}
		p.Reasons.Method = table + ": RT-MLMC; " + consts
	}
	p.Method = p.Kind.String()
	// The law the method reads (mlmc's table says which).
	switch p.Kind.Method.Explicit() {
	case mlmc.ExplicitProbs:
		p.LevelProbs = rtLaw(lev)
		p.Reasons.Law = "variance-optimal q_l proportional to sqrt(E|H^l|^2 / C_l) " + lawSource(lev, p.Degenerate)
	case mlmc.ExplicitDraws:
		p.LevelDraws = vmLaw(lev)
		p.Reasons.Law = "variance-optimal n_l proportional to sqrt(Var H^l / C_l), n_L = 1, " + lawSource(lev, p.Degenerate)
	default:
		p.Reasons.Law = "L-SGD has one level"
	}
}

func lawSource(lev []level, unfitted bool) string {
	n := 0
	for _, lv := range lev {
		if lv.measured {
			n++
		}
	}
	if n == len(lev) {
		return "of the measured levels"
	}
	if unfitted {
		return fmt.Sprintf("of the measured levels %d..%d; %d..%d held at the top measured level's variance (no rate was fitted) and bounded by the rule of three where H^l vanished",
			lev[0].l, lev[n-1].l, lev[n].l, lev[len(lev)-1].l)
	}
	return fmt.Sprintf("of the measured levels %d..%d, extrapolated to %d..%d with the fitted b and c",
		lev[0].l, lev[n-1].l, lev[n].l, lev[len(lev)-1].l)
}

// vanishesAbove says H^l vanished to rounding at every level above the
// minimum of rep (which has at least one level).
func vanishesAbove(rep *mlmc.LevelsReport) bool {
	scale := rep.Levels[0].Moment2
	for _, st := range rep.Levels[1:] {
		if !(st.Moment2 <= roundingShare*roundingShare*scale) {
			return false
		}
	}
	return scale >= 0 && !math.IsInf(scale, 0)
}

// roundingShare is the size relative to h^(l_min) below which H^l counts
// as zero: a difference of float64 gradients cancelled to rounding.
const roundingShare = 1e-10

// MarshalJSON writes a diverged candidate's value as null.
func (s StepScore) MarshalJSON() ([]byte, error) {
	type plain StepScore
	return json.Marshal(struct {
		plain
		Value nullable `json:"value"`
	}{plain(s), nullable(s.Value)})
}

// UnmarshalJSON reads null as +Inf: a value is missing only where the
// candidate diverged.
func (s *StepScore) UnmarshalJSON(data []byte) error {
	type plain StepScore
	v := struct {
		*plain
		Value nullable `json:"value"`
	}{plain: (*plain)(s), Value: nullable(math.NaN())}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	s.Value = float64(v.Value)
	if math.IsNaN(s.Value) {
		s.Value = math.Inf(1)
	}
	return nil
}

// methodCostJSON is a MethodCost in JSON.
type methodCostJSON struct {
	Method  string   `json:"method"`
	Var     nullable `json:"var"`
	Cost    nullable `json:"cost"`
	VarCost nullable `json:"var_cost"`
}

// MarshalJSON writes what could not be predicted as null.
func (m MethodCost) MarshalJSON() ([]byte, error) {
	return json.Marshal(methodCostJSON{m.Method, nullable(m.Var), nullable(m.Cost), nullable(m.VarCost)})
}

// UnmarshalJSON reads what MarshalJSON wrote, null as NaN.
func (m *MethodCost) UnmarshalJSON(data []byte) error {
	nan := nullable(math.NaN())
	v := methodCostJSON{Var: nan, Cost: nan, VarCost: nan}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*m = MethodCost{v.Method, float64(v.Var), float64(v.Cost), float64(v.VarCost)}
	return nil
}

// zeroTailBias bounds the bias of L >= zeroTail-1 where H^l vanished in
// all K draws of every level from zeroTail on: a level is not bias-free
// for that, only rarely non-zero, P(H^l != 0) <= 3/K at 95% (the rule of
// three), and where it is non-zero (two coupled halves that have not yet
// coalesced) about as large as the last level that did not vanish. So
// |E H^l| <= (3/K) sqrt(E|H^(zeroTail-1)|^2) 2^-(l - zeroTail), the tail
// taken to halve per level (the chance of a coupling not coalescing falls
// with the level), and the bias of L is the sum over l > L.
func zeroTailBias(rep *mlmc.LevelsReport, zeroTail int) func(L int) float64 {
	last := rep.Levels[zeroTail-1-rep.MinLevel]
	k := float64(rep.Levels[zeroTail-rep.MinLevel].Draws)
	amp := 3 / k * math.Sqrt(math.Max(last.Moment2, 0))
	return func(L int) float64 {
		return 2 * amp * math.Exp2(-float64(L+1-zeroTail))
	}
}
