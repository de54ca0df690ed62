package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/simclr-go/simclr/cso"
	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// Sizes of the per-level diagnostic.
const (
	levelsMax       = 10   // levels 0..levelsMax
	levelsDraws     = 400  // queries per level for mlmc.MeasureLevels
	biasDraws       = 4000 // outer samples per level for the bias
	splitOuter      = 400  // outer samples of the variance split
	splitInner      = 4    // inner sets per outer sample
	refLevel        = 12   // the MLP's bias is measured against F^refLevel
	levelsSeed      = 5
	mlpRefRunBudget = 400_000
)

// levelRow is one level of the diagnostic beyond mlmc.LevelStat.
type levelRow struct {
	Level int `json:"level"`
	// Bias is F(x) - F^l(x) >= 0 (Jensen: F^l underestimates F), with its
	// standard error; for the MLP it is F^refLevel - F^l.
	Bias   float64 `json:"bias"`
	BiasSE float64 `json:"bias_se"`
	// Split is Var h^l's outer and inner parts.
	Split cso.Split `json:"var_h"`
}

// levelsReport is the --levels output of one data set.
type levelsReport struct {
	Dataset string  `json:"dataset"`
	At      string  `json:"at"`
	BiasRef string  `json:"bias_reference"`
	F       float64 `json:"F"`
	FSE     float64 `json:"F_se,omitempty"` // the MLP's estimate: its standard error over rows
	Gradnrm float64 `json:"grad_norm"`
	// RhoMax and RhoAbove1024 (linear only) are the largest relative
	// variance of the inner function over the rows and the number of rows
	// where it exceeds 2^10, the top level of the grid.
	RhoMax       float64            `json:"rho_max,omitempty"`
	RhoAbove1024 int                `json:"rows_rho_above_1024,omitempty"`
	Levels       *mlmc.LevelsReport `json:"levels"`
	Rows         []levelRow         `json:"rows"`
}

// levels measures, at the optimum (linear) or at the end of a reference
// L-SGD run (MLP), the mean, variance and cost of H^l at every level with
// mlmc.MeasureLevels, the bias F - F^l, and the outer and inner parts of
// Var h^l.
func (t *task) levels() (*levelsReport, error) {
	rep := &levelsReport{Dataset: t.ds.Name}
	var x []float64
	var err error
	ex := t.exact
	if ex != nil {
		x, _, err = ex.minimise()
		if err != nil {
			return nil, err
		}
		rep.At = "x*, the optimum of the closed form"
		rep.BiasRef = "F from the closed form, row by row"
		rep.F = ex.value(x)
		g := make([]float64, len(x))
		ex.grad(x, g)
		rep.Gradnrm = math.Sqrt(mlmc.Float64Ops{}.Dot(g, g))
		for i := range t.data.Y {
			rho := ex.rowRho(x, i)
			rep.RhoMax = math.Max(rep.RhoMax, rho)
			if rho > 1024 {
				rep.RhoAbove1024++
			}
		}
	} else {
		ref := method(mlmc.Kind{Method: mlmc.LSGD}, 4, 1e-2, 0)
		tr, err := experiment.Trial(t.problem(oracleMaxLevel), ref, 1, mlpRefRunBudget)
		if err != nil {
			return nil, err
		}
		x = tr.Final
		rep.At = fmt.Sprintf("the end of an L-SGD run (L = %d, step %g, %d samples, seed 1)", ref.Config.MaxLevel, ref.Step, mlpRefRunBudget)
		rep.BiasRef = fmt.Sprintf("F^%d on the same draws", refLevel)
		rep.F, rep.FSE = t.obj.Value(x)
	}
	p := newSinkhorn(t.data, t.model)
	rep.Levels, err = experiment.MeasureLevels(t.problem(levelsMax), x, levelsSeed,
		mlmc.LevelsConfig{MinLevel: 0, MaxLevel: levelsMax, Draws: levelsDraws, B: 2, C: 1, Seed: levelsSeed})
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(levelsSeed, 0xb1a5))
	for l := 0; l <= levelsMax; l++ {
		row := levelRow{Level: l}
		row.Bias, row.BiasSE = t.bias(p, ex, x, l, r)
		row.Split, err = cso.VarianceSplit[int, []float64](p, x, l, splitOuter, splitInner, r)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

// bias estimates F(x) - F^l(x) from biasDraws outer samples: with the closed
// form, the mean of F_xi(x) - plug-in_l(xi); otherwise the mean of the
// plug-in over 2^refLevel draws less the plug-in over the first 2^l of
// them (the same draws, so that the outer noise cancels).
func (t *task) bias(p *sinkhorn, ex *exactLinear, x []float64, l int, r *rand.Rand) (float64, float64) {
	n := biasDraws
	top := l
	if ex == nil {
		top = refLevel
		n = biasDraws / 10
	}
	zs := make([][]float64, 1<<top)
	var sum, sum2 float64
	for range n {
		i := p.DrawOuter(r)
		for j := range zs {
			zs[j] = p.DrawInner(r, i, zs[j])
		}
		var d float64
		if ex != nil {
			d = ex.rowValue(x, i) - p.PlugIn(x, i, zs, 0, nil)
		} else {
			d = p.PlugIn(x, i, zs, 0, nil) - p.PlugIn(x, i, zs[:1<<l], 0, nil)
		}
		sum += d
		sum2 += d * d
	}
	mean := sum / float64(n)
	return mean, math.Sqrt(math.Max(sum2/float64(n)-mean*mean, 0) / float64(n-1))
}

func (r *levelsReport) print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s: per-level diagnostic at %s (F = %.8g", r.Dataset, r.At, r.F)
	if r.FSE > 0 {
		fmt.Fprintf(w, " ± %.2g, the fixed-sample estimate", r.FSE)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "Y = h^0 at level 0, H^l above; bias against %s; Var h^l split over %d rows x %d inner sets\n",
		r.BiasRef, splitOuter, splitInner)
	head := fmt.Sprintf(" %12s %10s %11s %11s %7s", "bias F-F^l", "bias SE", "Var h outer", "Var h inner", "inner%")
	experiment.WriteLevels(w, r.Levels, head, func(i int) string {
		row := r.Rows[i]
		inner := 100 * row.Split.Inner / row.Split.Total
		return fmt.Sprintf(" %12.4g %10.2g %11.4g %11.4g %6.1f%%", row.Bias, row.BiasSE, row.Split.Outer, row.Split.Inner, inner)
	})
	if r.RhoMax > 0 {
		fmt.Fprintf(w, "relative variance of exp(l/lambda) given the row: largest %.3g; above 2^10 in %d rows\n", r.RhoMax, r.RhoAbove1024)
	}
}
