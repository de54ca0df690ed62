// Command dro runs the paper's first experiment, Sinkhorn distributionally
// robust regression (docs/definitions.md, section 9), with every estimator
// of package mlmc on the conditional-stochastic-optimisation oracle of
// package cso, through the experiment harness (package experiment):
//
//	go run ./examples/dro [--dataset NAME] [--full] [--trials N] [--first-seed N] [--budget N] [--json] [--png DIR] [--levels] [--data-dir DIR]
//	go run ./examples/dro --dataset libsvm:PATH [...]        # your own data, LIBSVM rows "label idx:value ..."
//	go run ./examples/dro --dataset csv:PATH:TARGET [...]    # your own CSV with a header; TARGET a column name or 0-based index
//	go run ./examples/dro --markdown studies/dro/results/summary.jsonl
//	go run ./examples/dro --full --tuned studies/dro/results/summary.jsonl --json   # the reported trials again, without tuning
//	go run ./examples/dro --dataset mpg --method auto --gap 0.001 --json   # the auto method instead of the grid
//	go run ./examples/dro --grid-levels 3..10 --grid-steps 0.01,0.001 [...] # tune only that region of the grid
//	go run ./examples/dro --dataset mpg --tuning-from studies/dro/results/summary.jsonl --json   # run only the settings the file has not scored
//
// The convex sets (housing, mg, mpg; a linear predictor) are scored by the
// closed form of the objective, and their optimum F* comes from Newton's
// method on it. The nonconvex sets (bike, gas; an MLP) are scored by an
// estimate on a fixed sample of rows and inner draws (the same for every
// point), and F* is the smallest value any run reached.
// Each method's step size and top level L are grid-searched on tuning seeds
// that the reported trials do not use. The report gives, per method, the
// median over trials of the generated samples after which the relative gap
// (F - F*)/(F(x0) - F*) stays at or below 1%, 0.3% and 0.1% (and, beside
// it, the samples at which it first touches them), and the same for the
// best setting of each method at each gap (best-tuned L-SGD against the
// best MLMC).
//
// The default run is housing; --dataset runs another; --full runs every data
// set. A file of your own runs with the linear predictor and its closed-form
// F*: libsvm:PATH, or csv:PATH:TARGET where TARGET is the label column's
// name, or its 0-based index when no column has that name, and every other
// column is a numeric feature. Its features are scaled to [-1, 1] by each
// one's minimum and maximum over the rows, as the named sets' are (a file
// already scaled so is unchanged); its labels are used as given, as the named
// linear sets' are, and enter the objective unscaled; --scale-targets maps a
// linear set's labels to [-1, 1] instead, which is another objective with its
// own closed-form F*. The run's first line says which. PATH is read as given, not
// under --data-dir. --levels prints the per-level diagnostic (mean, variance and cost of
// H^l, fitted b and c, the bias F - F^l and the outer and inner parts of
// Var h^l) at the optimum instead.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/experiment/plots"
	"github.com/simclr-go/simclr/mlmc"
)

func main() {
	if err := mainErr(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "dro:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	dataset string
	full    bool
	trials  int
	// firstSeed is the first reported trial's seed (the trials run seeds
	// firstSeed, firstSeed+1, ...).
	firstSeed uint64
	budget    int64
	jsonOut   bool
	pngDir    string
	levels    bool
	dataDir   string
	hidden    int
	mdFrom    string
	tuned     string
	kinds     []mlmc.Kind
	// autoGaps, when set, run the auto method (package
	// mlmc/auto, through experiment) instead of the grid, planned for each gap.
	autoGaps []float64
	// gridLevels (lo, hi) and gridSteps, when set, restrict the tuning grid
	// to the settings with L in lo..hi (methods with a top level) and a
	// step among gridSteps: a cheaper search around known choices.
	gridLevels []int
	gridSteps  []float64
	// scaleTargets maps a linear data set's targets to [-1, 1] before
	// solving: another objective, with its own closed-form F*.
	scaleTargets bool
	// tuningFrom is a --json output whose tuning record of the data set
	// scores settings that are then not run again (a widened grid runs
	// only its new settings).
	tuningFrom string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("dro", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dataset, "dataset", "housing", "data set: housing, mg, mpg (linear), bike, gas (MLP), or your own file with the linear predictor: libsvm:PATH, csv:PATH:TARGET (TARGET a column name or 0-based index)")
	fs.BoolVar(&o.full, "full", false, "every data set")
	fs.IntVar(&o.trials, "trials", 10, "reported trials per method (seeds first-seed, first-seed+1, ...)")
	fs.Uint64Var(&o.firstSeed, "first-seed", 1, "the reported trials' seeds are first-seed, first-seed+1, ... (other seeds than the default 1..trials to check a change on trials it was not tuned on)")
	fs.Int64Var(&o.budget, "budget", 0, "generated inner samples per run (0: the data set's default)")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object per data set instead of tables")
	fs.StringVar(&o.pngDir, "png", "", "write a PNG of the gap against generated samples per data set into this folder")
	fs.BoolVar(&o.levels, "levels", false, "print the per-level diagnostic at the optimum instead of optimising")
	fs.StringVar(&o.dataDir, "data-dir", defaultDataDir(), "folder holding the data files (housing_scale.txt, bike_hour.csv, ...)")
	fs.BoolVar(&o.scaleTargets, "scale-targets", false, "map the targets of a linear data set (housing, mg, mpg, or your own file) to [-1, 1] by their minimum and maximum over the rows (svm-scale's -y -1 1) before solving. This changes the problem: the targets enter the Sinkhorn DRO objective through the residual inside exp(residual^2 / Lambda), so F(x0), F* (from the scaled problem's own closed form) and the gaps are those of the scaled targets, not comparable with a run on the targets as given (the default), and the data set's name gets the suffix -scaled-targets")
	fs.IntVar(&o.hidden, "hidden", 16, "hidden tanh units of the MLP (bike, gas)")
	methodList := fs.String("methods", "", "comma-separated methods to run (default all ten), e.g. L-SGD,V-MLMC,RT-MLMC or lsgd,vmlmc,rtmlmc")
	fs.StringVar(&o.tuned, "tuned", "", "take each method's settings from this --json output file instead of tuning, and rerun the trials")
	fs.StringVar(&o.mdFrom, "markdown", "", "print the study README's tables of the summaries in this --json output file, and run nothing")
	auto := experiment.AddAutoFlags(fs, "auto: instead of tuning the grid, run the auto method (continuation stages, their pilots counted in each trial's budget, choose the estimator, L, the level law and the step), planned for --gap",
		"with --method auto, the relative gap (F - F*)/(F(x0) - F*) to plan for, in (0, 1) (default: each of 0.01, 0.003, 0.001 in turn)")
	gridLevels := fs.String("grid-levels", "", "LO..HI: tune only the settings with top level L in LO..HI (methods that have one), e.g. 3..9")
	fs.StringVar(&o.tuningFrom, "tuning-from", "", "take the scores of the settings that this --json output file's tuning record holds for the data set (same budget, targets and seeds), and run only the settings it lacks; not for bike and gas, whose F* is the lowest value reached")
	gridSteps := fs.String("grid-steps", "", "comma-separated steps: tune only the settings with one of these steps, e.g. 0.01,0.001")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := o.parseRegion(*gridLevels, *gridSteps); err != nil {
		return o, err
	}
	var err error
	if o.autoGaps, err = auto.Gaps(gaps); err != nil {
		return o, err
	}
	if (o.gridLevels != nil || o.gridSteps != nil) && (o.tuned != "" || o.autoGaps != nil) {
		return o, errors.New("--grid-levels and --grid-steps restrict the tuning grid: drop them with --tuned or --method auto, which tune nothing")
	}
	if o.tuningFrom != "" && (o.tuned != "" || o.autoGaps != nil) {
		return o, errors.New("--tuning-from reuses an earlier grid search's scores: drop it with --tuned or --method auto, which tune nothing")
	}
	if o.autoGaps != nil && (*methodList != "" || o.tuned != "") {
		return o, errors.New("--method auto chooses its own estimator and settings: drop --methods and --tuned")
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q: every setting is a flag (see --help)", fs.Arg(0))
	case o.trials < 1:
		return o, fmt.Errorf("--trials %d: use at least 1", o.trials)
	case o.firstSeed < 1:
		return o, fmt.Errorf("--first-seed 0: seeds start at 1")
	case o.firstSeed <= tuningSeeds[len(tuningSeeds)-1] && o.firstSeed+uint64(o.trials)-1 >= tuningSeeds[0]:
		return o, fmt.Errorf("--first-seed %d with --trials %d: the reported seeds %d..%d meet the tuning seeds %d..%d; give seeds below %d or above %d",
			o.firstSeed, o.trials, o.firstSeed, o.firstSeed+uint64(o.trials)-1, tuningSeeds[0], tuningSeeds[len(tuningSeeds)-1], tuningSeeds[0], tuningSeeds[len(tuningSeeds)-1])
	case o.budget < 0:
		return o, fmt.Errorf("--budget %d: use a positive number of samples, or 0 for the default", o.budget)
	case o.hidden < 1:
		return o, fmt.Errorf("--hidden %d: use at least 1", o.hidden)
	}
	ds, err := findDataset(o.dataset)
	if err != nil {
		return o, err
	}
	if o.scaleTargets && (o.full || !ds.Convex) {
		what := o.dataset + " is"
		if o.full {
			what = "--full runs bike and gas, which are"
		}
		return o, fmt.Errorf("--scale-targets is for the linear data sets (housing, mg, mpg, libsvm:PATH, csv:PATH:TARGET): %s solved with the MLP, whose targets are already standardised; drop the flag or choose a linear data set", what)
	}
	if o.kinds, err = experiment.ParseKinds(*methodList); err != nil {
		return o, fmt.Errorf("--methods: %w", err)
	}
	return o, nil
}

// defaultDataDir is $SIMCLR_DRO_DATA, else data-cache/dro.
func defaultDataDir() string {
	if d := os.Getenv("SIMCLR_DRO_DATA"); d != "" {
		return d
	}
	return filepath.Join("data-cache", "dro")
}

func mainErr(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.mdFrom != "" {
		return experiment.WriteMarkdownOf(stdout, o.mdFrom)
	}
	names := []string{o.dataset}
	if o.full {
		names = nil
		for _, d := range datasets {
			names = append(names, d.Name)
		}
	}
	for _, name := range names {
		ds, _ := findDataset(name)
		t, err := newTask(ds, o)
		if err != nil {
			return err
		}
		if o.levels {
			rep, err := t.levels()
			if err != nil {
				return err
			}
			if o.jsonOut {
				// The table goes to stderr, for the log, beside the JSON.
				rep.print(stderr)
				if err := json.NewEncoder(stdout).Encode(rep); err != nil {
					return err
				}
			} else {
				rep.print(stdout)
			}
			continue
		}
		run := t.experiment
		if o.autoGaps != nil {
			run = t.autoExperiment
		}
		if err := run(o, stdout, stderr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// experiment tunes the methods (or takes --tuned's settings), runs the
// reported trials and writes the summary, the tables and the plot.
func (t *task) experiment(o options, stdout, stderr io.Writer) error {
	p, pr := t.problem(oracleMaxLevel), t.protocol(o.trials, o.firstSeed)
	// The grid takes minutes: its trials done and the time left.
	pr.Progress = stderr
	fStar := fmt.Sprintf("%.6g", t.fStar)
	if math.IsInf(t.fStar, 1) {
		fStar = "the lowest value any run reaches"
	}
	cands, err := o.region(append(t.grid.Methods(o.kinds), t.widened(o.kinds)...))
	if err != nil {
		return err
	}
	tuning := fmt.Sprintf("tuning %d settings x %d seeds", len(cands), len(tuningSeeds))
	var prior []experiment.Scored
	switch {
	case o.tuned != "":
		tuning = "settings from " + o.tuned
	case o.tuningFrom != "":
		if prior, err = experiment.PriorScores([]string{o.tuningFrom}, p, pr, nil); err != nil {
			return fmt.Errorf("--tuning-from: %w", err)
		}
		tuning += fmt.Sprintf(" (those of the %d scored in %s taken from it)", len(prior), o.tuningFrom)
	}
	fmt.Fprintf(stderr, "%s: %s; %s; F(x0) = %.6g, F* = %s; budget %d samples; %s\n",
		t.ds.Name, t.ds.About, t.model.name(), t.f0, fStar, t.budget, tuning)
	var tn *experiment.Tuning
	if o.tuned != "" {
		tn, err = tuningFromFile(o.tuned, t.ds.Name, o.kinds)
	} else {
		tn, err = experiment.TuneReusing(p, pr, cands, prior)
	}
	if err != nil {
		return err
	}
	res, err := experiment.Report(p, pr, tn)
	if err != nil {
		return err
	}
	if o.pngDir != "" {
		if err := os.MkdirAll(o.pngDir, 0o755); err != nil {
			return err
		}
		path := filepath.Join(o.pngDir, "dro-"+t.ds.Name+".png")
		panels := plots.Panels(res, []string{t.ds.Name + ": plain", t.ds.Name + ": variance reduced (VR)"}, plots.ByVR)
		if err := plots.WritePNG(path, panels); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		fmt.Fprintln(stderr, "wrote", path)
	}
	if o.jsonOut {
		return res.Summary.WriteJSON(stdout)
	}
	experiment.WriteMarkdown(stdout, []experiment.Summary{res.Summary})
	return nil
}

// autoExperiment runs the auto method on the reported seeds, planned for
// each gap of o.autoGaps in turn: one summary per gap, whose trials'
// records say what each stage chose and why.
func (t *task) autoExperiment(o options, stdout, stderr io.Writer) error {
	p, pr := t.problem(oracleMaxLevel), t.protocol(o.trials, o.firstSeed)
	for _, g := range o.autoGaps {
		fmt.Fprintf(stderr, "%s: %s; %s; F(x0) = %.6g, F* = %.6g; budget %d samples; auto planned for gap %g\n",
			t.ds.Name, t.ds.About, t.model.name(), t.f0, t.fStar, t.budget, g)
		res, err := experiment.Report(p, pr, experiment.AutoFixed(g, stderr))
		if err != nil {
			return err
		}
		if o.jsonOut {
			if err := res.Summary.WriteJSON(stdout); err != nil {
				return err
			}
			continue
		}
		experiment.WriteMarkdown(stdout, []experiment.Summary{res.Summary})
	}
	return nil
}

// loadData loads a data set, naming the folder and the fix when a file is
// missing.
func loadData(ds dataset, dir string) (*Data, error) {
	d, err := ds.Load(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("data set %s: %w (set --data-dir or SIMCLR_DRO_DATA to the folder holding the DRO data files, or copy them into data-cache/dro with scripts/fetch_data.sh dro --from FOLDER)", ds.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("data set %s: %w", ds.Name, err)
	}
	d.Name = ds.Name
	return d, nil
}

// parseRegion reads --grid-levels (LO..HI) and --grid-steps (a list).
func (o *options) parseRegion(levels, steps string) error {
	if levels != "" {
		lo, hi, ok := strings.Cut(levels, "..")
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if !ok || errA != nil || errB != nil || a < 0 || b < a {
			return fmt.Errorf("--grid-levels %q: give LO..HI with 0 <= LO <= HI, e.g. 3..9", levels)
		}
		o.gridLevels = []int{a, b}
	}
	if steps != "" {
		for _, f := range strings.Split(steps, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("--grid-steps %q: %q is not a positive step; give a comma-separated list, e.g. 0.01,0.001", steps, f)
			}
			o.gridSteps = append(o.gridSteps, v)
		}
	}
	return nil
}

// region is the settings of cands within --grid-levels and --grid-steps;
// an error when it leaves a method none.
func (o options) region(cands []experiment.Method) ([]experiment.Method, error) {
	if o.gridLevels == nil && o.gridSteps == nil {
		return cands, nil
	}
	// The grid's own levels and steps (widened on some data sets), for the errors.
	var levels []int
	var steps []float64
	for _, m := range cands {
		if !slices.Contains(levels, m.Config.MaxLevel) {
			levels = append(levels, m.Config.MaxLevel)
		}
		if !slices.Contains(steps, m.Step) {
			steps = append(steps, m.Step)
		}
	}
	slices.Sort(levels)
	slices.Sort(steps)
	for _, v := range o.gridSteps {
		if !slices.Contains(steps, v) {
			return nil, fmt.Errorf("--grid-steps: %g is not a step of this grid (steps %v): pick steps from it", v, steps)
		}
	}
	out := slices.DeleteFunc(slices.Clone(cands), func(m experiment.Method) bool {
		l := m.Config.MaxLevel
		outL := o.gridLevels != nil && !m.Family().Unbounded() && (l < o.gridLevels[0] || l > o.gridLevels[1])
		return outL || o.gridSteps != nil && !slices.Contains(o.gridSteps, m.Step)
	})
	for _, k := range o.kinds {
		if !slices.ContainsFunc(out, func(m experiment.Method) bool { return m.Kind == k }) {
			return nil, fmt.Errorf("--grid-levels/--grid-steps leave %s no setting of the grid (levels %v, steps %v): widen them", experiment.Family{Kind: k}.Name(), levels, steps)
		}
	}
	return out, nil
}
