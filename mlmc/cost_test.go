package mlmc

import (
	"math"
	"testing"
)

// ExpectedCost must be what the estimators spend: over many iterations on
// the synthetic oracle (costs 2^l with c = 1), the mean samples and
// evaluations per iteration must match it within zTol standard errors
// (exactly for the deterministic plans). VR runs whole QE cycles.
func TestExpectedCostMatchesEstimators(t *testing.T) {
	base := Config{MinLevel: 1, MaxLevel: 5, Seed: 11}
	vr := base
	vr.D1, vr.D2, vr.QE = 3, 2, 4
	cases := []struct {
		name      string
		cfg       Config
		oracleMax int
	}{
		{"lsgd", Config{MinLevel: 1, MaxLevel: 5, NL: 3}, Unbounded},
		{"vmlmc", base, Unbounded},
		{"rtmlmc", base, Unbounded},
		{"rumlmc", base, 7},
		{"rrmlmc", base, 7},
		{"rumlmc", Config{MinLevel: 1, MaxLevel: 5, B: 1.5, C: 1}, 9},
		{"vr-rtmlmc", vr, Unbounded},
		{"vr-rrmlmc", vr, 7},
		{"vr-lsgd", vr, Unbounded},
	}
	const iters = 8000 // a multiple of every QE above
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantSamples, wantEvals, err := ExpectedCost(mustKind(tc.name), tc.cfg, tc.oracleMax)
			if err != nil {
				t.Fatal(err)
			}
			s := NewSynthetic(2, 1, 1, 1, 5)
			s.Max = tc.oracleMax
			e, err := New[[]float64](mustKind(tc.name), tc.cfg, Float64Ops{Dim: 2}, s)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float64, 2)
			var sum, sum2, ev, ev2 float64
			for it := range iters {
				step, err := e.Estimate(it, out)
				if err != nil {
					t.Fatal(err)
				}
				x, y := float64(step.Samples), float64(step.Evals)
				sum, sum2, ev, ev2 = sum+x, sum2+x*x, ev+y, ev2+y*y
			}
			check := func(what string, s, s2, want float64) {
				mean := s / iters
				se := math.Sqrt(math.Max(s2/iters-mean*mean, 0) / (iters - 1))
				if !within(mean, want, se) {
					t.Errorf("%s per iteration: measured %.4f (standard error %.4f), ExpectedCost %.4f", what, mean, se, want)
				}
			}
			check("samples", sum, sum2, wantSamples)
			check("evaluations", ev, ev2, wantEvals)
		})
	}
}

func TestExpectedCostValues(t *testing.T) {
	cases := []struct {
		name                   string
		cfg                    Config
		oracleMax              int
		wantSamples, wantEvals float64
	}{
		// L-SGD at L = 9: one batch of 512.
		{"lsgd", Config{MinLevel: 1, MaxLevel: 9}, Unbounded, 512, 1},
		// RT-MLMC with b = c = 1 on 1..3: q proportional to 2^-l, so each level
		// contributes the same q_l 2^l = 1 / sum_l 2^-l = 8/7.
		{"rtmlmc", Config{MinLevel: 1, MaxLevel: 3}, Unbounded, 3 * 8.0 / 7, 1},
		// VR L-SGD, QE = 2, D1 = 1, D2 = 1: (512 + 512)/2 samples, (1 + 2)/2 evaluations.
		{"vr-lsgd", Config{MinLevel: 1, MaxLevel: 9, QE: 2}, Unbounded, 512, 1.5},
		// Three passes per correction above l_min (SimCLR's separate halves):
		// q = (4, 2, 1)/7, so 4/7 + 3 (2 + 1)/7 = 13/7 evaluations.
		{"rtmlmc", Config{MinLevel: 1, MaxLevel: 3, CorrectionPasses: 3}, Unbounded, 3 * 8.0 / 7, 13.0 / 7},
		// V-MLMC, N = 2^3: n_l = 4, 2, 1 draws of 2, 4, 8 images; 4 + 3 (2 + 1) passes.
		{"vmlmc", Config{MinLevel: 1, MaxLevel: 3, CorrectionPasses: 3}, Unbounded, 24, 13},
		{"vmlmc", Config{MinLevel: 1, MaxLevel: 3}, Unbounded, 24, 7},
	}
	for _, tc := range cases {
		s, e, err := ExpectedCost(mustKind(tc.name), tc.cfg, tc.oracleMax)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(s-tc.wantSamples) > 1e-9 || math.Abs(e-tc.wantEvals) > 1e-9 {
			t.Errorf("%s: ExpectedCost = %g samples, %g evaluations; want %g, %g", tc.name, s, e, tc.wantSamples, tc.wantEvals)
		}
	}
	if _, _, err := ExpectedCost(Kind{Method: Method(1000)}, Config{}, Unbounded); err == nil {
		t.Error("ExpectedCost accepted an unknown method")
	}
	if _, _, err := ExpectedCost(mustKind("rtmlmc"), Config{MinLevel: 1, MaxLevel: 9}, 6); err == nil {
		t.Error("ExpectedCost accepted a maximum level above the oracle's")
	}
}
