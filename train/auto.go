package train

import (
	"fmt"

	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/mlmc/auto"
)

// EstimatorAuto is --estimator auto: a pilot measures the levels at the
// initial network and mlmc/auto chooses the estimator (L-SGD, V-MLMC or
// RT-MLMC) and its level law on --min-level..--max-level
// (docs/definitions.md, section 11 "Choosing the estimator from a pilot").
const EstimatorAuto = "auto"

// autoPilotShare is the pilot's share of the run's images, and
// autoMaxDraws the most queries per level it makes.
const (
	autoPilotShare = 0.05
	autoMaxDraws   = 32
)

// isAuto says the run's estimator is chosen by a pilot.
func (c *Settings) isAuto() bool {
	_, isAuto, _ := c.parseEstimator()
	return isAuto
}

// checkAuto refuses settings that --estimator auto decides itself.
func (c *Settings) checkAuto() error {
	if c.LevelLaw != "" && c.LevelLaw != "rates" {
		return fmt.Errorf("--level-law %s: --estimator auto chooses the level law from its pilot; drop --level-law", c.LevelLaw)
	}
	if c.MaxLevel-c.MinLevel < 2 {
		return fmt.Errorf("--estimator auto measures levels %d..%d, and the rates need three: use --max-level %d or more", c.MinLevel, c.MaxLevel, c.MinLevel+2)
	}
	return nil
}

// autoRunImages is the run's length in images as the pilot's share is
// taken of it: --max-samples, else the iterations times L-SGD's 2^L.
func (c *Settings) autoRunImages(trainImages int) int64 {
	if c.MaxSamples > 0 {
		return c.MaxSamples
	}
	iters := int64(c.Iterations)
	if c.Epochs > 0 {
		iters = int64(c.Epochs) * int64((trainImages+(1<<c.MaxLevel)-1)>>c.MaxLevel)
	}
	return iters << c.MaxLevel
}

// pilot measures the levels of the run's oracle at the initial network
// (contrastive.MeasureLevels, the path of `simclr levels`, on its own data
// stream) with as many draws per level as 5% of the run's images pay for,
// and chooses the plan at the run's levels (auto.ChooseAtLevel). The
// queries update the network's batch-norm running statistics, as training
// queries do.
func (t *trainer) pilot(cfg Settings, splits *data.Splits) (*auto.Plan, error) {
	budget := cfg.autoRunImages(splits.Train.Len())
	perDraw := int64(1) << cfg.MaxLevel // h^L of the telescoping check
	for l := cfg.MinLevel; l <= cfg.MaxLevel; l++ {
		perDraw += int64(1) << l
	}
	draws := min(int64(float64(budget)*autoPilotShare)/perDraw, autoMaxDraws)
	if draws < 3 {
		return nil, &auto.Error{
			Measurement: fmt.Sprintf("the pilot's %g%% of the run's %d images pays for %d draws of levels %d..%d (%d images each); a variance needs 3",
				100*autoPilotShare, budget, draws, cfg.MinLevel, cfg.MaxLevel, perDraw),
			Change: fmt.Sprintf("--estimator auto needs a run of at least %d images: train longer or lower --max-level", int64(3/autoPilotShare)*perDraw),
		}
	}
	run := contrastive.Settings{MinLevel: cfg.MinLevel, MaxLevel: cfg.MaxLevel, Temperature: cfg.Temperature,
		Halves: t.plan.Halves, Augment: t.plan.Augment, Seed: cfg.Seed, Workers: cfg.Workers, B: cfg.B, C: cfg.C}
	rep, err := contrastive.MeasureLevels(t.b, t.model, splits, run, contrastive.LevelsOptions{Draws: int(draws)})
	if err != nil {
		return nil, fmt.Errorf("--estimator auto: pilot: %w", err)
	}
	p, err := auto.ChooseAtLevel(rep, "the initial network", draws*perDraw, auto.Target{Budget: budget}, auto.Rules{})
	if err != nil {
		return nil, fmt.Errorf("--estimator auto: %w", err)
	}
	return p, nil
}
