package augment

import (
	"fmt"
	"math"
)

// The colour operations work in place on the three planes r, g, b of one
// view, values in [0,1], each plane of the same length (H*W). Their formulas
// are torchvision.transforms.functional's for float tensors.

// Grayscale weights (ITU-R 601-2 luma, as PIL's convert("L")).
const (
	lumaR = 0.299
	lumaG = 0.587
	lumaB = 0.114
)

func checkPlanes(r, g, b []float32) {
	if len(g) != len(r) || len(b) != len(r) {
		panic(fmt.Sprintf("augment: planes of different lengths r %d, g %d, b %d", len(r), len(g), len(b)))
	}
}

// clamp01 clamps x to [0, 1] (NaN to 1) on its bits: non-negative floats
// order as their bit patterns, and the two integer selects compile to
// conditional moves, where float comparisons would branch unpredictably.
func clamp01(x float32) float32 {
	bits := math.Float32bits(x)
	if int32(bits) < 0 { // negative, -0 included
		bits = 0
	}
	if bits > 0x3f800000 { // above 1.0
		bits = 0x3f800000
	}
	return math.Float32frombits(bits)
}

// adjustBrightness is F.adjust_brightness: x = clamp(f x, 0, 1). With
// f <= 1 the product stays in [0,1] and needs no clamp.
func adjustBrightness(r, g, b []float32, f float32) {
	checkPlanes(r, g, b)
	for _, plane := range [3][]float32{r, g, b} {
		if f <= 1 {
			for i, x := range plane {
				plane[i] = f * x
			}
			continue
		}
		for i, x := range plane {
			plane[i] = clamp01(f * x)
		}
	}
}

// adjustContrast is F.adjust_contrast: blend with the mean of the grayscale
// image, x = clamp(f x + (1-f) mean, 0, 1).
func adjustContrast(r, g, b []float32, f float32) {
	checkPlanes(r, g, b)
	var sum float64 // float64: a 224x224 sum in float32 would lose digits
	for i := range r {
		sum += float64(lumaR*r[i] + lumaG*g[i] + lumaB*b[i])
	}
	offset := (1 - f) * float32(sum/float64(len(r)))
	for _, plane := range [3][]float32{r, g, b} {
		for i, x := range plane {
			plane[i] = clamp01(f*x + offset)
		}
	}
}

// adjustSaturation is F.adjust_saturation: blend each pixel with its
// grayscale value, x = clamp(f x + (1-f) gray, 0, 1).
func adjustSaturation(r, g, b []float32, f float32) {
	checkPlanes(r, g, b)
	keep := 1 - f
	g = g[:len(r)]
	b = b[:len(r)]
	for i := range r {
		gray := keep * (lumaR*r[i] + lumaG*g[i] + lumaB*b[i])
		r[i] = clamp01(f*r[i] + gray)
		g[i] = clamp01(f*g[i] + gray)
		b[i] = clamp01(f*b[i] + gray)
	}
}

// toGrayscale is F.rgb_to_grayscale with three output channels.
func toGrayscale(r, g, b []float32) {
	checkPlanes(r, g, b)
	g = g[:len(r)]
	b = b[:len(r)]
	for i := range r {
		gray := lumaR*r[i] + lumaG*g[i] + lumaB*b[i]
		r[i], g[i], b[i] = gray, gray, gray
	}
}

// adjustHue is F.adjust_hue: convert to HSV, add shift (in turns) to H modulo
// 1, convert back. A rotation of H keeps V = max and V(1-S) = min, so the
// conversion back is written with the pixel's own max, min and chroma
// (p = min, q = max - chroma f, t = min + chroma f in torchvision's
// _hsv2rgb), which costs one division per pixel and no powers. Branches on
// the sector measured 3-4x faster than a branch-free select of torchvision's
// masks, on real and on noise images alike.
func adjustHue(r, g, b []float32, shift float32) {
	checkPlanes(r, g, b)
	g = g[:len(r)]
	b = b[:len(r)]
	shift6 := 6 * shift
	for i := range r {
		R, G, B := r[i], g[i], b[i]
		hi := max(R, G, B)
		lo := min(R, G, B)
		chroma := hi - lo
		if chroma == 0 { // gray: hue undefined, S = 0, unchanged
			continue
		}
		// Hue in sixths of a turn, torchvision's tie order (red, then green).
		var h6 float32
		switch inv := 1 / chroma; {
		case hi == R:
			h6 = (G - B) * inv
		case hi == G:
			h6 = 2 + (B-R)*inv
		default:
			h6 = 4 + (R-G)*inv
		}
		h6 += shift6
		// Wrap into [0, 6): h6 lies in (-4, 8) here.
		if h6 < 0 {
			h6 += 6
		} else if h6 >= 6 {
			h6 -= 6
		}
		if h6 >= 6 { // -tiny + 6 rounds to 6, which is hue 0
			h6 = 0
		}
		sector := int(h6)
		f := h6 - float32(sector)
		q := hi - chroma*f
		t := lo + chroma*f
		switch sector {
		case 0:
			r[i], g[i], b[i] = hi, t, lo
		case 1:
			r[i], g[i], b[i] = q, hi, lo
		case 2:
			r[i], g[i], b[i] = lo, hi, t
		case 3:
			r[i], g[i], b[i] = lo, q, hi
		case 4:
			r[i], g[i], b[i] = t, lo, hi
		default:
			r[i], g[i], b[i] = hi, lo, q
		}
	}
}

// gaussianKernel1D is torchvision's _get_gaussian_kernel1d: exp(-x^2/(2
// sigma^2)) at x = -(k-1)/2 .. (k-1)/2, normalised to sum 1.
func gaussianKernel1D(dst []float32, sigma float32) {
	half := float64(len(dst)-1) / 2
	var sum float64
	for i := range dst {
		x := (float64(i) - half) / float64(sigma)
		w := math.Exp(-0.5 * x * x)
		dst[i] = float32(w)
		sum += w
	}
	for i := range dst {
		dst[i] = float32(float64(dst[i]) / sum)
	}
}

// reflect maps an index outside [0, n) back inside as torch's "reflect"
// padding does (the edge is not repeated).
func reflect(i, n int) int {
	if n == 1 {
		return 0
	}
	for i < 0 || i >= n {
		if i < 0 {
			i = -i
		}
		if i >= n {
			i = 2*(n-1) - i
		}
	}
	return i
}

// gaussianBlur is F.gaussian_blur on one h x w plane: separable convolution
// with kernel (odd length), reflect padding. tmp holds h*w floats.
func gaussianBlur(plane, tmp []float32, h, w int, kernel []float32) {
	if len(plane) != h*w || len(tmp) < h*w || len(kernel)%2 != 1 {
		panic(fmt.Sprintf("augment: gaussianBlur plane %d, tmp %d for %dx%d, kernel %d", len(plane), len(tmp), h, w, len(kernel)))
	}
	half := len(kernel) / 2
	// Rows into tmp.
	for y := range h {
		row := plane[y*w : (y+1)*w]
		out := tmp[y*w : (y+1)*w]
		for x := range w {
			var s float32
			if x >= half && x < w-half { // interior: no padding to reflect
				for k, v := range row[x-half : x+half+1] {
					s += kernel[k] * v
				}
			} else {
				for k, kw := range kernel {
					s += kw * row[reflect(x+k-half, w)]
				}
			}
			out[x] = s
		}
	}
	// Columns back into plane.
	for y := range h {
		out := plane[y*w : (y+1)*w]
		clear(out)
		for k, kw := range kernel {
			src := tmp[reflect(y+k-half, h)*w:][:w]
			for x := range w {
				out[x] += kw * src[x]
			}
		}
	}
}
