package mlmc

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// plugInSquare is a conditional stochastic problem in one dimension,
//
//	F(x) = E_xi [ (E_eta [xi + x eta])^2 / 2 ],  xi ~ N(-1, 1), eta ~ N(1, 1),
//
// so F(x) = E (xi + x)^2 / 2 and x* = 1. Level l replaces the inner mean by
// the mean of 2^l draws of eta: h^l = mean(xi + x eta_j) mean(eta_j), biased
// by x / 2^l, and H^l subtracts the mean of h^(l-1) on the two halves of the
// same draws. At x = 0 every inner draw gives the same value xi, so H^l
// cancels to rounding at every level: a degenerate start.
type plugInSquare struct {
	x   float64
	rng *rand.Rand
}

type plugInDraw struct {
	xi  float64
	eta []float64
}

func (o *plugInSquare) MaxLevel() int { return 12 }

func (o *plugInSquare) Draw(level int) (Sample, int64, error) {
	d := plugInDraw{xi: o.rng.NormFloat64() - 1, eta: make([]float64, 1<<level)}
	for j := range d.eta {
		d.eta[j] = o.rng.NormFloat64() + 1
	}
	return d, int64(len(d.eta)), nil
}

func (o *plugInSquare) Eval(s Sample, _ Point, diff bool, alpha float64, out []float64) error {
	d := s.(plugInDraw)
	grad := func(eta []float64) float64 {
		var g, e float64
		for _, v := range eta {
			g += d.xi + o.x*v
			e += v
		}
		n := float64(len(eta))
		return g / n * (e / n)
	}
	y := grad(d.eta)
	if diff {
		half := len(d.eta) / 2
		y -= (grad(d.eta[:half]) + grad(d.eta[half:])) / 2
	}
	out[0] += alpha * y
	return nil
}

func (o *plugInSquare) Release(Sample) {}

// constantLevels is Synthetic with every H^l exactly zero: all its levels
// are h^(l_min).
type constantLevels struct{ *Synthetic }

func (o constantLevels) Eval(s Sample, at Point, diff bool, alpha float64, out []float64) error {
	if diff {
		return nil
	}
	return o.Synthetic.Eval(s, at, diff, alpha, out)
}

// zeroOracle returns a zero gradient at every level.
type zeroOracle struct{}

func (zeroOracle) MaxLevel() int                                      { return Unbounded }
func (zeroOracle) Draw(level int) (Sample, int64, error)              { return nil, 1 << level, nil }
func (zeroOracle) Eval(Sample, Point, bool, float64, []float64) error { return nil }
func (zeroOracle) Release(Sample)                                     {}

// TestVerdictWhereNoBiasIsVisible: where every H^l vanishes at the point
// measured, the diagnostic says no bias is visible there, that this is
// typical of a degenerate start, and recommends no method, and it fits no
// rate b to rounding residues; where the levels differ (the same problem
// away from 0, Synthetic with b > c, where MLMC does pay off) it
// recommends as before.
func TestVerdictWhereNoBiasIsVisible(t *testing.T) {
	synth := func(dim int, b, c float64) *Synthetic { return NewSynthetic(dim, 1, b, c, 5) }
	biased := synth(4, 2, 1)
	biased.Ma = 10
	for _, tc := range []struct {
		name      string
		oracle    Oracle[[]float64]
		dim       int
		maxLevel  int // default 6
		invisible bool
		says      []string // in the verdict
		telescope string   // "pass" or "fail": the telescoping check's outcome, where the test is about it
	}{
		{name: "plug-in at x0 = 0: H^l zero to rounding", oracle: &plugInSquare{rng: rand.New(rand.NewPCG(1, 2))}, dim: 1, invisible: true,
			says: []string{"no bias is visible at the point measured", "to rounding", "degenerate start", "x0 = 0", "no method is recommended"}},
		// Every level is h^(l_min): with the bias 10 2^(-l) the levels do
		// not telescope to h^L (|E h^1 - E h^6| = 4.8, noise about 0.5).
		{name: "H^l exactly zero", oracle: constantLevels{biased}, dim: 4, invisible: true, telescope: "fail",
			says: []string{"no bias is visible at the point measured", "degenerate start", "telescoping check fails"}},
		// Nothing varies and nothing differs: z is 0, not 0/0.
		{name: "every gradient zero", oracle: zeroOracle{}, dim: 2, invisible: true, telescope: "pass",
			says: []string{"no bias is visible at the point measured", "every query returned a zero gradient"}},
		{name: "plug-in at x = 2", oracle: &plugInSquare{x: 2, rng: rand.New(rand.NewPCG(1, 2))}, dim: 1},
		// In 1000 dimensions the normals dominate a query's time, which
		// grows like the levels of noise it sums (l + 1 for h^l, one for
		// H^l): L-SGD at L = 10 takes about 11 units, RT-MLMC under 2 at
		// a variance at most about 1.5 times L-SGD's, so MLMC pays off in
		// wall time (as in samples, b = 2 > c = 1) with a wide margin.
		{name: "Synthetic, b = 2 > c = 1", oracle: synth(1000, 2, 1), dim: 1000, maxLevel: 10, telescope: "pass",
			says: []string{"MLMC can pay off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := LevelsConfig{MinLevel: 1, MaxLevel: max(tc.maxLevel, 6), Draws: 64, B: 2, C: 1, Seed: 3}
			rep, err := MeasureLevels(tc.oracle, Float64Ops{Dim: tc.dim}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("b = %.3g (%s); verdict: %s", rep.FitB.Rate, rep.FitB.Note, rep.Verdict)
			if tc.telescope != "" && rep.Telescope.Pass != (tc.telescope == "pass") {
				t.Errorf("telescoping check passes: %v, want %v (z = %.3g)", rep.Telescope.Pass, tc.telescope, rep.Telescope.Z)
			}
			if rep.NoBiasVisible != tc.invisible {
				t.Errorf("NoBiasVisible %v, want %v", rep.NoBiasVisible, tc.invisible)
			}
			for _, want := range tc.says {
				if !strings.Contains(rep.Verdict, want) {
					t.Errorf("verdict %q does not say %q", rep.Verdict, want)
				}
			}
			recommends := strings.Contains(rep.Verdict, "can pay off") || strings.Contains(rep.Verdict, "cannot pay off")
			if tc.invisible {
				if recommends {
					t.Errorf("verdict %q recommends where no bias is visible", rep.Verdict)
				}
				if !math.IsNaN(rep.FitB.Rate) || !strings.Contains(rep.FitB.Note, "zero to rounding") {
					t.Errorf("b = %g (%q) fitted where every H^l vanished; want no rate, with a note", rep.FitB.Rate, rep.FitB.Note)
				}
				return
			}
			if !recommends {
				t.Errorf("verdict %q recommends nothing where the levels differ", rep.Verdict)
			}
			if math.IsNaN(rep.FitB.Rate) {
				t.Errorf("no b fitted where the levels differ: %s", rep.FitB.Note)
			}
		})
	}
}

// The plug-in oracle is what its comment says: at x = 0 its H^l are tiny
// against h^1 (the premise of the test above), and at x = 2 the mean of
// h^l is x - 1 + x/2^l (checked at level 2, 4000 draws, within 4.5
// standard errors).
func TestPlugInSquareOracle(t *testing.T) {
	o := &plugInSquare{rng: rand.New(rand.NewPCG(7, 8))}
	for l := 2; l <= 6; l++ {
		s, _, _ := o.Draw(l)
		out := []float64{0}
		if err := o.Eval(s, Current, true, 1, out); err != nil {
			t.Fatal(err)
		}
		if math.Abs(out[0]) > 1e-12 {
			t.Errorf("H^%d at x = 0 is %g, want zero to rounding", l, out[0])
		}
	}
	o.x = 2
	const n = 4000
	var sum, sum2 float64
	for range n {
		s, _, _ := o.Draw(2)
		out := []float64{0}
		if err := o.Eval(s, Current, false, 1, out); err != nil {
			t.Fatal(err)
		}
		sum += out[0]
		sum2 += out[0] * out[0]
	}
	mean := sum / n
	se := math.Sqrt((sum2/n - mean*mean) / (n - 1))
	if want := 2 - 1 + 2.0/4; math.Abs(mean-want) > 4.5*se {
		t.Errorf("mean h^2 at x = 2 is %.4f ± %.4f, want %g", mean, se, want)
	}
}
