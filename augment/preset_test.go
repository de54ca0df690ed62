package augment

import (
	"math"
	"strings"
	"testing"
)

func TestPresetNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Config
	}{{"simclr", SimCLR()}, {"paper", Paper()}} {
		got, err := Preset(tc.name)
		if err != nil || got != tc.want {
			t.Errorf("Preset(%q) = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Preset(%q) does not validate: %v", tc.name, err)
		}
	}
	if _, err := Preset("byol"); err == nil || !strings.Contains(err.Error(), "simclr") || !strings.Contains(err.Error(), "paper") {
		t.Errorf("Preset(\"byol\"): error %v, want one naming simclr and paper", err)
	}
}

// The paper preset draws flips, jitter and grayscale at SimCLR's rates
// (5-sigma binomial bounds, as TestRandomDecisionRates) and never a crop or
// a blur.
func TestPaperPresetDraws(t *testing.T) {
	tr := mustTransform(t, Paper(), 32, 32, zeroMean, unitStd)
	var flips, jitters, grays int
	for i := range statDraws {
		p := tr.Sample(Key{Seed: 21, Epoch: 1, Index: i, View: i % 2})
		if p.Top != 0 || p.Left != 0 || p.CropH != 32 || p.CropW != 32 {
			t.Fatalf("view %d: crop box %+v, want the whole 32x32 image", i, p)
		}
		if p.Blur {
			t.Fatalf("view %d is blurred", i)
		}
		if p.Flip {
			flips++
		}
		if p.Jitter {
			jitters++
		}
		if p.Gray {
			grays++
		}
	}
	withinBinomial(t, "flip", flips, statDraws, 0.5)
	withinBinomial(t, "jitter", jitters, statDraws, 0.8)
	withinBinomial(t, "grayscale", grays, statDraws, 0.2)
}

// Without a crop the geometry of a paper view is the image itself or its
// mirror image: a view drawn without jitter and grayscale equals the
// un-augmented image, flipped when the flip was drawn.
func TestPaperPresetKeepsTheImageGeometry(t *testing.T) {
	const h, w = 32, 32
	set := randomSet(40, h, w, 9)
	tr := mustTransform(t, Paper(), h, w, zeroMean, unitStd)
	dst := make([]float32, tr.ViewLen())
	checked := map[bool]int{}
	for i := range set.Len() {
		for view := range 2 {
			k := Key{Seed: 22, Index: i, View: view}
			p := tr.Sample(k)
			if p.Jitter || p.Gray {
				continue
			}
			tr.Apply(set.Image(i), k, dst)
			img := set.Image(i)
			for c := range 3 {
				for y := range h {
					for x := range w {
						sx := x
						if p.Flip {
							sx = w - 1 - x
						}
						want := float64(img[(c*h+y)*w+sx]) / 255
						if got := float64(dst[(c*h+y)*w+x]); math.Abs(got-want) > 1e-6 {
							t.Fatalf("image %d view %d (flip %v): pixel (%d,%d,%d) is %g, want %g", i, view, p.Flip, c, y, x, got, want)
						}
					}
				}
			}
			checked[p.Flip]++
		}
	}
	// With 80 views, P(jitter or gray) = 0.84: about 13 plain views, both
	// orientations among them (a miss has probability below 1e-3).
	if checked[false] == 0 || checked[true] == 0 {
		t.Fatalf("checked %d unflipped and %d flipped views; want both kinds", checked[false], checked[true])
	}
}
