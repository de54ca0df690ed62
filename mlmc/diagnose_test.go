package mlmc

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// On the synthetic oracle every quantity MeasureLevels estimates is known
// exactly: Var H^l = Mb 2^(-b l) (d + |x - X*|^2), the cost round(2^(c l)),
// E sum_l Y_l = E h^L, and each estimator's variance and cost
// (exactMoments). Each check allows zTol standard errors, the standard
// error being the one MeasureLevels reports; a check of a standard error's
// size keeps the tests from passing on a useless, wide one.
func TestMeasureLevelsOnSyntheticOracle(t *testing.T) {
	for _, tc := range []struct {
		name       string
		b, c       float64
		minL, maxL int
		draws      int
		maxBSE     float64
		cTol       float64 // rounding of the costs round(2^(c l))
	}{
		{name: "b=c=1", b: 1, c: 1, minL: 1, maxL: 6, draws: 200, maxBSE: 0.05, cTol: 1e-12},
		{name: "b=2,c=1", b: 2, c: 1, minL: 1, maxL: 6, draws: 200, maxBSE: 0.05, cTol: 1e-12},
		{name: "b=1.5,c=1.5", b: 1.5, c: 1.5, minL: 0, maxL: 5, draws: 200, maxBSE: 0.05, cTol: 0.02},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const dim = 20
			o := NewSynthetic(dim, 1, tc.b, tc.c, 7)
			o.Ma = 10
			cfg := LevelsConfig{MinLevel: tc.minL, MaxLevel: tc.maxL, Draws: tc.draws, B: tc.b, C: tc.c, Seed: 3}
			rep, err := MeasureLevels(o, Float64Ops{Dim: dim}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("b = %.3f +- %.3f, c = %.4f, z = %.2f, |D| = %.3g (noise %.3g), %s",
				rep.FitB.Rate, rep.FitB.SE, rep.FitCImages.Rate, rep.Telescope.Z, rep.Telescope.DiffNorm, rep.Telescope.NoiseNorm, rep.Verdict)
			if got, want := len(rep.Levels), tc.maxL-tc.minL+1; got != want {
				t.Fatalf("%d levels, want %d", got, want)
			}
			for _, st := range rep.Levels {
				want := o.NoiseVar(st.Level, st.Diff, o.X)
				if !within(st.Var, want, st.VarSE) {
					t.Errorf("level %d: Var %.4g, want %.4g (se %.3g)", st.Level, st.Var, want, st.VarSE)
				}
				if st.VarSE > 0.2*want {
					t.Errorf("level %d: se of Var %.3g is over 20%% of %.3g", st.Level, st.VarSE, want)
				}
				if st.Images != float64(o.Cost(st.Level)) {
					t.Errorf("level %d: %g images per query, want %d", st.Level, st.Images, o.Cost(st.Level))
				}
			}
			if want := o.NoiseVar(tc.maxL, false, o.X); !within(rep.Top.Var, want, rep.Top.VarSE) {
				t.Errorf("h^L: Var %.4g, want %.4g (se %.3g)", rep.Top.Var, want, rep.Top.VarSE)
			}
			if !within(rep.FitB.Rate, tc.b, rep.FitB.SE) || !(rep.FitB.SE < tc.maxBSE) {
				t.Errorf("fitted b = %.3f +- %.3f, want %g with se below %g", rep.FitB.Rate, rep.FitB.SE, tc.b, tc.maxBSE)
			}
			if rep.FitB.From != tc.minL+1 || rep.FitB.To != tc.maxL {
				t.Errorf("b fitted on levels %d..%d, want the H^l levels %d..%d", rep.FitB.From, rep.FitB.To, tc.minL+1, tc.maxL)
			}
			if math.Abs(rep.FitCImages.Rate-tc.c) > tc.cTol {
				t.Errorf("fitted c = %.4f, want %g within %g", rep.FitCImages.Rate, tc.c, tc.cTol)
			}
			if !rep.Telescope.Pass {
				t.Errorf("telescoping check fails on an exact oracle: z = %.2f, critical %.2f", rep.Telescope.Z, rep.Telescope.Critical)
			}
			if d, n := rep.Telescope.DiffNorm, rep.Telescope.NoiseNorm; d > 3*n {
				t.Errorf("|sum mean H^l - mean h^L| = %.3g, over three times its noise level %.3g", d, n)
			}

			// Predictions against the exact moments of the estimators as
			// configured (b, c set to the oracle's). The standard error of a
			// prediction is the measured variances' propagated through it.
			ecfg := Config{MinLevel: tc.minL, MaxLevel: tc.maxL, B: tc.b, C: tc.c}.withDefaults()
			law := Truncated(tc.minL, tc.maxL, tc.b, tc.c)
			byName := map[string]Prediction{}
			for _, p := range rep.Estimators {
				byName[p.Name] = p
			}
			for _, m := range []Method{LSGD, VMLMC, RTMLMC} {
				p, ok := byName[m.String()]
				if !ok {
					t.Fatalf("no prediction for %s", m)
				}
				ex := exactMoments(o, m, ecfg, law)
				se2 := 0.0
				for _, st := range rep.Levels {
					w := 0.0
					switch m {
					case VMLMC:
						w = 1 / float64(VMLMCDraws(st.Level, tc.b, tc.c, ecfg.N))
					case RTMLMC:
						w = 1 / law.Prob(st.Level)
					}
					se2 += w * w * st.VarSE * st.VarSE
				}
				if m == LSGD {
					se2 = rep.Top.VarSE * rep.Top.VarSE
				}
				if m == RTMLMC {
					// The mean terms |mu_l|^2/q_l are estimated too: allow
					// for their error, (2|mu_l| se(mean)) / q_l, through the
					// variances they come with.
					for _, st := range rep.Levels {
						q := law.Prob(st.Level)
						e := 2 * st.MeanNorm * math.Sqrt(st.Var/float64(st.Draws)) / q
						se2 += e * e
					}
				}
				if !within(p.Var, ex.vari, math.Sqrt(se2)) {
					t.Errorf("%s: predicted Var %.4g, exact %.4g (se %.3g)", m, p.Var, ex.vari, math.Sqrt(se2))
				}
				if math.Abs(p.Images-ex.cost) > 1e-9*ex.cost {
					t.Errorf("%s: predicted cost %.6g images, exact %.6g", m, p.Images, ex.cost)
				}
			}
		})
	}
}

// biasedCorrections is the synthetic oracle with its H^l halved: E sum_l
// Y_l is then not E h^L, which the telescoping check must see.
type biasedCorrections struct{ *Synthetic }

func (b biasedCorrections) Eval(s Sample, at Point, diff bool, alpha float64, out []float64) error {
	if diff {
		alpha /= 2
	}
	return b.Synthetic.Eval(s, at, diff, alpha, out)
}

func TestTelescopingCheckCatchesBiasedCorrections(t *testing.T) {
	const dim = 20
	o := NewSynthetic(dim, 1, 1, 1, 7)
	o.Ma = 10
	cfg := LevelsConfig{MinLevel: 1, MaxLevel: 6, Draws: 200, Seed: 3}
	rep, err := MeasureLevels[[]float64](biasedCorrections{o}, Float64Ops{Dim: dim}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("z = %.2f, |D| = %.3g (noise %.3g)", rep.Telescope.Z, rep.Telescope.DiffNorm, rep.Telescope.NoiseNorm)
	if rep.Telescope.Pass {
		t.Errorf("telescoping check passes with halved corrections: z = %.2f, critical %.2f", rep.Telescope.Z, rep.Telescope.Critical)
	}
	// The bias is Ma (2^-1 - 2^-6)/2 = 2.42 along u; the norm shows it.
	if d, n := rep.Telescope.DiffNorm, rep.Telescope.NoiseNorm; d < 3*n {
		t.Errorf("|D| = %.3g within three noise levels %.3g of 0", d, n)
	}
	if want := "telescoping check fails"; !strings.Contains(rep.Verdict, want) {
		t.Errorf("verdict %q does not say %q", rep.Verdict, want)
	}
}

// PredictEstimators' formulas on hand-made levels, against values worked
// out on paper.
func TestPredictEstimatorsFormulas(t *testing.T) {
	levels := []LevelStat{
		{Level: 1, Draws: 100, Var: 4, Moment2: 4 + 1, Images: 2, Seconds: 2},
		{Level: 2, Draws: 100, Var: 1, Moment2: 1 + 0.25, Images: 4, Seconds: 4},
		{Level: 3, Draws: 100, Var: 0.25, Moment2: 0.25, Images: 8, Seconds: 8},
	}
	top := LevelStat{Level: 3, Draws: 100, Var: 3, Images: 8, Seconds: 8}
	// |sum_l mean Y_l|^2 = 2^2 + sum_l Var_l/K = 4 + 5.25/100.
	sumNorm := math.Sqrt(4 + 5.25/100)
	preds := PredictEstimators(levels, top, sumNorm, 1, 1)
	// b = c = 1, L = 3: vmlmc n_l = ceil(2^(-l) 8) = 4, 2, 1;
	// rtmlmc q_l = (1/2, 1/4, 1/8)/(7/8) = 4/7, 2/7, 1/7.
	vmVar, vmCost := 4.0/4+1.0/2+0.25, 4*2+2*4+8.0
	rtVar := 5/(4.0/7) + 1.25/(2.0/7) + 0.25/(1.0/7) - 4
	rtCost := (4*2 + 2*4 + 8.0) / 7
	want := map[string][2]float64{
		"lsgd":   {3, 8},
		"vmlmc":  {vmVar, vmCost},
		"rtmlmc": {rtVar, rtCost},
	}
	got := map[string]Prediction{}
	for _, p := range preds {
		got[p.Name] = p
	}
	for name, w := range want {
		p := got[name]
		rel := w[0] * w[1] / (3 * 8)
		if math.Abs(p.Var-w[0]) > 1e-9 || math.Abs(p.Images-w[1]) > 1e-9 || math.Abs(p.RelImages-rel) > 1e-9 {
			t.Errorf("%s: Var %.6g cost %.6g rel %.6g, want %.6g %.6g %.6g", name, p.Var, p.Images, p.RelImages, w[0], w[1], rel)
		}
	}
	// The optimal V-MLMC allocation n_l ~ sqrt(V_l/C_l) gives
	// var x cost = (sum_l sqrt(V_l C_l))^2 = (sqrt 8 + 2 + sqrt 2)^2.
	opt := got["vmlmc-opt"]
	if want := math.Pow(math.Sqrt(8)+2+math.Sqrt(2), 2); math.Abs(opt.Var*opt.Images-want) > 1e-9 {
		t.Errorf("vmlmc-opt var x cost %.6g, want %.6g", opt.Var*opt.Images, want)
	}
	if opt.Var*opt.Images > vmVar*vmCost {
		t.Errorf("vmlmc-opt (%.4g) worse than vmlmc (%.4g)", opt.Var*opt.Images, vmVar*vmCost)
	}
}

// TestFitLog2: rates of points by hand, weighted and not (nil standard
// errors weigh the points alike, as LineFit on log2 y does), and inputs
// no rate can be fitted from, which give a NaN rate and a note naming the
// problem instead of a panic.
func TestFitLog2(t *testing.T) {
	// Unweighted scatter: log2 y = 0, 1.5, 2 is LineFit's "scatter" case.
	scatter := []float64{1, math.Exp2(1.5), 4}
	// On exact points the weighted fit's standard error is
	// 1/sqrt(sum_i w_i (x_i - mean x)^2), w_i = (y_i ln 2 / se_i)^2 and the
	// mean weighted: here w = 48.05, 300.3, 1877 and the mean x 1.822.
	w := []float64{math.Pow(math.Ln2/0.1, 2), math.Pow(0.25*math.Ln2/0.01, 2), math.Pow(0.0625*math.Ln2/0.001, 2)}
	mx := (w[1] + 2*w[2]) / (w[0] + w[1] + w[2])
	exactSD := 1 / math.Sqrt(w[0]*mx*mx+w[1]*(1-mx)*(1-mx)+w[2]*(2-mx)*(2-mx))
	for _, tc := range []struct {
		name     string
		x, y, se []float64
		rate, sd float64 // the rate and its standard error; NaN: no fit
		note     string  // in the note of a fit that cannot be made
	}{
		{name: "exact powers, zero standard errors", x: []float64{1, 2, 3, 4}, y: []float64{2, 4, 8, 16}, se: []float64{0, 0, 0, 0}, rate: 1, sd: 0},
		{name: "exact powers, nil standard errors", x: []float64{1, 2, 3, 4}, y: []float64{2, 4, 8, 16}, rate: 1, sd: 0},
		{name: "weighted, exact", x: []float64{0, 1, 2}, y: []float64{1, 0.25, 0.0625}, se: []float64{0.1, 0.01, 0.001}, rate: -2, sd: exactSD},
		{name: "nil standard errors, scatter", x: []float64{0, 1, 2}, y: scatter, rate: 1, sd: math.Sqrt(1.0 / 12)},
		{name: "two points, nil standard errors", x: []float64{3, 5}, y: []float64{8, 2}, rate: -1, sd: math.NaN(), note: "no standard error"},
		{name: "y shorter than x", x: []float64{0, 1, 2}, y: []float64{1, 2}, rate: math.NaN(), note: "3 levels x, 2 values y"},
		{name: "y longer than x", x: []float64{0, 1}, y: []float64{1, 2, 4}, rate: math.NaN(), note: "2 levels x, 3 values y"},
		{name: "standard errors shorter than x", x: []float64{0, 1, 2}, y: []float64{1, 2, 4}, se: []float64{0.1}, rate: math.NaN(), note: "1 standard errors"},
		{name: "no points", rate: math.NaN(), note: "no levels"},
		{name: "one point", x: []float64{2}, y: []float64{4}, se: []float64{0.1}, rate: math.NaN(), note: "one level"},
		{name: "one point, nil standard errors", x: []float64{2}, y: []float64{4}, rate: math.NaN(), note: "one level"},
		{name: "y not positive", x: []float64{0, 1, 2}, y: []float64{1, 0, 4}, rate: math.NaN(), note: "level 1: 0 is not positive"},
		{name: "one level twice", x: []float64{1, 1}, y: []float64{2, 3}, rate: math.NaN(), note: "every point is at level 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FitLog2(tc.x, tc.y, tc.se)
			if math.IsNaN(tc.rate) {
				if !math.IsNaN(f.Rate) || !math.IsNaN(f.SE) || !strings.Contains(f.Note, tc.note) {
					t.Errorf("rate %g, se %g, note %q; want NaN, NaN and a note with %q", f.Rate, f.SE, f.Note, tc.note)
				}
				return
			}
			if math.Abs(f.Rate-tc.rate) > 1e-12 {
				t.Errorf("rate %.15g, want %g", f.Rate, tc.rate)
			}
			if math.IsNaN(tc.sd) != math.IsNaN(f.SE) || math.Abs(f.SE-tc.sd) > 1e-12 {
				t.Errorf("se %.15g, want %g", f.SE, tc.sd)
			}
			if !strings.Contains(f.Note, tc.note) {
				t.Errorf("note %q, want one with %q", f.Note, tc.note)
			}
			if len(tc.x) > 0 && (f.From != int(tc.x[0]) || f.To != int(tc.x[len(tc.x)-1])) {
				t.Errorf("levels %d..%d, want %g..%g", f.From, f.To, tc.x[0], tc.x[len(tc.x)-1])
			}
		})
	}
	// Weighted: a noisy point with a large standard error barely moves
	// the fit; with equal weights it would.
	x, y := []float64{0, 1, 2, 3}, []float64{1, 0.5, 0.25 * 4, 0.125}
	if f := FitLog2(x, y, []float64{0.01, 0.005, 100, 0.00125}); math.Abs(f.Rate+1) > 0.01 {
		t.Errorf("rate %.4f with a down-weighted outlier, want about -1", f.Rate)
	}
	if f := FitLog2(x, y, nil); math.Abs(f.Rate+1) < 0.1 {
		t.Errorf("rate %.4f with equal weights, want the outlier to move it away from -1", f.Rate)
	}
}

// TestLineFit: slope and intercept of points by hand, the slope's standard
// error from the residuals (0 on a line, NaN with two points).
func TestLineFit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		x, y        []float64
		s, k, se    float64
		seUndefined bool
		// undetermined: no line through the points (all three NaN)
		undetermined bool
	}{
		{name: "on a line", x: []float64{0, 1, 2, 3}, y: []float64{1, 3, 5, 7}, s: 2, k: 1},
		{name: "two points", x: []float64{1, 3}, y: []float64{0, 1}, s: 0.5, k: -0.5, seUndefined: true},
		// Residuals -1/6, 1/3, -1/6 about y = 1/6 + x (x-mean 1, sxx 2):
		// se = sqrt((1/36 + 1/9 + 1/36)/1/2) = sqrt(1/12).
		{name: "scatter", x: []float64{0, 1, 2}, y: []float64{0, 1.5, 2}, s: 1, k: 1.0 / 6, se: math.Sqrt(1.0 / 12)},
		// No line is determined: every result NaN, never a panic.
		{name: "lengths differ", x: []float64{0, 1, 2}, y: []float64{0, 1}, undetermined: true},
		{name: "one point", x: []float64{1}, y: []float64{2}, undetermined: true},
		{name: "no points", undetermined: true},
		{name: "every x alike", x: []float64{2, 2, 2}, y: []float64{0, 1, 2}, undetermined: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, k, se := LineFit(tc.x, tc.y)
			if tc.undetermined {
				if !math.IsNaN(s) || !math.IsNaN(k) || !math.IsNaN(se) {
					t.Errorf("slope %g, intercept %g, se %g; want NaN for all", s, k, se)
				}
				return
			}
			if math.Abs(s-tc.s) > 1e-12 || math.Abs(k-tc.k) > 1e-12 || tc.seUndefined != math.IsNaN(se) || (!tc.seUndefined && math.Abs(se-tc.se) > 1e-12) {
				t.Errorf("slope %g, intercept %g, se %g; want %g, %g, %g", s, k, se, tc.s, tc.k, tc.se)
			}
		})
	}
}

func TestMeasureLevelsRejectsBadConfig(t *testing.T) {
	o := NewSynthetic(3, 1, 1, 1, 1)
	o.Max = 4
	for _, cfg := range []LevelsConfig{
		{MinLevel: 3, MaxLevel: 2},
		{MinLevel: 1, MaxLevel: 5},
		{MinLevel: 1, MaxLevel: 3, Draws: 2},
		{MinLevel: 1, MaxLevel: 3, Confidence: 1.5},
	} {
		if _, err := MeasureLevels(o, Float64Ops{Dim: 3}, cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestNormalCritical(t *testing.T) {
	// Textbook values: 1.96 at 95%, 3.29 at 99.9%; Bonferroni over 4 tests
	// at 99.9% is the 99.975% two-sided quantile 3.66.
	for _, tc := range []struct {
		conf  float64
		tests int
		want  float64
	}{{0.95, 1, 1.960}, {0.999, 1, 3.291}, {0.999, 4, 3.662}} {
		if got := NormalCritical(tc.conf, tc.tests); math.Abs(got-tc.want) > 1e-3 {
			t.Errorf("NormalCritical(%g, %d) = %.4f, want %.3f", tc.conf, tc.tests, got, tc.want)
		}
	}
}

// A rate that cannot be fitted is NaN in Go and null in JSON (encoding/json
// rejects NaN).
func TestLevelsReportJSONWritesNullForMissingRates(t *testing.T) {
	rep := LevelsReport{FitB: RateFit{Rate: math.NaN(), SE: math.NaN(), Note: "one level: no rate"},
		Estimators: []Prediction{{Name: "vmlmc-opt", Var: math.NaN(), RelImages: 2}}}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"fit_b":{"from":0,"to":0,"note":"one level: no rate","rate":null,"se":null}`, `"var":null`, `"rel_images":2`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON %s lacks %s", data, want)
		}
	}
}

// With the previous parameters set, each level's correction
// Y(x_t; s) - Y(x_(t-1); s) is measured on the same draw. On the synthetic
// oracle E|ΔY|^2 = (h^l only: |x - x'|^2) + sum_k s_k^2 |x - x'|^2 over the
// noise levels k of Y. |ΔY|^2 sums 20 squared normals, so its relative
// spread is about sqrt(2/20) and the mean of 200 draws has a relative
// standard error of 2.2%: 12% is over 5 of them.
func TestMeasureLevelsCorrections(t *testing.T) {
	const dim = 20
	o := NewSynthetic(dim, 1, 1, 1, 9)
	dx2 := 0.0
	for i := range o.X {
		o.X[i] = 0.3
		o.XPrev[i] = 0.3 + 0.1*float64(i%3-1)
		dx2 += (o.X[i] - o.XPrev[i]) * (o.X[i] - o.XPrev[i])
	}
	cfg := LevelsConfig{MinLevel: 1, MaxLevel: 4, Draws: 200, Previous: true, D1: 2, D2: 1, QE: 5, Seed: 1}
	rep, err := MeasureLevels(o, Float64Ops{Dim: dim}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range append(rep.Levels, rep.Top) {
		want := o.NoiseVar(st.Level, st.Diff, o.XStar) / dim * dx2
		if !st.Diff {
			want += dx2
		}
		if math.Abs(st.CorrMoment2/want-1) > 0.12 {
			t.Errorf("level %d (diff %v): E|ΔY|^2 = %.4g, want %.4g", st.Level, st.Diff, st.CorrMoment2, want)
		}
	}
	names := map[string]Prediction{}
	for _, p := range rep.Estimators {
		names[p.Name] = p
	}
	for _, name := range []string{"vr-lsgd", "vr-vmlmc", "vr-rtmlmc"} {
		if _, ok := names[name]; !ok {
			t.Errorf("no prediction for %s", name)
		}
	}
	if strings.Contains(rep.Verdict, "vr-lsgd") {
		t.Errorf("verdict %q names vr-lsgd, which is not MLMC", rep.Verdict)
	}
	// vr-lsgd by hand: Var h^L / D1 + (QE - 1)/2 E|Δh^L|^2 / D2 at a cost of
	// (D1 + (QE - 1) D2)/QE draws of h^L.
	p, top := names["vr-lsgd"], rep.Top
	wantVar := top.Var/2 + 4.0/2*top.CorrMoment2
	wantImages := (2 + 4.0) / 5 * top.Images
	if math.Abs(p.Var-wantVar) > 1e-9*wantVar || math.Abs(p.Images-wantImages) > 1e-9 {
		t.Errorf("vr-lsgd: Var %.6g, %.4g images; want %.6g, %.4g", p.Var, p.Images, wantVar, wantImages)
	}
	if rel := wantVar * wantImages / (top.Var * top.Images); math.Abs(p.RelImages-rel) > 1e-9 {
		t.Errorf("vr-lsgd: var x images %.6g of L-SGD's, want %.6g", p.RelImages, rel)
	}
}

// TestMeasureLevelsUntimed: untimed, a measurement reads the same
// statistics from the same draws, with no query time, no time rate and a
// verdict on samples; timed, every level has a query time.
func TestMeasureLevelsUntimed(t *testing.T) {
	measure := func(untimed bool) *LevelsReport {
		o := NewSynthetic(6, 1, 2, 1, 7)
		o.XPrev[0] += 0.1 // a previous point for the VR correction's reading
		rep, err := MeasureLevels(o, Float64Ops{Dim: 6}, LevelsConfig{MinLevel: 0, MaxLevel: 5, Draws: 64, Seed: 3, Untimed: untimed, Previous: true})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	timed, untimed := measure(false), measure(true)
	for i, st := range untimed.Levels {
		tst := timed.Levels[i]
		if st.Seconds != 0 || !(tst.Seconds > 0) || st.CorrSeconds != 0 || !(tst.CorrSeconds > 0) {
			t.Errorf("level %d: seconds %g and %g (the correction's) untimed, %g and %g timed; want 0 and > 0", st.Level, st.Seconds, st.CorrSeconds, tst.Seconds, tst.CorrSeconds)
		}
		if st.Var != tst.Var || st.MeanNorm != tst.MeanNorm || st.Images != tst.Images || st.CorrMoment2 != tst.CorrMoment2 {
			t.Errorf("level %d: untimed statistics %+v differ from timed %+v", st.Level, st, tst)
		}
	}
	if !math.IsNaN(untimed.FitCTime.Rate) || untimed.FitCTime.Note != "the queries were not timed" {
		t.Errorf("untimed time rate %+v, want NaN with the note that the queries were not timed", untimed.FitCTime)
	}
	if r := timed.FitCTime.Rate; math.IsNaN(r) || math.IsInf(r, 0) || timed.FitCTime.Note != "" {
		t.Errorf("timed time rate %+v, want a fitted rate", timed.FitCTime)
	}
	if untimed.FitB != timed.FitB {
		t.Errorf("untimed b fit %+v, timed %+v: want the same", untimed.FitB, timed.FitB)
	}
}

// TestMeasureLevelsBrief: a brief measurement leaves out the predictions
// and the verdict, and nothing else: its statistics, fits and telescoping
// check are the full measurement's on the same draws.
func TestMeasureLevelsBrief(t *testing.T) {
	measure := func(brief bool) *LevelsReport {
		o := NewSynthetic(6, 1, 2, 1, 7)
		o.XPrev[0] += 0.1
		rep, err := MeasureLevels(o, Float64Ops{Dim: 6}, LevelsConfig{MinLevel: 0, MaxLevel: 5, Draws: 64, Seed: 3, Untimed: true, Previous: true, Brief: brief})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	full, brief := measure(false), measure(true)
	if len(full.Estimators) == 0 || full.Verdict == "" {
		t.Fatalf("the full measurement has %d predictions and verdict %q: want both", len(full.Estimators), full.Verdict)
	}
	if brief.Estimators != nil || brief.Verdict != "" || brief.D1 != 0 {
		t.Errorf("brief: %d predictions, verdict %q, D1 %d; want none", len(brief.Estimators), brief.Verdict, brief.D1)
	}
	full.Estimators, full.Verdict, full.D1, full.D2, full.QE = nil, "", 0, 0, 0
	// Printed, not DeepEqual: the untimed rate is NaN in both.
	if b, f := fmt.Sprintf("%+v", *brief), fmt.Sprintf("%+v", *full); b != f {
		t.Errorf("brief report\n%s\ndiffers from the full one\n%s\nbeyond the predictions and the verdict", b, f)
	}
}
