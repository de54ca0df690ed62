package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/simclr-go/simclr/cso"
	"github.com/simclr-go/simclr/mlmc"
)

// gaps are the relative objective gaps (F - F*)/(F(x0) - F*) at which
// samples are counted.
var gaps = []float64{0.01, 0.003, 0.001}

// oracleMaxLevel bounds the levels RU-MLMC and RR-MLMC may draw: 2^20 inner
// draws, drawn with probability about 2^-30 at b = 2, c = 1.
const oracleMaxLevel = 20

// methodSpec is one of the ten estimators compared.
type methodSpec struct {
	Label     string // "VR RT-MLMC"
	Estimator string // "vr-rtmlmc"
}

var methodSpecs = []methodSpec{
	{"L-SGD", "lsgd"}, {"V-MLMC", "vmlmc"}, {"RT-MLMC", "rtmlmc"}, {"RU-MLMC", "rumlmc"}, {"RR-MLMC", "rrmlmc"},
	{"VR L-SGD", "vr-lsgd"}, {"VR V-MLMC", "vr-vmlmc"}, {"VR RT-MLMC", "vr-rtmlmc"}, {"VR RU-MLMC", "vr-rumlmc"}, {"VR RR-MLMC", "vr-rrmlmc"},
}

// setting is one point of the tuning grid of a method.
type setting struct {
	Method    string  `json:"-"`
	Estimator string  `json:"-"`
	L         int     `json:"L"` // -1: RU and RR, which have no top level
	Step      float64 `json:"step"`
	D1        int     `json:"d1,omitempty"` // VR: fresh draws every Q_E iterations
}

// unbounded says the method draws levels from a law on 0..infinity.
func unbounded(est string) bool {
	k, _ := mlmc.ParseKind(est)
	return k.Method == mlmc.RUMLMC || k.Method == mlmc.RRMLMC
}

// config is the estimator configuration of a setting (docs/definitions.md,
// section 9): levels from 0; V-MLMC with n_l = 2^(L-l) (b = c = 1, the
// default N = 2^L); RT, RU and RR with the antithetic rates b = 2, c = 1,
// so q_l is proportional to 2^(-3l/2); VR with the setting's D1, D2 = 1 and
// Q_E = 10.
func (s setting) config(seed uint64) mlmc.Config {
	cfg := mlmc.Config{MinLevel: 0, MaxLevel: max(s.L, 0), Seed: seed, D1: max(s.D1, 1)}
	if k, _ := mlmc.ParseKind(s.Estimator); k.Method == mlmc.RTMLMC || k.Method == mlmc.RUMLMC || k.Method == mlmc.RRMLMC {
		cfg.B, cfg.C = 2, 1
	}
	return cfg
}

// task is one data set's problem: its data, predictor, start, objective,
// optimum and sample budget.
type task struct {
	ds        dataset
	data      *Data
	model     predictor
	x0        []float64
	obj       objective
	f0, fStar float64
	budget    int64
	grid      []int64
}

// sampleGrid is about growth^k generated samples up to budget, and budget.
func sampleGrid(budget int64, growth float64) []int64 {
	var g []int64
	for s := 1.0; s < float64(budget); s *= growth {
		if n := int64(s); len(g) == 0 || n > g[len(g)-1] {
			g = append(g, n)
		}
	}
	return append(g, budget)
}

// trace is one run's outcome.
type trace struct {
	// Curve[k] is F at the last iterate whose cumulative generated
	// samples are <= grid[k] (+Inf outside the domain or after divergence).
	Curve []float64
	// First[g] is the generated samples at which the gap first fell to
	// gaps[g] (-1: never within the budget). With a cheap objective every
	// iterate is checked during the run; otherwise fillFirst checks the
	// grid points once F* is known.
	First []int64
	// Diverged says the iterate left the finite numbers.
	Diverged bool
}

// value is F(x), +Inf where x is not finite.
func (t *task) value(x []float64) float64 {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return math.Inf(1)
		}
	}
	if f := t.obj.value(x); !math.IsNaN(f) {
		return f
	}
	return math.Inf(1)
}

// gap is the relative gap (F - F*)/(F(x0) - F*) of an objective value.
func (t *task) gap(f float64) float64 { return (f - t.fStar) / (t.f0 - t.fStar) }

// fillFirst sets the first passages of traces from their curves (at grid
// resolution), for an objective too costly to evaluate at every iterate.
func (t *task) fillFirst(trs []trace) {
	for _, tr := range trs {
		for g, target := range gaps {
			tr.First[g] = -1
			for i, f := range tr.Curve {
				if t.gap(f) <= target {
					tr.First[g] = t.grid[i]
					break
				}
			}
		}
	}
}

// run optimises with setting s from x0 by x <- x - step * v_t until the
// run has generated its budget of inner samples.
func (t *task) run(s setting, seed uint64) (trace, error) {
	p := newSinkhorn(t.data, t.model)
	o, err := cso.New[int, []float64](p, cso.Config{MaxLevel: oracleMaxLevel, Seed: seed})
	if err != nil {
		return trace{}, err
	}
	dim := p.Dim()
	kind, err := mlmc.ParseKind(s.Estimator)
	if err != nil {
		return trace{}, fmt.Errorf("%s: %w", s.Method, err)
	}
	e, err := mlmc.New(kind, s.config(seed), mlmc.Float64Ops{Dim: dim}, o)
	if err != nil {
		return trace{}, fmt.Errorf("%s: %w", s.Method, err)
	}
	x, prev := slices.Clone(t.x0), slices.Clone(t.x0)
	o.SetPoints(x, prev)
	v := make([]float64, dim)
	tr := trace{Curve: make([]float64, len(t.grid)), First: make([]int64, len(gaps))}
	for g := range tr.First {
		tr.First[g] = -1
	}
	lastF := t.value(x) // F at the current iterate x, NaN when not yet computed
	k := 0
	var samples int64
	for it := 0; ; it++ {
		step, err := e.Estimate(it, v)
		if err != nil {
			return trace{}, fmt.Errorf("%s: %w", s.Method, err)
		}
		samples += step.Samples
		// Grid points before this iterate's samples belong to the last one.
		for ; k < len(t.grid) && t.grid[k] < samples; k++ {
			if math.IsNaN(lastF) {
				lastF = t.value(x)
			}
			tr.Curve[k] = lastF
		}
		if samples > t.budget {
			break
		}
		copy(prev, x)
		for i := range x {
			x[i] -= s.Step * v[i]
		}
		lastF = math.NaN()
		if t.obj.cheap() {
			lastF = t.value(x)
			for g, target := range gaps {
				if tr.First[g] < 0 && t.gap(lastF) <= target {
					tr.First[g] = samples
				}
			}
		}
		if bad := slices.ContainsFunc(x, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }); bad {
			tr.Diverged = true
			for ; k < len(t.grid); k++ {
				tr.Curve[k] = math.Inf(1)
			}
			break
		}
	}
	for ; k < len(t.grid); k++ {
		if math.IsNaN(lastF) {
			lastF = t.value(x)
		}
		tr.Curve[k] = lastF
	}
	return tr, nil
}
