package resnet18

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// InitHeadFromData is the data-dependent initialisation of the group-norm
// network's head (see Config.Norm): it runs x, views normalised images,
// through the backbone and sets head.0's running mean and variance to the
// mean and unbiased variance of their pooled features, so that the first
// training steps already see centred, unit-variance features (the running
// statistics then follow the training batches). With batch norm it does
// nothing (the head's batch norm standardises every batch). views must be
// at least 2.
func (m *Model) InitHeadFromData(x tensor.Buffer, views int) error {
	if m.headIn == nil {
		return nil
	}
	m.checkInput(x, views)
	if views < 2 {
		return fmt.Errorf("resnet18: the head's data-dependent initialisation needs at least 2 images, got %d", views)
	}
	b, f := m.backend, m.featDim
	pl := m.activationPlanFor(views, false)
	m.backbone(pl, x, false, false)
	feat := make([]float32, views*f)
	b.Download(feat, pl.feat)
	mean := make([]float32, f)
	variance := make([]float32, f)
	for j := 0; j < f; j++ {
		var sum, sq float64
		for i := 0; i < views; i++ {
			sum += float64(feat[i*f+j])
		}
		mu := sum / float64(views)
		for i := 0; i < views; i++ {
			d := float64(feat[i*f+j]) - mu
			sq += d * d
		}
		// The unbiased variance, as the running statistics hold.
		mean[j], variance[j] = float32(mu), float32(sq/float64(views-1))
	}
	b.Upload(m.headIn.RunningMean.Value, mean)
	b.Upload(m.headIn.RunningVar.Value, variance)
	return nil
}
