package experiment_test

import (
	"fmt"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// descent is F(x) = x^2/2 with exact gradients: one sample a query.
type descent struct{ x []float64 }

func (d *descent) MaxLevel() int                        { return mlmc.Unbounded }
func (d *descent) Draw(int) (mlmc.Sample, int64, error) { return nil, 1, nil }
func (d *descent) Eval(_ mlmc.Sample, _ mlmc.Point, _ bool, alpha float64, out []float64) error {
	out[0] += alpha * d.x[0]
	return nil
}
func (d *descent) Release(mlmc.Sample) {}

// Tune the step of L-SGD on a problem with a known answer, report it over
// six trials and read the samples after which the gap stays below each
// target: the gap is 0.09^t after t samples with the step 0.7.
func Example() {
	p := &experiment.Problem{
		Name: "quadratic", EveryIterate: true,
		Problem: sgd.Problem{X0: []float64{1},
			NewOracle: func(seed uint64) (experiment.Instance, error) {
				d := &descent{}
				return experiment.Instance{Oracle: d, At: func(x, _ []float64) { d.x = x }}, nil
			},
			Objective: func(x []float64) (float64, float64) { return x[0] * x[0] / 2, 0 }},
		FStar: experiment.Optimum{Value: 0},
	}
	var grid []experiment.Method
	for _, step := range []float64{0.1, 0.5, 0.7} {
		grid = append(grid, experiment.Method{Kind: mlmc.Kind{Method: mlmc.LSGD}, Step: step})
	}
	pr := experiment.Protocol{Budget: 100, Trials: 6}
	tn, err := experiment.Tune(p, pr, grid)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := experiment.Report(p, pr, tn)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.Summary.Methods[0]
	fmt.Println(m.Name, "step", m.Setting.Step)
	for i, t := range res.Summary.Targets {
		fmt.Printf("gap %g: %g samples, %d of %d trials\n", t, *m.StaysBelow[i].Median, m.StaysBelow[i].Reached, res.Summary.Trials)
	}
	fmt.Println(tn.Edges)
	// Output:
	// L-SGD step 0.7
	// gap 0.01: 2 samples, 6 of 6 trials
	// gap 0.003: 3 samples, 6 of 6 trials
	// gap 0.001: 3 samples, 6 of 6 trials
	// [L-SGD: step 0.7 is the largest of its grid (L-SGD L=0 step=0.7)]
}
