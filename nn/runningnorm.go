package nn

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// RunningNorm is torch.nn.BatchNorm1d(C, affine=False) applied with its
// running statistics in training as in evaluation (PyTorch's evaluation
// mode): y = (x - running_mean) / sqrt(running_var + eps). Its tensors are
// name+".running_mean", ".running_var" and ".num_batches_tracked", all
// state; it has no trainable parameters.
//
// Why: the group-norm network's pooled features share a large common
// component, which batch norm in the projection head removes and a
// batch-independent head must remove too, or small batches collapse every
// projection onto one vector (docs/definitions.md, section 4 "Contrastive
// learning as a biased oracle"). A training-mode forward normalises with the
// running statistics as they are; with updateRunning it moves a pending copy
// towards this batch's mean and variance, which takes effect at Commit (once
// per iteration). So every view's output is independent of the rest of its
// batch, the gradient treats the statistics as constants, and the exactness of
// docs/definitions.md, section 4 "Contrastive learning as a biased oracle"
// holds for every query of an iteration.
type RunningNorm struct {
	RunningMean, RunningVar, NumBatchesTracked *Tensor
	C                                          int
	Eps, Momentum                              float32
	params                                     *Params
	// consts holds, on the backend, C ones, C zeros, two scratch vectors
	// of C for the batch statistics of an update, the pending running mean
	// and variance, and the previous ones (Bind).
	ones, zeros, scratchMean, scratchInvStd tensor.Buffer
	pendingMean, pendingVar                 tensor.Buffer
	prevMean, prevVar                       tensor.Buffer
	consts                                  tensor.Buffer
	// pending says that updates since the last Commit are held in
	// pendingMean and pendingVar.
	pending bool
	// hasPrev says that prevMean and prevVar hold the statistics before
	// the last Commit; usePrev that the passes use them (UsePrevious).
	hasPrev, usePrev bool
}

// NewRunningNorm registers the layer's state in p with momentum (PyTorch's
// convention: running = (1 - momentum) running + momentum batch).
func NewRunningNorm(p *Params, name string, c int, momentum float32) *RunningNorm {
	if c < 1 || momentum <= 0 || momentum > 1 {
		panic(fmt.Sprintf("nn.NewRunningNorm(%q): %d channels, momentum %g", name, c, momentum))
	}
	return &RunningNorm{
		RunningMean:       p.Add(name+".running_mean", State, Init{Kind: InitZero}, c),
		RunningVar:        p.Add(name+".running_var", State, Init{Kind: InitOne}, c),
		NumBatchesTracked: p.Add(name+".num_batches_tracked", State, Init{Kind: InitZero}),
		C:                 c,
		Eps:               1e-5,
		Momentum:          momentum,
		params:            p,
	}
}

// Bind allocates the layer's constants on b (call after Params.Allocate):
// the backend's batch-norm kernels, with gamma = 1 and beta = 0, compute
// every step of the layer, so it needs no kernels of its own.
func (rn *RunningNorm) Bind(b tensor.Backend) {
	if rn.consts != nil {
		panic("nn.RunningNorm.Bind called twice")
	}
	c := rn.C
	rn.consts = b.Alloc(8 * c)
	rn.ones, rn.zeros = b.Slice(rn.consts, 0, c), b.Slice(rn.consts, c, c)
	rn.scratchMean, rn.scratchInvStd = b.Slice(rn.consts, 2*c, c), b.Slice(rn.consts, 3*c, c)
	rn.pendingMean, rn.pendingVar = b.Slice(rn.consts, 4*c, c), b.Slice(rn.consts, 5*c, c)
	rn.prevMean, rn.prevVar = b.Slice(rn.consts, 6*c, c), b.Slice(rn.consts, 7*c, c)
	ones := make([]float32, c)
	for i := range ones {
		ones[i] = 1
	}
	b.Upload(rn.ones, ones)
}

// Free releases the constants of Bind.
func (rn *RunningNorm) Free(b tensor.Backend) {
	if rn.consts != nil {
		b.Free(rn.consts)
		rn.consts = nil
	}
}

// Shape is the normalisation of n rows of C features.
func (rn *RunningNorm) Shape(n int) tensor.BNShape {
	return tensor.BNShape{N: n, C: rn.C, HW: 1, Eps: rn.Eps, Momentum: rn.Momentum}
}

// SavedLen is C: a training-mode forward saves the running mean and
// variance it normalised with (BNSaved.Mean and, here, BNSaved.InvStd
// holding the variance), since an update changes them before Backward.
func (rn *RunningNorm) SavedLen(int) int { return rn.C }

func (rn *RunningNorm) mustBeBound() {
	if rn.consts == nil {
		panic("nn.RunningNorm used before Bind")
	}
}

// ForwardTrain normalises x (N,C) into y with the running statistics,
// saving them for Backward; with updateRunning it also moves a pending copy
// of them towards this batch's mean and unbiased variance, which Commit
// makes the running statistics, and counts the batch in num_batches_tracked
// at once (a count only, as in PyTorch: the momentum is fixed, so nothing
// reads it).
func (rn *RunningNorm) ForwardTrain(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer, saved BNSaved, updateRunning bool) {
	rn.mustBeBound()
	mean, variance := rn.stats()
	b.Copy(saved.Mean, mean)
	b.Copy(saved.InvStd, variance)
	if updateRunning {
		if rn.usePrev {
			panic("nn.RunningNorm: an updating pass with the previous statistics")
		}
		if !rn.pending {
			b.Copy(rn.pendingMean, rn.RunningMean.Value)
			b.Copy(rn.pendingVar, rn.RunningVar.Value)
			rn.pending = true
		}
		// The layer's momentum, not the one planned into s: precise BN
		// changes it between batches. y is only scratch here.
		s.Momentum = rn.Momentum
		b.BatchNormForwardTrain(s, x, rn.ones, rn.zeros, y, rn.scratchMean, rn.scratchInvStd, rn.pendingMean, rn.pendingVar)
		b.Axpy(rn.NumBatchesTracked.Value, 1, rn.params.One())
	}
	b.BatchNormForwardEval(s, x, rn.ones, rn.zeros, saved.Mean, saved.InvStd, y)
}

// stats are the statistics the passes normalise with: the running ones,
// or the previous ones under UsePrevious.
func (rn *RunningNorm) stats() (mean, variance tensor.Buffer) {
	if rn.usePrev && rn.hasPrev {
		return rn.prevMean, rn.prevVar
	}
	return rn.RunningMean.Value, rn.RunningVar.Value
}

// Commit makes the updates of the training-mode passes since the last
// Commit the running statistics, and keeps the statistics they replace as
// the previous ones. Until then every pass, updating or not, normalises
// with the same statistics: a trainer commits once per iteration, after
// the optimizer step, so that all the passes of iteration t (several
// queries) compute one function of the parameters, F(x; S_t).
func (rn *RunningNorm) Commit(b tensor.Backend) {
	b.Copy(rn.prevMean, rn.RunningMean.Value)
	b.Copy(rn.prevVar, rn.RunningVar.Value)
	rn.hasPrev = true
	if !rn.pending {
		return
	}
	b.Copy(rn.RunningMean.Value, rn.pendingMean)
	b.Copy(rn.RunningVar.Value, rn.pendingVar)
	rn.pending = false
}

// Pending returns the statistics the next Commit will make the running
// ones (views of the layer's buffers), starting them from the running ones
// if no updating pass ran since the last Commit. Data-parallel training
// averages them over its processes before Commit: each process's passes
// saw only its share of the images, and processes whose statistics drifted
// apart would train different functions with the same parameters.
func (rn *RunningNorm) Pending(b tensor.Backend) (mean, variance tensor.Buffer) {
	rn.mustBeBound()
	if !rn.pending {
		b.Copy(rn.pendingMean, rn.RunningMean.Value)
		b.Copy(rn.pendingVar, rn.RunningVar.Value)
		rn.pending = true
	}
	return rn.pendingMean, rn.pendingVar
}

// Previous returns the previous iteration's mean and variance (views of
// the layer's buffers) and whether there are any (a Commit happened since
// Bind or SetPrevious), for a checkpoint.
func (rn *RunningNorm) Previous() (mean, variance tensor.Buffer, ok bool) {
	return rn.prevMean, rn.prevVar, rn.hasPrev
}

// SetPrevious restores the previous iteration's statistics from a
// checkpoint (C values each).
func (rn *RunningNorm) SetPrevious(b tensor.Backend, mean, variance []float32) error {
	rn.mustBeBound()
	if len(mean) != rn.C || len(variance) != rn.C {
		return fmt.Errorf("previous head statistics: %d and %d values, want %d each", len(mean), len(variance), rn.C)
	}
	b.Upload(rn.prevMean, mean)
	b.Upload(rn.prevVar, variance)
	rn.hasPrev = true
	return nil
}

// UsePrevious makes the passes normalise with the statistics of the
// previous iteration (those before the last Commit; the running ones if
// there was none) while on: a VR correction evaluates g(x_t) - g(x_{t-1})
// with x_{t-1}'s own function F(.; S_{t-1}), so that the corrections
// telescope along the path as SPIDER needs although S moves.
func (rn *RunningNorm) UsePrevious(on bool) { rn.usePrev = on }

// ForwardEval normalises x into y with the running statistics (the
// previous ones under UsePrevious).
func (rn *RunningNorm) ForwardEval(b tensor.Backend, s tensor.BNShape, x, y tensor.Buffer) {
	rn.mustBeBound()
	mean, variance := rn.stats()
	b.BatchNormForwardEval(s, x, rn.ones, rn.zeros, mean, variance, y)
}

// Backward writes dx = dy / sqrt(var + eps) with the variance the forward
// pass used: the statistics are constants of the function, so no term
// couples the views of the batch (unlike batch norm's backward).
func (rn *RunningNorm) Backward(b tensor.Backend, s tensor.BNShape, dy, dx tensor.Buffer, saved BNSaved) {
	rn.mustBeBound()
	b.BatchNormForwardEval(s, dy, rn.ones, rn.zeros, rn.zeros, saved.InvStd, dx)
}
