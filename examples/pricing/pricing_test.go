package main

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

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

// On one draw, H^l = h^l - h^(l-1) exactly (both tail averages come from the
// same trajectory), and a VR replay at Previous reproduces the draw.
func TestQueueOracleLevelsShareTrajectory(t *testing.T) {
	law := Laws()[1]
	o := newQueueOracle(law, SpecTailAverages, 12, 5)
	o.x = [2]float64{2.4, 2.3}
	o.xPrev = o.x
	for l := 1; l <= 12; l++ {
		s, cost, err := o.Draw(l)
		if err != nil {
			t.Fatal(err)
		}
		if cost != 1<<l {
			t.Fatalf("level %d costs %d, want %d", l, cost, 1<<l)
		}
		hl, hPrev, bigH, replay := make([]float64, 2), make([]float64, 2), make([]float64, 2), make([]float64, 2)
		d := s.(queueDraw)
		o.Eval(s, mlmc.Current, false, 1, hl)
		o.Eval(queueDraw{level: l - 1, seed: d.seed}, mlmc.Current, false, 1, hPrev)
		o.Eval(s, mlmc.Current, true, 1, bigH)
		o.Eval(s, mlmc.Previous, true, 1, replay)
		for i := range 2 {
			if math.Abs(hl[i]-hPrev[i]-bigH[i]) > 1e-9*math.Max(1, math.Abs(hl[i])) {
				t.Errorf("level %d: h^l - h^(l-1) = %g, H^l = %g", l, hl[i]-hPrev[i], bigH[i])
			}
			if replay[i] != bigH[i] {
				t.Errorf("level %d: replay at equal parameters gives %g, want %g", l, replay[i], bigH[i])
			}
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
// methods' steps to 1% are measured by the command (see
// /work/notes/mlmc_bench.md), not asserted here: on SPEC's oracle they do not
// reach 1% within L-SGD's budget, and TestRTMLMCVarianceCostAgainstLSGD
// asserts the cause.
func TestLSGDReachesOptimum(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates about 10^8 queue steps")
	}
	m := methods(SpecTailAverages)[0]
	m.Budget = 80 << maxLevel
	for _, law := range Laws() {
		mu, p := Optimum(law)
		for seed := uint64(1); seed <= 2; seed++ {
			tr, err := run(law, SpecTailAverages, m, [2]float64{mu, p}, maxLevel, seed, grid(m.Budget))
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
			if tr.Hit < 0 {
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
func varianceCostRatio(law Law, mu, p float64, levels func(Law, float64, float64, uint64, int) (float64, float64)) float64 {
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

// Why RT-MLMC does not beat L-SGD on SPEC's oracle, measured at the
// exponential law's optimum: with tail averages Var H^l and Var h^l both
// fall like 2^-l, so every RT level contributes alike and RT-MLMC's variance
// per simulated step is about 600 times L-SGD's (asserted > 50, a 12x
// margin for the 16-draw estimates at the top levels). With the
// end-coupled terminal-value construction (endCoupled, exact) the same
// ratio is about 5e-4 (asserted < 0.1): there L-SGD pays 2^18 steps for
// one draw of Var h^L = Var(W + X), and RT-MLMC would win.
func TestRTMLMCVarianceCostAgainstLSGD(t *testing.T) {
	law := Laws()[1]
	mu, p := Optimum(law)
	tail := func(law Law, mu, p float64, seed uint64, l int) (float64, float64) {
		return tailAverages(law, mu, p, seed, l)
	}
	coupled := func(law Law, mu, p float64, seed uint64, l int) (float64, float64) {
		return endCoupled(law, mu, p, seed, l, l, true)
	}
	tests := []struct {
		name     string
		levels   func(Law, float64, float64, uint64, int) (float64, float64)
		min, max float64
	}{
		{"tail averages (SPEC)", tail, 50, math.Inf(1)},
		{"end-coupled terminal values", coupled, 0, 0.1},
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

// What the coupled construction achieves end to end: RT-MLMC with the
// settings of methods(EndCoupled) ends within 1% of (mu*, p*) after 2^26
// simulated steps on the exponential law (seeds 1 and 2). Measured median
// end errors at 2^27 steps are 0.08% to 0.4% over the three laws (4 seeds,
// /work/notes/mlmc_bench.md), so 1% leaves a margin of 2.5x or more; L-SGD
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
		tr, err := run(law, EndCoupled, m, [2]float64{mu, p}, maxLevel, seed, grid(m.Budget))
		if err != nil {
			t.Fatal(err)
		}
		if final := math.Hypot(tr.Final[0]-mu, tr.Final[1]-p) / math.Hypot(mu, p); final > tolerance {
			t.Errorf("seed %d: RT-MLMC (coupled) ends at %v after %d steps, relative error %.4f > 1%%", seed, tr.Final, tr.Simulated, final)
		}
	}
}

// gridHit reads steps-to-1% off the power-of-two budgets of the sample grid:
// the smallest 2^k >= 2^minLevel from which every later 2^k is within 1%,
// ignoring the errors between powers of two and -1 when the last is not.
func TestGridHit(t *testing.T) {
	const budget = 1 << 6
	g := grid(budget)
	for k := 0; k <= 6; k++ {
		if _, found := slices.BinarySearch(g, int64(1)<<k); !found {
			t.Fatalf("grid(%d) = %v lacks 2^%d", budget, g, k)
		}
	}
	// errsAt sets the error at 2^k to e[k] and 0.5 between powers of two.
	errsAt := func(e [7]float64) []float64 {
		out := make([]float64, len(g))
		for i, s := range g {
			out[i] = 0.5
			if s&(s-1) == 0 {
				out[i] = e[bits.Len64(uint64(s))-1]
			}
		}
		return out
	}
	in, out := 0.005, 0.02
	tests := []struct {
		name     string
		errs     [7]float64
		minLevel int
		want     int64
	}{
		{"always within", [7]float64{in, in, in, in, in, in, in}, 2, 4},
		{"enters at 2^3", [7]float64{out, out, out, in, in, in, in}, 0, 8},
		{"leaves and re-enters", [7]float64{out, in, in, out, in, in, in}, 0, 16},
		{"out at the budget", [7]float64{in, in, in, in, in, in, out}, 0, -1},
		{"only the budget", [7]float64{out, out, out, out, out, out, in}, 3, 64},
	}
	for _, tc := range tests {
		if got := gridHit(g, errsAt(tc.errs), tc.minLevel, budget); got != tc.want {
			t.Errorf("%s: gridHit = %d, want %d", tc.name, got, tc.want)
		}
	}
}
