package resnet18

import (
	"fmt"
)

// Config sets the size of the network. The zero value of each field takes
// its default.
type Config struct {
	// Width multiplies the stage widths 64, 128, 256, 512 (1.0 is
	// torchvision's resnet18; 0.0625 a tiny network for tests).
	Width float64
	// ProjDim is the output dimension of the projection head (128).
	ProjDim int
	// InputSize is the input height and width in pixels (32).
	InputSize int
	// Norm is the normalisation after every convolution and in the head:
	// "batch" (the default; BatchNorm2d, and BatchNorm1d in the head) or
	// "group": GroupNorm with nn.Groups(C) = min(32, C) groups after every
	// convolution, and a head that standardises the pooled features with
	// running statistics only (head.0, an nn.RunningNorm) before Linear ->
	// ReLU -> Linear (head.1, head.3); InitHeadFromData sets the statistics
	// at the start of a run. With group norm each view's output is
	// independent of its batch, which makes the one-forward multilevel
	// correction exact (docs/definitions.md, section 4 "Contrastive learning as a biased oracle").
	//
	// Why the group-norm head normalises with running statistics: the
	// pooled backbone features of all images share a large common component
	// (they are averages of ReLU outputs; mean pairwise cosine 0.98 at
	// initialisation, width 1/8, real CIFAR images). Batch norm in the head
	// subtracts the batch mean and so removes it; a GroupNorm normalises
	// each image's features on their own and cannot, so every L2-normalised
	// projection was nearly the same vector and the network did not learn.
	// A fixed affine map fitted once removes it only until training moves
	// the common component: with 16-image steps it moved by more than the
	// images' spread within a few iterations and the projections collapsed
	// again. Running statistics follow it (HeadMomentum).
	Norm Norm
}

// HeadMomentum is the momentum of the group-norm head's running
// statistics (head.0): 0.5, so that they follow the features within a few
// steps. With PyTorch's 0.1 they lag by about ten steps, and in that time
// 16-image steps move the features' common component by more than their
// spread: at batch 16 (width 1/8, lr 0.5) the network collapsed with 0.1
// and learned with 0.5 and 1 (an earlier study of this project, in its git history).
const HeadMomentum = 0.5

// Norm is a network's normalisation (Config.Norm); the zero value is
// batch norm, the default. Its String, "batch" or "group", is what
// --norm names and what a model file's "norm" metadata records.
type Norm uint8

// Normalisations Config.Norm accepts.
const (
	NormBatch Norm = iota
	NormGroup
)

// String is the norm's name: "batch" or "group".
func (n Norm) String() string {
	switch n {
	case NormBatch:
		return "batch"
	case NormGroup:
		return "group"
	}
	return fmt.Sprintf("Norm(%d)", uint8(n))
}

// ParseNorm reads a norm's name; "" is batch norm (the default, and what
// model files written before group norm existed imply).
func ParseNorm(s string) (Norm, error) {
	switch s {
	case "", "batch":
		return NormBatch, nil
	case "group":
		return NormGroup, nil
	}
	return 0, fmt.Errorf("normalisation %q: use batch or group", s)
}

func (c Config) withDefaults() Config {
	if c.Width == 0 {
		c.Width = 1
	}
	if c.ProjDim == 0 {
		c.ProjDim = 128
	}
	if c.InputSize == 0 {
		c.InputSize = 32
	}
	return c
}

// Validate reports a configuration the network cannot be built with.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Width <= 0 || c.Width > 16:
		return fmt.Errorf("width %g: must be in (0, 16]; 1 is the standard ResNet-18", c.Width)
	case c.ProjDim < 1:
		return fmt.Errorf("projection dimension %d: must be positive (128 is standard)", c.ProjDim)
	case c.InputSize < 8:
		return fmt.Errorf("input size %d: must be at least 8 pixels (three stride-2 stages)", c.InputSize)
	case c.Norm != NormBatch && c.Norm != NormGroup:
		return fmt.Errorf("normalisation %v: use batch or group", c.Norm)
	}
	return nil
}
