// Command ownoracle brings a problem of one's own to the library, in one
// file: a conditional stochastic optimisation (CSO) problem with an exact
// optimum, its per-level diagnostic, a tuned run of the estimators, and the
// auto method (docs/own-oracle.md walks through it).
//
// The problem is regression with noisy features: rows (a_i, b_i),
// i = 1..n, whose features are seen only through draws a_i + eta, eta ~
// N(0, sigma^2 I), and
//
//	F(x) = (1/n) sum_i ( E_eta[(a_i + eta).x] - b_i )^2 / 2.
//
// The outer sample is a row, the inner ones are draws of eta. The plug-in
// estimate that replaces the inner expectation by the mean of 2^l draws is
// biased: its expectation is F(x) + sigma^2 |x|^2 / 2^(l+1), a ridge
// penalty that shrinks the minimiser, falling by half a level. Package cso
// makes it a multilevel oracle. F itself is the least-squares objective,
// so F and its minimiser x* are exact and the gap
// (F(x) - F*)/(F(x0) - F*) of every iterate is known. At x0 = 0 every
// inner draw gives the same value -b_i: no bias can be seen there.
//
// Usage:
//
//	go run ./examples/ownoracle [--budget 400000] [--trials 10] [--gap 0.001]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"github.com/simclr-go/simclr/cso"
	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// regression is the problem: package cso's Problem with a row index as
// the outer sample and a feature noise vector as the inner one.
type regression struct {
	rows    [][]float64 // a_i
	targets []float64   // b_i
	sigma   float64     // the feature noise's standard deviation
}

// newRegression makes n rows of d standard normal features with targets
// a_i.w + 0.3 N(0, 1), w = (1, -1/2, 1/3, ...): a fixed data set for a
// seed, with feature noise sigma = 1.
func newRegression(n, d int, seed uint64) *regression {
	r := rand.New(rand.NewPCG(seed, 1))
	p := &regression{sigma: 1}
	for range n {
		a := make([]float64, d)
		b := 0.0
		for k := range a {
			a[k] = r.NormFloat64()
			b += a[k] * float64(1-2*(k%2)) / float64(k+1)
		}
		p.rows = append(p.rows, a)
		p.targets = append(p.targets, b+0.3*r.NormFloat64())
	}
	return p
}

func (p *regression) Dim() int                   { return len(p.rows[0]) }
func (p *regression) DrawOuter(r *rand.Rand) int { return r.IntN(len(p.rows)) }

// DrawInner draws eta into reuse when it has the room.
func (p *regression) DrawInner(r *rand.Rand, _ int, reuse []float64) []float64 {
	if len(reuse) != p.Dim() {
		reuse = make([]float64, p.Dim())
	}
	for k := range reuse {
		reuse[k] = p.sigma * r.NormFloat64()
	}
	return reuse
}

// PlugIn is (m.x - b_i)^2 / 2 with m = a_i + mean_j eta_j, and adds alpha
// times its gradient, (m.x - b_i) m, into grad.
func (p *regression) PlugIn(x []float64, i int, etas [][]float64, alpha float64, grad []float64) float64 {
	a := p.rows[i]
	m := make([]float64, len(a))
	for _, e := range etas {
		for k := range m {
			m[k] += e[k]
		}
	}
	r := -p.targets[i]
	for k := range m {
		m[k] = a[k] + m[k]/float64(len(etas))
		r += m[k] * x[k]
	}
	if grad != nil {
		for k := range m {
			grad[k] += alpha * r * m[k]
		}
	}
	return r * r / 2
}

// Objective is F(x) = (1/n) sum_i (a_i.x - b_i)^2 / 2, exactly.
func (p *regression) Objective(x []float64) float64 {
	f := 0.0
	for i, a := range p.rows {
		r := -p.targets[i]
		for k := range a {
			r += a[k] * x[k]
		}
		f += r * r / 2
	}
	return f / float64(len(p.rows))
}

// Optimum is x*, the least-squares solution of the normal equations
// A'A x = A'b (Gaussian elimination with partial pivoting).
func (p *regression) Optimum() []float64 {
	d := p.Dim()
	m := make([][]float64, d) // [A'A | A'b]
	for j := range m {
		m[j] = make([]float64, d+1)
	}
	for i, a := range p.rows {
		for j := range d {
			for k := range d {
				m[j][k] += a[j] * a[k]
			}
			m[j][d] += a[j] * p.targets[i]
		}
	}
	for c := range d {
		piv := c
		for r := c + 1; r < d; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		m[c], m[piv] = m[piv], m[c]
		for r := c + 1; r < d; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= d; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	x := make([]float64, d)
	for c := d - 1; c >= 0; c-- {
		s := m[c][d]
		for k := c + 1; k < d; k++ {
			s -= m[c][k] * x[k]
		}
		x[c] = s / m[c][c]
	}
	return x
}

// maxLevel is the top level the oracle serves: 2^12 inner draws.
const maxLevel = 12

// oracle is the problem's multilevel oracle, seeded, evaluated at x and
// prev (x_t and x_(t-1)), which the caller updates in place.
func (p *regression) oracle(seed uint64) (*cso.Oracle[int, []float64], error) {
	return cso.New[int, []float64](p, cso.Config{MaxLevel: maxLevel, Seed: seed})
}

// harnessProblem is the problem as package experiment runs it.
func (p *regression) harnessProblem(everyIterate bool) *experiment.Problem {
	xStar := p.Optimum()
	return &experiment.Problem{
		Problem:        p.sgdProblem(),
		Name:           "regression",
		About:          fmt.Sprintf("regression with noisy features: %d rows, %d features, feature noise sigma %g", len(p.rows), p.Dim(), p.sigma),
		ObjectiveAbout: "exact: the closed form",
		FStar:          experiment.Optimum{Value: p.Objective(xStar)},
		EveryIterate:   everyIterate,
	}
}

// sgdProblem is the problem as the driver (package mlmc/sgd) and auto run
// it: the starting point, the oracle of a seed and the objective.
func (p *regression) sgdProblem() sgd.Problem {
	return sgd.Problem{
		X0: make([]float64, p.Dim()),
		NewOracle: func(seed uint64) (sgd.Instance, error) {
			o, err := p.oracle(seed)
			if err != nil {
				return sgd.Instance{}, err
			}
			return sgd.Instance{Oracle: o, At: o.SetPoints}, nil
		},
		Objective: func(x []float64) (float64, float64) { return p.Objective(x), 0 },
	}
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ownoracle:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("ownoracle", flag.ContinueOnError)
	fs.SetOutput(w)
	budget := fs.Int64("budget", 200_000, "inner samples per run")
	trials := fs.Int("trials", 10, "reported trials of the tuned estimators")
	gap := fs.Float64("gap", 0.01, "the relative gap auto aims at")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *budget < 1000 || *trials < 1 || !(*gap > 0 && *gap < 1) {
		return fmt.Errorf("--budget %d, --trials %d, --gap %g: want a budget of at least 1000 samples, one trial or more and a gap in (0, 1)",
			*budget, *trials, *gap)
	}
	p := newRegression(200, 4, 1)
	hp := p.harnessProblem(false)
	f0, fStar := p.Objective(hp.X0), hp.FStar.Value
	fmt.Fprintf(w, "%s\nF(x0) = %.6g, F* = %.6g at x* = %.4f\n", hp.About, f0, fStar, p.Optimum())

	// 1. The diagnostic at x0: is there a bias, how fast do the levels'
	// variances fall (b) against their cost (c), does MLMC pay off?
	rep, err := experiment.MeasureLevels(hp, hp.X0, 1, mlmc.LevelsConfig{MinLevel: 0, MaxLevel: 8, Draws: 200, B: 2, C: 1, Seed: 1})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nper-level diagnostic at x0:")
	experiment.WriteLevels(w, rep, "", nil)

	// At x0 = 0 every inner draw gives the same value, so the diagnostic
	// sees no bias there: measure again after a few dozen iterations of
	// L-SGD at level 0 (the estimators of package mlmc, run by hand).
	x, prev := make([]float64, p.Dim()), make([]float64, p.Dim())
	o, err := p.oracle(2)
	if err != nil {
		return err
	}
	o.SetPoints(x, prev)
	est, err := mlmc.New[[]float64](mlmc.Kind{Method: mlmc.LSGD}, mlmc.Config{MaxLevel: 0, Seed: 2}, mlmc.Float64Ops{Dim: p.Dim()}, o)
	if err != nil {
		return err
	}
	v := make([]float64, p.Dim())
	for t := range 50 {
		if _, err := est.Estimate(t, v); err != nil {
			return err
		}
		copy(prev, x)
		for k := range x {
			x[k] -= 0.05 * v[k]
		}
	}
	rep, err = experiment.MeasureLevels(hp, x, 1, mlmc.LevelsConfig{MinLevel: 0, MaxLevel: 8, Draws: 200, B: 2, C: 1, Seed: 1})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nper-level diagnostic after 50 iterations of L-SGD at level 0 (x = %.3f, gap %.3g):\n", x, (p.Objective(x)-fStar)/(f0-fStar))
	experiment.WriteLevels(w, rep, "", nil)

	// 2. A tuned run: a small grid of L-SGD and RT-MLMC settings scored on
	// the tuning seeds, the chosen ones run on the reported seeds.
	grid := experiment.Grid{Levels: []int{0, 2, 4, 6, 8, 10, 12}, Steps: []float64{0.00001, 0.00003, 0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1}, B: 2}
	methods := grid.Methods([]mlmc.Kind{{Method: mlmc.LSGD}, {Method: mlmc.RTMLMC}})
	pr := experiment.Protocol{Budget: *budget, Trials: *trials, Targets: []float64{0.01, 0.003, 0.001}, Workers: 1}
	tn, err := experiment.Tune(hp, pr, methods)
	if err != nil {
		return err
	}
	res, err := experiment.Report(hp, pr, tn)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\ntuned run:")
	experiment.WriteMarkdown(w, []experiment.Summary{res.Summary})

	// 3. auto: a pilot of at most 5% of the budget chooses the estimator,
	// L, the level law and the step.
	ap := p.sgdProblem()
	fmt.Fprintf(w, "\nauto, aiming at the gap %g within %d samples:\n", *gap, *budget)
	for seed := uint64(1); seed <= 3; seed++ {
		ar, err := auto.Run(&ap, auto.Settings{Target: auto.Target{Gap: *gap, Budget: *budget}, Seed: seed})
		if err != nil {
			return err
		}
		stages := ar.Record.Stages
		// The last plan run: a stage skipped because an earlier one's
		// estimate was already at its target has none.
		var last *auto.Plan
		for _, st := range stages {
			if len(st.Plans) > 0 {
				last = st.Plans[len(st.Plans)-1]
			}
		}
		if last == nil {
			return fmt.Errorf("auto seed %d: the record holds no plan", seed)
		}
		fmt.Fprintf(w, "seed %d: %d stages, last %s on levels %d..%d, step %.3g; gap %.3g (its own estimate %.3g) after %d samples (pilots %d); %s\n", seed,
			len(stages), last.Method, last.MinLevel, last.MaxLevel, stages[len(stages)-1].Step, (p.Objective(ar.X)-fStar)/(f0-fStar),
			float64(ar.Record.GapEstimate), ar.Samples, ar.Record.Pilot, ar.Record.Stopped)
	}
	return nil
}
