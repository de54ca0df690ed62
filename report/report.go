// Package report compares training runs: it reads run folders (see
// runfolder) and writes PNG plots of the loss and of kNN and
// linear-probe accuracy against samples drawn, iterations and wall time,
// one line per run or, merging seeds, one line per configuration with the
// spread over its seeds, and a Markdown table of their costs and
// accuracies.
package report

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/train"
)

// Run is what the report reads from one run folder.
type Run struct {
	Dir, Name string
	// Config and Plan are the settings and the plan config.json recorded
	// (train.OpenRun).
	Config  train.Settings
	Plan    train.RunPlan
	Metrics []runfolder.Metrics
	Evals   []runfolder.Eval
	Probe   *runfolder.Probe

	configKey string         // config.json less the seed and bookkeeping (see Group)
	settings  map[string]any // the same, decoded: what tells two series apart
	seed      string         // config.json's seed, to count a series' distinct seeds
}

// Load reads the run folder dir. A folder without metrics is an error; a
// run without evaluations simply has none.
func Load(dir string) (*Run, error) {
	tr, err := train.OpenRun(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir)), Config: tr.Settings, Plan: tr.Plan}
	var raw map[string]any
	if err := runfolder.ReadJSON(filepath.Join(dir, runfolder.ConfigFile), &raw); err != nil {
		return nil, err
	}
	r.seed = fmt.Sprint(raw["seed"])
	r.configKey = configKey(raw)
	r.settings = raw
	if r.Metrics, err = runfolder.ReadLines[runfolder.Metrics](filepath.Join(dir, runfolder.MetricsFile)); err != nil {
		return nil, err
	}
	if len(r.Metrics) == 0 {
		return nil, fmt.Errorf("run %s has no metrics yet (%s is missing or empty)", dir, runfolder.MetricsFile)
	}
	if r.Evals, err = runfolder.ReadLines[runfolder.Eval](filepath.Join(dir, runfolder.EvalFile)); err != nil {
		return nil, err
	}
	var p runfolder.Probe
	switch err := runfolder.ReadJSON(filepath.Join(dir, runfolder.ProbeFile), &p); {
	case err == nil:
		r.Probe = &p
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return r, nil
}

// Last is the run's final metrics line.
func (r *Run) Last() runfolder.Metrics { return r.Metrics[len(r.Metrics)-1] }

// axis is one choice of x for the plots.
type axis struct {
	file, label string
	metric      func(runfolder.Metrics) float64
	eval        func(runfolder.Eval) float64
}

var axes = []axis{
	{"samples", "images drawn", func(m runfolder.Metrics) float64 { return float64(m.SamplesDrawn) },
		func(e runfolder.Eval) float64 { return float64(e.SamplesDrawn) }},
	{"iterations", "iterations", func(m runfolder.Metrics) float64 { return float64(m.Iteration) },
		func(e runfolder.Eval) float64 { return float64(e.Iteration) }},
	{"wall", "wall time (s)", func(m runfolder.Metrics) float64 { return m.WallSeconds },
		func(e runfolder.Eval) float64 { return e.WallSeconds }},
}

// Options are the choices of Write.
type Options struct {
	// MergeSeeds draws runs of one configuration under different seeds as
	// one line (see Group); report.md is then SeriesTable's.
	MergeSeeds bool
	// AccuracyRange, when set, fixes the accuracy plots' y axis (percent);
	// otherwise it is fitted to the data (accuracyAxis).
	AccuracyRange *Range
}

// Range is an axis range, Min < Max.
type Range struct{ Min, Max float64 }

// Write writes the plots and report.md into outDir and returns the paths
// written.
func Write(runs []*Run, outDir string, opts Options) ([]string, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("report: no runs given")
	}
	if r := opts.AccuracyRange; r != nil && !(r.Min < r.Max) {
		return nil, fmt.Errorf("report: accuracy range %g..%g: the minimum must be below the maximum", r.Min, r.Max)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	mergeSeeds := opts.MergeSeeds
	series := Group(runs, mergeSeeds)
	var written []string
	for _, ax := range axes {
		path := filepath.Join(outDir, "loss_vs_"+ax.file+".png")
		if err := lossPlot(series, ax, path); err != nil {
			return written, err
		}
		written = append(written, path)
		path = filepath.Join(outDir, "accuracy_vs_"+ax.file+".png")
		p, err := accuracyPlot(series, ax, opts.AccuracyRange)
		if err != nil {
			return written, err
		}
		if p != nil {
			if _, err := save(p, path); err != nil {
				return written, err
			}
			written = append(written, path)
		}
	}
	path := filepath.Join(outDir, "report.md")
	table := Table(runs)
	if mergeSeeds {
		table = SeriesTable(series)
	}
	if err := os.WriteFile(path, []byte(table), 0o644); err != nil {
		return written, fmt.Errorf("report: %w", err)
	}
	return append(written, path), nil
}

// smooth is a trailing moving average over window points: MLMC losses mix
// levels and are noisy per iteration.
func smooth(xs, ys []float64, window int) plotter.XYs {
	out := make(plotter.XYs, len(xs))
	var sum float64
	for i := range xs {
		sum += ys[i]
		if i >= window {
			sum -= ys[i-window]
		}
		out[i].X = xs[i]
		out[i].Y = sum / float64(min(i+1, window))
	}
	return out
}

// spread notes, for a series of several runs, that its band or bar is the
// range over them.
func spread(s Series) string {
	if len(s.Runs) > 1 {
		return " (range shaded)"
	}
	return ""
}

// thousands labels ticks as 200k or 1.5M: sample and iteration counts
// read at a glance, the same way on every axis.
type thousands struct{}

func (thousands) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = thousandsLabel(ticks[i].Value)
		}
	}
	return ticks
}

func thousandsLabel(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Tick.Marker = thousands{}
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// The plotting area of every figure; the legend is added to its right.
const plotWidth, plotHeight = 8 * vg.Inch, 5 * vg.Inch

// legendGap separates the plotting area from the legend.
const legendGap = vg.Length(12)

// layout is where save put the parts of a figure, in the image's
// coordinates.
type layout struct {
	image, data, legend vg.Rectangle
}

// save writes p to path (PNG) with its legend outside the plotting area, to
// the right of it, top-aligned with the data area, so that no line is
// hidden; the image is widened by the legend's width.
func save(p *plot.Plot, path string) (layout, error) {
	legend := p.Legend
	p.Legend = plot.NewLegend() // the plot itself draws none
	defer func() { p.Legend = legend }()
	legendSize := legend.Rectangle(draw.Canvas{}).Size()
	width := plotWidth
	if legendSize.X > 0 {
		width += legendGap + legendSize.X + legendGap
	}
	c, err := draw.NewFormattedCanvas(width, plotHeight, "png")
	if err != nil {
		return layout{}, fmt.Errorf("report: %s: %w", path, err)
	}
	whole := draw.New(c)
	plotArea := draw.Crop(whole, 0, plotWidth-width, 0, 0)
	p.Draw(plotArea)
	l := layout{image: whole.Rectangle, data: p.DataCanvas(plotArea).Rectangle}
	if legendSize.X > 0 {
		area := draw.Crop(whole, plotWidth+legendGap, -legendGap, 0, l.data.Max.Y-whole.Max.Y)
		legend.Top, legend.Left = true, true
		legend.Draw(area)
		l.legend = vg.Rectangle{Min: vg.Point{X: area.Min.X, Y: area.Max.Y - legendSize.Y}, Max: vg.Point{X: area.Min.X + legendSize.X, Y: area.Max.Y}}
	}
	f, err := os.Create(path)
	if err != nil {
		return l, fmt.Errorf("report: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return l, fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return l, fmt.Errorf("report: write %s: %w", path, err)
	}
	return l, nil
}

// ComparableLoss is m's L_B - log(2N - 1) (0 for a network that has learnt
// nothing, whatever the batch size N), so runs and MLMC levels of
// different batch sizes compare; ok is false when it cannot be known (a
// run written before the field, whose iteration mixed levels).
func ComparableLoss(m runfolder.Metrics) (v float64, ok bool) {
	if m.LossMinusLog2NMinus1 != nil {
		return *m.LossMinusLog2NMinus1, true
	}
	if len(m.Levels) == 0 {
		return 0, false
	}
	for _, l := range m.Levels {
		if l != m.Levels[0] {
			return 0, false
		}
	}
	return m.Loss - math.Log(float64(int(2)<<m.Levels[0]-1)), true
}

func lossPlot(series []Series, ax axis, path string) error {
	p := newPlot("SimCLR loss less its chance level (moving average)", ax.label, "L_B - log(2N-1)  (N images per batch)")
	for i, s := range series {
		b := s.lossBand(ax)
		if len(b.x) == 0 {
			continue
		}
		if err := addBand(p, b, i); err != nil {
			return fmt.Errorf("report: %s: %w", s.Name, err)
		}
		line, err := plotter.NewLine(b.line())
		if err != nil {
			return fmt.Errorf("report: %s: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i / 7)
		p.Add(line)
		p.Legend.Add(s.Label, line)
	}
	_, err := save(p, path)
	return err
}

// addBand shades the spread of a merged series, drawn first so that the
// lines stay on top.
func addBand(p *plot.Plot, b band, colorIndex int) error {
	poly, err := b.polygon(colorIndex)
	if err != nil || poly == nil {
		return err
	}
	p.Add(poly)
	return nil
}

// accuracyPlot draws kNN accuracy during training as lines and the final
// linear probe as a marker at the run's end, its y axis fixed to fixed when
// that is set and else fitted to the data; it returns nil when no run has
// either.
func accuracyPlot(series []Series, ax axis, fixed *Range) (*plot.Plot, error) {
	p := newPlot("Top-1 accuracy: kNN in training, linear probe at the end", ax.label, "top-1 accuracy (%)")
	any := false
	for i, s := range series {
		if b := s.knnBand(ax); len(b.x) > 0 {
			if err := addBand(p, b, i); err != nil {
				return nil, fmt.Errorf("report: %s: %w", s.Name, err)
			}
			line, points, err := plotter.NewLinePoints(b.line())
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", s.Name, err)
			}
			line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
			points.Shape = draw.CircleGlyph{}
			p.Add(line, points)
			p.Legend.Add(s.Label+": kNN"+spread(s), line, points)
			any = true
		}
		if b, ok := s.probePoint(ax); ok {
			sc, err := plotter.NewScatter(b.line())
			if err != nil {
				return nil, err
			}
			sc.Color = plotutil.Color(i)
			sc.Shape = draw.PyramidGlyph{}
			sc.Radius = vg.Points(5)
			p.Add(sc)
			if len(s.Runs) > 1 {
				bars, err := plotter.NewYErrorBars(rangeBars{b})
				if err != nil {
					return nil, err
				}
				bars.Color = plotutil.Color(i)
				p.Add(bars)
			}
			p.Legend.Add(s.Label+": linear probe"+spread(s), sc)
			any = true
		}
	}
	if !any {
		return nil, nil
	}
	p.X.Min = 0
	p.X.Max *= 1.05
	p.Y.Min, p.Y.Max = accuracyAxis(p.Y.Min, p.Y.Max, fixed)
	return p, nil
}

// minAccuracySpan is the narrowest accuracy axis, in points: a single
// evaluation, or runs that agree to a tenth of a point, are not a zoom into
// noise.
const minAccuracySpan = 5.0

// accuracyAxis is the y range of an accuracy plot whose data span lo..hi
// (percent): fixed when set; else the data with a margin of a tenth of
// their span on each side, widened about its middle to minAccuracySpan,
// within 0..100. A fixed scale of 0..100 squeezes curves a few points apart
// into one band.
func accuracyAxis(lo, hi float64, fixed *Range) (float64, float64) {
	if fixed != nil {
		return fixed.Min, fixed.Max
	}
	margin := (hi - lo) / 10
	lo, hi = lo-margin, hi+margin
	if hi-lo < minAccuracySpan {
		mid := (lo + hi) / 2
		lo, hi = mid-minAccuracySpan/2, mid+minAccuracySpan/2
	}
	if lo < 0 {
		lo, hi = 0, min(100, hi-lo)
	}
	if hi > 100 {
		lo, hi = max(0, lo-(hi-100)), 100
	}
	return lo, hi
}

// Table is the Markdown comparison of the runs.
func Table(runs []*Run) string {
	var sb strings.Builder
	sb.WriteString("| run | dataset | estimator | levels | epochs | data epochs | images drawn | evaluations | wall time | final L_B - log(2N-1) | kNN top-1 | linear top-1 | linear top-5 |\n")
	sb.WriteString("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		last := r.Last()
		knn, lin, lin5 := "-", "-", "-"
		if len(r.Evals) > 0 {
			knn = fmt.Sprintf("%.2f%%", r.Evals[len(r.Evals)-1].KNNTop1)
		}
		if r.Probe != nil {
			lin = fmt.Sprintf("%.2f%%", r.Probe.Top1)
			lin5 = fmt.Sprintf("%.2f%%", r.Probe.Top5)
		}
		loss := "-"
		if v, ok := ComparableLoss(last); ok {
			loss = fmt.Sprintf("%.4f", v)
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %d..%d | %.2f | %.2f | %d | %d | %s | %s | %s | %s | %s |\n",
			r.Name, r.Config.Dataset, r.Config.EstimatorAndLoss(), r.Config.MinLevel, r.Config.MaxLevel, last.Epoch, last.DataEpoch,
			last.SamplesDrawn, last.Evaluations, duration(last.WallSeconds), loss, knn, lin, lin5)
	}
	return sb.String()
}

func duration(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.1f s", s)
	case s < 7200:
		return fmt.Sprintf("%.1f min", s/60)
	}
	return fmt.Sprintf("%.2f h", s/3600)
}
