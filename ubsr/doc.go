// Package ubsr builds the multilevel oracle of utility-based shortfall risk
// (UBSR) optimisation,
//
//	min over theta of SR_lambda(theta) = inf { t : E l(-X(theta) - t) <= lambda },
//
// for the estimators of package mlmc (docs/definitions.md, section 12). The
// gradient of SR is a ratio of expectations taken at SR itself,
//
//	grad SR = -E[l'(-X - SR) X'(theta)] / E[l'(-X - SR)],
//
// and has no unbiased estimator. Level l draws 2^l copies of X and 2^l of
// X~: t is the sample-average root over X~ (SampleRoot, to 1e-12), h^l the
// ratio of the sample means over X at that t, and H^l subtracts the mean of
// the same ratio over each half of the draws, each half with its own root.
// The bias of h^l falls like 2^-l when l' is smooth, and H^l's variance
// faster than its cost grows, so the randomized estimators remove the bias
// at a cost that does not grow with the accuracy.
//
// A user supplies the random payoff X(theta; xi) and its gradient (Problem)
// and a loss (Loss; Entropic, QuadraticHinge and Expectile are built in);
// New checks that the risk level lies inside the loss's range and that the
// derivative is a nonnegative derivative of the loss. GaussianPortfolio is
// a portfolio of Gaussian returns, whose shortfall risk GaussianSR gives in
// closed form for any loss with Gaussian integrals, and MinimiseBudget
// solves a smooth problem on the budget plane sum theta = 1 (the exact
// optimum the runs are measured against).
package ubsr
