package main

import (
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/cso"
	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
	"github.com/simclr-go/simclr/mlmc"
)

func housing(t *testing.T) *Data {
	t.Helper()
	dir := filepath.Dir(testenv.DataFile(t, "dro/housing_scale.txt"))
	ds, _ := findDataset("housing")
	d, err := loadData(ds, dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadLIBSVM(t *testing.T) {
	p := writeFile(t, "ok.txt", "24 1:-0.5 3:2.22045e-16\n\n21.6 2:1 3:-1\n")
	d, err := readLIBSVM(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{-0.5, 0, 2.22045e-16}, {0, 1, -1}}
	if len(d.X) != 2 || d.Y[0] != 24 || d.Y[1] != 21.6 {
		t.Fatalf("rows %v labels %v", d.X, d.Y)
	}
	for i := range want {
		for j := range want[i] {
			if d.X[i][j] != want[i][j] {
				t.Fatalf("X = %v, want %v (a missing index is 0)", d.X, want)
			}
		}
	}
	for _, c := range []struct{ name, text, want string }{
		{"label", "x 1:1\n", ":1: label"},
		{"entry", "1 1:1\n2 1=3\n", ":2: entry \"1=3\""},
		{"order", "1 2:1 1:1\n", ":1: index 1 after index 2"},
		{"range", "1 4:1\n", ":1: index 4 is above"},
		{"nan", "1 1:NaN\n", ":1: entry"},
		{"empty", "\n", "no rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, "bad.txt", c.text)
			_, err := readLIBSVM(p, 3)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want one naming %s and %q", err, p, c.want)
			}
		})
	}
}

func TestReadCSV(t *testing.T) {
	p := writeFile(t, "gas.csv", "AT,AFDP ,CO,NOX\n1,2,3,4\n5,6,7,8\n")
	d, err := readCSV(p, "NOX", []string{"CO"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.Features, ",") != "AT,AFDP" || d.X[1][1] != 6 || d.Y[1] != 8 {
		t.Fatalf("features %v X %v Y %v", d.Features, d.X, d.Y)
	}
	for _, c := range []struct{ name, text, want string }{
		{"target", "AT,CO\n1,2\n", `no column "NOX"`},
		{"number", "AT,NOX\n1,2\nx,3\n", `:3: column "AT" holds "x"`},
		{"short", "AT,NOX\n1,2\n3\n", ":3:"},
		{"empty", "AT,NOX\n", "no rows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, "bad.csv", c.text)
			_, err := readCSV(p, "NOX", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want one naming %s and %q", err, p, c.want)
			}
		})
	}
}

// TestDatasetsLoad reads every data file of the experiment.
func TestDatasetsLoad(t *testing.T) {
	dir := filepath.Dir(testenv.DataFile(t, "dro/housing_scale.txt"))
	want := map[string][2]int{"housing": {506, 13}, "mg": {1385, 6}, "mpg": {392, 7}, "bike": {17379, 12}, "gas": {22191, 9}}
	for _, ds := range datasets {
		d, err := loadData(ds, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]int{len(d.Y), d.Dim()}; got != want[ds.Name] {
			t.Errorf("%s: %d rows x %d features, want %v", ds.Name, got[0], got[1], want[ds.Name])
		}
	}
	if _, err := loadData(datasets[0], t.TempDir()); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("missing file: error %v, want one naming --data-dir", err)
	}
}

// relClose reports |a - b| <= tol (1 + max(|a|, |b|)).
func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*(1+math.Max(math.Abs(a), math.Abs(b)))
}

// TestExactGradient checks the closed form's gradient, of F and of one
// row's F_xi, against float64 central differences of the values.
func TestExactGradient(t *testing.T) {
	d := housing(t)
	ex := newExactLinear(d)
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, d.Dim()+1)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	g, gr := make([]float64, len(x)), make([]float64, len(x))
	ex.grad(x, g)
	ex.rowGrad(x, 7, 1, gr)
	for i := range x {
		h := 1e-6 * (1 + math.Abs(x[i]))
		xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
		xp[i] += h
		xm[i] -= h
		if fd := (ex.value(xp) - ex.value(xm)) / (2 * h); !relClose(g[i], fd, 1e-6) {
			t.Errorf("dF/dx%d = %g, finite differences %g", i, g[i], fd)
		}
		if fd := (ex.rowValue(xp, 7) - ex.rowValue(xm, 7)) / (2 * h); !relClose(gr[i], fd, 1e-6) {
			t.Errorf("dF_xi/dx%d = %g, finite differences %g", i, gr[i], fd)
		}
	}
	// F is the mean of the rows' F_xi.
	mean := 0.0
	for i := range d.Y {
		mean += ex.rowValue(x, i) / float64(len(d.Y))
	}
	if !relClose(mean, ex.value(x), 1e-12) {
		t.Errorf("mean of F_xi %g, F %g", mean, ex.value(x))
	}
}

// TestPlugInGradient checks the oracle's plug-in gradient (the softmax-
// weighted loss gradients) against central differences of the plug-in
// value on the same inner draws, for the linear model and the MLP.
func TestPlugInGradient(t *testing.T) {
	d := housing(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, model := range []predictor{linear{d.Dim()}, mlp{d: d.Dim(), h: 5}} {
		t.Run(model.name(), func(t *testing.T) {
			p := newSinkhorn(d, model)
			x := make([]float64, model.dim())
			for i := range x {
				x[i] = 0.5 * r.NormFloat64()
			}
			row := 17
			zs := make([][]float64, 16)
			for j := range zs {
				zs[j] = p.DrawInner(r, row, nil)
			}
			g := make([]float64, len(x))
			v := p.PlugIn(x, row, zs, 1, g)
			if v0 := p.PlugIn(x, row, zs, 0, nil); v0 != v {
				t.Fatalf("value with gradient %g, without %g", v, v0)
			}
			for i := range x {
				h := 1e-6 * (1 + math.Abs(x[i]))
				xp, xm := append([]float64(nil), x...), append([]float64(nil), x...)
				xp[i] += h
				xm[i] -= h
				fd := (p.PlugIn(xp, row, zs, 0, nil) - p.PlugIn(xm, row, zs, 0, nil)) / (2 * h)
				if !relClose(g[i], fd, 1e-6) {
					t.Errorf("d plug-in/dx%d = %g, finite differences %g", i, g[i], fd)
				}
			}
		})
	}
}

// TestClosedFormAgainstMonteCarlo compares F_xi(x) with lambda log of the
// mean of exp(l/lambda) over 2^18 inner draws, for rows whose inner law has
// a finite variance, within 4.4 standard errors (delta method; about
// 1e-5 two-sided per row).
func TestClosedFormAgainstMonteCarlo(t *testing.T) {
	d := housing(t)
	ex := newExactLinear(d)
	xStar, _, err := ex.minimise()
	if err != nil {
		t.Fatal(err)
	}
	p := newSinkhorn(d, linear{d.Dim()})
	r := rand.New(rand.NewPCG(5, 6))
	const n = 1 << 18
	for _, row := range []int{0, 100, 250, 400} {
		mu, m, m2 := innerMoments(p, xStar, row, n, r)
		se := math.Sqrt((m2 - m*m) / n)
		mc := mu*mu + Lambda*math.Log(m)
		seF := Lambda * se / m
		if exact := ex.rowValue(xStar, row); math.Abs(mc-exact) > 4.4*seF {
			t.Errorf("row %d: Monte Carlo %.6g ± %.2g, closed form %.6g", row, mc, seF, exact)
		}
	}
}

// innerMoments draws n inner samples of a row for the linear model at x and
// returns the mean residual mu = w.a + w0 - b and the first two moments of
// exp((u^2 - mu^2)/Lambda), the inner function relative to its value at
// mu, so that the sums stay in range.
func innerMoments(p *sinkhorn, x []float64, row, n int, r *rand.Rand) (mu, m1, m2 float64) {
	m := linear{p.data.Dim()}
	mu = m.predict(x, p.data.X[row]) - p.data.Y[row]
	z := make([]float64, p.data.Dim())
	for range n {
		z = p.DrawInner(r, row, z)
		u := m.predict(x, z) - p.data.Y[row]
		e := math.Exp((u*u - mu*mu) / Lambda)
		m1 += e / float64(n)
		m2 += e * e / float64(n)
	}
	return mu, m1, m2
}

// TestMinimise checks that Newton's method stops at a stationary point and
// that no nearby point is lower (F is convex).
func TestMinimise(t *testing.T) {
	d := housing(t)
	ex := newExactLinear(d)
	x, f, err := ex.minimise()
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, len(x))
	ex.grad(x, g)
	if n := math.Sqrt(mlmc.Float64Ops{}.Dot(g, g)); n > 1e-8*f {
		t.Errorf("|grad F(x*)| = %g", n)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 100 {
		y := append([]float64(nil), x...)
		for i := range y {
			y[i] += 1e-3 * r.NormFloat64()
		}
		if fy := ex.value(y); fy < f {
			t.Fatalf("F(x* + delta) = %.12g < F* = %.12g", fy, f)
		}
	}
	if f0 := ex.value(make([]float64, len(x))); !(f < f0) {
		t.Errorf("F* = %g is not below F(0) = %g", f, f0)
	}
}

// shrunk is housing's optimum with w scaled by a quarter: there the inner
// law of exp(l/lambda) has a small relative variance for every row, so the
// asymptotic rates of the antithetic correction show from low levels on
// (at x* itself they appear only far above level 10: docs/definitions.md,
// section 9).
func shrunk(t *testing.T, d *Data) (x []float64, ex *exactLinear) {
	ex = newExactLinear(d)
	x, _, err := ex.minimise()
	if err != nil {
		t.Fatal(err)
	}
	for i := range x[:d.Dim()] {
		x[i] /= 4
	}
	return x, ex
}

// TestPlugInBiasVanishes checks that E h^l approaches the exact gradient as
// l grows: the mean of h^l - grad F_xi over outer samples (the exact row
// gradient as a control variate) is clearly not zero at level 0 (more than
// 6 standard errors) and at level 8 is below a thirtieth of level 0's, about
// the 2^-l decay of a smooth plug-in bias (256x) with room for noise.
func TestPlugInBiasVanishes(t *testing.T) {
	d := housing(t)
	x, ex := shrunk(t, d)
	p := newSinkhorn(d, linear{d.Dim()})
	r := rand.New(rand.NewPCG(9, 10))
	bias := func(level, k int) (norm, se float64) {
		dim := len(x)
		sum, sum2 := make([]float64, dim), make([]float64, dim)
		h := make([]float64, dim)
		zs := make([][]float64, 1<<level)
		for range k {
			row := p.DrawOuter(r)
			for j := range zs {
				zs[j] = p.DrawInner(r, row, zs[j])
			}
			clear(h)
			p.PlugIn(x, row, zs, 1, h)
			ex.rowGrad(x, row, -1, h)
			for i, v := range h {
				sum[i] += v
				sum2[i] += v * v
			}
		}
		var n2, v2 float64
		for i := range sum {
			m := sum[i] / float64(k)
			n2 += m * m
			v2 += (sum2[i]/float64(k) - m*m) / float64(k)
		}
		return math.Sqrt(n2), math.Sqrt(v2)
	}
	b0, se0 := bias(0, 40000)
	b8, se8 := bias(8, 4000)
	t.Logf("|E h^0 - grad F| = %.4g ± %.2g, |E h^8 - grad F| = %.4g ± %.2g", b0, se0, b8, se8)
	if b0 < 6*se0 {
		t.Errorf("level 0's bias %.4g is within 6 standard errors (%.2g) of 0: the oracle is not biased as it must be", b0, se0)
	}
	if b8 > b0/30 {
		t.Errorf("level 8's bias %.4g is not below a thirtieth of level 0's %.4g", b8, b0)
	}
}

// TestAntitheticRate measures Var H^l at levels 3..9 and checks the fitted
// b against the antithetic correction's 2: within [1.5, 2.5], about 4
// standard errors of the fit at 400 draws per level.
func TestAntitheticRate(t *testing.T) {
	d := housing(t)
	x, _ := shrunk(t, d)
	p := newSinkhorn(d, linear{d.Dim()})
	o, err := cso.New[int, []float64](p, cso.Config{MaxLevel: 9, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	o.SetPoints(x, x)
	rep, err := mlmc.MeasureLevels[[]float64](o, mlmc.Float64Ops{Dim: p.Dim()},
		mlmc.LevelsConfig{MinLevel: 2, MaxLevel: 9, Draws: 400, B: 2, C: 1, Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("b = %.2f ± %.2f, c = %.2f; telescoping pass %v", rep.FitB.Rate, rep.FitB.SE, rep.FitCImages.Rate, rep.Telescope.Pass)
	if b := rep.FitB.Rate; b < 1.5 || b > 2.5 {
		t.Errorf("fitted b = %.2f ± %.2f, want about 2", b, rep.FitB.SE)
	}
	if c := rep.FitCImages.Rate; math.Abs(c-1) > 1e-9 {
		t.Errorf("fitted c = %g, want 1 (2^l inner draws a query)", c)
	}
	if !rep.Telescope.Pass {
		t.Errorf("the H^l do not telescope to h^9: %+v", rep.Telescope)
	}
}

// TestEstimatorsUnbiased checks on this oracle that V-MLMC and RT-MLMC have
// the expectation of L-SGD (grad F^L) and RR-MLMC that of the exact
// gradient (grad F, truncated at level 20), by z-tests of the means of 4000
// estimates on 3 random directions at 99.9% (Bonferroni over 9 tests).
func TestEstimatorsUnbiased(t *testing.T) {
	d := housing(t)
	x, ex := shrunk(t, d)
	const L, k = 5, 4000
	dim := len(x)
	r := rand.New(rand.NewPCG(13, 14))
	dirs := make([][]float64, 3)
	for i := range dirs {
		dirs[i] = make([]float64, dim)
		mlmc.Float64Ops{}.Normal(dirs[i], r)
	}
	// projections returns the mean and standard error of the estimates'
	// projections on dirs.
	projections := func(name string, cfg mlmc.Config, seed uint64) (mean, se []float64) {
		p := newSinkhorn(d, linear{d.Dim()})
		o, err := cso.New[int, []float64](p, cso.Config{MaxLevel: oracleMaxLevel, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		o.SetPoints(x, x)
		cfg.Seed = seed
		kind, err := mlmc.ParseKind(name)
		if err != nil {
			t.Fatal(err)
		}
		e, err := mlmc.New(kind, cfg, mlmc.Float64Ops{Dim: dim}, o)
		if err != nil {
			t.Fatal(err)
		}
		v := make([]float64, dim)
		s1, s2 := make([]float64, len(dirs)), make([]float64, len(dirs))
		for it := range k {
			if _, err := e.Estimate(it, v); err != nil {
				t.Fatal(err)
			}
			for j, u := range dirs {
				y := mlmc.Float64Ops{}.Dot(u, v)
				s1[j] += y
				s2[j] += y * y
			}
		}
		for j := range dirs {
			m := s1[j] / k
			mean = append(mean, m)
			se = append(se, math.Sqrt((s2[j]/k-m*m)/k))
		}
		return mean, se
	}
	crit := mlmc.NormalCritical(0.999, 9)
	lsgd, lsgdSE := projections("lsgd", mlmc.Config{MaxLevel: L}, 1)
	g := make([]float64, dim)
	ex.grad(x, g)
	for _, c := range []struct {
		name  string
		cfg   mlmc.Config
		exact bool
	}{
		{"vmlmc", mlmc.Config{MaxLevel: L}, false},
		{"rtmlmc", mlmc.Config{MaxLevel: L, B: 2, C: 1}, false},
		{"rrmlmc", mlmc.Config{B: 2, C: 1}, true},
	} {
		mean, se := projections(c.name, c.cfg, 2)
		for j, u := range dirs {
			want, wantSE := lsgd[j], lsgdSE[j]
			if c.exact {
				want, wantSE = mlmc.Float64Ops{}.Dot(u, g), 0
			}
			if z := (mean[j] - want) / math.Hypot(se[j], wantSE); math.Abs(z) > crit {
				t.Errorf("%s, direction %d: mean %.5g ± %.2g, want %.5g ± %.2g (z = %.2f)", c.name, j, mean[j], se[j], want, wantSE, z)
			}
		}
	}
}

func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset", "boston"}, `unknown --dataset "boston"`},
		{[]string{"--trials", "0"}, "--trials 0"},
		{[]string{"--first-seed", "0"}, "--first-seed 0"},
		{[]string{"--first-seed", "995"}, "meet the tuning seeds 1001..1003"},
		{[]string{"--first-seed", "1003", "--trials", "1"}, "meet the tuning seeds"},
		{[]string{"--budget", "-5"}, "--budget -5"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--data-dir", "/nonexistent"}, "--data-dir"},
		{[]string{"--markdown", "/nonexistent.jsonl"}, "open results"},
		{[]string{"--methods", "L-SGD,XX"}, `unknown method "XX"`},
		{[]string{"--method", "grid"}, `--method "grid"`},
		{[]string{"--gap", "0.01"}, "only --method auto plans for a gap"},
		{[]string{"--method", "auto", "--gap", "2"}, "--gap 2"},
		{[]string{"--method", "auto", "--methods", "L-SGD"}, "drop --methods"},
		{[]string{"--tuned", "a.jsonl", "--tuning-from", "b.jsonl"}, "drop it with --tuned"},
	} {
		var out, errOut strings.Builder
		err := mainErr(c.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// TestFirstSeed: --first-seed sets the protocol's first reported seed
// (the trials run it and the seeds after it), 1 by default, and seeds past
// the tuning seeds are accepted.
func TestFirstSeed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want uint64
	}{
		{nil, 1},
		{[]string{"--first-seed", "101"}, 101},
		{[]string{"--first-seed", "1004", "--trials", "50"}, 1004},
	} {
		o, err := parseFlags(append([]string{"--data-dir", t.TempDir()}, c.args...), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := (&task{}).protocol(o.trials, o.firstSeed).FirstSeed; got != c.want {
			t.Errorf("%v: the protocol's first seed %d, want %d", c.args, got, c.want)
		}
	}
}

// TestExperimentSmall runs the whole experiment on a small synthetic
// linear data set with a short budget: every method gets a setting and a
// result, the JSON has the documented shape, --markdown reads it back and
// --tuned reruns the same trials.
func TestExperimentSmall(t *testing.T) {
	tk := toyTask(t, 3000)
	tk.grid.Levels, tk.grid.Steps = []int{0, 2}, []float64{0.1, 1e-3}
	pr := tk.protocol(3, 1)
	tn, err := experiment.Tune(tk.problem(oracleMaxLevel), pr, tk.grid.Methods(experiment.Kinds()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := experiment.Report(tk.problem(oracleMaxLevel), pr, tn)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if len(s.Methods) != len(experiment.Kinds()) || len(s.PerTarget) != len(gaps) {
		t.Fatalf("%d methods, %d gaps", len(s.Methods), len(s.PerTarget))
	}
	if m := s.Methods[0]; m.Name != "L-SGD" || m.StaysBelow[0].Median == nil || m.StaysBelow[0].Reached < 2 {
		t.Errorf("L-SGD does not stay below a 1%% gap on a 3-parameter least-squares problem in 3000 samples: %+v", m)
	}
	js, _ := json.Marshal(s)
	for _, want := range []string{`"name":"RU-MLMC","setting":{"method":"rumlmc","L":null`, `"name":"L-SGD","setting":{"method":"lsgd","L":`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	path := filepath.Join(t.TempDir(), "toy.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteJSON(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out strings.Builder
	if err := mainErr([]string{"--markdown", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| toy | 1% |") {
		t.Errorf("markdown without the toy rows:\n%s", out.String())
	}
	// --tuned reruns the trials with the same settings and seeds: the same
	// results.
	tn2, err := tuningFromFile(path, "toy", experiment.Kinds())
	if err != nil {
		t.Fatal(err)
	}
	again, err := experiment.Report(tk.problem(oracleMaxLevel), pr, tn2)
	if err != nil {
		t.Fatal(err)
	}
	again.Summary.Tuning = s.Tuning
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(again.Summary)
	if string(a) != string(b) {
		t.Errorf("rerun with the tuned settings differs:\n%s\n%s", a, b)
	}
}

// TestAutoSmall runs the auto method on the small linear problem of
// TestExperimentSmall's kind for a 1% gap: each trial records its stages,
// its first pilot within 1% of the budget, and the median trial stays
// below the gap.
func TestAutoSmall(t *testing.T) {
	tk := toyTask(t, 200_000)
	var out strings.Builder
	o := options{trials: 3, jsonOut: true, autoGaps: []float64{0.01}}
	if err := tk.autoExperiment(o, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s experiment.Summary
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
		t.Fatal(err)
	}
	m := s.Methods[0]
	if m.Name != "auto" || len(m.Auto) != 3 {
		t.Fatalf("%s with %d trials' records, want auto with 3", m.Name, len(m.Auto))
	}
	for i, rec := range m.Auto {
		if len(rec.Stages) == 0 || len(rec.Stages[0].Plans) == 0 || rec.Stages[0].Plans[0].Samples > tk.budget/100 {
			t.Errorf("trial %d: record %+v, want stages whose first measurement is within 1%% of %d", i, rec, tk.budget)
		}
	}
	if p := m.StaysBelow[0]; p.Median == nil || p.Reached < 2 {
		t.Errorf("auto does not stay below a 1%% gap on a 3-parameter least-squares problem: %+v", p)
	}
}

// TestRowRho checks the closed-form relative variance of exp(l/lambda)
// against a Monte Carlo estimate on one row at the shrunk point (within
// 15%: the estimate of a variance from 2^18 draws of a skewed law).
func TestRowRho(t *testing.T) {
	d := housing(t)
	x, ex := shrunk(t, d)
	p := newSinkhorn(d, linear{d.Dim()})
	r := rand.New(rand.NewPCG(23, 24))
	const row, n = 3, 1 << 18
	_, m, m2 := innerMoments(p, x, row, n, r)
	mc := (m2 - m*m) / (m * m)
	if want := ex.rowRho(x, row); math.Abs(mc-want) > 0.15*want {
		t.Errorf("relative variance: Monte Carlo %.4g, closed form %.4g", mc, want)
	}
}

// toyTask is a small linear problem (50 rows, two features, noise 0.3)
// with its exact F*, for the end-to-end tests.
func toyTask(t testing.TB, budget int64) *task {
	t.Helper()
	r := rand.New(rand.NewPCG(21, 22))
	d := &Data{Name: "toy"}
	for range 50 {
		a := []float64{2*r.Float64() - 1, 2*r.Float64() - 1}
		d.X = append(d.X, a)
		d.Y = append(d.Y, 3*a[0]-2*a[1]+1+0.3*r.NormFloat64())
	}
	return linearTask(t, d, budget)
}

// sizedTask is a linear problem of rows rows and feats features (uniform on
// [-1, 1], targets a fixed linear signal plus noise), the size of the
// study's data sets where toyTask is a tenth of it.
func sizedTask(t testing.TB, rows, feats int, budget int64) *task {
	t.Helper()
	r := rand.New(rand.NewPCG(23, 24))
	d := &Data{Name: "sized"}
	for range rows {
		a := make([]float64, feats)
		y := 1 + 0.3*r.NormFloat64()
		for k := range a {
			a[k] = 2*r.Float64() - 1
			y += float64(k%3-1) * 2 * a[k]
		}
		d.X = append(d.X, a)
		d.Y = append(d.Y, y)
	}
	return linearTask(t, d, budget)
}

// linearTask is the linear DRO task on d, with its exact F*.
func linearTask(t testing.TB, d *Data, budget int64) *task {
	t.Helper()
	feats := len(d.X[0])
	ex := newExactLinear(d)
	_, fStar, err := ex.minimise()
	if err != nil {
		t.Fatal(err)
	}
	tk := &task{ds: dataset{Name: d.Name, Convex: true}, data: d, model: linear{feats}, obj: ex.objective(), exact: ex,
		x0: make([]float64, feats+1), fStar: fStar, budget: budget, growth: 1.5, grid: droGrid()}
	tk.f0 = ex.value(tk.x0)
	return tk
}
