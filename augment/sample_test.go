package augment

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The statistical tests below draw N views and accept an observed frequency
// within 5 standard deviations of its expectation: a correct sampler fails
// one such check with probability below 6e-7.
const (
	statDraws = 20000
	sigmas    = 5
)

func withinBinomial(t *testing.T, what string, count, n int, p float64) {
	t.Helper()
	freq := float64(count) / float64(n)
	bound := sigmas * math.Sqrt(p*(1-p)/float64(n))
	if math.Abs(freq-p) > bound {
		t.Errorf("%s: frequency %.4f over %d draws, want %.4f +- %.4f (5 sigma)", what, freq, n, p, bound)
	}
}

// acceptedAreaCDF is P(area fraction <= a) for one accepted attempt of
// RandomResizedCrop on a square image with scale (0.2, 1) and ratio
// (3/4, 4/3): s ~ U(0.2, 1) and log r ~ U(-log 4/3, log 4/3) are accepted
// when s r <= 1 and s / r <= 1, i.e. |log r| <= -log s, which has
// probability 1 for s <= 3/4 and -log s / log(4/3) above. Integrating
// (int -log s ds = s - s log s):
func acceptedAreaCDF(a float64) float64 {
	l := math.Log(4.0 / 3.0)
	mass := func(a float64) float64 {
		if a <= 0.75 {
			return a - 0.2
		}
		antiderivative := func(s float64) float64 { return s - s*math.Log(s) }
		return 0.55 + (antiderivative(a)-antiderivative(0.75))/l
	}
	return mass(min(max(a, 0.2), 1)) / mass(1)
}

func TestCropAreaDistribution(t *testing.T) {
	// A large image makes the rounding of the box to pixels negligible
	// (relative area error ~ 1e-3, covered by the slack below).
	const side = 2000
	cfg := SimCLR()
	areas := make([]float64, statDraws)
	var logRatioSum float64
	for i := range areas {
		rng := rand.New(rand.NewPCG(Key{Seed: 11, Index: i}.seeds()))
		p := cfg.sample(rng, side, side)
		areas[i] = float64(p.CropH*p.CropW) / (side * side)
		logRatioSum += math.Log(float64(p.CropW) / float64(p.CropH))
	}
	// Ten failed attempts (probability (1 - 0.836)^10 ~ 1e-8) are ignored.
	const slack = 3e-3
	for _, a := range []float64{0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99} {
		want := acceptedAreaCDF(a)
		count := 0
		for _, x := range areas {
			if x <= a {
				count++
			}
		}
		got := float64(count) / statDraws
		bound := sigmas*math.Sqrt(want*(1-want)/statDraws) + slack
		if math.Abs(got-want) > bound {
			t.Errorf("P(area <= %.2f) = %.4f, want %.4f +- %.4f", a, got, want, bound)
		}
	}
	// The accepted log ratio is symmetric about 0; its variance is below
	// (log 4/3)^2 / 3.
	meanLog := logRatioSum / statDraws
	if bound := sigmas * math.Log(4.0/3.0) / math.Sqrt(3*statDraws); math.Abs(meanLog) > bound {
		t.Errorf("mean log aspect ratio %.5f, want 0 +- %.5f", meanLog, bound)
	}
}

func TestCropPlacement(t *testing.T) {
	// On 32x32 images: the box lies inside the image, and its offset is
	// uniform over the room left, so top/(32-h) averages 1/2 with variance
	// at most 1/4 (bounded values in [0,1]) when there is room.
	tr := mustTransform(t, SimCLR(), 32, 32, zeroMean, unitStd)
	var sumTop, sumLeft float64
	var nTop, nLeft int
	for i := range statDraws {
		p := tr.Sample(Key{Seed: 12, Index: i})
		if p.Top < 0 || p.Left < 0 || p.CropH < 1 || p.CropW < 1 || p.Top+p.CropH > 32 || p.Left+p.CropW > 32 {
			t.Fatalf("box %+v outside 32x32", p)
		}
		if area := float64(p.CropH*p.CropW) / 1024; area < 0.2*0.8 || area > 1 {
			t.Fatalf("box %+v has area fraction %.3f, far outside scale (0.2, 1)", p, area)
		}
		if p.CropH < 32 {
			sumTop += float64(p.Top) / float64(32-p.CropH)
			nTop++
		}
		if p.CropW < 32 {
			sumLeft += float64(p.Left) / float64(32-p.CropW)
			nLeft++
		}
	}
	for _, m := range []struct {
		what string
		sum  float64
		n    int
	}{{"top", sumTop, nTop}, {"left", sumLeft, nLeft}} {
		mean := m.sum / float64(m.n)
		if bound := sigmas * 0.5 / math.Sqrt(float64(m.n)); math.Abs(mean-0.5) > bound {
			t.Errorf("mean relative %s offset %.4f over %d boxes, want 0.5 +- %.4f", m.what, mean, m.n, bound)
		}
	}
}

func TestCropFallback(t *testing.T) {
	// Boxes that can never fit fall back to torchvision's centre crop.
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		name              string
		h, w              int
		scale, ratio      [2]float64
		top, left, bh, bw int
	}{
		{"too wide: height from ratio min", 32, 32, [2]float64{0.99, 1}, [2]float64{2, 3}, 8, 0, 16, 32},
		// w = round(32 * 0.4) = round(12.8) = 13, left = (32 - 13) // 2 = 9.
		{"too tall: width from ratio max", 32, 32, [2]float64{0.99, 1}, [2]float64{0.3, 0.4}, 0, 9, 32, 13},
		{"ratio covers the image: whole image", 20, 30, [2]float64{1.5, 2}, [2]float64{1, 2}, 0, 0, 20, 30},
	}
	for _, c := range cases {
		top, left, h, w := cropBox(rng, c.h, c.w, c.scale, c.ratio)
		if top != c.top || left != c.left || h != c.bh || w != c.bw {
			t.Errorf("%s: box (top %d, left %d, h %d, w %d), want (%d, %d, %d, %d)", c.name, top, left, h, w, c.top, c.left, c.bh, c.bw)
		}
	}
}

func TestRandomDecisionRates(t *testing.T) {
	cfg := SimCLR()
	cfg.BlurProb = 0.5
	tr := mustTransform(t, cfg, 32, 32, zeroMean, unitStd)
	var flips, jitters, grays, blurs int
	var firstOp [4]int
	var sumB, sumC, sumS, sumH float64
	for i := range statDraws {
		p := tr.Sample(Key{Seed: 13, Epoch: 2, Index: i, View: i % 2})
		if p.Flip {
			flips++
		}
		if p.Gray {
			grays++
		}
		if p.Blur {
			blurs++
			if p.Sigma < 0.1 || p.Sigma > 2 {
				t.Fatalf("sigma %v outside [0.1, 2]", p.Sigma)
			}
		}
		if !p.Jitter {
			if p.Brightness != 1 || p.Contrast != 1 || p.Saturation != 1 || p.Hue != 0 {
				t.Fatalf("no jitter but factors %+v", p)
			}
			continue
		}
		jitters++
		seen := [4]bool{}
		for _, op := range p.Order {
			seen[op] = true
		}
		if seen != [4]bool{true, true, true, true} {
			t.Fatalf("order %v is not a permutation", p.Order)
		}
		firstOp[p.Order[0]]++
		for _, f := range []float32{p.Brightness, p.Contrast, p.Saturation} {
			if f < 0.6 || f > 1.4 {
				t.Fatalf("factor %v outside [0.6, 1.4]", f)
			}
		}
		if p.Hue < -0.1 || p.Hue > 0.1 {
			t.Fatalf("hue %v outside [-0.1, 0.1]", p.Hue)
		}
		sumB += float64(p.Brightness)
		sumC += float64(p.Contrast)
		sumS += float64(p.Saturation)
		sumH += float64(p.Hue)
	}
	withinBinomial(t, "flip", flips, statDraws, 0.5)
	withinBinomial(t, "jitter", jitters, statDraws, 0.8)
	withinBinomial(t, "grayscale", grays, statDraws, 0.2)
	withinBinomial(t, "blur", blurs, statDraws, 0.5)
	for op, count := range firstOp {
		withinBinomial(t, "jitter op first in order "+string(rune('0'+op)), count, jitters, 0.25)
	}
	// Uniform factors: U[0.6, 1.4] has mean 1 and sd 0.8/sqrt(12); the hue
	// U[-0.1, 0.1] has mean 0 and sd 0.2/sqrt(12).
	n := float64(jitters)
	for _, m := range []struct {
		what      string
		sum, mean float64
		sd        float64
	}{{"brightness", sumB, 1, 0.8 / math.Sqrt(12)}, {"contrast", sumC, 1, 0.8 / math.Sqrt(12)},
		{"saturation", sumS, 1, 0.8 / math.Sqrt(12)}, {"hue", sumH, 0, 0.2 / math.Sqrt(12)}} {
		if got, bound := m.sum/n, sigmas*m.sd/math.Sqrt(n); math.Abs(got-m.mean) > bound {
			t.Errorf("mean %s factor %.4f, want %.4f +- %.4f", m.what, got, m.mean, bound)
		}
	}
}

// TestSwitchedOffPieces: a zero probability or factor never draws the piece.
func TestSwitchedOffPieces(t *testing.T) {
	cfg := SimCLR()
	cfg.FlipProb, cfg.GrayProb, cfg.JitterProb, cfg.Crop = 0, 0, 1, false
	cfg.Hue, cfg.Contrast = 0, 0
	tr := mustTransform(t, cfg, 32, 32, zeroMean, unitStd)
	for i := range 2000 {
		p := tr.Sample(Key{Seed: 14, Index: i})
		if p.Flip || p.Gray || p.Blur || !p.Jitter || p.Hue != 0 || p.Contrast != 1 ||
			p.Top != 0 || p.Left != 0 || p.CropH != 32 || p.CropW != 32 {
			t.Fatalf("switched-off piece drawn: %+v", p)
		}
	}
}

func TestDeriveDistinct(t *testing.T) {
	seen := make(map[[2]uint64]Key)
	for epoch := range 4 {
		for index := range 5000 {
			for view := range 2 {
				k := Key{Seed: 1, Epoch: epoch, Index: index, View: view}
				a, b := k.seeds()
				if prev, dup := seen[[2]uint64{a, b}]; dup {
					t.Fatalf("keys %+v and %+v share a stream", prev, k)
				}
				seen[[2]uint64{a, b}] = k
			}
		}
	}
}
