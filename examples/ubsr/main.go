// Command ubsr optimises utility-based shortfall risk (docs/definitions.md,
// section 12) with the estimators of package mlmc on the UBSR oracle of
// package ubsr: a 3-asset Gaussian portfolio with three losses (entropic,
// quadratic-hinge, expectile), each with its exact optimum, and a 20-asset
// Student-t factor model with the quadratic-hinge loss, scored on a large
// sample-average objective.
//
//	go run ./examples/ubsr [--instance gaussian-3|student-t-20|all] [--loss NAME|all] [--levels] [--json FILE]
//	go run ./examples/ubsr --method auto [--gap G] [--loss NAME|all] [--budget N] [--json FILE]
//
// Without --levels it prints each instance: SR at the start x0 (the uniform
// portfolio), its gradient, and the optimum theta*, SR* on the budget plane
// sum theta = 1. --levels runs the per-level diagnostic at x0: the bias
// |E h^l - grad SR| and Var h^l with 95% intervals, Var H^l and the cost
// per level, and the fitted rates a (on the squared bias, the paper's
// convention), b and c against the paper's a = b = c = 1; --json writes
// its reports. --method auto runs the auto method (continuation stages,
// their pilots counted in each trial's budget, choose the estimator, L, the
// level law and the step) on the reported seeds instead of the grid, for
// --gap or for each of 1%, 0.3%, 0.1% in turn; --json then writes one
// summary per instance and gap as JSON lines, each trial's record of its
// stages and plans with their reasons.
// --instance student-t-20 --reference-floor K estimates the relative gap its
// sample-average reference objective leaves at the true minimiser, from the
// minimisers of K independent sample objectives of 4x the draws.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/mlmc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ubsr:", err)
		os.Exit(1)
	}
}

// settings are the command line's.
type settings struct {
	Instance, Loss string
	Levels         bool
	JSON           string
	// Run runs the experiment: tuning on seeds 1001-1003, then Trials
	// reported trials of each family's chosen settings.
	Run    bool
	Budget int64
	Trials int
	// FirstSeed is the first reported trial's seed (the trials run seeds
	// FirstSeed, FirstSeed+1, ...).
	FirstSeed uint64
	Workers   int
	Grid      string
	// Methods is --methods, Kinds the estimators it names.
	Methods string
	Kinds   []mlmc.Kind
	Out     string
	// FirstTouch also reports each family's best setting per target by
	// the first-touch rule.
	FirstTouch bool
	// LevelsFrom is a --levels JSON file to take the rates from instead of
	// measuring them again.
	LevelsFrom string
	// Refit rebuilds the outputs of an earlier --run from its summary
	// files under Out.
	Refit bool
	// TuningFrom is an earlier run's summary (or a comma-separated list of
	// them) whose scored settings are reused instead of run again; Widen
	// the rounds of widening along the axes where a choice sits at an edge.
	TuningFrom string
	Widen      int
	// Targets are the relative gaps of --run (default targets).
	Targets []float64
	// TuningSeeds is how many tuning seeds (1001, 1002, ...) score a
	// setting.
	TuningSeeds int
	// Auto runs the auto method (package mlmc/auto, through experiment) instead of
	// the grid, planned for each of AutoGaps in turn.
	Auto     bool
	AutoGaps []float64
	// ReferenceFloor is how many independent sample-average objectives
	// estimate the student-t reference objective's floor (0: none).
	ReferenceFloor int
}

func parse(args []string) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("ubsr", flag.ContinueOnError)
	fs.StringVar(&s.Instance, "instance", "gaussian-3", "gaussian-3, student-t-20 or all")
	fs.StringVar(&s.Loss, "loss", "all", "the Gaussian instance's loss: entropic, quadratic-hinge, expectile or all")
	fs.BoolVar(&s.Levels, "levels", false, "run the per-level diagnostic at x0")
	fs.StringVar(&s.JSON, "json", "", "write the reports as JSON to this file")
	fs.BoolVar(&s.Run, "run", false, "run the experiment: tune every estimator, report its trials, fit the complexity exponents")
	fs.Int64Var(&s.Budget, "budget", 1<<21, "samples per run")
	fs.IntVar(&s.Trials, "trials", 10, "reported trials per chosen setting")
	fs.Uint64Var(&s.FirstSeed, "first-seed", 1, "the reported trials' seeds are first-seed, first-seed+1, ... (other seeds than the default 1..trials to check a change on trials it was not tuned on)")
	fs.IntVar(&s.Workers, "workers", 2, "runs at a time")
	fs.StringVar(&s.Grid, "grid", "paper", "tuning grid: paper (L = 0..10, steps 4..0.25, two schedules, D1 = 1, 10) small (L = 6, 8, 10, steps 2, 1, 0.5 decaying with t0 = 300, D1 = 10) or long (L = 10..13, steps 2, 1, 0.5 decaying with t0 = 10, D1 = 10: for budgets that reach gaps below 0.1%)")
	fs.StringVar(&s.Methods, "methods", "all", "estimators to run: all, or a comma-separated list of mlmc names (lsgd, rtmlmc, vr-rtmlmc, ...) or table names (L-SGD, VR RT-MLMC, ...)")
	fs.BoolVar(&s.FirstTouch, "first-touch", false, "also report each family's best setting per target by the first-touch rule (more reported runs)")
	fs.StringVar(&s.LevelsFrom, "levels-from", "", "with --run, take the rates a, b, c, v from this --levels JSON file instead of measuring them again")
	fs.BoolVar(&s.Refit, "refit", false, "with --run and --levels-from: refit the exponents and rewrite --json from the summary files under --out, without running")
	fs.StringVar(&s.TuningFrom, "tuning-from", "", "with --run: reuse the scored settings of this earlier summary file, or of these comma-separated files (same --budget and --targets), instead of running them again")
	fs.IntVar(&s.Widen, "widen", 0, "with --run: rounds of widening, each tuning the settings one value beyond every axis (L, step, t0, D1) where a choice sits at the edge of what its family tried")
	fs.StringVar(&s.Out, "out", "studies/shortfall-risk/results", "folder of the run's summaries, tables and plots")
	fs.IntVar(&s.TuningSeeds, "tuning-seeds", 3, "with --run: how many tuning seeds (1001, 1002, ...) score each setting")
	fs.IntVar(&s.ReferenceFloor, "reference-floor", 0, "with --instance student-t-20: minimise this many independent sample-average objectives of 4x the reference's draws and score their minimisers on the reference objective, estimating the relative gap a method converging to the true minimiser cannot go below")
	targetList := fs.String("targets", "", "with --run: the relative gaps to count samples at, decreasing and comma-separated, the headline 0.01, 0.003, 0.001 among them (default 0.1,0.03,0.01,0.003,0.001)")
	auto := experiment.AddAutoFlags(fs, "auto: instead of tuning the grid, run the auto method (continuation stages, their pilots counted in each trial's budget, choose the estimator, L, the level law and the step), planned for --gap; with --json, one summary per gap as JSON lines",
		"with --method auto, the relative gap (SR - SR*)/(SR(x0) - SR*) to plan for, in (0, 1) (default: each of 0.01, 0.003, 0.001 in turn)")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	if s.AutoGaps, err = auto.Gaps(headline); err != nil {
		return s, err
	}
	s.Auto = s.AutoGaps != nil
	for _, f := range []string{"run", "levels", "methods", "grid", "refit", "levels-from", "first-touch", "tuning-from", "widen", "targets", "tuning-seeds"} {
		if s.Auto && set[f] {
			return s, fmt.Errorf("--method auto chooses its own estimator and settings and runs the trials: drop --%s", f)
		}
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("unexpected argument %q: every setting is a flag (see --help)", fs.Arg(0))
	}
	if !slices.Contains([]string{"gaussian-3", "student-t-20", "all"}, s.Instance) {
		return s, fmt.Errorf("--instance %q: use gaussian-3, student-t-20 or all", s.Instance)
	}
	if !slices.Contains([]string{"paper", "small", "long"}, s.Grid) {
		return s, fmt.Errorf("--grid %q: use paper, small or long", s.Grid)
	}
	if s.Refit && (!s.Run || s.LevelsFrom == "") {
		return s, fmt.Errorf("--refit needs --run and --levels-from: it rebuilds a run's outputs from its files")
	}
	if (s.TuningFrom != "" || s.Widen != 0) && (!s.Run || s.Refit) {
		return s, fmt.Errorf("--tuning-from and --widen go with --run (without --refit): they change how the grid is tuned")
	}
	s.Targets = targets
	if *targetList != "" {
		if !s.Run || s.Refit {
			return s, fmt.Errorf("--targets goes with --run (without --refit)")
		}
		s.Targets = nil
		for _, f := range strings.Split(*targetList, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(v > 0 && v < 1) || (len(s.Targets) > 0 && v >= s.Targets[len(s.Targets)-1]) {
				return s, fmt.Errorf("--targets %q: give decreasing gaps in (0, 1), e.g. 0.1,0.01,0.001", *targetList)
			}
			s.Targets = append(s.Targets, v)
		}
		for _, h := range headline {
			if !slices.Contains(s.Targets, h) {
				return s, fmt.Errorf("--targets %q: include the headline gaps %v", *targetList, headline)
			}
		}
	}
	if s.TuningSeeds < 1 {
		return s, fmt.Errorf("--tuning-seeds %d: give 1 or more", s.TuningSeeds)
	}
	if s.Widen < 0 {
		return s, fmt.Errorf("--widen %d: give a number of rounds, 0 or more", s.Widen)
	}
	if s.ReferenceFloor < 0 {
		return s, fmt.Errorf("--reference-floor %d: give a number of objectives, 1 or more", s.ReferenceFloor)
	}
	if s.ReferenceFloor > 0 && (s.Instance != "student-t-20" || s.Run || s.Levels || s.Auto) {
		return s, fmt.Errorf("--reference-floor goes alone with --instance student-t-20 (the one instance scored on a sample objective), without --run, --levels or --method")
	}
	if s.FirstSeed < 1 {
		return s, fmt.Errorf("--first-seed 0: seeds start at 1")
	}
	if last := s.FirstSeed + uint64(max(s.Trials, 1)) - 1; s.FirstSeed <= 1000+uint64(max(s.TuningSeeds, 1)) && last >= 1001 {
		return s, fmt.Errorf("--first-seed %d with --trials %d: the reported seeds %d..%d meet the tuning seeds 1001..%d; give seeds below 1001 or above %d",
			s.FirstSeed, s.Trials, s.FirstSeed, last, 1000+max(s.TuningSeeds, 1), 1000+max(s.TuningSeeds, 1))
	}
	if (s.Run || s.Auto) && (s.Budget < 1 || s.Trials < 1 || s.Workers < 1) {
		return s, fmt.Errorf("--budget %d, --trials %d, --workers %d: each must be positive", s.Budget, s.Trials, s.Workers)
	}
	if s.Kinds, err = experiment.ParseKinds(s.Methods); err != nil {
		return s, fmt.Errorf("--methods: %w", err)
	}
	if s.Loss != "all" && lossIndex(s.Loss) < 0 {
		return s, fmt.Errorf("--loss %q: use entropic, quadratic-hinge, expectile or all", s.Loss)
	}
	return s, nil
}

func lossIndex(name string) int {
	for k, l := range losses {
		if l.Name == name {
			return k
		}
	}
	return -1
}

// instances makes the instances the settings name.
func instances(s settings) ([]*instance, error) {
	var out []*instance
	if s.Instance != "student-t-20" {
		for k, l := range losses {
			if s.Loss != "all" && s.Loss != l.Name {
				continue
			}
			in, err := gaussianInstance(k)
			if err != nil {
				return nil, err
			}
			out = append(out, in)
		}
	}
	if s.Instance != "gaussian-3" {
		in, err := studentInstance()
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

func run(args []string, w io.Writer) error {
	s, err := parse(args)
	if err != nil {
		return err
	}
	ins, err := instances(s)
	if err != nil {
		return err
	}
	if s.Auto {
		return runAuto(ins, s, w)
	}
	var reports []any
	for _, in := range ins {
		in.print(w)
		if s.ReferenceFloor > 0 {
			rep, err := referenceFloor(in, s.ReferenceFloor, w)
			if err != nil {
				return err
			}
			reports = append(reports, rep)
		} else if s.Run {
			g := map[string]experiment.Grid{"paper": paperGrid, "small": smallGrid, "long": longGrid}[s.Grid]
			var o *outcome
			if s.Refit {
				o, err = refit(in, s, w)
			} else {
				o, err = runExperiment(in, s, g, s.Kinds, w)
			}
			if err != nil {
				return fmt.Errorf("%s, %s: %w", in.Name, in.Loss.Name, err)
			}
			if !s.Refit {
				if err := os.MkdirAll(s.Out, 0o755); err != nil {
					return fmt.Errorf("--out: %w", err)
				}
				if err := o.write(s.Out); err != nil {
					return err
				}
			}
			o.print(w)
			reports = append(reports, o.summaryJSON())
		} else if s.Levels {
			rep, err := measureLevels(in)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", in.Name, in.Loss.Name, err)
			}
			rep.print(w)
			reports = append(reports, rep)
		} else {
			reports = append(reports, in.summary())
		}
	}
	if s.JSON != "" {
		b, err := json.MarshalIndent(reports, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(s.JSON, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	return nil
}

// summary is an instance's ground truth as JSON.
func (in *instance) summary() map[string]any {
	return map[string]any{"instance": in.Name, "loss": in.Loss.Name, "lambda": in.Lambda, "x0": in.X0,
		"SR0": in.SR0, "grad0": in.Grad0, "SR_star": in.SRStar, "SR_star_spread": in.Spread,
		"theta_star": in.ThetaStar, "reference": in.Reference}
}

func (in *instance) print(w io.Writer) {
	fmt.Fprintf(w, "%s, %s loss (lambda = %g): SR(x0) = %.10f, grad SR(x0) = %.6f\n", in.Name, in.Loss.Name, in.Lambda, in.SR0, in.Grad0)
	fmt.Fprintf(w, "  theta* = %.6f, SR* = %.10f, SR(x0) - SR* = %.6g (%s)\n", in.ThetaStar, in.SRStar, in.SR0-in.SRStar, in.Reference)
	if sp := in.Spread; sp != nil {
		fmt.Fprintf(w, "  the minimum over %d independent samples of %d draws (seeds %d-%d): mean %.6f, sd %.2g, range [%.6f, %.6f] (a spread, not a standard error: with t_4 shocks E X^4 is infinite, and with it the delta method's variance)\n",
			len(sp.Minima), sp.Draws, sp.Seeds[0], sp.Seeds[len(sp.Seeds)-1], sp.Mean, sp.SD, sp.Range[0], sp.Range[1])
	}
}
