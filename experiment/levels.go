package experiment

import (
	"fmt"
	"io"
	"math"
	"strings"

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

// WriteLevels prints a diagnostic: a table, one line per level, with the
// columns extra adds for the level (headers in extraHead; both may be
// empty), then the fitted rates b and c, the telescoping check, each
// estimator's predicted variance x cost relative to L-SGD's (in samples,
// and in time where the queries were timed) and the verdict.
func WriteLevels(w io.Writer, rep *mlmc.LevelsReport, extraHead string, extra func(i int) string) {
	fmt.Fprintf(w, "%5s %11s %11s %9s%s\n", "level", "|E Y|", "Var Y", "cost", extraHead)
	for i, st := range rep.Levels {
		e := ""
		if extra != nil {
			e = extra(i)
		}
		fmt.Fprintf(w, "%5d %11.4g %11.4g %9.0f%s\n", st.Level, st.MeanNorm, st.Var, st.Images, e)
	}
	fmt.Fprintf(w, "fitted rates (the estimators assume b = %g, c = %g): Var H^l ~ 2^(-b l) with b = %s; cost ~ 2^(c l) with c = %s in samples, %s in time\n",
		rep.B, rep.C, rateText(rep.FitB), rateText(rep.FitCImages), rateText(rep.FitCTime))
	t := rep.Telescope
	maxZ := 0.0
	for _, z := range t.Z {
		maxZ = math.Max(maxZ, math.Abs(z))
	}
	outcome := "passes"
	if !t.Pass {
		outcome = "FAILS"
	}
	fmt.Fprintf(w, "telescoping check %s: |sum_l mean Y_l - mean h^%d| = %.4g against a noise level of %.4g; max |z| = %.3g on %d directions (critical %.3g at %g%%)\n",
		outcome, rep.MaxLevel, t.DiffNorm, t.NoiseNorm, maxZ, len(t.Z), t.Critical, 100*t.Confidence)
	timed := rep.Top.Seconds > 0
	unit := "in samples"
	if timed {
		unit = "in samples (in time)"
	}
	var preds []string
	for _, p := range rep.Estimators {
		s := fmt.Sprintf("%s %.3g", p.Name, p.RelImages)
		if timed {
			s += fmt.Sprintf(" (%.3g)", p.RelSeconds)
		}
		preds = append(preds, s)
	}
	fmt.Fprintf(w, "predicted variance x cost per iteration relative to L-SGD at L = %d, %s: %s\n", rep.MaxLevel, unit, strings.Join(preds, "; "))
	fmt.Fprintf(w, "verdict: %s\n", rep.Verdict)
}

// rateText is a fitted rate as the diagnostic prints it: "2.03 ± 0.05
// (levels 2..8)", or why there is none.
func rateText(f mlmc.RateFit) string {
	if math.IsNaN(f.Rate) {
		return "none (" + f.Note + ")"
	}
	s := fmt.Sprintf("%.3g", f.Rate)
	if !math.IsNaN(f.SE) {
		s += fmt.Sprintf(" ± %.2g", f.SE)
	}
	return s + fmt.Sprintf(" (levels %d..%d)", f.From, f.To)
}
