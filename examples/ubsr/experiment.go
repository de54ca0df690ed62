package main

import (
	"fmt"
	"github.com/simclr-go/simclr/mlmc/sgd"
	"io"
	"math"
	"os"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/ubsr"
)

// paperGrid is the paper's grid of top levels, L = 0..10, with five steps
// over a factor of 16 at this problem's scale: its gradients are about 0.05
// and the curvature on the budget plane 0.03 to 0.5, so the paper's steps
// 1e-4..1e-1 would barely move theta (a pilot chose steps 1 to 2).
var paperGrid = experiment.Grid{
	Levels: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
	Steps:  []float64{4, 2, 1, 0.5, 0.25},
	Decays: []float64{0, 300},
	D1:     []int{1, 10},
}

// smallGrid is a reduced grid for a machine shared with other work: the
// top levels, steps and schedule that won every pilot run (levels below 6
// and constant steps lost them all), D1 = 10.
var smallGrid = experiment.Grid{
	Levels: []int{6, 8, 10},
	Steps:  []float64{2, 1, 0.5},
	Decays: []float64{300},
	D1:     []int{10},
}

// longGrid is the grid of the long-budget complexity runs: the top levels
// a gap below 0.1% needs (the bias of h^10 alone leaves a relative gap
// near 2e-4 on the entropic loss), and the steps and the fast decay
// (t0 = 10) that widening chose on the shorter runs; --widen takes it on
// from there.
var longGrid = experiment.Grid{
	Levels: []int{10, 11, 12, 13},
	Steps:  []float64{2, 1, 0.5},
	Decays: []float64{10},
	D1:     []int{10},
}

// problem is the instance as the harness runs it: a trial's oracle, the
// projection onto the budget plane, and the relative gap of SR.
func (in *instance) problem() *experiment.Problem {
	d := float64(len(in.X0))
	return &experiment.Problem{
		Name: in.Name + "/" + in.Loss.Name,
		About: fmt.Sprintf("%s portfolio, %s loss, lambda = %g; x0 uniform; SR* from %s",
			in.Name, in.Loss.Name, in.Lambda, in.Reference),
		Problem: sgd.Problem{
			NewOracle: func(seed uint64) (experiment.Instance, error) {
				o, err := in.oracle(seed)
				if err != nil {
					return experiment.Instance{}, err
				}
				return experiment.Instance{Oracle: divergent{o}, At: o.SetPoints}, nil
			},
			X0: in.X0,
			Project: func(x []float64) {
				// Steps are projected onto sum theta = 1: remove the sum's drift.
				s := 0.0
				for _, v := range x {
					s += v
				}
				for i := range x {
					x[i] -= (s - 1) / d
				}
			},
			Objective: func(x []float64) (float64, float64) {
				v, err := in.SR(x, nil)
				if err != nil {
					return math.Inf(1), 0
				}
				return v, 0
			},
		},
		ObjectiveAbout: in.Reference,
		FStar:          experiment.Optimum{Value: in.SRStar},
		CostName:       "samples (copies of X and X~ generated)",
	}
}

// divergent makes an oracle error a gradient of NaNs: a setting whose
// iterates run off (a step too large for the grid) drives the exponential
// loss's l' to underflow and the oracle to refuse; the harness then marks
// the trial diverged instead of stopping the whole grid.
type divergent struct{ *ubsr.Oracle[[]float64] }

func (o divergent) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	if err := o.Oracle.Eval(s, at, diff, alpha, out); err != nil {
		for i := range out {
			out[i] = math.NaN()
		}
	}
	return nil
}

// runAuto runs the auto method on the reported seeds of each instance,
// planned for each gap of s.AutoGaps in turn, at the grid's budget and
// targets so that its samples compare with the tuned methods'. Each
// summary's trials record the plans and their reasons; with --json the
// summaries go to that file as JSON lines, one per instance and gap.
func runAuto(ins []*instance, s settings, w io.Writer) error {
	var js io.Writer
	if s.JSON != "" {
		f, err := os.Create(s.JSON)
		if err != nil {
			return fmt.Errorf("--json: %w", err)
		}
		defer f.Close()
		js = f
	}
	pr := experiment.Protocol{Targets: targets, Budget: s.Budget, Trials: s.Trials, FirstSeed: s.FirstSeed, Workers: s.Workers}
	for _, in := range ins {
		in.print(w)
		p := in.problem()
		for _, g := range s.AutoGaps {
			fmt.Fprintf(w, "%s: budget %d samples, %d trials; auto planned for gap %g\n", p.Name, s.Budget, s.Trials, g)
			res, err := experiment.Report(p, pr, experiment.AutoFixed(g, os.Stderr))
			if err != nil {
				return fmt.Errorf("%s, %s, auto for gap %g: %w", in.Name, in.Loss.Name, g, err)
			}
			experiment.WriteMarkdown(w, []experiment.Summary{res.Summary})
			if js != nil {
				if err := res.Summary.WriteJSON(js); err != nil {
					return fmt.Errorf("--json: %w", err)
				}
			}
		}
	}
	return nil
}
