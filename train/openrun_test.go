package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/runfolder"
)

// OpenRun reads back the settings a run's config.json recorded, and
// ModelFile reports a run without a network, naming the folder; a folder
// without config.json is not a run.
func TestOpenRun(t *testing.T) {
	dir := t.TempDir()
	cfg := Defaults()
	cfg.Dataset, cfg.DataDir = "svhn", "/data/x"
	cfg.TrainSubset, cfg.TestSubset, cfg.ValSplit = 123, 45, 500
	cfg.Width, cfg.ProjDim, cfg.Seed, cfg.Norm = 0.25, 64, 77, "group"
	cfg.MinLevel, cfg.MaxLevel, cfg.Temperature = 2, 6, 0.2
	plan := RunPlan{Out: dir, MaxServable: 8}
	if err := runfolder.WriteJSON(filepath.Join(dir, runfolder.ConfigFile), newRecord(cfg, plan)); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg
	want.Out, want.MaxServable = dir, 8
	if r.Dir != dir || r.Settings != want || r.Plan.MaxServable != 8 {
		t.Errorf("OpenRun = %+v, want the settings %+v", r.Settings, want)
	}
	if _, err := r.ModelFile(); err == nil || !strings.Contains(err.Error(), "has no "+runfolder.ModelFile+" yet") {
		t.Errorf("ModelFile without a model: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, runfolder.ModelFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if path, err := r.ModelFile(); err != nil || path != filepath.Join(dir, runfolder.ModelFile) {
		t.Errorf("ModelFile = %s, %v", path, err)
	}
	if _, err := OpenRun(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a run folder") {
		t.Errorf("a folder without config.json: %v", err)
	}
}
