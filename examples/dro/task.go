package main

import (
	"fmt"
	"github.com/simclr-go/simclr/mlmc/sgd"
	"math"
	"slices"

	"github.com/simclr-go/simclr/cso"
	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// Defaults per kind of data set (docs/definitions.md, section 9).
const (
	// convexBudget and mlpBudget are the generated inner samples per run.
	convexBudget = 400_000
	mlpBudget    = 40_000
	// convexGrowth and mlpGrowth space the points at which a run is scored
	// (the MLP's objective is costly: a coarser grid).
	convexGrowth = 1.1
	mlpGrowth    = 1.25
	// mlpInitSeed seeds the MLP's common starting point.
	mlpInitSeed = 7
	// mlpEvalRows and mlpEvalLevel size the MLP's fixed evaluation sample:
	// rows with 2^level inner draws each.
	mlpEvalRows  = 400
	mlpEvalLevel = 4
	mlpEvalSeed  = 99
	// oracleMaxLevel bounds the levels RU-MLMC and RR-MLMC may draw: 2^20
	// inner draws, drawn with probability about 2^-30 at b = 2, c = 1.
	oracleMaxLevel = 20
)

// The tuning grid (docs/definitions.md, section 9): the paper's step sizes
// 1e-1..1e-4 and top levels 0..10, widened where the paper's grid put a
// chosen value at its edge (steps 0.3, 5e-5 and 1e-5; levels 11 and 12);
// VRFresh is the VR methods' grid of D1, the draws averaged into the fresh
// estimate every Q_E = 10 iterations: {1, 10} put every VR method's choice
// at 10, its largest, on every data set, so it runs to 100, and to 300
// and 1000 (widenings) for the methods whose choice still sat at 100.
var (
	Steps   = []float64{0.3, 1e-1, 1e-2, 1e-3, 5e-4, 1e-4, 5e-5, 1e-5}
	Levels  = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	VRFresh = []int{1, 10, 30, 100}
)

// tuningSeeds are the seeds of the grid search; reported trials use seeds
// 1..trials, never these.
var tuningSeeds = []uint64{1001, 1002, 1003}

// gaps are the relative objective gaps (F - F*)/(F(x0) - F*) at which
// samples are counted.
var gaps = []float64{0.01, 0.003, 0.001}

// method is the estimator k with top level l, step and D1 (VR) as
// docs/definitions.md, section 9 configures it: levels from 0; V-MLMC with
// n_l = 2^(L-l) (b = c = 1, the default N = 2^L); RT, RU and RR with the
// antithetic rates b = 2, c = 1, so q_l is proportional to 2^(-3l/2); VR
// with D2 = 1 and Q_E = 10.
func method(k mlmc.Kind, l int, step float64, d1 int) experiment.Method {
	return droGrid().Method(k, l, step, 0, d1)
}

// droGrid is the tuning grid a task starts with: every setting of the
// estimators is L x step (x D1 for VR), without L for RU and RR.
func droGrid() experiment.Grid {
	return experiment.Grid{Levels: slices.Clone(Levels), Steps: slices.Clone(Steps), D1: slices.Clone(VRFresh), B: 2}
}

// widenings extend one data set's grid for one method, at one budget (0:
// any), where the grid above still put a chosen value at its edge
// (housing: RR-MLMC's step 1e-5 and VR RT-MLMC's L = 12; at 2 x 10^6
// samples RT-MLMC's step 1e-5; D1 = 100 for the VR methods listed). The
// inner samples are generated, not rows of the data, so any level up to
// oracleMaxLevel can be drawn.
var widenings = []struct {
	dataset string
	budget  int64
	kind    mlmc.Kind
	levels  []int     // added top levels, with every step of Steps
	steps   []float64 // added steps, with every level
	d1      []int     // added D1 (VR), with every step and level
	// d1Levels, when set, are the only levels at which d1 is added: a
	// fresh estimate costs D1 x 2^L samples or more, so large D1 at a high
	// L spends the run's budget, and far more compute, on one estimate.
	d1Levels []int
}{
	{"housing", 0, mlmc.Kind{Method: mlmc.RRMLMC}, nil, []float64{3e-6, 1e-6}, nil, nil},
	{"housing", 0, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, []int{13, 14}, nil, nil, nil},
	{"housing", 2_000_000, mlmc.Kind{Method: mlmc.RTMLMC}, nil, []float64{3e-6, 1e-6}, nil, nil},
	{"housing", 0, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, nil, nil, widerD1, nil},
	{"housing", 0, mlmc.Kind{Method: mlmc.RUMLMC, VR: true}, nil, nil, widerD1, nil},
	{"mpg", 0, mlmc.Kind{Method: mlmc.LSGD, VR: true}, nil, nil, widerD1, nil},
	{"mpg", 0, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, nil, nil, widerD1, nil},
	{"mpg", 0, mlmc.Kind{Method: mlmc.RUMLMC, VR: true}, nil, nil, widestD1, nil},
	{"mpg", 0, mlmc.Kind{Method: mlmc.RRMLMC, VR: true}, nil, nil, widestD1, nil},
	{"mg", 0, mlmc.Kind{Method: mlmc.LSGD, VR: true}, nil, nil, widerD1, nil},
	{"mg", 0, mlmc.Kind{Method: mlmc.VMLMC, VR: true}, nil, nil, widerD1, nil},
	{"mg", 0, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, nil, nil, widerD1, nil},
	{"mg", 0, mlmc.Kind{Method: mlmc.RUMLMC, VR: true}, nil, nil, widerD1, nil},
	{"mg", 0, mlmc.Kind{Method: mlmc.RRMLMC, VR: true}, nil, nil, widerD1, nil},
	// mg: four choices then sat at D1 1000, all at L = 0, as is every
	// choice of every method on mg; VR L-SGD's and VR V-MLMC's draws cost
	// 2^L and more, RT-MLMC's a bounded mean at every L.
	{"mg", 0, mlmc.Kind{Method: mlmc.LSGD, VR: true}, nil, nil, []int{3000, 10000}, lowLevels},
	{"mg", 0, mlmc.Kind{Method: mlmc.VMLMC, VR: true}, nil, nil, []int{3000, 10000}, lowLevels},
	{"mg", 0, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, nil, nil, []int{3000, 10000}, nil},
	{"mg", 0, mlmc.Kind{Method: mlmc.RUMLMC, VR: true}, nil, nil, []int{3000, 10000}, nil},
	{"bike", 0, mlmc.Kind{Method: mlmc.RRMLMC, VR: true}, nil, nil, widerD1, nil},
}

// widerD1 is D1 beyond VRFresh, for the VR methods whose choice sat at its
// largest, 100; widestD1 goes on where a choice then sat at 1000.
// lowLevels are the levels at which mg's largest D1 are tried.
var (
	widerD1   = []int{300, 1000}
	widestD1  = []int{300, 1000, 3000, 10000}
	lowLevels = []int{0, 1, 2}
)

// widened is the settings that widenings add to the task's grid for the
// estimators ks, on its data set at its budget: per method, every setting
// of the grid with the added levels, steps and D1 of all its widenings
// together (so an added level meets an added D1) that the grid lacks, less
// an added D1 at a level its widening leaves out (d1Levels).
func (t *task) widened(ks []mlmc.Kind) []experiment.Method {
	type axes struct {
		levels []int
		steps  []float64
		d1     []int
		// d1Levels: the levels an added D1 is limited to.
		d1Levels map[int][]int
	}
	var order []mlmc.Kind
	added := map[mlmc.Kind]*axes{}
	for _, w := range widenings {
		if w.dataset != t.ds.Name || w.budget != 0 && w.budget != t.budget || !slices.Contains(ks, w.kind) {
			continue
		}
		a, ok := added[w.kind]
		if !ok {
			a = &axes{slices.Clone(t.grid.Levels), slices.Clone(t.grid.Steps), slices.Clone(t.grid.D1), map[int][]int{}}
			added[w.kind] = a
			order = append(order, w.kind)
		}
		a.levels, a.steps, a.d1 = append(a.levels, w.levels...), append(a.steps, w.steps...), append(a.d1, w.d1...)
		if w.d1Levels != nil {
			for _, d1 := range w.d1 {
				a.d1Levels[d1] = w.d1Levels
			}
		}
	}
	var out []experiment.Method
	for _, k := range order {
		g := t.grid
		g.Levels, g.Steps, g.D1 = added[k].levels, added[k].steps, added[k].d1
		for _, m := range g.Methods([]mlmc.Kind{k}) {
			if ls, ok := added[k].d1Levels[m.Config.D1]; ok && !k.Method.Unbounded() && !slices.Contains(ls, m.Config.MaxLevel) {
				continue
			}
			if !slices.Contains(t.grid.Levels, m.Config.MaxLevel) || !slices.Contains(t.grid.Steps, m.Step) || k.VR && !slices.Contains(t.grid.D1, m.Config.D1) {
				out = append(out, m)
			}
		}
	}
	return out
}

// task is one data set's problem: its data, predictor, start, objective,
// optimum and sample budget.
type task struct {
	ds    dataset
	data  *Data
	model predictor
	x0    []float64
	obj   objective
	// exact is the closed form of the linear predictor's objective; nil for
	// the MLP, whose objective is an estimate.
	exact  *exactLinear
	f0     float64
	fStar  float64 // +Inf: the lowest value any run reaches
	budget int64
	growth float64
	// grid is the tuning grid (droGrid), before the widenings.
	grid experiment.Grid
}

// newTask loads a data set and sets up its problem.
func newTask(ds dataset, o options) (*task, error) {
	data, err := loadData(ds, o.dataDir)
	if err != nil {
		return nil, err
	}
	if o.scaleTargets {
		lo, hi := data.scaleLabels()
		ds.Name += "-scaled-targets"
		data.Name = ds.Name
		ds.About += "; " + fmt.Sprintf(scaledTargetsNote, lo, hi)
	} else if ds.user {
		ds.About += "; " + targetsNote
	}
	t := &task{ds: ds, data: data, budget: convexBudget, growth: convexGrowth, grid: droGrid()}
	if ds.Convex {
		t.model = linear{data.Dim()}
		t.exact = newExactLinear(data)
		t.obj = t.exact.objective()
		t.x0 = make([]float64, t.model.dim())
		_, t.fStar, err = t.exact.minimise()
		if err != nil {
			return nil, fmt.Errorf("data set %s: the optimum: %w", ds.Name, err)
		}
	} else {
		m := mlp{d: data.Dim(), h: o.hidden}
		t.model = m
		t.obj = newCRNObjective(data, m, mlpEvalRows, mlpEvalLevel, mlpEvalSeed).objective()
		t.x0 = m.init(mlpInitSeed)
		// F* is not known: the harness takes the smallest value the tuning
		// runs reach, then the smallest any run reaches (docs/definitions.md,
		// section 9).
		t.fStar = math.Inf(1)
		t.budget, t.growth = mlpBudget, mlpGrowth
	}
	t.f0, _ = t.obj.Value(t.x0)
	if o.budget > 0 {
		t.budget = o.budget
	}
	return t, nil
}

// problem is the task for the harness: a cso oracle per seed, serving
// levels up to oracleMax.
func (t *task) problem(oracleMax int) *experiment.Problem {
	return &experiment.Problem{
		Name: t.ds.Name, About: t.ds.About + "; " + t.model.name(),
		Problem: sgd.Problem{
			NewOracle: func(seed uint64) (experiment.Instance, error) {
				o, err := cso.New[int, []float64](newSinkhorn(t.data, t.model), cso.Config{MaxLevel: oracleMax, Seed: seed})
				if err != nil {
					return experiment.Instance{}, err
				}
				return experiment.Instance{Oracle: o, At: o.SetPoints}, nil
			},
			X0:        t.x0,
			Objective: t.obj.Value,
		},
		ObjectiveAbout: t.obj.About,
		FStar:          experiment.Optimum{Value: t.fStar, Reached: math.IsInf(t.fStar, 1)},
		EveryIterate:   t.exact != nil,
		CostName:       "generated inner samples",
	}
}

// protocol is the paper's protocol with trials reported trials, seeds
// firstSeed, firstSeed+1, ...
func (t *task) protocol(trials int, firstSeed uint64) experiment.Protocol {
	growth := t.growth
	return experiment.Protocol{Targets: gaps, Budget: t.budget, TuningSeeds: tuningSeeds, Trials: trials, FirstSeed: firstSeed,
		Points: func(b int64) []int64 { return experiment.GeometricGrid(b, growth) }}
}
