package ubsr_test

import (
	"fmt"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/ubsr"
)

// Example minimises the entropic shortfall risk (beta = 5, lambda = 0.5) of
// a 3-asset Gaussian portfolio on the budget plane with RT-MLMC on the UBSR
// oracle, and compares the result with the exact optimum of the closed
// form. Most queries draw one or two copies of X; the rare large ones
// remove the bias of the small-sample root.
func Example() {
	p, err := ubsr.NewGaussianPortfolio([]float64{0.05, 0.10, 0.15}, []float64{0.10, 0.20, 0.30}, 0.3)
	if err != nil {
		fmt.Println(err)
		return
	}
	loss, lambda := ubsr.Entropic(5), 0.5
	exact := func(th, g []float64) (float64, error) { return p.SR(loss, lambda, th, g) }
	thStar, srStar, err := ubsr.MinimiseBudget(exact, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-8)
	if err != nil {
		fmt.Println(err)
		return
	}
	o, err := ubsr.New[[]float64](p, loss, ubsr.Config{Lambda: lambda, MaxLevel: 12, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	th, prev := []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, make([]float64, 3)
	o.SetPoints(th, prev)
	e, err := mlmc.New(mlmc.Kind{Method: mlmc.RTMLMC}, mlmc.Config{MaxLevel: 12, B: 2, C: 1, Seed: 2}, mlmc.Float64Ops{Dim: 3}, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	v := make([]float64, 3)
	const iters = 20000
	for t := range iters {
		if _, err := e.Estimate(t, v); err != nil {
			fmt.Println(err)
			return
		}
		ubsr.ProjectBudget(v) // steps stay on the plane sum theta = 1
		copy(prev, th)
		step := 5 / (1 + float64(t)/100)
		for i := range th {
			th[i] -= step * v[i]
		}
	}
	sr, _ := exact(th, nil)
	fmt.Printf("theta = %.2f, theta* = %.2f\n", th, thStar)
	fmt.Printf("SR - SR* = %.1e (SR* = %.5f); %.1f samples an iteration\n", sr-srStar, srStar, float64(e.Totals().Samples)/iters)
	// Output:
	// theta = [0.49 0.29 0.21], theta* = [0.49 0.30 0.21]
	// SR - SR* = 2.1e-06 (SR* = 0.09226); 4.1 samples an iteration
}
