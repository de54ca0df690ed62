package main

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/simclr-go/simclr/mlmc"
)

// start is the initial decision (mu, p) of docs/definitions.md, section 8
// "Pricing and staffing".
var start = [2]float64{9, 9}

// tolerance is "within 1% of (mu*, p*)": |x - x*| <= 0.01 |x*| (Euclidean).
const tolerance = 0.01

// method is one optimiser: an mlmc estimator and its step sizes.
type method struct {
	Label     string // for people: "L-SGD"
	Estimator string // for mlmc.New: "lsgd"
	Config    mlmc.Config
	// Step holds the step sizes of mu and p at iteration t:
	// x <- project(x - Step/(1 + t/Decay) .* D v), with the diagonal
	// preconditioner D = diag(1, 1/|lambda'(p)|) (see precondition).
	Step [2]float64
	// Decay is t0 of the step decay 1/(1 + t/t0); 0 keeps steps constant.
	Decay float64
	// Budget is the number of simulated queue steps a run may use
	// (queueOracle.Simulated).
	Budget int64
	// GridMinLevel is the smallest k of the budget grid 2^k of gridHit.
	GridMinLevel int
}

// precondition is the diagonal step scaling at x. The demand curve
// lambda(p) is known to the decision maker (only the service law is not), and
// dF/dp carries the factor lambda'(p) (GradAffine): at the start p = 9 it is
// 1e-3 and the plain gradient step crawls for hundreds of iterations on that
// plateau, while near the optimum |lambda'| is about 1 and the curvature
// (Hessian eigenvalues 0.2..3) caps the step near 0.5. Dividing the price
// step by |lambda'(p)| makes one step size fit both: with exact gradients and
// Step (0.5, 0.5) gradient descent is within 1% after 30 to 40 iterations for
// all three laws.
func precondition(x [2]float64) [2]float64 {
	return [2]float64{1, 1 / -dLambda(x[1])}
}

// grid is the common sample counts at which runs record their error, for
// medians over seeds and plots: about 1.1^n, plus every power of two (the
// budget grid B_k = 2^k of gridHit).
func grid(maxSamples int64) []int64 {
	var g []int64
	for s := 1.0; s <= float64(maxSamples); s *= 1.1 {
		if n := int64(s); len(g) == 0 || n > g[len(g)-1] {
			g = append(g, n)
		}
	}
	for b := int64(1); b <= maxSamples; b *= 2 {
		if _, found := slices.BinarySearch(g, b); !found {
			g = append(g, b)
		}
	}
	slices.Sort(g)
	return g
}

// gridHit is a budget-free steps-to-1% on the budget grid B_k = 2^k,
// k = minLevel..floor(log2(budget)). The error at B_k is that of the last
// iterate whose cumulative simulated steps are <= B_k, which is what a run
// with budget B_k returns: the step sizes depend on t, not on the budget, so
// a shorter run is a prefix of the same trajectory. gridHit is the smallest
// B_k from which the error is <= tolerance at every later grid point up to
// the largest, or -1 if it is not at the largest.
func gridHit(sampleGrid []int64, errs []float64, minLevel int, budget int64) int64 {
	hit := int64(-1)
	for k := bits.Len64(uint64(budget)) - 1; k >= minLevel; k-- {
		i, found := slices.BinarySearch(sampleGrid, int64(1)<<k)
		if !found {
			panic(fmt.Sprintf("pricing: 2^%d is not on the sample grid", k))
		}
		if errs[i] > tolerance {
			break
		}
		hit = int64(1) << k
	}
	return hit
}

// trace is one run's outcome.
type trace struct {
	// Errors[k] is the relative error |x - x*|/|x*| of the last iterate
	// whose cumulative simulated steps are <= grid[k] (the start before any).
	Errors []float64
	// Hit is the number of simulated steps after which every iterate is
	// within tolerance, or -1 if the last one is not; HitDrawn is the same
	// point counted in samples drawn (random numbers of queue steps, each
	// draw counted once however often it is evaluated).
	Hit, HitDrawn int64
	// Final is the last decision; Samples (drawn), Evals and Simulated
	// (queue steps simulated) the totals.
	Final                     [2]float64
	Samples, Evals, Simulated int64
	Iterations                int
}

// run optimises F for one law with one method and seed until it has used
// its budget of simulated steps.
func run(law Law, kind oracleKind, m method, xStar [2]float64, maxLevel int, seed uint64, sampleGrid []int64) (trace, error) {
	o := newQueueOracle(law, kind, maxLevel, seed)
	cfg := m.Config
	cfg.Seed = seed
	est, err := mlmc.ParseKind(m.Estimator)
	if err != nil {
		return trace{}, fmt.Errorf("%s: %w", m.Label, err)
	}
	e, err := mlmc.New(est, cfg, mlmc.Float64Ops{Dim: 2}, o)
	if err != nil {
		return trace{}, fmt.Errorf("%s: %w", m.Label, err)
	}
	relErr := func(x [2]float64) float64 {
		return math.Hypot(x[0]-xStar[0], x[1]-xStar[1]) / math.Hypot(xStar[0], xStar[1])
	}
	tr := trace{Errors: make([]float64, len(sampleGrid)), Hit: -1, HitDrawn: -1}
	x, prev := start, start
	v := make([]float64, 2)
	k := 0 // next grid point
	errNow := relErr(x)
	var samples, drawn int64
	for t := 0; samples < m.Budget; t++ {
		o.x, o.xPrev = x, prev
		step, err := e.Estimate(t, v)
		if err != nil {
			return trace{}, fmt.Errorf("%s: %w", m.Label, err)
		}
		// Simulated queue steps, counted by the oracle: a VR correction
		// simulates every drawn trajectory twice (at x_t and x_(t-1)).
		for ; k < len(sampleGrid) && sampleGrid[k] < o.Simulated(); k++ {
			tr.Errors[k] = errNow
		}
		samples = o.Simulated()
		drawn += step.Samples
		prev = x
		decay := 1.0
		if m.Decay > 0 {
			decay = 1 / (1 + float64(t)/m.Decay)
		}
		d := precondition(x)
		x = project(law, [2]float64{x[0] - decay*m.Step[0]*d[0]*v[0], x[1] - decay*m.Step[1]*d[1]*v[1]})
		errNow = relErr(x)
		switch {
		case errNow > tolerance:
			tr.Hit, tr.HitDrawn = -1, -1
		case tr.Hit < 0:
			tr.Hit, tr.HitDrawn = samples, drawn
		}
		tr.Iterations = t + 1
	}
	for ; k < len(sampleGrid); k++ {
		tr.Errors[k] = errNow
	}
	tot := e.Totals()
	tr.Final, tr.Samples, tr.Evals, tr.Simulated = x, tot.Samples, tot.Evals, samples
	return tr, nil
}
