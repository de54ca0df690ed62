package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/simclr-go/simclr/data/datasets"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/train"
)

// defineTrainFlags binds the settings of a run to fs, with c's values as
// defaults. It is called twice when a preset is used: once for the command
// line, once to carry the flags the user set over onto the preset.
func defineTrainFlags(fs *pflag.FlagSet, c *train.Settings) {
	fs.StringVar(&c.Dataset, "dataset", c.Dataset, "data set: "+datasets.Help())
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "folder holding the data sets, as scripts/fetch_data.sh lays them out (empty: "+datasets.DefaultDir+")")
	fs.IntVar(&c.TrainSubset, "train-subset", c.TrainSubset, "use only N training images, class-balanced (0: all)")
	fs.IntVar(&c.TestSubset, "test-subset", c.TestSubset, "use only N test images for evaluation, class-balanced (0: all)")
	fs.StringVar(&c.Estimator, "estimator", c.Estimator, "gradient estimator: "+strings.Join(mlmc.Names(), ", ")+" (vr-: variance reduced; docs/definitions.md, section 2), or auto (a pilot of 5% of the run chooses lsgd, vmlmc or rtmlmc and its level law; section 11)")
	fs.StringVar(&c.Loss, "loss", c.Loss, "contrastive loss: ntxent (SimCLR's; every estimator), dcl or sogclr (decoupled losses, section 10: one batch of 2^L images, --estimator lsgd only); --estimator dcl or sogclr, as older runs wrote, means --estimator lsgd with that loss")
	fs.IntVar(&c.MinLevel, "min-level", c.MinLevel, "smallest level l_min (a level-l query uses 2^l images)")
	fs.IntVar(&c.MaxLevel, "max-level", c.MaxLevel, "largest level L: L-SGD's batch is 2^L images, and an epoch is ceil(n/2^L) iterations")
	fs.Float64Var(&c.B, "b", c.B, "variance rate b of the level laws (Var H^l ~ 2^(-b l))")
	fs.Float64Var(&c.C, "c", c.C, "cost rate c of the level laws (C_l ~ 2^(c l))")
	fs.Float64Var(&c.VMLMCN, "vmlmc-n", c.VMLMCN, "V-MLMC's N: n_l = ceil(2^(-(b+c)l/2) N) draws at level l (0: 2^((b+c)L/2), one draw at level L)")
	fs.IntVar(&c.NL, "lsgd-draws", c.NL, "number of level-L draws L-SGD averages per iteration (0: 1)")
	fs.IntVar(&c.D1, "d1", c.D1, "VR: estimates averaged at a fresh iteration (t mod qe = 0)")
	fs.IntVar(&c.D2, "d2", c.D2, "VR: draws averaged in a correction iteration")
	fs.IntVar(&c.QE, "qe", c.QE, "VR: a fresh estimate every qe iterations, corrections in between")
	fs.StringVar(&c.Halves, "halves", c.Halves, "H^l's half-batch losses: shared (one pass; with batch norm the halves see the whole batch's statistics, not exact) or separate (three passes, each half with its own statistics; exact, about twice the cost)")
	fs.Float64Var(&c.SogCLRGamma, "sogclr-gamma", c.SogCLRGamma, "SogCLR's step gamma in (0, 1] for each image's moving average (0: 0.9; an image's first visit takes 1)")
	fs.StringVar(&c.SogCLRGammaDecay, "sogclr-gamma-decay", c.SogCLRGammaDecay, "SogCLR's gamma over the run: constant, or cosine (from 1 down to --sogclr-gamma)")
	fs.IntVar(&c.MaxServable, "max-servable-level", c.MaxServable, "largest level a query may use; RU-MLMC and RR-MLMC redraw levels above it (0: min(log2 of the training images, max-level + 3))")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "training length in epochs of ceil(n/2^L) iterations (give one of --epochs, --iterations, --max-samples)")
	fs.IntVar(&c.Iterations, "iterations", c.Iterations, "training length in iterations")
	fs.Int64Var(&c.MaxSamples, "max-samples", c.MaxSamples, "training length in images drawn (the cost of docs/definitions.md, section 3)")
	fs.StringVar(&c.Optimizer, "optimizer", c.Optimizer, "optimizer: sgd (PyTorch SGD with momentum) or lars")
	fs.Float64Var(&c.LR, "lr", c.LR, "base learning rate after warm-up, decayed by a cosine to 0 (0: 0.06 x 2^L/512)")
	fs.Float64Var(&c.Momentum, "momentum", c.Momentum, "momentum")
	fs.Float64Var(&c.WeightDecay, "weight-decay", c.WeightDecay, "weight decay of convolution and linear weights (not of batch-norm parameters and biases)")
	fs.Float64Var(&c.WarmupEpochs, "warmup-epochs", c.WarmupEpochs, "epochs of linear learning-rate warm-up (at most a tenth of the run)")
	fs.Float64Var(&c.Temperature, "temperature", c.Temperature, "NT-Xent temperature tau")
	fs.Float64Var(&c.Width, "width", c.Width, "ResNet-18 width multiplier (1: channels 64..512, 512 features)")
	fs.IntVar(&c.ProjDim, "proj-dim", c.ProjDim, "output dimension of the projection head (0: 128)")
	fs.StringVar(&c.Norm, "norm", c.Norm, "normalisation: batch (batch norm, the recipe) or group (group norm, min(32, C) groups: every view is independent of its batch, so the one-forward multilevel correction is exact)")
	fs.StringVar(&c.Augment, "augment", c.Augment, "view augmentation: simclr (crop, flip, colour jitter, grayscale: the recipe) or paper (the paper's flip, colour jitter and grayscale, no crop)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the initialisation, the data order, the augmentations and the level draws")
	fs.StringVar(&c.Device, "device", c.Device, "compute device: auto (CUDA when found, else CPU), cpu or cuda")
	fs.StringVar(&c.Precision, "precision", c.Precision, "CUDA matrix precision: tf32, fp32 or bf16 (mixed precision: bf16 convolutions and matrix products with fp32 sums; batch norm, the loss, the weights and the optimiser in fp32; needs a GPU of compute capability 8.0 or newer); tf32 and fp32 are ignored on the CPU, bf16 is refused there")
	fs.IntVar(&c.Workers, "workers", c.Workers, "augmentation goroutines (0: one per core)")
	fs.StringVar(&c.Dist, "dist", c.Dist, "data-parallel communication: auto (mpi under mpirun, nccl there on a GPU, else none), none, mpi (Open MPI) or nccl; start P ranks with mpirun -np P simclr train ...")
	fs.StringVar(&c.DistAddr, "dist-addr", c.DistAddr, "--dist nccl without mpirun: host:port where rank 0 hands out NCCL's id (with --rank and --world-size)")
	fs.StringVar(&c.Out, "out", c.Out, "run folder for config.json, metrics.jsonl, checkpoints and evaluations (default runs/ESTIMATOR-DATE)")
	fs.IntVar(&c.EvalEvery, "eval-every", c.EvalEvery, "kNN evaluation every this many epochs, appended to eval.jsonl (0: never)")
	fs.StringVar(&c.LevelLaw, "level-law", c.LevelLaw, "level law of rtmlmc and vmlmc: rates (q_l and n_l from --b and --c) or measured:FILE (the optimal q_l or n_l of the per-level variances and costs in a `simclr levels --json` file)")
	fs.IntVar(&c.EvalEveryIters, "eval-every-iterations", c.EvalEveryIters, "kNN evaluation every this many iterations instead (for arms whose epochs differ in length; 0: use --eval-every)")
	fs.IntVar(&c.KNNK, "knn-k", c.KNNK, "neighbours of the kNN evaluation")
	fs.IntVar(&c.LogEvery, "log-every", c.LogEvery, "write a metrics.jsonl line every this many iterations")
	fs.DurationVar((*time.Duration)(&c.CheckpointEvery), "checkpoint-every", time.Duration(c.CheckpointEvery), "checkpoint every this much wall time, e.g. 10m or 1h (0: only at the end, on interruption and on a device failure)")
	fs.BoolVar(&c.PreciseBN, "precise-bn", c.PreciseBN, "re-estimate the batch-norm running statistics (equal-weight average over >= 2,048 augmented training views in batches of 2^L images) before every evaluation and the final checkpoint")
	fs.IntVar(&c.ValSplit, "val-split", c.ValSplit, "hold out N class-balanced training images, never trained on, and score them instead of the test set in the kNN monitor and the probe (for tuning; 0: score the test set)")
	fs.IntVar(&c.EvalTrainSubset, "eval-train-subset", c.EvalTrainSubset, "kNN memory bank and probe training features from only N class-balanced training images (0: all); training still uses every image")
	fs.BoolVar(&c.Probe, "probe", c.Probe, "run the linear probe after training (writes linear_probe.json)")
	fs.BoolVar(&c.ProbeBaseline, "probe-baseline", c.ProbeBaseline, "also probe the same network at initialisation and print both accuracies")
}

// sessionFlags may change when a run is resumed: they do not change what
// it computes.
var sessionFlags = map[string]bool{
	"device": true, "precision": true, "workers": true, "log-every": true, "checkpoint-every": true,
	"eval-every": true, "eval-every-iterations": true, "eval-train-subset": true, "knn-k": true, "probe": true, "probe-baseline": true,
	"dist": true, "dist-addr": true,
}

func newTrainCmd() *cobra.Command {
	cfg := train.Defaults()
	var (
		preset     string
		configFile string
		resume     string
		stopAfter  int
		noProgress bool
		cpuProfile string
		session    train.Session
	)
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a SimCLR ResNet-18 with L-SGD or an MLMC gradient estimator",
		Long: `train runs SimCLR (docs/definitions.md, section 4 "Contrastive learning as
a biased oracle" and section 6 "Training recipe") with the chosen gradient
estimator and leaves a run folder (docs/definitions.md, section 7 "What a run
writes"): config.json, metrics.jsonl, eval.jsonl, model.safetensors
(torchvision names), state.safetensors (for --resume) and linear_probe.json.

SIGINT or SIGTERM saves a checkpoint and stops; --resume continues exactly
where it stopped, and with a larger --epochs, --iterations or --max-samples it
extends a run (also a finished one). A checkpoint is also written every
--checkpoint-every of wall time (10m by default) and when a query fails on the
device. A NaN or infinite loss stops training and keeps the last good
checkpoint. --iterations-limit N stops this session after N iterations with a
checkpoint, to train in chunks.

Exit status: 0 when the run finished, or stopped at --iterations-limit (a
checkpoint saved; --resume continues it); 1 on any error, and when a signal
interrupted the run (its checkpoint is saved as well). Every flag is checked before any data is loaded, and the run folder
is created only once the run can start.

--config FILE takes the settings from a YAML (.yaml, .yml) or JSON (.json)
file whose keys are the flag names (max_level or max-level: 9); flags given on
the command line override it, and an unknown key is an error. A run's
config.json is such a file: --config runs/x/config.json --out runs/y repeats
run x.

--preset quick: a ResNet-18 of width 1/8 on 5,000 CIFAR-10 images (class-balanced) for
200 iterations of 128 images on the CPU, then the linear probe of the trained
and of the untrained network; flags given with it override the preset.`,
		Example: `  simclr train --preset quick --data-dir data-cache --out runs/quick
  simclr train --data-dir data-cache --estimator lsgd --max-level 9 --epochs 100 --out runs/lsgd
  simclr train --data-dir data-cache --estimator vr-rtmlmc --max-level 9 --epochs 100 --out runs/vr-rt
  simclr train --config run.yaml --lr 0.1 --out runs/lr0.1
  simclr train --config runs/vr-rt/config.json --out runs/vr-rt-again
  simclr train --resume runs/vr-rt
  simclr train --resume runs/vr-rt --epochs 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The first SIGINT or SIGTERM cancels ctx: the run checkpoints
			// and stops.
			ctx, stop := cancelOnSignal(cmd.Context())
			defer stop()
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			hooks := session
			hooks.Version = versionString()
			hooks.Log, hooks.StopAfter = cmd.ErrOrStderr(), stopAfter
			hooks.Progress = !noProgress && term.IsTerminal(int(os.Stderr.Fd()))

			var sum *train.Summary
			if resume != "" {
				if configFile != "" {
					return fmt.Errorf("--config starts a new run and --resume continues %s with the settings in its config.json: give one of them (to repeat a run in a new folder: --config %s/config.json --out NEW)", resume, resume)
				}
				if err := checkResumeFlags(cmd.Flags(), resume); err != nil {
					return err
				}
				sum, err = train.Resume(ctx, resume, func(c *train.Settings) error {
					if lengthGiven(cmd.Flags()) {
						// The new length replaces the old, whatever its unit.
						c.Epochs, c.Iterations, c.MaxSamples = 0, 0, 0
					}
					return applyFlags(cmd.Flags(), c, func(name string) bool { return sessionFlags[name] || lengthFlags[name] })
				}, hooks)
			} else {
				var run train.Settings
				if run, err = resolveTrainConfig(cmd.Flags(), cfg, preset, configFile); err != nil {
					return err
				}
				sum, err = train.Train(ctx, run, hooks)
			}
			if sum == nil {
				return err
			}
			return reportTrain(cmd, sum, err)
		},
	}
	defineTrainFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&preset, "preset", "", "start from a preset (quick: a few minutes on 2 CPU cores, see above); other flags override it")
	cmd.Flags().StringVar(&configFile, "config", "", "start from the settings in this YAML (.yaml, .yml) or JSON (.json) file: keys are the flag names (max_level or max-level), a run's config.json repeats the run; flags given override it")
	cmd.Flags().StringVar(&resume, "resume", "", "continue the run in this folder from its last checkpoint")
	cmd.Flags().IntVar(&stopAfter, "iterations-limit", 0, "stop with a checkpoint and exit status 0 after this many iterations in this session (--resume continues); 0: no limit")
	cmd.Flags().BoolVar(&noProgress, "no-progress", false, "print log lines instead of a progress bar on a terminal")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this file (go tool pprof)")
	cmd.Flags().IntVar(&session.Rank, "rank", 0, "--dist nccl without mpirun: this process's rank, 0 to --world-size - 1")
	cmd.Flags().IntVar(&session.WorldSize, "world-size", 0, "--dist nccl without mpirun: the number of ranks")
	return cmd
}

// cancelOnSignal returns a context that SIGINT or SIGTERM cancels. After
// the first signal the default action is restored, so a second one ends
// the process at once.
func cancelOnSignal(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// startCPUProfile starts a Go CPU profile into path (none when path is
// empty) and returns the function that stops it and closes the file; calls
// after the first do nothing. A profile that cannot start leaves no file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		f.Close()
	}), nil
}

// lengthFlags may accompany --resume to extend the run (train.Resume
// refuses a length that is not longer).
var lengthFlags = map[string]bool{"epochs": true, "iterations": true, "max-samples": true}

func lengthGiven(flags *pflag.FlagSet) bool {
	return flags.Changed("epochs") || flags.Changed("iterations") || flags.Changed("max-samples")
}

// resumeOnlyFlags are the flags of this session alone (train.Session),
// never saved in config.json, so they may accompany --resume (and a config
// file cannot set them).
var resumeOnlyFlags = map[string]bool{"resume": true, "iterations-limit": true, "no-progress": true, "cpuprofile": true,
	"rank": true, "world-size": true}

// checkResumeFlags refuses a resumed run any flag that would change what the
// run computes: it continues with the settings in its config.json.
func checkResumeFlags(flags *pflag.FlagSet, dir string) error {
	var fixed []string
	flags.Visit(func(f *pflag.Flag) {
		if !sessionFlags[f.Name] && !resumeOnlyFlags[f.Name] && !lengthFlags[f.Name] {
			fixed = append(fixed, "--"+f.Name)
		}
	})
	if len(fixed) > 0 {
		return fmt.Errorf("%s cannot change when resuming: %s continues with the settings in its config.json (only %s may change, and --epochs, --iterations or --max-samples may extend it)",
			strings.Join(fixed, ", "), dir, sessionFlagList())
	}
	return nil
}

// applyFlags sets on c the flags given on the command line that keep
// accepts. defineTrainFlags is the one map from flag names to Config
// fields, so the values are replayed onto a flag set bound to c.
func applyFlags(flags *pflag.FlagSet, c *train.Settings, keep func(name string) bool) error {
	onto := pflag.NewFlagSet("config", pflag.ContinueOnError)
	defineTrainFlags(onto, c)
	var err error
	flags.Visit(func(f *pflag.Flag) {
		if err != nil || onto.Lookup(f.Name) == nil || !keep(f.Name) {
			return
		}
		if setErr := onto.Set(f.Name, f.Value.String()); setErr != nil {
			err = fmt.Errorf("--%s: %w", f.Name, setErr)
		}
	})
	return err
}

// sessionFlagList names sessionFlags for an error message, from the map
// itself so that the two cannot disagree.
func sessionFlagList() string {
	var names []string
	for _, n := range slices.Sorted(maps.Keys(sessionFlags)) {
		names = append(names, "--"+n)
	}
	return strings.Join(names, ", ")
}

// resolveTrainConfig resolves a new run's settings: train.Defaults, or
// the preset (the --preset flag's, else the config file's), then the
// config file's settings (configPath; "" for none), then the flags the
// user set. A length given by the file or the flags replaces the one
// before it, whatever its unit.
func resolveTrainConfig(flags *pflag.FlagSet, fromFlags train.Settings, preset, configPath string) (train.Settings, error) {
	cfg := fromFlags
	var file []configSetting
	if configPath != "" {
		var err error
		if file, err = readConfigFile(configPath); err != nil {
			return cfg, err
		}
		if p, ok := presetOf(file); ok && !flags.Changed("preset") {
			if p != "" && p != "quick" {
				return cfg, fmt.Errorf("%s: unknown preset %q: the only preset is quick", configPath, p)
			}
			preset = p
		}
	}
	if preset != "" || configPath != "" {
		switch preset {
		case "":
			cfg = train.Defaults()
		case "quick":
			cfg = train.Quick()
		default:
			return cfg, fmt.Errorf("unknown --preset %q: the only preset is quick", preset)
		}
		if err := applySettings(&cfg, configPath, file); err != nil {
			return cfg, err
		}
		if lengthGiven(flags) {
			cfg.Epochs, cfg.Iterations, cfg.MaxSamples = 0, 0, 0
		}
		if err := applyFlags(flags, &cfg, func(string) bool { return true }); err != nil {
			return cfg, err
		}
	}
	if cfg.Epochs == 0 && cfg.Iterations == 0 && cfg.MaxSamples == 0 {
		return cfg, errors.New("give the training length: --epochs E, --iterations T or --max-samples S (or --preset quick), on the command line or in --config")
	}
	if cfg.Out == "" {
		name := cfg.Estimator
		if cfg.Loss != "" && cfg.Loss != "ntxent" {
			name += "-" + cfg.Loss
		}
		if preset != "" {
			name = preset + "-" + name
		}
		cfg.Out = fmt.Sprintf("runs/%s-%s", name, time.Now().Format("20060102-150405"))
	}
	return cfg, nil
}

// reportTrain prints the outcome of a run on stdout.
func reportTrain(cmd *cobra.Command, sum *train.Summary, err error) error {
	out := cmd.OutOrStdout()
	if sum.Rank != 0 {
		out = io.Discard // rank 0 reports for a run of several ranks
	}
	fmt.Fprintf(out, "run %s: %d iterations, %d images drawn, %d oracle evaluations, loss L_B %.4f (L_B - log(2N-1) %.4f), %.1f s\n",
		sum.Out, sum.Iterations, sum.SamplesDrawn, sum.Evaluations, sum.Loss, sum.LossExcess, sum.WallSeconds)
	if p := sum.Probe; p != nil {
		fmt.Fprintf(out, "linear probe: top-1 %.2f%%, top-5 %.2f%%", p.Top1, p.Top5)
		if p.BaselineTop1 != nil {
			fmt.Fprintf(out, "; same network at initialisation: top-1 %.2f%% (%+.2f points)", *p.BaselineTop1, p.Top1-*p.BaselineTop1)
		}
		fmt.Fprintln(out)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	if errors.Is(err, train.ErrIterationsLimit) {
		// Stopped as asked: a scheduler running training in chunks reads
		// exit status 0 (a signal or a failure exits 1).
		fmt.Fprintf(out, "stopped at --iterations-limit after iteration %d with a checkpoint; continue with: simclr train --resume %s\n", sum.Iterations, sum.Out)
		return nil
	}
	return err
}
