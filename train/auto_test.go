package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/mlmc/auto"
	"github.com/simclr-go/simclr/runfolder"
)

// autoFolder writes a tiny image folder data set: 16 training and 4 test
// images of two classes.
func autoFolder(t *testing.T) string {
	root := t.TempDir()
	for i := range 20 {
		split := "train"
		if i >= 16 {
			split = "test"
		}
		writePNG(t, filepath.Join(root, split, []string{"a", "b"}[i%2], fmt.Sprintf("%d.png", i)), 32, 32, uint8(17*i))
	}
	return root
}

// TestAutoRunsRecordsAndResumes: --estimator auto on a folder data set
// runs its pilot, records the plan in config.json, counts the pilot's
// images in the images drawn, and an interrupted run resumes bit for bit
// with the recorded plan (no second pilot).
func TestAutoRunsRecordsAndResumes(t *testing.T) {
	cfg := tinyConfig(t, EstimatorAuto)
	cfg.Dataset = "folder:" + autoFolder(t)
	cfg.Iterations = 170 // 170 x 2^3 images: 5% pays for 3 draws of levels 1..3 and h^3
	cfg.CheckpointEvery = 0
	var log logBuffer
	// The sessions compute with tinyHooks's built-in SGEMM, not each with
	// the kind New's start-up race picks: the uninterrupted run and the
	// interrupted one are compared bit for bit, and the race can decide
	// the two ways under load.
	sess := tinyHooks(nil)
	sess.Log = &log
	if _, err := Train(context.Background(), cfg, sess); err != nil {
		t.Fatal(err)
	}
	settings, plan, err := LoadRun(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	a := plan.Auto
	if settings.Estimator != EstimatorAuto || a == nil {
		t.Fatalf("config.json: estimator %q, auto plan %v; want auto with its plan", settings.Estimator, a)
	}
	if a.MinLevel != 1 || a.MaxLevel != 3 || a.PilotDraws != 3 || a.Samples != 3*(2+4+8+8) ||
		a.Reasons.Method == "" || a.Reasons.Law == "" || a.Method != a.Kind.String() {
		t.Errorf("recorded plan: %+v", a)
	}
	t.Log(a)
	if !strings.Contains(log.String(), "auto plan at the initial network: "+a.Method) {
		t.Errorf("the log does not print the plan:\n%s", log.String())
	}
	lines, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
	if err != nil || len(lines) == 0 {
		t.Fatalf("metrics: %d lines (%v)", len(lines), err)
	}
	first := a.Samples
	for _, l := range lines[0].Levels {
		first += int64(1) << l
	}
	if lines[0].Iteration == 1 && lines[0].SamplesDrawn != first {
		t.Errorf("first iteration: %d images drawn, want the pilot's %d plus the step's", lines[0].SamplesDrawn, a.Samples)
	}

	parts := cfg
	parts.Out = filepath.Join(t.TempDir(), "interrupted")
	sess = tinyHooks(nil)
	sess.StopAfter = 60
	if _, err := Train(context.Background(), parts, sess); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first session: %v, want ErrInterrupted", err)
	}
	var resumed logBuffer
	sess = tinyHooks(nil)
	sess.Log = &resumed
	if _, err := Resume(context.Background(), parts.Out, nil, sess); err != nil {
		t.Fatal(err)
	}
	_, again, err := LoadRun(parts.Out)
	if err != nil || again.Auto == nil || again.Auto.Method != a.Method || len(again.Auto.LevelProbs) != len(a.LevelProbs) {
		t.Fatalf("resumed run's plan %+v (%v), want the uninterrupted run's %s", again.Auto, err, a.Method)
	}
	want, got := paramsOf(t, cfg.Out), paramsOf(t, parts.Out)
	for name, w := range want {
		g := got[name]
		for i := range w {
			if i >= len(g) || math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s[%d] differs after interrupt and resume", name, i)
			}
		}
	}
	wantLines, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
	gotLines, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(parts.Out, runfolder.MetricsFile))
	if len(gotLines) != len(wantLines) {
		t.Fatalf("resumed run logged %d metrics lines, uninterrupted %d", len(gotLines), len(wantLines))
	}
	for i, w := range wantLines {
		if g := gotLines[i]; g.Iteration != w.Iteration || g.SamplesDrawn != w.SamplesDrawn || g.Loss != w.Loss {
			t.Errorf("metrics line %d: resumed %+v, uninterrupted %+v", i, g, w)
		}
	}
}

// TestAutoRefuses: a run too short for the pilot gets auto's error naming
// the measurement and the change; a measured level law or two levels are
// refused before any data is read.
func TestAutoRefuses(t *testing.T) {
	cfg := tinyConfig(t, EstimatorAuto)
	cfg.Dataset = "folder:" + autoFolder(t)
	_, err := Train(context.Background(), cfg, Session{Log: ioDiscard{}, Backend: cpu.New()})
	var ae *auto.Error
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "pays for 0 draws") || !strings.Contains(err.Error(), "train longer") {
		t.Errorf("4 iterations: %v, want auto's error on the pilot budget", err)
	}
	for _, tc := range []struct {
		edit func(*Settings)
		want string
	}{
		{func(s *Settings) { s.LevelLaw = LevelLawMeasured + "x.json" }, "drop --level-law"},
		{func(s *Settings) { s.MaxLevel = 2 }, "--max-level 3 or more"},
	} {
		c := cfg
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one saying %q", err, tc.want)
		}
	}
}
