package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotErrors writes one panel per law: the median over seeds of the
// relative error |x - x*|/|x*| against simulated queue steps, log-log, one
// line per method, with the 1% tolerance drawn dashed.
func plotErrors(res []result, path string) error {
	var laws []string
	byLaw := map[string][]result{}
	for _, r := range res {
		if _, ok := byLaw[r.Law.Name]; !ok {
			laws = append(laws, r.Law.Name)
		}
		byLaw[r.Law.Name] = append(byLaw[r.Law.Name], r)
	}
	colors := []color.Color{
		color.RGBA{R: 200, A: 255}, color.RGBA{G: 140, A: 255}, color.RGBA{B: 220, A: 255},
	}
	plots := make([][]*plot.Plot, 1)
	for _, law := range laws {
		p := plot.New()
		p.Title.Text = law + " service"
		p.X.Label.Text = "simulated queue steps"
		p.Y.Label.Text = "median |x - x*| / |x*|"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{}, plot.LogTicks{}
		p.Legend.Top = true
		var xMin, xMax float64
		for i, r := range byLaw[law] {
			pts := make(plotter.XYs, 0, len(r.Grid))
			for k, steps := range r.Grid {
				e := medianAt(r.Traces, k)
				if steps < 1 || e <= 0 {
					continue
				}
				pts = append(pts, plotter.XY{X: float64(steps), Y: e})
			}
			if len(pts) == 0 {
				continue
			}
			line, err := plotter.NewLine(pts)
			if err != nil {
				return fmt.Errorf("plot %s %s: %w", law, r.Method.Label, err)
			}
			line.Color = colors[i%len(colors)]
			line.Width = vg.Points(1.5)
			p.Add(line)
			p.Legend.Add(r.Method.Label, line)
			if xMin == 0 || pts[0].X < xMin {
				xMin = pts[0].X
			}
			xMax = max(xMax, pts[len(pts)-1].X)
		}
		tol, err := plotter.NewLine(plotter.XYs{{X: max(xMin, 1), Y: tolerance}, {X: max(xMax, 2), Y: tolerance}})
		if err != nil {
			return err
		}
		tol.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(tol)
		p.Legend.Add("1%", tol)
		plots[0] = append(plots[0], p)
	}
	const w, h = 15 * vg.Centimeter, 11 * vg.Centimeter
	img := vgimg.New(vg.Length(len(laws))*w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(laws), PadX: vg.Millimeter, PadY: vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots[0] {
		plots[0][j].Draw(canvases[0][j])
	}
	f, err := createFile(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func createFile(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create the plot file: %w (choose another path with --png)", err)
	}
	return f, nil
}
