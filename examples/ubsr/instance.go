package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/simclr-go/simclr/ubsr"
)

// oracleMaxLevel is the largest level the oracles serve: 2^20 copies of X
// and as many of X~.
const oracleMaxLevel = 20

// instance is one problem with its loss: the oracle, the objective runs are
// scored on and its minimum (docs/definitions.md, section 12).
type instance struct {
	Name   string // "gaussian-3" or "student-t-20"
	Loss   ubsr.Loss
	Lambda float64
	X0     []float64
	// Exact says whether SR is the closed form (true) or the
	// sample-average objective on a fixed reference sample.
	Exact bool
	// SR is the objective runs are scored on, with its gradient when grad
	// is not nil.
	SR func(theta, grad []float64) (float64, error)
	// SR0 = SR(X0); SRStar and ThetaStar its minimum on the budget plane;
	// Reference what SRStar is; Spread, for a sample-average objective,
	// how far the minimum moves between independent samples of its size.
	SR0, SRStar float64
	ThetaStar   []float64
	Grad0       []float64
	Reference   string
	Spread      *spread

	payoff ubsr.Problem[[]float64]
}

// oracle makes the instance's UBSR oracle with the given seed.
func (in *instance) oracle(seed uint64) (*ubsr.Oracle[[]float64], error) {
	return ubsr.New(in.payoff, in.Loss, ubsr.Config{Lambda: in.Lambda, MaxLevel: oracleMaxLevel, Seed: seed})
}

// The 3-asset Gaussian portfolio: means, standard deviations and the one
// correlation of every pair.
var (
	gaussMu  = []float64{0.05, 0.10, 0.15}
	gaussSD  = []float64{0.10, 0.20, 0.30}
	gaussRho = 0.3
)

// losses are the three losses of the Gaussian instance with their risk
// levels, by the names the command accepts.
var losses = []struct {
	Name   string
	Loss   ubsr.Loss
	Lambda float64
}{
	{"entropic", ubsr.Entropic(5), 0.5},
	{"quadratic-hinge", ubsr.QuadraticHinge(10), 0.01},
	{"expectile", ubsr.Expectile(0.9), 0},
}

// solverTol is the projected-gradient norm at which the deterministic
// solver stops: the objective is then within about tol^2 / (2 mu) of its
// minimum, far below the smallest gap measured.
const solverTol = 1e-8

func uniform(d int) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i] = 1 / float64(d)
	}
	return x
}

// gaussianInstance is the 3-asset Gaussian portfolio with loss number k of
// losses, with its exact optimum.
func gaussianInstance(k int) (*instance, error) {
	p, err := ubsr.NewGaussianPortfolio(gaussMu, gaussSD, gaussRho)
	if err != nil {
		return nil, err
	}
	lc := losses[k]
	in := &instance{Name: "gaussian-3", Loss: lc.Loss, Lambda: lc.Lambda, X0: uniform(3), Exact: true,
		Reference: "closed form, minimised on the budget plane by projected gradient to a gradient norm of 1e-8",
		payoff:    p}
	in.SR = func(theta, grad []float64) (float64, error) { return p.SR(lc.Loss, lc.Lambda, theta, grad) }
	return in, in.solve()
}

// solve sets SR0, Grad0, ThetaStar and SRStar.
func (in *instance) solve() error {
	in.Grad0 = make([]float64, len(in.X0))
	var err error
	if in.SR0, err = in.SR(in.X0, in.Grad0); err != nil {
		return fmt.Errorf("%s, %s: SR at x0: %w", in.Name, in.Loss.Name, err)
	}
	in.ThetaStar, in.SRStar, err = ubsr.MinimiseBudget(in.SR, in.X0, solverTol)
	if err != nil {
		return fmt.Errorf("%s, %s: optimum: %w", in.Name, in.Loss.Name, err)
	}
	return nil
}

// The 20-asset factor model: R_k = mu_k + beta_k sigmaM F + sigma_k e_k with
// F and e_k independent Student-t with nu = 4 degrees of freedom scaled to
// unit variance (t_4 / sqrt 2). Asset k = 0..19 has mu_k = 0.02 + 0.10 k/19,
// beta_k = 0.5 + k/19 and sigma_k = 0.10 + 0.20 ((7k mod 20)/19), so that
// idiosyncratic risk does not follow the mean.
const (
	factorAssets = 20
	factorNu     = 4
	factorSigmaM = 0.15
	// referenceDraws is the size of the fixed sample the student-t
	// objective is the sample-average SR of.
	referenceDraws = 1 << 18
	referenceSeed  = 20240
	// spreadSamples is how many independent samples of referenceDraws
	// draws (seeds referenceSeed+1, ...) show the spread of SR*.
	spreadSamples = 5
)

type factorModel struct {
	mu, beta, sigma []float64
}

func newFactorModel() *factorModel {
	f := &factorModel{}
	for k := range factorAssets {
		f.mu = append(f.mu, 0.02+0.10*float64(k)/19)
		f.beta = append(f.beta, 0.5+float64(k)/19)
		f.sigma = append(f.sigma, 0.10+0.20*float64((7*k)%20)/19)
	}
	return f
}

func (f *factorModel) Dim() int { return factorAssets }

// studentT draws a Student-t variate with nu degrees of freedom scaled to
// unit variance: Z / sqrt(chi2_nu / nu) times sqrt((nu - 2)/nu), the
// chi-square a sum of nu squared normals (nu is a small integer).
func studentT(r *rand.Rand) float64 {
	chi := 0.0
	for range factorNu {
		z := r.NormFloat64()
		chi += z * z
	}
	return r.NormFloat64() / math.Sqrt(chi/factorNu) * math.Sqrt((factorNu-2.0)/factorNu)
}

func (f *factorModel) Draw(r *rand.Rand, reuse []float64) []float64 {
	if cap(reuse) < factorAssets {
		reuse = make([]float64, factorAssets)
	}
	out := reuse[:factorAssets]
	m := factorSigmaM * studentT(r)
	for k := range out {
		out[k] = f.mu[k] + f.beta[k]*m + f.sigma[k]*studentT(r)
	}
	return out
}

func (f *factorModel) Payoff(theta, r, grad []float64) float64 {
	return ubsr.LinearPayoff(theta, r, grad)
}

// studentInstance is the 20-asset factor model with the quadratic-hinge
// loss, scored on the sample-average SR of referenceDraws fixed draws; its
// SRStar is that objective's minimum. A standard error of SRStar would
// need Var l(-X - SR) finite, E X^4 for this loss, which t_4 shocks do not
// have: the spread of the minimum over independent samples of the same
// size is given instead.
func studentInstance() (*instance, error) {
	f := newFactorModel()
	lc := losses[1]
	in := &instance{Name: "student-t-20", Loss: lc.Loss, Lambda: lc.Lambda, X0: uniform(factorAssets),
		Reference: fmt.Sprintf("the sample-average SR over %d fixed draws (seed %d), minimised on the budget plane; "+
			"SR* is that sample objective's minimum", referenceDraws, referenceSeed),
		payoff: f}
	in.SR = f.sampleSR(lc.Loss, lc.Lambda, f.sample(referenceSeed, referenceDraws))
	if err := in.solve(); err != nil {
		return nil, err
	}
	sp := &spread{Draws: referenceDraws}
	for k := range uint64(spreadSamples) {
		seed := referenceSeed + 1 + k
		_, v, err := ubsr.MinimiseBudget(f.sampleSR(lc.Loss, lc.Lambda, f.sample(seed, referenceDraws)), in.X0, solverTol)
		if err != nil {
			return nil, fmt.Errorf("%s: the minimum of the sample of seed %d: %w", in.Name, seed, err)
		}
		sp.Seeds, sp.Minima = append(sp.Seeds, seed), append(sp.Minima, v)
	}
	sp.Mean, sp.SD = meanSD(sp.Minima)
	sp.Range = [2]float64{slices.Min(sp.Minima), slices.Max(sp.Minima)}
	in.Spread = sp
	return in, nil
}

// spread is the minimum of the sample-average objective over independent
// samples of Draws draws each: how far SR* moves with the sample. It is
// not a standard error (the heavy tails leave the minimum without a
// finite variance to estimate), and K samples give no interval with a
// stated coverage.
type spread struct {
	Draws  int        `json:"draws"`
	Seeds  []uint64   `json:"seeds"`
	Minima []float64  `json:"minima"`
	Mean   float64    `json:"mean"`
	SD     float64    `json:"sd"`
	Range  [2]float64 `json:"range"`
}

// sample draws n returns of the factor model with the given seed, asset k
// of draw i at i*factorAssets + k.
func (f *factorModel) sample(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	rs := make([]float64, n*factorAssets)
	for i := range n {
		f.Draw(r, rs[i*factorAssets:(i+1)*factorAssets])
	}
	return rs
}

// sampleSR is the sample-average SR over the draws rs, with its gradient
// when grad is not nil. It allocates its payoffs per call, so that runs
// may score concurrently.
func (f *factorModel) sampleSR(l ubsr.Loss, lambda float64, rs []float64) func(theta, grad []float64) (float64, error) {
	n := len(rs) / factorAssets
	return func(theta, grad []float64) (float64, error) {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = f.Payoff(theta, rs[i*factorAssets:(i+1)*factorAssets], nil)
		}
		t, err := ubsr.SampleRoot(l, xs, lambda, ubsr.DefaultTol)
		if err != nil || grad == nil {
			return t, err
		}
		clear(grad)
		den := 0.0
		for i, x := range xs {
			w := l.Deriv(-x - t)
			den += w
			for k, v := range rs[i*factorAssets : (i+1)*factorAssets] {
				grad[k] += w * v
			}
		}
		for k := range grad {
			grad[k] /= -den
		}
		return t, nil
	}
}

// floorTol is the projected-gradient norm at which the floor's solves
// stop: the gaps they measure are above 1e-3 of SR(x0) - SR*, about 6e-6,
// and a norm of 1e-6 leaves an error near 1e-12 / (2 mu), far below that,
// while solverTol's 1e-8 costs tens of thousands of steps of 2^20 draws
// where the sample objective is ill-conditioned.
const floorTol = 1e-6

// floorReport is what --reference-floor measures on the student-t
// instance: the relative gap (SR - SR*)/(SR(x0) - SR*) of the reference
// objective at the minimisers of independent sample-average objectives of
// Draws draws each, and the floor estimated from them.
type floorReport struct {
	Instance string    `json:"instance"`
	Draws    int       `json:"draws"`
	RefDraws int       `json:"reference_draws"`
	Seeds    []uint64  `json:"seeds"`
	Gaps     []float64 `json:"relative_gaps"`
	// Floor is the mean gap over 1 + RefDraws/Draws, with its 95%
	// t interval: the expected relative gap of the reference objective at
	// the true minimiser.
	Floor [3]float64 `json:"floor"`
	About string     `json:"about"`
}

// referenceFloor measures how far the reference objective's minimiser sits
// from the true one, in the units of the relative gap. A method that
// converges to the true minimiser leaves SR_N(theta_true) - SR_N*, not
// zero, on the reference objective SR_N; in the quadratic approximation
// that floor is tr(H^-1 S)/(2N), S the covariance of one draw's gradient,
// and the minimiser of an independent objective of M draws scores
// (1 + N/M) times it in expectation. Objectives of 4N draws, k of them
// (seeds 1..k), estimate it.
func referenceFloor(in *instance, k int, w io.Writer) (*floorReport, error) {
	f, ok := in.payoff.(*factorModel)
	if !ok {
		return nil, fmt.Errorf("--reference-floor: %s is scored on its closed form, which has no floor", in.Name)
	}
	rep := &floorReport{Instance: in.Name, Draws: 4 * referenceDraws, RefDraws: referenceDraws}
	gap0 := in.SR0 - in.SRStar
	fmt.Fprintf(w, "%s: the reference objective (%d draws) at the minimisers of independent sample-average objectives of %d draws\n", in.Name, referenceDraws, rep.Draws)
	for seed := uint64(1); seed <= uint64(k); seed++ {
		obj := f.sampleSR(in.Loss, in.Lambda, f.sample(seed, rep.Draws))
		th, v, err := ubsr.MinimiseBudget(obj, in.X0, floorTol)
		if err != nil {
			return nil, fmt.Errorf("--reference-floor, seed %d: %w", seed, err)
		}
		ref, err := in.SR(th, nil)
		if err != nil {
			return nil, fmt.Errorf("--reference-floor, seed %d: %w", seed, err)
		}
		g := (ref - in.SRStar) / gap0
		rep.Seeds, rep.Gaps = append(rep.Seeds, seed), append(rep.Gaps, g)
		fmt.Fprintf(w, "  seed %d: its own minimum %.8f, the reference SR at its minimiser %.8f, relative gap %.4f\n", seed, v, ref, g)
	}
	scale := 1 + float64(referenceDraws)/float64(rep.Draws)
	m, sd := meanSD(rep.Gaps)
	half := 0.0
	if k > 1 {
		half = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(k - 1)}.Quantile(0.975) * sd / math.Sqrt(float64(k))
	}
	rep.Floor = [3]float64{m / scale, (m - half) / scale, (m + half) / scale}
	rep.About = fmt.Sprintf("relative gap of the reference objective at the true minimiser, estimated as the mean gap at %d independent minimisers over 1 + N/M = %g, with its 95%% t interval (heavy tails make it rough)", k, scale)
	fmt.Fprintf(w, "  floor (the relative gap at the true minimiser, mean gap / %g): %.4f [%.4f, %.4f] (95%% t interval over %d objectives)\n", scale, rep.Floor[0], rep.Floor[1], rep.Floor[2], k)
	return rep, nil
}

func meanSD(v []float64) (float64, float64) {
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	ss := 0.0
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	if len(v) < 2 {
		return m, 0
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}
