// Package train is the SimCLR trainer: it wires a data set, the loader
// stream, the ResNet-18, an mlmc gradient estimator over the SimCLR oracle
// (docs/definitions.md, section 4 "Contrastive learning as a biased oracle")
// and an optimizer into a training loop that logs metrics, evaluates,
// checkpoints atomically, stops cleanly on a signal or a non-finite loss, and
// resumes exactly.
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/optim"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// Session is what one session of a run is given beyond its Settings: this
// process's place among the ranks, how it reports and when it stops, and
// for tests and embedding programs the data, backend or communicator to
// use instead of opening them. It is never saved: a resumed session may
// differ. The zero value is one process that loads the configured data set
// and backend and logs to stderr.
type Session struct {
	// Rank and WorldSize are this process's rank and the number of ranks
	// for --dist nccl's TCP rendezvous (Settings.DistAddr) when no launcher
	// started the ranks (0, 0: not given).
	Rank, WorldSize int
	// Version is the program's version, recorded in config.json.
	Version string
	// Log receives the run's log lines (default os.Stderr).
	Log io.Writer
	// Progress shows a progress bar on Log instead of periodic log lines
	// (for a terminal).
	Progress bool
	// Splits replaces loading Settings.Dataset (tests use synthetic data).
	Splits *data.Splits
	// Backend replaces opening Settings.Device.
	Backend tensor.Backend
	// Meminfo replaces /proc/meminfo, where a backend that does not report
	// its free memory (the CPU) finds the available RAM.
	Meminfo string
	// StopAfter stops the run with a checkpoint, as a signal would, once
	// this many iterations have completed in this session, and Train or
	// Resume then returns ErrIterationsLimit; 0 never does.
	StopAfter int
	// Comm replaces opening the communicator of Settings.Dist (the caller
	// keeps it and closes it).
	Comm collective.Comm
	// OnStep, when set, is called after every optimizer step with the
	// number of completed iterations, the trainable parameters and the
	// state (running statistics) (tests compare ranks with it); an error
	// it returns stops the run.
	OnStep func(iteration int, params, state tensor.Buffer) error
}

// ErrInterrupted is returned (wrapped) when a run stops early on a signal
// or Session.StopAfter, after saving a checkpoint it can resume from.
var ErrInterrupted = errors.New("training interrupted")

// ErrIterationsLimit is returned (wrapped) when a session stops because it
// reached Session.StopAfter, as asked, rather than on a signal. It wraps
// ErrInterrupted, so errors.Is(err, ErrInterrupted) holds for both.
var ErrIterationsLimit = fmt.Errorf("%w: iterations limit reached", ErrInterrupted)

// Summary is what a finished (or interrupted) run reports.
type Summary struct {
	Out          string
	Iterations   int
	SamplesDrawn int64
	Evaluations  int64 // forward/backward passes (runfolder.Metrics.Evaluations)
	Loss         float64
	// LossExcess is Loss less log(2N - 1) (Oracle.Losses): comparable
	// across batch sizes.
	LossExcess  float64
	WallSeconds float64
	Probe       *runfolder.Probe
	// Rank is this process's rank: rank 0 reports for the run.
	Rank int
}

// Train runs cfg from scratch into the folder cfg.Out, which must not hold
// a run already. Every setting is checked before any data is read, and the
// folder is created only once the run can start (setup), so a failed start
// leaves nothing behind.
func Train(ctx context.Context, cfg Settings, sess Session) (*Summary, error) {
	if err := cfg.mapOldEstimatorNames(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := sess.validate(); err != nil {
		return nil, err
	}
	levels, err := readLevelLaw(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkDataset(&cfg, sess); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, runfolder.StateFile)); err == nil {
		return nil, fmt.Errorf("run folder %s already holds a run: continue it with --resume %s, or choose another --out", cfg.Out, cfg.Out)
	}
	return run(ctx, cfg, opening{levels: levels}, sess)
}

// validate reports a rank outside the world, naming the flags.
func (s Session) validate() error {
	if s.WorldSize < 0 || s.Rank < 0 || (s.WorldSize > 0 && s.Rank >= s.WorldSize) {
		return fmt.Errorf("--rank %d of --world-size %d: give a rank from 0 to world size - 1", s.Rank, s.WorldSize)
	}
	return nil
}

// opening says how a session of a run starts.
type opening struct {
	resume bool
	// extendedFrom is the run's length in iterations before a resume that
	// made it longer (0: not extended).
	extendedFrom int
	// levels is the measured level law of a new run (Facts.Levels);
	// previous is the plan of a resumed one (Facts.Previous).
	levels   *mlmc.LevelsReport
	previous *RunPlan
}

// Resume continues the run in dir from its last checkpoint with the
// configuration it was started with; override (nil for none) may change
// session settings (device, workers, logging) before it starts, and its
// error stops the resume. An override that changes the length (Epochs,
// Iterations, MaxSamples; exactly one set) must make the run longer: that
// extends it, a finished run too. Resuming a finished run without that is
// an error, unless it still lacks its linear probe.
func Resume(ctx context.Context, dir string, override func(*Settings) error, sess Session) (*Summary, error) {
	cfg, prev, err := LoadRun(dir)
	if err != nil {
		return nil, err
	}
	meta, err := checkpoint.ReadMetadata(filepath.Join(dir, runfolder.StateFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("resume %s: no checkpoint (%s) in the run folder: it stopped before its first checkpoint; start it again without --resume", dir, runfolder.StateFile)
		}
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	old := cfg
	cfg.Out = dir
	if override != nil {
		if err := override(&cfg); err != nil {
			return nil, fmt.Errorf("resume %s: %w", dir, err)
		}
		if err := cfg.mapOldEstimatorNames(); err != nil {
			return nil, fmt.Errorf("resume %s: %w", dir, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := sess.validate(); err != nil {
		return nil, err
	}
	// The run keeps the measured level law its config.json recorded; one
	// without it (written before the law was recorded) reads the file.
	var levels *mlmc.LevelsReport
	if prev.LevelProbs == nil && prev.LevelDraws == nil {
		if levels, err = readLevelLaw(cfg); err != nil {
			return nil, err
		}
	}
	if _, _, err := levelLaw(cfg, levels, &prev); err != nil {
		return nil, err
	}
	if err := checkDataset(&cfg, sess); err != nil {
		return nil, err
	}
	s, err := checkResumeLength(old, prev, cfg, meta, dir)
	if err != nil {
		return nil, err
	}
	s.levels, s.previous = levels, &prev
	return run(ctx, cfg, s, sess)
}

// checkResumeLength compares the length of a resumed run (cfg) with the one
// it had (old, planned as prev) and its checkpoint's metadata: a new length
// must be longer, and a finished run needs one (or a missing linear probe)
// to have anything to do.
func checkResumeLength(old Settings, prev RunPlan, cfg Settings, meta map[string]string, dir string) (opening, error) {
	s := opening{resume: true}
	state := filepath.Join(dir, runfolder.StateFile)
	done, err := checkpoint.RequireMeta[int](state, meta, "iteration")
	if err != nil {
		return s, err
	}
	finished, known, err := checkpoint.ParseMeta[bool](state, meta, "finished")
	if err != nil {
		return s, err
	}
	if !known { // checkpoints older than the field
		finished = prev.TotalIters > 0 && done >= prev.TotalIters
	}
	if cfg.Epochs == old.Epochs && cfg.Iterations == old.Iterations && cfg.MaxSamples == old.MaxSamples {
		if !finished {
			return s, nil
		}
		if _, err := os.Stat(filepath.Join(dir, runfolder.ProbeFile)); cfg.Probe && os.IsNotExist(err) {
			return s, nil // the session runs the probe it lacks
		}
		return s, fmt.Errorf("%s has finished (%d iterations): there is nothing to resume; to train it longer give a larger "+
			"--epochs, --iterations or --max-samples with --resume (it ran %s), to evaluate it use simclr eval linear-probe --run %s",
			dir, done, lengthString(old), dir)
	}
	var longer bool
	switch {
	case cfg.Iterations > 0:
		longer = cfg.Iterations > prev.TotalIters
	case cfg.Epochs > 0:
		longer = cfg.Epochs*prev.ItersPerEpoch > prev.TotalIters
	default:
		if old.MaxSamples == 0 {
			return s, fmt.Errorf("--max-samples: %s was given its length as %s; extend it with --epochs or --iterations", dir, lengthString(old))
		}
		longer = cfg.MaxSamples > old.MaxSamples
	}
	if !longer {
		return s, fmt.Errorf("%s does not extend %s: it is already %s (%d iterations, %d done); give a larger value",
			lengthString(cfg), dir, lengthString(old), prev.TotalIters, done)
	}
	s.extendedFrom = prev.TotalIters
	return s, nil
}

// lengthString is a run's length as its flag.
func lengthString(c Settings) string {
	switch {
	case c.Epochs > 0:
		return fmt.Sprintf("--epochs %d", c.Epochs)
	case c.Iterations > 0:
		return fmt.Sprintf("--iterations %d", c.Iterations)
	}
	return fmt.Sprintf("--max-samples %d", c.MaxSamples)
}

// LoadRun reads a run folder's config.json: the run's settings and the
// plan it last ran with. The settings' MaxServable is the level the run
// served (record).
func LoadRun(dir string) (Settings, RunPlan, error) {
	var rec record
	path := filepath.Join(dir, runfolder.ConfigFile)
	if err := runfolder.ReadJSON(path, &rec); err != nil {
		if os.IsNotExist(err) {
			return rec.Settings, rec.RunPlan, fmt.Errorf("%s is not a run folder: it has no %s (give the folder passed to --out)", dir, runfolder.ConfigFile)
		}
		return rec.Settings, rec.RunPlan, err
	}
	rec.RunPlan.MaxServable = rec.Settings.MaxServable
	if err := rec.Settings.mapOldEstimatorNames(); err != nil {
		return rec.Settings, rec.RunPlan, fmt.Errorf("%s: %w", path, err)
	}
	return rec.Settings, rec.RunPlan, nil
}

// prepareFolder makes the run folder of a new run (rank 0 only: it alone
// writes the folder). setup calls it last, once everything the run needs
// has opened.
func prepareFolder(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create run folder: %w", err)
	}
	// A run that died before its first checkpoint cannot be resumed; its
	// logs would otherwise be mixed into this run's.
	for _, name := range []string{runfolder.MetricsFile, runfolder.EvalFile, runfolder.ProbeFile} {
		if err := os.Remove(filepath.Join(out, name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("run folder %s: %w", out, err)
		}
	}
	return nil
}

// trainer holds one session of a run.
type trainer struct {
	plan   RunPlan // Resolve's, made in setup
	sess   Session
	log    io.Writer
	b      tensor.Backend
	splits *data.Splits
	// evalSet is evalSplits' result, made once (a subset copies its pixels).
	evalSet *data.Splits
	model   *resnet18.Model
	opt     *optim.Optimizer
	stream  *loader.Stream
	oracle  *contrastive.Oracle
	// sharded wraps oracle when the ranks split each draw (plan.SplitBatch):
	// the estimator queries it instead.
	sharded *contrastive.Sharded
	est     *mlmc.Estimator[tensor.Buffer]
	grad    tensor.Buffer // the estimate v_t
	prev    tensor.Buffer // x_{t-1} for VR, else nil
	sched   optim.Schedule

	comm    collective.Comm // world of the run (collective.Single for one process)
	ownComm bool            // comm was opened here, so close it
	totals  mlmc.Totals     // costs summed over the ranks

	lastCheckpoint int // iteration of the last checkpoint written this session or resumed from, -1 before

	iter       int     // completed iterations
	wallOffset float64 // wall seconds of earlier sessions
	start      time.Time
	lastLoss   float64 // mean L_B of the last iteration
	lastExcess float64 // its mean L_B - log(2N - 1)
	finished   bool    // the loop has ended: the next checkpoint is the final one
}

func (t *trainer) logf(format string, args ...any) {
	fmt.Fprintf(t.log, format+"\n", args...)
}

func (t *trainer) wall() float64 { return t.wallOffset + time.Since(t.start).Seconds() }

func run(ctx context.Context, cfg Settings, s opening, sess Session) (sum *Summary, err error) {
	t := &trainer{sess: sess, log: sess.Log, start: time.Now(), comm: collective.Single{}}
	if t.log == nil {
		t.log = os.Stderr
	}
	rank := launchRank(sess)
	if rank != 0 {
		// Rank 0 speaks for the run; the others report only their errors.
		t.log = io.Discard
	}
	// (A new run's folder is made at the end of setup, by rank 0, so that
	// a start that fails leaves nothing behind.)
	defer t.close()
	if err := t.setup(cfg, s); err != nil {
		return nil, t.rankError(err)
	}
	if g, ok := t.comm.(*guardedComm); ok {
		g.done, g.onStall = ctx.Done(), t.stalled
	}
	sum, err = t.loop(ctx)
	return sum, t.rankError(err)
}

// rankError names the rank in err when there are several, and stops the
// other ranks when this one fails alone: they would otherwise wait for it
// in their next collective call forever.
func (t *trainer) rankError(err error) error {
	if err == nil || t.comm.Size() == 1 {
		return err
	}
	err = fmt.Errorf("rank %d of %d: %w", t.comm.Rank(), t.comm.Size(), err)
	// Interruptions and non-finite estimates are seen by every rank at the
	// same iteration (they are agreed on or all-reduced); a lost rank has
	// stopped already.
	if errors.Is(err, ErrInterrupted) || errors.Is(err, contrastive.ErrNonFinite) || errors.Is(err, errRankLost) || errors.Is(err, ErrRanksDiffer) {
		return err
	}
	fmt.Fprintf(os.Stderr, "%v\nstopping every rank\n", err)
	t.comm.Abort(1)
	return err
}
