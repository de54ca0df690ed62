// Package train is the SimCLR trainer: it wires a data set, the loader
// stream, the ResNet-18, an mlmc gradient estimator over the SimCLR oracle
// (SPEC section 2) and an optimizer into a training loop that logs
// metrics, evaluates, checkpoints atomically, stops cleanly on a signal or a
// non-finite loss, and resumes exactly.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/optim"
	"github.com/simclr-go/simclr/tensor"
	"github.com/simclr-go/simclr/train/runfolder"
)

// Hooks adapt a run for the command line and for tests. The zero value
// loads the configured data set and backend and logs to stderr.
type Hooks struct {
	// Log receives the run's log lines (default os.Stderr).
	Log io.Writer
	// Progress shows a progress bar on Log instead of periodic log lines
	// (for a terminal).
	Progress bool
	// Splits replaces loading Config.Dataset (tests use synthetic data).
	Splits *data.Splits
	// Backend replaces opening Config.Device.
	Backend tensor.Backend
	// StopAfter interrupts the run, as a signal would (checkpoint, then
	// ErrInterrupted), once this many iterations have completed in this
	// session; 0 never does.
	StopAfter int
}

// ErrInterrupted is returned (wrapped) when a run stops early on a signal
// or Hooks.StopAfter, after saving a checkpoint it can resume from.
var ErrInterrupted = errors.New("training interrupted")

// Summary is what a finished (or interrupted) run reports.
type Summary struct {
	Out          string
	Iterations   int
	SamplesDrawn int64
	Evaluations  int64
	Loss         float64
	WallSeconds  float64
	Probe        *runfolder.Probe
}

// Train runs cfg from scratch into the folder cfg.Out, which must not hold
// a run already.
func Train(ctx context.Context, cfg Config, hooks Hooks) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, runfolder.StateFile)); err == nil {
		return nil, fmt.Errorf("run folder %s already holds a run: continue it with --resume %s, or choose another --out", cfg.Out, cfg.Out)
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("create run folder: %w", err)
	}
	// A run that died before its first checkpoint cannot be resumed; its
	// logs would otherwise be mixed into this run's.
	for _, name := range []string{runfolder.MetricsFile, runfolder.EvalFile, runfolder.ProbeFile} {
		if err := os.Remove(filepath.Join(cfg.Out, name)); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("run folder %s: %w", cfg.Out, err)
		}
	}
	return run(ctx, cfg, false, hooks)
}

// Resume continues the run in dir from its last checkpoint with the
// configuration it was started with; override (nil for none) may change
// session settings (device, workers, logging) before it starts, and its
// error stops the resume.
func Resume(ctx context.Context, dir string, override func(*Config) error, hooks Hooks) (*Summary, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, runfolder.StateFile)); err != nil {
		return nil, fmt.Errorf("resume %s: no checkpoint (%s) in the run folder: it stopped before its first checkpoint; start it again without --resume", dir, runfolder.StateFile)
	}
	cfg.Out = dir
	if override != nil {
		if err := override(&cfg); err != nil {
			return nil, fmt.Errorf("resume %s: %w", dir, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return run(ctx, cfg, true, hooks)
}

// LoadConfig reads a run folder's config.json.
func LoadConfig(dir string) (Config, error) {
	var cfg Config
	path := filepath.Join(dir, runfolder.ConfigFile)
	if err := runfolder.ReadJSON(path, &cfg); err != nil {
		if os.IsNotExist(err) {
			return cfg, fmt.Errorf("%s is not a run folder: it has no %s (give the folder passed to --out)", dir, runfolder.ConfigFile)
		}
		return cfg, err
	}
	return cfg, nil
}

// trainer holds one session of a run.
type trainer struct {
	cfg    Config
	hooks  Hooks
	log    io.Writer
	b      tensor.Backend
	splits *data.Splits
	model  *resnet18.Model
	opt    *optim.Optimizer
	stream *loader.Stream
	oracle *Oracle
	est    *mlmc.Estimator[tensor.Buffer]
	grad   tensor.Buffer // the estimate v_t
	prev   tensor.Buffer // x_{t-1} for VR, else nil
	sched  optim.Schedule

	iter        int     // completed iterations
	wallOffset  float64 // wall seconds of earlier sessions
	start       time.Time
	lastLoss    float64
	lastLogTime time.Time
}

func (t *trainer) logf(format string, args ...any) {
	fmt.Fprintf(t.log, format+"\n", args...)
}

func (t *trainer) wall() float64 { return t.wallOffset + time.Since(t.start).Seconds() }

func run(ctx context.Context, cfg Config, resume bool, hooks Hooks) (sum *Summary, err error) {
	t := &trainer{cfg: cfg, hooks: hooks, log: hooks.Log, start: time.Now()}
	if t.log == nil {
		t.log = os.Stderr
	}
	if err := t.setup(resume); err != nil {
		t.close()
		return nil, err
	}
	defer t.close()
	return t.loop(ctx)
}
