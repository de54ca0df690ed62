package train

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/eval"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
)

// Settings is what a user asks of a training run: every flag and
// config-file key that changes what the run computes or where it writes.
// Resolve completes it, with what setup learns (Facts), into the run's
// RunPlan; config.json records both, flat (record), so that the settings
// repeat the run and the plan explains it. Nothing changes Settings during
// a run.
type Settings struct {
	Dataset string `json:"dataset"`  // a name of datasets.Names
	DataDir string `json:"data_dir"` // where the data sets live
	// TrainSubset and TestSubset keep only this many images of each split,
	// class-balanced (0 keeps all): the quick preset's small CIFAR-10.
	TrainSubset int `json:"train_subset"`
	TestSubset  int `json:"test_subset"`

	Estimator string `json:"estimator"` // lsgd, vmlmc, rtmlmc, rumlmc, rrmlmc, vr-*, auto
	// Loss is the contrastive loss: ntxent, dcl or sogclr (empty, as in
	// config files from before the setting: ntxent). An estimator name of
	// those files that named a loss is read as L-SGD with that loss
	// (mapOldEstimatorNames).
	Loss     string  `json:"loss"`
	MinLevel int     `json:"min_level"`
	MaxLevel int     `json:"max_level"`
	B        float64 `json:"b"`
	C        float64 `json:"c"`
	VMLMCN   float64 `json:"vmlmc_n"` // 0: 2^((b+c)L/2), so that n_L = 1
	// LevelLaw is "" (or "rates": q_l and n_l from B and C) or
	// "measured:FILE", the optimal law of a `simclr levels --json` file,
	// resolved once into RunPlan.LevelProbs (rtmlmc) or RunPlan.LevelDraws
	// (vmlmc) and recorded with the run.
	LevelLaw string `json:"level_law,omitempty"`
	NL       int    `json:"lsgd_draws"`
	D1       int    `json:"d1"`
	D2       int    `json:"d2"`
	QE       int    `json:"qe"`
	// Halves is how H^l computes its half-batch losses: "shared" (one
	// pass) or "separate" (three passes, exact with batch norm;
	// docs/definitions.md, section 4 "Contrastive learning as a biased
	// oracle").
	Halves string `json:"halves"`
	// SogCLRGamma is SogCLR's step gamma in (0, 1] (0: 0.9), and
	// SogCLRGammaDecay "" (constant) or "cosine": from 1 at the first
	// iteration down to SogCLRGamma at the last (docs/definitions.md,
	// section 10 "Decoupled losses").
	SogCLRGamma      float64 `json:"sogclr_gamma,omitempty"`
	SogCLRGammaDecay string  `json:"sogclr_gamma_decay,omitempty"`
	// MaxServable is the largest level the oracle serves (RU/RR redraw
	// levels above it); 0 means min(floor(log2 n), MaxLevel+3), since a
	// level-l query holds 2^(l+1) views in memory. config.json records
	// the plan's level under this key (record), so that a resumed run
	// serves the same levels.
	MaxServable int `json:"max_servable_level"`

	// Length: exactly one of Epochs, Iterations, MaxSamples is set.
	Epochs     int   `json:"epochs"`
	Iterations int   `json:"iterations"`
	MaxSamples int64 `json:"max_samples"`

	Optimizer    string  `json:"optimizer"` // sgd or lars
	LR           float64 `json:"lr"`        // 0: 0.06 x 2^L/512
	Momentum     float64 `json:"momentum"`
	WeightDecay  float64 `json:"weight_decay"`
	WarmupEpochs float64 `json:"warmup_epochs"`
	Temperature  float64 `json:"temperature"`

	Width   float64 `json:"width"`
	ProjDim int     `json:"proj_dim"`
	Seed    uint64  `json:"seed"`
	// Norm is the network's normalisation, batch or group (resnet18.Config.Norm);
	// Augment the view recipe, simclr or paper (augment.Preset). Empty (a
	// config.json from before they existed) means batch and simclr.
	Norm    string `json:"norm"`
	Augment string `json:"augment"`

	Device    string `json:"device"`
	Precision string `json:"precision"`
	Workers   int    `json:"workers"`

	// Dist is the communication of data-parallel training: auto, none,
	// mpi or nccl (package collective). DistAddr, with Session.Rank and
	// Session.WorldSize, is NCCL's TCP rendezvous when no launcher started
	// the ranks.
	Dist     string `json:"dist"`
	DistAddr string `json:"dist_addr,omitempty"`

	Out       string `json:"out"`
	EvalEvery int    `json:"eval_every"` // epochs between kNN evaluations; 0: none
	// EvalEveryIters counts the kNN period in iterations instead, for arms
	// whose epochs differ in length (an L-SGD control at a smaller batch)
	// but must be evaluated at the same iterations; it replaces EvalEvery.
	EvalEveryIters  int    `json:"eval_every_iterations,omitempty"`
	KNNK            int    `json:"knn_k"`
	LogEvery        int    `json:"log_every"`        // iterations between metrics lines
	CheckpointEvery Period `json:"checkpoint_every"` // wall time between checkpoints; 0: only at the end and on interruption
	// PreciseBN re-estimates the batch-norm running statistics before every
	// evaluation and the final checkpoint (docs/definitions.md, section 4
	// "Contrastive learning as a biased oracle").
	PreciseBN bool `json:"precise_bn"`
	// ValSplit holds out this many class-balanced training images, never
	// trained on, which the kNN monitor and the probe score instead of the
	// test set (for tuning).
	ValSplit int `json:"val_split"`
	// EvalTrainSubset keeps only this many class-balanced training images
	// as the kNN monitor's memory bank and the probe's training features
	// (0: all). Training still draws from every training image; on a small
	// CPU this bounds what one evaluation costs on the full data set.
	EvalTrainSubset int  `json:"eval_train_subset,omitempty"`
	Probe           bool `json:"probe"`          // run the linear probe after training
	ProbeBaseline   bool `json:"probe_baseline"` // also probe the network at initialisation

	Preset string `json:"preset,omitempty"`
}

// Defaults is the reference recipe of docs/definitions.md, section 6 "Training
// recipe" with L = 9 (batch 512).
func Defaults() Settings {
	return Settings{
		Dataset:      "cifar10",
		Estimator:    "lsgd",
		Loss:         contrastive.NTXent.String(),
		MinLevel:     1,
		MaxLevel:     9,
		B:            1,
		C:            1,
		NL:           1,
		D1:           1,
		D2:           1,
		QE:           10,
		Halves:       "shared",
		PreciseBN:    true,
		Optimizer:    "sgd",
		Momentum:     0.9,
		WeightDecay:  5e-4,
		WarmupEpochs: 10,
		Temperature:  0.5,
		Width:        1,
		ProjDim:      128,
		Seed:         1,
		Norm:         resnet18.NormBatch.String(),
		Augment:      "simclr",
		Device:       "auto",
		Precision:    "tf32",
		Dist:         "auto",
		KNNK:         200,
		LogEvery:     1,
		// A crash loses at most this much work.
		CheckpointEvery: Period(10 * time.Minute),
		Probe:           true,
	}
}

// ImageSize is the side of the images the trainer feeds the network, the
// evaluators' (eval.ImageSize).
const ImageSize = eval.ImageSize

// Period is a wall-clock interval, written in config.json as a Go duration
// ("10m0s"). A number there is an iteration count from an older config
// file; it is read as the default period (checkpointing is a session
// setting and does not change what a run computes).
type Period time.Duration

func (p Period) String() string { return time.Duration(p).String() }

func (p Period) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

func (p *Period) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n float64
		if json.Unmarshal(b, &n) != nil {
			return fmt.Errorf("checkpoint_every: %s is neither a duration nor a number", b)
		}
		*p = Defaults().CheckpointEvery
		if n == 0 {
			*p = 0
		}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("checkpoint_every: %w", err)
	}
	*p = Period(d)
	return nil
}

// Quick is the quick preset: a narrow network (width 1/8, 64 features) on
// 5,000 class-balanced CIFAR-10 images, 200 L-SGD iterations of 128 images (5
// epochs), short enough that training plus both linear probes take a few
// minutes on two CPU cores (about 250 CPU-seconds in all), long enough that
// the probe clearly beats the same network at initialisation (studies/engine-speed/README.md
// has the measured accuracies, with the command and machine).
// The learning rate is 0.5 rather than the recipe's 0.06 x 128/512: so
// short a run needs a larger step.
func Quick() Settings {
	c := Defaults()
	c.Preset = "quick"
	c.TrainSubset = 5000
	c.TestSubset = 2000
	c.Width = 0.125
	c.MaxLevel = 7
	c.Iterations = 200
	c.LR = 0.5
	c.WarmupEpochs = 0.5 // 20 iterations
	c.Device = "cpu"
	c.ProbeBaseline = true
	return c
}

// maxLevelLimit is the largest level any setting may name: 2^16 images
// (131,072 views) per query is beyond any device's memory for ResNet-18.
const maxLevelLimit = 16

// Validate reports the first setting that cannot work, naming the flag. It
// reads no file, so a command can run it before loading any data. The
// data set's name is checked by Train and Resume (unless the caller gives
// the data, Session.Splits), with checkDataset.
func (c *Settings) Validate() error {
	kind, isAuto, err := c.parseEstimator()
	if err != nil {
		return err
	}
	if isAuto {
		if err := c.checkAuto(); err != nil {
			return err
		}
	}
	for _, check := range []func() error{c.checkLengthAndLevels, c.checkEstimator, c.checkOptimizer, c.checkSession} {
		if err := check(); err != nil {
			return err
		}
	}
	ch, err := c.checkChoices()
	if err != nil {
		return err
	}
	return c.checkLoss(ch.Loss, kind, isAuto)
}

// positive says whether v is a finite positive number.
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// checkLengthAndLevels checks the run's length and its levels.
func (c *Settings) checkLengthAndLevels() error {
	lengths := 0
	for _, set := range []bool{c.Epochs > 0, c.Iterations > 0, c.MaxSamples > 0} {
		if set {
			lengths++
		}
	}
	switch {
	case c.Epochs < 0:
		return fmt.Errorf("--epochs %d must not be negative", c.Epochs)
	case c.Iterations < 0:
		return fmt.Errorf("--iterations %d must not be negative", c.Iterations)
	case c.MaxSamples < 0:
		return fmt.Errorf("--max-samples %d must not be negative", c.MaxSamples)
	case lengths != 1:
		return fmt.Errorf("give exactly one of --epochs, --iterations and --max-samples (got %d)", lengths)
	case c.MinLevel < 1:
		return fmt.Errorf("--min-level %d: levels start at 1 (a single image has SimCLR loss 0)", c.MinLevel)
	case c.MaxLevel < c.MinLevel:
		return fmt.Errorf("--max-level %d is below --min-level %d", c.MaxLevel, c.MinLevel)
	case c.MaxLevel > maxLevelLimit:
		return fmt.Errorf("--max-level %d: 2^%d images per query do not fit in memory; use at most %d", c.MaxLevel, c.MaxLevel, maxLevelLimit)
	case c.MaxServable < 0:
		return fmt.Errorf("--max-servable-level %d must not be negative (0 picks it)", c.MaxServable)
	case c.MaxServable != 0 && c.MaxServable < c.MaxLevel:
		return fmt.Errorf("--max-servable-level %d is below --max-level %d", c.MaxServable, c.MaxLevel)
	case c.MaxServable > maxLevelLimit+3:
		return fmt.Errorf("--max-servable-level %d: use at most %d", c.MaxServable, maxLevelLimit+3)
	}
	return nil
}

// checkEstimator checks the estimator's rates and draws.
func (c *Settings) checkEstimator() error {
	switch {
	case !positive(c.B):
		return fmt.Errorf("--b %g: the variance rate must be a positive number", c.B)
	case !positive(c.C):
		return fmt.Errorf("--c %g: the cost rate must be a positive number", c.C)
	case c.VMLMCN < 0 || math.IsNaN(c.VMLMCN) || math.IsInf(c.VMLMCN, 0):
		return fmt.Errorf("--vmlmc-n %g must be a non-negative number (0 picks it)", c.VMLMCN)
	case c.NL < 0:
		return fmt.Errorf("--lsgd-draws %d must not be negative (0 means 1)", c.NL)
	case c.D1 < 1:
		return fmt.Errorf("--d1 %d must be at least 1", c.D1)
	case c.D2 < 1:
		return fmt.Errorf("--d2 %d must be at least 1", c.D2)
	case c.QE < 1:
		return fmt.Errorf("--qe %d must be at least 1", c.QE)
	}
	return nil
}

// checkOptimizer checks the optimizer, its schedule and the temperature.
func (c *Settings) checkOptimizer() error {
	switch {
	case c.LR < 0 || math.IsNaN(c.LR) || math.IsInf(c.LR, 0):
		return fmt.Errorf("--lr %g must be a non-negative number", c.LR)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return fmt.Errorf("--momentum %g must be in [0, 1)", c.Momentum)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0):
		return fmt.Errorf("--weight-decay %g must be a non-negative number", c.WeightDecay)
	case !(c.WarmupEpochs >= 0) || math.IsInf(c.WarmupEpochs, 0):
		return fmt.Errorf("--warmup-epochs %g must be a non-negative number", c.WarmupEpochs)
	case !positive(c.Temperature):
		return fmt.Errorf("--temperature %g must be a positive number", c.Temperature)
	case c.ProjDim < 0:
		return fmt.Errorf("--proj-dim %d must not be negative (0 means 128)", c.ProjDim)
	}
	return nil
}

// checkSession checks the settings of evaluation, logging, checkpoints,
// the data's subsets and the run folder.
func (c *Settings) checkSession() error {
	switch {
	case c.Workers < 0:
		return fmt.Errorf("--workers %d must not be negative (0: one per core)", c.Workers)
	case c.EvalEvery < 0:
		return fmt.Errorf("--eval-every %d must not be negative", c.EvalEvery)
	case c.EvalEveryIters < 0:
		return fmt.Errorf("--eval-every-iterations %d must not be negative", c.EvalEveryIters)
	case c.EvalEveryIters > 0 && c.EvalEvery > 0:
		return fmt.Errorf("--eval-every %d and --eval-every-iterations %d: give one period, in epochs or in iterations", c.EvalEvery, c.EvalEveryIters)
	case c.LogEvery < 0:
		return fmt.Errorf("--log-every %d must not be negative", c.LogEvery)
	case c.CheckpointEvery < 0:
		return fmt.Errorf("--checkpoint-every %s must not be negative (0: only at the end and on interruption)", c.CheckpointEvery)
	case c.ValSplit < 0:
		return fmt.Errorf("--val-split %d must not be negative (0: score the test set)", c.ValSplit)
	case c.EvalTrainSubset < 0:
		return fmt.Errorf("--eval-train-subset %d must not be negative (0: every training image)", c.EvalTrainSubset)
	case c.KNNK < 0:
		return fmt.Errorf("--knn-k %d must not be negative (0 picks 200)", c.KNNK)
	case c.TrainSubset < 0:
		return fmt.Errorf("--train-subset %d must not be negative", c.TrainSubset)
	case c.TestSubset < 0:
		return fmt.Errorf("--test-subset %d must not be negative", c.TestSubset)
	case c.Out == "":
		return fmt.Errorf("--out: give the run folder, e.g. --out runs/NAME")
	}
	return nil
}

// checkChoices checks the settings that name a file or one of a few
// choices, and returns the choices parsed.
func (c *Settings) checkChoices() (Choices, error) {
	if _, err := c.measuredLawPath(); err != nil {
		return Choices{}, err
	}
	if err := (resnet18.Config{Width: c.Width, ProjDim: c.ProjDim}).Validate(); err != nil {
		return Choices{}, fmt.Errorf("--width: %w", err)
	}
	return c.Choices()
}

// parseEstimator reads --estimator, the one place its name is read: an
// estimator of package mlmc, or auto (its pilot chooses the estimator).
func (c *Settings) parseEstimator() (k mlmc.Kind, isAuto bool, err error) {
	if strings.EqualFold(strings.TrimSpace(c.Estimator), EstimatorAuto) {
		return k, true, nil
	}
	if k, err = mlmc.ParseKind(c.Estimator); err != nil {
		return k, false, fmt.Errorf("--estimator: %w", err)
	}
	return k, false, nil
}

// Kind is the estimator --estimator names (not auto).
func (c *Settings) Kind() (mlmc.Kind, error) {
	k, _, err := c.parseEstimator()
	return k, err
}

// gammaSchedule reads --sogclr-gamma (0: contrastive.DefaultSogCLRGamma)
// and --sogclr-gamma-decay (checked by Validate).
func (c *Settings) gammaSchedule() contrastive.GammaSchedule {
	return contrastive.GammaSchedule{Gamma: cmp.Or(c.SogCLRGamma, contrastive.DefaultSogCLRGamma), Cosine: c.SogCLRGammaDecay == "cosine"}
}

// checkDataset checks the --dataset name (not the files) when the trainer
// is to load it.
func checkDataset(c *Settings, sess Session) error {
	if sess.Splits != nil {
		return nil
	}
	if err := datasets.CheckName(c.Dataset); err != nil {
		return fmt.Errorf("--dataset: %w", err)
	}
	return nil
}

// defaultLR is the 0.06 x batch/512 of docs/definitions.md, section 6
// "Training recipe", with batch 2^L images.
func defaultLR(maxLevel int) float64 { return 0.06 * math.Exp2(float64(maxLevel)) / 512 }

// correctionPasses is the network passes of one H^l above l_min: three
// with separate halves, else one.
func correctionPasses(h contrastive.Halves) int {
	if h == contrastive.HalvesSeparate {
		return 3
	}
	return 1
}

// mlmcConfig is the estimator configuration of c with halves h, with the
// level law of --level-law measured:FILE (probs or draws; nil for the
// rates' law).
func (c *Settings) mlmcConfig(h contrastive.Halves, probs []float64, draws []int) mlmc.Config {
	return mlmc.Config{MinLevel: c.MinLevel, MaxLevel: c.MaxLevel, B: c.B, C: c.C, N: c.VMLMCN,
		LevelProbs: probs, LevelDraws: draws, NL: c.NL, D1: c.D1, D2: c.D2, QE: c.QE, Seed: c.Seed ^ 0x6d6c6d63, CorrectionPasses: correctionPasses(h)}
}
