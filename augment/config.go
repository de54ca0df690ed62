// Package augment is the SimCLR view transform: random resized crop,
// horizontal flip, colour jitter, random grayscale, optional Gaussian blur and
// normalisation, applied to one uint8 CHW image of a data.Set and written as
// normalised float32 CHW. It follows torchvision's documented sampling
// procedures and formulas (RandomResizedCrop, RandomHorizontalFlip,
// ColorJitter, RandomGrayscale, GaussianBlur, Normalize), working in float32 on
// [0,1] values instead of on 8-bit PIL images.
//
// Every view is a pure function of its Key (seed, epoch, image index, view
// number): the random draws come from a PCG stream seeded by a hash of the
// key, so the output does not depend on which goroutine renders it or in what
// order. A Transform holds one goroutine's scratch memory and renders views
// without allocating.
package augment

import (
	"fmt"
	"math"
)

// Config holds every parameter of the view transform, so users and tests can
// switch pieces off. The zero value is the identity transform (whole image,
// no flip, no jitter, no grayscale, no blur) followed by normalisation.
type Config struct {
	// Size is the side of the square output view. 0 keeps the input's H x W,
	// i.e. RandomResizedCrop resizes back to the input size.
	Size int

	// Crop enables RandomResizedCrop; when false the whole image is resized
	// to the output size.
	Crop bool
	// CropScale is torchvision's scale: the range of the crop's area as a
	// fraction of the image's area, sampled uniformly.
	CropScale [2]float64
	// CropRatio is torchvision's ratio: the range of the crop's aspect ratio
	// (width / height), sampled log-uniformly.
	CropRatio [2]float64

	// FlipProb is the probability of a horizontal flip.
	FlipProb float64

	// JitterProb is the probability of applying colour jitter at all.
	JitterProb float64
	// Brightness, Contrast and Saturation x draw a factor uniformly from
	// [max(0, 1-x), 1+x]; 0 switches that adjustment off.
	Brightness, Contrast, Saturation float64
	// Hue h draws a hue shift uniformly from [-h, h] (in turns, h <= 0.5);
	// 0 switches it off.
	Hue float64

	// GrayProb is the probability of converting the view to grayscale
	// (replicated over the three channels).
	GrayProb float64

	// BlurProb is the probability of a Gaussian blur, with sigma drawn
	// uniformly from BlurSigma.
	BlurProb  float64
	BlurSigma [2]float64
	// BlurKernel is the odd side of the blur kernel; 0 means 10% of the
	// output side rounded to odd (at least 3), as in SimCLR.
	BlurKernel int
}

// SimCLR is the reference recipe of docs/definitions.md, section 6 "Training
// recipe" (the strongest public ResNet-18 CIFAR setting): crop scale (0.2, 1),
// ratio (3/4, 4/3), flip 0.5, jitter (0.4, 0.4, 0.4, 0.1) with p 0.8, grayscale
// 0.2, no blur. The output keeps the input size (32x32 on CIFAR).
func SimCLR() Config {
	return Config{
		Crop:       true,
		CropScale:  [2]float64{0.2, 1},
		CropRatio:  [2]float64{3.0 / 4.0, 4.0 / 3.0},
		FlipProb:   0.5,
		JitterProb: 0.8,
		Brightness: 0.4,
		Contrast:   0.4,
		Saturation: 0.4,
		Hue:        0.1,
		GrayProb:   0.2,
		BlurSigma:  [2]float64{0.1, 2},
	}
}

// Paper is the augmentation the paper states (docs/definitions.md, section 6
// "Training recipe"): "random flip, color jittering, and color dropping", with
// no crop and no blur. It gives no strengths, so the flip, jitter and grayscale
// are those of SimCLR: flip 0.5, jitter (0.4, 0.4, 0.4, 0.1) with p 0.8,
// grayscale 0.2. Without the crop the two views of an image differ only in
// orientation and colour.
func Paper() Config {
	c := SimCLR()
	c.Crop = false
	c.CropScale, c.CropRatio = [2]float64{}, [2]float64{}
	c.BlurProb, c.BlurSigma = 0, [2]float64{}
	return c
}

// Preset is the configuration of a recipe by name: "simclr" (SimCLR, the
// default recipe with crop) or "paper" (Paper: flip, jitter, grayscale, no
// crop).
func Preset(name string) (Config, error) {
	switch name {
	case "simclr":
		return SimCLR(), nil
	case "paper":
		return Paper(), nil
	}
	return Config{}, fmt.Errorf("augmentation %q: use simclr (crop, flip, jitter, grayscale) or paper (flip, jitter, grayscale, no crop)", name)
}

// Identity is the configuration that only normalises (the zero value).
func Identity() Config { return Config{} }

// Validate reports the first parameter out of its range, naming the field.
func (c Config) Validate() error {
	prob := func(name string, p float64) error {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("augment: %s = %v is not a probability in [0, 1]", name, p)
		}
		return nil
	}
	for _, p := range []struct {
		name string
		p    float64
	}{{"FlipProb", c.FlipProb}, {"JitterProb", c.JitterProb}, {"GrayProb", c.GrayProb}, {"BlurProb", c.BlurProb}} {
		if err := prob(p.name, p.p); err != nil {
			return err
		}
	}
	if c.Size < 0 {
		return fmt.Errorf("augment: Size = %d must be >= 0 (0 keeps the input size)", c.Size)
	}
	if c.Crop {
		if !(c.CropScale[0] > 0 && c.CropScale[0] <= c.CropScale[1] && !math.IsInf(c.CropScale[1], 0)) {
			return fmt.Errorf("augment: CropScale = %v must satisfy 0 < min <= max", c.CropScale)
		}
		if !(c.CropRatio[0] > 0 && c.CropRatio[0] <= c.CropRatio[1] && !math.IsInf(c.CropRatio[1], 0)) {
			return fmt.Errorf("augment: CropRatio = %v must satisfy 0 < min <= max", c.CropRatio)
		}
	}
	for _, f := range []struct {
		name string
		x    float64
	}{{"Brightness", c.Brightness}, {"Contrast", c.Contrast}, {"Saturation", c.Saturation}} {
		if !(f.x >= 0) || math.IsInf(f.x, 0) {
			return fmt.Errorf("augment: %s = %v must be a finite value >= 0", f.name, f.x)
		}
	}
	if !(c.Hue >= 0 && c.Hue <= 0.5) {
		return fmt.Errorf("augment: Hue = %v must be in [0, 0.5]", c.Hue)
	}
	if c.BlurProb > 0 {
		if !(c.BlurSigma[0] > 0 && c.BlurSigma[0] <= c.BlurSigma[1] && !math.IsInf(c.BlurSigma[1], 0)) {
			return fmt.Errorf("augment: BlurSigma = %v must satisfy 0 < min <= max", c.BlurSigma)
		}
		if c.BlurKernel < 0 || (c.BlurKernel > 0 && c.BlurKernel%2 == 0) {
			return fmt.Errorf("augment: BlurKernel = %d must be odd and positive (or 0 for 10%% of the size)", c.BlurKernel)
		}
	}
	return nil
}

// blurKernelSide is the blur kernel side for an output of side size.
func (c Config) blurKernelSide(size int) int {
	if c.BlurKernel > 0 {
		return c.BlurKernel
	}
	k := int(0.1*float64(size))/2*2 + 1
	return max(k, 3)
}
