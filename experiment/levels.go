package experiment

import (
	"fmt"
	"io"

	"github.com/simclr-go/simclr/mlmc"
)

// MeasureLevels is the per-level diagnostic of the problem's oracle at x
// (docs/definitions.md, section 4): the mean, variance and cost of H^l at
// every level of cfg, the fitted rates b and c, the telescoping check and
// each estimator's predicted variance x cost against L-SGD's, from an
// oracle made with seed and evaluated at x (previous point x too).
func MeasureLevels(p *Problem, x []float64, seed uint64, cfg mlmc.LevelsConfig) (*mlmc.LevelsReport, error) {
	inst, err := p.NewOracle(seed)
	if err != nil {
		return nil, fmt.Errorf("problem %s: oracle: %w", p.Name, err)
	}
	if inst.At != nil {
		inst.At(x, x)
	}
	rep, err := mlmc.MeasureLevels[[]float64](inst.Oracle, mlmc.Float64Ops{Dim: len(x)}, cfg)
	if err != nil {
		return nil, fmt.Errorf("problem %s: %w", p.Name, err)
	}
	return rep, nil
}

// WriteLevels prints a diagnostic as a table, one line per level, with
// the columns extra adds for the level (headers in extraHead), then the
// fitted rates and the predictions.
func WriteLevels(w io.Writer, rep *mlmc.LevelsReport, extraHead string, extra func(i int) string) {
	fmt.Fprintf(w, "%5s %11s %11s %9s%s\n", "level", "|E Y|", "Var Y", "cost", extraHead)
	for i, st := range rep.Levels {
		e := ""
		if extra != nil {
			e = extra(i)
		}
		fmt.Fprintf(w, "%5d %11.4g %11.4g %9.0f%s\n", st.Level, st.MeanNorm, st.Var, st.Images, e)
	}
}
