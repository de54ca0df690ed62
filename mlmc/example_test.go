package mlmc_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/simclr-go/simclr/mlmc"
)

// squaredMean is a toy biased oracle with SimCLR's structure. It minimises
// F(x) = (x - m^2)^2 / 2 where m = E[u], u uniform on [0, 2), so the
// minimiser is m^2 = 1. Level l estimates m^2 by the squared mean of 2^l
// draws of u, which is biased by Var(u)/2^l:
//
//	h^l(x) = x - mean(u_1..u_N)^2,   N = 2^l
//	H^l(x) = h^l(x) - (h^(l-1) on the first half + h^(l-1) on the second half) / 2
//
// the halves reusing the same draws, as SimCLR's half-batch losses do.
type squaredMean struct {
	x, xPrev *float64 // the caller's current and previous parameters
	rng      *rand.Rand
}

func (o *squaredMean) MaxLevel() int { return mlmc.Unbounded }

// Draw records 2^level draws of u; they cost 2^level samples.
func (o *squaredMean) Draw(level int) (mlmc.Sample, int64, error) {
	u := make([]float64, 1<<level)
	for i := range u {
		u[i] = 2 * o.rng.Float64()
	}
	return u, int64(len(u)), nil
}

func (o *squaredMean) Eval(s mlmc.Sample, at mlmc.Point, diff bool, alpha float64, out []float64) error {
	u := s.([]float64)
	x := *o.x
	if at == mlmc.Previous {
		x = *o.xPrev
	}
	sq := func(v []float64) float64 {
		var sum float64
		for _, ui := range v {
			sum += ui
		}
		m := sum / float64(len(v))
		return m * m
	}
	g := x - sq(u)
	if diff {
		half := len(u) / 2
		g -= (x-sq(u[:half]))/2 + (x-sq(u[half:]))/2
	}
	out[0] += alpha * g
	return nil
}

func (o *squaredMean) Release(mlmc.Sample) {}

// train runs iters steps of x <- x - 0.05 v_t from x = 0 with estimator k
// and reports the mean iterate over the second half of the run
// (the steps keep their noise; the mean shows where they settle) and what
// the run cost against mlmc.ExpectedCost.
func train(k mlmc.Kind, cfg mlmc.Config, iters int) {
	x, xPrev := 0.0, 0.0
	oracle := &squaredMean{x: &x, xPrev: &xPrev, rng: rand.New(rand.NewPCG(1, 2))}
	est, err := mlmc.New[[]float64](k, cfg, mlmc.Float64Ops{Dim: 1}, oracle)
	if err != nil {
		fmt.Println(err)
		return
	}
	v := make([]float64, 1)
	var tail float64 // sum of x over the second half
	for t := range iters {
		if _, err := est.Estimate(t, v); err != nil {
			fmt.Println(err)
			return
		}
		xPrev = x // VR evaluates the next correction at x_t as well
		x -= 0.05 * v[0]
		if t >= iters/2 {
			tail += x
		}
	}
	samples, evals, _ := mlmc.ExpectedCost(k, cfg, mlmc.Unbounded)
	tot := est.Totals()
	fmt.Printf("%s: mean x over iterations %d..%d = %.2f (minimiser 1)\n", est.Name(), iters/2, iters, tail/float64(iters-iters/2))
	fmt.Printf("samples per iteration %.1f (expected %.1f), evaluations %.2f (expected %.2f)\n",
		float64(tot.Samples)/float64(iters), samples, float64(tot.Evals)/float64(iters), evals)
}

// RT-MLMC draws one level per iteration, from 1..L with probability
// proportional to 2^(-(b+c)l/2), and returns H^l divided by that
// probability: an unbiased estimate of grad F^L at the expected cost of a
// few small batches (8 samples per iteration here, where L-SGD at L = 8
// would draw 256).
func ExampleNew() {
	train(mlmc.Kind{Method: mlmc.RTMLMC}, mlmc.Config{MinLevel: 1, MaxLevel: 8, Seed: 3}, 10000)
	// Output:
	// rtmlmc: mean x over iterations 5000..10000 = 1.02 (minimiser 1)
	// samples per iteration 7.9 (expected 8.0), evaluations 1.00 (expected 1.00)
}

// VR RT-MLMC takes a fresh RT-MLMC estimate every QE iterations and in
// between corrects the previous estimate by the change of the gradient from
// x_{t-1} to x_t on the same draws, which the oracle evaluates at both
// points (hence two evaluations per draw).
func ExampleNew_varianceReduced() {
	train(mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, mlmc.Config{MinLevel: 1, MaxLevel: 8, D1: 4, D2: 1, QE: 5, Seed: 3}, 10000)
	// Output:
	// vr-rtmlmc: mean x over iterations 5000..10000 = 1.02 (minimiser 1)
	// samples per iteration 12.7 (expected 12.9), evaluations 2.40 (expected 2.40)
}

// ExpectedCost is the cost model a run's length in samples is planned with:
// here SimCLR's estimators at L = 9 (batches of up to 512 images) on a data
// set that serves levels up to 12.
func ExampleExpectedCost() {
	cfg := mlmc.Config{MinLevel: 1, MaxLevel: 9}
	for _, name := range []string{"lsgd", "vmlmc", "rtmlmc", "rrmlmc", "vr-rtmlmc"} {
		k, err := mlmc.ParseKind(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		samples, evals, err := mlmc.ExpectedCost(k, cfg, 12)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-9s %6.1f images, %5.1f oracle evaluations per iteration\n", name, samples, evals)
	}
	// Output:
	// lsgd       512.0 images,   1.0 oracle evaluations per iteration
	// vmlmc     4608.0 images, 511.0 oracle evaluations per iteration
	// rtmlmc       9.0 images,   1.0 oracle evaluations per iteration
	// rrmlmc      22.0 images,   2.0 oracle evaluations per iteration
	// vr-rtmlmc    9.0 images,   1.9 oracle evaluations per iteration
}
