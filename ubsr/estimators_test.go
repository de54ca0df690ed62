package ubsr

import (
	"math"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// RU-MLMC and RR-MLMC are unbiased on this oracle: at x0, the mean of 200000
// estimates lies within 4.5 standard errors of the exact gradient in every
// coordinate (the oracle serves levels to 20, so the truncation's bias is
// of order 2^-20, far below the standard error). As a control that the
// test sees a bias, RT-MLMC truncated at level 1 (expectation E h^1) must
// lie beyond 6 standard errors in some coordinate. 18 checks at 4.5 SE:
// a false failure has probability below 2e-4.
func TestRandomizedEstimatorsUnbiased(t *testing.T) {
	p := portfolio(t)
	for _, c := range cases[:2] {
		grad := make([]float64, 3)
		if _, err := p.SR(c.loss, c.lambda, x0, grad); err != nil {
			t.Fatal(err)
		}
		for _, e := range []struct {
			kind   mlmc.Kind
			cfg    mlmc.Config
			biased bool
		}{
			{mlmc.Kind{Method: mlmc.RUMLMC}, mlmc.Config{B: 2, C: 1, Seed: 11}, false},
			{mlmc.Kind{Method: mlmc.RRMLMC}, mlmc.Config{B: 2, C: 1, Seed: 12}, false},
			{mlmc.Kind{Method: mlmc.RTMLMC}, mlmc.Config{MaxLevel: 1, B: 2, C: 1, Seed: 13}, true},
		} {
			t.Run(c.loss.Name+"/"+e.kind.String(), func(t *testing.T) {
				o, err := New[[]float64](p, c.loss, Config{Lambda: c.lambda, MaxLevel: 20, Seed: 14})
				if err != nil {
					t.Fatal(err)
				}
				th := append([]float64(nil), x0...)
				o.SetPoints(th, th)
				est, err := mlmc.New(e.kind, e.cfg, mlmc.Float64Ops{Dim: 3}, o)
				if err != nil {
					t.Fatal(err)
				}
				const k = 200000
				mean, m2 := make([]float64, 3), make([]float64, 3)
				v := make([]float64, 3)
				for it := range k {
					if _, err := est.Estimate(it, v); err != nil {
						t.Fatal(err)
					}
					for i, x := range v {
						mean[i] += x / k
						m2[i] += x * x / k
					}
				}
				zmax := 0.0
				for i := range 3 {
					se := math.Sqrt((m2[i] - mean[i]*mean[i]) / (k - 1))
					z := (mean[i] - grad[i]) / se
					zmax = math.Max(zmax, math.Abs(z))
					if !e.biased && math.Abs(z) > 4.5 {
						t.Errorf("coordinate %d: mean %.6f, exact %.6f, z = %.2f", i, mean[i], grad[i], z)
					}
				}
				if e.biased && zmax < 6 {
					t.Errorf("RT-MLMC truncated at level 1 not detected as biased (largest z %.2f): the test cannot see a bias", zmax)
				}
				t.Logf("largest |z| %.2f; %.1f samples an estimate", zmax, float64(est.Totals().Samples)/k)
			})
		}
	}
}
