package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// Every flag is checked before any data is read, the error names the flag,
// and a start that fails (bad flag, missing data, a level the data cannot
// serve) leaves no run folder behind. The data set named here does not
// exist, so an error about it would mean a flag was not checked first.
func TestFailedStartLeavesNothingBehind(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Settings)
		want   string
	}{
		{"b", func(c *Settings) { c.B = 0 }, "--b 0"},
		{"c", func(c *Settings) { c.C = -1 }, "--c -1"},
		{"lsgd-draws", func(c *Settings) { c.NL = -2 }, "--lsgd-draws -2"},
		{"min-level", func(c *Settings) { c.MinLevel = 0 }, "--min-level 0"},
		{"max-level", func(c *Settings) { c.MaxLevel = 17 }, "--max-level 17"},
		{"max-servable-level below", func(c *Settings) { c.MaxServable = 2 }, "--max-servable-level 2"},
		{"max-servable-level negative", func(c *Settings) { c.MaxServable = -1 }, "--max-servable-level -1"},
		{"d1", func(c *Settings) { c.D1 = 0 }, "--d1 0"},
		{"d2", func(c *Settings) { c.D2 = 0 }, "--d2 0"},
		{"qe", func(c *Settings) { c.QE = 0 }, "--qe 0"},
		{"workers", func(c *Settings) { c.Workers = -1 }, "--workers -1"},
		{"proj-dim", func(c *Settings) { c.ProjDim = -4 }, "--proj-dim -4"},
		{"checkpoint-every", func(c *Settings) { c.CheckpointEvery = Period(-time.Second) }, "--checkpoint-every -1s"},
		{"weight-decay", func(c *Settings) { c.WeightDecay = math.NaN() }, "--weight-decay"},
		{"iterations", func(c *Settings) { c.Iterations = -3 }, "--iterations -3"},
		{"dataset name", func(c *Settings) { c.Dataset = "cifar10:extra" }, "--dataset"},
		{"missing data", func(c *Settings) {}, "fetch_data.sh cifar10"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t, "lsgd")
			cfg.Dataset = "cifar10"
			cfg.DataDir = t.TempDir() // empty: loading would fail
			tc.modify(&cfg)
			_, err := Train(context.Background(), cfg, Session{Log: ioDiscard{}, Backend: cpu.New()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
			if _, statErr := os.Stat(cfg.Out); !os.IsNotExist(statErr) {
				t.Errorf("the failed start left %s behind (%v)", cfg.Out, statErr)
			}
		})
	}
	// A level the data cannot serve is found after loading, still before
	// the folder exists.
	cfg := tinyConfig(t, "lsgd")
	cfg.MaxLevel = 5 // 32 images per query from 16
	if _, err := Train(context.Background(), cfg, tinyHooks(syntheticSplits(16, 8, 16, 2))); err == nil || !strings.Contains(err.Error(), "--max-level 5") {
		t.Fatalf("error %v, want one naming --max-level 5", err)
	}
	if _, err := os.Stat(cfg.Out); !os.IsNotExist(err) {
		t.Errorf("the failed start left %s behind", cfg.Out)
	}
}

// writePNG writes a w x h image of noise.
func writePNG(t *testing.T, path string, w, h int, seed uint8) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: uint8(x*7) + seed, G: uint8(y * 5), B: seed * 3, A: 255})
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A folder data set of mixed and large image sizes is loaded at 32x32 for
// training (and hence for the network), not at its own sizes.
func TestFolderImagesAreResizedTo32(t *testing.T) {
	root := t.TempDir()
	sizes := [][2]int{{96, 96}, {48, 40}, {20, 20}, {33, 64}}
	for i, sz := range sizes {
		for _, split := range []string{"train", "test"} {
			class := []string{"a", "b"}[i%2]
			writePNG(t, filepath.Join(root, split, class, fmt.Sprintf("%d.png", i)), sz[0], sz[1], uint8(i))
		}
	}
	cfg := tinyConfig(t, "lsgd")
	cfg.Dataset = "folder:" + root
	splits, err := LoadSplits(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		h, w int
	}{{"train", splits.Train.H, splits.Train.W}, {"test", splits.Test.H, splits.Test.W}} {
		if s.h != ImageSize || s.w != ImageSize {
			t.Errorf("%s images are %dx%d, want %dx%d", s.name, s.h, s.w, ImageSize, ImageSize)
		}
	}
	net, err := ModelConfig(cfg, splits)
	if err != nil || net.InputSize != ImageSize {
		t.Errorf("network input %d (%v), want %d", net.InputSize, err, ImageSize)
	}
}

// logBuffer collects a run's log.
type logBuffer struct{ bytes.Buffer }

// Periodic checkpoints are by wall time (default 10 minutes): with a
// period shorter than an iteration every iteration but the last (which the
// final checkpoint covers) writes one; with 0 none does.
func TestCheckpointsEveryWallPeriod(t *testing.T) {
	if got := Defaults().CheckpointEvery; got != Period(10*time.Minute) {
		t.Errorf("default --checkpoint-every %s, want 10m0s", got)
	}
	tests := []struct {
		every Period
		want  []int
	}{{Period(time.Nanosecond), []int{1, 2, 3}}, {0, nil}}
	for _, tc := range tests {
		cfg := tinyConfig(t, "lsgd")
		cfg.CheckpointEvery = tc.every
		var log logBuffer
		hooks := tinyHooks(syntheticSplits(32, 8, 16, 2))
		hooks.Log = &log
		if _, err := Train(context.Background(), cfg, hooks); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, line := range strings.Split(log.String(), "\n") {
			var it int
			if _, err := fmt.Sscanf(line, "checkpoint at iteration %d", &it); err == nil {
				got = append(got, it)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("--checkpoint-every %s: checkpoints at %v, want %v\n%s", tc.every, got, tc.want, log.String())
		}
	}
}

// Period reads config.json's duration, and an older file's iteration count
// as the default.
func TestPeriodJSON(t *testing.T) {
	tests := []struct {
		in   string
		want Period
	}{{`"10m0s"`, Period(10 * time.Minute)}, {`"90s"`, Period(90 * time.Second)}, {`0`, 0}, {`100`, Defaults().CheckpointEvery}}
	for _, tc := range tests {
		var p Period
		if err := p.UnmarshalJSON([]byte(tc.in)); err != nil || p != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.in, p, err, tc.want)
		}
	}
	if err := new(Period).UnmarshalJSON([]byte(`"ten minutes"`)); err == nil {
		t.Error("a bad duration was accepted")
	}
}

// oomBackend is the CPU backend with a device that runs out of memory
// on the failAt-th NT-Xent call: the loss comes back NaN and Sync reports
// the failure until Recover clears it, as the CUDA backend does.
type oomBackend struct {
	tensor.Backend
	calls, failAt int
	failed        error
}

func (f *oomBackend) NTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) tensor.LossResult {
	f.calls++
	if f.calls == f.failAt {
		f.failed = errors.New("cuda: out of GPU memory allocating 3 GiB for the activations of 16 views")
	}
	if f.failed != nil {
		return tensor.LossResult{Loss: math.NaN(), Full: math.NaN()}
	}
	return f.Backend.NTXent(n, d, tau, multilevel, z, dz)
}

func (f *oomBackend) Sync() error {
	if f.failed != nil {
		return f.failed
	}
	return f.Backend.Sync()
}

func (f *oomBackend) Recover() error {
	f.failed = nil
	return nil
}

// A query that fails on the device saves a checkpoint of the iterations
// done before the run stops, and the run resumes from it.
func TestDeviceFailureSavesCheckpoint(t *testing.T) {
	splits := syntheticSplits(32, 8, 16, 2)
	cfg := tinyConfig(t, "vr-lsgd")
	cfg.Iterations = 6
	cfg.CheckpointEvery = 0
	hooks := tinyHooks(splits)
	// VR with QE = 2 queries once at fresh iterations and twice (x_t and
	// x_{t-1}) at corrections: calls 1, 3, 4, 6 end iterations 1..4, so
	// the 5th call fails the 4th iteration.
	hooks.Backend = &oomBackend{Backend: cpu.New(), failAt: 5}
	_, err := Train(context.Background(), cfg, hooks)
	if err == nil || !strings.Contains(err.Error(), "out of GPU memory") || !strings.Contains(err.Error(), "checkpoint of iteration 3 saved") {
		t.Fatalf("error %v, want the device failure and a checkpoint of iteration 3", err)
	}
	meta, err := checkpoint.ReadMetadata(filepath.Join(cfg.Out, runfolder.StateFile))
	if err != nil || meta["iteration"] != "3" {
		t.Fatalf("checkpoint metadata %v, %v; want iteration 3", meta, err)
	}
	sum, err := Resume(context.Background(), cfg.Out, nil, tinyHooks(splits))
	if err != nil || sum.Iterations != 6 {
		t.Fatalf("resume after the failure: %v, %+v", err, sum)
	}
}

// --resume with a longer length extends a run, a finished one too; without
// one it says the run has finished instead of re-running its probe, unless
// the probe is missing; a length that is not longer is refused.
func TestResumeExtendsOrSaysFinished(t *testing.T) {
	splits := syntheticSplits(32, 8, 16, 2)
	cfg := tinyConfig(t, "lsgd")
	cfg.Iterations = 2
	if _, err := Train(context.Background(), cfg, tinyHooks(splits)); err != nil {
		t.Fatal(err)
	}
	_, err := Resume(context.Background(), cfg.Out, nil, tinyHooks(splits))
	if err == nil || !strings.Contains(err.Error(), "has finished") || !strings.Contains(err.Error(), "--iterations 2") {
		t.Fatalf("resuming a finished run: %v, want it to say so", err)
	}
	iterations := func(n int) func(*Settings) error {
		return func(c *Settings) error { c.Epochs, c.Iterations, c.MaxSamples = 0, n, 0; return nil }
	}
	if _, err := Resume(context.Background(), cfg.Out, iterations(1), tinyHooks(splits)); err == nil || !strings.Contains(err.Error(), "--iterations 1 does not extend") {
		t.Fatalf("a shorter length: %v, want a refusal", err)
	}
	epochs := func(c *Settings) error { c.Epochs, c.Iterations = 1, 0; return nil } // 4 iterations of 8 images
	sum, err := Resume(context.Background(), cfg.Out, epochs, tinyHooks(splits))
	if err != nil || sum.Iterations != 4 {
		t.Fatalf("extending to 1 epoch: %v, %+v", err, sum)
	}
	saved, plan, err := LoadRun(cfg.Out)
	if err != nil || saved.Epochs != 1 || saved.Iterations != 0 || plan.TotalIters != 4 {
		t.Errorf("config.json after extending: %+v, %+v, %v", saved, plan, err)
	}
	lines, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
	if err != nil || len(lines) != 4 || lines[3].Iteration != 4 {
		t.Errorf("metrics.jsonl after extending: %d lines, %v", len(lines), err)
	}
	// Finished, without its probe: the session runs the probe only.
	probe := func(c *Settings) error { c.Probe = true; return nil }
	sum, err = Resume(context.Background(), cfg.Out, probe, tinyHooks(splits))
	if err != nil || sum.Iterations != 4 || sum.Probe == nil {
		t.Fatalf("probe of a finished run: %v, %+v", err, sum)
	}
	if _, err := Resume(context.Background(), cfg.Out, probe, tinyHooks(splits)); err == nil || !strings.Contains(err.Error(), "has finished") {
		t.Fatalf("a finished run with its probe: %v, want it to say so", err)
	}
}

// L_B - log(2N - 1) is 0 for embeddings that are all alike (the loss of a
// network that has learnt nothing, whatever N), and metrics.jsonl logs it
// beside L_B: for L-SGD at level 3 it is L_B - log 15.
func TestComparableLoss(t *testing.T) {
	b := cpu.New()
	for _, n := range []int{1, 4, 64} {
		z, dz := b.Alloc(2*n*8), b.Alloc(2*n*8)
		ones := make([]float32, 2*n*8)
		for i := range ones {
			ones[i] = 1
		}
		b.Upload(z, ones)
		res := b.NTXent(n, 8, 0.5, false, z, dz)
		if d := res.Full - contrastive.LossScale(n); math.Abs(d) > 1e-6 {
			t.Errorf("N = %d: L_B of identical embeddings %.9f, log(2N-1) %.9f", n, res.Full, contrastive.LossScale(n))
		}
	}
	cfg := tinyConfig(t, "lsgd")
	if _, err := Train(context.Background(), cfg, tinyHooks(syntheticSplits(32, 8, 16, 2))); err != nil {
		t.Fatal(err)
	}
	lines, err := runfolder.ReadLines[runfolder.Metrics](filepath.Join(cfg.Out, runfolder.MetricsFile))
	if err != nil || len(lines) == 0 {
		t.Fatalf("metrics: %v", err)
	}
	for _, m := range lines {
		if m.LossMinusLog2NMinus1 == nil || math.Abs(*m.LossMinusLog2NMinus1-(m.Loss-math.Log(15))) > 1e-9 {
			t.Errorf("iteration %d: loss %g, loss_minus_log_2n_minus_1 %v; want loss - log 15", m.Iteration, m.Loss, m.LossMinusLog2NMinus1)
		}
	}
}

// memBackend is the CPU backend reporting a given free memory, as the
// CUDA backend does.
type memBackend struct {
	tensor.Backend
	free uint64
}

func (m memBackend) FreeMemory() (uint64, error) { return m.free, nil }

// The largest servable level is capped by the memory a query would need
// (from the model's plan) against what the device has, and start-up says
// so; a --max-level that does not fit is refused naming the flag; on the
// CPU the available RAM comes from /proc/meminfo's MemAvailable.
func TestMemoryCapsServableLevels(t *testing.T) {
	splits := syntheticSplits(64, 8, 16, 2)
	cfg := tinyConfig(t, "rumlmc") // serves up to min(log2 64, 2 + 3) = 5
	cfg.MaxLevel = 2
	net, err := ModelConfig(cfg, splits)
	if err != nil {
		t.Fatal(err)
	}
	model := resnet18.New(cpu.New(), net, 1)
	need := func(l int) uint64 { return queryBytes(model, cpu.New(), l) }
	if !(need(3) < need(4) && need(4) < need(5)) {
		t.Fatalf("query memory does not grow with the level: %d %d %d", need(3), need(4), need(5))
	}
	tests := []struct {
		name    string
		free    uint64
		wantLog string
		wantErr string
	}{
		{"plenty", 1 << 40, "largest servable level 5", ""},
		{"room for level 4", uint64(float64(need(4))/memoryHeadroom) + 1, "largest servable level capped at 4 by memory, below 5", ""},
		{"not even --max-level", uint64(float64(need(2))/memoryHeadroom) - 1, "", "--max-level 2: a level-2 query"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.Out = filepath.Join(t.TempDir(), "run")
			c.Iterations = 1
			var log logBuffer
			hooks := tinyHooks(splits)
			hooks.Backend, hooks.Log = memBackend{Backend: cpu.New(), free: tc.free}, &log
			_, err := Train(context.Background(), c, hooks)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(log.String(), tc.wantLog) {
				t.Fatalf("error %v; log lacks %q:\n%s", err, tc.wantLog, log.String())
			}
		})
	}

	meminfo := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(meminfo, []byte("MemTotal:       16000000 kB\nMemFree:          500000 kB\nMemAvailable:    "+
		strconv.Itoa(int(float64(need(3))/memoryHeadroom/1024)+1)+" kB\n"), 0o644)
	var log logBuffer
	hooks := tinyHooks(splits)
	hooks.Log, hooks.Meminfo = &log, meminfo
	c := cfg
	c.Iterations = 1
	if _, err := Train(context.Background(), c, hooks); err != nil {
		t.Fatal(err)
	}
	if want := "capped at 3 by memory"; !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "MemAvailable") {
		t.Errorf("log lacks %q from MemAvailable:\n%s", want, log.String())
	}
	if _, err := memAvailable(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing meminfo file gave no error")
	}
}

// A run whose levels were capped by memory keeps that cap when resumed
// where more memory is free: config.json records it, so RU-MLMC's level
// law, and with it every draw, continue as in one session (here checked
// bit for bit against an uninterrupted run under the cap).
func TestResumeKeepsTheMemoryCap(t *testing.T) {
	splits := syntheticSplits(64, 8, 16, 2)
	cfg := tinyConfig(t, "rumlmc") // serves up to min(log2 64, 2 + 3) = 5 uncapped
	cfg.MaxLevel, cfg.Iterations, cfg.CheckpointEvery = 2, 12, 0
	net, err := ModelConfig(cfg, splits)
	if err != nil {
		t.Fatal(err)
	}
	capped := uint64(float64(queryBytes(resnet18.New(cpu.New(), net, 1), cpu.New(), 3))/memoryHeadroom) + 1
	hooks := func(free uint64, stop int, log *logBuffer) Session {
		// The runs compared bit for bit all compute with tinyHooks's
		// built-in SGEMM, not each with the kind New's start-up race picks.
		h := tinyHooks(splits)
		h.Backend, h.StopAfter, h.Log = memBackend{Backend: h.Backend, free: free}, stop, log
		return h
	}
	var wholeLog, firstLog, resumedLog logBuffer
	whole := cfg
	if _, err := Train(context.Background(), whole, hooks(capped, 0, &wholeLog)); err != nil {
		t.Fatal(err)
	}
	parts := cfg
	parts.Out = filepath.Join(t.TempDir(), "interrupted")
	if _, err := Train(context.Background(), parts, hooks(capped, 4, &firstLog)); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first session: %v, want ErrInterrupted", err)
	}
	if saved, _, err := LoadRun(parts.Out); err != nil || saved.MaxServable != 3 {
		t.Fatalf("config.json: max_servable_level %d (%v), want the cap 3", saved.MaxServable, err)
	}
	if _, err := Resume(context.Background(), parts.Out, nil, hooks(1<<40, 0, &resumedLog)); err != nil {
		t.Fatal(err)
	}
	if want := "largest servable level 3"; !strings.Contains(resumedLog.String(), want) {
		t.Errorf("resumed with plenty of memory, the log lacks %q:\n%s", want, resumedLog.String())
	}
	want, got := paramsOf(t, whole.Out), paramsOf(t, parts.Out)
	for name, w := range want {
		for i := range w {
			if math.Float32bits(got[name][i]) != math.Float32bits(w[i]) {
				t.Fatalf("%s[%d] = %v after resume, %v uninterrupted", name, i, got[name][i], w[i])
			}
		}
	}
}
