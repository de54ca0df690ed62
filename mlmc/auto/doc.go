// Package auto chooses an estimator for a biased-oracle problem from
// measurements of its levels, instead of a grid search: which method
// (L-SGD, V-MLMC or RT-MLMC), its top level L, its level law and its step
// size (docs/definitions.md, section 2 "The estimators", and section 11
// "Choosing the estimator from a pilot").
//
// Measure measures the levels at a point: per level the mean, variance and
// cost of H^l, from which the bias rate a, the variance rate b and the
// cost rate c are fitted. Choose turns one measurement into a Plan: the
// regime of the paper's Table 1 (b > c, b = c or b < c; Hu, Wang, Chen and
// He, "Multi-level Monte-Carlo Gradient Methods for Stochastic
// Optimization with Biased Oracles", section 1.3), the smallest L whose
// bias is below a stated share of the target gap, the method the table
// prescribes unless the measured constants say otherwise by more than
// their uncertainty, and the variance-optimal law of the measured levels.
//
// Run minimises a problem of package mlmc/sgd as continuation: stages
// whose targets fall geometrically to the user's gap, each measuring the
// levels where the run is with a pilot sized to the stage, choosing again
// (L never falling), re-checking the step after any change of method, and
// running with a step that a stationarity test halves, averaging its
// iterates, until its own gap estimate is at the stage's target; a stage
// whose plan saw no bias (no level's mean out of its noise) measures again
// where the run has gone while its gap estimate falls slower than
// 1/samples. It stops
// by itself when the last stage's estimate reaches the gap, and records
// every plan, stage and warning with its reason.
//
// A problem auto cannot serve (bias not falling, no finite variance, a
// pilot too small to measure three levels) gets an *Error naming the
// measurement and what to change.
package auto
