// Command innermean measures how far SogCLR's moving averages u, and the
// in-batch means SimCLR's and DCL's denominators use, are from the
// full-data inner mean they estimate, on a SogCLR run's network: the
// small-batch study's question (studies/small-batches/README.md, "SogCLR's u
// against the full-data inner mean"). Run it with --help for the details.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/loader"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
	"github.com/simclr-go/simclr/train"
)

// freshDrawSeed sets the stream of the second augmentation draw apart from
// the training stream of the same seed.
const freshDrawSeed = 0x6672657368 // "fresh"

// innerMeanEstimate is one estimate's relative error against the inner
// mean: per view (g_i) or per image (the mean of its two views, G_k).
type innerMeanEstimate struct {
	Name   string `json:"name"`
	Target string `json:"target"` // "view" or "image"
	ErrorStats
}

// stalenessRow is u's error for the images last visited between From and
// To draws ago (1: the run's last draw).
type stalenessRow struct {
	From   int     `json:"from_draws_ago"`
	To     int     `json:"to_draws_ago"`
	Epochs float64 `json:"to_epochs_ago"`
	ErrorStats
}

// innerMeanResult is the --json output.
type innerMeanResult struct {
	Run          string              `json:"run"`
	Dataset      string              `json:"dataset"`
	TrainImages  int                 `json:"train_images"`
	Iteration    int                 `json:"iteration"`
	Batch        int                 `json:"batch"`
	DrawsPerIter int                 `json:"draws_per_iteration"`
	Temperature  float64             `json:"temperature"`
	GammaNext    float64             `json:"gamma_next_visit"`
	Views        string              `json:"views"`
	GMedian      float64             `json:"inner_mean_median"`
	Estimates    []innerMeanEstimate `json:"estimates"`
	ByStaleness  []stalenessRow      `json:"u_by_staleness"`
	Seconds      float64             `json:"seconds"`
	Device       string              `json:"device"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "innermean:", err)
		os.Exit(1)
	}
}

const usage = `innermean measures, for a SogCLR run (simclr train --loss sogclr), how
well its moving averages u estimate the quantity they track (docs/definitions.md,
section 10 "Decoupled losses"): for view i of an image, the full-data inner mean
g_i = mean over the 2n - 2 views of the other n - 1 training images of
exp(s_iv / tau), and per image G_k, the mean of its two views' g_i, which is
what u_k stores.

The views are each image's two views of its last visit in training: the run's
stream is replayed (same seed, same order, same augmentations) over the draws
that hold a last visit, and each draw's batch runs through the network at the
run's final parameters in training mode, so that batch norm uses the batch
statistics of the very batch training drew. Every training image must have
been visited once (a run of at least one epoch).

Reported: the relative error |estimate - g| / g (mean, quartiles, 90th
percentile, maximum, the signed mean as bias, and the mean of g/e - 1: how
much too heavily a loss weighting each negative by exp(s/tau)/e counts them)
of u_k against G_k and against each view's g_i, by the draws since the
image's last visit (quarters of an epoch); of SogCLR's estimate at the next
visit, (1 - gamma) u_k + gamma m_i; for each --batches size b, of the
in-batch mean m_i over the 2b - 2 negatives (SimCLR's and DCL's estimate) in
real batches: the same views in random batches of b through the network,
each with its own batch-norm statistics, against the full-data means of that
same pass (whose distance from g, also reported, is what the batches'
composition alone moves under batch norm); and, with --fresh-draw, of the
inner means of a second, independent augmentation draw: how much g itself
moves with the views.

  go run ./studies/small-batches/innermean --run runs/sogclr --json > inner-mean.json
  go run ./studies/small-batches/innermean --run runs/sogclr --batches 64,512,4096 --data-dir data

Flags:
`

// options are the command line's choices.
type options struct {
	run, dataDir, device, precision string
	asJSON, fresh                   bool
	batches                         []int
	workers                         int
}

func parse(args []string, stderr io.Writer) (options, error) {
	o := options{batches: []int{64, 512}}
	fs := flag.NewFlagSet("innermean", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.run, "run", "", "run folder of a SogCLR run (its config.json, model.safetensors and state.safetensors)")
	fs.StringVar(&o.dataDir, "data-dir", "", "folder holding the data sets (default: the run's)")
	fs.StringVar(&o.device, "device", "auto", "compute device for the network: auto, cpu or cuda")
	fs.StringVar(&o.precision, "precision", "tf32", "CUDA matrix precision: tf32, fp32 or bf16 (bf16 convolutions and matrix products with fp32 sums; compute capability 8.0 or newer)")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	fs.Func("batches", "comma-separated batch sizes whose in-batch means to compare (images per batch; default 64,512)", func(v string) error {
		o.batches = nil
		for _, f := range strings.Split(v, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("%q is not a number of images", f)
			}
			o.batches = append(o.batches, c)
		}
		return nil
	})
	fs.BoolVar(&o.fresh, "fresh-draw", true, "also embed a second, independent augmentation draw (one more pass over the data)")
	fs.IntVar(&o.workers, "workers", 0, "goroutines for augmentation and the similarities (0: one per CPU)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.run == "" {
		return errors.New("give --run runs/NAME: the SogCLR run whose averages to measure")
	}
	r, err := train.OpenRun(o.run)
	if err != nil {
		return err
	}
	st, err := r.SogCLRState()
	if err != nil {
		return err
	}
	// Refused before the data and the network load (minutes on CIFAR):
	// u holds one average per training image.
	for _, c := range o.batches {
		if c < 2 || c > len(st.U) {
			return fmt.Errorf("--batches %d: a batch holds 2..%d images (the run's training set)", c, len(st.U))
		}
	}
	start := time.Now()
	// The run's data exactly: its subset and validation split decide
	// which images u indexes.
	b, m, splits, cfg, err := open(r, o, stderr)
	if err != nil {
		return err
	}
	defer backend.Close(b)
	defer m.Free()
	j := innerMeanJob{run: o.run, b: b, m: m, splits: splits, st: st, tau: cfg.Temperature, seed: cfg.Seed,
		workers: o.workers, logw: stderr, start: start}
	if j.workers <= 0 {
		j.workers = runtime.GOMAXPROCS(0)
	}
	j.gemm = blas.Choose(j.workers).Gemm
	if err := j.check(cfg.Augment, o.batches); err != nil {
		return err
	}
	res, err := j.measure(o.batches, o.fresh)
	if err != nil {
		return err
	}
	if o.asJSON {
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(data))
		return err
	}
	return writeInnerMeanTable(stdout, res)
}

// open loads the run's data (its data set, subset and validation split;
// --data-dir may move the folder) and its network on the backend --device
// names, as the trainer built them (train.LoadSplits, train.ModelConfig).
func open(r *train.Run, o options, logw io.Writer) (tensor.Backend, *resnet18.Model, *data.Splits, train.Settings, error) {
	cfg := r.Settings
	if o.dataDir != "" {
		cfg.DataDir = o.dataDir
	}
	model, err := r.ModelFile()
	if err != nil {
		return nil, nil, nil, cfg, err
	}
	splits, err := train.LoadSplits(cfg, nil)
	if err != nil {
		return nil, nil, nil, cfg, err
	}
	netCfg, err := train.ModelConfig(cfg, splits)
	if err != nil {
		return nil, nil, nil, cfg, err
	}
	d, err := backend.ParseDevice(o.device)
	if err != nil {
		return nil, nil, nil, cfg, fmt.Errorf("--device: %w", err)
	}
	p, err := backend.ParsePrecision(o.precision)
	if err != nil {
		return nil, nil, nil, cfg, fmt.Errorf("--precision: %w", err)
	}
	b, line, err := backend.Open(d, p)
	if err != nil {
		return nil, nil, nil, cfg, err
	}
	fmt.Fprintln(logw, line)
	m := resnet18.New(b, netCfg, cfg.Seed)
	if _, err := m.Load(model); err != nil {
		m.Free()
		backend.Close(b)
		return nil, nil, nil, cfg, err
	}
	return b, m, splits, cfg, nil
}

// innerMeanJob is one inner-mean measurement: the run's network, data,
// SogCLR state and settings.
type innerMeanJob struct {
	run     string
	b       tensor.Backend
	m       *resnet18.Model
	splits  *data.Splits
	st      *train.SogCLRState
	aug     augment.Config
	gemm    blas.Gemm
	tau     float64
	seed    uint64
	workers int
	logw    io.Writer
	start   time.Time
}

// check reads the run's augmentation and checks that u and --batches fit
// the training set.
func (j *innerMeanJob) check(recipe string, batches []int) error {
	n := j.splits.Train.Len()
	if len(j.st.U) != n {
		return fmt.Errorf("run %s: u holds %d images, the training set %d: the data (--data-dir, the subset or --val-split) is not the run's", j.run, len(j.st.U), n)
	}
	for _, c := range batches {
		if c < 2 || c > n {
			return fmt.Errorf("--batches %d: a batch holds 2..%d images (the training set's)", c, n)
		}
	}
	j.aug = augment.SimCLR()
	if recipe != "" {
		var err error
		if j.aug, err = augment.Preset(recipe); err != nil {
			return fmt.Errorf("augment %q of run %s: %w", recipe, j.run, err)
		}
	}
	return nil
}

// measure replays the last visits, computes the full-data inner means and
// compares the estimates with them.
func (j *innerMeanJob) measure(batches []int, fresh bool) (innerMeanResult, error) {
	set, st := j.splits.Train, j.st
	n := set.Len()
	lv, err := ReplayLastVisits(j.b, j.m, set, j.splits.Mean, j.splits.Std, j.aug, st.StreamSeed, st.Batch, st.Head, j.workers)
	if err != nil {
		return innerMeanResult{}, fmt.Errorf("run %s: %w", j.run, err)
	}
	for k, ago := range lv.DrawsAgo {
		if ago == 0 || st.U[k] == 0 {
			return innerMeanResult{}, fmt.Errorf("run %s: training image %d has not been visited yet (u = %g): the full-data mean needs every image's views; measure a run of at least one epoch", j.run, k, st.U[k])
		}
	}
	fmt.Fprintf(j.logw, "inner-mean: replayed the last visits of %d images (%.1f s); similarities of %d views\n", n, time.Since(j.start).Seconds(), 2*n)
	g := InnerMeans(j.gemm, lv.Z, n, lv.D, j.tau, j.workers)
	gImg := PerImage(g)
	u := make([]float64, n)
	uView := make([]float64, 2*n)
	for k, v := range st.U {
		u[k] = float64(v)
		uView[2*k], uView[2*k+1] = u[k], u[k]
	}
	res := innerMeanResult{Run: j.run, Dataset: set.Name, TrainImages: n, Iteration: st.Iteration, Batch: st.Batch,
		DrawsPerIter: st.DrawsPerIteration, Temperature: j.tau, GammaNext: st.Gamma,
		Views:   "each image's two views of its last visit (the run's stream replayed), batch norm on the batch training drew, at the run's final parameters",
		GMedian: experiment.Median(gImg), Device: j.b.Describe()}
	add := func(name, target string, est, truth []float64) {
		res.Estimates = append(res.Estimates, innerMeanEstimate{Name: name, Target: target, ErrorStats: RelativeErrors(est, truth, nil)})
	}
	add("u_k (stored)", "image", u, gImg)
	add("u_k (stored)", "view", uView, g)
	order := RandomOrder(n, j.seed)
	for _, c := range batches {
		// Real batches of c: their own batch norm, their in-batch means
		// against the full-data means of the same embeddings.
		zc, err := ForwardBatches(j.b, j.m, set, j.splits.Mean, j.splits.Std, j.aug, st.StreamSeed, lv.LastEpoch, order, c, j.workers)
		if err != nil {
			return res, fmt.Errorf("run %s: %w", j.run, err)
		}
		mb := BatchMeans(j.gemm, zc, n, lv.D, j.tau, order, c)
		gc := InnerMeans(j.gemm, zc, n, lv.D, j.tau, j.workers)
		if c == st.Batch {
			next := make([]float64, 2*n)
			for i := range next {
				next[i] = (1-st.Gamma)*uView[i] + st.Gamma*mb[i]
			}
			add(fmt.Sprintf("SogCLR at the next visit, (1-gamma) u_k + gamma m_i, batch %d", c), "view", next, g)
		}
		add(fmt.Sprintf("in-batch mean m_i, batch %d (SimCLR, DCL)", c), "view", mb, gc)
		add(fmt.Sprintf("in-batch mean m_i, batch %d (SimCLR, DCL)", c), "image", PerImage(mb), PerImage(gc))
		add(fmt.Sprintf("full-data mean of the batch-%d pass (batch norm's share)", c), "view", gc, g)
		fmt.Fprintf(j.logw, "inner-mean: batches of %d done (%.1f s)\n", c, time.Since(j.start).Seconds())
	}
	if fresh {
		g2, err := j.freshDraw()
		if err != nil {
			return res, err
		}
		add("g of another augmentation draw (the views' own spread)", "view", g2, g)
		add("g of another augmentation draw (the views' own spread)", "image", PerImage(g2), gImg)
	}
	res.ByStaleness = byStaleness(u, gImg, lv.DrawsAgo, (n+st.Batch-1)/st.Batch)
	res.Seconds = time.Since(j.start).Seconds()
	return res, nil
}

// freshDraw is the full-data inner means of a second draw of every
// image's views, from a stream of another seed over its first epoch (and
// the rest of its last draw), in batches of the run's size.
func (j *innerMeanJob) freshDraw() ([]float64, error) {
	set, st := j.splits.Train, j.st
	n := set.Len()
	end := (n + st.Batch - 1) / st.Batch * st.Batch
	lv, err := ReplayLastVisits(j.b, j.m, set, j.splits.Mean, j.splits.Std, j.aug, st.StreamSeed^freshDrawSeed, st.Batch,
		loader.Position{Epoch: end / n, Offset: end % n}, j.workers)
	if err != nil {
		return nil, fmt.Errorf("fresh draw: %w", err)
	}
	return InnerMeans(j.gemm, lv.Z, n, lv.D, j.tau, j.workers), nil
}

// byStaleness is u's error against G_k by the draws since each image's
// last visit, in quarters of an epoch of perEpoch draws.
func byStaleness(u, gImg []float64, drawsAgo []int, perEpoch int) []stalenessRow {
	maxAgo := 0
	for _, a := range drawsAgo {
		maxAgo = max(maxAgo, a)
	}
	quarter := max((perEpoch+3)/4, 1)
	var rows []stalenessRow
	for from := 1; from <= maxAgo; from += quarter {
		to := from + quarter - 1
		st := RelativeErrors(u, gImg, func(k int) bool { return drawsAgo[k] >= from && drawsAgo[k] <= to })
		if st.N == 0 {
			continue
		}
		rows = append(rows, stalenessRow{From: from, To: to, Epochs: float64(to) / float64(perEpoch), ErrorStats: st})
	}
	return rows
}

func writeInnerMeanTable(w io.Writer, r innerMeanResult) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "inner means of %s: %d images of %s at iteration %d (batch %d, tau %g, gamma at the next visit %g)\n",
		r.Run, r.TrainImages, r.Dataset, r.Iteration, r.Batch, r.Temperature, r.GammaNext)
	fmt.Fprintf(&sb, "views: %s; median G_k %.4g\n\n", r.Views, r.GMedian)
	sb.WriteString("relative error |estimate - g| / g\n\n")
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "estimate\tagainst\tmean\tp25\tmedian\tp75\tp90\tbias\tg/e - 1\t")
	for _, est := range r.Estimates {
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%+.4f\t%+.4f\t\n", est.Name, est.Target, est.Mean, est.P25, est.Median, est.P75, est.P90, est.Bias, est.WeightBias)
	}
	tw.Flush()
	sb.WriteString("bias: mean (e - g)/g; g/e - 1: how much too heavily the loss's weights exp(s/tau)/e count the negatives, on average\n")
	sb.WriteString("\nu_k against G_k by the draws since the image's last visit\n\n")
	tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "draws ago\tepochs\timages\tmean\tmedian\tp90\tbias\t")
	for _, row := range r.ByStaleness {
		fmt.Fprintf(tw, "%d-%d\t<= %.2f\t%d\t%.4f\t%.4f\t%.4f\t%+.4f\t\n", row.From, row.To, row.Epochs, row.N, row.Mean, row.Median, row.P90, row.Bias)
	}
	tw.Flush()
	fmt.Fprintf(&sb, "\n%.1f s on %s\n", r.Seconds, r.Device)
	_, err := io.WriteString(w, sb.String())
	return err
}
