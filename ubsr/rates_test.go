package ubsr

import (
	"math"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// The fitted variance rate b of H^l at x0 (levels 1..10, 300 draws each)
// against the value the per-level diagnostic measured with 400 draws on
// levels 1..12 (studies/shortfall-risk/results/levels.json): 1.87 for the quadratic-hinge
// loss (smooth l', so Var H^l ~ 2^(-2l) asymptotically) and 1.50 for the
// expectile (l' jumps, so Var H^l ~ 2^(-3l/2)). Both must lie within 0.25,
// about three times the diagnostic's 95% half-width: a correction without
// the antithetic halves, h^l - h^(l-1) on the first half (b near 1), fails
// it.
func TestFittedVarianceRate(t *testing.T) {
	p := portfolio(t)
	for _, c := range []struct {
		k    int
		want float64
	}{{1, 1.87}, {2, 1.50}} {
		cs := cases[c.k]
		t.Run(cs.loss.Name, func(t *testing.T) {
			o, err := New[[]float64](p, cs.loss, Config{Lambda: cs.lambda, MaxLevel: 10, Seed: 21})
			if err != nil {
				t.Fatal(err)
			}
			th := append([]float64(nil), x0...)
			o.SetPoints(th, th)
			rep, err := mlmc.MeasureLevels[[]float64](o, mlmc.Float64Ops{Dim: 3},
				mlmc.LevelsConfig{MinLevel: 0, MaxLevel: 10, Draws: 300, B: 2, C: 1, Seed: 22})
			if err != nil {
				t.Fatal(err)
			}
			b := rep.FitB
			if math.Abs(b.Rate-c.want) > 0.25 {
				t.Errorf("fitted b = %.3f ± %.3f (levels %d..%d), measured %.2f", b.Rate, b.SE, b.From, b.To, c.want)
			}
			if c := rep.FitCImages; math.Abs(c.Rate-1) > 1e-9 {
				t.Errorf("fitted c = %.6f, want 1 (a query at level l costs 2^(l+1) samples)", c.Rate)
			}
			t.Logf("b = %.3f ± %.3f", b.Rate, b.SE)
		})
	}
}
