package auto

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestGlanceAtDegenerateStart: at a start where every H^l vanishes the
// first plan is degenerate, as a full measurement would say, at no more
// than half the full measurement's samples; where the H^l do not vanish
// the glance makes no plan and the full measurement follows, its samples
// counted beside the glance's.
func TestGlanceAtDegenerateStart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		degenerate bool
	}{
		{"every H^l vanishes at x0", true},
		{"a bias to see at x0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vanishingProblem()
			if !tc.degenerate {
				p = synthetic(3, 1, 2, 1, nil)
			}
			s, _ := Settings{Target: Target{Gap: 0.01, Budget: 4_000_000}, Seed: 5}.withDefaults()
			r := newTestRunner(p, s)
			budget := r.pilotBudget(0) / 2
			plan, err := r.measure("x0", 0.1, budget)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Degenerate != tc.degenerate {
				t.Fatalf("degenerate %v, want %v: %s", plan.Degenerate, tc.degenerate, plan)
			}
			// The full measurement at x0, on its own oracle.
			inst, err := p.NewOracle(99)
			if err != nil {
				t.Fatal(err)
			}
			inst.At(p.X0, p.X0)
			full, err := Measure(inst.Oracle, mlmc.Float64Ops{Dim: len(p.X0)}, 0, budget, s.MinDraws, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.segments) == 0 || r.segments[0].Pilot == nil {
				t.Fatalf("the glance is not a pilot segment: %+v", r.segments)
			}
			glance := r.segments[0].Pilot.Samples
			if tc.degenerate {
				if len(r.segments) != 1 || 2*glance > full.Samples || r.used != glance || plan.Samples != glance {
					t.Errorf("%d segments; the glance drew %d samples (the plan says %d, the run counted %d), want one segment of at most half the full measurement's %d",
						len(r.segments), glance, plan.Samples, r.used, full.Samples)
				}
				if r.gradNorm0 <= 0 {
					t.Errorf("|grad F(x0)| = %g after a degenerate glance, want the glance's reading", r.gradNorm0)
				}
				return
			}
			if len(r.segments) != 2 || r.used != glance+plan.Samples || plan.Samples < full.Samples/2 {
				t.Errorf("%d segments, %d samples counted, the glance %d and the plan's measurement %d (a full one draws %d): want the glance and a full measurement, both counted",
					len(r.segments), r.used, glance, plan.Samples, full.Samples)
			}
		})
	}
}

// TestStepSearchStopsPastBest: the step search runs its candidates from the
// largest and stops after two in a row end clearly above the best; run on
// the same draws with the same share each, every candidate it did not run
// ends clearly above the best, so it would not have won or tied.
func TestStepSearchStopsPastBest(t *testing.T) {
	p := synthetic(3, 1, 2, 1, nil)
	s, _ := Settings{Target: Target{Gap: 0.01, Budget: 1_000_000}, Seed: 2}.withDefaults()
	budget := int64(len(s.Steps)) * 400
	search := func(steps []float64, budget int64) *Plan {
		r := newTestRunner(p, s)
		plan, err := r.measure("x0", 0.1, 2000)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.chooseStep(plan, steps, budget, 0.1); err != nil {
			t.Fatal(err)
		}
		return plan
	}
	// Ascending, to check the search sorts them.
	steps := slices.Clone(s.Steps)
	slices.Reverse(steps)
	plan := search(steps, budget)
	ran := len(plan.Steps)
	if ran == len(steps) {
		t.Fatalf("all %d candidates ran: %+v", ran, plan.Steps)
	}
	for i := 1; i < ran; i++ {
		if plan.Steps[i].Step >= plan.Steps[i-1].Step {
			t.Fatalf("candidate %d (%.3g) after %.3g: want the largest first", i, plan.Steps[i].Step, plan.Steps[i-1].Step)
		}
	}
	best := bestStep(plan.Steps)
	clearly := func(sc StepScore) bool {
		return sc.Value-plan.Steps[best].Value > 2*max(sc.SE, plan.Steps[best].SE)
	}
	if best > ran-1-stepsPastBest || !clearly(plan.Steps[ran-1]) || !clearly(plan.Steps[ran-2]) {
		t.Errorf("stopped after %+v with the best at %d: want two clearly worse in a row last", plan.Steps, best)
	}
	desc := slices.Clone(s.Steps)
	slices.SortFunc(desc, func(a, b float64) int { return cmp.Compare(b, a) })
	rest := desc[ran:]
	others := search(rest, budget/int64(len(desc))*int64(len(rest)))
	for _, sc := range others.Steps {
		if !clearly(sc) {
			t.Errorf("candidate %.3g, not run, ends at %.6g, not clearly above the best %.6g (step %.3g)",
				sc.Step, sc.Value, plan.Steps[best].Value, plan.Steps[best].Step)
		}
	}
}

// TestBiasFitPowers: the fit's powers, built level by level and by
// squaring, agree to rounding with 2^(-a n) over the grid's rates; and the
// fit of levels 1..8 (level 4's variance not finite, so a gap in the
// levels fitted) gives the amplitudes and bias bounds of the formulas
// with an exponential per level, A(a) = sum w y x / sum w x^2 with
// x = 2^(-2a(l - l1)), and sqrt(A_up) 2^(-a(L + 1 - l1)) / (1 - 2^-a).
func TestBiasFitPowers(t *testing.T) {
	for _, a := range []float64{-1, -0.37, 0, 0.01, 0.5, 1.23, 4} {
		for n := -3; n <= 40; n++ {
			got, want := powInt(math.Exp2(-a), n), math.Exp2(-a*float64(n))
			if math.Abs(got-want) > 1e-13*want {
				t.Errorf("powInt(2^-%g, %d) = %.17g, want %.17g", a, n, got, want)
			}
		}
	}
	var levels []mlmc.LevelStat
	for l := 1; l <= 8; l++ {
		v := 4 * math.Exp2(-1.5*float64(l))
		if l == 4 {
			v = math.Inf(1)
		}
		levels = append(levels, mlmc.LevelStat{Level: l, Draws: 64, MeanNorm: 0.8 * math.Exp2(-0.9*float64(l)) * (1 + 0.1*math.Sin(float64(l))), Var: v})
	}
	f, err := fitBias(levels, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range f.grid {
		var sff, syf float64
		for k, l := range f.ls {
			x := math.Exp2(-2 * a * (l - f.l1))
			sff += f.ws[k] * x * x
			syf += f.ws[k] * f.ys[k] * x
		}
		if want := math.Max(syf/sff, 0); math.Abs(f.amp[i]-want) > 1e-12*math.Max(want, 1e-300) {
			t.Fatalf("a = %.2f: amplitude %.17g, want %.17g", a, f.amp[i], want)
		}
	}
	minChi := slices.Min(f.chi2)
	for L := 0; L <= 12; L++ {
		want := 0.0
		for i, a := range f.grid {
			if a < f.low || f.chi2[i] > minChi+4 {
				continue
			}
			want = math.Max(want, math.Sqrt(math.Max(f.amp[i], 0)+2*f.ase[i])*math.Exp2(-a*(float64(L+1)-f.l1))/(1-math.Exp2(-a)))
		}
		if got := f.bias(L); want == 0 || math.Abs(got-want) > 1e-12*want {
			t.Errorf("bias(%d) = %.17g, want %.17g", L, got, want)
		}
	}
}

// TestStepRaisedAfterCap: a step the last plan's variance cap held down
// rises for a new plan in proportion to how much less noisy its
// estimates are predicted to be at the upper bound of its variance
// (Plan.predictedHigh: the same noise floor with the new measurement's
// few draws read as high as they allow), up to the step before that cap;
// a step no cap lowered, or a noisier new plan, keeps the last step.
func TestStepRaisedAfterCap(t *testing.T) {
	for _, tc := range []struct {
		name               string
		uncapped, varRatio float64
		raised             bool // want min(uncapped, 0.001 x varRatio x predicted / its upper bound)
	}{
		{"capped, 50 times less noise", 0.1, 50, true},
		{"capped, 5,000 times less noise: up to the uncapped step", 0.1, 5000, true},
		{"not capped", 0, 50, false},
		{"capped, a noisier plan", 0.1, 0.5, false},
		{"capped, the last plan's variance unknown", 0.1, math.NaN(), false},
		{"capped, the last plan's variance zero", 0.1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := synthetic(3, 1, 2, 1, nil)
			s, _ := Settings{Target: Target{Gap: 0.01, Budget: 4_000_000}, Seed: 4}.withDefaults()
			r := newTestRunner(p, s)
			np, err := r.measure("x0", 0.1, 20_000)
			if err != nil {
				t.Fatal(err)
			}
			old := *np
			old.Predicted = []MethodCost{{Method: old.Method, Var: tc.varRatio * np.predictedVar()}}
			old.uncapped = tc.uncapped
			r.plan, r.step = &old, 0.001
			want := 0.001
			if tc.raised {
				pv, high := np.predictedVar(), np.predictedVarHigh()
				if !(high > pv) {
					t.Fatalf("the plan's upper bound %.6g is not above its predicted variance %.6g: the test needs one that is", high, pv)
				}
				want = math.Min(tc.uncapped, 0.001*tc.varRatio*pv/high)
			}
			if err := r.recheckStep(np, 20_000); err != nil {
				t.Fatal(err)
			}
			if math.Abs(np.Step-want) > 1e-12*want {
				t.Errorf("step %.6g, want %.6g: %s", np.Step, want, np.Reasons.Step)
			}
		})
	}
}

// TestGradNormAt: the reading of |grad F| at a degenerate start, on the
// vanishing oracle at x = 0 (h^0 = -X* + 0.3 N(0, I)): |mean|^2 - Var/n is
// unbiased for |X*|^2 (|mean|^2 alone is 3 x 0.09 / n above it, 0.0675 at
// n = 4). Over 2,000 readings of 4 draws each (a reading's standard
// deviation about 0.29) their mean lies within 0.026, 4 standard errors,
// of |X*|^2 (a false alarm about once in 15,000 runs); the square root's
// floor at 0 binds in about one reading in a thousand.
func TestGradNormAt(t *testing.T) {
	p := vanishingProblem()
	inst, err := p.NewOracle(17)
	if err != nil {
		t.Fatal(err)
	}
	inst.At(p.X0, p.X0)
	want := 0.5*0.5 + 0.25*0.25 + 0.75*0.75
	sum := 0.0
	const reps = 2000
	for range reps {
		y, _, err := gradNormAt(inst.Oracle, 0, 4, 3)
		if err != nil {
			t.Fatal(err)
		}
		sum += y
	}
	if got := sum / reps; math.Abs(got-want) > 0.026 {
		t.Errorf("mean of |grad F|^2 readings %.4f, want %.4f within 0.026", got, want)
	}
}

// TestSmallBudgetDegenerateStart: with a budget so small that the step
// search's share after a degenerate glance cannot run its candidates'
// iterations, the search runs again with twice the samples, as a failed
// measurement does, instead of ending the run.
func TestSmallBudgetDegenerateStart(t *testing.T) {
	p := vanishingProblem()
	res, err := Run(p, Settings{Target: Target{Gap: 0.1, Budget: 20_000}, Seed: 2})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if !res.Record.Stages[0].Plans[0].Degenerate {
		t.Fatalf("the first plan is not degenerate: the test needs a degenerate glance")
	}
}
