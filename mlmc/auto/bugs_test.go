package auto

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// vanishing is F(x) = |x - X*|^2/2 with levels whose bias and corrections
// are scaled by g(x) = min(1, |x|^2): h^l = x - X* + g(x) 2^-l u + noise,
// H^l = g(x) ((2^-l - 2^-(l-1)) u + 2^-l noise_l), level l costing 2^l.
// At x0 = 0 every H^l is zero (a degenerate start), elsewhere the bias of
// level l is g(x) 2^-l: a point where no bias can be seen says nothing of
// the rest.
type vanishing struct {
	x, xStar []float64
	rng      *rand.Rand
}

type vanishingDraw struct {
	level int
	seed  uint64
}

func (v *vanishing) MaxLevel() int { return mlmc.Unbounded }
func (v *vanishing) Draw(l int) (mlmc.Sample, int64, error) {
	return vanishingDraw{l, v.rng.Uint64()}, 1 << l, nil
}
func (v *vanishing) Release(mlmc.Sample) {}
func (v *vanishing) Eval(s mlmc.Sample, _ mlmc.Point, diff bool, alpha float64, out []float64) error {
	d := s.(vanishingDraw)
	g := 0.0
	for _, xi := range v.x {
		g += xi * xi
	}
	g = math.Min(g, 1)
	r := rand.New(rand.NewPCG(d.seed, 7))
	u := 1 / math.Sqrt(float64(len(out)))
	l := float64(d.level)
	for i := range out {
		noise0, noiseL := r.NormFloat64(), r.NormFloat64()
		if diff {
			out[i] += alpha * g * ((math.Exp2(-l)-math.Exp2(-(l-1)))*u + math.Exp2(-l)*noiseL)
			continue
		}
		out[i] += alpha * (v.x[i] - v.xStar[i] + g*math.Exp2(-l)*u + 0.3*noise0)
	}
	return nil
}

func vanishingProblem() *sgd.Problem { return vanishingAt([]float64{0.5, -0.25, 0.75}) }

// vanishingAt is vanishingProblem with the minimiser xStar.
func vanishingAt(xStar []float64) *sgd.Problem {
	return &sgd.Problem{
		X0: make([]float64, 3),
		NewOracle: func(seed uint64) (sgd.Instance, error) {
			v := &vanishing{xStar: xStar, rng: rand.New(rand.NewPCG(seed, 3))}
			return sgd.Instance{Oracle: v, At: func(x, _ []float64) { v.x = x }}, nil
		},
		Objective: func(x []float64) (float64, float64) {
			f := 0.0
			for i := range x {
				f += (x[i] - xStar[i]) * (x[i] - xStar[i]) / 2
			}
			return f, 0
		},
	}
}

// TestDegenerateStartLeft: at x0 every H^l vanishes; auto measures again
// after the step search and after a few dozen iterations instead of taking
// the first plan (L-SGD at level 0, whose bias is 2^0 g(x*) = 0.87 of
// |grad F(x0)| = 0.94 away from x0) as a verdict, moves to a plan with
// corrections, and reaches the 1% gap that level 0 alone cannot.
func TestDegenerateStartLeft(t *testing.T) {
	p := vanishingProblem()
	f0, _ := p.Objective(p.X0)
	var log strings.Builder
	res, err := Run(p, Settings{Target: Target{Gap: 0.01, Budget: 2_000_000}, Seed: 1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(log.String())
	first := res.Record.Stages[0].Plans[0]
	if !first.Degenerate {
		t.Fatalf("the first plan is not degenerate: %s", first)
	}
	if strings.Contains(first.Reasons.Method, "already below the target's share") {
		t.Errorf("the degenerate plan's reason claims a bias below the target: %s", first.Reasons.Method)
	}
	left := false
	for _, st := range res.Record.Stages {
		for _, pl := range st.Plans {
			left = left || !pl.Degenerate && pl.MaxLevel > 0
		}
	}
	if !left {
		t.Errorf("auto never left the degenerate plan: %s", res.Record.Summary())
	}
	if f, _ := p.Objective(res.X); f/f0 > 0.01 {
		t.Errorf("final gap %.3g, want at most 0.01", f/f0)
	}
}

// zeroAbove is mlmc.Synthetic whose corrections vanish in every draw from
// level from on, as a coupled construction's do once its halves coalesce
// in all K draws of a pilot; the bias above is not zero for that.
type zeroAbove struct {
	*mlmc.Synthetic
	from int
}

type zeroDraw struct {
	inner mlmc.Sample
	level int
}

func (z zeroAbove) Draw(l int) (mlmc.Sample, int64, error) {
	s, c, err := z.Synthetic.Draw(l)
	return zeroDraw{s, l}, c, err
}

func (z zeroAbove) Release(s mlmc.Sample) { z.Synthetic.Release(s.(zeroDraw).inner) }

func (z zeroAbove) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	d := s.(zeroDraw)
	if diff && d.level >= z.from {
		return nil
	}
	return z.Synthetic.Eval(d.inner, at, diff, alpha, out)
}

// TestZeroDrawsNotBiasFree: a level whose H^l was zero in all K draws is
// only rarely non-zero (P <= 3/K at 95%), not bias-free: the plan's bias
// share at the level below the vanishing tail is positive.
func TestZeroDrawsNotBiasFree(t *testing.T) {
	o := zeroAbove{mlmc.NewSynthetic(4, 1, 2, 1, 5), 4}
	o.Mb = 0.01
	m, err := Measure[[]float64](o, mlmc.Float64Ops{Dim: 4}, 0, 100_000, 64, 11)
	if err != nil {
		t.Fatal(err)
	}
	if last := m.Report.Levels[len(m.Report.Levels)-1]; last.Moment2 != 0 {
		t.Fatalf("the top level's H^l is not zero: %+v", last)
	}
	p, err := Choose(m.Report, "x0", m.Samples, GradNorm(m.Report), Target{Gap: 1e-6, Budget: 1e9}, Rules{}, mlmc.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	if !(p.BiasShare > 0) {
		t.Errorf("plan at L = %d with bias share %g: levels that vanished in %d draws were taken as bias-free\n%s", p.MaxLevel, p.BiasShare, m.Report.Draws, p)
	}
}

// TestBestFitVanishedTail: a continuation's plan (the best-fit rule)
// takes levels whose H^l vanished in all K draws at their most likely
// bias, zero, so its L stops at the last level that did not vanish,
// however tight the target; the 95% rule bounds the same tail by the
// rule of three and goes deeper. Where no level's mean stands out of its
// noise (Ma = 1e-3 against Mb = 1e3), L is the pilot's top level that
// did not vanish, not its top. |grad F(x0)| is the closed form's, |X*|
// at x0 = 0, so that the pilot's noisy reading of it cannot end the
// test for another reason.
func TestBestFitVanishedTail(t *testing.T) {
	for _, tc := range []struct {
		name       string
		from       int
		ma, mb     float64
		draws      int
		wantUnseen bool
	}{
		{"fitted below, from 4", 4, 1, 0.01, 64, false},
		{"no bias seen, from 4", 4, 1e-3, 1e3, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := zeroAbove{mlmc.NewSynthetic(4, 1, 2, 1, 5), tc.from}
			o.Ma, o.Mb = tc.ma, tc.mb
			m, err := Measure[[]float64](o, mlmc.Float64Ops{Dim: 4}, 0, 100_000, tc.draws, 11)
			if err != nil {
				t.Fatal(err)
			}
			if last := m.Report.Levels[len(m.Report.Levels)-1]; last.Moment2 != 0 || last.Level <= tc.from {
				t.Fatalf("the pilot's top level %d is not above a vanished one: %+v", last.Level, last)
			}
			for _, gap := range []float64{1e-2, 1e-4, 1e-6} {
				tg := Target{Gap: gap, Budget: 1e9}
				best, err := Choose(m.Report, "x0", m.Samples, norm(o.XStar), tg, Rules{BestFit: true}, mlmc.Unbounded)
				if err != nil {
					t.Fatal(err)
				}
				if best.vanishedFrom != tc.from {
					t.Fatalf("gap %g: the plan's vanished tail starts at %d, want %d", gap, best.vanishedFrom, tc.from)
				}
				if unseen := best.seen == 0; unseen != tc.wantUnseen {
					t.Fatalf("gap %g: %d levels' means stand out of their noise, the test wants unseen = %v", gap, best.seen, tc.wantUnseen)
				}
				if best.MaxLevel > tc.from-1 || (gap == 1e-6 || tc.wantUnseen) && best.MaxLevel != tc.from-1 {
					t.Errorf("gap %g: best-fit plan at L = %d (bias share %g), want at most, and at 1e-6 or with no bias seen exactly, the last level that did not vanish, %d\n%s", gap, best.MaxLevel, best.BiasShare, tc.from-1, best)
				}
				if gap == 1e-6 {
					bound, err := Choose(m.Report, "x0", m.Samples, norm(o.XStar), tg, Rules{}, mlmc.Unbounded)
					if err != nil {
						t.Fatal(err)
					}
					if !(bound.MaxLevel > best.MaxLevel) {
						t.Errorf("gap %g: the 95%% rule's L = %d is not above the best fit's %d: the rule of three no longer bounds the tail", gap, bound.MaxLevel, best.MaxLevel)
					}
				}
			}
		})
	}
}

// TestNoiseShare: the noise floor counts the noise that moves the iterate,
// tr(P D S) / tr S of it: a preconditioner d I scales it by d, a
// projection onto sum x = const in 4 dimensions keeps about 3/4 of
// isotropic noise.
func TestNoiseShare(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tune   func(p *sgd.Problem)
		lo, hi float64
	}{
		{"plain", func(*sgd.Problem) {}, 1, 1},
		{"preconditioner 0.01", func(p *sgd.Problem) {
			p.Precondition = func(_, d []float64) {
				for i := range d {
					d[i] = 0.01
				}
			}
		}, 0.01 - 1e-12, 0.01 + 1e-12},
		{"projection onto sum x = 0", func(p *sgd.Problem) {
			p.Project = ontoSumZero
		}, 0.55, 0.9},
		// A box whose faces x0 does not touch moves no direction: the
		// share is 1 exactly, not 1 to the rounding of a finite
		// difference (a share that differs in its last digits sends a
		// run down another path).
		{"box with x0 inside", func(p *sgd.Problem) {
			p.X0 = []float64{0.37, -1.3, 2.9, 0.011}
			p.Project = func(x []float64) {
				for i := range x {
					x[i] = math.Min(math.Max(x[i], -100), 100)
				}
			}
		}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := synthetic(4, 1, 2, 1, nil)
			tc.tune(p)
			s, _ := Settings{Target: Target{Gap: 1e-3, Budget: 1_000_000}, Seed: 3}.withDefaults()
			r := newTestRunner(p, s)
			inst, _ := p.NewOracle(9)
			inst.At(r.x, r.x)
			if k, _ := r.noiseShare(inst, mlmc.Float64Ops{Dim: 4}); k < tc.lo || k > tc.hi {
				t.Errorf("noise share %g, want in [%g, %g]", k, tc.lo, tc.hi)
			}
		})
	}
}

// TestStepCapScaleInvariant: the variance cap of a step, its noise floor
// step x Var / 4 at most capShare of the drop, reads the noise that moves
// the iterate: under a preconditioner d I the same run has a step 1/d
// times larger, and so has its cap. A cap on tr S alone would hold the
// preconditioned step at the plain one's, 1/d times too low.
func TestStepCapScaleInvariant(t *testing.T) {
	const d, v, drop = 0.01, 100.0, 1.0
	cap := func(tune func(*sgd.Problem)) float64 {
		p := synthetic(4, 1, 2, 1, nil)
		tune(p)
		s, _ := Settings{Target: Target{Gap: 1e-3, Budget: 1_000_000}, Seed: 3}.withDefaults()
		r := newTestRunner(p, s)
		inst, _ := p.NewOracle(9)
		inst.At(r.x, r.x)
		r.kappa, _ = r.noiseShare(inst, mlmc.Float64Ops{Dim: 4})
		plan := &Plan{Method: "rtmlmc", Kind: mlmc.Kind{Method: mlmc.RTMLMC}, Step: 1e6, Predicted: []MethodCost{{Method: "rtmlmc", Var: v, Cost: 1}}}
		r.capStep(plan, drop)
		return plan.Step
	}
	plain := cap(func(*sgd.Problem) {})
	pre := cap(func(p *sgd.Problem) {
		p.Precondition = func(_, dd []float64) {
			for i := range dd {
				dd[i] = d
			}
		}
	})
	if want := 2 * capShare * drop / v; math.Abs(plain/want-1) > 1e-12 {
		t.Errorf("plain cap %g, want %g", plain, want)
	}
	if math.Abs(pre*d/plain-1) > 1e-9 {
		t.Errorf("cap %g under d = %g (effective %g), %g without: the cap ignores the preconditioner", pre, d, pre*d, plain)
	}
}

// TestStepRecheckedAfterChange: every plan that changes the method or L
// from the one before has its step re-checked for it, under the new
// method's variance cap: its noise floor, step x Var / 4, is at most
// capShare of F(x0) less the objective where it took over (at most F(x0),
// F* being 0).
func TestStepRecheckedAfterChange(t *testing.T) {
	p := synthetic(4, 1, 1, 1, func(s *mlmc.Synthetic) { s.Mb = 0.01 })
	f0, _ := p.Objective(p.X0)
	res, err := Run(p, Settings{Target: Target{Gap: 1e-3, Budget: 2_000_000}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var prev *Plan
	changes := 0
	for _, st := range res.Record.Stages {
		for _, pl := range st.Plans {
			if prev != nil && (pl.Kind != prev.Kind || pl.MaxLevel != prev.MaxLevel) {
				changes++
				if !strings.Contains(pl.Reasons.Step, "re-checked") {
					t.Errorf("%s on levels %d..%d took over from %s on %d..%d without its step re-checked: %s",
						pl.Method, pl.MinLevel, pl.MaxLevel, prev.Method, prev.MinLevel, prev.MaxLevel, pl.Reasons.Step)
				}
				if floor := pl.Step * pl.predictedVar() / 4; floor > capShare*f0*(1+1e-9) {
					t.Errorf("step %g of %s: noise floor %g above the cap", pl.Step, pl.Method, floor)
				}
			}
			prev = pl
		}
	}
	if changes == 0 {
		t.Fatalf("no change of method or L over the stages: %s", res.Record.Summary())
	}
}

// TestSpentBudgetEndsRun: a measurement within a stage (a re-plan's
// pilot) can spend the rest of the budget; the next chunk then has no
// samples to run and must end the run, or the stage's loop scores the same
// point for ever.
func TestSpentBudgetEndsRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		used, till int64
		done       bool
	}{
		{"budget spent", 1000, 1100, true},
		{"budget overspent by a pilot", 1030, 1100, true},
		{"a chunk's end reached, budget left", 500, 500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{s: Settings{Target: Target{Gap: 0.01, Budget: 1000}}, used: tc.used}
			n := 0
			ok, err := r.chunk(nil, tc.till, 0, &n)
			if err != nil || !ok {
				t.Fatalf("chunk: %v, %v", ok, err)
			}
			if r.done != tc.done {
				t.Errorf("done %v after a chunk at %d of 1000 samples; want %v", r.done, tc.used, tc.done)
			}
		})
	}
}

// TestStepTooSmallRaised: a step far too small for the problem (here
// given: 1e-6 on F = |x - X*|^2/2, whose curvature 1 takes steps up to
// about 1; a step search whose candidates ran a few dozen iterations can
// choose one as small where the first steps raise F) holds the run in a
// descent that never reaches its noise floor: the iterate ahead of the
// average at every checkpoint, the gap estimate falling slower than
// 1/samples. The step-too-small test raises it, and the run reaches the
// 1% gap, which 200,000 samples at 1e-6 (a gap of exp(-2 x 1e-6 x
// iterations) >= 0.5) cannot.
func TestStepTooSmallRaised(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		p := synthetic(4, 1, 2, 1, nil)
		f0, _ := p.Objective(p.X0)
		res, err := Run(p, Settings{Target: Target{Gap: 0.01, Budget: 200_000}, Step: 1e-6, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		raised := false
		for _, st := range res.Record.Stages {
			for _, n := range st.Notes {
				raised = raised || strings.Contains(n, "the step was too small")
			}
		}
		if !raised {
			t.Errorf("seed %d: the step was never raised:\n%s", seed, res.Record.Summary())
		}
		if f, _ := p.Objective(res.X); f/f0 > 0.01 {
			t.Errorf("seed %d: final gap %.3g, want at most 0.01:\n%s", seed, f/f0, res.Record.Summary())
		}
	}
}

// failingAfter is mlmc.Synthetic whose draws fail after a number of them
// across the run's oracles: an oracle that breaks mid-run.
type failingAfter struct {
	*mlmc.Synthetic
	left *int
}

func (f failingAfter) Draw(l int) (mlmc.Sample, int64, error) {
	if *f.left <= 0 {
		return nil, 0, errors.New("the oracle broke")
	}
	*f.left--
	return f.Synthetic.Draw(l)
}

// TestOracleErrorMidRun: an oracle error in the middle of a stage ends
// the run, not the process: the run returns its answer so far, and its
// record says why it stopped.
func TestOracleErrorMidRun(t *testing.T) {
	p := synthetic(3, 1, 2, 1, nil)
	left := 10_000
	inner := p.NewOracle
	p.NewOracle = func(seed uint64) (sgd.Instance, error) {
		inst, err := inner(seed)
		if err != nil {
			return inst, err
		}
		inst.Oracle = failingAfter{inst.Oracle.(*mlmc.Synthetic), &left}
		return inst, nil
	}
	// Past the pilots and the step search (about 3,000 samples here), in
	// the first stage's run.
	res, err := Run(p, Settings{Target: Target{Gap: 1e-3, Budget: 4_000_000}, Seed: 1})
	if err != nil {
		t.Fatalf("error %v, want the run's answer so far with the oracle's error in its record", err)
	}
	if !strings.Contains(res.Record.Stopped, "the oracle broke") {
		t.Errorf("the run stopped because %q, want the oracle's error", res.Record.Stopped)
	}
}

// TestRecorderEndsRun: a caller's recorder that answers Stop ends the run
// at that step: the answer is the point the recorder saw, the record says
// a recorder stopped it, and nothing is drawn or scored after the verdict,
// also where F at that point is not finite (which would otherwise send
// the run back to its last checkpoint) and where another recorder answers
// Diverge at the same event. A Diverge alone does not end it: auto handles
// an answer outside F's domain itself, and the run ends as it would
// without the recorder.
func TestRecorderEndsRun(t *testing.T) {
	const at, budget = 20_000, 2_000_000
	settings := Settings{Target: Target{Gap: 1e-5, Budget: budget}, Seed: 1}
	alone, err := Run(synthetic(4, 1, 2, 1, nil), settings)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Samples < 4*at {
		t.Fatalf("the run alone ended at %d samples: too soon to see a verdict at %d end it", alone.Samples, at)
	}
	for _, tc := range []struct {
		name     string
		st       sgd.Status
		infinite bool // F is +Inf everywhere once the verdict is given
		beside   bool // a second recorder answers Diverge at the verdict's event
	}{
		{"stop", sgd.Stop, false, false},
		{"stop, then F infinite", sgd.Stop, true, false},
		{"stop beside a diverge", sgd.Stop, false, true},
		{"diverge", sgd.Diverge, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := synthetic(4, 1, 2, 1, nil)
			said, after := false, 0
			var seen []float64
			rec := sgd.RecorderFunc(func(op sgd.Op, loc *sgd.Location) sgd.Status {
				if said {
					after++
					return sgd.Continue
				}
				if loc.Cost >= at {
					said, seen = true, slices.Clone(loc.X)
					return tc.st
				}
				return sgd.Continue
			})
			recs := []sgd.Recorder{rec}
			if tc.beside {
				recs = append(recs, sgd.RecorderFunc(func(op sgd.Op, loc *sgd.Location) sgd.Status {
					if loc.Cost >= at {
						return sgd.Diverge
					}
					return sgd.Continue
				}))
			}
			s := settings
			s.Score = func(x []float64) (float64, float64) {
				if said && tc.infinite {
					return math.Inf(1), 0
				}
				return p.Objective(x)
			}
			res, err := Run(p, s, recs...)
			if err != nil {
				t.Fatal(err)
			}
			if !said {
				t.Fatalf("the run ended at %d samples, before the verdict at %d", res.Samples, at)
			}
			if tc.st == sgd.Diverge {
				if res.Samples != alone.Samples || res.Diverged || res.Record.Stopped != alone.Record.Stopped {
					t.Errorf("Diverge at %d samples: %d samples, diverged %v, stopped %q; alone %d samples, stopped %q",
						at, res.Samples, res.Diverged, res.Record.Stopped, alone.Samples, alone.Record.Stopped)
				}
				return
			}
			if after != 0 || res.Samples > 2*at || !strings.HasPrefix(res.Record.Stopped, "a recorder stopped the run") || res.Diverged || res.Reached {
				t.Errorf("after the verdict at %d samples: %d more calls, %d samples, diverged %v, reached %v, stopped %q",
					at, after, res.Samples, res.Diverged, res.Reached, res.Record.Stopped)
			}
			if !slices.Equal(res.X, seen) {
				t.Errorf("the answer %v is not the point the recorder stopped at, %v", res.X, seen)
			}
		})
	}
}

// TestInfiniteVarianceLeavesStep: an RT-MLMC plan whose predicted variance
// is infinite keeps the step its search chose, where a cap to a finite
// noise floor would set it to 0 (step x Var / 4 is finite only there), a
// run that could no longer move; a finite variance is capped as usual.
func TestInfiniteVarianceLeavesStep(t *testing.T) {
	p := synthetic(4, 1, 2, 1, nil)
	r := newTestRunner(p, Settings{Target: Target{Gap: 1e-3, Budget: 100_000}})
	r.startGap = 0.5
	for _, tc := range []struct {
		v        float64
		want     float64 // the step after the cap
		reasonOn string
	}{
		{math.Inf(1), 0.3, "infinite"},
		{1e6, 2 * capShare * 0.5 * 1 / 1e6, "capped"},
	} {
		pl := &Plan{Method: mlmc.RTMLMC.String(), Kind: mlmc.Kind{Method: mlmc.RTMLMC}, Step: 0.3,
			Predicted: []MethodCost{{Method: mlmc.RTMLMC.String(), Var: tc.v, Cost: 4, VarCost: 4 * tc.v}}}
		r.capStep(pl, 1)
		if pl.Step != tc.want || !strings.Contains(pl.Reasons.Step, tc.reasonOn) {
			t.Errorf("Var %g: step %g (%q), want %g", tc.v, pl.Step, pl.Reasons.Step, tc.want)
		}
	}
}

// TestClaimMessageIsTheEstimate: a run that claims its target says in its
// stop reason the gap estimate its record holds (the claim, the larger of
// the last two checkpoints' estimates), not the last checkpoint's alone.
func TestClaimMessageIsTheEstimate(t *testing.T) {
	claims := 0
	for seed := uint64(1); seed <= 6; seed++ {
		res, err := Run(synthetic(4, 1, 2, 1, nil), Settings{Target: Target{Gap: 1e-2, Budget: 400_000}, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Record.Claimed() {
			continue
		}
		claims++
		want := fmt.Sprintf("the gap estimate %.3g reached", float64(res.Record.GapEstimate))
		if !strings.HasPrefix(res.Record.Stopped, want) {
			t.Errorf("seed %d: stopped %q, the record's gap estimate %g", seed, res.Record.Stopped, float64(res.Record.GapEstimate))
		}
	}
	if claims == 0 {
		t.Fatal("no run claimed its target: nothing checked")
	}
}

// TestSegmentsCoverNoiseShare: on a projected problem the draws that read
// the gradient noise's share along the feasible set are the first pilot's:
// its segment ends where the run's samples do, so a replay draws them too.
func TestSegmentsCoverNoiseShare(t *testing.T) {
	p := synthetic(4, 1, 2, 1, func(o *mlmc.Synthetic) { o.Mb = 0.01 })
	p.Project = ontoSumZero
	s, _ := Settings{Target: Target{Gap: 1e-2, Budget: 4_000_000}, Seed: 5}.withDefaults()
	r := newTestRunner(p, s)
	if _, err := r.measure("x0", 0.1, 4_000); err != nil {
		t.Fatal(err)
	}
	last := r.segments[len(r.segments)-1]
	if last.Until != r.used {
		t.Errorf("the pilot's segment ends at %d samples, the run has drawn %d", last.Until, r.used)
	}
	drawn := 0
	for _, q := range last.Pilot.Queries {
		drawn += q.Draws
	}
	if q := last.Pilot.Queries[len(last.Pilot.Queries)-1]; q.Level != s.MinLevel || q.Draws != 32 {
		t.Errorf("the pilot's last queries %+v, want the noise share's 32 at level %d (of %d queries)", q, s.MinLevel, drawn)
	}
}

// TestNoGradientErrorNamesTheReading: where |grad F(x0)| reads as zero
// (along the feasible set it can be, with the whole gradient across the
// constraint) the error says what was read, beside the pilot's
// unprojected top row, rather than quoting only the row, whose mean may
// stand well above its noise.
func TestNoGradientErrorNamesTheReading(t *testing.T) {
	p := synthetic(4, 1, 2, 1, nil)
	inst, err := p.NewOracle(4)
	if err != nil {
		t.Fatal(err)
	}
	inst.At(p.X0, p.X0)
	m, err := Measure(inst.Oracle, mlmc.Float64Ops{Dim: 4}, 0, 20_000, 16, 5)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Choose(m.Report, "x0", m.Samples, 0, Target{Gap: 1e-2, Budget: 1e9}, Rules{}, mlmc.Unbounded)
	var ae *Error
	if !errors.As(err, &ae) || !strings.Contains(ae.Measurement, "read as 0") || !strings.Contains(ae.Measurement, "unprojected") {
		t.Errorf("error %v: want one that gives the reading of |grad F(x0)|, 0, and calls the row's figures unprojected", err)
	}
}

// TestDegenerateRaisedAboveLevels: a plan made where every H^l vanished,
// raised by an earlier stage's L above the levels it measured, has no
// variance rate to extrapolate with; its predictions and its law stay
// finite, its reasons claim no rate, and its estimator builds (a NaN law
// stopped the whole run).
func TestDegenerateRaisedAboveLevels(t *testing.T) {
	v := &vanishing{x: make([]float64, 3), xStar: []float64{0.5, -0.25, 0.75}, rng: rand.New(rand.NewPCG(1, 3))}
	ops := mlmc.Float64Ops{Dim: 3}
	rep, err := mlmc.MeasureLevels[[]float64](v, ops, mlmc.LevelsConfig{MinLevel: 0, MaxLevel: 2, Draws: 16, Seed: 1, Untimed: true, Brief: true})
	if err != nil {
		t.Fatal(err)
	}
	sawRT := false
	for _, floor := range []int{3, 5, 8} {
		p, err := ChooseFrom(rep, "x0", 100, 1, Target{Gap: 0.01, Budget: 1_000_000}, Rules{BestFit: true}, mlmc.Unbounded, floor)
		if err != nil {
			t.Fatalf("floor %d: %v", floor, err)
		}
		if !p.Degenerate || p.MaxLevel != floor {
			t.Fatalf("floor %d: want a degenerate plan at L = %d, got %s", floor, floor, p)
		}
		for _, pr := range p.Predicted {
			if math.IsNaN(pr.VarCost) || math.IsInf(pr.VarCost, 0) {
				t.Errorf("floor %d: %s's predicted variance x cost is %g", floor, pr.Method, pr.VarCost)
			}
		}
		switch p.Kind.Method {
		case mlmc.RTMLMC:
			sawRT = true
			sum := 0.0
			for l, q := range p.LevelProbs {
				if !(q > 0 && q <= 1) {
					t.Errorf("floor %d: RT-MLMC's probability of level %d is %g", floor, l, q)
				}
				sum += q
			}
			if !(math.Abs(sum-1) <= 1e-12) {
				t.Errorf("floor %d: RT-MLMC's law sums to %g", floor, sum)
			}
		case mlmc.VMLMC:
			for l, n := range p.LevelDraws {
				if n < 1 {
					t.Errorf("floor %d: V-MLMC draws %d queries of level %d", floor, n, l)
				}
			}
		}
		for what, r := range map[string]string{"method": p.Reasons.Method, "law": p.Reasons.Law} {
			if strings.Contains(r, "NaN") || strings.Contains(r, "fitted b") {
				t.Errorf("floor %d: the %s's reason reads rates that were not fitted: %s", floor, what, r)
			}
		}
		if _, err := mlmc.New(p.Kind, p.Config(1), ops, mlmc.Oracle[[]float64](v)); err != nil {
			t.Errorf("floor %d: the plan's estimator: %v", floor, err)
		}
	}
	if !sawRT {
		t.Error("no floor gave RT-MLMC, whose law the NaN reached: the test no longer reaches the case it guards")
	}
}

// TestLawsWithoutMoments: where every level's second moment and variance
// are zero, RT-MLMC's law weighs each level alike and V-MLMC draws one
// query per level, never NaN.
func TestLawsWithoutMoments(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }
	for _, tc := range []struct {
		name  string
		lev   []level
		probs []float64
		draws []int
	}{
		{"measured", []level{{moment2: 4, varY: 4, img: 1}, {moment2: 1, varY: 1, img: 4}}, []float64{0.8, 0.2}, []int{4, 1}},
		{"all zero", []level{{img: 1}, {img: 2}, {img: 4}}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, []int{1, 1, 1}},
	} {
		q := rtLaw(tc.lev)
		if len(q) != len(tc.probs) {
			t.Fatalf("%s: law %v, want %v", tc.name, q, tc.probs)
		}
		for i := range q {
			if !near(q[i], tc.probs[i]) {
				t.Errorf("%s: RT-MLMC's law %v, want %v", tc.name, q, tc.probs)
				break
			}
		}
		if n := vmLaw(tc.lev); !slices.Equal(n, tc.draws) {
			t.Errorf("%s: V-MLMC's draws %v, want %v", tc.name, n, tc.draws)
		}
	}
}
