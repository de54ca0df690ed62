package train

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
)

// Config files written when the estimator's name chose the loss
// (testdata/old-config-*.json are two committed runs' config.json) load as
// L-SGD with that loss, and resolve into the plan they trained with.
func TestOldEstimatorNamesLoadAsTheirLoss(t *testing.T) {
	for _, tc := range []struct {
		file string
		loss contrastive.LossKind
	}{
		{"old-config-dcl.json", contrastive.DCL},
		{"old-config-sogclr.json", contrastive.SogCLR},
		{"earlier-config.json", contrastive.NTXent},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, runfolder.ConfigFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			s, p, err := LoadRun(dir)
			if err != nil {
				t.Fatal(err)
			}
			wantEst := mlmc.Kind{Method: mlmc.LSGD}
			if tc.loss == contrastive.NTXent {
				wantEst = mlmc.Kind{Method: mlmc.RTMLMC, VR: true}
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			plan, err := Resolve(s, Facts{TrainImages: p.TrainImages, ServableLevel: p.MaxServable, Ranks: 1, Previous: &p})
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if plan.Loss != tc.loss || plan.Estimator != wantEst || plan.TotalIters != p.TotalIters {
				t.Errorf("plan: loss %v estimator %v, %d iterations; want %v, %v, %d", plan.Loss, plan.Estimator, plan.TotalIters, tc.loss, wantEst, p.TotalIters)
			}
		})
	}
}

// Every run folder committed in the repository (the studies' results)
// still loads, validates and resolves, and none reads its loss from the
// estimator's name after loading.
func TestCommittedRunFoldersStillLoad(t *testing.T) {
	root := filepath.Join("..")
	decoupled, runs := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() != runfolder.ConfigFile {
			return nil
		}
		dir := filepath.Dir(path)
		metrics := filepath.Join(dir, runfolder.MetricsFile)
		if _, err := os.Stat(metrics); err != nil {
			if _, err := os.Stat(metrics + runfolder.CompressedSuffix); err != nil {
				return nil // a config file, not a run folder
			}
		}
		runs++
		s, _, err := LoadRun(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			return nil
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", dir, err)
			return nil
		}
		ch, err := s.Choices()
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			return nil
		}
		if _, err := mlmc.ParseKind(s.Estimator); err != nil && !s.isAuto() {
			t.Errorf("%s: estimator %q after loading: %v", dir, s.Estimator, err)
		}
		if ch.Loss != contrastive.NTXent {
			decoupled++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs == 0 || decoupled == 0 {
		t.Fatalf("found %d committed run folders, %d of them with a decoupled loss: the studies' results should hold both", runs, decoupled)
	}
	t.Logf("%d committed run folders load, %d with a decoupled loss", runs, decoupled)
}
