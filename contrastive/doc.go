// Package contrastive is the multilevel oracle of SimCLR's contrastive
// objective (docs/definitions.md, section 4) for the estimators of package
// mlmc: a query at level l draws 2^l images, runs the network on their two
// augmented views and adds the gradient of the NT-Xent loss L_B (h^l) or of
// L_B - (L_B1 + L_B2)/2 (H^l) into the estimator's vector, at the current
// parameters or, replaying the same views, at the previous ones (VR).
// The loss is a choice (Loss, one file per loss: ntxent.go, dcl.go,
// sogclr.go), each declaring which queries it serves (Support); Sharded
// splits every draw over ranks around the same oracle. The
// trainer and `simclr levels` share it: MeasureLevels runs the per-level
// diagnostics of package mlmc on it. Package cso is the same kind of oracle
// for conditional stochastic optimisation problems.
package contrastive
