package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/simclr-go/simclr/augment"
	"github.com/simclr-go/simclr/backend"
	"github.com/simclr-go/simclr/contrastive"
	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/runfolder"
	"github.com/simclr-go/simclr/train"
)

// levelsResult is `simclr levels --json`: the measurement and what it was
// measured on.
type levelsResult struct {
	Checkpoint  string  `json:"checkpoint"`
	Dataset     string  `json:"dataset"`
	TrainImages int     `json:"train_images"`
	Halves      string  `json:"halves"`
	Temperature float64 `json:"temperature"`
	*mlmc.LevelsReport
}

func newLevelsCmd() *cobra.Command {
	var e evalTarget
	var draws, minLevel, maxLevel, workers int
	var halves string
	cmd := &cobra.Command{
		Use:   "levels",
		Short: "Per-level diagnostics: can MLMC pay off for this network and data?",
		Long: `levels measures, at the network's current parameters, what the MLMC estimators
depend on (docs/definitions.md, section 4 "Contrastive learning as a biased
oracle"): per level l, K independent queries of H^l (h^l at the minimum level) give the norm of its mean, its variance (trace of the
covariance) and the cost of a query in images and milliseconds; least squares
on log2 fit the rates b (Var H^l ~ 2^-bl) and c (cost ~ 2^cl) with standard
errors; the telescoping check compares the sum over levels of the mean H^l
with the mean of K draws of h^L (exact constructions pass it); and each
estimator's variance x cost per iteration is predicted relative to L-SGD's.
Levels, temperature and halves default to the run's settings.`,
		Example: `  simclr levels --run runs/quick --draws 32
  simclr levels --run runs/quick --random-init --halves separate --json
  simclr levels --checkpoint model.safetensors --dataset cifar10 --data-dir data --max-level 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if draws < 3 {
				return fmt.Errorf("--draws %d: a variance and its standard error need at least 3 draws per level", draws)
			}
			// Levels, temperature, halves and rates: the run's, else the
			// defaults, as open read them.
			b, m, splits, cfg, err := e.open(cmd)
			if err != nil {
				return err
			}
			defer backend.Close(b)
			defer m.Free()
			if loss, err := contrastive.ParseLoss(cfg.Loss); err == nil && !loss.Supports().Levels {
				// H^l is NT-Xent's; the decoupled losses have no levels
				// (docs/definitions.md, section 10).
				fmt.Fprintf(cmd.ErrOrStderr(), "levels: %s trained with the %s loss, which has no levels (one batch an iteration; SogCLR's loss also depends on the images seen before): these are NT-Xent's levels on its network\n", e.run, loss)
			}
			if cmd.Flags().Changed("min-level") {
				cfg.MinLevel = minLevel
			}
			if cmd.Flags().Changed("max-level") {
				cfg.MaxLevel = maxLevel
			}
			if cmd.Flags().Changed("halves") {
				cfg.Halves = halves
			}
			h, err := contrastive.ParseHalves(cfg.Halves)
			if err != nil {
				return fmt.Errorf("--halves %w", err)
			}
			cfg.Workers = workers
			aug := augment.SimCLR()
			if cfg.Augment != "" {
				if aug, err = augment.Preset(cfg.Augment); err != nil {
					return fmt.Errorf("augment %q of %s: augmentation: %w", cfg.Augment, filepath.Join(e.run, runfolder.ConfigFile), err)
				}
			}
			errw := cmd.ErrOrStderr()
			runDir := e.run
			if e.randomInit {
				runDir = "" // x_(t-1) of the run is not a step from the initial network
			}
			run := contrastive.Settings{MinLevel: cfg.MinLevel, MaxLevel: cfg.MaxLevel, Temperature: cfg.Temperature,
				Halves: h, Augment: aug, Seed: cfg.Seed, Workers: cfg.Workers,
				B: cfg.B, C: cfg.C, D1: cfg.D1, D2: cfg.D2, QE: cfg.QE}
			rep, err := contrastive.MeasureLevels(b, m, splits, run, contrastive.LevelsOptions{Draws: draws, RunDir: runDir,
				Progress: func(level int, diff bool, k int) {
					if k == draws {
						name := "h"
						if diff {
							name = "H"
						}
						fmt.Fprintf(errw, "%s^%d: %d draws done\n", name, level, k)
					}
				}})
			if err != nil {
				return levelsSettingError(err, cfg)
			}
			ckpt := e.checkpoint
			if e.randomInit {
				ckpt = "(random initialisation)"
			}
			res := levelsResult{Checkpoint: ckpt, Dataset: splits.Train.Name, TrainImages: splits.Train.Len(),
				Halves: h.String(), Temperature: cfg.Temperature, LevelsReport: rep}
			if e.asJSON {
				return printJSON(cmd, res)
			}
			return writeLevelsTable(cmd.OutOrStdout(), res)
		},
	}
	e.define(cmd)
	f := cmd.Flags()
	f.IntVar(&draws, "draws", 32, "independent queries per level, K (and of h^L)")
	f.IntVar(&minLevel, "min-level", 1, "lowest level l_min (default: the run's)")
	f.IntVar(&maxLevel, "max-level", 9, "top level L (default: the run's)")
	f.StringVar(&halves, "halves", contrastive.HalvesShared.String(), "H^l construction: shared (one pass) or separate (three passes, exact with batch norm); default: the run's")
	f.IntVar(&workers, "workers", 0, "augmentation goroutines (0: one per CPU)")
	return cmd
}

func writeLevelsTable(w io.Writer, r levelsResult) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "per-level diagnostics of %s on %s (%d images), halves %s, temperature %g, %d draws per level\n\n",
		r.Checkpoint, r.Dataset, r.TrainImages, r.Halves, r.Temperature, r.Draws)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\tY\timages\t|mean Y|\tVar Y\t± s.e.\tms/query\t± s.e.\t")
	row := func(st mlmc.LevelStat, name string) {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.4g\t%.4g\t%.2g\t%.4g\t%.2g\t\n", st.Level, name, st.Images, st.MeanNorm,
			st.Var, st.VarSE, 1000*st.Seconds, 1000*st.SecondsSE)
	}
	for _, st := range r.Levels {
		name := fmt.Sprintf("H^%d", st.Level)
		if !st.Diff {
			name = fmt.Sprintf("h^%d", st.Level)
		}
		row(st, name)
	}
	row(r.Top, fmt.Sprintf("h^%d (top)", r.Top.Level))
	tw.Flush()

	fit := func(f mlmc.RateFit) string {
		if math.IsNaN(f.Rate) {
			return "n/a (" + f.Note + ")"
		}
		s := fmt.Sprintf("%.3f ± %.3f", f.Rate, f.SE)
		if math.IsNaN(f.SE) {
			s = fmt.Sprintf("%.3f", f.Rate)
		}
		return s + fmt.Sprintf(" (levels %d..%d)", f.From, f.To)
	}
	fmt.Fprintf(&sb, "\nrates (assumed b = %g, c = %g):\n", r.B, r.C)
	fmt.Fprintf(&sb, "  b, Var H^l ~ 2^-bl:      %s\n", fit(r.FitB))
	fmt.Fprintf(&sb, "  c in time, ms ~ 2^cl:    %s\n", fit(r.FitCTime))
	fmt.Fprintf(&sb, "  c in images:             %s\n", fit(r.FitCImages))
	t := r.Telescope
	verdict := "passes"
	if !t.Pass {
		verdict = "FAILS"
	}
	zs := make([]string, len(t.Z))
	for i, z := range t.Z {
		zs[i] = fmt.Sprintf("%.2f", z)
	}
	fmt.Fprintf(&sb, "\ntelescoping: |sum_l mean Y_l - mean h^%d| = %.4g, noise level %.4g (|mean h^%d| = %.4g)\n",
		r.MaxLevel, t.DiffNorm, t.NoiseNorm, r.MaxLevel, t.TopNorm)
	fmt.Fprintf(&sb, "  z on %d random directions: %s; %s at %g%% (|z| < %.2f)\n",
		len(t.Z), strings.Join(zs, " "), verdict, 100*t.Confidence, t.Critical)

	fmt.Fprintf(&sb, "\nvariance x cost per iteration, relative to L-SGD (one draw of h^%d):\n\n", r.MaxLevel)
	tw = tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "estimator\tVar\timages\tms\tvar x images\tvar x time\t")
	for _, p := range r.Estimators {
		fmt.Fprintf(tw, "%s\t%.4g\t%.4g\t%.4g\t%.3g\t%.3g\t\n", p.Name, p.Var, p.Images, 1000*p.Seconds, p.RelImages, p.RelSeconds)
	}
	tw.Flush()
	sb.WriteString("  -opt: the allocation (n_l or q_l) that minimises variance x cost for these levels\n")
	if !hasVR(r.Estimators) {
		sb.WriteString("  vr-*: not predicted: the corrections need x_(t-1), which only a VR run's state file holds (--run)\n")
	} else {
		fmt.Fprintf(&sb, "  vr-*: D1 = %d, D2 = %d, QE = %d; corrections measured at the run's last step x_t - x_(t-1) (an upper bound)\n",
			r.D1, r.D2, r.QE)
	}
	fmt.Fprintf(&sb, "\nverdict: %s\n", r.Verdict)
	_, err := io.WriteString(w, sb.String())
	return err
}

// levelsSettingError words an error of contrastive.MeasureLevels about
// one of its settings as the flag that set it.
func levelsSettingError(err error, cfg train.Settings) error {
	var bad *contrastive.SettingError
	if !errors.As(err, &bad) {
		return err
	}
	switch bad.Setting {
	case "MinLevel":
		return fmt.Errorf("--min-level %d: %w", cfg.MinLevel, err)
	case "MaxLevel":
		return fmt.Errorf("--max-level %d: %w", cfg.MaxLevel, err)
	}
	return err
}

func hasVR(preds []mlmc.Prediction) bool {
	for _, p := range preds {
		if k, err := mlmc.ParseKind(p.Name); err == nil && k.VR {
			return true
		}
	}
	return false
}
