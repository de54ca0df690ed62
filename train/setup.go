package train

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/collective"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/optim"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
)

// LoadSplits opens the configured data set (or uses given) at ImageSize and
// keeps the configured subsets. With a validation split (--val-split N) the
// N held-out training images replace the test set, which is then not
// touched: the kNN monitor and the probe score them, and the training
// subset is taken from the remaining images.
func LoadSplits(cfg Settings, given *data.Splits) (*data.Splits, error) {
	splits := given
	if splits == nil {
		var err error
		splits, err = datasets.Open(cfg.Dataset, cfg.DataDir, ImageSize)
		if err != nil {
			return nil, err
		}
	}
	if cfg.ValSplit == 0 {
		return splits.Subset(cfg.TrainSubset, cfg.TestSubset), nil
	}
	val, err := splits.Validation(cfg.ValSplit, cfg.TrainSubset)
	if err != nil {
		return nil, fmt.Errorf("--val-split: %w", err)
	}
	return val, nil
}

// ModelConfig is the network cfg builds for the images of splits, checked, so
// that an image folder of tiny images or a bad width is an error rather than
// resnet18.New's panic.
func ModelConfig(cfg Settings, splits *data.Splits) (resnet18.Config, error) {
	norm, err := resnet18.ParseNorm(cfg.Norm)
	if err != nil {
		return resnet18.Config{}, fmt.Errorf("--norm: %w", err)
	}
	net := resnet18.Config{Width: cfg.Width, ProjDim: cfg.ProjDim, InputSize: splits.Train.H, Norm: norm}
	if err := net.Validate(); err != nil {
		return net, fmt.Errorf("network for %s (%dx%d images, width %g, projection dimension %d): %w",
			splits.Train.Name, splits.Train.H, splits.Train.W, cfg.Width, cfg.ProjDim, err)
	}
	return net, nil
}

// setup opens everything a session needs (data, backend, network,
// optimizer, loader stream, oracle, estimator), learns the Facts of this
// session, resolves the run's RunPlan into t.plan (Resolve), and either
// restores the checkpoint (resume) or writes config.json.
func (t *trainer) setup(cfg Settings, s opening) error {
	// The choices are the part of the plan known before this session's
	// facts: the device, the ranks and the pilot need them. Resolve
	// parses the same ones into the whole plan.
	var err error
	if t.plan.Choices, err = cfg.Choices(); err != nil {
		return err
	}
	facts := Facts{Out: cfg.Out, Levels: s.levels, Previous: s.previous, Version: t.sess.Version}
	netCfg, servable, err := t.openData(cfg, &facts)
	if err != nil {
		return err
	}
	if err := t.openDevice(cfg.DistAddr, &facts, s.resume); err != nil {
		return err
	}
	if err := t.openModel(cfg, netCfg, s.resume); err != nil {
		return err
	}
	if err := t.planRun(cfg, facts, servable, s.resume); err != nil {
		return err
	}
	if err := t.openOracle(); err != nil {
		return err
	}
	if err := t.openEstimator(); err != nil {
		return err
	}
	t.logPlan(netCfg)
	if s.resume {
		return t.resumeSession(cfg, s)
	}
	return t.startRun(cfg)
}

// openData loads the splits and checks that the network and the levels
// fit them: the network's configuration and the largest level the data
// can serve.
func (t *trainer) openData(cfg Settings, facts *Facts) (resnet18.Config, int, error) {
	splits, err := LoadSplits(cfg, t.sess.Splits)
	if err != nil {
		return resnet18.Config{}, 0, err
	}
	t.splits = splits
	n := splits.Train.Len()
	if n < 2 {
		return resnet18.Config{}, 0, fmt.Errorf("training set %s has %d images; SimCLR needs at least 2", splits.Train.Name, n)
	}
	facts.TrainImages = n
	netCfg, err := ModelConfig(cfg, splits)
	if err != nil {
		return netCfg, 0, err
	}
	servable, err := maxServableLevel(cfg, splits.Train)
	return netCfg, servable, err
}

// openDevice opens the backend (or takes the session's) and the ranks'
// communicator; on a new run of several ranks they agree on rank 0's run
// folder (the default --out names the start time, which the ranks read
// separately).
func (t *trainer) openDevice(distAddr string, facts *Facts, resume bool) error {
	if t.sess.Backend != nil {
		t.b = t.sess.Backend
		facts.DeviceLog = "device given by caller: " + t.b.Describe()
	} else {
		b, line, err := backend.OpenGPU(t.plan.Device, t.plan.Precision, localGPU(t.plan.Dist))
		if err != nil {
			return err
		}
		t.b = b
		facts.DeviceLog = line
	}
	t.logf("%s", facts.DeviceLog)
	if err := t.openComm(distAddr); err != nil {
		return err
	}
	facts.Ranks = t.comm.Size()
	if facts.Ranks > 1 && !resume {
		out, err := collective.BroadcastBytes(t.comm, []byte(facts.Out), 0)
		if err != nil {
			return fmt.Errorf("agree on the run folder: %w", err)
		}
		facts.Out = string(out)
	}
	return nil
}

// openModel builds the network (a new group-norm run initialises its head
// from the data) and its optimizer.
func (t *trainer) openModel(cfg Settings, netCfg resnet18.Config, resume bool) error {
	t.model = resnet18.New(t.b, netCfg, cfg.Seed)
	if !resume {
		if err := initHead(t.b, t.model, t.splits); err != nil {
			return err
		}
	}
	var err error
	t.opt, err = optim.New(t.b, t.model.Params(), optim.Config{Kind: t.plan.Optimizer, Momentum: float32(cfg.Momentum), WeightDecay: float32(cfg.WeightDecay)})
	return err
}

// planRun caps the servable levels by every rank's memory, runs the pilot
// of a new --estimator auto run, and resolves the plan.
func (t *trainer) planRun(cfg Settings, facts Facts, servable int, resume bool) error {
	meminfo := cmp.Or(t.sess.Meminfo, "/proc/meminfo")
	servable, err := t.capByMemory(cfg.MinLevel, cfg.MaxLevel, servable, meminfo)
	if err != nil {
		return err
	}
	if facts.ServableLevel, err = t.agreeMaxServable(servable); err != nil {
		return err
	}
	if cfg.isAuto() && !resume {
		if facts.Ranks > 1 {
			return fmt.Errorf("--estimator auto runs its pilot in one process; %d ranks were started: run it with one, or name the estimator", facts.Ranks)
		}
		if facts.Auto, err = t.pilot(cfg, t.splits); err != nil {
			return err
		}
	}
	if t.plan, err = Resolve(cfg, facts); err != nil {
		return err
	}
	if a := t.plan.Auto; a != nil {
		t.logf("%s", strings.TrimRight(a.String(), "\n"))
		if !resume {
			// The pilot's images and queries are the run's: counted before
			// the first iteration, checkpointed with the rest.
			t.totals.Samples += a.Samples
			t.totals.Evals += int64(a.PilotDraws) * int64(a.PilotMax-a.PilotMin+2)
		}
	}
	return nil
}

// openOracle opens this rank's loader stream and the SimCLR oracle over
// it, with x_{t-1} for a VR estimator, the halves, the batch split of the
// ranks and the loss.
func (t *trainer) openOracle() error {
	plan := &t.plan
	cfg := &plan.Run
	augCfg := contrastive.AtImageSize(plan.Augment, t.splits.Train)
	var err error
	t.stream, err = loader.Open(t.splits.Train, t.splits.Mean, t.splits.Std, augCfg, rankSeed(cfg.Seed, t.comm.Rank()), cfg.Workers)
	if err != nil {
		return err
	}
	params := t.model.Params()
	if plan.Estimator.VR {
		t.prev = t.b.Alloc(params.Len())
		t.b.Copy(t.prev, params.Flat())
	}
	t.oracle = contrastive.NewOracle(t.b, t.model, t.stream, cfg.Temperature, plan.MaxServable, t.prev)
	t.oracle.SetHalves(plan.Halves)
	if plan.SplitBatch {
		t.sharded = contrastive.NewSharded(t.oracle, t.comm)
	}
	loss, err := contrastive.NewLoss(plan.Loss, t.b, contrastive.LossConfig{Temperature: cfg.Temperature, TrainImages: plan.TrainImages, Gamma: cfg.Gamma})
	if err != nil {
		return fmt.Errorf("--loss %s: %w", plan.Loss, err)
	}
	t.oracle.SetLoss(loss)
	if line := lossLine(plan.Loss, cfg, plan.TotalIters); line != "" {
		t.logf("%s", line)
	}
	return nil
}

// queries is the oracle the estimator queries: this rank's, or its share
// of draws split over the ranks.
func (t *trainer) queries() mlmc.Oracle[tensor.Buffer] {
	if t.sharded != nil {
		return t.sharded
	}
	return t.oracle
}

// openEstimator makes the gradient estimator (its seed offset by rank),
// the estimate's buffer and the learning-rate schedule.
func (t *trainer) openEstimator() error {
	plan := &t.plan
	params := t.model.Params()
	ops := contrastive.NewBufferOps(t.b, params.Len())
	mc := plan.MLMC
	mc.Seed = rankSeed(mc.Seed, t.comm.Rank())
	var err error
	t.est, err = mlmc.New[tensor.Buffer](plan.Estimator, mc, ops, t.queries())
	if err != nil {
		return fmt.Errorf("--estimator %s: %w", plan.Estimator, err)
	}
	for _, note := range plan.Notes {
		t.logf("note: %s", note)
	}
	for _, note := range t.est.Notes() {
		t.logf("note: %s", note)
	}
	t.grad = t.b.Alloc(params.Len())
	t.sched = optim.Schedule{BaseLR: float32(plan.LR), WarmupSteps: plan.WarmupIters, TotalSteps: plan.TotalIters}
	return nil
}

// logPlan logs the data, the estimator and the cost model's figures, so
// that a reader sees what an iteration costs before it runs (VR
// estimators: averaged over a Q_E cycle), and what the ranks share.
func (t *trainer) logPlan(netCfg resnet18.Config) {
	plan, splits := &t.plan, t.splits
	cfg := &plan.Run
	evalNote := ""
	if plan.Halves == contrastive.HalvesSeparate {
		evalNote = fmt.Sprintf(" (network passes: each correction above level %d is 3)", cfg.MinLevel)
	}
	scored := "test"
	if cfg.ValSplit > 0 {
		scored = "validation (held out of training; the test set is not scored)"
	}
	t.logf("data: %s, %d training images, %d %s images; %s over levels %d..%d, %d iterations (%d per epoch), "+
		"expected per iteration %.4g images and %.4g oracle evaluations%s, lr %g, %s, width %g, %s norm, %s augmentation, halves %s, precise BN %v",
		splits.Train.Name, plan.TrainImages, splits.Test.Len(), scored, t.est.Name(), cfg.MinLevel, cfg.MaxLevel, plan.TotalIters, plan.ItersPerEpoch,
		plan.ExpectedImages, plan.ExpectedEvals, evalNote, plan.LR, plan.Optimizer, cfg.Width, netCfg.Norm, cfg.AugmentName, plan.Halves, cfg.PreciseBN)
	if ranks := t.comm.Size(); ranks > 1 {
		t.logf("dist: %d ranks; %s", ranks, parallelNote(plan.Estimator, plan.SplitBatch, cfg.MaxLevel, ranks, netCfg.Norm))
	}
}

// resumeSession restores the checkpoint; a run made longer records its
// new plan.
func (t *trainer) resumeSession(cfg Settings, s opening) error {
	plan := &t.plan
	if err := t.restore(); err != nil {
		return err
	}
	t.logf("resumed %s at iteration %d of %d", plan.Out, t.iter, plan.TotalIters)
	if s.extendedFrom > 0 {
		// The cosine schedule now spans the new length, so the learning
		// rate jumps up where the run continues.
		t.logf("extended from %d to %d iterations: the learning-rate schedule now spans %d iterations (%.4g at iteration %d)",
			s.extendedFrom, plan.TotalIters, plan.TotalIters, t.sched.LR(t.iter), t.iter)
		if t.comm.Rank() == 0 {
			return t.writeRecord(cfg)
		}
	}
	if t.iter >= plan.TotalIters {
		t.logf("%s had finished training; running the linear probe it lacks", plan.Out)
	}
	return nil
}

// startRun gives every rank rank 0's initial network (they built the same
// one from the same seed, so that they cannot start apart), and rank 0
// makes the run folder and writes config.json: last, once everything the
// run needs has opened, so that a start that fails leaves no folder behind.
func (t *trainer) startRun(cfg Settings) error {
	if err := t.comm.Broadcast(t.model.Params().Flat(), 0); err != nil {
		return fmt.Errorf("broadcast the initial parameters: %w", err)
	}
	if t.comm.Rank() != 0 {
		return nil
	}
	if err := prepareFolder(t.plan.Out); err != nil {
		return err
	}
	return t.writeRecord(cfg)
}

// writeRecord writes the run's config.json: its settings and its plan.
func (t *trainer) writeRecord(cfg Settings) error {
	return runfolder.WriteJSON(filepath.Join(t.plan.Out, runfolder.ConfigFile), newRecord(cfg, t.plan))
}

// maxServableLevel is the largest level the oracle serves for cfg on train:
// a level-l query draws 2^l images, so never more than the set holds.
func maxServableLevel(cfg Settings, train *data.Set) (int, error) {
	n := train.Len()
	servable := contrastive.ServableLevel(n)
	if cfg.MaxLevel > servable {
		return 0, fmt.Errorf("--max-level %d needs 2^%d = %d images per query but %s has %d: use --max-level %d or less",
			cfg.MaxLevel, cfg.MaxLevel, 1<<cfg.MaxLevel, train.Name, n, servable)
	}
	// RU/RR draw levels from an unbounded law; by default serve up to three
	// levels above L (memory grows as 2^l), never more than the data set
	// holds.
	maxServable := min(servable, cfg.MaxLevel+3)
	if cfg.MaxServable > 0 {
		if cfg.MaxServable > servable {
			return 0, fmt.Errorf("--max-servable-level %d needs 2^%d images per query but %s has %d: use %d or less",
				cfg.MaxServable, cfg.MaxServable, train.Name, n, servable)
		}
		maxServable = cfg.MaxServable
	}
	return maxServable, nil
}

// agreeMaxServable is the smallest of the ranks' largest servable levels
// (each capped by its own memory): the ranks must serve the same levels,
// or a --max-samples length would end them at different iterations.
func (t *trainer) agreeMaxServable(mine int) (int, error) {
	if t.comm.Size() == 1 {
		return mine, nil
	}
	all := make([]float64, t.comm.Size())
	all[t.comm.Rank()] = float64(mine)
	if err := t.comm.AllReduceFloat64(all); err != nil {
		return 0, fmt.Errorf("agree on the largest servable level: %w", err)
	}
	least := mine
	for _, l := range all {
		least = min(least, int(l))
	}
	if least < mine {
		t.logf("memory: largest servable level %d, another rank's", least)
	}
	return least, nil
}

// close frees what setup opened; it is safe after a partial setup.
func (t *trainer) close() {
	if t.stream != nil {
		t.stream.Close()
	}
	if t.sharded != nil {
		t.sharded.Free()
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
		t.model.Free()
	}
	if t.ownComm && t.comm != nil {
		t.comm.Close()
	}
	// A backend the trainer opened is closed with it (one given by the
	// caller stays the caller's).
	if t.b != nil && t.sess.Backend == nil {
		backend.Close(t.b)
	}
}

// parallelNote says what the ranks do in parallel, for the log.
func parallelNote(estimator mlmc.Kind, splitBatch bool, maxLevel, ranks int, norm resnet18.Norm) string {
	if splitBatch {
		how := "batch norm over each rank's share"
		if norm == resnet18.NormGroup {
			how = "group norm, so the split changes no embedding of the step (the head's running statistics then move by the mean of the ranks' updates)"
		}
		return fmt.Sprintf("%s: the %d images of each draw are split over the ranks, %d each from each rank's own stream, with %s, and the loss over all %d (projections gathered)",
			estimator, 1<<maxLevel, (1<<maxLevel)/ranks, how, 1<<maxLevel)
	}
	return fmt.Sprintf("%s: each rank draws its own levels and images (streams seeded by rank), and the estimate is the mean of the %d ranks' estimates", estimator, ranks)
}

// initHead runs the group-norm network's data-dependent head
// initialisation (resnet18.Model.InitHeadFromData) on 256 training images
// spread evenly over the set, un-augmented: the same images on every rank,
// so the ranks start from the same network. Evenly spread rather than the
// first 256, because an image folder lists its images class by class. With
// batch norm it does nothing.
func initHead(b tensor.Backend, m *resnet18.Model, splits *data.Splits) error {
	if m.Config().Norm != resnet18.NormGroup {
		return nil
	}
	total := splits.Train.Len()
	n := min(256, total)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i * total / n
	}
	host := make([]float32, n*m.InputLen())
	loader.EvalBatch(splits.Train, idx, splits.Mean, splits.Std, host)
	x := b.Alloc(len(host))
	defer b.Free(x)
	b.Upload(x, host)
	defer m.FreeEvalPlans()
	if err := m.InitHeadFromData(x, n); err != nil {
		return fmt.Errorf("initialise the projection head: %w", err)
	}
	return nil
}
