package report

import (
	"encoding/json"
	"fmt"
	"image/color"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
)

// bookkeepingKeys are config.json fields that say where and how a run was
// executed, not what it computes: runs that differ only in these and in
// the seed are repetitions of one configuration. Not "ranks": with an
// MLMC estimator each rank draws its own levels and the iteration's
// estimate is the mean of the ranks', a different estimator.
var bookkeepingKeys = []string{"seed", "out", "version", "device_log", "workers", "checkpoint_every", "dist", "dist_addr"}

// configKey is the canonical JSON of config.json without the seed and the
// bookkeeping fields (encoding/json sorts map keys).
func configKey(raw map[string]any) string {
	for _, k := range bookkeepingKeys {
		delete(raw, k)
	}
	data, err := json.Marshal(raw)
	if err != nil { // cannot happen for a map decoded from JSON
		return fmt.Sprint(raw)
	}
	return string(data)
}

// A Series is what one line of the plots and one row of the table show:
// one run, or with MergeSeeds the runs of one configuration under
// different seeds, drawn as their mean with a band from the lowest to the
// highest seed.
type Series struct {
	// Name identifies the series by its run folders (report.md's rows);
	// Label says what it is, from the settings the runs recorded (the
	// figures' legends: "L-SGD, batch 512, lr 2, 3 seeds").
	Name, Label string
	Runs        []*Run
}

// Group makes the plots' series: one per run, in order, or with mergeSeeds
// one per configuration (runs whose config.json agree in everything but
// the seed and where and how they ran), in the order of each
// configuration's first run.
func Group(runs []*Run, mergeSeeds bool) []Series {
	var out []Series
	index := map[string]int{}
	for _, r := range runs {
		if i, ok := index[r.configKey]; ok && mergeSeeds {
			out[i].Runs = append(out[i].Runs, r)
			continue
		}
		index[r.configKey] = len(out)
		out = append(out, Series{Runs: []*Run{r}})
	}
	count := map[string]int{}
	for i := range out {
		out[i].Name = seriesName(out[i].Runs)
		out[i].Label = armLabel(out[i].Runs)
		count[out[i].Label]++
	}
	for label, n := range count {
		if n > 1 {
			tellApart(out, label)
		}
	}
	return out
}

// tellApart adds to the labels of the series labelled label the settings
// in which they differ ("level_law measured:levels.json", "iterations 22"),
// or their folders where the settings do not tell them apart.
func tellApart(series []Series, label string) {
	var same []int
	for i, s := range series {
		if s.Label == label {
			same = append(same, i)
		}
	}
	keys := map[string]bool{}
	for _, i := range same {
		for k, v := range series[i].Runs[0].settings {
			if derivedKeys[k] || !scalar(v) {
				continue
			}
			for _, j := range same {
				if w, ok := series[j].Runs[0].settings[k]; !ok || fmt.Sprint(w) != fmt.Sprint(v) {
					keys[k] = true
				}
			}
		}
	}
	sorted := slices.Sorted(maps.Keys(keys))
	for _, i := range same {
		var extra []string
		for _, k := range sorted {
			if v, ok := series[i].Runs[0].settings[k]; ok {
				extra = append(extra, k+" "+settingText(v))
			} else {
				extra = append(extra, k+" default")
			}
		}
		if len(extra) == 0 {
			extra = []string{series[i].Name}
		}
		series[i].Label += " (" + strings.Join(extra, ", ") + ")"
	}
}

// derivedKeys are settings that follow from others a legend shows (the
// schedule's lengths from the run's length, the evaluation period).
var derivedKeys = map[string]bool{"total_iterations": true, "warmup_iterations": true, "eval_every": true, "eval_every_iterations": true}

// scalar reports whether v is one value (not a list such as a law's
// probabilities), short enough for a legend.
func scalar(v any) bool {
	switch v.(type) {
	case []any, map[string]any:
		return false
	}
	return true
}

// settingText is a setting's value as a legend shows it: a file by its
// name, not its path.
func settingText(v any) string {
	s := fmt.Sprint(v)
	if kind, path, ok := strings.Cut(s, ":"); ok && strings.Contains(path, "/") {
		return kind + ":" + filepath.Base(path)
	}
	if strings.Contains(s, "/") {
		return filepath.Base(s)
	}
	return s
}

// estimatorNames are the estimators' names as the studies write them.
var estimatorNames = map[string]string{
	"lsgd": "L-SGD", "vmlmc": "V-MLMC", "rtmlmc": "RT-MLMC", "rumlmc": "RU-MLMC", "rrmlmc": "RR-MLMC",
	"dcl": "DCL", "sogclr": "SogCLR", "auto": "auto",
}

// armLabel describes runs of one configuration for a reader: the estimator
// (or loss), its batch or levels, its learning rate and SogCLR's gamma
// where set, and how many seeds.
func armLabel(runs []*Run) string {
	c := runs[0].Config
	est, vr := strings.CutPrefix(c.Estimator, "vr-")
	name, ok := estimatorNames[est]
	if !ok {
		name = c.Estimator
	} else if vr {
		name = "VR " + name
	}
	parts := []string{name}
	switch est {
	case "lsgd", "dcl", "sogclr":
		parts = append(parts, fmt.Sprintf("batch %d", 1<<c.MaxLevel))
	default:
		parts = append(parts, fmt.Sprintf("levels %d-%d", c.MinLevel, c.MaxLevel))
	}
	if est == "sogclr" && c.SogCLRGamma > 0 {
		parts = append(parts, fmt.Sprintf("gamma %g", c.SogCLRGamma))
	}
	if c.LR > 0 {
		parts = append(parts, fmt.Sprintf("lr %g", c.LR))
	}
	seeds := map[string]bool{}
	for _, r := range runs {
		seeds[r.seed] = true
	}
	switch {
	case len(seeds) < len(runs):
		parts = append(parts, fmt.Sprintf("%d runs, %d %s", len(runs), len(seeds), plural(len(seeds), "seed")))
	default:
		parts = append(parts, fmt.Sprintf("%d %s", len(seeds), plural(len(seeds), "seed")))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// seriesName is a lone run's name, or the longest common prefix of the
// runs' names (e.g. lsgd-lr2 for lsgd-lr2, lsgd-lr2-s2, lsgd-lr2-s3) with
// the number of seeds, and of runs when some repeat a seed.
func seriesName(runs []*Run) string {
	if len(runs) == 1 {
		return runs[0].Name
	}
	prefix := runs[0].Name
	seeds := map[string]bool{}
	for _, r := range runs {
		seeds[r.seed] = true
		n := 0
		for n < len(prefix) && n < len(r.Name) && prefix[n] == r.Name[n] {
			n++
		}
		prefix = prefix[:n]
	}
	// A prefix that ends inside a token (lsgd-e8-s of lsgd-e8-s2 and
	// lsgd-e8-s3) is cut back to the token before, unless it is a whole
	// run name (lsgd of lsgd, lsgd-s2, lsgd-s3).
	whole := false
	for _, r := range runs {
		whole = whole || r.Name == prefix
	}
	if i := strings.LastIndexAny(prefix, "-_. "); !whole && i > 0 {
		prefix = prefix[:i]
	}
	prefix = strings.TrimRight(prefix, "-_. ")
	if prefix == "" {
		prefix = runs[0].Name
	}
	if len(seeds) == 1 {
		return fmt.Sprintf("%s (%d runs, 1 seed)", prefix, len(runs))
	}
	if len(seeds) < len(runs) {
		return fmt.Sprintf("%s (%d runs, %d seeds)", prefix, len(runs), len(seeds))
	}
	return fmt.Sprintf("%s (%d seeds)", prefix, len(runs))
}

// band is a series' curve: at each point the mean over its runs of x and
// y, and the lowest and highest y.
type band struct {
	x, mean, lo, hi []float64
}

// newBand aligns the runs' curves point by point (runs of one
// configuration log and evaluate at the same iterations); a run that is
// shorter, because it is still going, shortens the band.
func newBand(xs, ys [][]float64) band {
	n := math.MaxInt
	for _, x := range xs {
		n = min(n, len(x))
	}
	if len(xs) == 0 || n == 0 {
		return band{}
	}
	b := band{x: make([]float64, n), mean: make([]float64, n), lo: make([]float64, n), hi: make([]float64, n)}
	for i := range n {
		b.lo[i], b.hi[i] = math.Inf(1), math.Inf(-1)
		for r := range xs {
			b.x[i] += xs[r][i] / float64(len(xs))
			b.mean[i] += ys[r][i] / float64(len(xs))
			b.lo[i] = min(b.lo[i], ys[r][i])
			b.hi[i] = max(b.hi[i], ys[r][i])
		}
	}
	return b
}

func (b band) line() plotter.XYs {
	xys := make(plotter.XYs, len(b.x))
	for i := range b.x {
		xys[i].X, xys[i].Y = b.x[i], b.mean[i]
	}
	return xys
}

// polygon is the area between the lowest and the highest run, or nil for
// a single run or a single point.
func (b band) polygon(colorIndex int) (*plotter.Polygon, error) {
	if len(b.x) < 2 {
		return nil, nil
	}
	spread := false
	ring := make(plotter.XYs, 0, 2*len(b.x))
	for i := range b.x {
		ring = append(ring, plotter.XY{X: b.x[i], Y: b.hi[i]})
		spread = spread || b.hi[i] > b.lo[i]
	}
	if !spread {
		return nil, nil
	}
	for i := len(b.x) - 1; i >= 0; i-- {
		ring = append(ring, plotter.XY{X: b.x[i], Y: b.lo[i]})
	}
	p, err := plotter.NewPolygon(ring)
	if err != nil {
		return nil, err
	}
	r, g, bl, _ := plotutil.Color(colorIndex).RGBA()
	p.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(bl >> 8), A: 56}
	p.LineStyle.Width = 0
	return p, nil
}

// lossBand is the series' smoothed comparable loss against the axis. Every
// run is smoothed over the same window, set by the shortest run, so that a
// run still going is not smoothed differently; runs with no comparable
// loss are left out.
func (s Series) lossBand(ax axis) band {
	var xs, ys [][]float64
	for _, r := range s.Runs {
		var x, y []float64
		for _, m := range r.Metrics {
			v, ok := ComparableLoss(m)
			if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			x = append(x, ax.metric(m))
			y = append(y, v)
		}
		if len(x) > 0 {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	shortest := math.MaxInt
	for _, x := range xs {
		shortest = min(shortest, len(x))
	}
	for i := range xs {
		sm := smooth(xs[i], ys[i], max(1, shortest/50))
		for j := range sm {
			ys[i][j] = sm[j].Y
		}
	}
	return newBand(xs, ys)
}

// knnBand is the series' kNN accuracy during training against the axis.
func (s Series) knnBand(ax axis) band {
	var xs, ys [][]float64
	for _, r := range s.Runs {
		var x, y []float64
		for _, e := range r.Evals {
			x = append(x, ax.eval(e))
			y = append(y, e.KNNTop1)
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	return newBand(xs, ys)
}

// probePoint is the series' linear probe at the end of training: the mean
// over its runs of x and accuracy, the lowest and highest accuracy; ok is
// false unless every run has a probe.
func (s Series) probePoint(ax axis) (b band, ok bool) {
	var xs, ys [][]float64
	for _, r := range s.Runs {
		if r.Probe == nil {
			return band{}, false
		}
		xs = append(xs, []float64{ax.metric(r.Last())})
		ys = append(ys, []float64{r.Probe.Top1})
	}
	return newBand(xs, ys), true
}

// rangeBars are error bars from a band's lowest to highest value.
type rangeBars struct{ band }

func (r rangeBars) Len() int                         { return len(r.x) }
func (r rangeBars) XY(i int) (float64, float64)      { return r.x[i], r.mean[i] }
func (r rangeBars) YError(i int) (low, high float64) { return r.mean[i] - r.lo[i], r.hi[i] - r.mean[i] }

// meanSD is "mean ± standard deviation" (sample, n-1) of vs, the value
// alone for one, "-" for none.
func meanSD(vs []float64, format string) string {
	switch len(vs) {
	case 0:
		return "-"
	case 1:
		return fmt.Sprintf(format, vs[0])
	}
	var sum, sq float64
	for _, v := range vs {
		sum += v
	}
	mean := sum / float64(len(vs))
	for _, v := range vs {
		sq += (v - mean) * (v - mean)
	}
	return fmt.Sprintf(format+" ± "+format, mean, math.Sqrt(sq/float64(len(vs)-1)))
}

// SeriesTable is the Markdown comparison of the series: for merged seeds
// the mean ± standard deviation over seeds of each figure.
func SeriesTable(series []Series) string {
	var sb strings.Builder
	sb.WriteString("| series | seeds | dataset | estimator | levels | images drawn | evaluations | wall time | final L_B - log(2N-1) | kNN top-1 (%) | linear top-1 (%) | linear top-5 (%) |\n")
	sb.WriteString("|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range series {
		var samples, evals, wall, loss, knn, lin, lin5 []float64
		for _, r := range s.Runs {
			last := r.Last()
			samples = append(samples, float64(last.SamplesDrawn))
			evals = append(evals, float64(last.Evaluations))
			wall = append(wall, last.WallSeconds)
			if v, ok := ComparableLoss(last); ok {
				loss = append(loss, v)
			}
			if len(r.Evals) > 0 {
				knn = append(knn, r.Evals[len(r.Evals)-1].KNNTop1)
			}
			if r.Probe != nil {
				lin = append(lin, r.Probe.Top1)
				lin5 = append(lin5, r.Probe.Top5)
			}
		}
		c := s.Runs[0].Config
		n := len(s.Runs)
		fmt.Fprintf(&sb, "| %s | %d | %s | %s | %d..%d | %s | %s | %s | %s | %s | %s | %s |\n",
			s.Name, len(s.Runs), c.Dataset, c.EstimatorAndLoss(), c.MinLevel, c.MaxLevel, meanSD(samples, "%.0f"), meanSD(evals, "%.0f"),
			durationSD(wall), of(meanSD(loss, "%.4f"), len(loss), n), of(meanSD(knn, "%.2f"), len(knn), n),
			of(meanSD(lin, "%.2f"), len(lin), n), of(meanSD(lin5, "%.2f"), len(lin5), n))
	}
	return sb.String()
}

// of marks a figure that only some of a series' n runs have ("42.00 (2 of 3 runs)").
func of(figure string, have, n int) string {
	if have == 0 || have == n {
		return figure
	}
	return fmt.Sprintf("%s (%d of %d runs)", figure, have, n)
}

// durationSD is meanSD of wall times in the unit duration picks for the mean.
func durationSD(vs []float64) string {
	var sum float64
	for _, v := range vs {
		sum += v
	}
	mean := sum / float64(len(vs))
	unit, scale := "s", 1.0
	switch {
	case mean >= 7200:
		unit, scale = "h", 3600
	case mean >= 120:
		unit, scale = "min", 60
	}
	scaled := make([]float64, len(vs))
	for i, v := range vs {
		scaled[i] = v / scale
	}
	return meanSD(scaled, "%.1f") + " " + unit
}
