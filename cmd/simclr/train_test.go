package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/internal/testsupport/synthdata"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/train"
)

// execute runs the root command with args and returns stdout, stderr and
// the error main would print.
func execute(args ...string) (string, string, error) {
	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs(args)
	err := root.Execute()
	return stdout.String(), stderr.String(), err
}

// imageFolder writes a tiny image-folder data set and returns its root
// (synthdata.ImageFolder).
func imageFolder(t *testing.T, nTrain, nTest int) string {
	return synthdata.ImageFolder(t, nTrain, nTest)
}

func TestTrainEvalReportEndToEnd(t *testing.T) {
	data := imageFolder(t, 32, 16)
	run := filepath.Join(t.TempDir(), "run")
	stdout, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "3", "--max-level", "3",
		"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--probe-baseline", "--estimator", "vr-rtmlmc", "--qe", "2")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	for _, want := range []string{"3 iterations", "linear probe: top-1", "same network at initialisation"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("train output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "device cpu") {
		t.Errorf("the log does not say which device is used:\n%s", stderr)
	}
	var probe runfolder.Probe
	if err := runfolder.ReadJSON(filepath.Join(run, runfolder.ProbeFile), &probe); err != nil || probe.BaselineTop1 == nil {
		t.Errorf("linear_probe.json: %v %+v", err, probe)
	}
	_, plan, err := train.LoadRun(run)
	if err != nil || plan.Version == "" || plan.DeviceLog == "" || plan.TotalIters != 3 {
		t.Errorf("config.json: %v %+v", err, plan)
	}

	stdout, stderr, err = execute("eval", "knn", "--run", run, "--device", "cpu", "--knn-k", "5", "--json")
	if err != nil || !strings.Contains(stdout, `"top1"`) {
		t.Fatalf("eval knn: %v\n%s\n%s", err, stdout, stderr)
	}
	stdout, stderr, err = execute("eval", "linear-probe", "--checkpoint", filepath.Join(run, runfolder.ModelFile),
		"--dataset", "folder:"+data, "--device", "cpu")
	if err != nil || !strings.Contains(stdout, "linear probe") {
		t.Fatalf("eval linear-probe --checkpoint: %v\n%s\n%s", err, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "report")
	stdout, _, err = execute("report", run, "--out", out)
	if err != nil || !strings.Contains(stdout, "| run |") {
		t.Fatalf("report: %v\n%s", err, stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "loss_vs_samples.png")); err != nil {
		t.Error(err)
	}

	// Changing a setting on resume is refused; resuming a finished run
	// says so; a longer length extends it.
	if _, _, err := execute("train", "--resume", run, "--lr", "0.3"); err == nil || !strings.Contains(err.Error(), "--lr cannot change") {
		t.Errorf("resume with --lr: %v", err)
	}
	if _, _, err := execute("train", "--resume", run, "--workers", "1", "--probe=false"); err == nil || !strings.Contains(err.Error(), "has finished") {
		t.Errorf("resume of a finished run: %v, want it to say the run has finished", err)
	}
	if stdout, stderr, err := execute("train", "--resume", run, "--epochs", "1", "--probe=false"); err != nil || !strings.Contains(stdout, "run "+run+": 4 iterations") {
		t.Errorf("resume with --epochs 1 (4 iterations of 8 images): %v\n%s\n%s", err, stdout, stderr)
	}
}

func TestCommandErrors(t *testing.T) {
	empty := t.TempDir()
	garbage := filepath.Join(empty, "garbage.safetensors")
	os.WriteFile(garbage, []byte("this is not a checkpoint at all"), 0o644)
	// A model file whose width metadata is damaged: an error naming the
	// file and the field, not a silent default width.
	badWidth := filepath.Join(empty, "bad-width.safetensors")
	if err := checkpoint.Write(badWidth, []checkpoint.Tensor{{Name: "x", Shape: []int{1}, Data: []float32{0}}}, map[string]string{"width": "narrow"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no length", []string{"train", "--out", filepath.Join(empty, "a")}, "give the training length"},
		{"unknown estimator", []string{"train", "--iterations", "2", "--estimator", "adam", "--out", filepath.Join(empty, "b")}, "--estimator"},
		{"unknown preset", []string{"train", "--preset", "slow"}, "unknown --preset"},
		{"bad flag value", []string{"train", "--iterations", "many"}, "invalid argument"},
		{"missing data", []string{"train", "--iterations", "2", "--dataset", "cifar10", "--data-dir", empty, "--device", "cpu", "--out", filepath.Join(empty, "c")}, "scripts/fetch_data.sh"},
		{"resume nothing", []string{"train", "--resume", empty}, "not a run folder"},
		{"eval without target", []string{"eval", "linear-probe"}, "give --run"},
		{"unreadable checkpoint", []string{"eval", "linear-probe", "--checkpoint", garbage, "--device", "cpu"}, garbage},
		{"damaged checkpoint metadata", []string{"eval", "knn", "--checkpoint", badWidth, "--device", "cpu"}, badWidth + `: metadata field "width" is "narrow", not a number`},
		{"report of a non-run", []string{"report", empty, "--out", filepath.Join(empty, "r")}, "not a run folder"},
		{"reversed accuracy range", []string{"report", empty, "--accuracy-range", "60,40"}, "--accuracy-range 60,40: want 0 <= MIN < MAX <= 100"},
		{"accuracy range without comma", []string{"report", empty, "--accuracy-range", "40"}, "--accuracy-range 40: want MIN,MAX"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := execute(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

// TestIterationsLimitExitsZero: a session stopped by --iterations-limit
// returns no error (simclr exits 0 exactly when Execute returns nil), says
// so, and --resume finishes the run from its checkpoint.
func TestIterationsLimitExitsZero(t *testing.T) {
	data := imageFolder(t, 32, 16)
	run := filepath.Join(t.TempDir(), "run")
	common := []string{"--no-progress"}
	stdout, stderr, err := execute(append([]string{"train", "--dataset", "folder:" + data, "--iterations", "4", "--max-level", "3",
		"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--estimator", "lsgd", "--iterations-limit", "2"}, common...)...)
	if err != nil {
		t.Fatalf("train --iterations-limit 2: %v (a stop as asked must exit 0)\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "stopped at --iterations-limit after iteration 2 with a checkpoint; continue with: simclr train --resume "+run) {
		t.Errorf("train --iterations-limit 2 does not say it stopped as asked:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(run, runfolder.StateFile)); err != nil {
		t.Fatalf("no checkpoint after --iterations-limit: %v", err)
	}
	stdout, stderr, err = execute(append([]string{"train", "--resume", run}, common...)...)
	if err != nil || !strings.Contains(stdout, "4 iterations") || strings.Contains(stdout, "stopped at") {
		t.Errorf("resume after --iterations-limit: %v, want the run finished at 4 iterations:\n%s\n%s", err, stdout, stderr)
	}
}

func TestVersionAndDevices(t *testing.T) {
	stdout, _, err := execute("version")
	if err != nil || !strings.Contains(stdout, "simclr "+version) || !strings.Contains(stdout, "go: go1.") {
		t.Errorf("version: %v\n%s", err, stdout)
	}
	stdout, _, err = execute("devices")
	if err != nil || !strings.Contains(stdout, "training: cpu: ") || !strings.Contains(stdout, "evaluation sgemm: ") || !strings.Contains(stdout, "chosen because: ") || !strings.Contains(stdout, "CUDA") {
		t.Errorf("devices: %v\n%s", err, stdout)
	}
}

func TestPresetFlagsOverride(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		iters, ep int
		width, lr float64
		estimator string
		probeBase bool
	}{
		{[]string{"--preset", "quick"}, 200, 0, 0.125, 0.5, "lsgd", true},
		{[]string{"--preset", "quick", "--iterations", "7", "--estimator", "vr-rtmlmc"}, 7, 0, 0.125, 0.5, "vr-rtmlmc", true},
		{[]string{"--preset", "quick", "--epochs", "2", "--width", "0.25", "--probe-baseline=false"}, 0, 2, 0.25, 0.5, "lsgd", false},
		{[]string{"--iterations", "3", "--max-level", "8"}, 3, 0, 1, 0, "lsgd", false},
	} {
		cfg := train.Defaults()
		fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
		defineTrainFlags(fs, &cfg)
		preset := fs.String("preset", "", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := resolveTrainConfig(fs, cfg, *preset, "")
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got.Iterations != tc.iters || got.Epochs != tc.ep || got.Width != tc.width || got.LR != tc.lr ||
			got.Estimator != tc.estimator || got.ProbeBaseline != tc.probeBase || got.Out == "" {
			t.Errorf("%v: resolved %+v", tc.args, got)
		}
		if *preset == "" && got.MaxLevel != 8 {
			t.Errorf("%v: max level %d", tc.args, got.MaxLevel)
		}
	}
}

// --norm and --augment reach config.json and the model checkpoint; eval
// rebuilds the group-norm network from either; a resume cannot change them.
func TestTrainGroupNormPaperAugmentThenEval(t *testing.T) {
	data := imageFolder(t, 32, 16)
	run := filepath.Join(t.TempDir(), "run")
	_, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "2", "--max-level", "3",
		"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--probe=false",
		"--norm", "group", "--augment", "paper")
	if err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "group norm, paper augmentation") {
		t.Errorf("the log does not state the norm and augmentation:\n%s", stderr)
	}
	cfg, _, err := train.LoadRun(run)
	if err != nil || cfg.Norm != "group" || cfg.Augment != "paper" {
		t.Fatalf("config.json: %v, norm %q, augment %q", err, cfg.Norm, cfg.Augment)
	}
	if stdout, stderr, err := execute("eval", "knn", "--run", run, "--device", "cpu", "--k", "5", "--json"); err != nil || !strings.Contains(stdout, `"top1"`) {
		t.Fatalf("eval knn --run: %v\n%s\n%s", err, stdout, stderr)
	}
	if stdout, stderr, err := execute("eval", "knn", "--checkpoint", filepath.Join(run, runfolder.ModelFile),
		"--dataset", "folder:"+data, "--device", "cpu", "--k", "5"); err != nil {
		t.Fatalf("eval knn --checkpoint: %v\n%s\n%s", err, stdout, stderr)
	}
	for _, flag := range []string{"--norm", "--augment"} {
		value := map[string]string{"--norm": "batch", "--augment": "simclr"}[flag]
		if _, _, err := execute("train", "--resume", run, flag, value); err == nil || !strings.Contains(err.Error(), flag+" cannot change") {
			t.Errorf("resume with %s %s: %v", flag, value, err)
		}
	}
	for _, tc := range [][]string{{"--norm", "layer"}, {"--augment", "byol"}} {
		args := append([]string{"train", "--iterations", "2", "--device", "cpu", "--out", filepath.Join(t.TempDir(), "bad")}, tc...)
		if _, _, err := execute(args...); err == nil || !strings.Contains(err.Error(), tc[0]) {
			t.Errorf("train %s %s: error %v, want one naming %s", tc[0], tc[1], err, tc[0])
		}
	}
}

// On resume only the session flags reach the saved configuration, and
// checkResumeFlags names any other flag given.
func TestResumeAppliesOnlySessionFlags(t *testing.T) {
	saved := train.Defaults()
	saved.LR, saved.Workers, saved.Device = 0.1, 2, "cpu"
	fs := pflag.NewFlagSet("train", pflag.ContinueOnError)
	fromFlags := train.Defaults()
	defineTrainFlags(fs, &fromFlags)
	fs.String("resume", "", "")
	if err := fs.Parse([]string{"--resume", "runs/x", "--workers", "5", "--device", "auto"}); err != nil {
		t.Fatal(err)
	}
	if err := checkResumeFlags(fs, "runs/x"); err != nil {
		t.Fatalf("session flags refused: %v", err)
	}
	got := saved
	if err := applyFlags(fs, &got, func(name string) bool { return sessionFlags[name] }); err != nil {
		t.Fatal(err)
	}
	if got.Workers != 5 || got.Device != "auto" || got.LR != 0.1 {
		t.Errorf("after resume flags: workers %d device %s lr %g; want 5, auto, 0.1", got.Workers, got.Device, got.LR)
	}
	if err := fs.Parse([]string{"--lr", "0.3"}); err != nil {
		t.Fatal(err)
	}
	err := checkResumeFlags(fs, "runs/x")
	if err == nil || !strings.Contains(err.Error(), "--lr cannot change") {
		t.Fatalf("--lr on resume: error %v, want one naming --lr", err)
	}
	// The message lists exactly the flags that may change.
	_, allowed, _ := strings.Cut(err.Error(), "(only ")
	allowed, _, _ = strings.Cut(allowed, " may change")
	offered := map[string]bool{}
	for _, name := range strings.Split(allowed, ", ") {
		offered[strings.TrimPrefix(name, "--")] = true
		if !sessionFlags[strings.TrimPrefix(name, "--")] {
			t.Errorf("the message offers %s, which is not a session flag", name)
		}
	}
	for name := range sessionFlags {
		if !offered[name] {
			t.Errorf("the message does not offer --%s, a session flag: %q", name, allowed)
		}
	}
}

// A --cpuprofile that cannot start (here: a profile already runs) returns
// an error naming the flag and leaves no file behind; its stop function
// may be called twice (bench stops early and again on return).
func TestCPUProfileThatCannotStartLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	stop, err := startCPUProfile(filepath.Join(dir, "first.prof"))
	if err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "second.prof")
	if _, err := startCPUProfile(second); err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("second profile: error %v, want one naming --cpuprofile", err)
	}
	if _, err := os.Stat(second); !os.IsNotExist(err) {
		t.Errorf("the profile that could not start left %s behind (%v)", second, err)
	}
	stop()
	stop()
	if fi, err := os.Stat(filepath.Join(dir, "first.prof")); err != nil || fi.Size() == 0 {
		t.Errorf("first profile not written: %v", err)
	}
}

// Scoring a run again reads the training images its own probe read (its
// --eval-train-subset), so the figure reproduces; --train-subset 0 asks
// for every image.
func TestEvalRunKeepsEvalTrainSubset(t *testing.T) {
	// train's backend and eval's are each made by cpu.New, whose start-up
	// SGEMM race can decide each the other way under load; the probe's
	// figures are compared exactly, so both compute with the built-in
	// kernel (a prediction on a boundary would flip with the rounding).
	t.Setenv(blas.EnvGemm, blas.KindBuiltin)
	data := imageFolder(t, 32, 16)
	run := filepath.Join(t.TempDir(), "run")
	if _, stderr, err := execute("train", "--dataset", "folder:"+data, "--iterations", "2", "--max-level", "3",
		"--width", "0.0625", "--proj-dim", "16", "--device", "cpu", "--out", run, "--eval-train-subset", "16"); err != nil {
		t.Fatalf("train: %v\n%s", err, stderr)
	}
	var own runfolder.Probe
	if err := runfolder.ReadJSON(filepath.Join(run, runfolder.ProbeFile), &own); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args       []string
		wantImages int
	}{
		{nil, 16},
		{[]string{"--train-subset", "0"}, 32},
	} {
		args := append([]string{"eval", "linear-probe", "--run", run, "--device", "cpu", "--json"}, tc.args...)
		stdout, stderr, err := execute(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		var again runfolder.Probe
		if err := json.Unmarshal([]byte(stdout), &again); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stdout)
		}
		if again.TrainImages != tc.wantImages {
			t.Errorf("%v: the probe read %d training images, want %d", args, again.TrainImages, tc.wantImages)
		}
		if tc.wantImages == own.TrainImages && (again.Top1 != own.Top1 || again.L2 != own.L2) {
			t.Errorf("%v: top-1 %v (l2 %g), the run's own probe %v (l2 %g)", args, again.Top1, again.L2, own.Top1, own.L2)
		}
	}
}
