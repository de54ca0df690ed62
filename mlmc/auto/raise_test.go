package auto

import (
	"math"
	"strings"
	"testing"
)

// TestStepForRaise: after a stage stationary above its target, the step
// of the plan with the deeper L is checked from the step before the
// stationarity test's halvings where they did not lower F at the average
// beyond its noise (they did not meet the step's noise floor; the bias of
// L held the run, and a step 2^3 times smaller only crawls), and from the
// halved step where they did.
func TestStepForRaise(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		step, unhalved, fUnhalved, f, nz float64
		want                             float64
	}{
		{"no halvings", 0.01, 0, 0, -1, 0, 0.01},
		{"F flat, exact objective", 0.00125, 0.01, -1, -1, 0, 0.01},
		{"F rose: the iterate drawn to F^L's minimiser", 0.00125, 0.01, -1, -0.9, 0, 0.01},
		{"F fell within its noise", 0.00125, 0.01, -1, -1.05, 0.1, 0.01},
		{"F fell beyond its noise: the halvings met the floor", 0.00125, 0.01, -1, -1.2, 0.1, 0.00125},
		{"F fell, exact objective", 0.00125, 0.01, -1, -1.001, 0, 0.00125},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stepForRaise(tc.step, tc.unhalved, tc.fUnhalved, tc.f, tc.nz); got != tc.want {
				t.Errorf("stepForRaise(%g, %g, %g, %g, %g) = %g, want %g", tc.step, tc.unhalved, tc.fUnhalved, tc.f, tc.nz, got, tc.want)
			}
		})
	}
}

// TestBiasScaleSeen: a run stationary at gap estimate est above the bias
// share s its plan's fit predicted scales later plans' bias share by
// est/s; never below 1, and not from a share or estimate that is not a
// number.
func TestBiasScaleSeen(t *testing.T) {
	for _, tc := range []struct {
		share, est, want float64
	}{
		{0.0078, 0.359, 0.359 / 0.0078},
		{0.01, 0.005, 1},
		{0, 0.3, 1},
		{math.NaN(), 0.3, 1},
		{0.01, math.NaN(), 1},
		{0.01, math.Inf(1), 1},
	} {
		if got := biasScaleSeen(tc.share, tc.est); math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("biasScaleSeen(%g, %g) = %g, want %g", tc.share, tc.est, got, tc.want)
		}
	}
}

// TestBiasScaleDeepensL: the same measurement (same seeds) planned after a
// run found the bias share 64 times the fit's puts L deeper: on
// mlmc.Synthetic the bias of level L is Ma 2^(-aL) with a = 1, so its
// share falls by 4 per level and 64 times the share needs about three
// levels more (at least two, whatever the fitted rate's noise), and the
// reason says why.
func TestBiasScaleDeepensL(t *testing.T) {
	plan := func(scale float64) *Plan {
		p := synthetic(4, 1, 2, 1, nil)
		s, _ := Settings{Target: Target{Gap: 1e-3, Budget: 4_000_000}, Seed: 5}.withDefaults()
		r := newTestRunner(p, s)
		r.biasScale = scale
		pl, err := r.measure("x0", 1e-3, 40_000)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	base, scaled := plan(0), plan(64)
	if scaled.MaxLevel < base.MaxLevel+2 {
		t.Errorf("L %d with the bias share scaled by 64, %d without: want at least two levels deeper", scaled.MaxLevel, base.MaxLevel)
	}
	if !strings.Contains(scaled.Reasons.L, "stationary at 64 times") {
		t.Errorf("the scaled plan's reason does not say why: %s", scaled.Reasons.L)
	}
	if strings.Contains(base.Reasons.L, "stationary at") {
		t.Errorf("the unscaled plan's reason names a scale: %s", base.Reasons.L)
	}
}
