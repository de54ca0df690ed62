package augment

import (
	"math"
	"math/rand/v2"
)

// Key names one view: the views of image Index (its index in the data set) at
// Epoch are View 0 and View 1. The random draws of a view depend on its key
// alone.
type Key struct {
	Seed         uint64
	Epoch, Index int
	View         int
}

// domain tags keep the view streams apart from other streams derived from the
// same user seed (the loader's permutations, say).
const tagView = 0x76696577 // "view"

// mix64 is the splitmix64 finaliser, a bijection with full avalanche.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Derive returns the two PCG seeds of the random stream named by words under
// seed. Distinct word sequences give independent-looking streams; the loader
// uses it (with its own tag word) for the per-epoch permutation.
func Derive(seed uint64, words ...uint64) (uint64, uint64) {
	h := mix64(seed + 0x9e3779b97f4a7c15)
	for _, w := range words {
		h = mix64(h ^ mix64(w+0x632be59bd9b4e019))
	}
	return h, mix64(h ^ 0xd1b54a32d192ed03)
}

func (k Key) seeds() (uint64, uint64) {
	return Derive(k.Seed, tagView, uint64(k.Epoch), uint64(k.Index), uint64(k.View))
}

// JitterOp names one of the four colour-jitter adjustments.
type JitterOp uint8

const (
	OpBrightness JitterOp = iota
	OpContrast
	OpSaturation
	OpHue
)

// Params is everything drawn at random for one view; Render turns it into
// pixels. A zero Params with the full image as crop box is the identity.
type Params struct {
	// Crop box in input pixels: rows Top..Top+CropH-1, columns Left..Left+CropW-1.
	Top, Left, CropH, CropW int
	Flip                    bool
	// Jitter says whether colour jitter applies; Order is the order of the
	// four adjustments, and the factors are torchvision's (1, 1, 1, 0 leave
	// the image unchanged).
	Jitter                           bool
	Order                            [4]JitterOp
	Brightness, Contrast, Saturation float32
	Hue                              float32
	Gray                             bool
	Blur                             bool
	Sigma                            float32
}

// uniform draws U[lo, hi) as torch.empty(1).uniform_(lo, hi) does.
func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// sample draws the parameters of one view of an inH x inW image from r,
// following torchvision's procedures in pipeline order.
func (c *Config) sample(r *rand.Rand, inH, inW int) Params {
	p := Params{CropH: inH, CropW: inW, Brightness: 1, Contrast: 1, Saturation: 1}
	if c.Crop {
		p.Top, p.Left, p.CropH, p.CropW = cropBox(r, inH, inW, c.CropScale, c.CropRatio)
	}
	p.Flip = r.Float64() < c.FlipProb
	// RandomApply: the transform applies unless p < rand.
	p.Jitter = r.Float64() < c.JitterProb
	if p.Jitter {
		p.Order = [4]JitterOp{OpBrightness, OpContrast, OpSaturation, OpHue}
		for i := 3; i > 0; i-- { // uniform random order (torch.randperm(4))
			j := r.IntN(i + 1)
			p.Order[i], p.Order[j] = p.Order[j], p.Order[i]
		}
		if c.Brightness > 0 {
			p.Brightness = float32(uniform(r, max(0, 1-c.Brightness), 1+c.Brightness))
		}
		if c.Contrast > 0 {
			p.Contrast = float32(uniform(r, max(0, 1-c.Contrast), 1+c.Contrast))
		}
		if c.Saturation > 0 {
			p.Saturation = float32(uniform(r, max(0, 1-c.Saturation), 1+c.Saturation))
		}
		if c.Hue > 0 {
			p.Hue = float32(uniform(r, -c.Hue, c.Hue))
		}
	}
	p.Gray = r.Float64() < c.GrayProb
	if c.BlurProb > 0 {
		p.Blur = r.Float64() < c.BlurProb
		if p.Blur {
			p.Sigma = float32(uniform(r, c.BlurSigma[0], c.BlurSigma[1]))
		}
	}
	return p
}

// cropBox is torchvision's RandomResizedCrop.get_params: ten attempts drawing
// an area fraction uniformly from scale and a log-uniform aspect ratio, the
// first box that fits placed uniformly; otherwise a centre crop with the
// aspect ratio clamped to ratio. Python's round (half to even) sizes the box.
func cropBox(r *rand.Rand, height, width int, scale, ratio [2]float64) (top, left, h, w int) {
	area := float64(height * width)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		targetArea := area * uniform(r, scale[0], scale[1])
		aspect := math.Exp(uniform(r, logLo, logHi))
		w = int(math.RoundToEven(math.Sqrt(targetArea * aspect)))
		h = int(math.RoundToEven(math.Sqrt(targetArea / aspect)))
		if 0 < w && w <= width && 0 < h && h <= height {
			top = r.IntN(height - h + 1)
			left = r.IntN(width - w + 1)
			return top, left, h, w
		}
	}
	inRatio := float64(width) / float64(height)
	switch {
	case inRatio < ratio[0]:
		w = width
		h = int(math.RoundToEven(float64(w) / ratio[0]))
	case inRatio > ratio[1]:
		h = height
		w = int(math.RoundToEven(float64(h) * ratio[1]))
	default:
		w, h = width, height
	}
	return (height - h) / 2, (width - w) / 2, h, w
}
