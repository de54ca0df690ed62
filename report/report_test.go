package report

import (
	"bytes"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/train"
)

// makeRun writes a run folder the way the trainer does.
func makeRun(t *testing.T, dir, estimator string, iters int, withEval, withProbe bool) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"dataset": "cifar10", "estimator": estimator, "min_level": 1, "max_level": 5, "iterations": iters, "iterations_per_epoch": 10}
	if err := runfolder.WriteJSON(filepath.Join(dir, runfolder.ConfigFile), cfg); err != nil {
		t.Fatal(err)
	}
	m, _ := runfolder.OpenAppender(filepath.Join(dir, runfolder.MetricsFile))
	var samples int64
	for i := 1; i <= iters; i++ {
		samples += 32
		m.Append(runfolder.Metrics{Iteration: i, Epoch: float64(i) / 10, DataEpoch: float64(samples) / 320, Levels: []int{5},
			SamplesDrawn: samples, Evaluations: int64(i), Loss: 5 - float64(i)/float64(iters), LR: 0.1, WallSeconds: float64(i) * 0.5})
	}
	m.Close()
	if withEval {
		e, _ := runfolder.OpenAppender(filepath.Join(dir, runfolder.EvalFile))
		for i := 10; i <= iters; i += 10 {
			e.Append(runfolder.Eval{Iteration: i, SamplesDrawn: int64(32 * i), WallSeconds: float64(i) * 0.5, KNNTop1: 20 + float64(i)/2, K: 200})
		}
		e.Close()
	}
	if withProbe {
		runfolder.WriteJSON(filepath.Join(dir, runfolder.ProbeFile), runfolder.Probe{Top1: 41.25, Top5: 88.5})
	}
	return dir
}

func TestWriteReport(t *testing.T) {
	root := t.TempDir()
	a := makeRun(t, filepath.Join(root, "lsgd-run"), "lsgd", 40, true, true)
	b := makeRun(t, filepath.Join(root, "vr-rt-run"), "vr-rtmlmc", 30, false, false)
	var runs []*Run
	for _, dir := range []string{a, b} {
		r, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	out := filepath.Join(root, "report")
	files, err := Write(runs, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"loss_vs_samples.png", "accuracy_vs_samples.png", "loss_vs_iterations.png", "accuracy_vs_iterations.png",
		"loss_vs_wall.png", "accuracy_vs_wall.png", "report.md"}
	if len(files) != len(want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	for _, name := range want {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".png") {
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s is not a PNG: %v", name, err)
			}
			if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
				t.Errorf("%s is only %v", name, b)
			}
		}
	}
	table, _ := os.ReadFile(filepath.Join(out, "report.md"))
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines, want header, rule and 2 runs:\n%s", len(lines), table)
	}
	// The final loss 4 at level 5 (N = 32) is shown as 4 - log 63 = -0.1431.
	for _, want := range []string{"| lsgd-run | cifar10 | lsgd | 1..5 | 4.00 | 4.00 | 1280 | 40 | 20.0 s | -0.1431 | 40.00% | 41.25% | 88.50% |",
		"| vr-rt-run | cifar10 | vr-rtmlmc | 1..5 | 3.00 | 3.00 | 960 | 30 | 15.0 s | -0.1431 | - | - | - |"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestAccuracyPlotsSkippedWithoutEvaluations(t *testing.T) {
	root := t.TempDir()
	r, err := Load(makeRun(t, filepath.Join(root, "a"), "lsgd", 5, false, false))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Write([]*Run{r}, filepath.Join(root, "out"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(f, "accuracy") {
			t.Errorf("wrote %s for a run without evaluations", f)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	root := t.TempDir()
	if _, err := Load(root); err == nil || !strings.Contains(err.Error(), "not a run folder") {
		t.Errorf("empty folder: %v", err)
	}
	dir := makeRun(t, filepath.Join(root, "r"), "lsgd", 3, false, false)
	os.Remove(filepath.Join(dir, runfolder.MetricsFile))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "no metrics") {
		t.Errorf("no metrics: %v", err)
	}
	os.WriteFile(filepath.Join(dir, runfolder.MetricsFile), []byte("{\"iteration\":1}\nnot json\n{\"iteration\":3}\n"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("damaged metrics: %v", err)
	}
	// A damaged last line is what a crash mid-append leaves: skipped.
	os.WriteFile(filepath.Join(dir, runfolder.MetricsFile), []byte("{\"iteration\":1}\n{\"iterat"), 0o644)
	r, err := Load(dir)
	if err != nil || len(r.Metrics) != 1 {
		t.Errorf("torn last line: %v, %d lines", err, len(r.Metrics))
	}
}

// The plotted loss is L_B - log(2N - 1): as logged, or for an older run
// whose iteration used one level, computed from it; unknown for an old
// line that mixed levels.
func TestComparableLoss(t *testing.T) {
	logged := -0.25
	tests := []struct {
		name string
		m    runfolder.Metrics
		want float64
		ok   bool
	}{
		{"logged", runfolder.Metrics{Loss: 9, Levels: []int{3, 5}, LossMinusLog2NMinus1: &logged}, -0.25, true},
		{"one level (N = 8)", runfolder.Metrics{Loss: 2, Levels: []int{3, 3}}, 2 - math.Log(15), true},
		{"mixed levels", runfolder.Metrics{Loss: 2, Levels: []int{1, 4}}, 0, false},
		{"no levels", runfolder.Metrics{Loss: 2}, 0, false},
	}
	for _, tc := range tests {
		got, ok := ComparableLoss(tc.m)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %g, %v; want %g, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAccuracyAxis(t *testing.T) {
	tests := []struct {
		name         string
		lo, hi       float64
		fixed        *Range
		wantLo, want float64
	}{
		// Curves between 40% and 45%: a tenth of the span either side.
		{"fitted", 40, 45, nil, 39.5, 45.5},
		// One point (or runs that agree): widened to 5 points about it.
		{"one point", 41.25, 41.25, nil, 38.75, 43.75},
		// Near the ends of the scale the range stays within 0..100.
		{"near zero", 0.5, 1, nil, 0, 5},
		{"near 100", 99, 99.5, nil, 95, 100},
		{"fixed", 40, 45, &Range{0, 100}, 0, 100},
	}
	for _, tc := range tests {
		lo, hi := accuracyAxis(tc.lo, tc.hi, tc.fixed)
		if math.Abs(lo-tc.wantLo) > 1e-9 || math.Abs(hi-tc.want) > 1e-9 {
			t.Errorf("%s: accuracyAxis(%g, %g) = %g..%g, want %g..%g", tc.name, tc.lo, tc.hi, lo, hi, tc.wantLo, tc.want)
		}
	}
}

// The accuracy plot's y axis follows the data (kNN 25-40%, probe 41.25%
// in makeRun's run) unless a range is given, and the legend of a saved
// figure lies to the right of the data area, overlapping nothing of it.
func TestAccuracyPlotFitsDataAndLegendIsOutside(t *testing.T) {
	root := t.TempDir()
	r, err := Load(makeRun(t, filepath.Join(root, "run"), "lsgd", 40, true, true))
	if err != nil {
		t.Fatal(err)
	}
	series := Group([]*Run{r}, false)
	p, err := accuracyPlot(series, axes[0], nil)
	if err != nil || p == nil {
		t.Fatalf("accuracyPlot: %v, %v", p, err)
	}
	// Data 25..41.25, margin 1.625 either side.
	if math.Abs(p.Y.Min-23.375) > 1e-9 || math.Abs(p.Y.Max-42.875) > 1e-9 {
		t.Errorf("fitted y axis %g..%g, want 23.375..42.875", p.Y.Min, p.Y.Max)
	}
	fixed, err := accuracyPlot(series, axes[0], &Range{0, 100})
	if err != nil || fixed.Y.Min != 0 || fixed.Y.Max != 100 {
		t.Errorf("with --accuracy-range 0,100 the y axis is %g..%g (%v), want 0..100", fixed.Y.Min, fixed.Y.Max, err)
	}
	l, err := save(p, filepath.Join(root, "accuracy.png"))
	if err != nil {
		t.Fatal(err)
	}
	if l.legend.Size().X <= 0 || l.legend.Size().Y <= 0 {
		t.Fatalf("no legend drawn: %+v", l)
	}
	if l.legend.Min.X < l.data.Max.X {
		t.Errorf("the legend (x from %v) overlaps the data area (x up to %v)", l.legend.Min.X, l.data.Max.X)
	}
	if l.legend.Max.X > l.image.Max.X || l.legend.Min.Y < l.image.Min.Y || l.legend.Max.Y > l.image.Max.Y {
		t.Errorf("the legend %v leaves the image %v", l.legend, l.image)
	}
	if l.data.Max.X-l.data.Min.X < plotWidth/2 {
		t.Errorf("the data area %v is squeezed", l.data)
	}
	// The legend's entries are drawn: its top-left area is not blank.
	f, err := os.Open(filepath.Join(root, "accuracy.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	scale := float64(img.Bounds().Dx()) / float64(l.image.Max.X-l.image.Min.X)
	x0, x1 := int(float64(l.legend.Min.X)*scale), int(float64(l.legend.Max.X)*scale)
	// Image rows count down from the top; vg's y counts up.
	y0, y1 := int(float64(l.image.Max.Y-l.legend.Max.Y)*scale), int(float64(l.image.Max.Y-l.legend.Min.Y)*scale)
	inked := 0
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			if r, g, b, _ := img.At(x, y).RGBA(); r < 0x8000 || g < 0x8000 || b < 0x8000 {
				inked++
			}
		}
	}
	if inked == 0 {
		t.Errorf("the legend's area %d..%d x %d..%d of the image is blank", x0, x1, y0, y1)
	}
}

// Every run folder committed under studies/ (and results/) opens as
// `simclr report` opens it (Load: config.json through train.OpenRun, the
// metrics, possibly compressed, the evaluations and the probe) and, for
// the folders that keep only their settings, as `simclr eval` opens a run
// (train.OpenRun). A result file the tools cannot read fails here.
func TestCommittedRunFoldersOpen(t *testing.T) {
	var reported, settingsOnly int
	for _, top := range []string{filepath.Join("..", "studies"), filepath.Join("..", "results")} {
		err := filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != runfolder.ConfigFile {
				return err
			}
			dir := filepath.Dir(path)
			if _, err := runfolder.ReadFile(filepath.Join(dir, runfolder.MetricsFile)); err != nil {
				if _, err := train.OpenRun(dir); err != nil {
					t.Errorf("%s: %v", dir, err)
				}
				settingsOnly++
				return nil
			}
			r, err := Load(dir)
			if err != nil {
				t.Errorf("%s: %v", dir, err)
				return nil
			}
			if last := r.Last(); last.Iteration <= 0 || last.SamplesDrawn <= 0 {
				t.Errorf("%s: last metrics line %+v has no iterations or images", dir, last)
			}
			reported++
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	// 126 committed runs keep their metrics; a walk that finds far fewer
	// is looking in the wrong place.
	if reported < 120 {
		t.Errorf("opened %d run folders with metrics (and %d with settings only), want the 126 committed", reported, settingsOnly)
	}
}
