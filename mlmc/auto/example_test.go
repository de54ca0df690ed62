package auto_test

import (
	"fmt"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// A run on mlmc.Synthetic with rates a = 1, b = 2, c = 1: auto goes
// through stages whose targets fall by sqrt(10) from 10% to the 0.1% gap,
// each measuring the levels with a pilot sized to it and choosing the
// estimator, L, the law and the step, and stops when its own gap estimate
// is at the target, within two million samples, its pilots included.
func ExampleRun() {
	const dim = 4
	ref := mlmc.NewSynthetic(dim, 1, 2, 1, 0)
	objective := func(x []float64) (float64, float64) {
		f := 0.0
		for i := range x {
			f += (x[i] - ref.XStar[i]) * (x[i] - ref.XStar[i]) / 2
		}
		return f, 0 // exact
	}
	p := &sgd.Problem{
		X0: make([]float64, dim),
		NewOracle: func(seed uint64) (sgd.Instance, error) {
			o := mlmc.NewSynthetic(dim, 1, 2, 1, seed)
			// At points the oracle at the driver's iterates.
			return sgd.Instance{Oracle: o, At: func(x, prev []float64) { o.X, o.XPrev = x, prev }}, nil
		},
		Objective: objective,
	}
	res, err := auto.Run(p, auto.Settings{Target: auto.Target{Gap: 1e-3, Budget: 2_000_000}, Seed: 6})
	if err != nil {
		fmt.Println(err)
		return
	}
	first := res.Record.Stages[0].Plans[0]
	fmt.Printf("first stage: %s (%s)\n", first.Method, first.Regime)
	f0, _ := objective(p.X0)
	f, _ := objective(res.X)
	fmt.Printf("stopped by itself: %v; gap below 0.1%%: %v\n", res.Reached, f/f0 <= 1e-3)
	// Output:
	// first stage: rtmlmc (b > c)
	// stopped by itself: true; gap below 0.1%: true
}
