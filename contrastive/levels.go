package contrastive

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// Settings are the run's settings the oracle and the per-level
// diagnostics use (a run's config.json holds them).
type Settings struct {
	// MinLevel and MaxLevel are l_min and L, the levels measured.
	MinLevel, MaxLevel int
	// Temperature is the NT-Xent temperature tau.
	Temperature float64
	// Halves is the construction of H^l: HalvesShared or HalvesSeparate.
	Halves Halves
	// Augment is the view recipe (augment.SimCLR, augment.Preset), before
	// it is fitted to the images (AtImageSize); its zero value only
	// normalises.
	Augment augment.Config
	// Seed seeds the data stream (apart from training's) and the random
	// directions.
	Seed uint64
	// Workers is the number of augmentation goroutines (0: one per core).
	Workers int
	// B, C, D1, D2 and QE are the estimators' settings the predictions use
	// (mlmc.Config).
	B, C       float64
	D1, D2, QE int
}

// SettingError is a field of Settings that MeasureLevels cannot use:
// Setting names the field ("MinLevel" or "MaxLevel"),
// so that a command can word the error with its own flag.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// LevelsOptions are the settings of MeasureLevels beyond the run's Settings.
type LevelsOptions struct {
	// Draws is K, the queries per level (and of h^L).
	Draws int
	// Progress, when set, is called after every query.
	Progress func(level int, diff bool, draw int)
	// RunDir, when set, is the run folder the network comes from: if its
	// state file holds x_(t-1) (a VR run), every draw is also evaluated
	// there, and the vr- estimators are predicted at that step.
	RunDir string
}

// ViewTransform is the augmentation of training views of set by the named
// recipe ("" is simclr) at the images' own size.
func ViewTransform(recipe string, set *data.Set) (augment.Config, error) {
	c := augment.SimCLR()
	if recipe != "" {
		var err error
		if c, err = augment.Preset(recipe); err != nil {
			return c, err
		}
	}
	return AtImageSize(c, set), nil
}

// AtImageSize is the view recipe c for the images of set: views of a set
// of images that are not square are cut square, at their height.
func AtImageSize(c augment.Config, set *data.Set) augment.Config {
	if set.H != set.W {
		c.Size = set.H
	}
	return c
}

// ServableLevel is the largest level whose 2^l images a set of n images
// holds.
func ServableLevel(n int) int { return int(math.Floor(math.Log2(float64(max(n, 1))))) }

// MeasureLevels runs the per-level diagnostics of docs/definitions.md,
// section 4 "Contrastive learning as a biased oracle", on network m at its
// current parameters: queries of the SimCLR oracle at levels
// cfg.MinLevel..cfg.MaxLevel over splits' training images, with the run's
// augmentation, temperature and halves, from a stream seeded apart from
// training's. The queries update m's batch-norm running statistics, as
// training queries do; the parameters are not changed.
func MeasureLevels(b tensor.Backend, m *resnet18.Model, splits *data.Splits, cfg Settings, opts LevelsOptions) (*mlmc.LevelsReport, error) {
	n := splits.Train.Len()
	if servable := ServableLevel(n); cfg.MaxLevel > servable {
		return nil, &SettingError{"MaxLevel", fmt.Errorf("maximum level %d needs 2^%d = %d images per query but %s has %d: use level %d or less",
			cfg.MaxLevel, cfg.MaxLevel, 1<<cfg.MaxLevel, splits.Train.Name, n, servable)}
	}
	if cfg.MinLevel < 1 || cfg.MinLevel > cfg.MaxLevel {
		return nil, &SettingError{"MinLevel", fmt.Errorf("minimum level %d: levels start at 1 and must not exceed the maximum level %d", cfg.MinLevel, cfg.MaxLevel)}
	}
	aug := AtImageSize(cfg.Augment, splits.Train)
	stream, err := loader.Open(splits.Train, splits.Mean, splits.Std, aug, cfg.Seed^levelsStreamSeed, cfg.Workers)
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	prev, err := loadPrevParams(b, opts.RunDir, m.Params().Len())
	if err != nil {
		return nil, err
	}
	if prev != nil {
		defer b.Free(prev)
	}
	o := NewOracle(b, m, stream, cfg.Temperature, cfg.MaxLevel, prev)
	defer o.Free()
	o.SetHalves(cfg.Halves)
	ops := NewBufferOps(b, m.Params().Len())
	rep, err := mlmc.MeasureLevels[tensor.Buffer](o, ops, mlmc.LevelsConfig{
		MinLevel: cfg.MinLevel, MaxLevel: cfg.MaxLevel, Draws: opts.Draws, B: cfg.B, C: cfg.C,
		Seed: cfg.Seed, Progress: opts.Progress,
		Previous: prev != nil, D1: cfg.D1, D2: cfg.D2, QE: cfg.QE,
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// levelsStreamSeed sets the diagnostics' data stream apart from the
// training stream of the same seed.
const levelsStreamSeed = 0x6c6576656c73

// loadPrevParams reads x_(t-1) from the state file of the run in dir onto
// the backend, or returns nil when there is none (no run folder, or not a
// VR run).
func loadPrevParams(b tensor.Backend, dir string, n int) (tensor.Buffer, error) {
	if dir == "" {
		return nil, nil
	}
	path := filepath.Join(dir, runfolder.StateFile)
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	x, ok := f.Get("prev_params")
	if !ok {
		return nil, nil
	}
	if len(x.Data) != n {
		return nil, fmt.Errorf("%s: prev_params has %d values, the network %d: the state file is not of this run's network", path, len(x.Data), n)
	}
	buf := b.Alloc(n)
	b.Upload(buf, x.Data)
	return buf, nil
}
