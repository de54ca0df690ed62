package ubsr

import "math/rand/v2"

// Problem is the random position of a shortfall-risk problem: a payoff
// X(theta; xi) that depends on parameters theta in R^Dim and on a random
// draw xi of type Xi, with its gradient X'(theta; xi) in theta. A draw is
// recorded once and evaluated at several parameters (the variance-reduced
// estimators evaluate it at theta_t and theta_(t-1)).
//
// Methods are called from one goroutine at a time per Problem value.
type Problem[Xi any] interface {
	// Dim is the length of theta and of X'(theta).
	Dim() int
	// Draw draws xi. reuse is an Xi made by an earlier call that is no
	// longer needed (the zero value at first): a problem whose Xi holds
	// memory (a slice) may fill and return it instead of allocating.
	Draw(r *rand.Rand, reuse Xi) Xi
	// Payoff returns X(theta; xi) and, when grad is not nil, writes
	// X'(theta; xi) into grad (overwriting it).
	Payoff(theta []float64, xi Xi, grad []float64) float64
}
