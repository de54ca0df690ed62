package ubsr

import (
	"fmt"
	"math"
	"slices"
)

// ProjectBudget projects a step direction onto the budget plane
// sum_i theta_i = constant: it subtracts the mean of v from every entry,
// so that theta - step*v keeps theta's sum.
func ProjectBudget(v []float64) {
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for i := range v {
		v[i] -= mean
	}
}

// MinimiseBudget minimises a smooth f over the plane sum_i theta_i =
// sum_i x0_i by projected gradient descent with backtracking, until the
// projected gradient's norm is below gtol; f writes its gradient into grad.
// It returns the minimiser and the minimum.
func MinimiseBudget(f func(theta, grad []float64) (float64, error), x0 []float64, gtol float64) ([]float64, float64, error) {
	x := slices.Clone(x0)
	g := make([]float64, len(x))
	trial, tg := make([]float64, len(x)), make([]float64, len(x))
	v, err := f(x, g)
	if err != nil {
		return nil, 0, err
	}
	ProjectBudget(g)
	step := 1.0
	for it := 0; it < 100000; it++ {
		gn2 := 0.0
		for _, gi := range g {
			gn2 += gi * gi
		}
		if math.Sqrt(gn2) <= gtol {
			return x, v, nil
		}
		for {
			for i := range x {
				trial[i] = x[i] - step*g[i]
			}
			tv, err := f(trial, tg)
			if err == nil && tv <= v-step*gn2/2 {
				copy(x, trial)
				copy(g, tg)
				ProjectBudget(g)
				v = tv
				step *= 2
				break
			}
			step /= 2
			if step < 1e-30 {
				return x, v, nil // at the floating-point floor of f
			}
		}
	}
	return nil, 0, fmt.Errorf("ubsr: budget-plane minimiser did not converge to a projected gradient below %g", gtol)
}
