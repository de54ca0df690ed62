// Command dro runs the paper's first experiment, Sinkhorn distributionally
// robust regression (docs/definitions.md, section 9), with every estimator
// of package mlmc on the conditional-stochastic-optimisation oracle of
// package cso:
//
//	go run ./examples/dro [--dataset NAME] [--full] [--trials N] [--budget N] [--json] [--png DIR] [--levels] [--data-dir DIR]
//	go run ./examples/dro --dataset libsvm:PATH [...]        # your own data, LIBSVM rows "label idx:value ..."
//	go run ./examples/dro --dataset csv:PATH:TARGET [...]    # your own CSV with a header; TARGET a column name or 0-based index
//	go run ./examples/dro --markdown results/dro/summary.jsonl
//	go run ./examples/dro --full --tuned results/dro/summary.jsonl --json   # the reported trials again, without tuning
//
// The convex sets (housing, mg, mpg; a linear predictor) are scored by the
// closed form of the objective, and their optimum F* comes from Newton's
// method on it. The nonconvex sets (bike, gas; an MLP) are scored by an
// estimate on a fixed sample of rows and inner draws (the same for every
// point), and F* is the smallest value any run reached.
// Each method's step size and top level L are grid-searched on tuning seeds
// that the reported trials do not use. The report gives, per method, the
// median over trials of the generated samples at which the relative gap
// (F - F*)/(F(x0) - F*) first falls to 1%, 0.3% and 0.1%, and the same for
// the best setting of each method at each gap (best-tuned L-SGD against
// the best MLMC).
//
// The default run is housing; --dataset runs another; --full runs every data
// set. A file of your own runs with the linear predictor and its closed-form
// F*: libsvm:PATH, or csv:PATH:TARGET where TARGET is the label column's
// name, or its 0-based index when no column has that name, and every other
// column is a numeric feature. Its features are scaled to [-1, 1] by each
// one's minimum and maximum over the rows, as the named sets' are (a file
// already scaled so is unchanged); its labels are used as given, as the named
// linear sets' are. The run's first line says so. PATH is read as given, not
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
	"strings"
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
	budget  int64
	jsonOut bool
	pngDir  string
	levels  bool
	dataDir string
	hidden  int
	mdFrom  string
	tuned   string
	methods []methodSpec
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("dro", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dataset, "dataset", "housing", "data set: housing, mg, mpg (linear), bike, gas (MLP), or your own file with the linear predictor: libsvm:PATH, csv:PATH:TARGET (TARGET a column name or 0-based index)")
	fs.BoolVar(&o.full, "full", false, "every data set")
	fs.IntVar(&o.trials, "trials", 10, "reported trials per method (seeds 1..N)")
	fs.Int64Var(&o.budget, "budget", 0, "generated inner samples per run (0: the data set's default)")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object per data set instead of tables")
	fs.StringVar(&o.pngDir, "png", "", "write a PNG of the gap against generated samples per data set into this folder")
	fs.BoolVar(&o.levels, "levels", false, "print the per-level diagnostic at the optimum instead of optimising")
	fs.StringVar(&o.dataDir, "data-dir", defaultDataDir(), "folder holding the data files (housing_scale.txt, bike_hour.csv, ...)")
	fs.IntVar(&o.hidden, "hidden", 16, "hidden tanh units of the MLP (bike, gas)")
	methodList := fs.String("methods", "", "comma-separated methods to run (default all ten), e.g. L-SGD,V-MLMC,RT-MLMC")
	fs.StringVar(&o.tuned, "tuned", "", "take each method's settings from this --json output file instead of tuning, and rerun the trials")
	fs.StringVar(&o.mdFrom, "markdown", "", "print the BENCHMARKS.md tables of the summaries in this --json output file, and run nothing")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q: every setting is a flag (see --help)", fs.Arg(0))
	case o.trials < 1:
		return o, fmt.Errorf("--trials %d: use at least 1", o.trials)
	case o.budget < 0:
		return o, fmt.Errorf("--budget %d: use a positive number of samples, or 0 for the default", o.budget)
	case o.hidden < 1:
		return o, fmt.Errorf("--hidden %d: use at least 1", o.hidden)
	}
	if _, err := findDataset(o.dataset); err != nil {
		return o, err
	}
	o.methods = methodSpecs
	if *methodList != "" {
		o.methods = nil
		for _, name := range strings.Split(*methodList, ",") {
			i := slices.IndexFunc(methodSpecs, func(m methodSpec) bool { return strings.EqualFold(m.Label, strings.TrimSpace(name)) })
			if i < 0 {
				var all []string
				for _, m := range methodSpecs {
					all = append(all, m.Label)
				}
				return o, fmt.Errorf("--methods: unknown method %q: use some of %s", name, strings.Join(all, ","))
			}
			o.methods = append(o.methods, methodSpecs[i])
		}
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
		sums, err := readSummaries(o.mdFrom)
		if err != nil {
			return err
		}
		writeMarkdown(stdout, sums)
		return nil
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
		fStar := fmt.Sprintf("%.6g", t.fStar)
		if math.IsInf(t.fStar, 1) {
			fStar = "the lowest value any run reaches"
		}
		tuning := fmt.Sprintf("tuning %d settings x %d seeds", countSettings(o.methods), len(tuningSeeds))
		if o.tuned != "" {
			tuning = "settings from " + o.tuned
		}
		fmt.Fprintf(stderr, "%s: %s; %s; F(x0) = %.6g, F* = %s; budget %d samples; %s\n",
			name, ds.About, t.model.name(), t.f0, fStar, t.budget, tuning)
		var prior *summary
		if o.tuned != "" {
			sums, err := readSummaries(o.tuned)
			if err != nil {
				return fmt.Errorf("--tuned: %w", err)
			}
			for i := range sums {
				if sums[i].Dataset == ds.Name {
					prior = &sums[i]
				}
			}
			if prior == nil {
				return fmt.Errorf("--tuned %s has no data set %s", o.tuned, name)
			}
		}
		res, err := t.experiment(o.methods, o.trials, prior)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if o.pngDir != "" {
			if err := os.MkdirAll(o.pngDir, 0o755); err != nil {
				return err
			}
			path := filepath.Join(o.pngDir, "dro-"+ds.Name+".png")
			if err := t.plot(res, path); err != nil {
				return fmt.Errorf("%s: plot: %w", name, err)
			}
			fmt.Fprintln(stderr, "wrote", path)
		}
		if o.jsonOut {
			if err := json.NewEncoder(stdout).Encode(res.summary); err != nil {
				return err
			}
		} else {
			res.summary.print(stdout)
		}
	}
	return nil
}

func countSettings(methods []methodSpec) int {
	n := 0
	for _, m := range methods {
		n += len(grid(m))
	}
	return n
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
