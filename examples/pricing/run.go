package main

import (
	"github.com/simclr-go/simclr/mlmc/sgd"
	"math"

	"github.com/simclr-go/simclr/experiment"
)

// start is the initial decision (mu, p) of docs/definitions.md, section 8
// "Pricing and staffing".
var start = [2]float64{9, 9}

// tolerance is "within 1% of (mu*, p*)": |x - x*| <= 0.01 |x*| (Euclidean).
const tolerance = 0.01

// precondition is the diagonal step scaling at x. The demand curve
// lambda(p) is known to the decision maker (only the service law is not), and
// dF/dp carries the factor lambda'(p) (GradAffine): at the start p = 9 it is
// 1e-3 and the plain gradient step crawls for hundreds of iterations on that
// plateau, while near the optimum |lambda'| is about 1 and the curvature
// (Hessian eigenvalues 0.2..3) caps the step near 0.5. Dividing the price
// step by |lambda'(p)| makes one step size fit both: with exact gradients and
// step 0.5 gradient descent is within 1% after 30 to 40 iterations for all
// three laws.
func precondition(x [2]float64) [2]float64 {
	return [2]float64{1, 1 / -dLambda(x[1])}
}

// budgets are the logged points of a run: the budgets 2^k up to the
// method's. A decision after budget 2^k is the last one whose cumulative
// simulated steps are at most 2^k, which is what a run with budget 2^k
// returns (the step sizes depend on t, not on the budget, so a shorter run
// is a prefix of the same trajectory): the steps after which a run stays
// within 1% at every 2^k are a budget-free figure.
func budgets(budget int64) []int64 { return experiment.PowersOfTwo(budget, 0) }

// pricingProblem is one service law's problem for the harness, with its
// optimum.
type pricingProblem struct {
	*experiment.Problem
	xStar [2]float64
}

// problem is projected, preconditioned gradient descent on the law's F
// from start with the oracle construction k, its progress the relative
// error |x - x*|/|x*| (onGap: the relative objective gap) and its cost the
// simulated queue steps (a VR correction simulates every drawn trajectory
// twice, at x_t and x_(t-1)).
func problem(law Law, k oracleKind, onGap bool) pricingProblem {
	mu, p := Optimum(law)
	xStar := [2]float64{mu, p}
	pp := pricingProblem{xStar: xStar, Problem: &experiment.Problem{
		Name: law.Name, About: "GI/GI/1 pricing and staffing, " + law.Name + " service, construction " + k.String(),
		Problem: sgd.Problem{
			NewOracle: func(seed uint64) (experiment.Instance, error) {
				o := newQueueOracle(law, k, maxLevel, seed)
				return experiment.Instance{Oracle: o, Cost: o.Simulated, At: func(x, prev []float64) {
					o.x, o.xPrev = [2]float64{x[0], x[1]}, [2]float64{prev[0], prev[1]}
				}}, nil
			},
			X0: start[:],
			Project: func(x []float64) {
				y := project(law, [2]float64{x[0], x[1]})
				x[0], x[1] = y[0], y[1]
			},
			Precondition: func(x, d []float64) {
				pc := precondition([2]float64{x[0], x[1]})
				d[0], d[1] = pc[0], pc[1]
			},
			// The closed-form objective, which the auto method's stages
			// score on; the targets are read on Error.
			Objective: func(x []float64) (float64, float64) { return Objective(law, x[0], x[1]), 0 },
		},
		ObjectiveAbout: "closed-form M/G/1 objective",
		// F(x*): auto claims a relative objective gap, checked on it.
		FStar: experiment.Optimum{Value: Objective(law, mu, p)},
		Error: func(x []float64) float64 {
			return math.Hypot(x[0]-xStar[0], x[1]-xStar[1]) / math.Hypot(xStar[0], xStar[1])
		},
		EveryIterate: true,
		CostName:     "simulated queue steps",
		ErrorName:    "|x - x*| / |x*|",
	}}
	if onGap {
		// The gaps are read at the logged points only (the stays-below
		// rule needs no more), as in the DRO and shortfall-risk studies.
		pp.Error, pp.ErrorName, pp.EveryIterate = nil, "", false
	}
	return pp
}
