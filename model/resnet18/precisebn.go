package resnet18

import (
	"fmt"

	"github.com/simclr-go/simclr/nn"
)

// BatchNorms lists every batch-norm layer of the network in forward order;
// a group-norm network has none (its normalisation keeps no running
// statistics, so precise BN has nothing to re-estimate).
func (m *Model) BatchNorms() []*nn.BatchNorm {
	var bns []*nn.BatchNorm
	add := func(n nn.Norm) {
		if bn, ok := n.(*nn.BatchNorm); ok {
			bns = append(bns, bn)
		}
	}
	add(m.bn1)
	for _, bl := range m.blocks {
		add(bl.bn1)
		add(bl.bn2)
		if bl.downBN != nil {
			add(bl.downBN)
		}
	}
	add(m.headBN)
	return bns
}

// RecalibrateBN re-estimates the running statistics of every batch-norm
// layer (precise BN, SPEC section 2): it runs batches training-mode forward
// passes without gradients over views views each, which next writes into
// its argument ((views, 3, InputSize, InputSize) floats), and sets each
// layer's running mean and variance to the equal-weight average of the
// batches' means and unbiased variances. Momentum 1/k on the k-th batch
// makes the running update exactly that average: after batch k the running
// value is (1 - 1/k) avg_(k-1) + (1/k) s_k = avg_k, whatever it held before.
// The layers' momentum is restored afterwards; num_batches_tracked counts
// the batches, as PyTorch's would. The training-mode activations are
// overwritten, so call it between iterations, never between a Forward and
// its Backward.
func (m *Model) RecalibrateBN(views, batches int, next func(x []float32)) error {
	if views < 2 || batches < 1 {
		return fmt.Errorf("precise BN: %d batches of %d views: need at least one batch of at least 2 views", batches, views)
	}
	b := m.backend
	bns := m.BatchNorms()
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
