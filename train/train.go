// Package train is the SimCLR trainer: it wires a data set, the loader
// stream, the ResNet-18, an mlmc gradient estimator over the SimCLR oracle
// (SPEC section 2) and an optimizer into a training loop that logs
// metrics, evaluates, checkpoints atomically, stops cleanly on a signal or a
// non-finite loss, and resumes exactly.
package train

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/datasets"
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

// stateFormat versions state.safetensors.
const stateFormat = "simclr-train-state-1"

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
// configuration it was started with; override may change session settings
// (device, workers, logging) before it starts.
func Resume(ctx context.Context, dir string, override func(*Config), hooks Hooks) (*Summary, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, runfolder.StateFile)); err != nil {
		return nil, fmt.Errorf("resume %s: no checkpoint (%s) in the run folder: it stopped before its first checkpoint; start it again without --resume", dir, runfolder.StateFile)
	}
	cfg.Out = dir
	if override != nil {
		override(&cfg)
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

// LoadSplits opens the configured data set (or uses given) and keeps the
// configured subsets.
func LoadSplits(cfg Config, given *data.Splits) (*data.Splits, error) {
	splits := given
	if splits == nil {
		var err error
		splits, err = datasets.Open(cfg.Dataset, cfg.DataDir, 0)
		if err != nil {
			return nil, err
		}
	}
	out := *splits
	out.Train = subset(splits.Train, cfg.TrainSubset)
	out.Test = subset(splits.Test, cfg.TestSubset)
	return &out, nil
}

// ModelConfig is the network cfg builds for the images of splits, checked, so
// that an image folder of tiny images or a bad width is an error rather than
// resnet18.New's panic.
func ModelConfig(cfg Config, splits *data.Splits) (resnet18.Config, error) {
	net := resnet18.Config{Width: cfg.Width, ProjDim: cfg.ProjDim, InputSize: splits.Train.H}
	if err := net.Validate(); err != nil {
		return net, fmt.Errorf("network for %s (%dx%d images, width %g, projection dimension %d): %w",
			splits.Train.Name, splits.Train.H, splits.Train.W, cfg.Width, cfg.ProjDim, err)
	}
	return net, nil
}

// subset keeps n images of s (all when n is 0 or too large), taken
// round-robin over the classes in data-set order and kept in that order, so
// that a subset of a class-sorted image folder is as balanced as one of the
// shuffled CIFAR binary batches (the first n of a folder would be one or two
// classes).
func subset(s *data.Set, n int) *data.Set {
	if s == nil || n <= 0 || n >= s.Len() {
		return s
	}
	byClass := make([][]int, len(s.Classes))
	for i, l := range s.Labels {
		byClass[l] = append(byClass[l], i)
	}
	keep := make([]int, 0, n)
	for round := 0; len(keep) < n; round++ {
		for _, idx := range byClass {
			if round < len(idx) && len(keep) < n {
				keep = append(keep, idx[round])
			}
		}
	}
	sort.Ints(keep)
	img := 3 * s.H * s.W
	out := &data.Set{Name: fmt.Sprintf("%s (%d, class-balanced)", s.Name, n), Classes: s.Classes, H: s.H, W: s.W,
		Pix: make([]uint8, 0, n*img), Labels: make([]int32, 0, n)}
	for _, i := range keep {
		out.Pix = append(out.Pix, s.Image(i)...)
		out.Labels = append(out.Labels, s.Labels[i])
	}
	return out
}

func (t *trainer) setup(resume bool) error {
	cfg := &t.cfg
	splits, err := LoadSplits(*cfg, t.hooks.Splits)
	if err != nil {
		return err
	}
	t.splits = splits
	n := splits.Train.Len()
	if n < 2 {
		return fmt.Errorf("training set %s has %d images; SimCLR needs at least 2", splits.Train.Name, n)
	}
	netCfg, err := ModelConfig(*cfg, splits)
	if err != nil {
		return err
	}
	servable := int(math.Floor(math.Log2(float64(n))))
	if cfg.MaxLevel > servable {
		return fmt.Errorf("--max-level %d needs 2^%d = %d images per query but %s has %d: use --max-level %d or less",
			cfg.MaxLevel, cfg.MaxLevel, 1<<cfg.MaxLevel, splits.Train.Name, n, servable)
	}
	// RU/RR draw levels from an unbounded law; by default serve up to three
	// levels above L (memory grows as 2^l), never more than the data set
	// holds.
	maxServable := min(servable, cfg.MaxLevel+3)
	if cfg.MaxServable > 0 {
		if cfg.MaxServable > servable {
			return fmt.Errorf("--max-servable-level %d needs 2^%d images per query but %s has %d: use %d or less",
				cfg.MaxServable, cfg.MaxServable, splits.Train.Name, n, servable)
		}
		maxServable = cfg.MaxServable
	}

	if t.hooks.Backend != nil {
		t.b = t.hooks.Backend
		cfg.DeviceLog = "device given by caller: " + t.b.Describe()
	} else {
		b, line, err := backend.Open(cfg.Device, cfg.Precision)
		if err != nil {
			return err
		}
		t.b = b
		cfg.DeviceLog = line
	}
	t.logf("%s", cfg.DeviceLog)

	t.model = resnet18.New(t.b, netCfg, cfg.Seed)
	params := t.model.Params()
	t.opt, err = optim.New(t.b, params, optim.Config{Kind: cfg.Optimizer, Momentum: float32(cfg.Momentum), WeightDecay: float32(cfg.WeightDecay)})
	if err != nil {
		return err
	}
	augCfg := augment.SimCLR()
	if splits.Train.H != splits.Train.W {
		augCfg.Size = splits.Train.H
	}
	t.stream, err = loader.Open(splits.Train, splits.Mean, splits.Std, augCfg, cfg.Seed, cfg.Workers)
	if err != nil {
		return err
	}
	_, vr, _ := mlmc.ParseName(cfg.Estimator)
	if vr {
		t.prev = t.b.Alloc(params.Len())
		t.b.Copy(t.prev, params.Flat())
	}
	t.oracle = NewOracle(t.b, t.model, t.stream, cfg.Temperature, maxServable, t.prev)
	ops := bufferOps{b: t.b, n: params.Len()}
	t.est, err = mlmc.New[tensor.Buffer](cfg.Estimator, cfg.mlmcConfig(), ops, t.oracle)
	if err != nil {
		return fmt.Errorf("--estimator %s: %w", cfg.Estimator, err)
	}
	for _, note := range t.est.Notes() {
		t.logf("note: %s", note)
	}
	t.grad = t.b.Alloc(params.Len())

	// Length and schedule (SPEC section 2: an epoch is ceil(n/2^L) iterations).
	cfg.TrainImages = n
	cfg.ItersPerEpoch = (n + (1 << cfg.MaxLevel) - 1) >> cfg.MaxLevel
	switch {
	case cfg.Epochs > 0:
		cfg.TotalIters = cfg.Epochs * cfg.ItersPerEpoch
	case cfg.Iterations > 0:
		cfg.TotalIters = cfg.Iterations
	default:
		perIter := ExpectedSamples(*cfg, maxServable)
		cfg.TotalIters = int(math.Ceil(float64(cfg.MaxSamples) / perIter))
	}
	cfg.WarmupIters = int(math.Round(cfg.WarmupEpochs * float64(cfg.ItersPerEpoch)))
	if cfg.WarmupIters > cfg.TotalIters/10 {
		t.logf("note: warm-up of %g epochs (%d iterations) shortened to a tenth of the run (%d iterations)",
			cfg.WarmupEpochs, cfg.WarmupIters, cfg.TotalIters/10)
		cfg.WarmupIters = cfg.TotalIters / 10
	}
	cfg.ResolvedLR = cfg.LR
	if cfg.ResolvedLR == 0 {
		cfg.ResolvedLR = defaultLR(cfg.MaxLevel)
	}
	t.sched = optim.Schedule{BaseLR: float32(cfg.ResolvedLR), WarmupSteps: cfg.WarmupIters, TotalSteps: cfg.TotalIters}
	t.logf("data: %s, %d training images, %d test images; %s over levels %d..%d, %d iterations (%d per epoch), lr %g, %s, width %g",
		splits.Train.Name, n, splits.Test.Len(), t.est.Name(), cfg.MinLevel, cfg.MaxLevel, cfg.TotalIters, cfg.ItersPerEpoch,
		cfg.ResolvedLR, cfg.Optimizer, cfg.Width)

	if resume {
		if err := t.restore(); err != nil {
			return err
		}
		t.logf("resumed %s at iteration %d of %d", cfg.Out, t.iter, cfg.TotalIters)
	} else if err := runfolder.WriteJSON(filepath.Join(cfg.Out, runfolder.ConfigFile), cfg); err != nil {
		return err
	}
	return nil
}

// ExpectedSamples is the expected number of images one iteration draws
// (SPEC section 1's cost), with RU/RR levels redrawn above maxServable.
func ExpectedSamples(cfg Config, maxServable int) float64 {
	m, vr, _ := mlmc.ParseName(cfg.Estimator)
	mc := cfg.mlmcConfig()
	b, c := mc.B, mc.C
	if b == 0 {
		b = 1
	}
	if c == 0 {
		c = 1
	}
	var per float64
	switch m {
	case mlmc.LSGD:
		per = float64(max(cfg.NL, 1)) * math.Exp2(float64(cfg.MaxLevel))
	case mlmc.VMLMC:
		n := cfg.VMLMCN
		if n == 0 {
			n = math.Ceil(math.Exp2((b + c) * float64(cfg.MaxLevel) / 2))
		}
		for l := cfg.MinLevel; l <= cfg.MaxLevel; l++ {
			per += float64(mlmc.VMLMCDraws(l, b, c, n)) * math.Exp2(float64(l))
		}
	case mlmc.RTMLMC, mlmc.RUMLMC:
		top := cfg.MaxLevel
		if m == mlmc.RUMLMC {
			top = maxServable
		}
		d := mlmc.Truncated(cfg.MinLevel, top, b, c)
		for l := cfg.MinLevel; l <= top; l++ {
			per += d.Prob(l) * math.Exp2(float64(l))
		}
	case mlmc.RRMLMC:
		d := mlmc.Truncated(cfg.MinLevel, maxServable, b, c)
		for l := cfg.MinLevel; l <= maxServable; l++ {
			per += d.Tail(l) * math.Exp2(float64(l))
		}
	}
	if vr {
		qe := float64(max(cfg.QE, 1))
		per *= (float64(max(cfg.D1, 1)) + (qe-1)*float64(max(cfg.D2, 1))) / qe
	}
	return per
}

func (t *trainer) close() {
	if t.stream != nil {
		t.stream.Close()
	}
	if t.oracle != nil {
		t.oracle.Free()
	}
	for _, buf := range []tensor.Buffer{t.grad, t.prev} {
		if buf != nil {
			t.b.Free(buf)
		}
	}
	if t.opt != nil {
		t.opt.Free()
	}
	if t.model != nil {
		t.model.FreePlans()
		t.model.Params().Free()
	}
}

func (t *trainer) loop(ctx context.Context) (*Summary, error) {
	cfg := &t.cfg
	metrics, err := runfolder.OpenAppender(filepath.Join(cfg.Out, runfolder.MetricsFile))
	if err != nil {
		return nil, err
	}
	defer metrics.Close()
	var bar *progressbar.ProgressBar
	if t.hooks.Progress {
		bar = progressbar.NewOptions(cfg.TotalIters,
			progressbar.OptionSetWriter(t.log),
			progressbar.OptionSetDescription("train"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionFullWidth())
		bar.Set(t.iter)
	}
	n := cfg.TrainImages
	sessionStart := t.iter
	imagesAtStart := t.est.Totals().Samples
	lastCheckpoint := -1 // iteration of the last checkpoint written, -1 before the first
	if t.iter > 0 {
		lastCheckpoint = t.iter // a resumed session starts from one
	}
	// Wall time counts training (and its evaluations), not loading the data.
	t.start = time.Now()
	t.lastLogTime = t.start
	for t.iter < cfg.TotalIters {
		if cfg.MaxSamples > 0 && t.est.Totals().Samples >= cfg.MaxSamples {
			break
		}
		if ctx.Err() != nil || (t.hooks.StopAfter > 0 && t.iter-sessionStart >= t.hooks.StopAfter) {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
			t.logf("\ninterrupted at iteration %d: checkpoint saved; continue with: simclr train --resume %s", t.iter, cfg.Out)
			return t.summary(), fmt.Errorf("%w at iteration %d (resume with --resume %s)", ErrInterrupted, t.iter, cfg.Out)
		}
		lr := t.sched.LR(t.iter)
		step, err := t.iterate(lr)
		if err != nil {
			if errors.Is(err, ErrNonFinite) {
				kept := fmt.Sprintf("the last good checkpoint (iteration %d) is kept in %s", lastCheckpoint, cfg.Out)
				if lastCheckpoint < 0 {
					kept = "no checkpoint had been written yet"
				}
				return nil, fmt.Errorf("iteration %d: %w; training stopped and %s: lower --lr (now %g) or raise --temperature and train again",
					t.iter+1, err, kept, cfg.ResolvedLR)
			}
			return nil, fmt.Errorf("iteration %d: %w", t.iter+1, err)
		}
		t.iter++
		totals := t.est.Totals()
		last := t.iter == cfg.TotalIters || (cfg.MaxSamples > 0 && totals.Samples >= cfg.MaxSamples)
		if cfg.LogEvery > 0 && (t.iter%cfg.LogEvery == 0 || last) {
			m := runfolder.Metrics{Iteration: t.iter, Epoch: float64(t.iter) / float64(cfg.ItersPerEpoch),
				DataEpoch: float64(totals.Samples) / float64(n), Levels: step.Levels, SamplesDrawn: totals.Samples,
				Evaluations: totals.Evals, Redraws: totals.Redraws, Loss: t.lastLoss, LR: float64(lr), WallSeconds: t.wall()}
			if err := metrics.Append(m); err != nil {
				return nil, err
			}
		}
		if bar != nil {
			rate := float64(totals.Samples-imagesAtStart) / time.Since(t.start).Seconds()
			bar.Describe(fmt.Sprintf("epoch %.2f loss %.4f %.0f images/s", float64(t.iter)/float64(cfg.ItersPerEpoch), t.lastLoss, rate))
			bar.Set(t.iter)
		} else if time.Since(t.lastLogTime) > 10*time.Second || last || t.iter == sessionStart+1 {
			elapsed := time.Since(t.start).Seconds()
			rate := float64(totals.Samples-imagesAtStart) / elapsed
			eta := time.Duration(float64(cfg.TotalIters-t.iter)*elapsed/float64(t.iter-sessionStart)) * time.Second
			t.logf("iter %d/%d epoch %.2f loss %.4f lr %.4g images/s %.1f eta %s",
				t.iter, cfg.TotalIters, float64(t.iter)/float64(cfg.ItersPerEpoch), t.lastLoss, lr, rate, eta.Round(time.Second))
			t.lastLogTime = time.Now()
		}
		if cfg.EvalEvery > 0 && t.iter%(cfg.EvalEvery*cfg.ItersPerEpoch) == 0 {
			if err := t.evalKNN(); err != nil {
				return nil, err
			}
		}
		if cfg.CheckpointEvery > 0 && t.iter%cfg.CheckpointEvery == 0 && !last {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
			lastCheckpoint = t.iter
		}
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(t.log)
	}
	if err := t.checkpoint(); err != nil {
		return nil, err
	}
	sum := t.summary()
	t.logf("done: %d iterations, %d images drawn, %d evaluations, loss %.4f, %.1f s; checkpoint %s",
		sum.Iterations, sum.SamplesDrawn, sum.Evaluations, sum.Loss, sum.WallSeconds, filepath.Join(cfg.Out, runfolder.ModelFile))
	if cfg.Probe {
		probe, err := t.linearProbe()
		if err != nil {
			return sum, err
		}
		sum.Probe = probe
	}
	return sum, nil
}

// iterate runs iteration t.iter with learning rate lr: the estimate v_t at
// x_t, then x_{t-1} <- x_t (for VR) and the optimizer step to x_{t+1}. It
// leaves t.iter alone.
func (t *trainer) iterate(lr float32) (mlmc.Step, error) {
	params := t.model.Params()
	step, err := t.est.Estimate(t.iter, t.grad)
	if err == nil && !t.b.AllFinite(t.grad) {
		err = fmt.Errorf("gradient estimate: %w", ErrNonFinite)
	}
	if err != nil {
		return step, err
	}
	t.lastLoss = t.oracle.Losses()
	if t.prev != nil {
		t.b.Copy(t.prev, params.Flat())
	}
	t.b.Copy(params.Grad(), t.grad)
	t.opt.Step(lr)
	if err := t.b.Sync(); err != nil {
		return step, fmt.Errorf("device: %w", err)
	}
	return step, nil
}

func (t *trainer) summary() *Summary {
	tot := t.est.Totals()
	return &Summary{Out: t.cfg.Out, Iterations: t.iter, SamplesDrawn: tot.Samples, Evaluations: tot.Evals,
		Loss: t.lastLoss, WallSeconds: t.wall()}
}

// checkpoint writes state.safetensors (everything a resumed run needs,
// including the parameters) and then model.safetensors (the network under
// torchvision names, for users), each atomically. Resuming reads only the
// state file, so a kill between the two writes leaves a consistent run.
func (t *trainer) checkpoint() error {
	params := t.model.Params()
	download := func(buf tensor.Buffer) []float32 {
		out := make([]float32, buf.Len())
		t.b.Download(out, buf)
		return out
	}
	estState, err := t.est.MarshalBinary()
	if err != nil {
		return err
	}
	pos, _ := json.Marshal(t.stream.Position())
	meta := map[string]string{
		"format":        stateFormat,
		"iteration":     strconv.Itoa(t.iter),
		"estimator":     t.est.Name(),
		"estimator_rng": base64.StdEncoding.EncodeToString(estState),
		"loader":        string(pos),
		"wall_seconds":  strconv.FormatFloat(t.wall(), 'g', -1, 64),
		"last_loss":     strconv.FormatFloat(t.lastLoss, 'g', -1, 64),
		"params_len":    strconv.Itoa(params.Len()),
		"state_len":     strconv.Itoa(params.StateLen()),
	}
	tensors := []checkpoint.Tensor{
		{Name: "params", Shape: []int{params.Len()}, Data: download(params.Flat())},
		{Name: "bn_state", Shape: []int{params.StateLen()}, Data: download(params.State())},
		{Name: "momentum", Shape: []int{params.Len()}, Data: download(t.opt.State())},
	}
	if t.prev != nil {
		tensors = append(tensors, checkpoint.Tensor{Name: "prev_params", Shape: []int{params.Len()}, Data: download(t.prev)})
	}
	if m, ok := t.est.VRState(); ok {
		tensors = append(tensors, checkpoint.Tensor{Name: "vr_m", Shape: []int{params.Len()}, Data: download(m)})
	}
	if err := checkpoint.Write(filepath.Join(t.cfg.Out, runfolder.StateFile), tensors, meta); err != nil {
		return err
	}
	return SaveModel(filepath.Join(t.cfg.Out, runfolder.ModelFile), t.b, t.model, map[string]string{
		"iteration": strconv.Itoa(t.iter), "estimator": t.est.Name(), "width": strconv.FormatFloat(t.cfg.Width, 'g', -1, 64),
		"proj_dim": strconv.Itoa(t.cfg.ProjDim), "dataset": t.cfg.Dataset, "version": t.cfg.Version,
	})
}

// SaveModel writes every tensor of m under its torchvision name
// (num_batches_tracked as a float) to path, atomically.
func SaveModel(path string, b tensor.Backend, m *resnet18.Model, meta map[string]string) error {
	var tensors []checkpoint.Tensor
	for _, nt := range m.Params().Tensors() {
		data := make([]float32, nt.Len)
		b.Download(data, nt.Value)
		tensors = append(tensors, checkpoint.Tensor{Name: nt.Name, Shape: nt.Shape, Data: data})
	}
	return checkpoint.Write(path, tensors, meta)
}

// LoadModel fills m's tensors from a model checkpoint written by SaveModel.
func LoadModel(path string, b tensor.Backend, m *resnet18.Model) (*checkpoint.File, error) {
	f, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	if missing := f.Missing(m.Params().Names()); missing != "" {
		return nil, fmt.Errorf("checkpoint %s lacks %s: it was not written by simclr for a ResNet-18 of this width", path, missing)
	}
	for _, nt := range m.Params().Tensors() {
		x, _ := f.Get(nt.Name)
		if len(x.Data) != nt.Len {
			return nil, fmt.Errorf("checkpoint %s: %s has shape %v, the network wants %v: pass the --width the model was trained with (checkpoint metadata: width %s)",
				path, nt.Name, x.Shape, nt.Shape, f.Metadata["width"])
		}
		b.Upload(nt.Value, x.Data)
	}
	return f, nil
}

// restore loads state.safetensors into the session.
func (t *trainer) restore() error {
	path := filepath.Join(t.cfg.Out, runfolder.StateFile)
	checkpoint.RemoveStale(path)
	checkpoint.RemoveStale(filepath.Join(t.cfg.Out, runfolder.ModelFile))
	f, err := checkpoint.Read(path)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("resume from %s: %s", path, fmt.Sprintf(format, args...))
	}
	if f.Metadata["format"] != stateFormat {
		return bad("format %q, want %q (written by another program version?)", f.Metadata["format"], stateFormat)
	}
	params := t.model.Params()
	load := func(name string, dst tensor.Buffer) error {
		x, ok := f.Get(name)
		if !ok {
			return bad("tensor %s is missing", name)
		}
		if len(x.Data) != dst.Len() {
			return bad("tensor %s has %d values, the network wants %d (config.json changed since the checkpoint?)", name, len(x.Data), dst.Len())
		}
		t.b.Upload(dst, x.Data)
		return nil
	}
	for _, p := range []struct {
		name string
		dst  tensor.Buffer
	}{{"params", params.Flat()}, {"bn_state", params.State()}, {"momentum", t.opt.State()}} {
		if err := load(p.name, p.dst); err != nil {
			return err
		}
	}
	if t.prev != nil {
		if err := load("prev_params", t.prev); err != nil {
			return err
		}
	}
	if m, ok := t.est.VRState(); ok {
		if err := load("vr_m", m); err != nil {
			return err
		}
	}
	estState, err := base64.StdEncoding.DecodeString(f.Metadata["estimator_rng"])
	if err != nil {
		return bad("estimator state: %v", err)
	}
	if err := t.est.UnmarshalBinary(estState); err != nil {
		return bad("%v", err)
	}
	var pos loader.Position
	if err := json.Unmarshal([]byte(f.Metadata["loader"]), &pos); err != nil {
		return bad("loader position: %v", err)
	}
	if err := t.stream.Seek(pos); err != nil {
		return bad("%v", err)
	}
	if t.iter, err = strconv.Atoi(f.Metadata["iteration"]); err != nil {
		return bad("iteration: %v", err)
	}
	t.wallOffset, _ = strconv.ParseFloat(f.Metadata["wall_seconds"], 64)
	t.lastLoss, _ = strconv.ParseFloat(f.Metadata["last_loss"], 64)
	for _, name := range []string{runfolder.MetricsFile, runfolder.EvalFile} {
		if err := runfolder.TruncateAfter(filepath.Join(t.cfg.Out, name), t.iter); err != nil {
			return err
		}
	}
	return nil
}
