package train

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
)

// Resolve's plan, case by case: the length in each unit, the warm-up and
// its cap of a tenth of the run, the learning rate's 0.06 x 2^L/512, the
// evaluation period, the split of a draw over ranks and the cost over
// ranks, and on resume the level law of the previous plan.
func TestResolve(t *testing.T) {
	base := func() Settings {
		s := Defaults()
		s.MinLevel, s.MaxLevel, s.Iterations, s.WarmupEpochs, s.Out = 1, 3, 100, 1, "runs/x"
		return s
	}
	facts := Facts{TrainImages: 50, ServableLevel: 5, Ranks: 1}
	for _, tc := range []struct {
		name   string
		modify func(*Settings, *Facts)
		check  func(*testing.T, RunPlan)
	}{
		{"epochs of ceil(n/2^L) iterations", func(s *Settings, _ *Facts) { s.Iterations, s.Epochs = 0, 3 }, func(t *testing.T, p RunPlan) {
			if p.ItersPerEpoch != 7 || p.TotalIters != 21 {
				t.Errorf("%d iterations per epoch, %d in all; want 7 (ceil(50/8)) and 21", p.ItersPerEpoch, p.TotalIters)
			}
		}},
		{"iterations", nil, func(t *testing.T, p RunPlan) {
			if p.TotalIters != 100 || p.TrainImages != 50 {
				t.Errorf("%d iterations of %d images, want 100 of 50", p.TotalIters, p.TrainImages)
			}
		}},
		{"max-samples over the expected cost", func(s *Settings, _ *Facts) { s.Iterations, s.MaxSamples, s.Estimator = 0, 1000, "rtmlmc" }, func(t *testing.T, p RunPlan) {
			// RT-MLMC on levels 1..3 with b = c = 1: q_l ~ 2^-l, so
			// E[2^l] = 3 / (1/2 + 1/4 + 1/8) = 24/7 images.
			if math.Abs(p.ExpectedImages-24.0/7) > 1e-12 || p.TotalIters != int(math.Ceil(1000/(24.0/7))) {
				t.Errorf("%g images per iteration, %d iterations; want 24/7 and ceil(1000 x 7/24) = 292", p.ExpectedImages, p.TotalIters)
			}
		}},
		{"warm-up in iterations", func(s *Settings, _ *Facts) { s.WarmupEpochs = 1.2 }, func(t *testing.T, p RunPlan) {
			if p.WarmupIters != 8 || len(p.Notes) != 0 { // round(1.2 x 7)
				t.Errorf("warm-up %d iterations, notes %q; want 8 and none", p.WarmupIters, p.Notes)
			}
		}},
		{"warm-up capped at a tenth of the run", func(s *Settings, _ *Facts) { s.WarmupEpochs = 10 }, func(t *testing.T, p RunPlan) {
			if p.WarmupIters != 10 || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "(70 iterations) shortened to a tenth of the run (10 iterations)") {
				t.Errorf("warm-up %d iterations, notes %q; want 10 and a note of the cap", p.WarmupIters, p.Notes)
			}
		}},
		{"learning rate 0.06 x 2^L/512", func(s *Settings, f *Facts) { s.MaxLevel, s.LR, f.TrainImages, f.ServableLevel = 9, 0, 1024, 10 }, func(t *testing.T, p RunPlan) {
			if p.LR != 0.06 {
				t.Errorf("lr %g at L = 9, want 0.06", p.LR)
			}
		}},
		{"learning rate scaled with the batch", func(s *Settings, _ *Facts) { s.LR = 0 }, func(t *testing.T, p RunPlan) {
			if p.LR != 0.06*8/512 {
				t.Errorf("lr %g at L = 3, want 0.06 x 8/512", p.LR)
			}
		}},
		{"learning rate given", func(s *Settings, _ *Facts) { s.LR = 0.3 }, func(t *testing.T, p RunPlan) {
			if p.LR != 0.3 {
				t.Errorf("lr %g, want --lr 0.3", p.LR)
			}
		}},
		{"evaluation every epochs", func(s *Settings, _ *Facts) { s.EvalEvery = 2 }, func(t *testing.T, p RunPlan) {
			if p.EvalPeriod != 14 {
				t.Errorf("evaluation every %d iterations, want 2 epochs of 7", p.EvalPeriod)
			}
		}},
		{"evaluation every iterations", func(s *Settings, _ *Facts) { s.EvalEveryIters = 5 }, func(t *testing.T, p RunPlan) {
			if p.EvalPeriod != 5 {
				t.Errorf("evaluation every %d iterations, want 5", p.EvalPeriod)
			}
		}},
		{"estimator typed once", func(s *Settings, _ *Facts) { s.Estimator = "VR-RTMLMC" }, func(t *testing.T, p RunPlan) {
			if p.Estimator != (mlmc.Kind{Method: mlmc.RTMLMC, VR: true}) || p.MLMC.MaxLevel != 3 || p.MLMC.CorrectionPasses != 1 {
				t.Errorf("estimator %v, mlmc %+v", p.Estimator, p.MLMC)
			}
		}},
		{"lsgd splits its draw over ranks", func(s *Settings, f *Facts) { f.Ranks = 4 }, func(t *testing.T, p RunPlan) {
			if !p.SplitBatch || p.Ranks != 4 || p.ExpectedImages != 8 || p.ExpectedEvals != 1 {
				t.Errorf("split %v, %d ranks, %g images, %g evaluations; want a split draw of 8 images, 1 evaluation", p.SplitBatch, p.Ranks, p.ExpectedImages, p.ExpectedEvals)
			}
		}},
		{"mlmc draws on every rank", func(s *Settings, f *Facts) { s.Estimator, f.Ranks = "vmlmc", 2 }, func(t *testing.T, p RunPlan) {
			if p.SplitBatch || p.ExpectedImages != 2*24 || p.ExpectedEvals != 2*7 {
				t.Errorf("split %v, %g images, %g evaluations; want 2 x 24 and 2 x 7", p.SplitBatch, p.ExpectedImages, p.ExpectedEvals)
			}
		}},
		{"resume keeps the recorded level law", func(s *Settings, f *Facts) {
			s.Estimator, s.LevelLaw = "rtmlmc", LevelLawMeasured+"gone.json"
			f.Previous = &RunPlan{LevelProbs: []float64{0.5, 0.3, 0.2}}
		}, func(t *testing.T, p RunPlan) {
			if !slices.Equal(p.LevelProbs, []float64{0.5, 0.3, 0.2}) || !slices.Equal(p.MLMC.LevelProbs, p.LevelProbs) || p.LevelDraws != nil {
				t.Errorf("level law %v (mlmc %v), draws %v; want the recorded 0.5, 0.3, 0.2", p.LevelProbs, p.MLMC.LevelProbs, p.LevelDraws)
			}
		}},
		{"resume where fewer levels fit", func(s *Settings, f *Facts) {
			s.Estimator, s.MaxServable, f.ServableLevel, f.Previous = "rumlmc", 5, 4, &RunPlan{}
		}, func(t *testing.T, p RunPlan) {
			if p.MaxServable != 4 || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "serves levels up to 4, the run's earlier sessions up to 5") {
				t.Errorf("servable %d, notes %q; want 4 and a note", p.MaxServable, p.Notes)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f := base(), facts
			if tc.modify != nil {
				tc.modify(&s, &f)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			p, err := Resolve(s, f)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
			// Pure: the same settings and facts give the same plan.
			if again, err := Resolve(s, f); err != nil || !reflect.DeepEqual(again, p) {
				t.Errorf("a second Resolve gave %+v, %v", again, err)
			}
		})
	}
}

func TestResolveRefuses(t *testing.T) {
	s := Defaults()
	s.MinLevel, s.MaxLevel, s.Iterations, s.Out = 1, 3, 10, "runs/x"
	for _, tc := range []struct {
		name   string
		modify func(*Settings, *Facts)
		want   string
	}{
		{"max level above the servable", func(_ *Settings, f *Facts) { f.ServableLevel = 2 }, "--max-level 3"},
		{"one image", func(_ *Settings, f *Facts) { f.TrainImages = 1 }, "at least 2"},
		{"a draw that does not split over the ranks", func(_ *Settings, f *Facts) { f.Ranks = 3 }, "3 ranks cannot do evenly"},
		{"measured law not read", func(s *Settings, _ *Facts) { s.Estimator, s.LevelLaw = "rtmlmc", LevelLawMeasured+"x.json" }, "not read"},
		{"recorded law without --level-law", func(_ *Settings, f *Facts) { f.Previous = &RunPlan{LevelDraws: []int{1, 1, 1}} }, "without --level-law"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f := s, Facts{TrainImages: 50, ServableLevel: 5, Ranks: 1}
			tc.modify(&s, &f)
			if _, err := Resolve(s, f); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A run folder written by an earlier version of the trainer resumes: its
// config.json (testdata/earlier-config.json, written by the version
// before the settings and the plan were two types, for the settings
// below) reads back into the same settings and plan this version writes,
// and a run interrupted at iteration 3 and resumed with that config.json
// ends bit for bit where the uninterrupted run does.
func TestResumeConfigOfAnEarlierVersion(t *testing.T) {
	splits := syntheticSplits(32, 16, 16, 2)
	cfg := tinyConfig(t, "vr-rtmlmc")
	cfg.Iterations, cfg.LR, cfg.WarmupEpochs = 6, 0, 1
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	earlier, err := os.ReadFile(filepath.Join("testdata", "earlier-config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var old, now map[string]any
	written, err := os.ReadFile(filepath.Join(cfg.Out, runfolder.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(json.Unmarshal(earlier, &old), json.Unmarshal(written, &now)); err != nil {
		t.Fatal(err)
	}
	// The loss became a setting of its own after the earlier version.
	if now["loss"] != "ntxent" {
		t.Errorf("config.json records loss %v, want ntxent", now["loss"])
	}
	delete(now, "loss")
	for _, m := range []map[string]any{old, now} {
		delete(m, "out")
		delete(m, "device_log")
		delete(m, "version")
	}
	if !reflect.DeepEqual(old, now) {
		t.Errorf("config.json differs from the earlier version's:\n%v\nearlier:\n%v", now, old)
	}

	parts := cfg
	parts.Out = filepath.Join(t.TempDir(), "interrupted")
	hooks := tinyHooks(splits)
	hooks.StopAfter = 3
	if _, err := Train(context.Background(), parts, hooks); !errors.Is(err, ErrIterationsLimit) {
		t.Fatalf("first session: %v, want ErrIterationsLimit", err)
	}
	if err := os.WriteFile(filepath.Join(parts.Out, runfolder.ConfigFile), earlier, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(context.Background(), parts.Out, nil, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	want, got := paramsOf(t, cfg.Out), paramsOf(t, parts.Out)
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("tensor %s differs after resuming with the earlier config.json", name)
		}
	}
}

// SogCLR's gamma: constant, or a cosine from 1 at the first iteration to
// --sogclr-gamma at the last; 0 is the default 0.9.
func TestSogCLRGammaSchedule(t *testing.T) {
	cases := []struct {
		gamma       float64
		decay       string
		iter, total int
		want        float64
	}{
		{0, "", 5, 10, contrastive.DefaultSogCLRGamma},
		{0.5, "", 0, 10, 0.5},
		{0.5, "constant", 9, 10, 0.5},
		{0.5, "cosine", 0, 11, 1},
		{0.5, "cosine", 5, 11, 0.75},
		{0.5, "cosine", 10, 11, 0.5},
		{0.5, "cosine", 0, 1, 0.5}, // one iteration: no decay to make
	}
	for _, tc := range cases {
		c := Settings{Estimator: "lsgd", Loss: "sogclr", SogCLRGamma: tc.gamma, SogCLRGammaDecay: tc.decay}
		if got := c.gammaSchedule().At(tc.iter, tc.total); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("gamma %g, decay %q, iteration %d of %d: %g, want %g", tc.gamma, tc.decay, tc.iter, tc.total, got, tc.want)
		}
	}
}
