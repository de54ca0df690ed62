package cso_test

import (
	"fmt"

	"github.com/simclr-go/simclr/cso"
	"github.com/simclr-go/simclr/mlmc"
)

// Example minimises the shift problem (see cso_test.go: F(x) = E_xi lambda
// log E exp((x - eta)^2/lambda) with eta ~ N(xi, 0.64), xi uniform on
// {-1, 0, 2}, minimised at the mean of the centers, 1/3) with RT-MLMC on
// the CSO oracle: most iterations draw one or two inner samples, and the
// rare high-level corrections remove the bias of so few.
func Example() {
	p := &shift{Centers: []float64{-1, 0, 2}, Sigma: 0.8, Lambda: 4}
	o, err := cso.New[float64, float64](p, cso.Config{MaxLevel: 10, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	x, prev := []float64{3}, []float64{3}
	o.SetPoints(x, prev)
	e, err := mlmc.New(mlmc.Kind{Method: mlmc.RTMLMC}, mlmc.Config{MaxLevel: 10, B: 2, C: 1, Seed: 2}, mlmc.Float64Ops{Dim: 1}, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	v := []float64{0}
	var tail float64 // mean of the iterates over the second half
	const iters = 20000
	for t := range iters {
		if _, err := e.Estimate(t, v); err != nil {
			fmt.Println(err)
			return
		}
		prev[0] = x[0]
		x[0] -= 0.01 * v[0]
		if t >= iters/2 {
			tail += x[0] / (iters / 2)
		}
	}
	fmt.Printf("x = %.2f (optimum 0.33); %.1f inner samples an iteration\n", tail, float64(e.Totals().Samples)/iters)
	// Output: x = 0.35 (optimum 0.33); 2.1 inner samples an iteration
}
