package augment

import (
	"math"
	"math/rand/v2"
	"testing"
)

type rgb [3]float64

// planesOf splits pixels into three float32 planes.
func planesOf(px []rgb) (r, g, b []float32) {
	r, g, b = make([]float32, len(px)), make([]float32, len(px)), make([]float32, len(px))
	for i, p := range px {
		r[i], g[i], b[i] = float32(p[0]), float32(p[1]), float32(p[2])
	}
	return r, g, b
}

func checkPixels(t *testing.T, what string, r, g, b []float32, want []rgb, tol float64) {
	t.Helper()
	for i, w := range want {
		got := rgb{float64(r[i]), float64(g[i]), float64(b[i])}
		for c := range 3 {
			if math.Abs(got[c]-w[c]) > tol {
				t.Errorf("%s: pixel %d = %.6f, want %.6f (tolerance %g)", what, i, got, w, tol)
				break
			}
		}
	}
}

func TestBrightness(t *testing.T) {
	px := []rgb{{0.5, 0.25, 1.0}, {0, 0.1, 0.9}}
	cases := []struct {
		f    float32
		want []rgb
	}{
		{1.2, []rgb{{0.6, 0.3, 1.0}, {0, 0.12, 1.0}}}, // 1.08 clamps to 1
		{0.5, []rgb{{0.25, 0.125, 0.5}, {0, 0.05, 0.45}}},
		{0, []rgb{{0, 0, 0}, {0, 0, 0}}},
		{1, px},
	}
	for _, c := range cases {
		r, g, b := planesOf(px)
		adjustBrightness(r, g, b, c.f)
		checkPixels(t, "brightness", r, g, b, c.want, 1e-6)
	}
}

func TestContrast(t *testing.T) {
	// Grey values 0.299 and 0.114: mean grey m = 0.2065.
	px := []rgb{{1, 0, 0}, {0, 0, 1}}
	const m = 0.2065
	cases := []struct {
		f    float32
		want []rgb
	}{
		{0, []rgb{{m, m, m}, {m, m, m}}},
		{1, px},
		{0.5, []rgb{{0.5 + m/2, m / 2, m / 2}, {m / 2, m / 2, 0.5 + m/2}}},
		{1.4, []rgb{{1, 0, 0}, {0, 0, 1}}}, // 1.4 - 0.4m > 1 clamps; -0.4m < 0 clamps
		{1.2, []rgb{{1, 0, 0}, {0, 0, 1}}},
	}
	for _, c := range cases {
		r, g, b := planesOf(px)
		adjustContrast(r, g, b, c.f)
		checkPixels(t, "contrast", r, g, b, c.want, 1e-6)
	}
	// An interior case that does not clamp: (0.5, 0.5, 0.5) and (0.2, 0.4, 0.6).
	px = []rgb{{0.5, 0.5, 0.5}, {0.2, 0.4, 0.6}}
	m2 := (0.5 + (0.299*0.2 + 0.587*0.4 + 0.114*0.6)) / 2 // = 0.4506
	r, g, b := planesOf(px)
	adjustContrast(r, g, b, 1.3)
	checkPixels(t, "contrast 1.3", r, g, b, []rgb{
		{1.3*0.5 - 0.3*m2, 1.3*0.5 - 0.3*m2, 1.3*0.5 - 0.3*m2},
		{1.3*0.2 - 0.3*m2, 1.3*0.4 - 0.3*m2, 1.3*0.6 - 0.3*m2},
	}, 1e-6)
}

func TestSaturation(t *testing.T) {
	px := []rgb{{0.5, 0.4, 0.3}, {1, 0, 0}, {0.2, 0.9, 0.6}}
	gray := func(p rgb) float64 { return 0.299*p[0] + 0.587*p[1] + 0.114*p[2] }
	zero := make([]rgb, len(px))
	for i, p := range px {
		y := gray(p)
		zero[i] = rgb{y, y, y}
	}
	cases := []struct {
		name string
		f    float32
		want []rgb
	}{
		{"0 gives grayscale", 0, zero},
		{"1 is identity", 1, px},
		// 2x - gray: gray(0.5,0.4,0.3) = 0.4185.
		{"2 doubles chroma", 2, []rgb{{0.5815, 0.3815, 0.1815}, {1, 0, 0}, {0, 1, 2*0.6 - gray(px[2])}}},
	}
	for _, c := range cases {
		r, g, b := planesOf(px)
		adjustSaturation(r, g, b, c.f)
		checkPixels(t, "saturation "+c.name, r, g, b, c.want, 1e-6)
	}
}

func TestGrayscale(t *testing.T) {
	px := []rgb{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.2, 0.4, 0.8}}
	want := []rgb{{0.299, 0.299, 0.299}, {0.587, 0.587, 0.587}, {0.114, 0.114, 0.114}, {0.3858, 0.3858, 0.3858}}
	r, g, b := planesOf(px)
	toGrayscale(r, g, b)
	checkPixels(t, "grayscale", r, g, b, want, 1e-6)
}

// colorsys is Python's colorsys.rgb_to_hsv / hsv_to_rgb in float64, the
// formulas torchvision's _rgb2hsv / _hsv2rgb vectorise.
func hueShiftReference(p rgb, shift float64) rgb {
	r, g, b := p[0], p[1], p[2]
	maxc := max(r, g, b)
	minc := min(r, g, b)
	v := maxc
	if minc == maxc {
		return p
	}
	s := (maxc - minc) / maxc
	rc := (maxc - r) / (maxc - minc)
	gc := (maxc - g) / (maxc - minc)
	bc := (maxc - b) / (maxc - minc)
	var h float64
	switch {
	case r == maxc:
		h = bc - gc
	case g == maxc:
		h = 2 + rc - bc
	default:
		h = 4 + gc - rc
	}
	h = math.Mod(h/6+1, 1)
	h = math.Mod(h+shift+1, 1)
	i := int(h * 6)
	f := h*6 - float64(i)
	pp := v * (1 - s)
	q := v * (1 - s*f)
	tt := v * (1 - s*(1-f))
	switch i % 6 {
	case 0:
		return rgb{v, tt, pp}
	case 1:
		return rgb{q, v, pp}
	case 2:
		return rgb{pp, v, tt}
	case 3:
		return rgb{pp, q, v}
	case 4:
		return rgb{tt, pp, v}
	default:
		return rgb{v, pp, q}
	}
}

func TestHue(t *testing.T) {
	cases := []struct {
		name  string
		shift float32
		px    []rgb
		want  []rgb
	}{
		{"red half turn is cyan", 0.5, []rgb{{1, 0, 0}}, []rgb{{0, 1, 1}}},
		{"red third turn is green", 1.0 / 3, []rgb{{1, 0, 0}}, []rgb{{0, 1, 0}}},
		{"red minus third is blue", -1.0 / 3, []rgb{{1, 0, 0}}, []rgb{{0, 0, 1}}},
		{"orange half turn is azure", 0.5, []rgb{{1, 0.5, 0}}, []rgb{{0, 0.5, 1}}},
		{"dim green sixth turn", 1.0 / 6, []rgb{{0.1, 0.5, 0.1}}, []rgb{{0.1, 0.5, 0.5}}},
		{"gray unchanged", 0.3, []rgb{{0.4, 0.4, 0.4}, {0, 0, 0}}, []rgb{{0.4, 0.4, 0.4}, {0, 0, 0}}},
		{"zero shift is identity", 0, []rgb{{0.9, 0.2, 0.4}, {0.1, 0.7, 0.3}, {0.3, 0.3, 0.8}, {1, 1, 0}},
			[]rgb{{0.9, 0.2, 0.4}, {0.1, 0.7, 0.3}, {0.3, 0.3, 0.8}, {1, 1, 0}}},
	}
	for _, c := range cases {
		r, g, b := planesOf(c.px)
		adjustHue(r, g, b, c.shift)
		checkPixels(t, "hue "+c.name, r, g, b, c.want, 1e-6)
	}
}

// TestHueAgainstColorsys compares random pixels and shifts with the float64
// HSV round trip.
func TestHueAgainstColorsys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		shift := rng.Float64() - 0.5
		px := make([]rgb, 64)
		for i := range px {
			px[i] = rgb{rng.Float64(), rng.Float64(), rng.Float64()}
			if i%8 == 0 { // exact ties between channels
				px[i][1] = px[i][0]
			}
		}
		r, g, b := planesOf(px)
		want := make([]rgb, len(px))
		for i := range px {
			want[i] = hueShiftReference(rgb{float64(r[i]), float64(g[i]), float64(b[i])}, float64(float32(shift)))
		}
		adjustHue(r, g, b, float32(shift))
		checkPixels(t, "hue vs colorsys", r, g, b, want, 2e-6)
		if t.Failed() {
			t.Fatalf("trial %d shift %v", trial, shift)
		}
	}
}

func TestGaussianKernel(t *testing.T) {
	k := make([]float32, 3)
	gaussianKernel1D(k, 1)
	// exp(-1/2) = 0.60653066; weights (e, 1, e) / (1 + 2e).
	e := math.Exp(-0.5)
	want := []float64{e / (1 + 2*e), 1 / (1 + 2*e), e / (1 + 2*e)}
	for i := range k {
		if math.Abs(float64(k[i])-want[i]) > 1e-7 {
			t.Errorf("kernel[%d] = %v, want %v", i, k[i], want[i])
		}
	}
}

func TestGaussianBlur(t *testing.T) {
	const h, w = 6, 7
	kernel := []float32{0.25, 0.5, 0.25}
	tmp := make([]float32, h*w)
	cases := []struct {
		name       string
		impY, impX int
		// want lists nonzero outputs; every other pixel must be 0.
		want map[[2]int]float64
	}{
		{"interior impulse spreads as the outer product", 2, 3, map[[2]int]float64{
			{1, 2}: 1.0 / 16, {1, 3}: 2.0 / 16, {1, 4}: 1.0 / 16,
			{2, 2}: 2.0 / 16, {2, 3}: 4.0 / 16, {2, 4}: 2.0 / 16,
			{3, 2}: 1.0 / 16, {3, 3}: 2.0 / 16, {3, 4}: 1.0 / 16,
		}},
		// Reflect padding: pixel (0,1) reads (0,0) at offset -1 and, for
		// (0,0) itself, the mirrored neighbour (0,1) is 0; so the corner keeps
		// 0.5*0.5 and each neighbour gets 0.25*0.5, with (1,1) at 0.25*0.25.
		{"corner impulse with reflect padding", 0, 0, map[[2]int]float64{
			{0, 0}: 0.25, {0, 1}: 0.125, {1, 0}: 0.125, {1, 1}: 0.0625,
		}},
	}
	for _, c := range cases {
		plane := make([]float32, h*w)
		plane[c.impY*w+c.impX] = 1
		gaussianBlur(plane, tmp, h, w, kernel)
		for y := range h {
			for x := range w {
				if got, want := float64(plane[y*w+x]), c.want[[2]int{y, x}]; math.Abs(got-want) > 1e-7 {
					t.Errorf("%s: (%d,%d) = %v, want %v", c.name, y, x, got, want)
				}
			}
		}
	}
	// A constant plane stays constant (the kernel sums to 1, padding reflects).
	plane := make([]float32, h*w)
	for i := range plane {
		plane[i] = 0.7
	}
	gaussianBlur(plane, tmp, h, w, []float32{0.1, 0.2, 0.4, 0.2, 0.1})
	for i, v := range plane {
		if math.Abs(float64(v)-0.7) > 1e-6 {
			t.Fatalf("constant plane blurred to %v at %d", v, i)
		}
	}
}

func TestReflect(t *testing.T) {
	cases := []struct{ i, n, want int }{{-1, 5, 1}, {-2, 5, 2}, {5, 5, 3}, {6, 5, 2}, {0, 5, 0}, {4, 5, 4}}
	for _, c := range cases {
		if got := reflect(c.i, c.n); got != c.want {
			t.Errorf("reflect(%d, %d) = %d, want %d", c.i, c.n, got, c.want)
		}
	}
}
