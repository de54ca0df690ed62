package train

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
)

// levelsFile writes a `simclr levels --json` report of levels minL.. with
// the given variances (means zero, so E|Y|^2 = Var) and seconds per query
// (images 2^l) and returns its path.
func levelsFile(t *testing.T, minL int, vars, secs []float64) string {
	t.Helper()
	rep := mlmc.LevelsReport{MinLevel: minL, MaxLevel: minL + len(vars) - 1, Draws: 16, B: 1, C: 1}
	for i, v := range vars {
		l := minL + i
		rep.Levels = append(rep.Levels, mlmc.LevelStat{Level: l, Diff: i > 0, Draws: 16, Var: v, Moment2: v,
			Images: math.Exp2(float64(l)), Seconds: secs[i]})
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "levels.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The optimal allocations in closed form (docs/definitions.md, section 2 "The
// estimators"): with Var = (0.64, 0.04, 0.01) and C = (0.01, 0.04, 0.16) s on
// levels 4..6, sqrt(Var/C) = (8, 1, 0.25), so q = (8, 1, 0.25)/9.25 and n_l =
// ceil(sqrt(Var_l/C_l)/0.25) = (32, 4, 1) with the default N (n_L = 1), twice
// that with N = 2 x 2^((b+c)L/2).
func TestMeasuredAllocationKnownLevels(t *testing.T) {
	vars := []float64{0.64, 0.04, 0.01}
	for _, tc := range []struct {
		name      string
		secs      []float64
		n         float64
		wantProbs []float64
		wantDraws []int
	}{
		{"seconds, default N", []float64{0.01, 0.04, 0.16}, 0,
			[]float64{8 / 9.25, 1 / 9.25, 0.25 / 9.25}, []int{32, 4, 1}},
		{"seconds, N doubled", []float64{0.01, 0.04, 0.16}, 128,
			[]float64{8 / 9.25, 1 / 9.25, 0.25 / 9.25}, []int{64, 8, 2}},
		// Without a time at every level the cost is 2^l images:
		// sqrt(Var/C) = (0.2, sqrt(0.04/32), 0.0125).
		{"images", []float64{0.01, 0, 0.16}, 0,
			[]float64{0.2 / (0.2 + math.Sqrt(0.04/32) + 0.0125), math.Sqrt(0.04/32) / (0.2 + math.Sqrt(0.04/32) + 0.0125), 0.0125 / (0.2 + math.Sqrt(0.04/32) + 0.0125)},
			[]int{16, 3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := readLevelsReport(levelsFile(t, 4, vars, tc.secs))
			if err != nil {
				t.Fatal(err)
			}
			probs, draws, err := MeasuredAllocation(rep, 4, 6, 1, 1, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			for i := range probs {
				if math.Abs(probs[i]-tc.wantProbs[i]) > 1e-12 || draws[i] != tc.wantDraws[i] {
					t.Errorf("level %d: q %.6f n %d, want q %.6f n %d", 4+i, probs[i], draws[i], tc.wantProbs[i], tc.wantDraws[i])
				}
			}
		})
	}
}

// The resolved allocation reaches the estimator: config.json records it, and
// a tiny rtmlmc run trains with it; vmlmc gets n_l.
func TestLevelLawMeasuredIsRecordedAndUsed(t *testing.T) {
	splits := syntheticSplits(32, 16, 16, 2)
	file := levelsFile(t, 1, []float64{0.64, 0.04, 0.01}, []float64{0.01, 0.04, 0.16})
	for _, est := range []string{"rtmlmc", "vr-vmlmc"} {
		t.Run(est, func(t *testing.T) {
			cfg := tinyConfig(t, est)
			cfg.LevelLaw = LevelLawMeasured + file
			if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
				t.Fatal(err)
			}
			_, saved, err := LoadRun(cfg.Out)
			if err != nil {
				t.Fatal(err)
			}
			if est == "rtmlmc" {
				want := []float64{8 / 9.25, 1 / 9.25, 0.25 / 9.25}
				bad := len(saved.LevelProbs) != 3 || saved.LevelDraws != nil
				for i := 0; !bad && i < 3; i++ {
					bad = math.Abs(saved.LevelProbs[i]-want[i]) > 1e-12
				}
				if bad {
					t.Fatalf("config.json level_probs %v level_draws %v, want %v and none", saved.LevelProbs, saved.LevelDraws, want)
				}
				return
			}
			if want := []int{32, 4, 1}; len(saved.LevelDraws) != 3 || saved.LevelDraws[0] != 32 || saved.LevelDraws[1] != 4 || saved.LevelDraws[2] != 1 || saved.LevelProbs != nil {
				t.Fatalf("config.json level_draws %v level_probs %v, want %v and none", saved.LevelDraws, saved.LevelProbs, want)
			}
			lines, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			// A fresh V-MLMC iteration queries 32 + 4 + 1 levels.
			if got := len(lines[0].Levels); got != 37 {
				t.Errorf("first iteration queried %d levels, want 37 (n_l = 32, 4, 1)", got)
			}
		})
	}
}

// A bad --level-law measured:FILE is one error naming the file (or the
// flag) before any data is read, and leaves no run folder.
func TestLevelLawMeasuredBadInput(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notJSON, []byte("levels 4..6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := levelsFile(t, 1, []float64{0.64, 0.04, 0.01}, []float64{0.01, 0.04, 0.16})
	wrongLevels := levelsFile(t, 4, []float64{0.64, 0.04, 0.01}, []float64{0.01, 0.04, 0.16})
	zeroVar := levelsFile(t, 1, []float64{0.64, 0, 0.01}, []float64{0.01, 0.04, 0.16})
	missing := filepath.Join(dir, "nope.json")
	for _, tc := range []struct {
		name, estimator, law string
		want                 []string
	}{
		{"missing file", "rtmlmc", LevelLawMeasured + missing, []string{missing, "simclr levels --json"}},
		{"not JSON", "rtmlmc", LevelLawMeasured + notJSON, []string{notJSON, "is not the JSON of a levels report"}},
		{"other levels", "vmlmc", LevelLawMeasured + wrongLevels, []string{wrongLevels, "levels 4..6", "--min-level 1 --max-level 3"}},
		{"zero variance", "rtmlmc", LevelLawMeasured + zeroVar, []string{zeroVar, "level 2 has variance 0"}},
		{"no levels drawn", "lsgd", LevelLawMeasured + good, []string{"--level-law", "--estimator lsgd"}},
		{"no file", "rtmlmc", "measured:", []string{"--level-law", "measured:FILE"}},
		{"unknown law", "rtmlmc", "adaptive", []string{"--level-law \"adaptive\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t, tc.estimator)
			cfg.LevelLaw = tc.law
			_, err := Train(context.Background(), cfg, tinyHooks(syntheticSplits(16, 8, 16, 2)))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error %v, want one containing %q", err, w)
				}
			}
			if _, err := os.Stat(cfg.Out); !os.IsNotExist(err) {
				t.Errorf("a refused start left %s behind (%v)", cfg.Out, err)
			}
		})
	}
}

// --eval-every-iterations sets the kNN period in iterations, and
// --eval-train-subset the memory bank's size; the scored images stay all.
func TestEvalEveryIterationsAndTrainSubset(t *testing.T) {
	splits := syntheticSplits(64, 32, 16, 4)
	cfg := tinyConfig(t, "lsgd")
	cfg.Iterations = 6
	cfg.EvalEveryIters = 3
	cfg.EvalTrainSubset = 16
	cfg.KNNK = 5
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	evals, err := runfolder.ReadLines[runfolder.Eval](filepath.Join(cfg.Out, runfolder.EvalFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(evals) != 2 || evals[0].Iteration != 3 || evals[1].Iteration != 6 {
		t.Fatalf("kNN evaluations %+v, want at iterations 3 and 6", evals)
	}
	for _, e := range evals {
		if e.TrainImages != 16 || e.TestImages != 32 {
			t.Errorf("evaluation at %d: bank of %d images scoring %d, want 16 scoring 32", e.Iteration, e.TrainImages, e.TestImages)
		}
	}
	for _, tc := range []struct {
		modify func(*Settings)
		want   string
	}{
		{func(c *Settings) { c.EvalEvery, c.EvalEveryIters = 1, 3 }, "give one period"},
		{func(c *Settings) { c.EvalEveryIters = -1 }, "--eval-every-iterations -1"},
		{func(c *Settings) { c.EvalTrainSubset = -2 }, "--eval-train-subset -2"},
	} {
		bad := tinyConfig(t, "lsgd")
		tc.modify(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

// A resumed run keeps the level law its config.json recorded, even when
// the levels file has changed since (here it is gone); a config.json that
// names the file but records no law reads the file again.
func TestLevelLawMeasuredKeptOnResume(t *testing.T) {
	splits := syntheticSplits(32, 16, 16, 2)
	file := levelsFile(t, 1, []float64{0.64, 0.04, 0.01}, []float64{0.01, 0.04, 0.16})
	cfg := tinyConfig(t, "rtmlmc")
	cfg.LevelLaw = LevelLawMeasured + file
	sess := tinyHooks(splits)
	sess.StopAfter = 2
	if _, err := Train(context.Background(), cfg, sess); !errors.Is(err, ErrIterationsLimit) {
		t.Fatalf("first session: %v, want ErrIterationsLimit", err)
	}
	_, before, err := LoadRun(cfg.Out)
	if err != nil || len(before.LevelProbs) != 3 {
		t.Fatalf("config.json level_probs %v (%v), want 3", before.LevelProbs, err)
	}
	moved := file + ".moved"
	if err := os.Rename(file, moved); err != nil {
		t.Fatal(err)
	}
	sess.StopAfter = 1
	if _, err := Resume(context.Background(), cfg.Out, nil, sess); !errors.Is(err, ErrIterationsLimit) {
		t.Fatalf("resume without the levels file: %v, want ErrIterationsLimit", err)
	}

	// Without the recorded law the file is needed, and read.
	var rec map[string]any
	path := filepath.Join(cfg.Out, runfolder.ConfigFile)
	if err := runfolder.ReadJSON(path, &rec); err != nil {
		t.Fatal(err)
	}
	delete(rec, "level_probs")
	if err := runfolder.WriteJSON(path, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(context.Background(), cfg.Out, nil, tinyHooks(splits)); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("resume without a recorded law or its file: %v, want an error naming %s", err, file)
	}
	if err := os.Rename(moved, file); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(context.Background(), cfg.Out, nil, tinyHooks(splits)); err != nil {
		t.Fatalf("resume reading the levels file again: %v", err)
	}
}
