// Command pricing runs the paper's pricing and staffing problem
// (docs/definitions.md, section 8 "Pricing and staffing"), a ground-truth test
// of package mlmc: a GI/GI/1 queue whose service rate mu and price p are chosen
// by projected stochastic gradient descent with L-SGD, RT-MLMC and VR RT-MLMC
// gradients (L = 18), for the Erlang, exponential and hyperexponential service
// laws, against the optimum of the closed-form M/G/1 objective.
//
//	go run ./examples/pricing [--construction paper|coupled|tail] [--window M] [--full] [--law NAME] [--seeds S] [--first-seed N] [--json] [--png FILE] [--tune] [--method auto [--gap G]]
//	go run ./examples/pricing --targets gap [--budget B] [--law NAME] [--seeds S] [--json] [--method auto [--gap G]]
//	go run ./examples/pricing --markdown studies/pricing/results/coupled.jsonl
//
// It runs through the experiment harness (package experiment) and prints,
// per law and method, the median number of simulated queue steps after
// which the decision is within 1% of (mu*, p*) and stays there, read at the
// budgets 2^k (a budget-free figure: a run with budget 2^k returns the
// decision the longer run had there, so the figure is the smallest 2^k
// from which every budget 2^k up to the method's largest ends within 1%),
// the first touch beside it, with intervals and L-SGD's ratio to each
// method; it writes a PNG of the median relative error |x - x*|/|x*| against
// simulated steps with quartile bands, and with --json one JSON line per
// law.
//
// The constructions of h^l and H^l (oracle.go): paper (the paper's m-step
// windows at 2^l and 2^(l-1) of one trajectory, m = --window), coupled (the
// default: terminal values of two queues on the same random numbers,
// coalescing) and tail (tail averages: level l averages the first 2^l
// steps of one trajectory). With paper and tail H^l cancels nothing, so
// MLMC loses to L-SGD by the variance-cost ratio that
// TestRTMLMCVarianceCostAgainstLSGD measures, contrary to the paper's ~10x
// gain; coupled, the standard MLMC coupling for steady-state means,
// reproduces it.
//
// The default run is the exponential law with seeds 1 and 2 (about a
// minute of both cores); --full runs the experiment behind studies/pricing,
// all three laws with 10 seeds (about half an hour of CPU per
// construction). --law and --seeds override either.
//
// --targets gap reads the targets on the relative gap of the closed-form
// objective instead, 1%, 0.3% and 0.1%, as the DRO and shortfall-risk
// studies do, with each method's setting searched on tuning seeds and
// widened (gaps.go): the comparison the auto study holds auto to.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/experiment/plots"
	"github.com/simclr-go/simclr/mlmc"
)

// maxLevel is L: the longest trajectory has 2^18 steps.
const maxLevel = 18

// methods are the three optimisers compared for a construction, with the
// step sizes chosen as follows (all with the preconditioner of
// precondition).
//
// tail (tail averages; docs/definitions.md, section 8 "Pricing and staffing"):
//
//   - L-SGD: h^18 is nearly exact (its variance is about 1e-4), so the step
//     is the largest the curvature allows, 0.5, constant: 30-40 iterations.
//   - RT-MLMC: one H^i/q_i per iteration costs 10.5 steps on average but
//     has variance about 1e3 (b = c = 1: every level contributes alike), so
//     a step of 0.5 would be noise; the step starts at 0.02 and decays as
//     1/(1 + t/2000) so that the noise averages out over many iterations.
//   - VR RT-MLMC: a fresh mean of D1 = 256 RT draws every QE = 20
//     iterations and D2 = 8 draws per correction; the corrections cancel
//     most noise between nearby decisions (common random numbers), which
//     allows a step of 0.1, decaying as 1/(1 + t/500).
//
// Every run gets the same budget of simulated queue steps: 64 L-SGD
// iterations.
//
// coupled (end-coupled terminal values): h^18 has the variance of W + X
// itself (1 to 33 at the optima), so every method needs decaying steps:
// 0.5/(1 + t/100) for L-SGD with n_L = 1 (about 100 iterations of descent,
// then Robbins-Monro averaging of the noise) and 0.1/(1 + t/1000) for the
// RT methods, whose iterations are about 10^4 times cheaper and noisier.
// These are one considered guess per method, NOT tuned: --tune runs
// tuningGrid (six settings per method on seeds 1001-1002), but it needs
// about 20 minutes of both cores and was not run for the settings below.
// L-SGD's budget is larger (2^34 simulated
// steps, 65536 draws of h^18) because it needs it; the RT methods' is 2^28.
// Steps to 1% are read at the budgets 2^k.
//
// paper: the coupled settings. With m = 1, h^L has the law of the coupled
// construction's h^L, so L-SGD is the same method; the RT methods get the
// same steps so that only the construction differs.
func methods(c Construction) []experiment.Method {
	base := mlmc.Config{MinLevel: 0, MaxLevel: maxLevel}
	vr := base
	vr.D1, vr.D2, vr.QE = 256, 8, 20
	lsgdKind, rtKind, vrKind := mlmc.Kind{Method: mlmc.LSGD}, mlmc.Kind{Method: mlmc.RTMLMC}, mlmc.Kind{Method: mlmc.RTMLMC, VR: true}
	if c == EndCoupled || c == Paper {
		lsgd := base
		lsgd.NL = coupledLSGDDraws
		return []experiment.Method{
			{Kind: lsgdKind, Config: lsgd, Step: 0.5, Decay: coupledLSGDDecay, Budget: 1 << 34},
			{Kind: rtKind, Config: base, Step: coupledRTStep, Decay: coupledRTDecay, Budget: 1 << 28},
			{Kind: vrKind, Config: vr, Step: coupledVRStep, Decay: coupledVRDecay, Budget: 1 << 28},
		}
	}
	budget := int64(64) << maxLevel
	return []experiment.Method{
		{Kind: lsgdKind, Config: base, Step: 0.5, Budget: budget},
		{Kind: rtKind, Config: base, Step: 0.02, Decay: 2000, Budget: budget},
		{Kind: vrKind, Config: vr, Step: 0.1, Decay: 500, Budget: budget},
	}
}

// The coupled construction's settings (see methods).
const (
	coupledLSGDDraws = 1
	coupledLSGDDecay = 100
	coupledRTDecay   = 1000
	coupledVRDecay   = 1000
	coupledRTStep    = 0.1
	coupledVRStep    = 0.1
)

// tuningGrid is, per method of methods(c), the settings --tune tries: six
// each. L-SGD keeps the curvature-limited step 0.5 and varies n_L and the
// decay; the RT methods vary the step and the decay, over iteration counts
// about 10^4 times larger than L-SGD's since an iteration costs about 10
// steps instead of 2^18.
func tuningGrid(c Construction) []experiment.Method {
	var out []experiment.Method
	for i, m := range methods(c) {
		switch i {
		case 0:
			for _, nl := range []int{1, 16} {
				for _, t0 := range []float64{10, 100, 1000} {
					v := m
					v.Config.NL, v.Decay = nl, t0
					out = append(out, v)
				}
			}
		default:
			for _, eta := range []float64{0.1, 0.5} {
				for _, t0 := range []float64{100, 1000, 10000} {
					v := m
					v.Step, v.Decay = eta, t0
					out = append(out, v)
				}
			}
		}
	}
	return out
}

func main() {
	if err := runMain(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "pricing:", err)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a bad command line (exit status 2).
type usageError struct{ error }

// options are the command line, checked.
type options struct {
	kind    oracleKind
	laws    []Law
	seeds   []uint64
	workers int
	tune    bool
	asJSON  bool
	png     string
	// autoGap, when positive, runs the auto method (package
	// mlmc/auto, through experiment) planned for this relative objective gap instead
	// of the three methods.
	autoGap  float64
	markdown string
	// onGap reads the targets on the relative objective gap, with the
	// methods searched on tuning seeds (gaps.go); autoGaps are then the
	// gaps auto is run for, in turn (none: the grid).
	onGap    bool
	autoGaps []float64
	budget   int64
}

// parseOptions reads the command line. The quick default is one law (the
// exponential) and two seeds; --full is every law and 10 seeds; --law and
// --seeds override either.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("pricing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.Int("seeds", 0, "number of seeds per law and method (default 2, or 10 with --full)")
	firstSeed := fs.Int("first-seed", 1, "the seeds are first-seed, first-seed+1, ...")
	constr := fs.String("construction", "coupled", "oracle construction: paper (the paper's m-step windows ending at 2^l and 2^(l-1) of one trajectory), coupled (two queues on the same random numbers, the default: with it MLMC reproduces the paper's gains) or tail (tail averages: level l averages the first 2^l steps of one trajectory)")
	window := fs.Int("window", 1, "m, the steps averaged per value by --construction paper")
	full := fs.Bool("full", false, "the full experiment: all three laws, 10 seeds (about half an hour of CPU)")
	tune := fs.Bool("tune", false, "run the tuning grid on seeds 1001-1002 (not the reported ones) and print median steps to 1% per setting")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "runs simulated in parallel")
	asJSON := fs.Bool("json", false, "print the median simulated steps to reach 1% as JSON")
	lawName := fs.String("law", "", "run only this service law (erlang, exponential, hyperexponential); default exponential, or all with --full")
	png := fs.String("png", "pricing.png", "write the plot of the median error (or gap) against simulated steps to this PNG file (empty: none)")
	auto := experiment.AddAutoFlags(fs, "auto: run the auto method instead of the methods (continuation stages, their pilots counted, choose the estimator, L, the level law and the step within the budget: 2^28 steps, or --budget with --targets gap), planned for --gap",
		"with --method auto, the relative objective gap (F - F*)/(F(x0) - F*) to plan for, in (0, 1) (default 1e-4: the square of the 1% tolerance on |x - x*|/|x*|, as for a quadratic; with --targets gap, each of the targets in turn)")
	markdown := fs.String("markdown", "", "print the study README's tables of the summaries in this --json output file, and run nothing")
	budget := fs.Int64("budget", gapBudget, "with --targets gap: a trial's budget of simulated queue steps")
	targets := fs.String("targets", "error", "what the targets are read on: error (the decision within 1% of (mu*, p*), the methods of methods()) or gap (the relative objective gap (F - F*)/(F(x0) - F*) at 1%, 0.3% and 0.1%, the methods a grid searched on seeds 1001-1003 and widened, each target's choice run on the reported seeds; with --method auto, auto planned for each gap in turn)")
	if err := fs.Parse(args); err != nil {
		return options{}, usageError{err}
	}
	if fs.NArg() > 0 {
		return options{}, usageError{fmt.Errorf("unexpected argument %q: every setting is a flag (see --help)", fs.Arg(0))}
	}
	c, err := ParseConstruction(*constr)
	if err != nil {
		return options{}, usageError{err}
	}
	switch {
	case *seeds < 0:
		return options{}, usageError{fmt.Errorf("--seeds %d: must be at least 1", *seeds)}
	case *firstSeed < 1:
		return options{}, usageError{fmt.Errorf("--first-seed %d: must be at least 1", *firstSeed)}
	case *workers < 1:
		return options{}, usageError{fmt.Errorf("--workers %d: must be at least 1", *workers)}
	case *window < 1 || *window > 1<<maxLevel:
		return options{}, usageError{fmt.Errorf("--window %d: must be in 1..%d (2^L steps)", *window, 1<<maxLevel)}
	case *window != 1 && c != Paper:
		return options{}, usageError{fmt.Errorf("--window %d: only --construction paper has a window", *window)}
	}
	o := options{kind: oracleKind{Construction: c, Window: *window}, workers: *workers, tune: *tune,
		asJSON: *asJSON, png: *png, markdown: *markdown}
	switch *targets {
	case "error":
		if set(fs, "budget") {
			return options{}, usageError{fmt.Errorf("--budget %d: only --targets gap takes a budget (the error targets' budgets are the methods' own)", *budget)}
		}
	case "gap":
		o.onGap, o.budget = true, *budget
		if *budget < 1 {
			return options{}, usageError{fmt.Errorf("--budget %d: give a positive number of simulated steps", *budget)}
		}
		if *tune {
			return options{}, usageError{fmt.Errorf("--targets gap searches its grid on the tuning seeds itself: drop --tune")}
		}
	default:
		return options{}, usageError{fmt.Errorf("--targets %q: give error or gap", *targets)}
	}
	defaultGaps := []float64{tolerance * tolerance}
	if o.onGap {
		defaultGaps = gapTargets
	}
	gaps, err := auto.Gaps(defaultGaps)
	switch {
	case err != nil:
		return options{}, usageError{err}
	case gaps != nil && *tune:
		return options{}, usageError{fmt.Errorf("--method auto chooses its own settings: drop --tune")}
	case gaps != nil && o.onGap:
		o.autoGaps = gaps
	case gaps != nil:
		o.autoGap = gaps[0]
	}
	n := *seeds
	if n == 0 {
		n = 2
		if *full {
			n = 10
		}
	}
	o.seeds = seedRange(*firstSeed, n)
	if last := o.seeds[n-1]; o.onGap && o.seeds[0] <= gapTuningSeeds[len(gapTuningSeeds)-1] && last >= gapTuningSeeds[0] {
		return options{}, usageError{fmt.Errorf("--first-seed %d --seeds %d: seeds %d-%d include the tuning seeds %d-%d, which choose the settings; report on others (for example --first-seed %d)",
			*firstSeed, n, o.seeds[0], last, gapTuningSeeds[0], gapTuningSeeds[len(gapTuningSeeds)-1], gapTuningSeeds[len(gapTuningSeeds)-1]+1)}
	}
	name := *lawName
	if name == "" && !*full {
		name = "exponential"
	}
	o.laws = Laws()
	if name != "" {
		law, err := LawByName(name)
		if err != nil {
			return options{}, usageError{fmt.Errorf("--law: %w", err)}
		}
		o.laws = []Law{law}
	}
	return o, nil
}

func runMain(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	if o.markdown != "" {
		return experiment.WriteMarkdownOf(stdout, o.markdown)
	}
	if o.tune {
		return tuneMethods(o.kind, o.workers, stdout)
	}
	if o.onGap {
		return runGaps(o, stdout, stderr)
	}
	fmt.Fprintf(stderr, "construction %s, seeds %v\n", o.kind, o.seeds)
	pr := experiment.Protocol{Targets: []float64{tolerance}, Points: budgets, FirstSeed: o.seeds[0],
		Trials: len(o.seeds), Workers: o.workers}
	var sums []experiment.Summary
	var panels []plots.Panel
	for _, law := range o.laws {
		p := problem(law, o.kind, false)
		fmt.Fprintf(stderr, "%s service (Var V = %.3f): optimum mu* = %.4f, p* = %.4f, F* = %.4f\n",
			law.Name, law.Var(), p.xStar[0], p.xStar[1], Objective(law, p.xStar[0], p.xStar[1]))
		tn := experiment.Fixed("one considered choice per method, not tuned", methods(o.kind.Construction)...)
		if o.autoGap > 0 {
			tn = experiment.Fixed(fmt.Sprintf("auto planned for the relative objective gap %g, with a budget of 2^28 steps (the RT methods'): stages with targets falling to that gap, each measuring the levels with a pilot sized to the stage (counted in the cost), choose the estimator, L, the level law and the step, and the run stops when its own gap estimate reaches the gap (docs/definitions.md, section 11)", o.autoGap),
				experiment.Method{Auto: experiment.AutoMethod(o.autoGap).Auto, Budget: 1 << 28})
		}
		res, err := experiment.Report(p.Problem, pr, tn)
		if err != nil {
			return err
		}
		sums = append(sums, res.Summary)
		panels = append(panels, plots.Panels(res, []string{law.Name + " service"}, func(experiment.Curve) int { return 0 })...)
	}
	// The tables go where people read; with --json stdout is JSON lines,
	// so the tables go to stderr.
	table := stdout
	if o.asJSON {
		table = stderr
	}
	fmt.Fprintf(table, "construction %s\n\n", o.kind)
	experiment.WriteMarkdown(table, sums)
	if o.png != "" {
		if err := plots.WritePNG(o.png, panels); err != nil {
			return fmt.Errorf("--png: %w", err)
		}
		fmt.Fprintln(stderr, "wrote", o.png)
	}
	if o.asJSON {
		for _, s := range sums {
			if err := s.WriteJSON(stdout); err != nil {
				return fmt.Errorf("writing JSON: %w", err)
			}
		}
	}
	return nil
}

func seedRange(first, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(first + i)
	}
	return s
}

// tuneMethods runs every setting of tuningGrid on seeds 1001 and 1002 for
// every law and prints, per setting, the median steps after which the
// decision stays within 1% per law and their geometric mean over laws (a
// seed that does not get there counts as twice the budget), marking the
// best setting of each method.
func tuneMethods(k oracleKind, workers int, w io.Writer) error {
	grid := tuningGrid(k.Construction)
	pr := experiment.Protocol{Targets: []float64{tolerance}, Points: budgets, TuningSeeds: seedRange(1001, 2),
		Criterion: experiment.CostToFirstTarget, Workers: workers, Trials: 1}
	logScore := make([]float64, len(grid))
	lines := make([]string, len(grid))
	for _, law := range Laws() {
		tn, err := experiment.Tune(problem(law, k, false).Problem, pr, grid)
		if err != nil {
			return err
		}
		for i, s := range tn.Settings {
			score := 2 * float64(grid[i].Budget)
			if s.Score != nil {
				score = *s.Score
			}
			logScore[i] += math.Log(score) / float64(len(Laws()))
			lines[i] += fmt.Sprintf(" %s %.3g", law.Name, score)
		}
	}
	bestOf := map[experiment.Family]int{}
	for i, m := range grid {
		fmt.Fprintf(w, "%-44s%s | geomean %.3g\n", m.String(), lines[i], math.Exp(logScore[i]))
		if b, ok := bestOf[m.Family()]; !ok || logScore[i] < logScore[b] {
			bestOf[m.Family()] = i
		}
	}
	for _, m := range methods(k.Construction) {
		fmt.Fprintf(w, "best %s: %s\n", m.Name(), grid[bestOf[m.Family()]])
	}
	return nil
}

// set says the flag name was given on the command line.
func set(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
