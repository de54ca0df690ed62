package train

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/internal/testsupport/synthdata"
	"github.com/simclr-go/simclr/internal/testsupport/testenv"
	"github.com/simclr-go/simclr/runfolder"
)

// syntheticSplits is synthdata.Splits: a small learnable labelled image set.
func syntheticSplits(nTrain, nTest, side, classes int) *data.Splits {
	return synthdata.Splits(nTrain, nTest, side, classes)
}

func tinyConfig(t *testing.T, estimator string) Settings {
	cfg := Defaults()
	cfg.Dataset = "synthetic"
	cfg.Estimator = estimator
	cfg.MinLevel = 1
	cfg.MaxLevel = 3
	cfg.Iterations = 4
	cfg.QE = 2
	cfg.Width = 0.0625
	cfg.ProjDim = 16
	cfg.LR = 0.05
	cfg.Device = "cpu"
	cfg.Workers = 2
	cfg.Probe = false
	cfg.Out = filepath.Join(t.TempDir(), "run")
	return cfg
}

// tinyHooks is a session on the CPU backend with the built-in SGEMM, not
// the one New's start-up race picks: on a loaded machine the race can
// pick the system BLAS instead, whose other rounding would change every
// bit-for-bit comparison (the golden losses were recorded with the
// built-in kernel; a resumed run is compared with a whole one).
func tinyHooks(splits *data.Splits) Session {
	b := cpu.New()
	if err := b.SetGemmKind(blas.KindBuiltin); err != nil {
		panic(fmt.Sprintf("the built-in SGEMM: %v", err))
	}
	return Session{Log: ioDiscard{}, Splits: splits, Backend: b}
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }

func TestEveryEstimatorRunsAndCountsCost(t *testing.T) {
	splits := syntheticSplits(64, 32, 16, 4)
	for _, name := range []string{"lsgd", "vmlmc", "rtmlmc", "rumlmc", "rrmlmc",
		"vr-lsgd", "vr-vmlmc", "vr-rtmlmc", "vr-rumlmc", "vr-rrmlmc"} {
		t.Run(name, func(t *testing.T) {
			cfg := tinyConfig(t, name)
			sum, err := Train(context.Background(), cfg, tinyHooks(splits))
			if err != nil {
				t.Fatal(err)
			}
			lines, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
			if err != nil {
				t.Fatal(err)
			}
			if len(lines) != cfg.Iterations {
				t.Fatalf("%d metrics lines, want %d", len(lines), cfg.Iterations)
			}
			vr := strings.HasPrefix(name, "vr-")
			var samples, evals int64
			for i, m := range lines {
				if m.Iteration != i+1 {
					t.Errorf("line %d has iteration %d", i, m.Iteration)
				}
				if len(m.Levels) == 0 {
					t.Fatalf("iteration %d queried no level", m.Iteration)
				}
				for _, l := range m.Levels {
					if l < cfg.MinLevel || l > cfg.MaxLevel+3 {
						t.Errorf("iteration %d queried level %d", m.Iteration, l)
					}
					samples += 1 << l
				}
				perDraw := int64(1)
				if vr && i%cfg.QE != 0 { // a VR correction evaluates each draw at x_t and x_{t-1}
					perDraw = 2
				}
				evals += perDraw * int64(len(m.Levels))
				if m.SamplesDrawn != samples || m.Evaluations != evals {
					t.Errorf("iteration %d: samples_drawn %d evaluations %d, want %d and %d (levels %v)",
						m.Iteration, m.SamplesDrawn, m.Evaluations, samples, evals, m.Levels)
				}
				if math.Abs(m.DataEpoch-float64(samples)/64) > 1e-12 || math.Abs(m.Epoch-float64(i+1)/8) > 1e-12 {
					t.Errorf("iteration %d: epoch %g data_epoch %g", m.Iteration, m.Epoch, m.DataEpoch)
				}
				if !(m.Loss > 0) || math.IsInf(m.Loss, 0) {
					t.Errorf("iteration %d: loss %g", m.Iteration, m.Loss)
				}
				switch name {
				case "lsgd", "vr-lsgd":
					if len(m.Levels) != 1 || m.Levels[0] != cfg.MaxLevel {
						t.Errorf("lsgd queried %v, want [%d]", m.Levels, cfg.MaxLevel)
					}
				case "vmlmc", "vr-vmlmc":
					// n_l = ceil(2^(-l) 2^L) = 4, 2, 1 draws at levels 1, 2, 3.
					if got := len(m.Levels); got != 7 {
						t.Errorf("vmlmc queried %v, want 7 draws", m.Levels)
					}
				}
			}
			if sum.SamplesDrawn != samples || sum.Evaluations != evals || sum.Iterations != cfg.Iterations {
				t.Errorf("summary %+v disagrees with the metrics", sum)
			}
			for _, f := range []string{runfolder.ConfigFile, runfolder.ModelFile, runfolder.StateFile} {
				if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
					t.Errorf("run folder lacks %s", f)
				}
			}
		})
	}
}

// paramsOf reads the parameters and batch-norm state a run ended with.
func paramsOf(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	f, err := checkpoint.Read(filepath.Join(dir, runfolder.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, x := range f.Tensors {
		out[x.Name] = x.Data
	}
	return out
}

func TestResumeIsBitForBit(t *testing.T) {
	splits := syntheticSplits(48, 16, 16, 3)
	for _, tc := range []struct {
		estimator     string
		norm, augment string // "" keeps the defaults
		total         int
		stopAt        []int // sessions stop after these many iterations each
		// extra state a resumed session must rebuild: separate halves
		// (their pass count), a validation split, kNN evaluations with
		// precise BN between iterations.
		halves   string
		valSplit int
		evalKNN  bool
	}{
		{"lsgd", "", "", 6, []int{2}, "", 0, false},
		{"vr-rtmlmc", "", "", 7, []int{3, 1}, "", 0, false}, // interrupted inside a VR period (QE = 2) and twice
		{"rrmlmc", "", "", 5, []int{4}, "", 0, false},
		// Group norm keeps only the head's running statistics, and VR the
		// previous iteration's (head_prev_*); the resumed sessions read
		// --norm and --augment back from config.json.
		{"vr-rtmlmc", "group", "paper", 5, []int{3}, "", 0, false},
		{"vr-rtmlmc", "", "", 7, []int{2, 3}, "separate", 8, true},
		// The decoupled losses; SogCLR's u is state (sogclr_u, compared
		// below with the parameters), and its cosine-decayed gamma is a
		// function of the iteration. 48 images: 6 iterations an epoch, so
		// the second epoch's visits update u with gamma < 1.
		{"dcl", "", "", 5, []int{2}, "", 0, false},
		{"sogclr", "", "", 9, []int{4, 3}, "", 0, false},
	} {
		t.Run(strings.Trim(tc.estimator+"/"+tc.norm+"/"+tc.augment+"/"+tc.halves, "/"), func(t *testing.T) {
			whole := tinyConfig(t, tc.estimator)
			whole.Iterations = tc.total
			if tc.norm != "" {
				whole.Norm, whole.Augment = tc.norm, tc.augment
			}
			if tc.halves != "" {
				whole.Halves = tc.halves
			}
			whole.ValSplit = tc.valSplit
			if tc.estimator == "sogclr" {
				whole.SogCLRGamma, whole.SogCLRGammaDecay = 0.7, "cosine"
			}
			if tc.evalKNN {
				whole.EvalEvery, whole.KNNK = 1, 3 // 40 training images: 5 iterations an epoch
			}
			whole.CheckpointEvery = 0
			if _, err := Train(context.Background(), whole, tinyHooks(splits)); err != nil {
				t.Fatal(err)
			}
			parts := whole
			parts.Out = filepath.Join(t.TempDir(), "interrupted")
			hooks := tinyHooks(splits)
			hooks.StopAfter = tc.stopAt[0]
			_, err := Train(context.Background(), parts, hooks)
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("first session: %v, want ErrInterrupted", err)
			}
			for _, stop := range append(tc.stopAt[1:], 0) {
				hooks := tinyHooks(splits)
				hooks.StopAfter = stop
				_, err := Resume(context.Background(), parts.Out, nil, hooks)
				if stop > 0 && !errors.Is(err, ErrInterrupted) {
					t.Fatalf("session stopping after %d: %v", stop, err)
				}
				if stop == 0 && err != nil {
					t.Fatal(err)
				}
			}
			if tc.norm != "" {
				saved, _, err := LoadRun(parts.Out)
				if err != nil || saved.Norm != tc.norm || saved.Augment != tc.augment {
					t.Fatalf("config.json records norm %q and augment %q (%v), want %q and %q", saved.Norm, saved.Augment, err, tc.norm, tc.augment)
				}
				meta, err := checkpoint.ReadMetadata(filepath.Join(parts.Out, runfolder.ModelFile))
				if err != nil || meta["norm"] != tc.norm {
					t.Fatalf("model checkpoint metadata norm %q (%v), want %q", meta["norm"], err, tc.norm)
				}
			}
			want, got := paramsOf(t, whole.Out), paramsOf(t, parts.Out)
			for name, w := range want {
				g := got[name]
				if len(g) != len(w) {
					t.Fatalf("%s: %d values, want %d", name, len(g), len(w))
				}
				for i := range w {
					if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
						t.Fatalf("%s[%d] = %v after interrupt and resume, %v uninterrupted", name, i, g[i], w[i])
					}
				}
			}
			if tc.evalKNN {
				wantEvals, _ := runfolder.ReadLines[runfolder.Eval](filepath.Join(whole.Out, runfolder.EvalFile))
				gotEvals, _ := runfolder.ReadLines[runfolder.Eval](filepath.Join(parts.Out, runfolder.EvalFile))
				if len(wantEvals) == 0 || len(gotEvals) != len(wantEvals) {
					t.Fatalf("resumed run logged %d kNN evaluations, uninterrupted %d (want at least one)", len(gotEvals), len(wantEvals))
				}
				for i, w := range wantEvals {
					if g := gotEvals[i]; g.Iteration != w.Iteration || g.KNNTop1 != w.KNNTop1 || g.TestImages != w.TestImages {
						t.Errorf("kNN evaluation %d: resumed %+v, uninterrupted %+v", i, g, w)
					}
				}
			}
			wantLines, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(whole.Out, runfolder.MetricsFile))
			gotLines, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(parts.Out, runfolder.MetricsFile))
			if len(gotLines) != len(wantLines) {
				t.Fatalf("resumed run logged %d metrics lines, uninterrupted %d", len(gotLines), len(wantLines))
			}
			for i := range wantLines {
				w, g := wantLines[i], gotLines[i]
				if w.Iteration != g.Iteration || w.SamplesDrawn != g.SamplesDrawn || w.Evaluations != g.Evaluations || w.Loss != g.Loss || w.LR != g.LR {
					t.Errorf("metrics line %d: resumed %+v, uninterrupted %+v", i, g, w)
				}
			}
		})
	}
}

// TestResumeKeepsTheSGEMM: the CPU backend's SGEMM is chosen by a timed
// race, which a new process may decide the other way; the checkpoint
// records the kind, and a session resumed on a backend that chose the
// other one computes with the recorded kind and ends bit for bit where the
// uninterrupted run does. The two kinds round differently, so a resume
// that kept the new backend's kind would differ (the last check).
func TestResumeKeepsTheSGEMM(t *testing.T) {
	splits := syntheticSplits(48, 16, 16, 3)
	backendOf := func(kind string) *cpu.Backend {
		b := cpu.New()
		if err := b.SetGemmKind(kind); err != nil {
			testenv.Missing(t, "the %s SGEMM is unavailable (apt-get install libopenblas0): %v", kind, err)
		}
		return b
	}
	run := func(out string, kind string, stop int) error {
		cfg := tinyConfig(t, "vr-rtmlmc")
		cfg.Iterations, cfg.CheckpointEvery, cfg.Out = 5, 0, out
		return errOf(Train(context.Background(), cfg, Session{Log: ioDiscard{}, Splits: splits, Backend: backendOf(kind), StopAfter: stop}))
	}
	dir := t.TempDir()
	whole, other, parts := filepath.Join(dir, "whole"), filepath.Join(dir, "other"), filepath.Join(dir, "parts")
	if err := run(whole, blas.KindBuiltin, 0); err != nil {
		t.Fatal(err)
	}
	if err := run(other, blas.KindLibrary, 0); err != nil {
		t.Fatal(err)
	}
	if err := run(parts, blas.KindBuiltin, 2); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first session: %v, want ErrInterrupted", err)
	}
	resumed := backendOf(blas.KindLibrary)
	if _, err := Resume(context.Background(), parts, nil, Session{Log: ioDiscard{}, Splits: splits, Backend: resumed}); err != nil {
		t.Fatal(err)
	}
	if got := resumed.GemmKind(); got != blas.KindBuiltin {
		t.Errorf("resumed backend computes with the %s SGEMM, want %s as the run trained", got, blas.KindBuiltin)
	}
	same := func(a, b map[string][]float32) bool {
		for name, w := range a {
			g := b[name]
			if len(g) != len(w) {
				return false
			}
			for i := range w {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					return false
				}
			}
		}
		return true
	}
	want := paramsOf(t, whole)
	if !same(want, paramsOf(t, parts)) {
		t.Errorf("parameters after a resume on the other SGEMM differ from the uninterrupted run's")
	}
	if same(want, paramsOf(t, other)) {
		t.Errorf("the run on the library SGEMM ends bit for bit where the built-in kernel's does: the test cannot tell the kinds apart")
	}
}

// errOf drops Train's result, keeping its error.
func errOf(_ any, err error) error { return err }

func TestNonFiniteLossStopsAndKeepsCheckpoint(t *testing.T) {
	splits := syntheticSplits(32, 8, 16, 2)
	cfg := tinyConfig(t, "lsgd")
	cfg.Iterations = 40
	// A checkpoint after every iteration; the learning rate diverges
	// within a few steps.
	cfg.CheckpointEvery = Period(time.Nanosecond)
	cfg.LR = 1e30
	_, err := Train(context.Background(), cfg, tinyHooks(splits))
	if err == nil || !errors.Is(err, contrastive.ErrNonFinite) && !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("error %v, want a non-finite loss", err)
	}
	for _, want := range []string{"training stopped", "last good checkpoint", "--lr"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q should mention %q", err, want)
		}
	}
	f, err := checkpoint.Read(filepath.Join(cfg.Out, runfolder.StateFile))
	if err != nil {
		t.Fatalf("the last good checkpoint is unreadable: %v", err)
	}
	params, _ := f.Get("params")
	for i, v := range params.Data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("checkpointed params[%d] = %v: a non-finite state was saved", i, v)
		}
	}
}

func TestBadSettingsGiveOneClearError(t *testing.T) {
	splits := syntheticSplits(16, 8, 16, 2)
	for _, tc := range []struct {
		name   string
		modify func(*Settings, *Session)
		want   string
	}{
		{"unknown estimator", func(c *Settings, _ *Session) { c.Estimator = "sgd2" }, "--estimator"},
		{"two lengths", func(c *Settings, _ *Session) { c.Epochs = 3 }, "exactly one of"},
		{"level too large", func(c *Settings, _ *Session) { c.MaxLevel = 6 }, "--max-level 6"},
		{"min above max", func(c *Settings, _ *Session) { c.MinLevel = 4 }, "--min-level"},
		{"bad optimizer", func(c *Settings, _ *Session) { c.Optimizer = "adam" }, "--optimizer"},
		{"zero temperature", func(c *Settings, _ *Session) { c.Temperature = 0 }, "--temperature"},
		{"bad device", func(c *Settings, _ *Session) { c.Device = "tpu" }, "--device"},
		{"no out", func(c *Settings, _ *Session) { c.Out = "" }, "--out"},
		{"negative knn-k", func(c *Settings, _ *Session) { c.KNNK = -5 }, "--knn-k -5"},
		{"unknown dist", func(c *Settings, _ *Session) { c.Dist = "gloo" }, "--dist"},
		{"rank beyond world", func(_ *Settings, s *Session) { s.Rank, s.WorldSize = 2, 2 }, "--rank 2"},
		{"nccl on the CPU", func(c *Settings, s *Session) {
			c.Dist, c.DistAddr, s.Rank, s.WorldSize = "nccl", "127.0.0.1:1", 1, 2
		}, "needs the CUDA backend"},
		{"unknown halves", func(c *Settings, _ *Session) { c.Halves = "both" }, "--halves"},
		{"negative val-split", func(c *Settings, _ *Session) { c.ValSplit = -1 }, "--val-split -1"},
		{"val-split of every image", func(c *Settings, _ *Session) { c.ValSplit = 16 }, "--val-split"},
		{"bad norm", func(c *Settings, _ *Session) { c.Norm = "layer" }, "--norm \"layer\""},
		{"bad augment", func(c *Settings, _ *Session) { c.Augment = "byol" }, "--augment"},
		{"gamma without sogclr", func(c *Settings, _ *Session) { c.SogCLRGamma = 0.5 }, "--loss sogclr"},
		{"gamma above 1", func(c *Settings, _ *Session) { c.Loss, c.SogCLRGamma = "sogclr", 1.5 }, "--sogclr-gamma 1.5"},
		{"unknown gamma decay", func(c *Settings, _ *Session) { c.Loss, c.SogCLRGammaDecay = "sogclr", "linear" }, "--sogclr-gamma-decay"},
		{"unknown loss", func(c *Settings, _ *Session) { c.Loss = "infonce" }, "--loss \"infonce\""},
		{"old loss name against --loss", func(c *Settings, _ *Session) { c.Estimator, c.Loss = "dcl", "sogclr" }, "--estimator dcl"},
		{"decoupled loss with levels", func(c *Settings, _ *Session) { c.Estimator, c.Loss = "rtmlmc", "dcl" },
			"--loss dcl with --estimator rtmlmc: rtmlmc needs multilevel queries H^l, which the dcl loss has not; with --loss dcl use --estimator lsgd, or keep --estimator rtmlmc with --loss ntxent"},
		{"decoupled loss at x_{t-1}", func(c *Settings, _ *Session) { c.Estimator, c.Loss = "vr-lsgd", "sogclr" },
			"--loss sogclr with --estimator vr-lsgd: vr-lsgd needs queries at the previous parameters x_{t-1}"},
		{"decoupled loss with both", func(c *Settings, _ *Session) { c.Estimator, c.Loss = "vr-vmlmc", "sogclr" }, "needs multilevel queries H^l and queries at the previous parameters"},
		{"decoupled loss with auto", func(c *Settings, _ *Session) { c.Estimator, c.Loss = "auto", "dcl" }, "--estimator auto with --loss dcl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t, "lsgd")
			sess := tinyHooks(splits)
			tc.modify(&cfg, &sess)
			_, err := Train(context.Background(), cfg, sess)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// An image folder of images smaller than the network's three stride-2
// stages allow used to reach resnet18.New's panic.
func TestImagesTooSmallGiveAnError(t *testing.T) {
	cfg := tinyConfig(t, "lsgd")
	_, err := Train(context.Background(), cfg, tinyHooks(syntheticSplits(16, 8, 4, 2)))
	if err == nil || !strings.Contains(err.Error(), "4x4 images") || !strings.Contains(err.Error(), "at least 8 pixels") {
		t.Fatalf("error %v, want one naming the 4x4 images and the 8-pixel minimum", err)
	}
}

func TestMissingDataNamesFetchCommand(t *testing.T) {
	cfg := tinyConfig(t, "lsgd")
	cfg.Dataset = "cifar10"
	cfg.DataDir = t.TempDir()
	_, err := Train(context.Background(), cfg, Session{Log: ioDiscard{}, Backend: cpu.New()})
	if err == nil || !strings.Contains(err.Error(), "fetch_data.sh") {
		t.Fatalf("error %v, want one naming scripts/fetch_data.sh", err)
	}
}

func TestResumeRejectsDamagedCheckpoint(t *testing.T) {
	splits := syntheticSplits(16, 8, 16, 2)
	cfg := tinyConfig(t, "lsgd")
	cfg.Iterations = 2
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(cfg.Out, runfolder.StateFile)
	data, _ := os.ReadFile(state)
	os.WriteFile(state, data[:len(data)/2], 0o644)
	// The run has finished: extend it, so that the session reads the state.
	longer := func(c *Settings) error { c.Iterations = 4; return nil }
	_, err := Resume(context.Background(), cfg.Out, longer, tinyHooks(splits))
	if err == nil || !strings.Contains(err.Error(), state) {
		t.Fatalf("error %v, want one naming %s", err, state)
	}
	if _, err := Resume(context.Background(), t.TempDir(), nil, tinyHooks(splits)); err == nil || !strings.Contains(err.Error(), "not a run folder") {
		t.Fatalf("resume of an empty folder: %v", err)
	}
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("training into a used run folder: %v", err)
	}
}

func TestEvalEveryAndMaxSamples(t *testing.T) {
	splits := syntheticSplits(64, 32, 16, 4)
	cfg := tinyConfig(t, "rtmlmc")
	cfg.Iterations = 0
	cfg.MaxSamples = 100 // rtmlmc on levels 1..3 draws 2, 4 or 8 images an iteration
	cfg.EvalEvery = 1    // every 8 iterations (64 images / 2^3)
	cfg.KNNK = 10
	sum, err := Train(context.Background(), cfg, tinyHooks(splits))
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
	last := lines[len(lines)-1]
	if last.SamplesDrawn < 100 || last.SamplesDrawn-int64(1<<last.Levels[0]) >= 100 {
		t.Errorf("stopped at %d images drawn, want the first iteration reaching 100 (last drew %v)", last.SamplesDrawn, last.Levels)
	}
	if sum.SamplesDrawn != last.SamplesDrawn {
		t.Errorf("summary says %d images, metrics %d", sum.SamplesDrawn, last.SamplesDrawn)
	}
	evals, err := runfolder.ReadLines[runfolder.Eval](filepath.Join(cfg.Out, runfolder.EvalFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := last.Iteration / 8; len(evals) != want {
		t.Fatalf("%d kNN evaluations in %d iterations, want %d", len(evals), last.Iteration, want)
	}
	for i, e := range evals {
		if e.Iteration != 8*(i+1) || e.K != 10 || e.KNNTop1 < 0 || e.KNNTop1 > 100 || e.TestImages != 32 {
			t.Errorf("eval line %d: %+v", i, e)
		}
	}
}

// signalChildEnv makes the re-executed test binary train until signalled.
const signalChildEnv = "TRAIN_SIGNAL_CHILD_OUT"

func TestSignalSavesCheckpointAndResumes(t *testing.T) {
	splits := syntheticSplits(48, 16, 16, 3)
	if out := os.Getenv(signalChildEnv); out != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		cfg := tinyConfig(t, "vr-lsgd")
		cfg.Out = out
		cfg.Iterations = 100000
		_, err := Train(ctx, cfg, tinyHooks(splits))
		if errors.Is(err, ErrInterrupted) && !errors.Is(err, ErrIterationsLimit) {
			os.Exit(3)
		}
		fmt.Println("child:", err)
		os.Exit(2)
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalSavesCheckpointAndResumes$")
	cmd.Env = append(os.Environ(), signalChildEnv+"="+out)
	var childOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &childOut, &childOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		lines, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(out, runfolder.MetricsFile))
		if len(lines) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the child logged no iterations in 60 s:\n%s", childOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child ended with %v, want exit 3 (interrupted):\n%s", err, childOut.String())
	}
	f, err := checkpoint.Read(filepath.Join(out, runfolder.StateFile))
	if err != nil {
		t.Fatalf("no checkpoint after SIGTERM: %v", err)
	}
	stoppedAt, _ := strconv.Atoi(f.Metadata["iteration"])
	if stoppedAt < 3 {
		t.Fatalf("checkpoint at iteration %d, want >= 3", stoppedAt)
	}
	hooks := tinyHooks(splits)
	hooks.StopAfter = 2
	if _, err := Resume(context.Background(), out, nil, hooks); !errors.Is(err, ErrIterationsLimit) {
		t.Fatalf("resume with StopAfter 2: %v, want ErrIterationsLimit", err)
	}
	lines, _ := runfolder.ReadLines[runfolder.Metrics](filepath.Join(out, runfolder.MetricsFile))
	for i, m := range lines {
		if m.Iteration != i+1 {
			t.Fatalf("metrics line %d has iteration %d: lines lost or repeated across the resume", i, m.Iteration)
		}
	}
	if len(lines) != stoppedAt+2 {
		t.Errorf("%d metrics lines after resuming at %d and running 2 more", len(lines), stoppedAt)
	}
}

// TestModelCheckpointHasTorchvisionLayout reads model.safetensors with a
// few lines written from the format description (not the checkpoint
// package) and checks the torchvision names and shapes PyTorch users load.
func TestModelCheckpointHasTorchvisionLayout(t *testing.T) {
	splits := syntheticSplits(16, 8, 16, 2)
	cfg := tinyConfig(t, "lsgd")
	cfg.Iterations = 1
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.Out, runfolder.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(raw)
	var header map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		DType   string  `json:"dtype"`
		Shape   []int   `json:"shape"`
		Offsets []int64 `json:"data_offsets"`
	}
	// Width 1/16: stage widths 4, 8, 16, 32; projection 16.
	for name, shape := range map[string][]int{
		"conv1.weight":                       {4, 3, 3, 3},
		"bn1.running_var":                    {4},
		"layer1.0.conv2.weight":              {4, 4, 3, 3},
		"layer2.0.downsample.0.weight":       {8, 4, 1, 1},
		"layer2.0.downsample.1.running_mean": {8},
		"layer4.1.bn2.bias":                  {32},
		"head.0.weight":                      {32, 32},
		"head.1.weight":                      {32},
		"head.3.weight":                      {16, 32},
		"head.3.bias":                        {16},
	} {
		var e entry
		if err := json.Unmarshal(header[name], &e); err != nil {
			t.Errorf("%s: missing or malformed (%v)", name, err)
			continue
		}
		if e.DType != "F32" || fmt.Sprint(e.Shape) != fmt.Sprint(shape) {
			t.Errorf("%s: %s %v, want F32 %v", name, e.DType, e.Shape, shape)
		}
		elems := int64(1)
		for _, d := range shape {
			elems *= int64(d)
		}
		if e.Offsets[1]-e.Offsets[0] != 4*elems || 8+int64(n)+e.Offsets[1] > int64(len(raw)) {
			t.Errorf("%s: data_offsets %v for %d elements in a %d-byte file", name, e.Offsets, elems, len(raw))
		}
	}
	var meta map[string]string
	json.Unmarshal(header["__metadata__"], &meta)
	if meta["iteration"] != "1" || meta["width"] != "0.0625" {
		t.Errorf("metadata %v", meta)
	}
}

func TestProgressBarAndLogLines(t *testing.T) {
	splits := syntheticSplits(32, 8, 16, 2)
	for _, progress := range []bool{true, false} {
		cfg := tinyConfig(t, "rtmlmc")
		cfg.Iterations = 3
		var log bytes.Buffer
		hooks := tinyHooks(splits)
		hooks.Log, hooks.Progress = &log, progress
		if _, err := Train(context.Background(), cfg, hooks); err != nil {
			t.Fatal(err)
		}
		want := "iter 3/3 epoch 0.75 loss" // log line of the last iteration
		if progress {
			want = "3/3" // the bar's count
		}
		for _, w := range []string{"device given by caller", want, "images/s", "done: 3 iterations"} {
			if !strings.Contains(log.String(), w) {
				t.Errorf("progress %v: log lacks %q:\n%s", progress, w, log.String())
			}
		}
	}
}

// resumeGroupNormWithState trains a 2-iteration group-norm run of
// estimator, rewrites its state file by edit (which returns the tensors to
// keep, changed as it likes) and resumes it for 2 more iterations, returning
// the state file's path and Resume's error.
func resumeGroupNormWithState(t *testing.T, estimator string, edit func(*checkpoint.File) []checkpoint.Tensor) (string, error) {
	t.Helper()
	splits := syntheticSplits(16, 8, 16, 2)
	cfg := tinyConfig(t, estimator)
	cfg.Norm = "group"
	cfg.Iterations = 2
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(cfg.Out, runfolder.StateFile)
	f, err := checkpoint.Read(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Write(state, edit(f), f.Metadata); err != nil {
		t.Fatal(err)
	}
	longer := func(c *Settings) error { c.Iterations = 4; return nil }
	_, err = Resume(context.Background(), cfg.Out, longer, tinyHooks(splits))
	return state, err
}

// A group-norm run written before the head kept running statistics (an
// empty bn_state) is refused with the reason and the fix, as Model.Load
// refuses its model.safetensors, not with a guess that config.json changed.
func TestResumeRefusesGroupNormStateOfTheOldHead(t *testing.T) {
	state, err := resumeGroupNormWithState(t, "lsgd", func(f *checkpoint.File) []checkpoint.Tensor {
		var old []checkpoint.Tensor
		for _, x := range f.Tensors {
			switch x.Name {
			case "bn_state":
				x = checkpoint.Tensor{Name: x.Name, Shape: []int{0}, Data: nil}
			case "head_prev_mean", "head_prev_var":
				continue
			}
			old = append(old, x)
		}
		return old
	})
	if err == nil || !strings.Contains(err.Error(), "train the network again") || !strings.Contains(err.Error(), state) {
		t.Fatalf("error %v, want one naming %s and saying to train the network again", err, state)
	}
}

// The group-norm head's previous statistics are saved as a pair; a state
// file holding one without the other is damaged and refused, not resumed
// with the current statistics standing in for the previous ones.
func TestResumeRefusesHalfOfTheHeadsPreviousStatistics(t *testing.T) {
	state, err := resumeGroupNormWithState(t, "vr-rtmlmc", func(f *checkpoint.File) []checkpoint.Tensor {
		if _, ok := f.Get("head_prev_var"); !ok {
			t.Fatal("the state file has no head_prev_var")
		}
		var damaged []checkpoint.Tensor
		for _, x := range f.Tensors {
			if x.Name != "head_prev_var" {
				damaged = append(damaged, x)
			}
		}
		return damaged
	})
	if err == nil || !strings.Contains(err.Error(), "head_prev_var") || !strings.Contains(err.Error(), state) {
		t.Fatalf("error %v, want one naming %s and head_prev_var", err, state)
	}
}

// A damaged metadata field of the state file stops a resume with an error
// naming the file and the field; it is never read as 0 (a corrupt
// iteration would otherwise restart the schedule from the beginning).
func TestResumeRefusesCorruptMetadata(t *testing.T) {
	splits := syntheticSplits(16, 8, 16, 2)
	cfg := tinyConfig(t, "vr-lsgd")
	cfg.Iterations = 2
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(cfg.Out, runfolder.StateFile)
	good, err := checkpoint.Read(state)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		field, value string // value "" deletes the field
		want         string
	}{
		{"iteration", "two", `metadata field "iteration" is "two", not an integer`},
		{"iteration", "", `metadata field "iteration" is missing`},
		{"finished", "perhaps", `metadata field "finished" is "perhaps", not true or false`},
		{"ranks", "1.0", `metadata field "ranks" is "1.0", not an integer`},
		{"wall_seconds", "long", `metadata field "wall_seconds" is "long", not a number`},
		{"last_loss", "low", `metadata field "last_loss" is "low", not a number`},
		{"last_excess", "-", `metadata field "last_excess" is "-", not a number`},
		{"passes", "12.5", `metadata field "passes" is "12.5", not an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.field+"="+tc.value, func(t *testing.T) {
			meta := maps.Clone(good.Metadata)
			if _, ok := meta[tc.field]; !ok {
				t.Fatalf("the state file has no %q field", tc.field)
			}
			if tc.value == "" {
				delete(meta, tc.field)
			} else {
				meta[tc.field] = tc.value
			}
			if err := checkpoint.Write(state, good.Tensors, meta); err != nil {
				t.Fatal(err)
			}
			longer := func(c *Settings) error { c.Iterations = 4; return nil }
			_, err := Resume(context.Background(), cfg.Out, longer, tinyHooks(splits))
			if err == nil || !strings.Contains(err.Error(), state) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("resume: %v, want an error naming %s and containing %q", err, state, tc.want)
			}
		})
	}
}
