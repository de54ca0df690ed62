package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/experiment/plots"
	"github.com/simclr-go/simclr/mlmc"
)

// The objective-gap protocol (--targets gap): the rule the DRO and
// shortfall-risk studies use, so that the pricing problem's methods and
// auto compare on the same footing. The targets are relative gaps of the
// closed-form objective, (F - F*)/(F(x0) - F*); the methods are a grid
// searched on tuning seeds, widened wherever a choice sits at its edge,
// and each target's choice is run on the reported seeds.

// gapTargets are the relative objective gaps at which the simulated steps
// are counted.
var gapTargets = []float64{0.01, 0.003, 0.001}

// gapTuningSeeds score the grid's settings; the reported seeds are others.
var gapTuningSeeds = []uint64{1001, 1002, 1003}

// gapBudget is a trial's budget of simulated queue steps.
const gapBudget = 1 << 22

// gapGrowth spaces the logged points: four per doubling of the steps, so
// that a passage is read to within a factor of 2^(1/4).
var gapGrowth = math.Pow(2, 0.25)

// gapKinds are the estimators the grid searches: L-SGD and RT-MLMC, each
// plain and variance-reduced (the pricing study's three and VR L-SGD).
var gapKinds = []mlmc.Kind{
	{Method: mlmc.LSGD}, {Method: mlmc.LSGD, VR: true},
	{Method: mlmc.RTMLMC}, {Method: mlmc.RTMLMC, VR: true},
}

// gapGrid is the first grid the search scores, before widening: top levels
// from a trajectory of 2^8 steps to the oracle's longest, the steps
// around the curvature's limit 0.5 (preconditioned; see precondition) and
// below it, and schedules from constant to a decay over 10^4 iterations
// (an RT-MLMC iteration costs about ten steps, so its budget is millions
// of iterations; an L-SGD iteration at L = 18 costs 2^18).
var gapGrid = experiment.Grid{
	Levels: []int{8, 13, maxLevel},
	Steps:  []float64{0.5, 0.125},
	Decays: []float64{0, 100, 10000},
	D1:     []int{10},
	B:      1,
}

// gapAxes are the widening's moves: L up to the oracle's longest
// trajectory, the step within [2^-12, 2] (twice the preconditioned
// curvature limit is already unstable).
var gapAxes = experiment.Axes(experiment.AxisLimits{MaxLevel: maxLevel, MinStep: 1.0 / 4096, MaxStep: 2})

// gapWidenRounds bounds the widening's rounds.
const gapWidenRounds = 8

// gapProtocol is the objective-gap protocol at budget with trials reported
// seeds from first; a gap auto plans for (autoGap, 0 for none) that is not
// among the targets joins them, so that its passage is read.
func gapProtocol(budget int64, autoGap float64, first uint64, trials, workers int, progress io.Writer) experiment.Protocol {
	targets := gapTargets
	if autoGap > 0 && !slices.Contains(targets, autoGap) {
		targets = append(slices.Clone(targets), autoGap)
		slices.SortFunc(targets, func(a, b float64) int { return cmp.Compare(b, a) })
	}
	return experiment.Protocol{Targets: targets, Budget: budget, TuningSeeds: gapTuningSeeds,
		Trials: trials, FirstSeed: first, Workers: workers, Progress: progress,
		Points: func(b int64) []int64 { return experiment.GeometricGrid(b, gapGrowth) }}
}

// gapTuning is the methods of one law's problem under the objective-gap
// protocol: auto planned for autoGap where it is positive, else the grid
// searched on the tuning seeds and widened.
func gapTuning(p *experiment.Problem, pr experiment.Protocol, autoGap float64, log io.Writer) (*experiment.Tuning, error) {
	if autoGap > 0 {
		return experiment.AutoFixed(autoGap, log), nil
	}
	return experiment.TuneWidened(p, pr, gapGrid.Methods(gapKinds), nil, gapAxes, gapWidenRounds, log)
}

// runGaps runs the objective-gap protocol for every law of o: the grid
// (or auto, for each of its gaps in turn) on the reported seeds, one
// summary per law and auto gap, printed as tables and, with --json, as
// JSON lines on stdout (the tables then go to stderr); with --png, the
// median gap against the simulated steps, a panel per summary.
func runGaps(o options, stdout, stderr io.Writer) error {
	var panels []plots.Panel
	table := stdout
	if o.asJSON {
		table = stderr
	}
	autoGaps := o.autoGaps
	if len(autoGaps) == 0 {
		autoGaps = []float64{0}
	}
	for _, law := range o.laws {
		p := problem(law, o.kind, true)
		f0, _ := p.Objective(p.X0)
		fmt.Fprintf(stderr, "%s service, construction %s: F(x0) = %.6g, F* = %.6g at mu* = %.4f, p* = %.4f; budget %d simulated steps; targets: relative objective gaps %v\n",
			law.Name, o.kind, f0, p.FStar.Value, p.xStar[0], p.xStar[1], o.budget, gapTargets)
		for _, g := range autoGaps {
			pr := gapProtocol(o.budget, g, o.seeds[0], len(o.seeds), o.workers, stderr)
			tn, err := gapTuning(p.Problem, pr, g, stderr)
			if err != nil {
				return fmt.Errorf("%s: %w", law.Name, err)
			}
			res, err := experiment.Report(p.Problem, pr, tn)
			if err != nil {
				return fmt.Errorf("%s: %w", law.Name, err)
			}
			experiment.WriteMarkdown(table, []experiment.Summary{res.Summary})
			if o.asJSON {
				if err := res.Summary.WriteJSON(stdout); err != nil {
					return fmt.Errorf("writing JSON: %w", err)
				}
			}
			title := law.Name + " service"
			if g > 0 {
				title += fmt.Sprintf(", auto for gap %g", g)
			}
			panels = append(panels, plots.Panels(res, []string{title}, func(experiment.Curve) int { return 0 })...)
		}
	}
	if o.png != "" {
		if err := plots.WritePNG(o.png, panels); err != nil {
			return fmt.Errorf("--png: %w", err)
		}
		fmt.Fprintln(stderr, "wrote", o.png)
	}
	return nil
}
