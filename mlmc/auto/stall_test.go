package auto

import (
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/sgd"
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
// stage's average of a million iterates rather than starting a new one at
// the iterate with the few iterations left (200 samples of L-SGD at level
// 0 at step 1e-3, which move the iterate little) - unless that average is
// above the iterate beyond their noise. F = |x - X*|^2 / 2
// (mlmc.Synthetic), F* = 0; the average or the iterate is 5 from X*.
func TestRunOnKeepsAverage(t *testing.T) {
	for _, tc := range []struct {
		name         string
		keep         bool
		avgOff, xOff float64 // the average's and the iterate's distance from X*
		fMin, fMax   float64 // F at the answer within [fMin, fMax)
	}{
		{"the last plan runs on: the average goes on", true, 0, 5, 0, 1e-3},
		{"a new plan: the average starts at the iterate", false, 0, 5, 5, 13},
		{"the last plan runs on, its average above the iterate: it starts again", true, 5, 0, 0, 1e-3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, r := runOnRunner()
			r.avg[0] += tc.avgOff
			r.x[0] += tc.xOff
			r.lastN, r.used = 1_000_000, runOnBudget-200
			st := &Stage{Target: 1e-3}
			r.runStage(st, 1e-3, true, 1_000, tc.keep)
			f, _ := p.Objective(r.avg)
			if f < tc.fMin || f >= tc.fMax {
				t.Errorf("F at the answer %.4g, want in [%g, %g) (%s)", f, tc.fMin, tc.fMax, st.Why)
			}
		})
	}
}

// TestRunOnWithoutPilotKeepsAverage: through a stage's own path, a stage
// whose pilot would take more than half of the few samples left runs on
// with the last plan and goes on with the last stage's average: the last
// stage ran L-SGD from X* (its average at X*), the iterate is then moved
// 5 away, and the stage without a pilot, 200 samples, keeps its answer at
// X*. With the average started again at the iterate it would stay near
// the iterate (F about 9).
func TestRunOnWithoutPilotKeepsAverage(t *testing.T) {
	p, r := runOnRunner()
	const budget = runOnBudget
	r.used = budget - 400_000
	r.runStage(&Stage{Target: 1e-2}, 1e-2, false, 1_000, false)
	if r.lastN == 0 {
		t.Fatalf("the first stage left no count of its average's iterates")
	}
	r.x[0] += 5
	r.used, r.lastStage = budget-200, 500_000
	if err := r.stage(1, 1e-3, true); err != nil {
		t.Fatal(err)
	}
	st := r.rec.Stages[len(r.rec.Stages)-1]
	if !slices.ContainsFunc(st.Notes, func(n string) bool { return strings.Contains(n, "no pilot") }) {
		t.Fatalf("the stage took a pilot: %q", st.Notes)
	}
	if f, _ := p.Objective(r.avg); f >= 1e-3 {
		t.Errorf("F at the answer %.4g, want below 1e-3: the stage without a pilot did not go on with the last stage's average (%s)", f, st.Why)
	}
}

// runOnBudget is runOnRunner's budget.
const runOnBudget = 1_000_000

// runOnRunner is a runner on F = |x - X*|^2 / 2 (mlmc.Synthetic without
// bias, noise 0.01, levels 0..1), its iterate and average at X*, running
// L-SGD at level 0 with step 1e-3; F(x0), which the safeguard reads, set
// above every point the tests use.
func runOnRunner() (*sgd.Problem, *runner) {
	p := synthetic(4, 1, 2, 1, func(o *mlmc.Synthetic) { o.Max, o.Mb, o.Ma = 1, 0.01, 0 })
	s, _ := Settings{Target: Target{Gap: 1e-3, Budget: runOnBudget}, Seed: 5}.withDefaults()
	r := newTestRunner(p, s)
	ref := mlmc.NewSynthetic(4, 1, 2, 1, 0)
	copy(r.x, ref.XStar)
	copy(r.avg, ref.XStar)
	r.f0 = 100
	plan := &Plan{Kind: mlmc.Kind{Method: mlmc.LSGD}, Method: mlmc.LSGD.String(), Step: 1e-3, seen: 1}
	r.plan, r.step = plan, plan.Step
	return p, r
}
