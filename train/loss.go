package train

import (
	"fmt"
	"math"
	"strings"

	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/mlmc"
)

// oldLossEstimators are the --estimator names that chose a loss before
// --loss did (config.json files of earlier runs, run queues): each was
// L-SGD with that loss.
var oldLossEstimators = []contrastive.LossKind{contrastive.DCL, contrastive.SogCLR}

// mapOldEstimatorNames reads an --estimator that names a loss (dcl,
// sogclr) as --estimator lsgd with that --loss, so that earlier runs
// resume and open as they trained. It runs where settings come in: a run's
// config.json (LoadRun), and Train and Resume for command lines and
// config files; nothing reads the loss from the estimator's name after it.
func (c *Settings) mapOldEstimatorNames() error {
	name := strings.ToLower(strings.TrimSpace(c.Estimator))
	for _, k := range oldLossEstimators {
		if name != k.String() {
			continue
		}
		given, err := contrastive.ParseLoss(c.Loss)
		if err == nil && given != contrastive.NTXent && given != k {
			return fmt.Errorf("--estimator %s (L-SGD with the %s loss) and --loss %s disagree: give --estimator lsgd --loss %s or --loss %s",
				c.Estimator, k, c.Loss, k, c.Loss)
		}
		c.Estimator, c.Loss = mlmc.Kind{Method: mlmc.LSGD}.String(), k.String()
	}
	return nil
}

// checkLoss refuses a loss that cannot serve the estimator's queries (a
// decoupled loss has neither H^l nor x_{t-1}) and SogCLR's settings on
// another loss.
func (c *Settings) checkLoss(loss contrastive.LossKind, est mlmc.Kind, isAuto bool) error {
	switch {
	case c.SogCLRGamma < 0 || c.SogCLRGamma > 1 || math.IsNaN(c.SogCLRGamma):
		return fmt.Errorf("--sogclr-gamma %g: use a value in (0, 1] (0: %g)", c.SogCLRGamma, contrastive.DefaultSogCLRGamma)
	case c.SogCLRGammaDecay != "" && c.SogCLRGammaDecay != "constant" && c.SogCLRGammaDecay != "cosine":
		return fmt.Errorf("--sogclr-gamma-decay %q: use constant or cosine", c.SogCLRGammaDecay)
	case (c.SogCLRGamma != 0 || c.SogCLRGammaDecay != "") && loss != contrastive.SogCLR:
		return fmt.Errorf("--sogclr-gamma and --sogclr-gamma-decay set for --loss %s: they are SogCLR's (--loss sogclr)", loss)
	}
	sup := loss.Supports()
	if isAuto && !sup.Levels {
		return fmt.Errorf("--estimator auto with --loss %s: the pilot measures multilevel queries H^l, which %s has not; use --estimator %s with --loss %s, or --loss ntxent with auto",
			loss, loss, strings.Join(servedEstimators(sup), ", "), loss)
	}
	if isAuto || serves(sup, est) {
		return nil
	}
	var lacks []string
	if needsLevels(est) && !sup.Levels {
		lacks = append(lacks, "multilevel queries H^l")
	}
	if est.VR && !sup.Previous {
		lacks = append(lacks, "queries at the previous parameters x_{t-1}")
	}
	return fmt.Errorf("--loss %s with --estimator %s: %s needs %s, which the %s loss has not; with --loss %s use --estimator %s, or keep --estimator %s with --loss ntxent",
		loss, c.Estimator, est, strings.Join(lacks, " and "), loss, loss, strings.Join(servedEstimators(sup), " or "), c.Estimator)
}

// needsLevels says whether estimator k queries H^l: every one but L-SGD,
// which queries the top level alone.
func needsLevels(k mlmc.Kind) bool { return k.Method != mlmc.LSGD }

// serves says whether a loss that supports sup answers every query of
// estimator k.
func serves(sup contrastive.Support, k mlmc.Kind) bool {
	return (sup.Levels || !needsLevels(k)) && (sup.Previous || !k.VR)
}

// servedEstimators are the estimators a loss that supports sup serves.
func servedEstimators(sup contrastive.Support) []string {
	var names []string
	for _, name := range mlmc.Names() {
		if k, err := mlmc.ParseKind(name); err == nil && serves(sup, k) {
			names = append(names, name)
		}
	}
	return names
}

// lossLine is the log's line on a loss other than NT-Xent ("" for it).
func lossLine(loss contrastive.LossKind, cfg *RunSettings, totalIters int) string {
	sup := loss.Supports()
	if sup.Levels {
		return ""
	}
	how := "the positive left out of each view's denominator"
	if sup.ImageState {
		how = fmt.Sprintf("a moving average per training image, gamma %g (%s)", cfg.Gamma.At(totalIters, totalIters), cfg.Gamma.Name())
	}
	return fmt.Sprintf("loss: %s (docs/definitions.md, section 10), one batch of %d images an iteration, %s", loss, 1<<cfg.MaxLevel, how)
}

// EstimatorAndLoss names the run's method for a table: the estimator, with
// the loss after it when that is not NT-Xent ("lsgd, dcl").
func (c Settings) EstimatorAndLoss() string {
	if loss, err := contrastive.ParseLoss(c.Loss); err == nil && loss == contrastive.NTXent {
		return c.Estimator
	}
	return c.Estimator + ", " + c.Loss
}
