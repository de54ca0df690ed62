package train

import (
	"fmt"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/model/resnet18"
)

// preciseBNViews is the least number of augmented views precise BN
// averages over (docs/definitions.md, section 4 "Contrastive learning as a
// biased oracle").
const preciseBNViews = 2048

// preciseBNSeed sets precise BN's data streams apart from the training
// stream of the same seed.
const preciseBNSeed = 0x70726563697365

// recalibrateBN re-estimates m's batch-norm running statistics (precise BN,
// docs/definitions.md, section 4 "Contrastive learning as a biased oracle"):
// training-mode passes without gradients over at least 2,048 augmented training
// views in batches of 2^L images (2^(L+1) views, a level-L query's batch), each
// batch's statistics weighted equally. The views come from a stream of their
// own, seeded by the run's seed and the iteration: the training stream and its
// position are untouched, and a resumed run recalibrates exactly as an
// uninterrupted one.
// aug is the run's view recipe (Choices.Augment).
func recalibrateBN(m *resnet18.Model, splits *data.Splits, p *RunPlan, aug augment.Config, iter int) error {
	cfg := p.Run
	views, batches := 2<<cfg.MaxLevel, preciseBNBatches(cfg.MaxLevel)
	seed := cfg.Seed ^ preciseBNSeed ^ (uint64(iter) * 0x9e3779b97f4a7c15)
	aug = contrastive.AtImageSize(aug, splits.Train)
	stream, err := loader.Open(splits.Train, splits.Mean, splits.Std, aug, seed, cfg.Workers)
	if err != nil {
		return fmt.Errorf("precise BN: %w", err)
	}
	defer stream.Close()
	if err := m.RecalibrateBN(views, batches, func(x []float32) { stream.Next(views/2, x) }); err != nil {
		return fmt.Errorf("precise BN at iteration %d: %w", iter, err)
	}
	return nil
}

// preciseBNBatches is the number of batches of 2^(L+1) views that cover
// preciseBNViews.
func preciseBNBatches(maxLevel int) int {
	views := 2 << maxLevel
	return (preciseBNViews + views - 1) / views
}
