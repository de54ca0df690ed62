package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/synthdata"
	"github.com/simclr-go/simclr/train"
)

// execute runs the program with args and returns stdout, stderr and the
// error it would print.
func execute(args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	err := run(args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// imageFolder writes a tiny image-folder data set and returns its root
// (synthdata.ImageFolder).
func imageFolder(t *testing.T, nTrain, nTest int) string {
	return synthdata.ImageFolder(t, nTrain, nTest)
}

// innermean end to end: a SogCLR run whose one iteration drew
// every image at gamma 1 (a first visit) with a learning rate too small to move a float32 weight (1e-30; 0 means the default) has u equal
// to the full-data inner mean it measures; a run that has not seen every
// image, a DCL run and bad batches are refused with the reason.
func TestInnerMeanEndToEnd(t *testing.T) {
	data := imageFolder(t, 32, 8)
	trainRun := func(estimator string, level int, lr float64) string {
		cfg := train.Defaults()
		cfg.Dataset, cfg.Width, cfg.ProjDim, cfg.Device = "folder:"+data, 0.0625, 16, "cpu"
		cfg.Out, cfg.Probe, cfg.Estimator, cfg.MaxLevel, cfg.Iterations, cfg.LR = filepath.Join(t.TempDir(), "run"), false, estimator, level, 1, lr
		var log bytes.Buffer
		if _, err := train.Train(context.Background(), cfg, train.Session{Log: &log}); err != nil {
			t.Fatalf("train %s at level %d: %v\n%s", estimator, level, err, log.String())
		}
		return cfg.Out
	}
	exact := trainRun("sogclr", 5, 1e-30)
	stdout, stderr, err := execute("--run", exact, "--batches", "8,32", "--device", "cpu", "--json")
	if err != nil {
		t.Fatalf("innermean: %v\n%s", err, stderr)
	}
	var res struct {
		TrainImages int `json:"train_images"`
		Batch       int `json:"batch"`
		Estimates   []struct {
			Name   string  `json:"name"`
			Target string  `json:"target"`
			N      int     `json:"n"`
			Median float64 `json:"median"`
			Max    float64 `json:"max"`
		} `json:"estimates"`
		ByStaleness []struct {
			From, N int
		} `json:"u_by_staleness"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("innermean --json output is not JSON: %v\n%s", err, stdout)
	}
	if res.TrainImages != 32 || res.Batch != 32 || len(res.Estimates) != 11 || len(res.ByStaleness) != 1 {
		t.Fatalf("innermean --json: %+v", res)
	}
	for _, est := range res.Estimates {
		switch {
		case est.Name == "u_k (stored)" && est.Target == "image",
			strings.Contains(est.Name, "batch 32") && est.Target == "image" && strings.Contains(est.Name, "in-batch"):
			// u, and the one batch of all images, are the full-data mean.
			if est.N != 32 || est.Max > 1e-5 {
				t.Errorf("%s against %s: %+v, want 32 errors of at most 1e-5 (u stored the full-data mean)", est.Name, est.Target, est)
			}
		case strings.Contains(est.Name, "batch 8"):
			// A quarter of the negatives: a real error.
			if est.N != 64 && est.N != 32 || !(est.Median > 1e-3) {
				t.Errorf("%s against %s: %+v, want a median error above 1e-3", est.Name, est.Target, est)
			}
		}
	}

	stdout, _, err = execute("--run", exact, "--batches", "8", "--device", "cpu", "--fresh-draw=false")
	if err != nil || !strings.Contains(stdout, "u_k (stored)") || !strings.Contains(stdout, "draws ago") {
		t.Errorf("innermean table: %v\n%s", err, stdout)
	}

	partial := trainRun("sogclr", 3, 0)
	dcl := trainRun("dcl", 3, 0)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", partial, "--device", "cpu", "--batches", "8"}, "has not been visited yet"},
		{[]string{"--run", dcl, "--device", "cpu"}, "only a SogCLR run"},
		{[]string{"--run", exact, "--device", "cpu", "--batches", "1"}, "--batches 1"},
		{[]string{"--run", exact, "--device", "cpu", "--batches", "64"}, "--batches 64"},
		{[]string{}, "give --run"},
	} {
		if _, _, err := execute(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
