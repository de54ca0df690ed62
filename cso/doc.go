// Package cso builds the multilevel oracle of a conditional stochastic
// optimisation (CSO) problem,
//
//	F(x) = E_xi [ f_xi( E_{eta|xi} g(x; xi, eta) ) ],
//
// for the estimators of package mlmc (docs/definitions.md, section 9). The
// inner expectation cannot be sampled without bias: the plug-in gradient
// that replaces it by the mean of n inner draws is biased by O(1/n) when
// f_xi is smooth and nonlinear. Level l takes 2^l inner draws per outer
// sample; h^l is the plug-in gradient over all of them and H^l subtracts
// the mean of the two plug-in gradients over the first and the second half
// of the same draws (the antithetic correction, whose variance falls like
// 2^(-2l) while its cost grows like 2^l).
//
// A problem supplies the samplers and the plug-in value and gradient
// (Problem); Oracle turns it into an mlmc.Oracle over []float64 vectors
// with replayable draws, so every estimator of package mlmc, the VR ones
// included, runs on it unchanged. EntropicRisk is the outer function of the
// Sinkhorn DRO instance (examples/dro), lambda log mean exp(l/lambda), in
// float64 with log-sum-exp. VarianceSplit splits Var h^l into its outer part
// (which xi was drawn, the same for every estimator) and its inner part
// (which eta were drawn, the part that more inner draws remove).
package cso
