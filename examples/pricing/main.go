// Command pricing runs the paper's pricing and staffing problem
// (docs/definitions.md, section 8 "Pricing and staffing"), a ground-truth test
// of package mlmc: a GI/GI/1 queue whose service rate mu and price p are chosen
// by projected stochastic gradient descent with L-SGD, RT-MLMC and VR RT-MLMC
// gradients (L = 18), for the Erlang, exponential and hyperexponential service
// laws, against the optimum of the closed-form M/G/1 objective.
//
//	go run ./examples/pricing [--construction paper|coupled|tail] [--window M] [--full] [--law NAME] [--seeds S] [--first-seed N] [--json] [--png FILE] [--tune]
//
// It prints decisions against simulated queue steps next to the optimum,
// writes a PNG of the median relative error |x - x*|/|x*| against simulated
// steps, and with --json prints, per law and method, the median number of
// simulated steps after which the decision is within 1% of (mu*, p*) and
// stays there until the end of the run, and the budget-free figure of
// gridHit: the smallest budget 2^k from which the run's decision is within
// 1% at every larger budget 2^k up to the method's largest.
//
// The constructions of h^l and H^l (oracle.go): paper (the paper's m-step
// windows at 2^l and 2^(l-1) of one trajectory, m = --window), coupled (the
// default: terminal values of two queues on the same random numbers,
// coalescing) and tail (tail averages, an earlier reading of the paper). With paper
// and tail H^l cancels nothing, so MLMC loses to L-SGD by the variance-cost
// ratio that TestRTMLMCVarianceCostAgainstLSGD measures, contrary to the
// paper's ~10x gain; coupled, the standard MLMC coupling for steady-state
// means, reproduces it.
//
// The default run is the exponential law with seeds 1 and 2 (about a
// minute of both cores); --full runs the experiment behind BENCHMARKS.md,
// all three laws with 10 seeds (about half an hour of CPU per
// construction). --law and --seeds override either.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

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
// about 20 minutes of both cores and was not run for the settings below
// (/work/notes/mlmc_bench.md). L-SGD's budget is larger (2^34 simulated
// steps, 65536 draws of h^18) because it needs it; the RT methods' is 2^28.
// The budget grids 2^k of gridHit start at k = 22 for L-SGD, 20 for the RT
// methods.
//
// paper: the coupled settings. With m = 1, h^L has the law of the coupled
// construction's h^L, so L-SGD is the same method; the RT methods get the
// same steps so that only the construction differs.
func methods(c Construction) []method {
	base := mlmc.Config{MinLevel: 0, MaxLevel: maxLevel}
	vr := base
	vr.D1, vr.D2, vr.QE = 256, 8, 20
	if c == EndCoupled || c == Paper {
		lsgd := base
		lsgd.NL = coupledLSGDDraws
		return []method{
			{Label: "L-SGD", Estimator: "lsgd", Config: lsgd, Step: [2]float64{0.5, 0.5}, Decay: coupledLSGDDecay,
				Budget: 1 << 34, GridMinLevel: 22},
			{Label: "RT-MLMC", Estimator: "rtmlmc", Config: base, Step: coupledRTStep, Decay: coupledRTDecay,
				Budget: 1 << 28, GridMinLevel: 20},
			{Label: "VR RT-MLMC", Estimator: "vr-rtmlmc", Config: vr, Step: coupledVRStep, Decay: coupledVRDecay,
				Budget: 1 << 28, GridMinLevel: 20},
		}
	}
	budget := int64(64) << maxLevel
	return []method{
		{Label: "L-SGD", Estimator: "lsgd", Config: base, Step: [2]float64{0.5, 0.5}, Budget: budget, GridMinLevel: 16},
		{Label: "RT-MLMC", Estimator: "rtmlmc", Config: base, Step: [2]float64{0.02, 0.02}, Decay: 2000, Budget: budget, GridMinLevel: 16},
		{Label: "VR RT-MLMC", Estimator: "vr-rtmlmc", Config: vr, Step: [2]float64{0.1, 0.1}, Decay: 500, Budget: budget, GridMinLevel: 16},
	}
}

// The coupled construction's settings (see methods).
const (
	coupledLSGDDraws = 1
	coupledLSGDDecay = 100
	coupledRTDecay   = 1000
	coupledVRDecay   = 1000
)

var (
	coupledRTStep = [2]float64{0.1, 0.1}
	coupledVRStep = [2]float64{0.1, 0.1}
)

// tuningGrid is, per method of methods(c), the settings --tune tries: six
// each. L-SGD keeps the curvature-limited step 0.5 and varies n_L and the
// decay; the RT methods vary the step and the decay, over iteration counts
// about 10^4 times larger than L-SGD's since an iteration costs about 10
// steps instead of 2^18.
func tuningGrid(c Construction) [][]method {
	ms := methods(c)
	var out [][]method
	for i, m := range ms {
		var g []method
		switch i {
		case 0:
			for _, nl := range []int{1, 16} {
				for _, t0 := range []float64{10, 100, 1000} {
					v := m
					v.Config.NL, v.Decay = nl, t0
					v.Label = fmt.Sprintf("%s n_L=%d t0=%g", m.Label, nl, t0)
					g = append(g, v)
				}
			}
		default:
			for _, eta := range []float64{0.1, 0.5} {
				for _, t0 := range []float64{100, 1000, 10000} {
					v := m
					v.Step, v.Decay = [2]float64{eta, eta}, t0
					v.Label = fmt.Sprintf("%s step=%g t0=%g", m.Label, eta, t0)
					g = append(g, v)
				}
			}
		}
		out = append(out, g)
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
	kind      oracleKind
	laws      []Law
	seeds     []uint64
	workers   int
	tune      bool
	asJSON    bool
	png       string
	full      bool
	lawFilter string
}

// parseOptions reads the command line. The quick default is one law (the
// exponential) and two seeds; --full is every law and 10 seeds; --law and
// --seeds override either.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("pricing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seeds := fs.Int("seeds", 0, "number of seeds per law and method (default 2, or 10 with --full)")
	firstSeed := fs.Int("first-seed", 1, "the seeds are first-seed, first-seed+1, ...")
	constr := fs.String("construction", "coupled", "oracle construction: paper (the paper's m-step windows ending at 2^l and 2^(l-1) of one trajectory), coupled (two queues on the same random numbers, the default: with it MLMC reproduces the paper's gains) or tail (tail averages, an earlier reading of the paper)")
	window := fs.Int("window", 1, "m, the steps averaged per value by --construction paper")
	full := fs.Bool("full", false, "the full experiment: all three laws, 10 seeds (about half an hour of CPU)")
	tune := fs.Bool("tune", false, "run the tuning grid on seeds 1001-1002 (not the reported ones) and print median steps to 1% per setting")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "runs simulated in parallel")
	asJSON := fs.Bool("json", false, "print the median simulated steps to reach 1% as JSON")
	lawName := fs.String("law", "", "run only this service law (erlang, exponential, hyperexponential); default exponential, or all with --full")
	png := fs.String("png", "pricing.png", "write the error plot to this PNG file (empty: none)")
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
		asJSON: *asJSON, png: *png, full: *full, lawFilter: *lawName}
	n := *seeds
	if n == 0 {
		n = 2
		if *full {
			n = 10
		}
	}
	o.seeds = seedRange(*firstSeed, n)
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
	if o.tune {
		return tuneMethods(o.kind, o.workers, stdout)
	}
	res, err := experiment(o.laws, o.kind, methods(o.kind.Construction), o.seeds, o.workers, stderr)
	if err != nil {
		return err
	}
	// The table goes where people read; with --json stdout is one JSON
	// document, so the table goes to stderr.
	table := stdout
	if o.asJSON {
		table = stderr
	}
	printTable(table, o.kind, res)
	if o.png != "" {
		if err := plotErrors(res, o.png); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "wrote", o.png)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(summaries(res)); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
	}
	return nil
}

// printTable prints, per law, the budget-free median steps to 1% of each
// method and L-SGD's over each MLMC method's: the comparison the command
// exists for.
func printTable(w io.Writer, k oracleKind, res []result) {
	fmt.Fprintf(w, "construction %s: median simulated steps to 1%% (budget-free, seeds reached)\n", k)
	fmt.Fprintf(w, "%-17s", "law")
	var labels []string
	for _, r := range res {
		if slices.Contains(labels, r.Method.Label) {
			break
		}
		labels = append(labels, r.Method.Label)
		fmt.Fprintf(w, " %-20s", r.Method.Label)
	}
	fmt.Fprintln(w, " L-SGD / method")
	law := ""
	var ratios []string
	for _, s := range summaries(res) {
		if s.Law != law {
			if law != "" {
				fmt.Fprintln(w, " "+strings.Join(ratios, ", "))
			}
			law, ratios = s.Law, nil
			fmt.Fprintf(w, "%-17s", s.Law)
		}
		cell := fmt.Sprintf("> %.3g", float64(s.Budget))
		if s.GridMedian != nil {
			cell = fmt.Sprintf("%.3g", *s.GridMedian)
		}
		fmt.Fprintf(w, " %-20s", fmt.Sprintf("%s (%d/%d)", cell, s.GridReached, s.Seeds))
		switch {
		case s.GridRatioToLSGD != nil:
			ratios = append(ratios, fmt.Sprintf("%s %.3g", s.Method, *s.GridRatioToLSGD))
		case s.Method != "L-SGD":
			ratios = append(ratios, s.Method+" -")
		}
	}
	if law != "" {
		fmt.Fprintln(w, " "+strings.Join(ratios, ", "))
	}
}

// result holds every run of one law and method.
type result struct {
	Law    Law
	Method method
	XStar  [2]float64
	Grid   []int64
	Traces []trace
}

func seedRange(first, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = uint64(first + i)
	}
	return s
}

// experiment runs every law, method and seed (workers runs at a time),
// printing progress to log.
func experiment(laws []Law, k oracleKind, ms []method, seeds []uint64, workers int, log io.Writer) ([]result, error) {
	fmt.Fprintf(log, "construction %s, seeds %v\n", k, seeds)
	var out []result
	for _, law := range laws {
		mu, p := Optimum(law)
		fmt.Fprintf(log, "%s service (Var V = %.3f): optimum mu* = %.4f, p* = %.4f, F* = %.4f\n",
			law.Name, law.Var(), mu, p, Objective(law, mu, p))
		for _, m := range ms {
			r := result{Law: law, Method: m, XStar: [2]float64{mu, p}, Grid: grid(m.Budget),
				Traces: make([]trace, len(seeds))}
			errs := make([]error, len(seeds))
			var wg sync.WaitGroup
			slots := make(chan struct{}, workers)
			for i, s := range seeds {
				wg.Add(1)
				slots <- struct{}{}
				go func() {
					defer func() { <-slots; wg.Done() }()
					r.Traces[i], errs[i] = run(law, k, m, r.XStar, maxLevel, s, r.Grid)
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					return nil, fmt.Errorf("%s, %s, seed %d: %w", law.Name, m.Label, seeds[i], err)
				}
			}
			out = append(out, r)
			printDecisions(log, r)
		}
	}
	return out, nil
}

// tuneMethods runs every setting of tuningGrid on seeds 1001 and 1002 and
// prints, per setting, the median steps to 1% per law and the geometric
// mean over laws (a seed that does not reach 1% counts as twice the
// budget), marking the best setting of each method.
func tuneMethods(k oracleKind, workers int, w io.Writer) error {
	for _, g := range tuningGrid(k.Construction) {
		best, bestScore := "", math.Inf(1)
		for _, m := range g {
			res, err := experiment(Laws(), k, []method{m}, seedRange(1001, 2), workers, io.Discard)
			if err != nil {
				return err
			}
			score := 0.0
			fmt.Fprintf(w, "%-36s", m.Label)
			for _, r := range res {
				hits := make([]float64, len(r.Traces))
				for i, t := range r.Traces {
					hits[i] = 2 * float64(m.Budget)
					if t.Hit >= 0 {
						hits[i] = float64(t.Hit)
					}
				}
				med := (hits[0] + hits[1]) / 2
				score += math.Log(med) / float64(len(res))
				fmt.Fprintf(w, " %s %.3g (%d/2)", r.Law.Name, med, countHits(r.Traces))
			}
			fmt.Fprintf(w, " | geomean %.3g\n", math.Exp(score))
			if score < bestScore {
				best, bestScore = m.Label, score
			}
		}
		fmt.Fprintf(w, "best: %s\n\n", best)
	}
	return nil
}

// printDecisions prints, for seed 1, the decision against simulated steps at
// a few points, and the median steps to 1%.
func printDecisions(w io.Writer, r result) {
	tr := r.Traces[0]
	fmt.Fprintf(w, "  %-11s final (mu, p) = (%.4f, %.4f) after %d iterations, %.3g steps simulated; ",
		r.Method.Label, tr.Final[0], tr.Final[1], tr.Iterations, float64(tr.Simulated))
	med, reached := medianHit(r.Traces)
	if reached {
		fmt.Fprintf(w, "median steps to 1%%: %.3g (%d/%d seeds)\n", med, countHits(r.Traces), len(r.Traces))
	} else {
		fmt.Fprintf(w, "1%% not reached by most seeds (%d/%d)\n", countHits(r.Traces), len(r.Traces))
	}
	for _, frac := range []float64{0.01, 0.1, 0.5, 1} {
		k := int(frac*float64(len(r.Grid)-1) + 0.5)
		fmt.Fprintf(w, "      after %.3g steps: median error %.4f\n", float64(r.Grid[k]), medianAt(r.Traces, k))
	}
}

func countHits(ts []trace) int {
	n := 0
	for _, t := range ts {
		if t.Hit >= 0 {
			n++
		}
	}
	return n
}

// medianHit is the median over seeds of the steps to 1% (a seed that never
// gets there counts as infinite); reached is false when the median is
// infinite.
func medianHit(ts []trace) (float64, bool) {
	hits := make([]float64, len(ts))
	for i, t := range ts {
		hits[i] = math.Inf(1)
		if t.Hit >= 0 {
			hits[i] = float64(t.Hit)
		}
	}
	slices.Sort(hits)
	n := len(hits)
	med := hits[n/2]
	if n%2 == 0 {
		med = (hits[n/2-1] + hits[n/2]) / 2
	}
	return med, !math.IsInf(med, 1)
}

func medianAt(ts []trace, k int) float64 {
	v := make([]float64, len(ts))
	for i, t := range ts {
		v[i] = t.Errors[k]
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[n/2]
}

// summary is one line of --json output.
type summary struct {
	Law    string `json:"law"`
	Method string `json:"method"`
	// MedianSteps is the median number of simulated queue steps to come
	// within 1% of (mu*, p*) and stay there; null when most seeds do not.
	MedianSteps *float64 `json:"median_steps_to_1pct"`
	// MedianDrawn is the same point counted in samples drawn (each draw's
	// random numbers once, however many queues or evaluations use them).
	MedianDrawn *float64 `json:"median_drawn_to_1pct"`
	Reached     int      `json:"seeds_reached"`
	Seeds       int      `json:"seeds"`
	Budget      int64    `json:"budget_steps"`
	// RatioToLSGD is L-SGD's median divided by this method's.
	RatioToLSGD *float64 `json:"lsgd_over_method,omitempty"`
	// The budget-free figure (gridHit): per seed, the smallest budget 2^k
	// (k >= GridMinLevel) from which the error is within 1% at every
	// larger 2^k up to the budget; null for a seed that is not within 1%
	// at the budget. GridMedian is their median (null when most seeds do
	// not reach), GridRatioToLSGD L-SGD's GridMedian over this method's.
	GridMinSteps    int64      `json:"grid_min_steps"`
	GridSteps       []*float64 `json:"grid_steps_to_1pct"`
	GridMedian      *float64   `json:"grid_median_steps_to_1pct"`
	GridReached     int        `json:"grid_seeds_reached"`
	GridRatioToLSGD *float64   `json:"grid_lsgd_over_method,omitempty"`
}

func summaries(res []result) []summary {
	var out []summary
	lsgd, lsgdGrid := map[string]float64{}, map[string]float64{}
	for _, r := range res {
		med, ok := medianHit(r.Traces)
		s := summary{Law: r.Law.Name, Method: r.Method.Label, Reached: countHits(r.Traces),
			Seeds: len(r.Traces), Budget: r.Method.Budget, GridMinSteps: int64(1) << r.Method.GridMinLevel}
		gridTraces := make([]trace, len(r.Traces))
		for i, t := range r.Traces {
			gridTraces[i].Hit = gridHit(r.Grid, t.Errors, r.Method.GridMinLevel, r.Method.Budget)
			var v *float64
			if h := gridTraces[i].Hit; h >= 0 {
				f := float64(h)
				v = &f
			}
			s.GridSteps = append(s.GridSteps, v)
		}
		s.GridReached = countHits(gridTraces)
		if gm, gok := medianHit(gridTraces); gok {
			s.GridMedian = &gm
			if r.Method.Estimator == "lsgd" {
				lsgdGrid[r.Law.Name] = gm
			} else if l, have := lsgdGrid[r.Law.Name]; have {
				ratio := l / gm
				s.GridRatioToLSGD = &ratio
			}
		}
		if ok {
			s.MedianSteps = &med
			drawn := make([]trace, len(r.Traces))
			for i, t := range r.Traces {
				drawn[i] = t
				drawn[i].Hit = t.HitDrawn
			}
			d, _ := medianHit(drawn)
			s.MedianDrawn = &d
			if r.Method.Estimator == "lsgd" {
				lsgd[r.Law.Name] = med
			} else if l, have := lsgd[r.Law.Name]; have {
				ratio := l / med
				s.RatioToLSGD = &ratio
			}
		}
		out = append(out, s)
	}
	return out
}
