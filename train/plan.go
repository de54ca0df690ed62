package train

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/auto"
)

// Facts is what a session's setup learns before the run is planned: the
// data, the levels this machine (and every rank) can serve, the world, the
// measured level law, and on resume the plan the run was made with.
type Facts struct {
	// Out is the run folder every rank writes to or reads: rank 0's
	// --out, whose default names the start time each rank read apart
	// ("": Settings.Out).
	Out string
	// TrainImages is n, the training images the run draws from.
	TrainImages int
	// ServableLevel is the largest level a query may use here: the
	// settings' cap (--max-servable-level, or min(floor(log2 n), L+3)),
	// lowered by the memory of every rank (setup's capByMemory and
	// agreeMaxServable).
	ServableLevel int
	// Ranks is the number of ranks the run trains on (1 for one process).
	Ranks int
	// Levels is the `simclr levels --json` report of --level-law
	// measured:FILE for a new run (nil otherwise; readLevelLaw).
	Levels *mlmc.LevelsReport
	// Previous is the plan config.json recorded, on resume (nil for a new
	// run): a resumed run keeps its measured level law.
	Previous *RunPlan
	// Auto is the pilot's plan of a new --estimator auto run (nil
	// otherwise; a resumed run keeps Previous.Auto).
	Auto *auto.Plan
	// Version and DeviceLog are recorded with the plan: the program and
	// the device of this session.
	Version, DeviceLog string
}

// RunPlan is a run resolved from its Settings and the Facts of a session by
// Resolve: the estimator, the levels it may use, the length and the
// learning-rate schedule, and the expected cost. setup, the loop, the
// ranks, the checkpoints and the log read it; nothing changes it. The
// fields with a JSON key are recorded in config.json (record); the others
// are derived again from the settings on resume.
type RunPlan struct {
	// Choices are the settings' options, parsed (Settings.Choices).
	Choices `json:"-"`
	// Out is the run folder (Facts.Out).
	Out string `json:"-"`
	// Estimator is --estimator, read once.
	Estimator mlmc.Kind `json:"-"`
	// MLMC is the estimator's configuration (with the level law of
	// --level-law and the run's estimator seed; each rank offsets the seed,
	// rankSeed).
	MLMC mlmc.Config `json:"-"`
	// MaxServable is the largest level the oracle serves (Facts'
	// ServableLevel); config.json records it under the key of
	// Settings.MaxServable.
	MaxServable int `json:"-"`
	// SplitBatch says whether the ranks split each draw's images (L-SGD on
	// several ranks) rather than each drawing their own (dist.go).
	SplitBatch bool `json:"-"`

	TrainImages int `json:"train_images,omitempty"`
	// ItersPerEpoch is ceil(n/2^L) (docs/definitions.md, section 5 "Epochs
	// and run length").
	ItersPerEpoch int `json:"iterations_per_epoch,omitempty"`
	TotalIters    int `json:"total_iterations,omitempty"`
	// WarmupIters is --warmup-epochs in iterations, at most a tenth of the
	// run.
	WarmupIters int `json:"warmup_iterations,omitempty"`
	// LR is the base learning rate after warm-up: --lr, else 0.06 x 2^L/512.
	LR    float64 `json:"resolved_lr,omitempty"`
	Ranks int     `json:"ranks,omitempty"`
	// LevelProbs (RT-MLMC) or LevelDraws (V-MLMC) is the law of --level-law
	// measured:FILE, recorded so that a resumed run keeps it.
	LevelProbs []float64 `json:"level_probs,omitempty"`
	LevelDraws []int     `json:"level_draws,omitempty"`
	// Auto is the plan of --estimator auto's pilot: the estimator, the
	// law and the reasons, recorded so that a resumed run keeps them; its
	// images are counted in the run's images drawn.
	Auto *auto.Plan `json:"auto,omitempty"`

	// EvalPeriod is the iterations between kNN evaluations (0: none):
	// --eval-every-iterations, else --eval-every epochs.
	EvalPeriod int `json:"-"`
	// ExpectedImages and ExpectedEvals are what one iteration of the whole
	// job is expected to draw and evaluate (expectedCost; VR estimators
	// averaged over a Q_E cycle).
	ExpectedImages float64 `json:"-"`
	ExpectedEvals  float64 `json:"-"`
	// Notes are lines for the log: what the plan changed of what was asked.
	Notes []string `json:"-"`

	// Run is what the loop, its recorders and the evaluations read of the
	// settings, copied once; config.json keeps these under the settings'
	// own keys.
	Run RunSettings `json:"-"`

	Version   string `json:"version"`
	DeviceLog string `json:"device_log,omitempty"`
}

// Resolve makes the plan of a run with settings s (checked by Validate)
// from the facts f of this session. It is a pure function: the same
// settings and facts give the same plan, and it reads nothing else.
func Resolve(s Settings, f Facts) (RunPlan, error) {
	choices, err := s.Choices()
	if err != nil {
		return RunPlan{}, err
	}
	k, chosen, err := s.resolveKind(f)
	if err != nil {
		return RunPlan{}, err
	}
	p := RunPlan{Choices: choices, Auto: chosen, Out: cmp.Or(f.Out, s.Out), Estimator: k, MaxServable: f.ServableLevel, TrainImages: f.TrainImages, Ranks: max(f.Ranks, 1),
		Version: f.Version, DeviceLog: f.DeviceLog}
	p.SplitBatch = splitsBatch(k, p.Ranks)
	if p.SplitBatch && (1<<s.MaxLevel)%p.Ranks != 0 {
		return RunPlan{}, fmt.Errorf("%s splits its 2^%d = %d images over the ranks, which %d ranks cannot do evenly: use a number of ranks that divides %d",
			k, s.MaxLevel, 1<<s.MaxLevel, p.Ranks, 1<<s.MaxLevel)
	}
	if f.TrainImages < 2 {
		return RunPlan{}, fmt.Errorf("the training set has %d images; SimCLR needs at least 2", f.TrainImages)
	}
	if f.ServableLevel < s.MaxLevel {
		return RunPlan{}, fmt.Errorf("--max-level %d is above the largest level this session can serve (%d)", s.MaxLevel, f.ServableLevel)
	}
	if f.Previous != nil && f.ServableLevel < s.MaxServable {
		p.Notes = append(p.Notes, fmt.Sprintf("this session serves levels up to %d, the run's earlier sessions up to %d: RU-MLMC and RR-MLMC redraw differently from here, so the run no longer continues exactly as one session would",
			f.ServableLevel, s.MaxServable))
	}
	if chosen != nil {
		p.LevelProbs, p.LevelDraws = chosen.LevelProbs, chosen.LevelDraws
	} else if p.LevelProbs, p.LevelDraws, err = levelLaw(s, f.Levels, f.Previous); err != nil {
		return RunPlan{}, err
	}
	p.MLMC = s.mlmcConfig(p.Halves, p.LevelProbs, p.LevelDraws)
	p.Run = s.runSettings()
	if p.ExpectedImages, p.ExpectedEvals, err = p.expectedCost(); err != nil {
		return RunPlan{}, err
	}

	// The length (docs/definitions.md, section 5 "Epochs and run length").
	p.ItersPerEpoch = (f.TrainImages + (1 << s.MaxLevel) - 1) >> s.MaxLevel
	switch {
	case s.Epochs > 0:
		p.TotalIters = s.Epochs * p.ItersPerEpoch
	case s.Iterations > 0:
		p.TotalIters = s.Iterations
	default:
		// A sample budget: as many iterations as the expected cost allows
		// after the pilot's images.
		p.TotalIters = int(math.Ceil(float64(s.MaxSamples-p.pilotImages()) / p.ExpectedImages))
	}
	p.WarmupIters = int(math.Round(s.WarmupEpochs * float64(p.ItersPerEpoch)))
	if p.WarmupIters > p.TotalIters/10 {
		p.Notes = append(p.Notes, fmt.Sprintf("warm-up of %g epochs (%d iterations) shortened to a tenth of the run (%d iterations)",
			s.WarmupEpochs, p.WarmupIters, p.TotalIters/10))
		p.WarmupIters = p.TotalIters / 10
	}
	p.LR = s.LR
	if p.LR == 0 {
		p.LR = defaultLR(s.MaxLevel)
	}
	p.EvalPeriod = s.EvalEveryIters
	if p.EvalPeriod == 0 {
		p.EvalPeriod = s.EvalEvery * p.ItersPerEpoch
	}
	return p, nil
}

// expectedCost is mlmc.ExpectedCost for the whole job, the one cost model
// of the start-up line and of --max-samples: with several ranks the MLMC
// estimators draw and evaluate on every rank independently, so images and
// evaluations are P times one rank's, while L-SGD splits its batch over the
// ranks and a split draw is one evaluation (as reduceStep counts it).
func (p *RunPlan) expectedCost() (images, evals float64, err error) {
	images, evals, err = mlmc.ExpectedCost(p.Estimator, p.MLMC, p.MaxServable)
	if err != nil {
		return 0, 0, fmt.Errorf("--estimator %s: %w", p.Estimator, err)
	}
	if p.SplitBatch {
		return images, evals, nil
	}
	ranks := float64(max(p.Ranks, 1))
	return images * ranks, evals * ranks, nil
}

// record is config.json: the settings, to repeat the run, and the plan, to
// explain it, as one flat object with the keys config.json has always had.
// max_servable_level holds the plan's level, the cap in force, so that a
// session resumed where more memory is free serves the same levels:
// RU-MLMC's and RR-MLMC's level law, and a --max-samples length, depend on
// it.
type record struct {
	Settings
	RunPlan
}

// newRecord is the config.json of a run with settings s and plan p.
func newRecord(s Settings, p RunPlan) record {
	s.Out, s.MaxServable = p.Out, p.MaxServable
	return record{Settings: s, RunPlan: p}
}

// resolveKind is the run's estimator: --estimator, or for auto the pilot's
// choice (f.Auto for a new run, the recorded one on resume).
func (s Settings) resolveKind(f Facts) (mlmc.Kind, *auto.Plan, error) {
	if !s.isAuto() {
		k, err := s.Kind()
		return k, nil, err
	}
	chosen := f.Auto
	if f.Previous != nil {
		chosen = f.Previous.Auto
	}
	if chosen == nil {
		return mlmc.Kind{}, nil, fmt.Errorf("--estimator auto: no pilot plan (a resumed run's config.json must record it under \"auto\")")
	}
	if chosen.MinLevel != s.MinLevel || chosen.MaxLevel != s.MaxLevel {
		return mlmc.Kind{}, nil, fmt.Errorf("--estimator auto: the pilot's plan is for levels %d..%d, the run uses --min-level %d --max-level %d",
			chosen.MinLevel, chosen.MaxLevel, s.MinLevel, s.MaxLevel)
	}
	return chosen.Kind, chosen, nil
}

// pilotImages is the images the pilot of an auto run drew (0 otherwise).
func (p *RunPlan) pilotImages() int64 {
	if p.Auto == nil {
		return 0
	}
	return p.Auto.Samples
}

// RunSettings are the settings the training loop, its recorders and the
// evaluations read (each as the Settings field of the same name
// documents it).
type RunSettings struct {
	Temperature float64
	MinLevel    int
	ValSplit    int
	// AugmentName is the name of --augment's recipe, for the log.
	AugmentName     string
	Seed            uint64
	Workers         int
	Width           float64
	ProjDim         int
	Dataset         string
	MaxLevel        int
	MaxSamples      int64
	KNNK            int
	LogEvery        int
	CheckpointEvery time.Duration
	PreciseBN       bool
	EvalTrainSubset int
	Probe           bool
	ProbeBaseline   bool
	// Gamma is SogCLR's schedule of gamma (--sogclr-gamma and
	// --sogclr-gamma-decay).
	Gamma contrastive.GammaSchedule
}

// runSettings is s's RunSettings.
func (s Settings) runSettings() RunSettings {
	return RunSettings{Temperature: s.Temperature, MinLevel: s.MinLevel, ValSplit: s.ValSplit,
		AugmentName: cmp.Or(s.Augment, "simclr"), Seed: s.Seed, Workers: s.Workers, Width: s.Width, ProjDim: s.ProjDim, Dataset: s.Dataset, MaxLevel: s.MaxLevel,
		MaxSamples: s.MaxSamples, KNNK: s.KNNK, LogEvery: s.LogEvery, CheckpointEvery: time.Duration(s.CheckpointEvery),
		PreciseBN: s.PreciseBN, EvalTrainSubset: s.EvalTrainSubset, Probe: s.Probe, ProbeBaseline: s.ProbeBaseline,
		Gamma: s.gammaSchedule()}
}
