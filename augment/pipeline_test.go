package augment

import (
	"math"
	"testing"
)

// referenceView is the whole view transform for drawn parameters p, written
// out in float64 one pixel at a time from the torchvision definitions: plain
// bilinear sampling of the crop (what PIL's filter reduces to when
// enlarging), mirror, the jitter operations in p.Order, grayscale, a direct
// 2-D Gaussian convolution with reflect padding, normalisation.
func referenceView(img []uint8, h, w int, p Params, mean, std [3]float32) []float64 {
	hw := h * w
	x := make([]float64, 3*hw)
	for c := range 3 {
		for oy := range h {
			for ox := range w {
				sx := ox
				if p.Flip {
					sx = w - 1 - ox
				}
				x[c*hw+oy*w+ox] = bilinearReference(img, h, w, p, c, h, w, oy, sx)
			}
		}
	}
	clamp := func(v float64) float64 { return min(max(v, 0), 1) }
	gray := func(i int) float64 { return 0.299*x[i] + 0.587*x[hw+i] + 0.114*x[2*hw+i] }
	if p.Jitter {
		for _, op := range p.Order {
			switch op {
			case OpBrightness:
				for i := range x {
					x[i] = clamp(float64(p.Brightness) * x[i])
				}
			case OpContrast:
				var m float64
				for i := range hw {
					m += gray(i)
				}
				m /= float64(hw)
				f := float64(p.Contrast)
				for i := range x {
					x[i] = clamp(f*x[i] + (1-f)*m)
				}
			case OpSaturation:
				f := float64(p.Saturation)
				for i := range hw {
					y := gray(i)
					for c := range 3 {
						x[c*hw+i] = clamp(f*x[c*hw+i] + (1-f)*y)
					}
				}
			case OpHue:
				for i := range hw {
					out := hueShiftReference(rgb{x[i], x[hw+i], x[2*hw+i]}, float64(p.Hue))
					x[i], x[hw+i], x[2*hw+i] = out[0], out[1], out[2]
				}
			}
		}
	}
	if p.Gray {
		for i := range hw {
			y := gray(i)
			x[i], x[hw+i], x[2*hw+i] = y, y, y
		}
	}
	if p.Blur {
		k := SimCLR().blurKernelSide(min(h, w))
		kernel := make([]float64, k)
		var sum float64
		for i := range kernel {
			d := (float64(i) - float64(k-1)/2) / float64(p.Sigma)
			kernel[i] = math.Exp(-d * d / 2)
			sum += kernel[i]
		}
		src := append([]float64(nil), x...)
		for c := range 3 {
			for y := range h {
				for xx := range w {
					var s float64
					for dy := range k {
						for dx := range k {
							sy, sx := reflect(y+dy-k/2, h), reflect(xx+dx-k/2, w)
							s += kernel[dy] * kernel[dx] / (sum * sum) * src[c*hw+sy*w+sx]
						}
					}
					x[c*hw+y*w+xx] = s
				}
			}
		}
	}
	for c := range 3 {
		for i := range hw {
			x[c*hw+i] = (x[c*hw+i] - float64(mean[c])) / float64(std[c])
		}
	}
	return x
}

// TestRenderMatchesReference renders full SimCLR views (blur included) of
// real CIFAR-10 images and compares them with the float64 reference; the
// tolerance covers float32 rounding through the hue division near gray
// pixels.
func TestRenderMatchesReference(t *testing.T) {
	set := cifarImages(t, 16)
	mean := [3]float32{0.4914, 0.4822, 0.4465}
	std := [3]float32{0.2470, 0.2435, 0.2616}
	cfg := SimCLR()
	cfg.BlurProb = 0.5
	tr := mustTransform(t, cfg, 32, 32, mean, std)
	dst := make([]float32, tr.ViewLen())
	var worst float64
	for i := range 60 {
		k := Key{Seed: 3, Index: i % set.Len(), View: i % 2, Epoch: i / set.Len()}
		p := tr.Sample(k)
		tr.Render(set.Image(k.Index), p, dst)
		want := referenceView(set.Image(k.Index), 32, 32, p, mean, std)
		for j := range want {
			d := math.Abs(float64(dst[j]) - want[j])
			worst = max(worst, d)
			if d > 2e-5 {
				t.Fatalf("view %+v (params %+v): element %d = %v, want %v", k, p, j, dst[j], want[j])
			}
		}
	}
	t.Logf("largest difference from the float64 reference: %.2g", worst)
}
