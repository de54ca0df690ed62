package train

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// The start-up line's expected images and oracle evaluations per iteration
// must be what the estimator spends: the same estimator, built from the
// run's configuration over a counting oracle that serves the same levels,
// is run for many iterations and its mean cost must lie within 4 standard
// errors of the printed figures (a false alarm has probability 6e-5 per
// figure; the deterministic plans must match exactly).
func TestStartupLinePrintsExpectedCost(t *testing.T) {
	splits := syntheticSplits(64, 8, 16, 2)
	printed := regexp.MustCompile(`expected per iteration ([0-9.e+]+) images and ([0-9.e+]+) oracle evaluations`)
	for _, name := range []string{"lsgd", "vmlmc", "rtmlmc", "rumlmc", "rrmlmc", "vr-rtmlmc", "vr-rrmlmc"} {
		t.Run(name, func(t *testing.T) {
			cfg := tinyConfig(t, name)
			cfg.Iterations = 1
			var log bytes.Buffer
			hooks := tinyHooks(splits)
			hooks.Log = &log
			if _, err := Train(context.Background(), cfg, hooks); err != nil {
				t.Fatal(err)
			}
			m := printed.FindStringSubmatch(log.String())
			if m == nil {
				t.Fatalf("start-up line lacks the expected cost:\n%s", log.String())
			}
			images, _ := strconv.ParseFloat(m[1], 64)
			evals, _ := strconv.ParseFloat(m[2], 64)

			maxServable, err := maxServableLevel(cfg, splits.Train)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := Resolve(cfg, Facts{TrainImages: splits.Train.Len(), ServableLevel: maxServable, Ranks: 1})
			if err != nil {
				t.Fatal(err)
			}
			oracle := mlmc.NewSynthetic(1, 1, 1, 1, 3)
			oracle.Max = maxServable
			est, err := mlmc.New[[]float64](plan.Estimator, plan.MLMC, mlmc.Float64Ops{Dim: 1}, oracle)
			if err != nil {
				t.Fatal(err)
			}
			const iters = 20000 // a multiple of QE
			out := make([]float64, 1)
			var s, s2, e, e2 float64
			for it := range iters {
				step, err := est.Estimate(it, out)
				if err != nil {
					t.Fatal(err)
				}
				x, y := float64(step.Samples), float64(step.Evals)
				s, s2, e, e2 = s+x, s2+x*x, e+y, e2+y*y
			}
			for _, c := range []struct {
				what         string
				sum, sum2, p float64
			}{{"images", s, s2, images}, {"oracle evaluations", e, e2, evals}} {
				mean := c.sum / iters
				se := math.Sqrt(math.Max(c.sum2/iters-mean*mean, 0) / (iters - 1))
				// The printed figure has 4 significant digits.
				if math.Abs(mean-c.p) > 4*se+5e-4*math.Abs(c.p) {
					t.Errorf("%s per iteration: printed %g, the estimator spends %.4f (standard error %.4f)", c.what, c.p, mean, se)
				}
			}
			t.Logf("printed %g images, %g evaluations; measured %.4f, %.4f", images, evals, s/iters, e/iters)
		})
	}
}

// With several ranks the job's cost per iteration is the ranks' sum: MLMC
// estimators draw and evaluate on every rank, while L-SGD splits one batch
// over them and a split draw is one evaluation, as the metrics count it
// (reduceStep; TestDistTrainingMatchesSingleProcess checks the count).
func TestExpectedCostOverRanks(t *testing.T) {
	for _, tc := range []struct {
		estimator     string
		ranks         int
		images, evals float64
	}{
		{"lsgd", 1, 8, 1},
		{"lsgd", 4, 8, 1},
		{"vr-lsgd", 2, 8, 1.9}, // QE = 10: (1 + 9 x 2) / 10 passes, split as the draw is
		{"rtmlmc", 1, 3 * 8.0 / 7, 1},
		{"rtmlmc", 4, 4 * 3 * 8.0 / 7, 4},
		{"vmlmc", 2, 2 * 24, 2 * 7},
	} {
		cfg := Defaults()
		cfg.Estimator, cfg.MinLevel, cfg.MaxLevel, cfg.Iterations = tc.estimator, 1, 3, 1
		plan, err := Resolve(cfg, Facts{TrainImages: 64, ServableLevel: 6, Ranks: tc.ranks})
		if err != nil {
			t.Fatal(err)
		}
		images, evals := plan.ExpectedImages, plan.ExpectedEvals
		if math.Abs(images-tc.images) > 1e-9 || math.Abs(evals-tc.evals) > 1e-9 {
			t.Errorf("%s on %d ranks: %g images, %g evaluations; want %g, %g", tc.estimator, tc.ranks, images, evals, tc.images, tc.evals)
		}
	}
}
