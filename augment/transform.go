package augment

import (
	"fmt"
	"math/rand/v2"

	"github.com/simclr-go/simclr/data"
)

// Transform renders views of inH x inW images for one goroutine: it owns the
// scratch memory and the random generator, so rendering allocates nothing.
// Use one Transform per goroutine; views do not depend on which one renders
// them.
type Transform struct {
	cfg                    Config
	inH, inW, outH, outW   int
	scale, shift           [3]float32 // normalisation: x/std - mean/std
	pcg                    *rand.PCG
	rng                    *rand.Rand
	xc, yc                 axisCoeffs
	row                    []float32 // one source row as float32
	tmp                    []float32 // rows-resized crop, 3 x inH x outW
	blurKernel, blurBuffer []float32
}

// NewTransform prepares a transform of cfg for inH x inW images, normalising
// each channel c of the output as (x - mean[c]) / std[c] with x in [0,1].
func NewTransform(cfg Config, inH, inW int, mean, std [3]float32) (*Transform, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if inH <= 0 || inW <= 0 {
		return nil, fmt.Errorf("augment: image size %dx%d must be positive", inH, inW)
	}
	t := &Transform{cfg: cfg, inH: inH, inW: inW, outH: inH, outW: inW}
	if cfg.Size > 0 {
		t.outH, t.outW = cfg.Size, cfg.Size
	}
	for c := range 3 {
		if !(std[c] > 0) {
			return nil, fmt.Errorf("augment: std[%d] = %v must be > 0 (check the data set's statistics)", c, std[c])
		}
		t.scale[c] = 1 / std[c]
		t.shift[c] = -mean[c] / std[c]
	}
	if cfg.BlurProb > 0 {
		k := cfg.blurKernelSide(min(t.outH, t.outW))
		if k/2 >= min(t.outH, t.outW) {
			return nil, fmt.Errorf("augment: blur kernel %d too large for %dx%d views (reflect padding needs kernel/2 < side)", k, t.outH, t.outW)
		}
		t.blurKernel = make([]float32, k)
		t.blurBuffer = make([]float32, t.outH*t.outW)
	}
	t.pcg = rand.NewPCG(0, 0)
	t.rng = rand.New(t.pcg)
	t.xc = newAxisCoeffs(inW, t.outW)
	t.yc = newAxisCoeffs(inH, t.outH)
	t.row = make([]float32, inW)
	t.tmp = make([]float32, 3*inH*t.outW)
	return t, nil
}

// OutSize is the view's height and width.
func (t *Transform) OutSize() (h, w int) { return t.outH, t.outW }

// ViewLen is the float32 count of one view, 3 * height * width.
func (t *Transform) ViewLen() int { return 3 * t.outH * t.outW }

// Sample draws the random parameters of the view named by k.
func (t *Transform) Sample(k Key) Params {
	t.pcg.Seed(k.seeds())
	return t.cfg.sample(t.rng, t.inH, t.inW)
}

// Apply renders the view named by k of img (3 x inH x inW uint8) into dst
// (3 x outH x outW float32, normalised).
func (t *Transform) Apply(img []uint8, k Key, dst []float32) {
	p := t.Sample(k)
	t.Render(img, p, dst)
}

// Render applies the drawn parameters p to img in torchvision's pipeline
// order: resized crop, flip, colour jitter (in p.Order), grayscale, blur,
// normalisation. dst is 3 x outH x outW.
func (t *Transform) Render(img []uint8, p Params, dst []float32) {
	if len(img) != 3*t.inH*t.inW || len(dst) != t.ViewLen() {
		panic(fmt.Sprintf("augment: Render of a %d-byte image into %d floats; want 3x%dx%d = %d bytes into 3x%dx%d = %d floats",
			len(img), len(dst), t.inH, t.inW, 3*t.inH*t.inW, t.outH, t.outW, t.ViewLen()))
	}
	t.cropResize(img, &p, dst)
	hw := t.outH * t.outW
	r, g, b := dst[:hw], dst[hw:2*hw], dst[2*hw:3*hw]
	if p.Jitter {
		for _, op := range p.Order {
			switch op {
			case OpBrightness:
				if p.Brightness != 1 {
					adjustBrightness(r, g, b, p.Brightness)
				}
			case OpContrast:
				if p.Contrast != 1 {
					adjustContrast(r, g, b, p.Contrast)
				}
			case OpSaturation:
				if p.Saturation != 1 {
					adjustSaturation(r, g, b, p.Saturation)
				}
			case OpHue:
				if p.Hue != 0 {
					adjustHue(r, g, b, p.Hue)
				}
			}
		}
	}
	if p.Gray {
		toGrayscale(r, g, b)
	}
	if p.Blur && t.blurKernel != nil {
		gaussianKernel1D(t.blurKernel, p.Sigma)
		for _, plane := range [3][]float32{r, g, b} {
			gaussianBlur(plane, t.blurBuffer, t.outH, t.outW, t.blurKernel)
		}
	}
	for c, plane := range [3][]float32{r, g, b} {
		scale, shift := t.scale[c], t.shift[c]
		for i, x := range plane {
			plane[i] = x*scale + shift
		}
	}
}

// Eval is the evaluation transform: image i of set, normalised per channel
// as (x/255 - mean[c]) / std[c], written to dst (3 x H x W float32).
func Eval(set *data.Set, i int, mean, std [3]float32, dst []float32) {
	hw := set.H * set.W
	if len(dst) != 3*hw {
		panic(fmt.Sprintf("augment: Eval into %d floats, want 3x%dx%d = %d", len(dst), set.H, set.W, 3*hw))
	}
	img := set.Image(i)
	for c := range 3 {
		if !(std[c] > 0) {
			panic(fmt.Sprintf("augment: Eval with std[%d] = %v; std must be > 0", c, std[c]))
		}
		scale := 1 / (255 * std[c])
		shift := -mean[c] / std[c]
		out := dst[c*hw : (c+1)*hw]
		for j, v := range img[c*hw : (c+1)*hw] {
			out[j] = float32(v)*scale + shift
		}
	}
}
