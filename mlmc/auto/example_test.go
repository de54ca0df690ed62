package auto_test

import (
	"fmt"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
)

// A run on mlmc.Synthetic with rates a = 1, b = 2, c = 1: auto measures the
// levels, chooses the estimator, L, the law and the step, re-plans once,
// and reaches the 0.1% gap within a million samples, its pilot included.
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
	p := auto.Problem{
		X0: make([]float64, dim),
		NewOracle: func(seed uint64) (mlmc.Oracle[[]float64], func(x, prev []float64), error) {
			o := mlmc.NewSynthetic(dim, 1, 2, 1, seed)
			// at points the oracle at the runner's iterates.
			return o, func(x, prev []float64) { o.X, o.XPrev = x, prev }, nil
		},
		Objective: objective,
	}
	res, err := auto.Run(p, auto.Settings{Target: auto.Target{Gap: 1e-3, Budget: 1_000_000}, Seed: 1}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	first := res.Plans[0]
	fmt.Printf("%s on levels %d..%d (%s)\n", first.Method, first.MinLevel, first.MaxLevel, first.Regime)
	f0, _ := objective(p.X0)
	f, _ := objective(res.X)
	fmt.Printf("gap below 0.1%%: %v; pilot within 5%%: %v\n", f/f0 <= 1e-3, res.Pilot <= 50_000)
	// Output:
	// rtmlmc on levels 0..8 (b > c)
	// gap below 0.1%: true; pilot within 5%: true
}
