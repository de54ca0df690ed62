package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"github.com/simclr-go/simclr/experiment/plots"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var estimatorColors = map[string]color.Color{
	"L-SGD":   color.RGBA{R: 200, A: 255},
	"V-MLMC":  color.RGBA{R: 230, G: 140, A: 255},
	"RT-MLMC": color.RGBA{G: 140, A: 255},
	"RU-MLMC": color.RGBA{B: 220, A: 255},
	"RR-MLMC": color.RGBA{R: 150, B: 180, A: 255},
}

// plotRows writes one log-log figure per row of the table (objective
// class, VR or not, c < b or c >= b): a panel per regime, samples to the
// target against 1/eps, solid for the prescribed parameters and dashed
// for the tuned ones; and truncation.png, the N.A. cells' cost and
// variance against the cap K.
func plotRows(pts []point, trunc []truncation, dir string) ([]string, error) {
	type group struct {
		obj  string
		vr   bool
		cgeb bool
	}
	var groups []group
	byGroup := map[group]map[Regime][]point{}
	for _, p := range pts {
		g := group{p.Objective, p.VR, p.C >= p.B}
		if byGroup[g] == nil {
			groups = append(groups, g)
			byGroup[g] = map[Regime][]point{}
		}
		r := Regime{p.A, p.B, p.C}
		byGroup[g][r] = append(byGroup[g][r], p)
	}
	var files []string
	for _, g := range groups {
		var regs []Regime
		for r := range byGroup[g] {
			regs = append(regs, r)
		}
		slices.SortFunc(regs, func(x, y Regime) int { return cmpRegime(x, y) })
		var panels []*plot.Plot
		for _, r := range regs {
			p, err := costPanel(byGroup[g][r], r)
			if err != nil {
				return nil, err
			}
			panels = append(panels, p)
		}
		name := g.obj
		if g.vr {
			name = "vr-" + name
		}
		if g.cgeb {
			name += "-c-ge-b"
		} else {
			name += "-c-lt-b"
		}
		path := filepath.Join(dir, "row-"+name+".png")
		if err := savePanels(panels, path); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	if len(trunc) > 0 {
		p, err := truncationPanel(trunc, false)
		if err != nil {
			return nil, err
		}
		q, err := truncationPanel(trunc, true)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "truncation.png")
		if err := savePanels([]*plot.Plot{p, q}, path); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	return files, nil
}

func cmpRegime(x, y Regime) int {
	for _, d := range []float64{x.A - y.A, x.B - y.B, x.C - y.C} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

func costPanel(pts []point, r Regime) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s", pts[0].Objective, r)
	if pts[0].VR {
		p.Title.Text = "VR " + p.Title.Text
	}
	p.X.Label.Text = "1/eps"
	p.Y.Label.Text = "samples to the target (mean of trials)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	if !anyHit(pts) {
		// A log axis needs data; say why the panel is empty instead.
		p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
		p.Title.Text += " (no eps reached)"
		return p, nil
	}
	type key struct{ est, params string }
	var keys []key
	lines := map[key]plotter.XYs{}
	bars := map[key]errorPoints{}
	for _, pt := range pts {
		if pt.Hit == nil || pt.Hit.Cost <= 0 {
			continue
		}
		k := key{pt.Estimator, pt.Params}
		if _, ok := lines[k]; !ok {
			keys = append(keys, k)
		}
		lines[k] = append(lines[k], plotter.XY{X: 1 / pt.Eps, Y: pt.Hit.Cost})
		if ci := pt.SamplesCI; ci != nil && ci[0] > 0 {
			bars[k] = append(bars[k], errorPoint{1 / pt.Eps, pt.Hit.Cost, ci[0], ci[1]})
		}
	}
	for _, k := range keys {
		xy := lines[k]
		slices.SortFunc(xy, func(a, b plotter.XY) int {
			if a.X < b.X {
				return -1
			}
			return 1
		})
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", k.est, err)
		}
		l.Color, s.Color = estimatorColors[k.est], estimatorColors[k.est]
		l.Width = vg.Points(1.3)
		if k.params == "tuned" {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			s.Shape = draw.CrossGlyph{}
		}
		p.Add(l, s)
		if len(bars[k]) > 0 {
			eb, err := plotter.NewYErrorBars(bars[k])
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", k.est, err)
			}
			eb.Color = estimatorColors[k.est]
			p.Add(eb)
		}
		p.Legend.Add(k.est+" "+k.params, l, s)
	}
	return p, nil
}

// errorPoint is a cost with its bootstrap 95% interval over the trials.
type errorPoint struct{ x, y, lo, hi float64 }

// errorPoints gives plotter.NewYErrorBars the intervals.
type errorPoints []errorPoint

func (e errorPoints) Len() int                        { return len(e) }
func (e errorPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errorPoints) YError(i int) (float64, float64) { return e[i].y - e[i].lo, e[i].hi - e[i].y }

// truncationPanel draws, against the cap K, the exact expected samples of
// one estimate (the N.A. cells; it does not depend on the objective) or
// its exact variance (the strongly convex N.A. cells, and the nonconvex
// cells whose second moment grows although b > c). The variances
// measured over draws are in truncation.jsonl; they level off where the
// draws stop reaching the deep levels that make the exact ones grow.
func truncationPanel(trunc []truncation, variance bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "RU/RR-MLMC capped at level K: expected samples per estimate"
	p.X.Label.Text = "cap K"
	p.Y.Label.Text = "expected samples per estimate"
	if variance {
		p.Title.Text = "RU/RR-MLMC capped at level K: exact variance at the start"
		p.Y.Label.Text = "variance of an estimate"
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{}
	p.Legend.Top = true
	p.Legend.Left = true
	type key struct {
		obj, est, why string
		r             Regime
	}
	var keys []key
	lines := map[key]plotter.XYs{}
	for _, t := range trunc {
		switch {
		case t.VR:
			continue // the same estimates as the plain row's
		case !variance && (t.Why != "N.A." || t.Objective != "strongly-convex"):
			continue
		case variance && t.Why == "N.A." && t.Objective != "strongly-convex":
			continue
		}
		k := key{t.Objective, t.Estimator, t.Why, Regime{t.A, t.B, t.C}}
		if _, ok := lines[k]; !ok {
			keys = append(keys, k)
		}
		y := t.Expected
		if variance {
			y = t.VarianceExact
		}
		lines[k] = append(lines[k], plotter.XY{X: float64(t.K), Y: y})
	}
	if len(keys) == 0 {
		// A log axis needs data (a run of rows without these cells).
		p.Y.Scale, p.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
		p.Title.Text += " (none in this run)"
		return p, nil
	}
	for i, k := range keys {
		l, s, err := plotter.NewLinePoints(lines[k])
		if err != nil {
			return nil, err
		}
		c := estimatorColors[k.est]
		l.Color, s.Color = c, c
		s.Shape = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.CrossGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}}[i%4]
		if k.r.C > k.r.B {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l, s)
		label := fmt.Sprintf("%s %s", k.est, k.r)
		if variance {
			label = fmt.Sprintf("%s %s %s (%s)", k.est, k.obj, k.r, k.why)
		}
		p.Legend.Add(label, l, s)
	}
	return p, nil
}

// savePanels writes the panels side by side into path (the harness's
// layout, panels 14 cm wide).
func savePanels(panels []*plot.Plot, path string) error {
	if err := plots.SaveRow(path, panels, 14*vg.Centimeter); err != nil {
		return fmt.Errorf("%w (choose another folder with --out)", err)
	}
	return nil
}

func anyHit(pts []point) bool {
	for _, p := range pts {
		if p.Hit != nil && p.Hit.Cost > 0 {
			return true
		}
	}
	return false
}
