// Package auto chooses an estimator for a biased-oracle problem from a
// pilot diagnostic, instead of a grid search: which method (L-SGD, V-MLMC
// or RT-MLMC), its top level L, its level law and its step size
// (docs/definitions.md, section 2 "The estimators", and section 11
// "Choosing the estimator from a pilot").
//
// A pilot of a stated share of the run's samples (at most 5%) measures the
// levels with mlmc.MeasureLevels: per level the mean, variance and cost of
// H^l, from which the bias rate a, the variance rate b and the cost rate c
// are fitted. Choose turns one measurement into a Plan: the regime of the
// paper's Table 1 (b > c, b = c or b < c; Hu, Wang, Chen and He,
// "Multi-level Monte-Carlo Gradient Methods for Stochastic Optimization with
// Biased Oracles", section 1.3), the smallest L whose extrapolated bias is
// below a stated share of the target gap, the method the table prescribes
// for that regime unless the measured constants say otherwise by more than
// their uncertainty, and the variance-optimal law of the measured levels.
// Run does the whole run on a problem over []float64 parameters: the pilot
// at x0 with a short step search on the problem's objective, the run, one
// re-plan at a stated point, and the rest of the run, counting every
// sample the pilot drew.
//
// A problem auto cannot serve (bias not falling, no finite variance, a
// pilot budget too small to measure three levels) gets an *Error naming the
// measurement and what to change.
package auto
