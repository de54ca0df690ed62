package auto

import "testing"

// TestCeilingBelongsToItsPlan: the step-too-small test never raises the
// step to one the run has halved while the plan runs on, but a plan with
// another L clears that ceiling: the halving told of the noise floor (or
// the bias) of the last plan's estimator, and a deeper L's estimator has
// its floor at another step. Kept, a ceiling set while the first plan's
// iterates settled held every later plan's step below it for the rest of
// the run.
func TestCeilingBelongsToItsPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		deeper int
		raised bool
	}{
		{"the same method and L: the halving holds", 0, false},
		{"L two levels deeper: the halving no longer holds", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, first := halvedRunner(t)
			next := *first
			if tc.deeper > 0 {
				r.lFloor = first.MaxLevel + tc.deeper
				np, err := r.measure("a re-plan", 0.1, 40_000)
				if err != nil {
					t.Fatal(err)
				}
				next = *np
			}
			if err := r.recheckStep(&next, 40_000); err != nil {
				t.Fatal(err)
			}
			if next.Step*3.2 < 0.02 {
				t.Fatalf("the re-checked step %g is too small for this test: a raise would stay below the ceiling 0.02 anyway", next.Step)
			}
			r.plan, r.step = &next, next.Step
			// A window in which the run descended at every checkpoint while
			// its gap estimate fell from 0.6 only to 0.5.
			if got := r.raiseStep(true, 0.5, 0.6); got != tc.raised {
				t.Errorf("%s L=%d after %s L=%d, step %g, ceiling %g: raised %v, want %v", next.Method, next.MaxLevel, first.Method, first.MaxLevel, next.Step, r.ceiling, got, tc.raised)
			}
		})
	}
}

// TestFailedTakeOverKeepsCeiling: a step rule that fails for a new plan
// (here every candidate's share too small to run) leaves the last plan
// running, and its ceiling with it.
func TestFailedTakeOverKeepsCeiling(t *testing.T) {
	r, first := halvedRunner(t)
	r.lFloor = first.MaxLevel + 2
	np, err := r.measure("a re-plan", 0.1, 40_000)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.chooseStep(np, r.s.Steps, 10, 0.1); err == nil {
		t.Fatal("a step search of 10 samples succeeded: the test needs it to fail")
	}
	if r.ceiling != 0.02 {
		t.Errorf("ceiling %g after the failed step search, want the last plan's 0.02", r.ceiling)
	}
}

// halvedRunner is a runner on a synthetic problem whose plan, measured at
// x0, runs at step 0.01 after the stationarity test halved 0.02.
func halvedRunner(t *testing.T) (*runner, *Plan) {
	t.Helper()
	s, _ := Settings{Target: Target{Gap: 1e-2, Budget: 4_000_000}, Seed: 5}.withDefaults()
	r := newTestRunner(synthetic(4, 1, 2, 1, nil), s)
	first, err := r.measure("x0", 0.1, 40_000)
	if err != nil {
		t.Fatal(err)
	}
	first.Step = 0.01
	r.plan, r.step = first, first.Step
	r.lowerCeiling(0.02)
	return r, first
}
