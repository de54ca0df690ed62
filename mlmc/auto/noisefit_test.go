package auto

import (
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestNoiseFitDoesNotSetL: where no level's mean stands out of its noise
// (Ma = 1e-3 against Mb = 1e3, 16 draws a level, as at a point just off a
// degenerate start), the fitted rate is a fit to noise; a stage's plan
// must not extrapolate it to an L deeper than the pilot measured (a
// near-zero rate put L at 17-20 on a regression with raw targets, where
// RT-MLMC's variance then stalled every run), nor to one below it (after a
// degenerate start a probe of three levels, none of them showing a bias,
// extrapolated to L = 0, where L-SGD sat at the minimiser of F^0). Over 20
// pilot seeds, every plan whose levels all hid in the noise is at the
// pilot's top level.
func TestNoiseFitDoesNotSetL(t *testing.T) {
	hidden, deep, shallow := 0, 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		o := mlmc.NewSynthetic(4, 1, 0.3, 1, seed)
		o.Ma, o.Mb = 1e-3, 1e3
		m, err := Measure[[]float64](o, mlmc.Float64Ops{Dim: 4}, 0, 200, 16, seed)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ChooseFrom(m.Report, "x", m.Samples, 1, Target{Gap: 0.1, Budget: 400_000}, Rules{BestFit: true}, mlmc.Unbounded, 0)
		if err != nil {
			continue // a measurement that rules out a plan sets no L
		}
		if p.seen > 0 {
			continue
		}
		hidden++
		if p.MaxLevel > m.Report.MaxLevel {
			deep++
			t.Logf("seed %d: L = %d above the pilot's levels %d..%d (a = %s)", seed, p.MaxLevel, m.Report.MinLevel, m.Report.MaxLevel, p.A)
		}
		if p.MaxLevel < m.Report.MaxLevel {
			shallow++
			t.Logf("seed %d: L = %d below the pilot's top level %d (a = %s)", seed, p.MaxLevel, m.Report.MaxLevel, p.A)
		}
	}
	if hidden < 5 {
		t.Fatalf("only %d of 20 pilots had every level in its noise: the test does not test", hidden)
	}
	if deep > 0 {
		t.Errorf("%d of %d plans whose levels all hid in the noise set L above the pilot's top level", deep, hidden)
	}
	if shallow > 0 {
		t.Errorf("%d of %d plans whose levels all hid in the noise set L below the pilot's top level", shallow, hidden)
	}
}
