package mlmc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The predictions derived from the table of methods equal, field by field
// in their JSON form, those that `simclr levels --json` wrote before the
// methods were a table (when each estimator's formula sat in a switch):
// testdata/levels-before-table.json (a 12-iteration VR RT-MLMC run on 300
// CIFAR-10 images, levels 2..4, with the vr- predictions) and the measured
// levels committed under studies/*/results/. Recomputing from each file's measured
// levels must reproduce its predictions exactly.
func TestPredictionsMatchFilesOfThePreviousVersion(t *testing.T) {
	files := []string{"testdata/levels-before-table.json"}
	committed, err := filepath.Glob("../studies/*/results/*/levels-*[^n].json") // not the .run.json beside them
	if err != nil {
		t.Fatal(err)
	}
	// A levels file of `simclr levels` has its run record beside it
	// (NAME.run.json); other problems' per-level files (examples/ubsr's)
	// have another layout.
	for _, path := range committed {
		if _, err := os.Stat(strings.TrimSuffix(path, ".json") + ".run.json"); err == nil {
			files = append(files, path)
		}
	}
	if len(files) < 2 {
		t.Fatal("found no levels files under ../studies/*/results")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				LevelsReport
				Estimators []map[string]any `json:"estimators"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			got := PredictEstimators(rep.Levels, rep.Top, rep.Telescope.SumNorm, rep.B, rep.C)
			if rep.QE > 0 {
				cfg := LevelsConfig{MinLevel: rep.MinLevel, MaxLevel: rep.MaxLevel, B: rep.B, C: rep.C, D1: rep.D1, D2: rep.D2, QE: rep.QE}
				got = append(got, PredictVR(got, rep.Levels, rep.Top, cfg)...)
			}
			if len(got) != len(rep.Estimators) {
				t.Fatalf("%d predictions, the file has %d", len(got), len(rep.Estimators))
			}
			for i, want := range rep.Estimators {
				mine, err := json.Marshal(got[i])
				if err != nil {
					t.Fatal(err)
				}
				var have map[string]any
				if err := json.Unmarshal(mine, &have); err != nil {
					t.Fatal(err)
				}
				for k, v := range want {
					if fmt.Sprint(have[k]) != fmt.Sprint(v) {
						t.Errorf("%v %s: recomputed %v, the file %v", want["name"], k, have[k], v)
					}
				}
			}
		})
	}
}
