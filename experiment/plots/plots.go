// Package plots draws the figures of package experiment's results: per
// method the median gap against cost with its quartiles, log-log, the
// targets dashed, written as PNG. It holds every plotting dependency, so a
// program that uses package experiment for its numbers alone does not
// build them.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"github.com/simclr-go/simclr/experiment"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Panel is one plot of a figure: curves of gap against cost, log-log.
type Panel struct {
	Title, XLabel, YLabel string
	Curves                []experiment.Curve
	// Targets are drawn as dashed lines.
	Targets []float64
}

// Panels splits a result's curves into panels: group(c) is the panel of
// curve c (an index into titles; negative: not drawn).
func Panels(r *experiment.Result, titles []string, group func(experiment.Curve) int) []Panel {
	s := r.Summary
	panels := make([]Panel, len(titles))
	for i, t := range titles {
		panels[i] = Panel{Title: t, XLabel: s.Cost, YLabel: s.Error, Targets: s.Targets}
	}
	for _, c := range r.Curves {
		if g := group(c); g >= 0 && g < len(panels) {
			panels[g].Curves = append(panels[g].Curves, c)
		}
	}
	return panels
}

// ByVR is the panel of a curve when plain estimators (0) and their VR
// versions (1) are drawn apart, for Panels.
func ByVR(c experiment.Curve) int {
	if c.Family.Kind.VR {
		return 1
	}
	return 0
}

var palette = []color.RGBA{{R: 200, A: 255}, {G: 130, A: 255}, {B: 220, A: 255}, {R: 220, G: 140, A: 255}, {R: 130, B: 160, A: 255}}

// WritePNG draws the panels side by side into a PNG file: per curve the
// median over trials of the gap against cost, with the quartiles as a
// band, and the targets dashed.
func WritePNG(path string, panels []Panel) error {
	var row []*plot.Plot
	for _, pn := range panels {
		p, err := drawPanel(pn)
		if err != nil {
			return fmt.Errorf("plot %s: %w", pn.Title, err)
		}
		row = append(row, p)
	}
	return SaveRow(path, row, 15*vg.Centimeter)
}

// SaveRow draws plots side by side, each panelWidth wide and 11 cm high,
// their axes aligned, into the PNG file path.
func SaveRow(path string, row []*plot.Plot, panelWidth vg.Length) error {
	img := vgimg.New(vg.Length(len(row))*panelWidth, 11*vg.Centimeter)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Millimeter, PadY: vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align([][]*plot.Plot{row}, tiles, dc)
	for j := range row {
		row[j].Draw(canvases[0][j])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create the plot file: %w (choose another path)", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func drawPanel(pn Panel) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.X.Label.Text, p.Y.Label.Text = pn.XLabel, pn.YLabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
	p.Legend.Top = true // top right: the curves start at the top left and fall
	const xMin = 10.0   // the smallest cost shown
	yMin, yMax, xMax := math.Inf(1), 0.0, xMin*10
	for i, c := range pn.Curves {
		var mid, upper, lower plotter.XYs
		for k, pt := range c.Points {
			vals := make([]float64, len(c.Gaps))
			for j, g := range c.Gaps {
				vals[j] = g[k]
			}
			med, lo, hi := quantile(vals, 0.5), quantile(vals, 0.25), quantile(vals, 0.75)
			if pt < int64(xMin) || med <= 0 || math.IsInf(med, 0) || lo <= 0 || math.IsInf(hi, 0) {
				continue
			}
			mid = append(mid, plotter.XY{X: float64(pt), Y: med})
			upper = append(upper, plotter.XY{X: float64(pt), Y: hi})
			lower = append(lower, plotter.XY{X: float64(pt), Y: lo})
			yMin, yMax = math.Min(yMin, lo), math.Max(yMax, hi)
			xMax = math.Max(xMax, float64(pt))
		}
		if len(mid) < 2 {
			continue
		}
		col := palette[i%len(palette)]
		band := upper
		for j := len(lower) - 1; j >= 0; j-- {
			band = append(band, lower[j])
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, err
		}
		// A translucent band: NRGBA, since RGBA's channels are
		// premultiplied by alpha and may not exceed it.
		poly.Color = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 50}
		poly.LineStyle.Width = 0
		p.Add(poly)
		line, err := plotter.NewLine(mid)
		if err != nil {
			return nil, err
		}
		line.Color, line.Width = col, vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(c.Name, line)
	}
	for _, t := range pn.Targets {
		ref, err := plotter.NewLine(plotter.XYs{{X: xMin, Y: t}, {X: xMax, Y: t}})
		if err != nil {
			return nil, err
		}
		ref.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		ref.Color = color.Gray{Y: 120}
		p.Add(ref)
	}
	if yMax > 0 {
		p.Y.Min, p.Y.Max = math.Max(yMin/2, 1e-6), yMax*2
	}
	p.X.Min, p.X.Max = xMin, xMax
	return p, nil
}

// quantile is the q-quantile of xs by the nearest rank (+Inf sorts last).
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(math.Round(q*float64(len(s)-1)))]
}
