package plots

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

// Panels puts each curve in the panel its group names (ByVR: plain and VR
// apart, negative: left out), and WritePNG draws them side by side into a
// PNG of two 15 cm panels with something drawn on it; a path that cannot
// be created is an error that says so.
func TestPanelsAndWritePNG(t *testing.T) {
	gaps := func(scale float64) [][]float64 {
		var g [][]float64
		for j := range 3 {
			g = append(g, []float64{1 * scale, 0.3 * scale, 0.1 * scale * float64(j+1), 0.01 * scale})
		}
		return g
	}
	pts := []int64{10, 100, 1000, 10000}
	res := &experiment.Result{
		Summary: experiment.Summary{Cost: "samples", Error: "relative gap", Targets: []float64{0.1, 0.01}},
		Curves: []experiment.Curve{
			{Name: "L-SGD", Family: experiment.Family{Kind: mlmc.Kind{Method: mlmc.LSGD}}, Points: pts, Gaps: gaps(1)},
			{Name: "VR RT-MLMC", Family: experiment.Family{Kind: mlmc.Kind{Method: mlmc.RTMLMC, VR: true}}, Points: pts, Gaps: gaps(0.5)},
			{Name: "RT-MLMC", Family: experiment.Family{Kind: mlmc.Kind{Method: mlmc.RTMLMC}}, Points: pts, Gaps: gaps(0.7)},
		},
	}
	panels := Panels(res, []string{"plain", "VR"}, ByVR)
	if len(panels) != 2 || len(panels[0].Curves) != 2 || len(panels[1].Curves) != 1 || panels[1].Curves[0].Name != "VR RT-MLMC" {
		t.Fatalf("panels %+v: want L-SGD and RT-MLMC in the first, VR RT-MLMC in the second", panels)
	}
	if panels[0].XLabel != "samples" || panels[0].YLabel != "relative gap" || len(panels[0].Targets) != 2 {
		t.Errorf("panel labels %q, %q and targets %v: want the summary's", panels[0].XLabel, panels[0].YLabel, panels[0].Targets)
	}
	if left := Panels(res, []string{"only"}, func(experiment.Curve) int { return -1 }); len(left[0].Curves) != 0 {
		t.Errorf("a negative group drew %d curves", len(left[0].Curves))
	}

	path := filepath.Join(t.TempDir(), "gaps.png")
	if err := WritePNG(path, panels); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	// 2 x 15 cm by 11 cm at 96 dots an inch (vgimg's default): 1134 x 416.
	if b := img.Bounds(); b.Dx() != 1134 || b.Dy() != 416 {
		t.Errorf("image %dx%d, want 1134x416", b.Dx(), b.Dy())
	}
	colored := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r != g || g != bl {
				colored++
			}
		}
	}
	if colored < 500 {
		t.Errorf("%d coloured pixels: the curves were not drawn", colored)
	}

	err = WritePNG(filepath.Join(t.TempDir(), "no-such-folder", "gaps.png"), panels)
	if err == nil || !strings.Contains(err.Error(), "choose another path") {
		t.Errorf("error %v for a path in a missing folder, want one saying to choose another path", err)
	}
}
