package contrastive

import (
	"fmt"
	"strings"

	"github.com/simclr-go/simclr/tensor"
)

// LossKind names a contrastive loss (--loss). Each has a file of its own
// (ntxent.go, dcl.go, sogclr.go) declaring what it supports.
type LossKind int

const (
	// NTXent is SimCLR's loss (docs/definitions.md, section 4), the only
	// one with multilevel queries H^l.
	NTXent LossKind = iota
	// DCL leaves the positive out of the denominator (docs/definitions.md,
	// section 10 "Decoupled losses").
	DCL
	// SogCLR keeps a moving average u per training image of the mean over
	// its negatives, state that the loss holds (section 10).
	SogCLR
)

// LossKinds are the losses, in --loss's order.
var LossKinds = []LossKind{NTXent, DCL, SogCLR}

func (k LossKind) String() string {
	switch k {
	case NTXent:
		return "ntxent"
	case DCL:
		return "dcl"
	case SogCLR:
		return "sogclr"
	}
	return fmt.Sprintf("LossKind(%d)", int(k))
}

// ParseLoss reads --loss: ntxent (or empty, as config files from before
// the setting have it), dcl or sogclr.
func ParseLoss(name string) (LossKind, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return NTXent, nil
	}
	for _, k := range LossKinds {
		if k.String() == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%q: use ntxent, dcl or sogclr", name)
}

// Support is what a loss's queries can be: the estimators it serves
// follow from it.
type Support struct {
	// Levels: multilevel queries H^l, the difference of a batch's loss
	// and its halves' (every MLMC estimator; L-SGD needs none).
	Levels bool
	// Previous: queries at x_{t-1} (the VR estimators' corrections). A
	// loss with state that each query moves cannot replay a query there.
	Previous bool
	// ImageState: the loss keeps state per training image (ImageState),
	// so each batch needs its images' indices, from every rank when a
	// draw is split over ranks.
	ImageState bool
}

// Supports is what the loss k supports, as its file declares it.
func (k LossKind) Supports() Support {
	switch k {
	case DCL:
		return dclSupport
	case SogCLR:
		return sogCLRSupport
	}
	return ntXentSupport
}

// Batch is one evaluation of a loss: the n images whose 2n views'
// projections (proj values each) it reads.
type Batch struct {
	N, Proj int
	// Diff asks for L_B - (L_B1 + L_B2)/2, with B1 the first n/2 images
	// (only when the loss supports Levels).
	Diff bool
	// Images are the n images' indices in the training set, in the order
	// of the projections (read by a loss that keeps ImageState).
	Images []int
}

// Loss is a contrastive loss the oracle's queries compute.
type Loss interface {
	// Kind is the loss's name.
	Kind() LossKind
	// Eval computes the loss of batch from z (2n x proj, rows 2k and
	// 2k+1 the views of image k) and writes its gradient into dz.
	Eval(batch Batch, z, dz tensor.Buffer) (tensor.LossResult, error)
	// Chance is the loss of a batch of n images whose embeddings are all
	// alike (a network that has learnt nothing), and ChanceFormula its
	// formula, for the log: losses of batches of different sizes compare
	// only after subtracting it.
	Chance(n int) float64
	ChanceFormula() string
	// Free releases the loss's device buffers.
	Free()
}

// ImageState is a loss that keeps state per training image (SogCLR's u),
// which a checkpoint saves and restores.
type ImageState interface {
	// StateName is the state's tensor name in a checkpoint.
	StateName() string
	// State is the loss's own state, one value per training image.
	State() []float32
	// SetState restores the state from a checkpoint.
	SetState(u []float32) error
}

// Scheduled is a loss whose settings change over the run (SogCLR's gamma):
// the trainer tells it every iteration where the run stands.
type Scheduled interface {
	// SetIteration readies the loss for iteration iter (0-based) of total.
	SetIteration(iter, total int)
}

// LossConfig is what the losses are built with.
type LossConfig struct {
	// Temperature is tau.
	Temperature float64
	// TrainImages is the size of the training set the stream draws from
	// (the per-image state's length).
	TrainImages int
	// Gamma is SogCLR's schedule of gamma.
	Gamma GammaSchedule
}

// NewLoss builds the loss k on backend b.
func NewLoss(k LossKind, b tensor.Backend, cfg LossConfig) (Loss, error) {
	switch k {
	case NTXent:
		return newNTXent(b, cfg.Temperature), nil
	case DCL:
		return newDCL(b, cfg.Temperature)
	case SogCLR:
		return newSogCLR(b, cfg)
	}
	return nil, fmt.Errorf("unknown loss %d", int(k))
}

// decoupledBackend is b's decoupled losses, or an error naming the loss
// that needs them.
func decoupledBackend(b tensor.Backend, k LossKind) (tensor.DecoupledLoss, error) {
	dl, ok := b.(tensor.DecoupledLoss)
	if !ok {
		return nil, fmt.Errorf("the %s backend has no %s loss", b.Name(), k)
	}
	return dl, nil
}

// checkDecoupledBatch refuses a batch a decoupled loss cannot compute.
func checkDecoupledBatch(k LossKind, n int) error {
	if n < 2 {
		return fmt.Errorf("%s needs batches of at least 2 images (a view needs a negative), got %d", k, n)
	}
	return nil
}
