package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// The gradient written through E[W + X] (GradAffine with ClosedZ) equals
// central finite differences of the closed-form objective, at points of low
// and high load, to 1e-6 relative.
func TestGradientMatchesFiniteDifferences(t *testing.T) {
	points := [][2]float64{{9, 9}, {2.4, 2.1}, {1.2, 1.5}, {3, 4}, {0.9, 2.0}}
	for _, law := range Laws() {
		for _, x := range points {
			g := ClosedGrad(law, x[0], x[1])
			for i := range 2 {
				h := 1e-5
				var xp, xm = x, x
				xp[i] += h
				xm[i] -= h
				fd := (Objective(law, xp[0], xp[1]) - Objective(law, xm[0], xm[1])) / (2 * h)
				if math.Abs(fd-g[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
					t.Errorf("%s at %v: dF/dx%d = %.9g, finite difference %.9g", law.Name, x, i, g[i], fd)
				}
			}
		}
	}
}

// The exhaustive-search optimum is a stationary point of the closed form.
func TestOptimumIsStationary(t *testing.T) {
	for _, law := range Laws() {
		mu, p := Optimum(law)
		if g := ClosedGrad(law, mu, p); math.Hypot(g[0], g[1]) > 1e-5 {
			t.Errorf("%s: gradient %v at the optimum (%.6f, %.6f)", law.Name, g, mu, p)
		}
	}
}

// The law samplers have the moments the closed form uses (5 standard
// errors; the fourth moment bounds the error of the second).
func TestServiceLawMoments(t *testing.T) {
	const n = 400000
	for li, law := range Laws() {
		r := rand.New(rand.NewPCG(uint64(li), 3))
		var s1, s2, s4 float64
		for range n {
			v := law.Sample(r)
			s1 += v
			s2 += v * v
			s4 += v * v * v * v
		}
		m1, m2 := s1/n, s2/n
		se1 := math.Sqrt((m2 - m1*m1) / n)
		se2 := math.Sqrt((s4/n - m2*m2) / n)
		if math.Abs(m1-law.Mean) > 5*se1 || math.Abs(m2-law.Second) > 5*se2 {
			t.Errorf("%s: mean %.4f (want %.4f, se %.4f), E[V^2] %.4f (want %.4f, se %.4f)",
				law.Name, m1, law.Mean, se1, m2, law.Second, se2)
		}
	}
}

// A long simulation agrees with the closed form: the time average of W + X
// over 2^22 steps (after 2^16 of warm-up) equals ClosedZ within 5 standard
// errors from 64 batch means, for every law at its optimum.
func TestClosedFormMatchesLongSimulation(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 3 x 2^22 queue steps")
	}
	const batches, batchLen, warm = 64, 1 << 16, 1 << 16
	for li, law := range Laws() {
		mu, p := Optimum(law)
		r := rand.New(rand.NewPCG(uint64(li), 11))
		invMu, invLam := 1/mu, 1/lambda(p)
		var w, x float64
		var sum, sum2 float64
		for b := -1; b < batches; b++ {
			n := batchLen
			if b < 0 {
				n = warm
			}
			bs := 0.0
			for range n {
				u := r.ExpFloat64() * invLam
				w += law.Sample(r)*invMu - u
				if w > 0 {
					x += u
				} else {
					w, x = 0, 0
				}
				bs += w + x
			}
			if b >= 0 {
				m := bs / batchLen
				sum += m
				sum2 += m * m
			}
		}
		mean := sum / batches
		se := math.Sqrt((sum2/batches - mean*mean) / (batches - 1))
		want := ClosedZ(law, mu, p)
		if math.Abs(mean-want) > 5*se {
			t.Errorf("%s: simulated E[W+X] = %.4f (se %.4f), closed form %.4f", law.Name, mean, se, want)
		}
	}
}

// On one draw of the one-trajectory constructions (paper, tail), H^l =
// h^l - h^(l-1) exactly (both values come from the same trajectory), and a
// VR replay at Previous reproduces the draw.
func TestQueueOracleLevelsShareTrajectory(t *testing.T) {
	law := Laws()[1]
	for _, kind := range []oracleKind{{TailAverages, 1}, {Paper, 1}, {Paper, 4}, {Paper, 100}} {
		o := newQueueOracle(law, kind, 15, 5)
		o.x = [2]float64{2.4, 2.3}
		o.xPrev = o.x
		for l := 1; l <= 15; l++ {
			s, cost, err := o.Draw(l)
			if err != nil {
				t.Fatal(err)
			}
			if cost != 1<<l {
				t.Fatalf("%s: level %d costs %d, want %d", kind, l, cost, 1<<l)
			}
			hl, hPrev, bigH, replay := make([]float64, 2), make([]float64, 2), make([]float64, 2), make([]float64, 2)
			d := s.(queueDraw)
			for _, e := range []struct {
				s    mlmc.Sample
				at   mlmc.Point
				diff bool
				out  []float64
			}{{s, mlmc.Current, false, hl}, {queueDraw{level: l - 1, seed: d.seed}, mlmc.Current, false, hPrev},
				{s, mlmc.Current, true, bigH}, {s, mlmc.Previous, true, replay}} {
				if err := o.Eval(e.s, e.at, e.diff, 1, e.out); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 2 {
				if math.Abs(hl[i]-hPrev[i]-bigH[i]) > 1e-9*math.Max(1, math.Abs(hl[i])) {
					t.Errorf("%s level %d: h^l - h^(l-1) = %g, H^l = %g", kind, l, hl[i]-hPrev[i], bigH[i])
				}
				if replay[i] != bigH[i] {
					t.Errorf("%s level %d: replay at equal parameters gives %g, want %g", kind, l, replay[i], bigH[i])
				}
			}
		}
	}
}

// levelFunc returns the two values (Y^l, Y'^(l-1)) of a construction for
// one draw.
type levelFunc func(law Law, mu, p float64, seed uint64, level int) (long, short float64)

func paperLevels(m int) levelFunc {
	return func(law Law, mu, p float64, seed uint64, l int) (float64, float64) {
		return paperWindows(law, mu, p, seed, l, m, simWindowLevel, false)
	}
}

func coupledLevels(law Law, mu, p float64, seed uint64, l int) (float64, float64) {
	return endCoupled(law, mu, p, seed, l, l, true)
}

func tailLevels(law Law, mu, p float64, seed uint64, l int) (float64, float64) {
	return tailAverages(law, mu, p, seed, l)
}

// moments holds sample means and their standard errors of Y^l and of
// Y^l - Y'^(l-1) over n draws with seeds first, first+1, ...
type moments struct{ h, bigH, seH, seBigH float64 }

func levelMoments(f levelFunc, law Law, mu, p float64, level, n int, first uint64) moments {
	var s1, s2, d1, d2 float64
	for i := range n {
		long, short := f(law, mu, p, first+uint64(i), level)
		s1 += long
		s2 += long * long
		d := long - short
		d1 += d
		d2 += d * d
	}
	fn := float64(n)
	m := moments{h: s1 / fn, bigH: d1 / fn}
	m.seH = math.Sqrt((s2/fn - m.h*m.h) / (fn - 1))
	m.seBigH = math.Sqrt((d2/fn - m.bigH*m.bigH) / (fn - 1))
	return m
}

// docs/definitions.md, section 8 "Pricing and staffing": the paper's
// construction with m = 1 and the coupled one have the same E[h^l] (W + X after
// 2^l steps from empty) and the same E[H^l] (the coupled short queue runs
// 2^(l-1) steps on i.i.d. inputs, so its end value has the law of W + X at step
// 2^(l-1)), although their variances differ. Checked at levels 1..8 (where the
// transient from the empty start still moves E[h^l]) at a high load rho = 0.8
// of the hyperexponential law and at the exponential optimum, 6000 independent
// draws each: every difference of means is within 4.5 standard errors of the
// difference (false alarm 6.8e-6 per comparison, below 3e-4 for the 32
// comparisons). That the check has power: the tail construction's E[h^l] at
// level 2 (a mean over steps 3..4, not the value at step 4) is rejected by the
// same test with 5 times the draws.
func TestConstructionsAgreeInExpectation(t *testing.T) {
	const n, z = 6000, 4.5
	hyper, expo := Laws()[2], Laws()[1]
	mu, p := Optimum(expo)
	hx := project(hyper, [2]float64{2, 0})
	hx[1] += 0.14 // from the box's rho = 0.9 down to about 0.8
	points := []struct {
		law   Law
		mu, p float64
	}{{expo, mu, p}, {hyper, hx[0], hx[1]}}
	differ := func(a, b, sa, sb float64) bool { return math.Abs(a-b) > z*math.Hypot(sa, sb) }
	for _, pt := range points {
		for l := 1; l <= 8; l++ {
			pm := levelMoments(paperLevels(1), pt.law, pt.mu, pt.p, l, n, 1)
			cm := levelMoments(coupledLevels, pt.law, pt.mu, pt.p, l, n, 1<<40)
			if differ(pm.h, cm.h, pm.seH, cm.seH) {
				t.Errorf("%s level %d: E[h^l] paper %.4f (se %.4f), coupled %.4f (se %.4f)", pt.law.Name, l, pm.h, pm.seH, cm.h, cm.seH)
			}
			if differ(pm.bigH, cm.bigH, pm.seBigH, cm.seBigH) {
				t.Errorf("%s level %d: E[H^l] paper %.4f (se %.4f), coupled %.4f (se %.4f)", pt.law.Name, l, pm.bigH, pm.seBigH, cm.bigH, cm.seBigH)
			}
		}
	}
	// Power: at level 2, E[tail h^2] = E[(Y_3 + Y_4)/2] < E[Y_4], a gap of
	// about 3.5 standard errors at n draws, so 5n draws (7.8 expected).
	tm := levelMoments(tailLevels, hyper, hx[0], hx[1], 2, 5*n, 1)
	cm := levelMoments(coupledLevels, hyper, hx[0], hx[1], 2, 5*n, 1<<40)
	if !differ(tm.h, cm.h, tm.seH, cm.seH) {
		t.Errorf("level 2: tail E[h^l] %.4f and coupled %.4f are not told apart (se %.4f, %.4f): the test has no power",
			tm.h, cm.h, tm.seH, cm.seH)
	}
}

// Every construction's h^l is an estimate of Z = E[W_inf + X_inf] whose
// bias vanishes with l: at level 12 (4096 steps, many relaxation times at
// the exponential optimum, rho = 0.41) the mean of 3000 draws equals the
// closed form within 5 standard errors (false alarm 5.7e-7 each), for
// paper with m = 1 and m = 64, coupled and tail.
func TestConstructionsConvergeToClosedForm(t *testing.T) {
	const n, level = 3000, 12
	law := Laws()[1]
	mu, p := Optimum(law)
	want := ClosedZ(law, mu, p)
	tests := []struct {
		name string
		f    levelFunc
	}{{"paper m=1", paperLevels(1)}, {"paper m=64", paperLevels(64)}, {"coupled", coupledLevels}, {"tail", tailLevels}}
	for _, tc := range tests {
		m := levelMoments(tc.f, law, mu, p, level, n, 7)
		if math.Abs(m.h-want) > 5*m.seH {
			t.Errorf("%s: mean h^%d = %.4f (se %.4f), closed-form Z = %.4f", tc.name, level, m.h, m.seH, want)
		}
	}
}

// Projection keeps every decision in the box and the queue stable.
func TestProjectKeepsQueueStable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 10000 {
		law := Laws()[r.IntN(3)]
		x := project(law, [2]float64{r.Float64()*40 - 20, r.Float64()*40 - 20})
		rho := lambda(x[1]) * law.Mean / x[0]
		if x[0] < box.muMin || x[0] > box.muMax || x[1] < box.pMin || x[1] > box.pMax || rho > box.rhoMax+1e-12 {
			t.Fatalf("projected %v: outside the box or rho %.4f > %.2f", x, rho, box.rhoMax)
		}
	}
}

// L-SGD with the documented steps reaches and keeps 1% of (mu*, p*) for the
// Erlang and exponential laws (two seeds each); for the hyperexponential law
// (Var V = 8) the noise of h^18 at constant step 0.5 keeps it fluctuating
// around 1%, so there the final decision must be within 3%. The MLMC
// methods' steps to 1% are measured by the command (go run ./examples/pricing),
// not asserted here: with tail averages they do not
// reach 1% within L-SGD's budget, and TestRTMLMCVarianceCostAgainstLSGD
// asserts the cause.
func TestLSGDReachesOptimum(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates about 10^8 queue steps")
	}
	m := methods(TailAverages)[0]
	m.Budget = 80 << maxLevel
	for _, law := range Laws() {
		mu, p := Optimum(law)
		for seed := uint64(1); seed <= 2; seed++ {
			tr, err := experiment.Trial(problem(law, oracleKind{TailAverages, 1}, false).Problem, m, seed, m.Budget)
			if err != nil {
				t.Fatal(err)
			}
			final := math.Hypot(tr.Final[0]-mu, tr.Final[1]-p) / math.Hypot(mu, p)
			if law.Name == "hyperexponential" {
				if final > 0.03 {
					t.Errorf("%s seed %d: L-SGD ends at %v, relative error %.4f > 3%%", law.Name, seed, tr.Final, final)
				}
				continue
			}
			if final > tolerance {
				t.Errorf("%s seed %d: L-SGD ends at %v, not within 1%% of (%.4f, %.4f)", law.Name, seed, tr.Final, mu, p)
			}
		}
	}
}

// varianceCostRatio is (Var v_RT x E[cost_RT]) / (Var h^L x 2^L) for the Z
// part of the gradient at (mu, p): RT-MLMC's variance per unit of simulated
// steps over L-SGD's. Var v_RT = sum_l E[(H^l)^2]/q_l - Z^2 (q_l of
// mlmc.Truncated with b = c = 1), each E[(H^l)^2] from max(16, 2^(16-l))
// draws, so every level costs about 2^16 steps or more.
func varianceCostRatio(law Law, mu, p float64, levels levelFunc) float64 {
	const top = maxLevel
	q := mlmc.Truncated(0, top, 1, 1)
	var rtVar, rtCost, topVar float64
	seed := uint64(1)
	for l := 0; l <= top; l++ {
		n := 1 << max(4, 16-l)
		var h1, h2, d2 float64
		for range n {
			long, short := levels(law, mu, p, seed, l)
			seed++
			h1 += long
			h2 += long * long
			d2 += (long - short) * (long - short)
		}
		rtVar += d2 / float64(n) / q.Prob(l)
		rtCost += q.Prob(l) * math.Exp2(float64(l))
		if l == top {
			topVar = h2/float64(n) - (h1/float64(n))*(h1/float64(n))
		}
	}
	z := ClosedZ(law, mu, p)
	return (rtVar - z*z) * rtCost / (topVar * math.Exp2(top))
}

// Why RT-MLMC does not beat L-SGD with the paper's and the tail
// constructions, measured at the exponential law's optimum. With tail
// averages Var H^l and Var h^l both fall like 2^-l, so every RT level
// contributes alike and RT-MLMC's variance per simulated step is about 600
// times L-SGD's (asserted > 50, a 12x margin for the 16-draw estimates at
// the top levels). With the paper's m = 1 windows Var H^l tends to
// 2 Var(W + X) and does not decay at all: the ratio is about 55 (asserted
// > 10). With the end-coupled terminal-value construction (endCoupled,
// exact) the same ratio is about 5e-4 (asserted < 0.1): there L-SGD pays
// 2^18 steps for one draw of Var h^L = Var(W + X), and RT-MLMC would win.
func TestRTMLMCVarianceCostAgainstLSGD(t *testing.T) {
	law := Laws()[1]
	mu, p := Optimum(law)
	tests := []struct {
		name     string
		levels   levelFunc
		min, max float64
	}{
		{"tail averages", tailLevels, 50, math.Inf(1)},
		{"paper, m = 1", paperLevels(1), 10, math.Inf(1)},
		{"end-coupled terminal values", coupledLevels, 0, 0.1},
	}
	for _, tc := range tests {
		r := varianceCostRatio(law, mu, p, tc.levels)
		t.Logf("%s: RT-MLMC variance x cost / L-SGD's = %.3g", tc.name, r)
		if r < tc.min || r > tc.max {
			t.Errorf("%s: RT-MLMC variance x cost / L-SGD's = %.3g, want in [%g, %g]", tc.name, r, tc.min, tc.max)
		}
	}
}

// The shortcut of the coupled oracle (only the last 2^simWindowLevel steps
// of a longer run simulated, from empty) returns exactly the values of the
// full run on the same random numbers, at the box's highest load rho = 0.9
// where it is most likely to fail, for every law (40 draws each at level
// 15, also checking H^l = 0 there: the two queues have coalesced).
func TestEndCoupledWindowIsExact(t *testing.T) {
	const level, draws = 15, 40
	for _, law := range Laws() {
		mu := 2.0
		x := project(law, [2]float64{mu, 0}) // raises p to rho = 0.9
		if rho := lambda(x[1]) * law.Mean / x[0]; math.Abs(rho-box.rhoMax) > 1e-9 {
			t.Fatalf("%s: test point has rho %.4f, want %.2f", law.Name, rho, box.rhoMax)
		}
		for s := uint64(1); s <= draws; s++ {
			fullLong, fullShort := endCoupled(law, x[0], x[1], s, level, simWindowLevel, true)
			long, short := endCoupled(law, x[0], x[1], s, level, simWindowLevel, false)
			if long != fullLong || short != fullShort {
				t.Errorf("%s draw %d: shortcut gives (%g, %g), full run (%g, %g)", law.Name, s, long, short, fullLong, fullShort)
			}
			if fullLong != fullShort {
				t.Errorf("%s draw %d: long %g and short %g queues have not coalesced after 2^%d steps", law.Name, s, fullLong, fullShort, level-1)
			}
		}
	}
}

// The shortcut of the paper oracle (only the 2^simWindowLevel-step block
// ending at each value's step simulated, from empty) returns exactly the
// values of the full trajectory, at the box's highest load rho = 0.9, for
// every law, m = 1 and m = 64 (30 draws each at level 16).
func TestPaperWindowIsExact(t *testing.T) {
	const level, draws = 16, 30
	for _, law := range Laws() {
		x := project(law, [2]float64{2, 0}) // raises p to rho = 0.9
		for _, m := range []int{1, 64} {
			for s := uint64(1); s <= draws; s++ {
				fullLong, fullShort := paperWindows(law, x[0], x[1], s, level, m, simWindowLevel, true)
				long, short := paperWindows(law, x[0], x[1], s, level, m, simWindowLevel, false)
				if long != fullLong || short != fullShort {
					t.Errorf("%s m=%d draw %d: shortcut gives (%g, %g), full run (%g, %g)", law.Name, m, s, long, short, fullLong, fullShort)
				}
			}
		}
	}
}

// parseOptions: the quick default, --full, overrides, and every bad value
// named by its flag.
func TestParseOptions(t *testing.T) {
	tests := []struct {
		args  []string
		laws  int
		seeds int
		kind  oracleKind
		// onGap, budget, autoGaps: --targets gap's reading.
		onGap    bool
		budget   int64
		autoGaps []float64
		wantErr  string
	}{
		{args: nil, laws: 1, seeds: 2, kind: oracleKind{EndCoupled, 1}},
		{args: []string{"--full"}, laws: 3, seeds: 10, kind: oracleKind{EndCoupled, 1}},
		{args: []string{"--full", "--law", "erlang", "--seeds", "3"}, laws: 1, seeds: 3, kind: oracleKind{EndCoupled, 1}},
		{args: []string{"--construction", "paper", "--window", "8"}, laws: 1, seeds: 2, kind: oracleKind{Paper, 8}},
		{args: []string{"--construction", "tail"}, laws: 1, seeds: 2, kind: oracleKind{TailAverages, 1}},
		{args: []string{"--construction", "spec"}, wantErr: "--construction"},
		{args: []string{"--window", "4"}, wantErr: "--window"},
		{args: []string{"--construction", "paper", "--window", "0"}, wantErr: "--window"},
		{args: []string{"--seeds", "-1"}, wantErr: "--seeds"},
		{args: []string{"--workers", "0"}, wantErr: "--workers"},
		{args: []string{"--law", "gamma"}, wantErr: "--law"},
		{args: []string{"extra"}, wantErr: "unexpected argument"},
		{args: []string{"--method", "auto"}, laws: 1, seeds: 2, kind: oracleKind{EndCoupled, 1}},
		{args: []string{"--method", "auto", "--gap", "1.5"}, wantErr: "--gap"},
		{args: []string{"--method", "auto", "--tune"}, wantErr: "--tune"},
		{args: []string{"--method", "grid"}, wantErr: "--method"},
		{args: []string{"--targets", "gap"}, laws: 1, seeds: 2, kind: oracleKind{EndCoupled, 1}, onGap: true, budget: gapBudget},
		{args: []string{"--targets", "gap", "--full", "--budget", "1000"}, laws: 3, seeds: 10, kind: oracleKind{EndCoupled, 1}, onGap: true, budget: 1000},
		{args: []string{"--targets", "gap", "--method", "auto"}, laws: 1, seeds: 2, kind: oracleKind{EndCoupled, 1}, onGap: true, budget: gapBudget, autoGaps: gapTargets},
		{args: []string{"--targets", "gap", "--method", "auto", "--gap", "0.003"}, laws: 1, seeds: 2, kind: oracleKind{EndCoupled, 1}, onGap: true, budget: gapBudget, autoGaps: []float64{0.003}},
		{args: []string{"--targets", "gap", "--tune"}, wantErr: "--tune"},
		{args: []string{"--targets", "gap", "--budget", "0"}, wantErr: "--budget"},
		{args: []string{"--targets", "objective"}, wantErr: "--targets"},
		{args: []string{"--targets", "gap", "--first-seed", "995", "--seeds", "10"}, wantErr: "--first-seed"},
		{args: []string{"--budget", "5"}, wantErr: "--budget"},
		{args: []string{"--targets", "gap", "--first-seed", "1004", "--seeds", "3"}, laws: 1, seeds: 3, kind: oracleKind{EndCoupled, 1}, onGap: true, budget: gapBudget},
	}
	for _, tc := range tests {
		o, err := parseOptions(tc.args, io.Discard)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if auto := len(tc.args) > 1 && tc.args[0] == "--method"; auto != (o.autoGap == tolerance*tolerance) {
			t.Errorf("%v: auto gap %g", tc.args, o.autoGap)
		}
		if o.onGap != tc.onGap || o.budget != tc.budget || !slices.Equal(o.autoGaps, tc.autoGaps) {
			t.Errorf("%v: on the gap %v, budget %d, auto gaps %v; want %v, %d, %v", tc.args, o.onGap, o.budget, o.autoGaps, tc.onGap, tc.budget, tc.autoGaps)
		}
		if len(o.laws) != tc.laws || len(o.seeds) != tc.seeds || o.kind != tc.kind {
			t.Errorf("%v: %d laws, %d seeds, %v; want %d, %d, %v", tc.args, len(o.laws), len(o.seeds), o.kind, tc.laws, tc.seeds, tc.kind)
		}
	}
}

// What the coupled construction achieves end to end: RT-MLMC with the
// settings of methods(EndCoupled) ends within 1% of (mu*, p*) after 2^26
// simulated steps on the exponential law (seeds 1 and 2). Measured median
// end errors at 2^27 steps were 0.08% to 0.4% over the three laws (4 seeds),
// so 1% leaves a margin of 2.5x or more; L-SGD
// at 2^27 steps (512 draws of h^18) ends 2.5% to 10% away on this law and
// is not run here (it needs about 8e9 steps to stay within 1%).
func TestCoupledRTMLMCReachesOptimum(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates about 10^8 queue steps")
	}
	law := Laws()[1]
	mu, p := Optimum(law)
	m := methods(EndCoupled)[1]
	m.Budget = 1 << 26
	for seed := uint64(1); seed <= 2; seed++ {
		tr, err := experiment.Trial(problem(law, oracleKind{EndCoupled, 1}, false).Problem, m, seed, m.Budget)
		if err != nil {
			t.Fatal(err)
		}
		if final := math.Hypot(tr.Final[0]-mu, tr.Final[1]-p) / math.Hypot(mu, p); final > tolerance {
			t.Errorf("seed %d: RT-MLMC (coupled) ends at %v after %d steps, relative error %.4f > 1%%", seed, tr.Final, tr.Cost, final)
		}
	}
}

// The logged points are the budgets 2^k up to the method's: the figure
// "stays within 1%" is then read where a shorter run would end.
func TestBudgets(t *testing.T) {
	if got, want := budgets(1<<6), []int64{1, 2, 4, 8, 16, 32, 64}; !slices.Equal(got, want) {
		t.Errorf("budgets(64) = %v, want %v", got, want)
	}
}

// The objective-gap protocol end to end on a small budget: the grid is
// scored on the tuning seeds (every setting of gapGrid at least, the
// widening's after), the summary reads the targets on the relative gap of
// the closed-form objective from F(x0) to F(x*), and the tuned L-SGD, which
// on the tuning seeds reaches 1% within about 2,000 simulated steps, reaches
// it on the reported seeds within the 2^14.
func TestGapProtocol(t *testing.T) {
	var out bytes.Buffer
	if err := runMain([]string{"--targets", "gap", "--law", "exponential", "--seeds", "2", "--budget", "16384", "--json", "--png", ""}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s experiment.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("the summary: %v", err)
	}
	law, _ := LawByName("exponential")
	mu, p := Optimum(law)
	switch {
	case s.Problem != "exponential" || !slices.Equal(s.Targets, gapTargets) || s.Budget != 16384:
		t.Fatalf("problem %s, targets %v, budget %d; want exponential, %v, 16384", s.Problem, s.Targets, s.Budget, gapTargets)
	case s.FStar != Objective(law, mu, p) || s.F0 != Objective(law, start[0], start[1]):
		t.Errorf("F* %g, F(x0) %g; want F(x*) %g and F(x0) %g", s.FStar, s.F0, Objective(law, mu, p), Objective(law, start[0], start[1]))
	case s.Tuning == nil || len(s.Tuning.Settings) < len(gapGrid.Methods(gapKinds)):
		t.Fatalf("tuning record %+v: want every setting of the grid scored", s.Tuning)
	case s.Error != "(F - F*) / (F(x0) - F*)":
		t.Errorf("the targets are read on %q, want the relative objective gap", s.Error)
	}
	lsgd := 0
	for _, m := range s.Methods {
		if m.Name == "L-SGD" {
			lsgd++
			if m.StaysBelow[0].Reached != 2 {
				t.Errorf("tuned L-SGD (%s) reached 1%% in %d of 2 trials, want 2", m.Setting, m.StaysBelow[0].Reached)
			}
		}
	}
	if lsgd != 1 {
		t.Errorf("%d L-SGD summaries, want 1", lsgd)
	}
}

// auto planned for a gap that is not among the protocol's targets: the gap
// joins them, so that the summary reads its passage.
func TestGapProtocolAutoGapJoinsTargets(t *testing.T) {
	var out bytes.Buffer
	if err := runMain([]string{"--targets", "gap", "--method", "auto", "--gap", "0.05", "--law", "exponential", "--seeds", "1", "--budget", "16384", "--json", "--png", ""}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s experiment.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("the summary: %v", err)
	}
	if want := []float64{0.05, 0.01, 0.003, 0.001}; !slices.Equal(s.Targets, want) {
		t.Errorf("targets %v, want %v", s.Targets, want)
	}
}
