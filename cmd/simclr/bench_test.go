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
