// Package mlmc implements the multilevel Monte-Carlo gradient estimators of
// Hu, Wang, Chen and He, "Multi-level Monte-Carlo Gradient Methods for
// Stochastic Optimization with Biased Oracles" (docs/definitions.md, section 2 "The estimators"): L-SGD,
// V-MLMC, RT-MLMC, RU-MLMC, RR-MLMC and their SpiderBoost-style
// variance-reduced versions (prefix "vr-").
//
// The package knows nothing of neural networks. A problem is an Oracle: it
// draws the randomness of a query at level l (a replayable Sample) and adds
// alpha times h^l or H^l, evaluated at the current or the previous parameters,
// into a gradient vector. Gradient vectors are opaque values of a type V owned
// by the caller (the SimCLR oracle keeps them on a GPU); estimators combine
// them only through the caller's VecOps and the oracle's accumulating Eval,
// never by copying them into Go slices.
//
// Each method is a Scheme in a file of its own (lsgd.go, vmlmc.go,
// rtmlmc.go, rumlmc.go, rrmlmc.go): its checks, its plan of queries, its
// expected queries per level (which ExpectedCost and the predictions price)
// and, where it has one, its variance from measured levels. New,
// ExpectedCost, ParseKind and Names read the table of methods; another
// program adds its own method with one call to Register.
//
// MeasureLevels is the per-level diagnostics of docs/definitions.md, section 4 "Contrastive learning as a biased oracle": at fixed
// parameters it measures the mean, variance and cost of H^l per level, fits
// the rates b and c, checks the telescoping sum and predicts each
// estimator's variance x cost relative to L-SGD's.
//
// ExpectedCost is the one cost model: the expected samples and oracle
// evaluations of an iteration, from which a run's length in samples is
// planned. Its allocation of queries to levels is the one the per-level
// predictions price in measured variance and time. Errors name settings
// (minimum level, draws), not command-line flags: the program that reads
// the flags words them for its users. The package examples run RT-MLMC and VR RT-MLMC on a toy oracle
// (a squared mean, biased like SimCLR's small batches) and show how to write
// an Oracle. Float64Ops and Synthetic (a quadratic objective with known
// rates a, b, c) serve tests and examples; examples/pricing is the paper's
// pricing and staffing problem.
package mlmc
