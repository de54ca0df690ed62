package main

import "github.com/simclr-go/simclr/experiment"

// widenAxes are the settings the grid search's widening
// (experiment.TuneWidened) moves, one value beyond the edge of what a
// chosen setting's family tried: a top level whose iteration costs 2^(L+1)
// samples leaves at most budget/2^(L+1) iterations, so L stops at 14, and
// the steps stay within [1/256, 64].
var widenAxes = experiment.Axes(experiment.AxisLimits{MaxLevel: 14, MinStep: 1.0 / 256, MaxStep: 64})
