package augment

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/data"
)

// randomSet is a data.Set of n random h x w images.
func randomSet(n, h, w int, seed uint64) *data.Set {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := &data.Set{Name: "random", Classes: []string{"a", "b"}, H: h, W: w,
		Pix: make([]uint8, n*3*h*w), Labels: make([]int32, n)}
	for i := range s.Pix {
		s.Pix[i] = uint8(rng.UintN(256))
	}
	return s
}

var (
	zeroMean = [3]float32{0, 0, 0}
	unitStd  = [3]float32{1, 1, 1}
)

func mustTransform(t testing.TB, cfg Config, h, w int, mean, std [3]float32) *Transform {
	t.Helper()
	tr, err := NewTransform(cfg, h, w, mean, std)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func fullBox(h, w int) Params {
	return Params{CropH: h, CropW: w, Brightness: 1, Contrast: 1, Saturation: 1}
}

// bilinearReference samples the crop box of channel c of img at output
// (oy, ox) with plain bilinear interpolation, half-pixel centres and edge
// clamping (torch's interpolate with align_corners=False), which is what
// PIL's triangle filter computes when enlarging.
func bilinearReference(img []uint8, h, w int, box Params, c, outH, outW, oy, ox int) float64 {
	at := func(y, x int) float64 { return float64(img[c*h*w+(box.Top+y)*w+box.Left+x]) / 255 }
	coord := func(o, in, out int) (int, int, float64) {
		s := (float64(o)+0.5)*float64(in)/float64(out) - 0.5
		s = min(max(s, 0), float64(in-1))
		i0 := int(math.Floor(s))
		i1 := min(i0+1, in-1)
		return i0, i1, s - float64(i0)
	}
	y0, y1, fy := coord(oy, box.CropH, outH)
	x0, x1, fx := coord(ox, box.CropW, outW)
	top := at(y0, x0)*(1-fx) + at(y0, x1)*fx
	bottom := at(y1, x0)*(1-fx) + at(y1, x1)*fx
	return top*(1-fy) + bottom*fy
}

func TestCropResizeMatchesBilinear(t *testing.T) {
	const h, w = 32, 32
	img := randomSet(1, h, w, 3).Image(0)
	tr := mustTransform(t, Identity(), h, w, zeroMean, unitStd)
	dst := make([]float32, tr.ViewLen())
	cases := []Params{
		fullBox(h, w),
		{Top: 3, Left: 5, CropH: 20, CropW: 17},
		{Top: 0, Left: 0, CropH: 1, CropW: 1},
		{Top: 31, Left: 0, CropH: 1, CropW: 32},
		{Top: 10, Left: 12, CropH: 15, CropW: 20},
		{Top: 0, Left: 16, CropH: 32, CropW: 16},
	}
	for _, box := range cases {
		box.Brightness, box.Contrast, box.Saturation = 1, 1, 1
		tr.Render(img, box, dst)
		for c := range 3 {
			for oy := range h {
				for ox := range w {
					want := bilinearReference(img, h, w, box, c, h, w, oy, ox)
					got := float64(dst[(c*h+oy)*w+ox])
					if math.Abs(got-want) > 1e-5 {
						t.Fatalf("box %+v: channel %d (%d,%d) = %v, want %v", box, c, oy, ox, got, want)
					}
				}
			}
		}
	}
}

func TestFullCropIsIdentity(t *testing.T) {
	const h, w = 32, 24
	img := randomSet(1, h, w, 4).Image(0)
	tr := mustTransform(t, Identity(), h, w, zeroMean, unitStd)
	dst := make([]float32, tr.ViewLen())
	tr.Render(img, fullBox(h, w), dst)
	for i, v := range img {
		if got, want := dst[i], float32(v)/255; math.Abs(float64(got-want)) > 1e-6 {
			t.Fatalf("element %d = %v, want %v", i, got, want)
		}
	}
}

// TestDownscaleAntialias checks the triangle filter widened by 2 when
// halving: weights (1, 3, 3, 1)/8 on inputs 2o-1 .. 2o+2, so a ramp with
// value = column gives 2o + 0.5 inside, and at the left edge the taps
// (0.75, 0.75, 0.25) on columns 0..2 renormalised give 1.25/1.75.
func TestDownscaleAntialias(t *testing.T) {
	const in, out = 64, 32
	set := &data.Set{H: in, W: in, Pix: make([]uint8, 3*in*in), Labels: []int32{0}}
	for c := range 3 {
		for y := range in {
			for x := range in {
				set.Pix[(c*in+y)*in+x] = uint8(x)
			}
		}
	}
	tr := mustTransform(t, Config{Size: out}, in, in, zeroMean, unitStd)
	dst := make([]float32, tr.ViewLen())
	tr.Render(set.Image(0), fullBox(in, in), dst)
	for o := range out {
		want := 2*float64(o) + 0.5
		switch o {
		case 0:
			want = 1.25 / 1.75
		case out - 1: // mirror of the left edge: columns 61..63 weigh (0.25, 0.75, 0.75)
			want = (61*0.25 + 62*0.75 + 63*0.75) / 1.75
		}
		for _, row := range []int{0, 7, 31} {
			if got := float64(dst[row*out+o]) * 255; math.Abs(got-want) > 1e-4 {
				t.Errorf("column %d row %d = %v, want %v", o, row, got, want)
			}
		}
	}
}

func TestFlipMirrorsColumns(t *testing.T) {
	const h, w = 32, 32
	img := randomSet(1, h, w, 5).Image(0)
	tr := mustTransform(t, Identity(), h, w, zeroMean, unitStd)
	plain := make([]float32, tr.ViewLen())
	flipped := make([]float32, tr.ViewLen())
	for _, box := range []Params{fullBox(h, w), {Top: 2, Left: 7, CropH: 19, CropW: 13}} {
		box.Brightness, box.Contrast, box.Saturation = 1, 1, 1
		tr.Render(img, box, plain)
		box.Flip = true
		tr.Render(img, box, flipped)
		for c := range 3 {
			for y := range h {
				for x := range w {
					a, b := plain[(c*h+y)*w+x], flipped[(c*h+y)*w+w-1-x]
					if math.Abs(float64(a-b)) > 1e-6 {
						t.Fatalf("box %+v: flip of (%d,%d,%d) = %v, want %v", box, c, y, x, b, a)
					}
				}
			}
		}
	}
}

func TestNormalisation(t *testing.T) {
	mean := [3]float32{0.4914, 0.4822, 0.4465}
	std := [3]float32{0.2470, 0.2435, 0.2616}
	set := &data.Set{H: 2, W: 2, Labels: []int32{0},
		Pix: []uint8{0, 255, 128, 64, 10, 20, 30, 40, 200, 100, 50, 25}}
	got := make([]float32, 12)
	Eval(set, 0, mean, std, got)
	for i, v := range set.Pix {
		c := i / 4
		want := (float64(v)/255 - float64(mean[c])) / float64(std[c])
		if math.Abs(float64(got[i])-want) > 1e-5 {
			t.Errorf("Eval element %d = %v, want %v", i, got[i], want)
		}
	}
	// The identity transform renders what Eval gives.
	tr := mustTransform(t, Identity(), 2, 2, mean, std)
	view := make([]float32, 12)
	tr.Apply(set.Image(0), Key{Seed: 1}, view)
	for i := range view {
		if math.Abs(float64(view[i]-got[i])) > 1e-5 {
			t.Errorf("identity view element %d = %v, Eval %v", i, view[i], got[i])
		}
	}
}

func TestValidate(t *testing.T) {
	mod := func(f func(*Config)) Config { c := SimCLR(); f(&c); return c }
	bad := []struct {
		name string
		cfg  Config
	}{
		{"flip prob > 1", mod(func(c *Config) { c.FlipProb = 1.5 })},
		{"negative gray prob", mod(func(c *Config) { c.GrayProb = -0.1 })},
		{"NaN jitter prob", mod(func(c *Config) { c.JitterProb = math.NaN() })},
		{"scale reversed", mod(func(c *Config) { c.CropScale = [2]float64{1, 0.2} })},
		{"zero scale", mod(func(c *Config) { c.CropScale = [2]float64{0, 1} })},
		{"ratio zero", mod(func(c *Config) { c.CropRatio = [2]float64{0, 1} })},
		{"negative brightness", mod(func(c *Config) { c.Brightness = -1 })},
		{"hue above 0.5", mod(func(c *Config) { c.Hue = 0.6 })},
		{"negative size", mod(func(c *Config) { c.Size = -1 })},
		{"blur sigma zero", mod(func(c *Config) { c.BlurProb = 0.5; c.BlurSigma = [2]float64{0, 1} })},
		{"even blur kernel", mod(func(c *Config) { c.BlurProb = 0.5; c.BlurKernel = 4 })},
	}
	for _, b := range bad {
		if err := b.cfg.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", b.name, b.cfg)
		}
	}
	for _, good := range []Config{SimCLR(), Identity(), mod(func(c *Config) { c.BlurProb = 0.5 })} {
		if err := good.Validate(); err != nil {
			t.Errorf("Validate rejected %+v: %v", good, err)
		}
	}
	if _, err := NewTransform(SimCLR(), 32, 32, zeroMean, [3]float32{1, 0, 1}); err == nil {
		t.Error("NewTransform accepted std 0")
	}
}

// TestDeterminism: a view depends on its key only, not on the transform that
// renders it nor on what it rendered before.
func TestDeterminism(t *testing.T) {
	set := randomSet(4, 32, 32, 6)
	cfg := SimCLR()
	cfg.BlurProb = 0.5
	a := mustTransform(t, cfg, 32, 32, zeroMean, unitStd)
	b := mustTransform(t, cfg, 32, 32, zeroMean, unitStd)
	va := make([]float32, a.ViewLen())
	vb := make([]float32, b.ViewLen())
	keys := []Key{{Seed: 9, Epoch: 0, Index: 1, View: 0}, {Seed: 9, Epoch: 0, Index: 1, View: 1},
		{Seed: 9, Epoch: 1, Index: 1, View: 0}, {Seed: 10, Epoch: 0, Index: 1, View: 0}}
	outputs := make([][]float32, len(keys))
	for i, k := range keys {
		a.Apply(set.Image(k.Index), k, va)
		outputs[i] = append([]float32(nil), va...)
	}
	// b renders in reverse order, after unrelated views.
	b.Apply(set.Image(3), Key{Seed: 1, Index: 3}, vb)
	for i := len(keys) - 1; i >= 0; i-- {
		b.Apply(set.Image(keys[i].Index), keys[i], vb)
		for j := range vb {
			if vb[j] != outputs[i][j] {
				t.Fatalf("key %+v: element %d differs between transforms: %v vs %v", keys[i], j, vb[j], outputs[i][j])
			}
		}
	}
	// Distinct keys give distinct views.
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			same := true
			for e := range outputs[i] {
				if outputs[i][e] != outputs[j][e] {
					same = false
					break
				}
			}
			if same {
				t.Errorf("keys %+v and %+v rendered the same view", keys[i], keys[j])
			}
		}
	}
}

func TestApplyDoesNotAllocate(t *testing.T) {
	set := randomSet(1, 32, 32, 8)
	cfg := SimCLR()
	cfg.BlurProb = 0.5
	tr := mustTransform(t, cfg, 32, 32, zeroMean, unitStd)
	dst := make([]float32, tr.ViewLen())
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		tr.Apply(set.Image(0), Key{Seed: 1, Index: i}, dst)
		i++
	})
	if allocs != 0 {
		t.Errorf("Apply allocates %v times per view, want 0", allocs)
	}
}

// TestOutputRange: every transformed value, before normalisation, lies in
// [0,1] (the clamps and convex blends keep it there).
func TestOutputRange(t *testing.T) {
	set := randomSet(8, 32, 32, 10)
	cfg := SimCLR()
	cfg.BlurProb = 0.5
	tr := mustTransform(t, cfg, 32, 32, zeroMean, unitStd)
	dst := make([]float32, tr.ViewLen())
	for i := range 400 {
		tr.Apply(set.Image(i%8), Key{Seed: 2, Index: i}, dst)
		for j, v := range dst {
			if !(v >= -1e-6 && v <= 1+1e-6) {
				t.Fatalf("view %d element %d = %v outside [0,1]", i, j, v)
			}
		}
	}
}
