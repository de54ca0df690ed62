package experiment

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// TestWriteLevelsPrintsRatesAndPredictions: after the table, the fitted
// rates with their standard errors and levels (or why a rate is missing),
// the telescoping check, every estimator's prediction relative to L-SGD
// in samples and in time, and the verdict, on a report made by hand.
func TestWriteLevelsPrintsRatesAndPredictions(t *testing.T) {
	rep := &mlmc.LevelsReport{MinLevel: 1, MaxLevel: 3, Draws: 32, B: 2, C: 1,
		Levels: []mlmc.LevelStat{
			{Level: 1, MeanNorm: 1.5, Var: 4, Images: 2, Seconds: 1e-6},
			{Level: 2, Diff: true, MeanNorm: 0.25, Var: 0.5, Images: 4, Seconds: 2e-6},
			{Level: 3, Diff: true, MeanNorm: 0.125, Var: 0.125, Images: 8, Seconds: 4e-6},
		},
		Top:        mlmc.LevelStat{Level: 3, Var: 4.5, Images: 8, Seconds: 4e-6},
		FitB:       mlmc.RateFit{Rate: 2, SE: 0.05, From: 2, To: 3},
		FitCImages: mlmc.RateFit{Rate: 1, SE: math.NaN(), From: 1, To: 3},
		FitCTime:   mlmc.RateFit{Rate: math.NaN(), SE: math.NaN(), From: 1, To: 3, Note: "level 2: 0 is not positive"},
		Telescope:  mlmc.Telescope{DiffNorm: 0.01, NoiseNorm: 0.4, Z: []float64{0.5, -1.25}, Confidence: 0.999, Critical: 3.48, Pass: true},
		Estimators: []mlmc.Prediction{
			{Name: "lsgd", RelImages: 1, RelSeconds: 1},
			{Name: "rtmlmc", RelImages: 0.25, RelSeconds: 0.5},
		},
		Verdict: "MLMC can pay off: rtmlmc reaches L-SGD's variance at 0.5 of its cost (in wall time)",
	}
	var buf bytes.Buffer
	WriteLevels(&buf, rep, " extra", func(i int) string { return []string{" a", " b", " c"}[i] })
	want := []string{
		"level       |E Y|       Var Y      cost extra",
		"    1         1.5           4         2 a",
		"    2        0.25         0.5         4 b",
		"    3       0.125       0.125         8 c",
		"fitted rates (the estimators assume b = 2, c = 1): Var H^l ~ 2^(-b l) with b = 2 ± 0.05 (levels 2..3); cost ~ 2^(c l) with c = 1 (levels 1..3) in samples, none (level 2: 0 is not positive) in time",
		"telescoping check passes: |sum_l mean Y_l - mean h^3| = 0.01 against a noise level of 0.4; max |z| = 1.25 on 2 directions (critical 3.48 at 99.9%)",
		"predicted variance x cost per iteration relative to L-SGD at L = 3, in samples (in time): lsgd 1 (1); rtmlmc 0.25 (0.5)",
		"verdict: MLMC can pay off: rtmlmc reaches L-SGD's variance at 0.5 of its cost (in wall time)",
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got[i], want[i])
		}
	}

	// Untimed queries: the predictions in samples only; a failed check.
	rep.Top.Seconds = 0
	rep.Telescope.Pass = false
	buf.Reset()
	WriteLevels(&buf, rep, "", nil)
	for _, want := range []string{
		"level       |E Y|       Var Y      cost\n    1         1.5           4         2\n",
		"telescoping check FAILS",
		"relative to L-SGD at L = 3, in samples: lsgd 1; rtmlmc 0.25\n",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}
