package ubsr

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// The three losses of the 3-asset Gaussian portfolio (docs/definitions.md,
// section 12).
var cases = []struct {
	loss   Loss
	lambda float64
}{
	{Entropic(5), 0.5},
	{QuadraticHinge(10), 0.01},
	{Expectile(0.9), 0},
}

func portfolio(t *testing.T) *GaussianPortfolio {
	t.Helper()
	p, err := NewGaussianPortfolio([]float64{0.05, 0.10, 0.15}, []float64{0.10, 0.20, 0.30}, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var x0 = []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}

// The closed forms against Monte Carlo: on 2^20 draws of R at x0 the
// sample-average root and the sample ratio at the exact SR must lie within
// 4.5 standard errors (delta method) of the closed-form SR and gradient.
// Twelve checks at 4.5 SE each: a correct closed form fails with
// probability below 1e-4 (fixed seeds make the test repeatable).
func TestGaussianClosedFormsMatchMonteCarlo(t *testing.T) {
	p := portfolio(t)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 20
	rs := make([][]float64, n)
	xs := make([]float64, n)
	for i := range rs {
		rs[i] = p.Draw(r, nil)
		xs[i] = p.Payoff(x0, rs[i], nil)
	}
	for _, c := range cases {
		t.Run(c.loss.Name, func(t *testing.T) {
			grad := make([]float64, 3)
			sr, err := p.SR(c.loss, c.lambda, x0, grad)
			if err != nil {
				t.Fatal(err)
			}
			that, err := SampleRoot(c.loss, xs, c.lambda, DefaultTol)
			if err != nil {
				t.Fatal(err)
			}
			// Influence of one sample on the root: (l(-X - SR) - lambda) / E l'.
			var m1, m2, d float64
			for _, x := range xs {
				v := c.loss.Value(-x-sr) - c.lambda
				m1 += v
				m2 += v * v
				d += c.loss.Deriv(-x - sr)
			}
			m1, m2, d = m1/n, m2/n, d/n
			se := math.Sqrt((m2-m1*m1)/n) / d
			if z := (that - sr) / se; math.Abs(z) > 4.5 {
				t.Errorf("SR: Monte Carlo %.8f, closed form %.8f: z = %.2f", that, sr, z)
			}
			for k := range 3 {
				// g = -A/B with a_i = l'_i R_ik, b_i = l'_i; its standard
				// error is that of the mean of (a_i + g b_i)/B.
				var a, b float64
				for i, x := range xs {
					w := c.loss.Deriv(-x - sr)
					a += w * rs[i][k]
					b += w
				}
				g := -a / b
				var s2 float64
				for i, x := range xs {
					w := c.loss.Deriv(-x - sr)
					e := w*rs[i][k] + g*w
					s2 += e * e
				}
				se := math.Sqrt(s2/n/n) / (b / n)
				if z := (g - grad[k]) / se; math.Abs(z) > 4.5 {
					t.Errorf("gradient %d: Monte Carlo %.6f, closed form %.6f: z = %.2f", k, g, grad[k], z)
				}
			}
		})
	}
}

// The root finder against the closed-form sample root of the entropic loss,
// t = (1/beta) log(mean exp(-beta x) / lambda), to the tolerance.
func TestSampleRootEntropic(t *testing.T) {
	const beta, lambda = 5, 0.5
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 3, 16, 1024, 1 << 15} {
		xs := make([]float64, n)
		sum := 0.0
		for i := range xs {
			xs[i] = 0.1 + 0.3*r.NormFloat64()
			sum += math.Exp(-beta * xs[i])
		}
		want := math.Log(sum/float64(n)/lambda) / beta
		got, err := SampleRoot(Entropic(beta), xs, lambda, DefaultTol)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 2e-12 {
			t.Errorf("n = %d: root %.15f, closed form %.15f (difference %.2g)", n, got, want, got-want)
		}
	}
}

// The root of the piecewise losses leaves a residual at rounding level.
func TestSampleRootResidual(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		for _, n := range []int{1, 2, 7, 4096} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = 0.1 + 0.2*r.NormFloat64()
			}
			got, err := SampleRoot(c.loss, xs, c.lambda, DefaultTol)
			if err != nil {
				t.Fatal(err)
			}
			res, slope := -c.lambda, 0.0
			for _, x := range xs {
				res += c.loss.Value(-x-got) / float64(n)
				slope += c.loss.Deriv(-x-got) / float64(n)
			}
			// |t - t_root| <= |residual| / slope for a convex function.
			if math.Abs(res)/slope > 1e-12 {
				t.Errorf("%s, n = %d: residual %.3g at t = %g", c.loss.Name, n, res, got)
			}
		}
	}
}

// The budget-plane solver against the entropic optimum, which has a closed
// form: SR = -theta.mu + (beta/2) theta' Cov theta - log(lambda)/beta, so
// theta* = Cov^-1 (mu + nu 1) / beta with nu fixing sum theta* = 1.
func TestMinimiseBudgetEntropic(t *testing.T) {
	p := portfolio(t)
	const beta, lambda = 5.0, 0.5
	l := Entropic(beta)
	th, v, err := MinimiseBudget(func(th, g []float64) (float64, error) { return p.SR(l, lambda, th, g) }, x0, 1e-8)
	if err != nil {
		t.Fatal(err)
	}
	cm := solve3(p.Cov, p.Mu)
	c1 := solve3(p.Cov, []float64{1, 1, 1})
	nu := (beta - (cm[0] + cm[1] + cm[2])) / (c1[0] + c1[1] + c1[2])
	want := 0.0
	for i := range 3 {
		w := (cm[i] + nu*c1[i]) / beta
		if math.Abs(th[i]-w) > 1e-7 {
			t.Errorf("theta*_%d = %.10f, closed form %.10f", i, th[i], w)
		}
	}
	w := make([]float64, 3)
	for i := range w {
		w[i] = (cm[i] + nu*c1[i]) / beta
	}
	for i := range 3 {
		want -= w[i] * p.Mu[i]
		for j := range 3 {
			want += beta / 2 * w[i] * p.Cov[i][j] * w[j]
		}
	}
	want -= math.Log(lambda) / beta
	if math.Abs(v-want) > 1e-12 {
		t.Errorf("SR* = %.15f, closed form %.15f", v, want)
	}
}

// solve3 solves a 3x3 system by Cramer's rule.
func solve3(a [][]float64, b []float64) []float64 {
	det := func(m [3][3]float64) float64 {
		return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	}
	var m [3][3]float64
	for i := range 3 {
		copy(m[i][:], a[i])
	}
	d := det(m)
	out := make([]float64, 3)
	for k := range 3 {
		mk := m
		for i := range 3 {
			mk[i][k] = b[i]
		}
		out[k] = det(mk) / d
	}
	return out
}

// levelMean returns the mean of k draws of h^l (diff false) or H^l at theta
// and the standard error of each coordinate.
func levelMean(t *testing.T, o *Oracle[[]float64], l int, diff bool, k int) (mean, se []float64) {
	t.Helper()
	mean, m2 := make([]float64, 3), make([]float64, 3)
	g := make([]float64, 3)
	for range k {
		s, _, err := o.Draw(l)
		if err != nil {
			t.Fatal(err)
		}
		clear(g)
		if err := o.Eval(s, mlmc.Current, diff, 1, g); err != nil {
			t.Fatal(err)
		}
		o.Release(s)
		for i, v := range g {
			mean[i] += v / float64(k)
			m2[i] += v * v / float64(k)
		}
	}
	se = make([]float64, 3)
	for i := range se {
		se[i] = math.Sqrt(math.Max(m2[i]-mean[i]*mean[i], 0) / float64(k-1))
	}
	return mean, se
}

// h^l against the exact gradient as l grows, for each loss at x0: the
// level-0 bias is significant (beyond 6 standard errors in some coordinate,
// so the test can tell a biased h from an unbiased one), and at levels 4
// and 8 every coordinate of E h^l - grad SR lies within 2^(2-l) times the
// level-0 bias plus 4.5 standard errors: the bias falls at least like 2^-l
// (docs/definitions.md, section 12). 27 coordinate checks at 4.5 SE.
func TestOracleBiasVanishes(t *testing.T) {
	p := portfolio(t)
	for _, c := range cases {
		t.Run(c.loss.Name, func(t *testing.T) {
			o, err := New[[]float64](p, c.loss, Config{Lambda: c.lambda, MaxLevel: 10, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			th := append([]float64(nil), x0...)
			o.SetPoints(th, th)
			grad := make([]float64, 3)
			if _, err := p.SR(c.loss, c.lambda, th, grad); err != nil {
				t.Fatal(err)
			}
			m0, se0 := levelMean(t, o, 0, false, 40000)
			bias0, zmax := 0.0, 0.0
			for i := range 3 {
				bias0 = math.Max(bias0, math.Abs(m0[i]-grad[i]))
				zmax = math.Max(zmax, math.Abs(m0[i]-grad[i])/se0[i])
			}
			if zmax < 6 {
				t.Fatalf("level 0: bias %.3g is not significant (largest z %.1f): the test cannot see a bias", bias0, zmax)
			}
			for _, l := range []int{4, 8} {
				m, se := levelMean(t, o, l, false, 40000>>(l/2))
				for i := range 3 {
					bound := math.Exp2(float64(2-l))*bias0 + 4.5*se[i]
					if d := math.Abs(m[i] - grad[i]); d > bound {
						t.Errorf("level %d, coordinate %d: |E h - grad SR| = %.3g > %.3g (level-0 bias %.3g, SE %.2g)",
							l, i, d, bound, bias0, se[i])
					}
				}
			}
		})
	}
}

// constProblem is a scalar problem whose first n draws (the X half of a
// level-l query with n = 2^l) pay X and the next n pay XT, for error
// cases that need chosen payoffs.
type constProblem struct {
	X, XT float64
	n, k  int
}

func (*constProblem) Dim() int { return 1 }
func (c *constProblem) Draw(_ *rand.Rand, _ float64) float64 {
	c.k++
	if (c.k-1)%(2*c.n) < c.n {
		return c.X
	}
	return c.XT
}
func (*constProblem) Payoff(theta []float64, xi float64, grad []float64) float64 {
	if grad != nil {
		grad[0] = xi
	}
	return theta[0] * xi
}

// Bad losses and risk levels get one clear error each, at New or at Eval.
func TestErrors(t *testing.T) {
	hinge := Loss{Name: "hinge", Value: func(x float64) float64 { return math.Max(x, 0) },
		Deriv: func(x float64) float64 {
			if x > 0 {
				return 1
			}
			return 0
		}, Inf: 0, Sup: math.Inf(1)}
	wrongDeriv := Entropic(5)
	wrongDeriv.Deriv = func(x float64) float64 { return math.Exp(5 * x) }
	decreasing := Loss{Name: "decreasing", Value: func(x float64) float64 { return -x },
		Deriv: func(float64) float64 { return -1 }, Inf: math.Inf(-1), Sup: math.Inf(1)}
	for _, c := range []struct {
		name   string
		loss   Loss
		lambda float64
		want   string
	}{
		{"entropic at its infimum", Entropic(5), 0, "outside the loss's range"},
		{"entropic below its range", Entropic(5), -1, "outside the loss's range"},
		{"a hinge at lambda 0", hinge, 0, "outside the loss's range"},
		{"NaN lambda", QuadraticHinge(10), math.NaN(), "not a finite number"},
		{"a derivative off by beta", wrongDeriv, 0.5, "one-sided slopes"},
		{"a decreasing loss", decreasing, 0, "must be nondecreasing"},
		{"no derivative", Loss{Name: "half", Value: math.Exp}, 1, "must both be set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New[float64](&constProblem{n: 1}, c.loss, Config{Lambda: c.lambda})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	t.Run("l' zero where the samples fall", func(t *testing.T) {
		// X = 10, X~ = 0: t = -0.5 from X~, and -X - t = -9.5 where the
		// hinge's derivative is 0.
		o, err := New[float64](&constProblem{X: 10, XT: 0, n: 1}, hinge, Config{Lambda: 0.5, MaxLevel: 3})
		if err != nil {
			t.Fatal(err)
		}
		o.SetPoints([]float64{1}, []float64{1})
		s, _, err := o.Draw(0)
		if err != nil {
			t.Fatal(err)
		}
		err = o.Eval(s, mlmc.Current, false, 1, []float64{0})
		if err == nil || !strings.Contains(err.Error(), "needs l' positive") {
			t.Errorf("error %v, want one about l' not positive", err)
		}
		if err := o.Eval(s, mlmc.Current, true, 1, []float64{0}); err == nil || !strings.Contains(err.Error(), "H^0") {
			t.Errorf("H^0: error %v, want one naming H^0", err)
		}
	})
	t.Run("lambda beyond what the samples reach", func(t *testing.T) {
		// A loss bounded above by 1 (its Sup is misstated as +inf): no t
		// makes the mean loss 2.
		capped := Loss{Name: "capped", Value: func(x float64) float64 { return 1 - math.Exp(-math.Exp(x)) },
			Deriv: func(x float64) float64 { return math.Exp(x - math.Exp(x)) }, Inf: 0, Sup: math.Inf(1)}
		if _, err := SampleRoot(capped, []float64{0.1, 0.2}, 2, DefaultTol); err == nil || !strings.Contains(err.Error(), "no root") {
			t.Errorf("error %v, want one saying there is no root", err)
		}
	})
	t.Run("closed form without Gaussian integrals", func(t *testing.T) {
		if _, _, err := GaussianSR(hinge, 0.5, 0, 1); err == nil || !strings.Contains(err.Error(), "Gaussian") {
			t.Errorf("error %v, want one naming the missing Gaussian integrals", err)
		}
	})
}
