package resnet18

import (
	"fmt"

	"github.com/simclr-go/simclr/nn"
	"github.com/simclr-go/simclr/tensor"
)

// BatchNorms lists every batch-norm layer of the network in forward order
// (none with group norm, whose only running statistics are the head's
// RunningNorm, HeadNorm, which precise BN leaves alone).
func (m *Model) BatchNorms() []*nn.BatchNorm {
	norms := []nn.Norm{m.bn1}
	for _, bl := range m.blocks {
		norms = append(norms, bl.bn1, bl.bn2)
		if bl.downBN != nil {
			norms = append(norms, bl.downBN)
		}
	}
	norms = append(norms, m.headBN)
	var bns []*nn.BatchNorm
	for _, n := range norms {
		if bn, ok := n.(*nn.BatchNorm); ok {
			bns = append(bns, bn)
		}
	}
	return bns
}

// CommitHeadStatistics makes the updates of the group-norm head's running
// statistics since the last call take effect (nn.RunningNorm.Commit); a
// trainer calls it once per iteration, after the optimizer step. With batch
// norm it does nothing.
func (m *Model) CommitHeadStatistics() {
	if m.headIn != nil {
		m.headIn.Commit(m.backend)
	}
}

// PendingHeadStatistics returns the group-norm head's statistics that the
// next CommitHeadStatistics makes the running ones (nn.RunningNorm.Pending),
// for data-parallel training to average over processes first; ok is false
// with batch norm, whose head has none.
func (m *Model) PendingHeadStatistics() (mean, variance tensor.Buffer, ok bool) {
	if m.headIn == nil {
		return nil, nil, false
	}
	mean, variance = m.headIn.Pending(m.backend)
	return mean, variance, true
}

// UsePreviousHeadStatistics makes the group-norm head normalise with the
// running statistics of the previous iteration while on (for the VR
// evaluation at x_{t-1}, nn.RunningNorm.UsePrevious). With batch norm it
// does nothing.
func (m *Model) UsePreviousHeadStatistics(on bool) {
	if m.headIn != nil {
		m.headIn.UsePrevious(on)
	}
}

// GraphState readies the model for a training-mode pass whose device work
// is recorded once and replayed without calling Forward and Backward
// (tensor.StepGraphs), and returns what of the model's host state, beyond
// the views, the point and updateRunning, decides which work such a pass
// queues: a comparable value for the graph's key. With group norm, the
// head's first updating pass of an iteration starts its pending running
// statistics from the running ones (nn.RunningNorm.ForwardTrain); that
// copy is made here, outside the graph, so that every updating pass queues
// the same work; and whether previous statistics exist decides which ones a
// pass at x_{t-1} normalises with. With batch norm nothing does (nil).
func (m *Model) GraphState(updateRunning bool) any {
	if m.headIn == nil {
		return nil
	}
	if updateRunning {
		m.headIn.Pending(m.backend)
	}
	_, _, hasPrevious := m.headIn.Previous()
	return hasPrevious
}

// HeadNorm is the group-norm head's running-statistics normalisation
// (head.0), nil with batch norm.
func (m *Model) HeadNorm() *nn.RunningNorm { return m.headIn }

// RecalibrateBN re-estimates the running statistics of every batch-norm
// layer (precise BN, docs/definitions.md, section 4 "Contrastive learning as a
// biased oracle"; with group norm there is nothing to do: the head's
// RunningNorm statistics are part of the function being trained, and
// evaluations use only the backbone, so precise BN leaves them alone and an
// evaluation does not change the training): it runs batches training-mode
// forward passes without gradients over views views each, which next writes
// into its argument ((views, 3, InputSize, InputSize) floats), and sets each
// layer's running mean and variance to the equal-weight average of the batches'
// means and unbiased variances. Momentum 1/k on the k-th batch makes the
// running update exactly that average: after batch k the running value is (1 -
// 1/k) avg_(k-1) + (1/k) s_k = avg_k, whatever it held before. The layers'
// momentum is restored afterwards; num_batches_tracked counts the batches, as
// PyTorch's would. The training-mode activations are overwritten, so call it
// between iterations, never between a Forward and its Backward.
func (m *Model) RecalibrateBN(views, batches int, next func(x []float32)) error {
	if views < 2 || batches < 1 {
		return fmt.Errorf("precise BN: %d batches of %d views: need at least one batch of at least 2 views", batches, views)
	}
	b := m.backend
	bns := m.BatchNorms()
	if len(bns) == 0 {
		return nil // group norm: no batch-norm statistics to estimate
	}
	saved := make([]float32, len(bns))
	for i, bn := range bns {
		saved[i] = bn.Momentum
	}
	defer func() {
		for i, bn := range bns {
			bn.Momentum = saved[i]
		}
	}()
	host := make([]float32, views*m.InputLen())
	x := b.Alloc(len(host))
	defer b.Free(x)
	for k := 1; k <= batches; k++ {
		for _, bn := range bns {
			bn.Momentum = 1 / float32(k)
		}
		next(host)
		b.Upload(x, host)
		m.Forward(x, views, true, true)
	}
	if err := b.Sync(); err != nil {
		return fmt.Errorf("precise BN: %w", err)
	}
	return nil
}
