package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/checkpoint"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/eval"
	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/tensor"
	"github.com/simclr-go/simclr/train"
)

// evalTarget is what an evaluation command runs on: a network (trained or
// at initialisation), the data, and where results go.
type evalTarget struct {
	run, checkpoint      string
	dataset, dataDir     string
	trainSubset, testSub int
	valSplit             int
	width                float64
	seed                 uint64
	device, precision    string
	randomInit           bool
	asJSON               bool
	// unlabelled accepts a data set's unlabelled form (a flat folder of
	// pictures): for embed, which needs no labels.
	unlabelled bool
}

func (e *evalTarget) define(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&e.run, "run", "", "run folder to evaluate (its model.safetensors and config.json); results are written into it")
	f.StringVar(&e.checkpoint, "checkpoint", "", "model checkpoint (model.safetensors) to evaluate instead of a run folder")
	f.StringVar(&e.dataset, "dataset", "", "data set (default: the run's, else cifar10)")
	f.StringVar(&e.dataDir, "data-dir", "", "folder holding the data sets (default: the run's)")
	f.IntVar(&e.trainSubset, "train-subset", -1, "use only N training images, class-balanced (0: all; -1: with --run the run's --eval-train-subset, the images its own kNN and probe read, else all)")
	f.IntVar(&e.testSub, "test-subset", -1, "use only N test images, class-balanced (0: all; -1: the run's setting, else all)")
	f.IntVar(&e.valSplit, "val-split", -1, "score N class-balanced training images held out of training instead of the test set (0: the test set; -1: the run's setting, else 0)")
	f.Float64Var(&e.width, "width", 0, "network width multiplier (0: the run's or the checkpoint's metadata, else 1)")
	f.Uint64Var(&e.seed, "seed", 0, "initialisation seed for --random-init and the probe's held-out split (default: the run's, else 1)")
	f.StringVar(&e.device, "device", "auto", "compute device: auto, cpu or cuda")
	f.StringVar(&e.precision, "precision", "tf32", "CUDA matrix precision: tf32, fp32 or bf16 (bf16 convolutions and matrix products with fp32 sums; compute capability 8.0 or newer)")
	f.BoolVar(&e.randomInit, "random-init", false, "evaluate the network at initialisation (the baseline a trained network must beat)")
	f.BoolVar(&e.asJSON, "json", false, "print the result as JSON")
}

// open fills unset settings from the run (train.OpenRun) or the
// checkpoint's metadata, else train.Defaults, and opens the data, the
// backend and the network, as the trainer does (train.LoadSplits,
// train.ModelConfig).
func (e *evalTarget) open(cmd *cobra.Command) (tensor.Backend, *resnet18.Model, *data.Splits, train.Settings, error) {
	cfg := train.Defaults()
	fail := func(err error) (tensor.Backend, *resnet18.Model, *data.Splits, train.Settings, error) {
		return nil, nil, nil, cfg, err
	}
	switch {
	case e.run != "" && e.checkpoint != "":
		return fail(fmt.Errorf("give --run or --checkpoint, not both"))
	case e.run != "":
		r, err := train.OpenRun(e.run)
		if err != nil {
			return fail(err)
		}
		cfg = r.Settings
		// A missing model file is found before any data is read.
		if e.checkpoint, err = r.ModelFile(); err != nil && !e.randomInit {
			return fail(err)
		}
	case e.checkpoint == "" && !e.randomInit:
		return fail(fmt.Errorf("give --run runs/NAME or --checkpoint FILE (or --random-init for the untrained baseline)"))
	case !e.randomInit:
		if err := e.fromCheckpoint(&cfg); err != nil {
			return fail(err)
		}
	}
	if err := e.override(cmd, &cfg); err != nil {
		return fail(err)
	}
	var splits *data.Splits
	var err error
	if e.unlabelled {
		// embed: every image, in the data set's own splits.
		splits, err = datasets.OpenUnlabelled(cfg.Dataset, cfg.DataDir, eval.ImageSize)
	} else {
		splits, err = train.LoadSplits(cfg, nil)
	}
	if err != nil {
		return fail(err)
	}
	// A run's own kNN and probe read only --eval-train-subset of its
	// training images; scoring the run again reads the same ones unless
	// --train-subset says otherwise, so the figures reproduce.
	if n := cfg.EvalTrainSubset; e.run != "" && e.trainSubset < 0 && !e.unlabelled && n > 0 && n < splits.Train.Len() {
		splits = splits.Subset(n, 0)
	}
	netCfg, err := train.ModelConfig(cfg, splits)
	if err != nil {
		return fail(err)
	}
	b, line, err := openBackend(e.device, e.precision)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(cmd.ErrOrStderr(), line)
	m := resnet18.New(b, netCfg, cfg.Seed)
	if !e.randomInit {
		if _, err := m.Load(e.checkpoint); err != nil {
			backend.Close(b)
			return fail(err)
		}
	}
	return b, m, splits, cfg, nil
}

// fromCheckpoint checks --checkpoint and takes the network's width, head
// size and normalisation from its metadata.
func (e *evalTarget) fromCheckpoint(cfg *train.Settings) error {
	if _, err := os.Stat(e.checkpoint); err != nil {
		return fmt.Errorf("--checkpoint: %w (give a run's %s)", err, runfolder.ModelFile)
	}
	meta, err := checkpoint.ReadMetadata(e.checkpoint)
	if err != nil {
		return err
	}
	if w, ok, err := checkpoint.ParseMeta[float64](e.checkpoint, meta, "width"); err != nil {
		return err
	} else if ok {
		cfg.Width = w
	}
	if p, ok, err := checkpoint.ParseMeta[int](e.checkpoint, meta, "proj_dim"); err != nil {
		return err
	} else if ok {
		cfg.ProjDim = p
	}
	cfg.Norm = meta["norm"]
	return nil
}

// override applies the flags given over the run's settings and checks the
// rest, before any data is read.
func (e *evalTarget) override(cmd *cobra.Command, cfg *train.Settings) error {
	if e.dataset != "" {
		cfg.Dataset = e.dataset
	}
	if cmd.Flags().Changed("data-dir") {
		cfg.DataDir = e.dataDir
	}
	if e.trainSubset >= 0 {
		cfg.TrainSubset = e.trainSubset
	}
	if e.testSub >= 0 {
		cfg.TestSubset = e.testSub
	}
	if e.valSplit >= 0 {
		cfg.ValSplit = e.valSplit
	}
	if e.width < 0 {
		return fmt.Errorf("--width %g must be positive (0: the run's or the checkpoint's)", e.width)
	}
	if err := datasets.CheckName(cfg.Dataset); err != nil {
		return fmt.Errorf("--dataset: %w", err)
	}
	switch strings.ToLower(e.device) {
	case "auto", "cpu", "cuda":
	default:
		return fmt.Errorf("--device %q: use auto, cpu or cuda", e.device)
	}
	if _, err := backend.ParsePrecision(e.precision); err != nil {
		return fmt.Errorf("--precision %q: use tf32, fp32 or bf16", e.precision)
	}
	if e.width > 0 {
		cfg.Width = e.width
	}
	if cmd.Flags().Changed("seed") {
		cfg.Seed = e.seed
	}
	return nil
}

func newEvalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Evaluate a trained network: linear probe or kNN on frozen features",
	}
	cmd.AddCommand(newLinearProbeCmd(), newKNNCmd())
	return cmd
}

func newLinearProbeCmd() *cobra.Command {
	var e evalTarget
	cmd := &cobra.Command{
		Use:   "linear-probe",
		Short: "Fit multinomial logistic regression on frozen backbone features and report test top-1/top-5",
		Long: `linear-probe freezes the backbone (batch norm in evaluation mode), extracts the
features of the un-augmented training and test images, fits an L2-penalised
multinomial logistic regression (penalty chosen on a held-out 10% of the
training features), refits on all of them and reports test top-1 and top-5
accuracy (docs/definitions.md, section 6 "Training recipe"). With --run the
result is written to RUN/linear_probe.json (RUN/linear_probe_random_init.json
with --random-init).`,
		Example: `  simclr eval linear-probe --run runs/quick
  simclr eval linear-probe --run runs/quick --random-init
  simclr eval linear-probe --checkpoint runs/quick/model.safetensors --dataset cifar10 --data-dir data-cache`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, m, splits, cfg, err := e.open(cmd)
			if err != nil {
				return err
			}
			defer backend.Close(b)
			start := time.Now()
			res, err := eval.LinearProbe(b, m, splits, cfg.Seed)
			if err != nil {
				return err
			}
			ckpt := e.checkpoint
			if e.randomInit {
				ckpt = "(random initialisation)"
			}
			rec := eval.ProbeRecord(res, ckpt, cfg.Dataset, 0, time.Since(start).Seconds())
			rec.RandomInit = e.randomInit
			if e.run != "" {
				name := runfolder.ProbeFile
				if e.randomInit {
					name = "linear_probe_random_init.json"
				}
				if err := runfolder.WriteJSON(filepath.Join(e.run, name), rec); err != nil {
					return err
				}
			}
			return printResult(cmd, e.asJSON, rec, fmt.Sprintf("linear probe (%s, %d train / %d test images): top-1 %.2f%%, top-5 %.2f%% (l2 %g)",
				ckpt, res.Train, res.Test, res.Top1, res.Top5, res.L2))
		},
	}
	e.define(cmd)
	return cmd
}

func newKNNCmd() *cobra.Command {
	var e evalTarget
	var k int
	cmd := &cobra.Command{
		Use:   "knn",
		Short: "Weighted kNN accuracy (cosine similarity, k neighbours, votes exp(s/0.1)) on frozen features",
		Long: `knn classifies each test image by the k training images whose backbone features
are most cosine-similar, each voting exp(s/0.1) for its class, as common SimCLR
monitors do. With --run the result is written to RUN/knn.json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("k") {
				fmt.Fprintln(cmd.ErrOrStderr(), "eval knn: --k is deprecated: use --knn-k (the same flag as train's)")
			}
			if k < 1 {
				return fmt.Errorf("--knn-k %d: give at least 1 neighbour", k)
			}
			b, m, splits, _, err := e.open(cmd)
			if err != nil {
				return err
			}
			defer backend.Close(b)
			res, err := eval.KNN(b, m, splits, k)
			if err != nil {
				return err
			}
			if e.run != "" && !e.randomInit {
				if err := runfolder.WriteJSON(filepath.Join(e.run, "knn.json"), res); err != nil {
					return err
				}
			}
			return printResult(cmd, e.asJSON, res, fmt.Sprintf("kNN (k=%d, %d train / %d test images): top-1 %.2f%%, top-5 %.2f%%",
				res.K, splits.Train.Len(), splits.Test.Len(), res.Top1, res.Top5))
		},
	}
	e.define(cmd)
	// --knn-k, as in train; --k was this command's first spelling.
	cmd.Flags().IntVar(&k, "knn-k", 200, "neighbours (as train --knn-k)")
	cmd.Flags().IntVar(&k, "k", 200, "neighbours")
	// MarkHidden fails only for an undefined flag. (Not MarkDeprecated:
	// its notice goes to os.Stderr, not the command's error writer.)
	_ = cmd.Flags().MarkHidden("k")
	return cmd
}

func printResult(cmd *cobra.Command, asJSON bool, v any, line string) error {
	if !asJSON {
		fmt.Fprintln(cmd.OutOrStdout(), line)
		return nil
	}
	return printJSON(cmd, v)
}

// printJSON writes v to the command's output as indented JSON, the form
// every --json of the subcommands takes.
func printJSON(cmd *cobra.Command, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), string(data))
	return err
}

// openBackend opens the backend --device and --precision name.
func openBackend(device, precision string) (tensor.Backend, string, error) {
	d, err := backend.ParseDevice(device)
	if err != nil {
		return nil, "", fmt.Errorf("--device: %w", err)
	}
	p, err := backend.ParsePrecision(precision)
	if err != nil {
		return nil, "", fmt.Errorf("--precision: %w", err)
	}
	return backend.Open(d, p)
}
