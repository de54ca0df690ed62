package auto

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// synthetic is the problem of mlmc.Synthetic in dim dimensions: F(x) =
// |x - X*|^2/2, exact, so F* = 0 and the relative gap is F(x)/F(x0).
func synthetic(dim int, a, b, c float64, tune func(*mlmc.Synthetic)) *sgd.Problem {
	ref := mlmc.NewSynthetic(dim, a, b, c, 0)
	return &sgd.Problem{
		X0: make([]float64, dim),
		NewOracle: func(seed uint64) (sgd.Instance, error) {
			s := mlmc.NewSynthetic(dim, a, b, c, seed)
			if tune != nil {
				tune(s)
			}
			return sgd.Instance{Oracle: s, At: func(x, prev []float64) { s.X, s.XPrev = x, prev }}, nil
		},
		Objective: func(x []float64) (float64, float64) {
			f := 0.0
			for i := range x {
				f += (x[i] - ref.XStar[i]) * (x[i] - ref.XStar[i]) / 2
			}
			return f, 0
		},
	}
}

// measureAt measures the synthetic oracle's levels at x0 = 0 with 64
// draws per level.
func measureAt(t *testing.T, o *mlmc.Synthetic, budget int64) Measurement {
	t.Helper()
	m, err := Measure(o, mlmc.Float64Ops{Dim: len(o.X)}, 0, budget, 64, 11)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestChooseFollowsTable checks the choices on mlmc.Synthetic in the three
// regimes of the paper's Table 1. There RT-MLMC's total cost has the
// smallest exponent of 1/eps in every regime (O(eps^-1) for b > c,
// O~(eps^-1-(c-b)/a) for b <= c, against L-SGD's eps^-1-c/a and V-MLMC's
// larger-or-equal exponent with mini-batches), so RT-MLMC is what it
// prescribes; the regime, L and the law are checked against the oracle's
// closed forms: the bias of level L is exactly Ma 2^(-aL), and E|H^l|^2 is
// NoiseVar + |E H^l|^2.
func TestChooseFollowsTable(t *testing.T) {
	const gap = 1e-3
	rules := Rules{}.withDefaults()
	for _, tc := range []struct {
		name       string
		a, b, c, m float64
		regime     string
	}{
		{"b > c", 1, 2, 1, 1, "b > c"},
		{"b = c", 1, 1, 1, 0.3, "b = c"},
		{"b < c", 1, 0.5, 1, 0.01, "b < c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Mb: H^l's second moment is mostly its variance at the levels
			// that decide the cost (the table's b describes it), yet its
			// mean stands out of the noise at the first levels.
			o := mlmc.NewSynthetic(4, tc.a, tc.b, tc.c, 5)
			o.Mb = tc.m
			m := measureAt(t, o, 100_000)
			p, err := Choose(m.Report, "x0", m.Samples, GradNorm(m.Report), Target{Gap: gap, Budget: 10_000_000}, Rules{}, mlmc.Unbounded)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(p)
			if p.Regime != tc.regime {
				t.Errorf("regime %q, want %q (b = %.3f ± %.3f, c = %.3f)", p.Regime, tc.regime, p.B.Rate, p.B.SE, p.C.Rate)
			}
			if p.Kind != (mlmc.Kind{Method: mlmc.RTMLMC}) || p.LevelProbs == nil {
				t.Errorf("method %s (law %v), want rtmlmc with a measured law: %s", p.Method, p.LevelProbs, p.Reasons.Method)
			}
			// L: the exact relative gap from bias at L must meet the rule
			// (the bound is conservative: two noise deviations above the mean
			// where it is lost in the noise, and a line above every level),
			// and no more than five levels
			// above the least L that meets it.
			g0 := 0.0
			for _, v := range o.XStar {
				g0 += v * v
			}
			share := func(L int) float64 { return math.Exp2(-2*tc.a*float64(L)) / g0 }
			least := 0
			for share(least) > rules.BiasShare*gap {
				least++
			}
			if p.MaxLevel < least || p.MaxLevel > least+5 {
				t.Errorf("L = %d, want %d..%d: %s", p.MaxLevel, least, least+5, p.Reasons.L)
			}
			// The law against the exact q_l proportional to
			// sqrt(E|H^l|^2 / C_l) on the measured levels; the estimate's
			// relative error is about 5% with 64 draws of 4 coordinates,
			// so 25% is a 5-sigma bound.
			exact := make([]float64, len(p.LevelProbs))
			sum := 0.0
			for i := range exact {
				l := p.MinLevel + i
				// |E Y_l|^2: |grad F^0(x0)|^2 at level 0, else the bias
				// step |Ma (2^-al - 2^-a(l-1))|^2 along u.
				mean2 := 0.0
				if l == 0 {
					g := make([]float64, len(o.X))
					o.Grad(0, o.X, g)
					for _, v := range g {
						mean2 += v * v
					}
				} else {
					d := o.Ma * (math.Exp2(-tc.a*float64(l)) - math.Exp2(-tc.a*float64(l-1)))
					mean2 = d * d
				}
				exact[i] = math.Sqrt((o.NoiseVar(l, l > 0, o.X) + mean2) / float64(o.Cost(l)))
				sum += exact[i]
			}
			for i := range exact {
				if i > m.Report.MaxLevel {
					break // extrapolated beyond the pilot
				}
				if q := exact[i] / sum; math.Abs(p.LevelProbs[i]-q) > 0.25*q+0.002 {
					t.Errorf("q_%d = %.4f, exact %.4f", i, p.LevelProbs[i], q)
				}
			}
		})
	}
}

// TestChooseLSGDWithoutBias: when the minimum level's bias is already
// below the target's share, no level needs correcting and the plan is
// L-SGD at the minimum level.
func TestChooseLSGDWithoutBias(t *testing.T) {
	o := mlmc.NewSynthetic(4, 1, 2, 1, 5)
	o.Ma, o.Mb = 0.001, 1e-6
	m := measureAt(t, o, 100_000)
	p, err := Choose(m.Report, "x0", m.Samples, GradNorm(m.Report), Target{Gap: 1e-2, Budget: 1_000_000}, Rules{}, mlmc.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != (mlmc.Kind{Method: mlmc.LSGD}) || p.MaxLevel != 0 {
		t.Errorf("plan %s on levels %d..%d, want lsgd at level 0:\n%s", p.Method, p.MinLevel, p.MaxLevel, p)
	}
}

// nanOracle is a synthetic oracle whose gradients are NaN at every level.
type nanOracle struct{ *mlmc.Synthetic }

func (o nanOracle) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	for i := range out {
		out[i] = math.NaN()
	}
	return nil
}

// TestUnservable: each problem auto cannot serve gets an *Error that names
// the measurement.
func TestUnservable(t *testing.T) {
	target := Target{Gap: 1e-3, Budget: 2_000_000}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"bias not falling", func() error {
			o := mlmc.NewSynthetic(4, -0.5, 2, 1, 5)
			o.Mb = 0.01
			m := measureAt(t, o, 100_000)
			_, err := Choose(m.Report, "x0", m.Samples, GradNorm(m.Report), target, Rules{}, mlmc.Unbounded)
			return err
		}, "the bias is not falling"},
		{"variance infinite at every level", func() error {
			o := nanOracle{mlmc.NewSynthetic(4, 1, 2, 1, 5)}
			m, err := Measure[[]float64](o, mlmc.Float64Ops{Dim: 4}, 0, 100_000, 16, 1)
			if err != nil {
				return err
			}
			_, err = Choose(m.Report, "x0", m.Samples, 1, target, Rules{}, mlmc.Unbounded)
			return err
		}, "variance of H^l is not finite"},
		{"pilot budget too small", func() error {
			_, err := Run(synthetic(4, 1, 2, 1, nil), Settings{Target: Target{Gap: 1e-3, Budget: 2000}})
			return err
		}, "pilot budget of"},
		{"bias too slow for the oracle's levels", func() error {
			o := mlmc.NewSynthetic(4, 1, 2, 1, 5)
			o.Mb, o.Max = 0.01, 5
			m := measureAt(t, o, 100_000)
			_, err := Choose(m.Report, "x0", m.Samples, GradNorm(m.Report), target, Rules{}, o.Max)
			return err
		}, "at the largest level the oracle serves (5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %v, want an *auto.Error", err)
			}
			if !strings.Contains(err.Error(), tc.want) || ae.Change == "" {
				t.Errorf("error %q, want it to name %q and what to change", err, tc.want)
			}
		})
	}
}

// TestSettingsErrors: a first pilot above 5% of the run and a problem
// without an objective for the stages are refused.
func TestSettingsErrors(t *testing.T) {
	p := synthetic(4, 1, 2, 1, nil)
	if _, err := Run(p, Settings{Target: Target{Gap: 1e-3, Budget: 1e6}, FirstPilot: 0.06}); err == nil || !strings.Contains(err.Error(), "first pilot share") {
		t.Errorf("first pilot share 0.06: error %v", err)
	}
	p.Objective = nil
	if _, err := Run(p, Settings{Target: Target{Gap: 1e-3, Budget: 1e6}}); err == nil || !strings.Contains(err.Error(), "Objective") {
		t.Errorf("no objective: error %v", err)
	}
}

// TestStagePlans: on mlmc.Synthetic in the three regimes of the paper's
// Table 1 (b > c, b = c, b < c, with a visible bias), a run goes through
// stages whose targets fall by sqrt(10) from 10% to the 0.1% gap, each
// the first plan in the regime, L never
// falling from one stage to the next and rising at least once as the
// target tightens, the first pilot within 0.5% of the budget; it stops by
// itself with its own gap estimate at the target, and the true gap is
// within it; each plan survives a JSON round trip.
func TestStagePlans(t *testing.T) {
	const gap, budget = 1e-3, 2_000_000
	for _, rc := range []struct {
		a, b, c float64
		regime  string
	}{{1, 2, 1, "b > c"}, {1, 1, 1, "b = c"}, {1, 0.5, 1, "b < c"}} {
		t.Run(rc.regime, func(t *testing.T) {
			p := synthetic(4, rc.a, rc.b, rc.c, func(s *mlmc.Synthetic) { s.Mb = 0.01 })
			f0, _ := p.Objective(p.X0)
			var log strings.Builder
			res, err := Run(p, Settings{Target: Target{Gap: gap, Budget: budget}, Seed: 3, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(log.String())
			rec := res.Record
			want := []float64{0.1, 0.1 / math.Sqrt(10), 0.01, 0.01 / math.Sqrt(10), 0.001}
			if len(rec.Stages) != len(want) {
				t.Fatalf("%d stages, want %d", len(rec.Stages), len(want))
			}
			lastL, rose := -1, false
			for i, st := range rec.Stages {
				if math.Abs(st.Target/want[i]-1) > 1e-9 {
					t.Errorf("stage %d target %g, want %g", i, st.Target, want[i])
				}
				for _, pl := range st.Plans {
					if i == 0 && pl.Regime != rc.regime {
						t.Errorf("stage %d: %s in regime %q, want %q", i, pl.Method, pl.Regime, rc.regime)
					}
					if pl.MaxLevel < lastL {
						t.Errorf("stage %d: L fell from %d to %d", i, lastL, pl.MaxLevel)
					}
					rose = rose || lastL >= 0 && pl.MaxLevel > lastL
					lastL = pl.MaxLevel
					data, err := json.Marshal(pl)
					if err != nil {
						t.Fatal(err)
					}
					var back Plan
					if err := json.Unmarshal(data, &back); err != nil {
						t.Fatal(err)
					}
					if back.Kind != pl.Kind || back.MaxLevel != pl.MaxLevel || back.Step != pl.Step || len(back.LevelProbs) != len(pl.LevelProbs) {
						t.Errorf("plan after a JSON round trip: %+v, want %+v", back, pl)
					}
				}
			}
			if !rose {
				t.Errorf("L never rose over the stages")
			}
			if m := rec.Stages[0].Plans[0].Samples; m > budget/400 {
				t.Errorf("first measurement %d samples, want at most a quarter of 1%% of %d", m, budget)
			}
			f, _ := p.Objective(res.X)
			if !res.Reached || f/f0 > gap || float64(rec.GapEstimate) > gap {
				t.Errorf("reached %v with gap estimate %g, true gap %.3g (want both <= %g), samples %d", res.Reached, float64(rec.GapEstimate), f/f0, gap, res.Samples)
			}
		})
	}
}

// TestChooseAtLevel: with the top level fixed (an objective defined at
// level L), the plan keeps L and chooses the method and law there; a
// bias that does not fall is then no error, since no L is extrapolated.
func TestChooseAtLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    float64
		want mlmc.Method
	}{{"falling bias", 1, mlmc.RTMLMC}, {"growing bias", -0.5, mlmc.RTMLMC}} {
		t.Run(tc.name, func(t *testing.T) {
			o := mlmc.NewSynthetic(4, tc.a, 2, 1, 5)
			rep, err := mlmc.MeasureLevels[[]float64](o, mlmc.Float64Ops{Dim: 4}, mlmc.LevelsConfig{MinLevel: 1, MaxLevel: 6, Draws: 64, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			p, err := ChooseAtLevel(rep, "x0", 0, Target{Budget: 1_000_000}, Rules{})
			if err != nil {
				t.Fatal(err)
			}
			if p.MinLevel != 1 || p.MaxLevel != 6 || p.Kind.Method != tc.want || len(p.LevelProbs) != 6 {
				t.Errorf("plan %s on %d..%d with %d probabilities, want %s on 1..6 with 6:\n%s", p.Method, p.MinLevel, p.MaxLevel, len(p.LevelProbs), tc.want, p)
			}
			if _, err := json.Marshal(p); err != nil {
				t.Errorf("plan does not marshal: %v", err)
			}
		})
	}
}

// TestStepRuleRunsEachCandidate: where the plan's L is so high that an
// iteration there costs more than the step rule's share per candidate (a
// slowly falling bias, a = 0.5, and a small budget), each candidate still
// runs at least minStepIters iterations, at a lower level that the plan
// names, so the scores differ and the step is chosen by them, instead of
// every candidate tying at F(x0) and the smallest winning. Where no level
// pays for minStepIters iterations even with three candidates, the rule
// says so in an *Error.
func TestStepRuleRunsEachCandidate(t *testing.T) {
	p := synthetic(4, 0.5, 1, 2, func(s *mlmc.Synthetic) { s.Mb = 0.01 })
	f0, _ := p.Objective(p.X0)
	s, _ := Settings{Target: Target{Gap: 1e-3, Budget: 1_000_000}, Seed: 3}.withDefaults()
	r := newTestRunner(p, s)
	plan, err := r.measure("x0", 1e-3, 20_000)
	if err != nil {
		t.Fatal(err)
	}
	const share = 15_000
	if err := r.chooseStep(plan, s.Steps, share, 1e-3); err != nil {
		t.Fatal(err)
	}
	t.Log(plan)
	if c := plan.worstCostAt(plan.MaxLevel); c*minStepIters <= share/13 {
		t.Fatalf("L = %d costs %d samples an iteration, within the share: the test needs a plan above it", plan.MaxLevel, c)
	}
	if plan.StepLevel >= plan.MaxLevel || !strings.Contains(plan.Reasons.Step, "the candidates ran") {
		t.Errorf("step level %d of L = %d; the reason does not say the candidates ran lower: %s", plan.StepLevel, plan.MaxLevel, plan.Reasons.Step)
	}
	distinct := map[float64]bool{}
	for _, sc := range plan.Steps {
		if sc.Iterations < minStepIters {
			t.Errorf("candidate %.3g ran %d iterations, want at least %d", sc.Step, sc.Iterations, minStepIters)
		}
		distinct[sc.Value] = true
		if sc.Value == f0 {
			t.Errorf("candidate %.3g scored F(x0): it did not move", sc.Step)
		}
	}
	if len(distinct) < len(plan.Steps)/2 {
		t.Errorf("%d distinct scores among %d candidates: %+v", len(distinct), len(plan.Steps), plan.Steps)
	}
	plan.Steps = nil
	err = r.chooseStep(plan, s.Steps, 10, 1e-3)
	var ae *Error
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "iterations it needs") {
		t.Errorf("10 samples for the candidates: error %v, want an *auto.Error naming the iterations the step rule needs", err)
	}
}

// newTestRunner is a runner at the problem's start, as Run makes it.
func newTestRunner(p *sgd.Problem, s Settings) *runner {
	s.Score = p.Objective
	r := &runner{p: p, s: s, x: slices.Clone(p.X0), relay: sgd.NewRelay(nil), rec: &Record{}}
	r.avg = slices.Clone(r.x)
	r.f0, _ = p.Objective(r.x)
	return r
}

// TestPlanJSONNulls: every float of a plan that is not finite is written as
// null and read back as NaN (a diverged step candidate's value as +Inf),
// and the finite ones come back as they were.
func TestPlanJSONNulls(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	p := Plan{Method: "rtmlmc", A: Rate{nan, nan}, B: Rate{1.5, nan}, C: Rate{1, 0.01}, BiasShare: nan,
		Predicted: []MethodCost{{"lsgd", 1, 10, 10}, {"rtmlmc", inf, nan, inf}},
		Steps:     []StepScore{{Step: 0.1, Value: inf, Iterations: 3}, {Step: 0.01, Value: 2.5, SE: 0.1, Iterations: 3}}}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"a":{"rate":null,"se":null}`, `"b":{"rate":1.5,"se":null}`, `"bias_share":null`,
		`{"method":"rtmlmc","var":null,"cost":null,"var_cost":null}`, `"iterations":3,"value":null}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s: %s", want, data)
		}
	}
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	isNaN := math.IsNaN
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"a", isNaN(back.A.Rate) && isNaN(back.A.SE)},
		{"b", back.B.Rate == 1.5 && isNaN(back.B.SE)},
		{"c", back.C == p.C},
		{"bias share", isNaN(back.BiasShare)},
		{"finite prediction", back.Predicted[0] == p.Predicted[0]},
		{"unknown prediction", isNaN(back.Predicted[1].Var) && isNaN(back.Predicted[1].Cost) && isNaN(back.Predicted[1].VarCost)},
		{"diverged step", math.IsInf(back.Steps[0].Value, 1) && back.Steps[1] == p.Steps[1]},
	} {
		if !c.ok {
			t.Errorf("%s after a JSON round trip: %+v", c.name, back)
		}
	}
}
