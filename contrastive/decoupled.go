package contrastive

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// Loss names the contrastive loss of the oracle's queries.
type Loss int

const (
	// NTXent is SimCLR's loss (docs/definitions.md, section 4), the only
	// one with multilevel queries H^l.
	NTXent Loss = iota
	// DCL leaves the positive out of the denominator (docs/definitions.md,
	// section 10 "Decoupled losses").
	DCL
	// SogCLR keeps a moving average u per training image of the mean over
	// its negatives, state that the oracle holds (section 10).
	SogCLR
)

func (l Loss) String() string {
	switch l {
	case DCL:
		return "dcl"
	case SogCLR:
		return "sogclr"
	}
	return "ntxent"
}

// maxIndexed is the largest training set whose image indices a float32
// carries exactly (2^24), which gathering them between ranks needs.
const maxIndexed = 1 << 24

// SetLoss chooses the loss of every query; SogCLR keeps one u per image of
// the trainImages the stream draws from (all 0 until an image is first
// seen). DCL and SogCLR answer plain queries (h^l) only. Call it before
// the first Draw.
func (o *Oracle) SetLoss(l Loss, trainImages int) error {
	switch l {
	case NTXent, DCL:
		o.sogU = nil
	case SogCLR:
		if trainImages < 1 || trainImages > maxIndexed {
			return fmt.Errorf("sogclr: %d training images; it keeps an average per image for 1..%d images", trainImages, maxIndexed)
		}
		o.sogU = make([]float32, trainImages)
		o.gamma = 1
	default:
		return fmt.Errorf("unknown loss %d", l)
	}
	o.loss = l
	return nil
}

// Loss is the loss the queries compute.
func (o *Oracle) Loss() Loss { return o.loss }

// SetGamma sets SogCLR's gamma in (0, 1] for the next queries (the trainer
// sets it every iteration when it decays).
func (o *Oracle) SetGamma(gamma float64) { o.gamma = gamma }

// SogCLRState is SogCLR's u, one per training image (nil for another
// loss): the oracle's own, for a checkpoint to save.
func (o *Oracle) SogCLRState() []float32 { return o.sogU }

// SetSogCLRState restores u from a checkpoint.
func (o *Oracle) SetSogCLRState(u []float32) error {
	if o.loss != SogCLR {
		return fmt.Errorf("sogclr state given to an oracle of the %s loss", o.loss)
	}
	if len(u) != len(o.sogU) {
		return fmt.Errorf("sogclr state of %d images for a training set of %d (another data set or --val-split?)", len(u), len(o.sogU))
	}
	copy(o.sogU, u)
	return nil
}

// lossScale is the loss of a batch of n images whose embeddings are all
// alike: log(2n - 1) for NT-Xent (LossScale), log(2n - 2) for the
// decoupled losses, whose denominators leave the positive out.
func (o *Oracle) lossScale(n int) float64 {
	if o.loss == NTXent {
		return LossScale(n)
	}
	return math.Log(float64(2*n - 2))
}

// decoupled computes the DCL or SogCLR loss of the draw's n images from
// z (all 2n views' projections) into dz. For SogCLR, indices are the
// draw's images (all ranks' when split), whose u it reads and updates.
func (o *Oracle) decoupled(n, proj int, indices []int, z, dz tensor.Buffer) (tensor.LossResult, error) {
	dl, ok := o.b.(tensor.DecoupledLoss)
	if !ok {
		return tensor.LossResult{}, fmt.Errorf("the %s backend has no %s loss", o.b.Name(), o.loss)
	}
	if n < 2 {
		return tensor.LossResult{}, fmt.Errorf("%s needs batches of at least 2 images (a view needs a negative), got %d", o.loss, n)
	}
	if o.loss == DCL {
		return dl.Decoupled(n, proj, o.tau, 0, nil, z, dz), nil
	}
	if len(indices) != n {
		return tensor.LossResult{}, fmt.Errorf("sogclr: %d image indices for a batch of %d", len(indices), n)
	}
	host := make([]float32, n)
	for k, idx := range indices {
		host[k] = o.sogU[idx]
	}
	u := o.buffer(o.sogBuf, n)
	o.b.Upload(u, host)
	res := dl.Decoupled(n, proj, o.tau, float32(o.gamma), u, z, dz)
	o.b.Download(host, u)
	// An image twice in one batch (ranks' shares may overlap) keeps its
	// later position's value.
	for k, idx := range indices {
		o.sogU[idx] = host[k]
	}
	return res, nil
}

// gatherIndices returns the indices of a split draw's images on every rank:
// each rank writes its share's (as float32, exact below maxIndexed) into
// zeros, and the sum over ranks is all of them, in the order of the
// gathered projections.
func (o *Oracle) gatherIndices(n int, mine []int) ([]int, error) {
	all := o.buffer(o.sogBuf, n)
	host := make([]float32, n)
	off := o.shard.Rank() * len(mine)
	for k, idx := range mine {
		host[off+k] = float32(idx)
	}
	o.b.Upload(all, host)
	if err := o.shard.AllReduceSum(all); err != nil {
		return nil, fmt.Errorf("gather the image indices: %w", err)
	}
	o.b.Download(host, all)
	out := make([]int, n)
	for k, v := range host {
		out[k] = int(v)
	}
	return out, nil
}
