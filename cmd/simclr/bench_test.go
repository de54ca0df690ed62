package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestBenchJSONReportsPositiveFigures(t *testing.T) {
	var out bytes.Buffer
	o := benchOptions{device: "cpu", precision: "tf32", images: 2, steps: 1, width: 1.0 / 16,
		inputSize: 16, tau: 0.5, multilevel: true, seed: 1, json: true,
		cpuProfile: filepath.Join(t.TempDir(), "bench.prof")}
	if err := runBench(&out, io.Discard, o); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(o.cpuProfile); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile %s: not written (%v)", o.cpuProfile, err)
	}
	var res benchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	if res.Device != "cpu" || res.BLAS == "" || res.BatchImages != 2 || res.Views != 4 || res.CPUModel == "" || res.CPUCores < 1 {
		t.Errorf("identification wrong: %+v", res)
	}
	for name, v := range map[string]float64{"step_seconds": res.StepSeconds, "views_per_sec": res.ViewsPerSec,
		"gflops_per_sec": res.GFLOPSPerSec, "sgemm_gflops_per_sec": res.SgemmGFLOPSPerSec, "model_gflop_per_step": res.ModelGFLOPPerStep} {
		if !(v > 0) {
			t.Errorf("%s = %g, want > 0", name, v)
		}
	}
	if runtime.GOOS == "linux" && (res.CPUSecondsPerStep == nil || !(*res.CPUSecondsPerStep > 0)) {
		t.Errorf("cpu_seconds_per_step = %v, want > 0 on Linux", res.CPUSecondsPerStep)
	}
	if res.PeakRSSMB != nil && *res.PeakRSSMB <= 0 {
		t.Errorf("peak_rss_mb = %g", *res.PeakRSSMB)
	}
	// views/s and step time describe the same measurement.
	if d := res.ViewsPerSec*res.StepSeconds - 4; d*d > 1e-9 {
		t.Errorf("views_per_sec %g x step_seconds %g != 4 views", res.ViewsPerSec, res.StepSeconds)
	}
}

// TestBenchOpTimes: --op-times lists every convolution shape of the
// network (ResNet-18 has 3x3 stride-1, 3x3 stride-2 and 1x1 stride-2
// ones, forward and backward) and the other operations of a step, with
// the calls a step makes, and the timed operations fit in the step.
func TestBenchOpTimes(t *testing.T) {
	var out bytes.Buffer
	o := benchOptions{device: "cpu", precision: "tf32", images: 2, steps: 2, width: 1.0 / 16,
		inputSize: 16, tau: 0.5, seed: 1, json: true, opTimes: true}
	if err := runBench(&out, io.Discard, o); err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	calls := map[string]float64{}
	var wall float64
	for _, r := range res.OpTimes {
		calls[r.Op] = r.CallsPerStep
		wall += r.WallMS
		if r.WallMS < 0 || r.CPUMS < 0 {
			t.Errorf("%s: negative time %+v", r.Op, r)
		}
	}
	// At width 1/16: the stem (from 3 channels) and the first stage (4
	// channels at 16x16: 4 convolutions in 2 blocks), a stride-2 3x3 and
	// its 1x1 shortcut into the second stage.
	for op, want := range map[string]float64{
		"conv forward 3x3/1 4->4 at 16x16":  4,
		"conv backward 3x3/1 4->4 at 16x16": 4,
		"conv forward 3x3/1 3->4 at 16x16":  1,
		"conv forward 3x3/2 4->8 at 16x16":  1,
		"conv forward 1x1/2 4->8 at 16x16":  1,
		"NT-Xent loss":                      1,
	} {
		if calls[op] != want {
			t.Errorf("%s: %g calls per step, want %g (table: %+v)", op, calls[op], want, res.OpTimes)
		}
	}
	if calls["SGD step"] < 1 { // one a parameter tensor
		t.Errorf("no SGD step timed (table: %+v)", res.OpTimes)
	}
	if stepMS := res.StepSeconds * 1e3; !(wall > 0 && wall <= stepMS) {
		t.Errorf("timed operations take %g ms of a %g ms step", wall, stepMS)
	}
}

func TestBenchRejectsBadFlags(t *testing.T) {
	base := benchOptions{device: "cpu", images: 2, steps: 1, width: 1, inputSize: 32, tau: 0.5}
	cases := []struct {
		name   string
		modify func(*benchOptions)
		want   string
	}{
		{"no images", func(o *benchOptions) { o.images = 0 }, "--images"},
		{"no steps", func(o *benchOptions) { o.steps = 0 }, "--steps"},
		{"odd multilevel", func(o *benchOptions) { o.images, o.multilevel = 3, true }, "--multilevel"},
		{"bad width", func(o *benchOptions) { o.width = -1 }, "width"},
		{"bad device", func(o *benchOptions) { o.device = "tpu" }, "tpu"},
		{"unwritable profile", func(o *benchOptions) {
			o.width, o.inputSize, o.cpuProfile = 1.0/16, 8, filepath.Join(os.DevNull, "bench.prof")
		}, "--cpuprofile"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.modify(&o)
			err := runBench(io.Discard, io.Discard, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestCPUModelReadsCpuinfo(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 9B14\n", "AMD EPYC 9B14"},
		{"no model name", "processor\t: 0\nBogoMIPS\t: 50.00\n", "unknown " + runtime.GOARCH + " CPU"},
		{"empty model name", "model name\t:\n", "unknown " + runtime.GOARCH + " CPU"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := cpuModel(p); got != tc.want {
			t.Errorf("%s: cpuModel = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := cpuModel(filepath.Join(dir, "absent")); got != "unknown "+runtime.GOARCH+" CPU" {
		t.Errorf("absent file: %q", got)
	}
}
