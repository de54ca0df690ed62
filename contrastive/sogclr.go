package contrastive

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// SogCLR answers plain queries at x_t only: every query moves the u of its
// images, so it can be neither replayed at x_{t-1} nor split into a
// multilevel difference. It keeps u, one per training image, and its
// gamma follows a schedule over the run (docs/definitions.md, section 10
// "Decoupled losses").
var sogCLRSupport = Support{ImageState: true}

// DefaultSogCLRGamma is SogCLR's gamma when --sogclr-gamma is 0.
const DefaultSogCLRGamma = 0.9

// GammaSchedule is SogCLR's gamma over a run: Gamma throughout, or with
// Cosine decayed by a cosine from 1 at the first iteration to Gamma at the
// last.
type GammaSchedule struct {
	Gamma  float64
	Cosine bool
}

// Name is the schedule's --sogclr-gamma-decay, for the log.
func (g GammaSchedule) Name() string {
	if g.Cosine {
		return "cosine"
	}
	return "constant"
}

// At is gamma at iteration iter (0-based) of total.
func (g GammaSchedule) At(iter, total int) float64 {
	if !g.Cosine || total <= 1 {
		return g.Gamma
	}
	frac := float64(min(iter, total-1)) / float64(total-1)
	return g.Gamma + (1-g.Gamma)*(1+math.Cos(math.Pi*frac))/2
}

// maxIndexed is the largest training set whose image indices a float32
// carries exactly (2^24), which gathering them between ranks needs.
const maxIndexed = 1 << 24

// sogCLR is the decoupled loss with a moving average u per training image
// (all 0 until an image is first seen) in the denominators.
type sogCLR struct {
	b        tensor.Backend
	dl       tensor.DecoupledLoss
	tau      float32
	u        []float32
	schedule GammaSchedule
	gamma    float64
	uBuf     map[int]tensor.Buffer // batch size -> device buffer of its u
}

func newSogCLR(b tensor.Backend, cfg LossConfig) (*sogCLR, error) {
	dl, err := decoupledBackend(b, SogCLR)
	if err != nil {
		return nil, err
	}
	if cfg.TrainImages < 1 || cfg.TrainImages > maxIndexed {
		return nil, fmt.Errorf("sogclr: %d training images; it keeps an average per image for 1..%d images", cfg.TrainImages, maxIndexed)
	}
	return &sogCLR{b: b, dl: dl, tau: float32(cfg.Temperature), u: make([]float32, cfg.TrainImages),
		schedule: cfg.Gamma, gamma: cfg.Gamma.At(0, 1), uBuf: map[int]tensor.Buffer{}}, nil
}

func (*sogCLR) Kind() LossKind { return SogCLR }

// SetIteration sets gamma to the schedule's at iter of total.
func (l *sogCLR) SetIteration(iter, total int) { l.gamma = l.schedule.At(iter, total) }

// Eval computes the loss of the batch's images, whose u it reads and
// updates.
func (l *sogCLR) Eval(batch Batch, z, dz tensor.Buffer) (tensor.LossResult, error) {
	n := batch.N
	if err := checkDecoupledBatch(SogCLR, n); err != nil {
		return tensor.LossResult{}, err
	}
	if len(batch.Images) != n {
		return tensor.LossResult{}, fmt.Errorf("sogclr: %d image indices for a batch of %d", len(batch.Images), n)
	}
	host := make([]float32, n)
	for k, idx := range batch.Images {
		host[k] = l.u[idx]
	}
	u := l.uBuf[n]
	if u == nil {
		u = l.b.Alloc(n)
		l.uBuf[n] = u
	}
	l.b.Upload(u, host)
	res := l.dl.Decoupled(n, batch.Proj, l.tau, float32(l.gamma), u, z, dz)
	l.b.Download(host, u)
	// An image twice in one batch (ranks' shares may overlap) keeps its
	// later position's value.
	for k, idx := range batch.Images {
		l.u[idx] = host[k]
	}
	return res, nil
}

func (*sogCLR) Chance(n int) float64  { return decoupledChance(n) }
func (*sogCLR) ChanceFormula() string { return "log(2N-2)" }

func (l *sogCLR) Free() {
	for n, buf := range l.uBuf {
		l.b.Free(buf)
		delete(l.uBuf, n)
	}
}

// StateName is the checkpoint's name of u.
func (*sogCLR) StateName() string { return "sogclr_u" }

// State is u, one per training image: the loss's own, for a checkpoint to
// save.
func (l *sogCLR) State() []float32 { return l.u }

// SetState restores u from a checkpoint.
func (l *sogCLR) SetState(u []float32) error {
	if len(u) != len(l.u) {
		return fmt.Errorf("sogclr state of %d images for a training set of %d (another data set or --val-split?)", len(u), len(l.u))
	}
	copy(l.u, u)
	return nil
}
