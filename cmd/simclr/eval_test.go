package main

import (
	"encoding/json"
	"testing"

	"github.com/simclr-go/simclr/train"
)

// simclr eval reads a run's config.json into its own runSettings so that it
// need not import the trainer; the JSON names must stay those train.Settings
// writes, and the defaults those of train.Defaults.
func TestRunSettingsReadTrainConfig(t *testing.T) {
	cfg := train.Defaults()
	cfg.Dataset, cfg.DataDir = "svhn", "/data/x"
	cfg.TrainSubset, cfg.TestSubset, cfg.ValSplit = 123, 45, 500
	cfg.Width, cfg.ProjDim, cfg.Seed, cfg.Norm = 0.25, 64, 77, "group"
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got runSettings
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := runSettings{Dataset: "svhn", DataDir: "/data/x", TrainSubset: 123, TestSubset: 45, ValSplit: 500, Width: 0.25, ProjDim: 64, Seed: 77, Norm: "group"}
	if got != want {
		t.Errorf("config.json read as %+v, want %+v", got, want)
	}
	d := train.Defaults()
	def := defaultRunSettings()
	if def.Dataset != d.Dataset || def.Width != d.Width || def.ProjDim != d.ProjDim || def.Seed != d.Seed {
		t.Errorf("eval defaults %+v differ from train.Defaults (dataset %s, width %g, proj_dim %d, seed %d)",
			def, d.Dataset, d.Width, d.ProjDim, d.Seed)
	}
}
