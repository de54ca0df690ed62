package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plot writes two panels, the plain methods and the VR ones: the median
// over trials of the gap against generated samples, log-log, with the
// quartiles as a band, and the gaps of the report dashed.
func (t *task) plot(res *result, path string) error {
	palette := []color.RGBA{{R: 200, A: 255}, {G: 130, A: 255}, {B: 220, A: 255}, {R: 220, G: 140, A: 255}, {R: 130, B: 160, A: 255}}
	var panels []*plot.Plot
	for half, title := range []string{"plain", "variance reduced (VR)"} {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %s", res.summary.Dataset, title)
		p.X.Label.Text = "generated inner samples"
		p.Y.Label.Text = "(F - F*) / (F(x0) - F*)"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
		p.Legend.Top = true // top right: the curves start at the top left and fall
		yMin, yMax := math.Inf(1), 0.0
		for i, m := range methodSpecs[half*5 : half*5+5] {
			runs := res.curves[m.Label]
			if len(runs) == 0 {
				continue // not among --methods
			}
			var mid, band plotter.XYs
			var lower plotter.XYs
			for k, s := range res.grid {
				vals := make([]float64, len(runs))
				for j, tr := range runs {
					vals[j] = t.gap(tr.Curve[k])
				}
				med, lo, hi := quantile(vals, 0.5), quantile(vals, 0.25), quantile(vals, 0.75)
				if med <= 0 || math.IsInf(med, 0) || lo <= 0 || math.IsInf(hi, 0) {
					continue
				}
				mid = append(mid, plotter.XY{X: float64(s), Y: med})
				band = append(band, plotter.XY{X: float64(s), Y: hi})
				lower = append(lower, plotter.XY{X: float64(s), Y: lo})
				yMin, yMax = math.Min(yMin, lo), math.Max(yMax, hi)
			}
			if len(mid) < 2 {
				continue
			}
			c := palette[i%len(palette)]
			for j := len(lower) - 1; j >= 0; j-- {
				band = append(band, lower[j])
			}
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return err
			}
			poly.Color = color.RGBA{R: c.R, G: c.G, B: c.B, A: 40}
			poly.LineStyle.Width = 0
			p.Add(poly)
			line, err := plotter.NewLine(mid)
			if err != nil {
				return err
			}
			line.Color, line.Width = c, vg.Points(1.5)
			p.Add(line)
			p.Legend.Add(m.Label, line)
		}
		for _, g := range gaps {
			ref, err := plotter.NewLine(plotter.XYs{{X: 1, Y: g}, {X: float64(t.budget), Y: g}})
			if err != nil {
				return err
			}
			ref.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			ref.Color = color.Gray{Y: 120}
			p.Add(ref)
		}
		if yMax > 0 {
			p.Y.Min, p.Y.Max = math.Max(yMin/2, 1e-6), yMax*2
		}
		p.X.Min, p.X.Max = 10, float64(t.budget)
		panels = append(panels, p)
	}
	const w, h = 15 * vg.Centimeter, 11 * vg.Centimeter
	img := vgimg.New(2*w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter, PadY: vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for j := range panels {
		panels[j].Draw(canvases[0][j])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create the plot file: %w (choose another folder with --png)", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// quantile is the q-quantile of xs by the nearest rank (+Inf sorts last).
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Round(q * float64(len(s)-1)))
	return s[i]
}
