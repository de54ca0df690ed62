package auto

import (
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestStalledStageGivesWay: a stage held above its target gives way to
// the next once its gap estimate has not fallen by a tenth over a fifth of
// the budget; the last stage runs on to the budget. The plan is L-SGD at
// level 0 of the synthetic F = |x - X*|^2 / 2, whose bias u (|u| = 1)
// holds the iterate at X* - u, a relative gap of 0.53, and the oracle
// serves no level above 1, so the stage cannot raise L: its estimate
// settles at the plan's bias share, 0.05, five times its target 0.01.
func TestStalledStageGivesWay(t *testing.T) {
	for _, tc := range []struct {
		name string
		last bool
		why  string
	}{
		{"a stage before the last", false, "the next stage plans for its tighter target"},
		{"the last stage", true, "ran out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := synthetic(4, 1, 2, 1, func(o *mlmc.Synthetic) { o.Max, o.Mb = 1, 0.01 })
			const budget = 1_000_000
			s, _ := Settings{Target: Target{Gap: 1e-3, Budget: budget}, Seed: 5}.withDefaults()
			r := newTestRunner(p, s)
			plan := &Plan{Kind: mlmc.Kind{Method: mlmc.LSGD}, Method: mlmc.LSGD.String(), BiasShare: 0.05, Step: 0.3, seen: 1}
			r.plan, r.step = plan, plan.Step
			st := &Stage{Target: 0.01}
			r.runStage(st, 0.01, tc.last, 1_000, false)
			if !strings.Contains(st.Why, tc.why) {
				t.Errorf("the stage ended: %q, want %q", st.Why, tc.why)
			}
			if !tc.last && (r.used >= budget || r.used < budget/5) {
				t.Errorf("the stage gave way at %d samples, want between %d (a fifth of the budget) and %d", r.used, budget/5, budget)
			}
		})
	}
}

// TestStallWindowOpensAtFiniteEstimate: a stage whose first checkpoints
// have no gap estimate yet (+Inf) has not stalled, however large its first
// chunks are beside the budget: L-SGD at level 10 draws 1,024 samples an
// iteration, a fifth of a 4,000-sample budget being under one.
func TestStallWindowOpensAtFiniteEstimate(t *testing.T) {
	p := synthetic(4, 1, 2, 1, func(o *mlmc.Synthetic) { o.Max, o.Mb = 12, 0.01 })
	s, _ := Settings{Target: Target{Gap: 1e-3, Budget: 4_000}, Seed: 5}.withDefaults()
	r := newTestRunner(p, s)
	plan := &Plan{Kind: mlmc.Kind{Method: mlmc.LSGD}, Method: mlmc.LSGD.String(), MaxLevel: 10, BiasShare: 0.05, Step: 0.3, seen: 1}
	r.plan, r.step = plan, plan.Step
	st := &Stage{Target: 0.1}
	r.runStage(st, 0.1, false, 1_000, false)
	if strings.Contains(st.Why, "+Inf") {
		t.Errorf("the stage gave way on no estimate: %q", st.Why)
	}
}

// TestRunOnKeepsAverage: a stage that runs on with the last plan, without
// a pilot (the budget left too small for one), goes on with the last
// stage's average of a million iterates, which sits at X*, rather than
// starting a new one at the iterate, here 5 from X*, with the few
// iterations left (200 samples of L-SGD at level 0 at step 1e-3, which
// barely move it): its answer stays at X*, where a fresh average stays
// near the iterate. F = |x - X*|^2 / 2 (mlmc.Synthetic), F* = 0.
func TestRunOnKeepsAverage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keep       bool
		fMin, fMax float64 // F at the answer within [fMin, fMax)
	}{
		{"the last plan runs on: the average goes on", true, 0, 1e-3},
		{"a new plan: the average starts at the iterate", false, 5, 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := synthetic(4, 1, 2, 1, func(o *mlmc.Synthetic) { o.Max, o.Mb, o.Ma = 1, 0.01, 0 })
			const budget = 1_000_000
			s, _ := Settings{Target: Target{Gap: 1e-3, Budget: budget}, Seed: 5}.withDefaults()
			r := newTestRunner(p, s)
			ref := mlmc.NewSynthetic(4, 1, 2, 1, 0)
			copy(r.avg, ref.XStar)
			copy(r.x, ref.XStar)
			r.x[0] += 5
			r.f0 = 100 // the safeguard's F(x0): above every point here
			r.lastN, r.used = 1_000_000, budget-200
			plan := &Plan{Kind: mlmc.Kind{Method: mlmc.LSGD}, Method: mlmc.LSGD.String(), Step: 1e-3, seen: 1}
			r.plan, r.step = plan, plan.Step
			st := &Stage{Target: 1e-3}
			r.runStage(st, 1e-3, true, 1_000, tc.keep)
			f, _ := p.Objective(r.avg)
			if f < tc.fMin || f >= tc.fMax {
				t.Errorf("F at the answer %.4g, want in [%g, %g) (%s)", f, tc.fMin, tc.fMax, st.Why)
			}
		})
	}
}
