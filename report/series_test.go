package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/runfolder"
)

// makeSeedRun is makeRun with a seed, a learning rate, an output folder and
// a probe accuracy in its config and probe files.
func makeSeedRun(t *testing.T, root, name string, seed int, lr, probe float64) *Run {
	t.Helper()
	dir := makeRun(t, filepath.Join(root, name), "vr-rtmlmc", 20, true, true)
	cfg := map[string]any{"dataset": "cifar10", "estimator": "vr-rtmlmc", "min_level": 1, "max_level": 5, "iterations": 20,
		"iterations_per_epoch": 10, "lr": lr, "seed": seed, "out": dir, "workers": seed, "version": "v" + name}
	if err := runfolder.WriteJSON(filepath.Join(dir, runfolder.ConfigFile), cfg); err != nil {
		t.Fatal(err)
	}
	if err := runfolder.WriteJSON(filepath.Join(dir, runfolder.ProbeFile), runfolder.Probe{Top1: probe, Top5: 80}); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGroup(t *testing.T) {
	root := t.TempDir()
	runs := []*Run{
		makeSeedRun(t, root, "vr-lr2", 1, 2, 40),
		makeSeedRun(t, root, "vr-lr1", 1, 1, 30),
		makeSeedRun(t, root, "vr-lr2-s2", 2, 2, 42),
		makeSeedRun(t, root, "vr-lr2-s3", 3, 2, 44),
	}
	tests := []struct {
		merge bool
		names []string
		sizes []int
	}{
		{false, []string{"vr-lr2", "vr-lr1", "vr-lr2-s2", "vr-lr2-s3"}, []int{1, 1, 1, 1}},
		// Seed, output folder, workers and version differ; the learning rate
		// makes vr-lr1 another configuration.
		{true, []string{"vr-lr2 (3 seeds)", "vr-lr1"}, []int{3, 1}},
	}
	for _, tc := range tests {
		got := Group(runs, tc.merge)
		if len(got) != len(tc.names) {
			t.Fatalf("merge %v: %d series, want %d", tc.merge, len(got), len(tc.names))
		}
		for i, s := range got {
			if s.Name != tc.names[i] || len(s.Runs) != tc.sizes[i] {
				t.Errorf("merge %v: series %d is %q of %d runs, want %q of %d", tc.merge, i, s.Name, len(s.Runs), tc.names[i], tc.sizes[i])
			}
		}
	}
	table := SeriesTable(Group(runs, true))
	// Probes 40, 42, 44: mean 42, sample standard deviation 2.
	if !strings.Contains(table, "| vr-lr2 (3 seeds) | 3 |") || !strings.Contains(table, "42.00 ± 2.00") {
		t.Errorf("table has no 3-seed row with probe 42.00 ± 2.00:\n%s", table)
	}
	if !strings.Contains(table, "| vr-lr1 | 1 |") || !strings.Contains(table, "| 30.00 |") {
		t.Errorf("table has no one-run row with probe 30.00:\n%s", table)
	}
	out := filepath.Join(root, "report")
	files, err := Write(runs, out, Options{MergeSeeds: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 7 {
		t.Errorf("wrote %v, want 6 plots and report.md", files)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || string(md) != table {
		t.Errorf("report.md is not SeriesTable's (%v):\n%s", err, md)
	}
}

// A band is the pointwise mean, lowest and highest of aligned curves; a
// shorter run (still going) shortens it.
func TestNewBand(t *testing.T) {
	b := newBand([][]float64{{1, 2, 3}, {3, 4}}, [][]float64{{10, 20, 30}, {14, 16}})
	want := band{x: []float64{2, 3}, mean: []float64{12, 18}, lo: []float64{10, 16}, hi: []float64{14, 20}}
	for name, pair := range map[string][2][]float64{"x": {b.x, want.x}, "mean": {b.mean, want.mean}, "lo": {b.lo, want.lo}, "hi": {b.hi, want.hi}} {
		if len(pair[0]) != len(pair[1]) {
			t.Fatalf("%s = %v, want %v", name, pair[0], pair[1])
		}
		for i := range pair[0] {
			if math.Abs(pair[0][i]-pair[1][i]) > 1e-12 {
				t.Errorf("%s = %v, want %v", name, pair[0], pair[1])
			}
		}
	}
	if p, err := b.polygon(0); err != nil || p == nil || len(p.XYs[0]) != 4 {
		t.Errorf("polygon of a 2-point band: %v, %v", p, err)
	}
	one := newBand([][]float64{{1, 2}}, [][]float64{{5, 6}})
	if p, err := one.polygon(0); err != nil || p != nil {
		t.Errorf("a single run has no band: %v, %v", p, err)
	}
}

// A rerun of a seed is not another seed, and a figure that only some runs
// have says so.
func TestSeriesRepeatsAndMissingFigures(t *testing.T) {
	root := t.TempDir()
	runs := []*Run{
		makeSeedRun(t, root, "a", 1, 2, 40),
		makeSeedRun(t, root, "a-again", 1, 2, 41),
		makeSeedRun(t, root, "a-s2", 2, 2, 42),
	}
	if got := Group(runs, true)[0].Name; got != "a (3 runs, 2 seeds)" {
		t.Errorf("name %q, want a (3 runs, 2 seeds)", got)
	}
	if got := Group([]*Run{makeSeedRun(t, root, "b-e8-s2", 2, 2, 40), makeSeedRun(t, root, "b-e8-s3", 3, 2, 40)}, true)[0].Name; got != "b-e8 (2 seeds)" {
		t.Errorf("name %q, want b-e8 (2 seeds)", got)
	}
	if got := Group(runs[:2], true)[0].Name; got != "a (2 runs, 1 seed)" {
		t.Errorf("name %q, want a (2 runs, 1 seed)", got)
	}
	runs[2].Probe = nil
	if table := SeriesTable(Group(runs, true)); !strings.Contains(table, "40.50 ± 0.71 (2 of 3 runs)") {
		t.Errorf("table does not say that 2 of 3 runs have a probe:\n%s", table)
	}
}

func TestMeanSD(t *testing.T) {
	tests := []struct {
		vs   []float64
		want string
	}{
		{nil, "-"},
		{[]float64{3}, "3.0"},
		{[]float64{1, 2, 3}, "2.0 ± 1.0"},
	}
	for _, tc := range tests {
		if got := meanSD(tc.vs, "%.1f"); got != tc.want {
			t.Errorf("meanSD(%v) = %q, want %q", tc.vs, got, tc.want)
		}
	}
}

// Runs are repetitions of one configuration when their config.json differ
// only in the seed and in where and how they ran; a field that changes
// what is computed keeps them apart. The number of ranks does: with an
// MLMC estimator every rank draws its own levels and the iteration's
// estimate is the mean of the ranks' (more images per iteration, less
// variance), so runs on 1 and 4 ranks are different configurations.
func TestConfigKeySeparatesWhatIsComputed(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{"estimator": "vr-rtmlmc", "lr": 0.5, "seed": 1, "out": "runs/a", "workers": 2,
			"version": "v1", "checkpoint_every": "10m", "dist": "none", "device_log": "x"}
	}
	tests := []struct {
		name  string
		edit  func(map[string]any)
		merge bool
	}{
		{"seed", func(c map[string]any) { c["seed"] = 2 }, true},
		{"bookkeeping", func(c map[string]any) {
			c["out"], c["workers"], c["version"], c["checkpoint_every"], c["device_log"] = "runs/b", 1, "v2", "0s", "y"
		}, true},
		{"communication", func(c map[string]any) { c["dist"], c["dist_addr"] = "mpi", "host:1" }, true},
		{"learning rate", func(c map[string]any) { c["lr"] = 2.0 }, false},
		{"ranks", func(c map[string]any) { c["ranks"] = 4 }, false},
	}
	for _, tc := range tests {
		other := base()
		tc.edit(other)
		if got := configKey(base()) == configKey(other); got != tc.merge {
			t.Errorf("%s: same configuration %v, want %v", tc.name, got, tc.merge)
		}
	}
}

// The legends name the arm from the settings the runs recorded, not their
// folders, and series alike in every setting shown keep apart by folder.
func TestSeriesLabels(t *testing.T) {
	root := t.TempDir()
	runs := []*Run{
		makeSeedRun(t, root, "e10-vrrt-lr2", 1, 2, 40),
		makeSeedRun(t, root, "e10-vrrt-lr2-s2", 2, 2, 42),
		makeSeedRun(t, root, "e10-vrrt-lr1", 1, 1, 30),
	}
	for _, tc := range []struct {
		merge bool
		want  []string
	}{
		{true, []string{"VR RT-MLMC, levels 1-5, lr 2, 2 seeds", "VR RT-MLMC, levels 1-5, lr 1, 1 seed"}},
		{false, []string{"VR RT-MLMC, levels 1-5, lr 2, 1 seed (e10-vrrt-lr2)", "VR RT-MLMC, levels 1-5, lr 2, 1 seed (e10-vrrt-lr2-s2)", "VR RT-MLMC, levels 1-5, lr 1, 1 seed"}},
	} {
		got := Group(runs, tc.merge)
		if len(got) != len(tc.want) {
			t.Fatalf("merge %v: %d series, want %d", tc.merge, len(got), len(tc.want))
		}
		for i, s := range got {
			if s.Label != tc.want[i] {
				t.Errorf("merge %v: series %d labelled %q, want %q", tc.merge, i, s.Label, tc.want[i])
			}
		}
	}
	lsgd := runs[0]
	lsgd.Config.Estimator, lsgd.Config.MaxLevel = "lsgd", 9
	sog := *runs[2]
	sog.Config.Estimator, sog.Config.MaxLevel, sog.Config.SogCLRGamma = "sogclr", 6, 0.9
	if got := armLabel([]*Run{lsgd, runs[1]}); got != "L-SGD, batch 512, lr 2, 2 seeds" {
		t.Errorf("L-SGD label %q", got)
	}
	if got := armLabel([]*Run{&sog}); got != "SogCLR, batch 64, gamma 0.9, lr 1, 1 seed" {
		t.Errorf("SogCLR label %q", got)
	}
}

func TestThousandsLabels(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0"}, {250, "250"}, {1000, "1k"}, {200000, "200k"}, {450560, "450.56k"}, {1.5e6, "1.5M"}, {-2000, "-2k"}} {
		if got := thousandsLabel(c.v); got != c.want {
			t.Errorf("thousandsLabel(%g) = %q, want %q", c.v, got, c.want)
		}
	}
	for _, tk := range (thousands{}).Ticks(0, 450560) {
		if tk.Label != "" && strings.Contains(tk.Label, "000") {
			t.Errorf("tick %g labelled %q, want thousands as k", tk.Value, tk.Label)
		}
	}
}
