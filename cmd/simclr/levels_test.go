package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// simclr levels end to end on a tiny image folder: the table a person reads
// and the JSON a script reads, from a trained run and at initialisation.
func TestLevelsEndToEnd(t *testing.T) {
	data := imageFolder(t, 32, 8)
	run := filepath.Join(t.TempDir(), "run")
	if _, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "2", "--max-level", "3",
		"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--probe=false", "--estimator", "vr-rtmlmc", "--qe", "2", "--halves", "separate", "--val-split", "4"); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	// The run's halves (separate) unless --halves says otherwise.
	stdout, stderr, err := execute("levels", "--run", run, "--draws", "5", "--device", "cpu")
	if err != nil {
		t.Fatalf("levels: %v\n%s", err, stderr)
	}
	for _, want := range []string{"h^1", "H^2", "H^3", "h^3 (top)", "b, Var H^l ~ 2^-bl:", "telescoping:", "rtmlmc", "vmlmc-opt",
		"verdict: MLMC", "halves separate", "5 draws per level", "(28 images)", "vr-rtmlmc", "vr-lsgd", "QE = 2"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("levels table lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "H^3: 5 draws done") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}

	stdout, stderr, err = execute("levels", "--random-init", "--dataset", "folder:"+data, "--width", "0.0625",
		"--min-level", "2", "--max-level", "4", "--draws", "4", "--device", "cpu", "--json")
	if err != nil {
		t.Fatalf("levels --json: %v\n%s", err, stderr)
	}
	var res struct {
		Checkpoint string `json:"checkpoint"`
		Halves     string `json:"halves"`
		MinLevel   int    `json:"min_level"`
		MaxLevel   int    `json:"max_level"`
		Levels     []struct {
			Level  int     `json:"level"`
			Diff   bool    `json:"diff"`
			Var    float64 `json:"var"`
			Images float64 `json:"images"`
		} `json:"levels"`
		FitB struct {
			Rate *float64 `json:"rate"`
		} `json:"fit_b"`
		Telescope struct {
			Z []float64 `json:"z"`
		} `json:"telescope"`
		Estimators []struct {
			Name      string   `json:"name"`
			RelImages *float64 `json:"rel_images"`
		} `json:"estimators"`
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("levels --json output is not JSON: %v\n%s", err, stdout)
	}
	if res.MinLevel != 2 || res.MaxLevel != 4 || len(res.Levels) != 3 || res.Halves != "shared" || !strings.Contains(res.Checkpoint, "random") {
		t.Errorf("levels --json: %+v", res)
	}
	for i, st := range res.Levels {
		if st.Level != 2+i || st.Diff != (i > 0) || st.Images != float64(int(1)<<st.Level) || !(st.Var > 0) {
			t.Errorf("level row %d: %+v", i, st)
		}
	}
	if res.FitB.Rate == nil || len(res.Telescope.Z) != 4 || len(res.Estimators) != 5 || res.Estimators[0].Name != "lsgd" ||
		res.Estimators[0].RelImages == nil || *res.Estimators[0].RelImages != 1 || res.Verdict == "" {
		t.Errorf("levels --json: %+v", res)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"levels", "--run", run, "--draws", "2"}, "--draws 2"},
		{[]string{"levels", "--run", run, "--max-level", "9", "--device", "cpu"}, "--max-level 9: maximum level 9 needs"},
		{[]string{"levels", "--run", run, "--halves", "both", "--device", "cpu"}, "--halves"},
		{[]string{"levels", "--run", run, "--min-level", "0", "--device", "cpu"}, "--min-level 0: minimum level 0: levels start at 1"},
		{[]string{"levels"}, "give --run"},
	} {
		if _, _, err := execute(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// simclr levels on a run of a decoupled loss measures NT-Xent's levels on
// its network and says so: DCL and SogCLR have no levels.
func TestLevelsOnDecoupledRunSaysWhy(t *testing.T) {
	data := imageFolder(t, 32, 8)
	for _, est := range []string{"dcl", "sogclr"} {
		t.Run(est, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			if _, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "2", "--max-level", "3",
				"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--probe=false", "--estimator", est); err != nil {
				t.Fatalf("train: %v\n%s", err, stderr)
			}
			stdout, stderr, err := execute("levels", "--run", run, "--draws", "3", "--max-level", "3", "--device", "cpu")
			if err != nil {
				t.Fatalf("levels: %v\n%s", err, stderr)
			}
			if want := "trained with the " + est + " loss, which has no levels"; !strings.Contains(stderr, want) {
				t.Errorf("levels on a %s run: stderr lacks %q:\n%s", est, want, stderr)
			}
			if !strings.Contains(stdout, "H^3") {
				t.Errorf("levels on a %s run measured no NT-Xent levels:\n%s", est, stdout)
			}
		})
	}
}
