// Command pricing runs the paper's pricing and staffing problem (SPEC
// section 5), a ground-truth test of package mlmc: a GI/GI/1 queue whose
// service rate mu and price p are chosen by projected stochastic gradient
// descent with L-SGD, RT-MLMC and VR RT-MLMC gradients (L = 18), for the
// Erlang, exponential and hyperexponential service laws, against the
// optimum of the closed-form M/G/1 objective.
//
//	go run ./examples/pricing [--seeds S] [--json] [--png FILE]
//
// It prints decisions against simulated queue steps next to the optimum,
// writes a PNG of the median relative error |x - x*|/|x*| against simulated
// steps, and with --json prints, per law and method, the median number of
// simulated steps after which the decision is within 1% of (mu*, p*) and
// stays there.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/simclr-go/simclr/mlmc"
)

// maxLevel is L: the longest trajectory has 2^18 steps.
const maxLevel = 18

// methods are the three optimisers compared, with the step sizes chosen as
// follows (all with the preconditioner of precondition):
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
func methods() []method {
	budget := int64(64) << maxLevel
	base := mlmc.Config{MinLevel: 0, MaxLevel: maxLevel}
	vr := base
	vr.D1, vr.D2, vr.QE = 256, 8, 20
	return []method{
		{Label: "L-SGD", Estimator: "lsgd", Config: base, Step: [2]float64{0.5, 0.5}, Budget: budget},
		{Label: "RT-MLMC", Estimator: "rtmlmc", Config: base, Step: [2]float64{0.02, 0.02}, Decay: 2000, Budget: budget},
		{Label: "VR RT-MLMC", Estimator: "vr-rtmlmc", Config: vr, Step: [2]float64{0.1, 0.1}, Decay: 500, Budget: budget},
	}
}

func main() {
	seeds := flag.Int("seeds", 10, "number of seeds per law and method")
	asJSON := flag.Bool("json", false, "print the median simulated steps to reach 1% as JSON")
	png := flag.String("png", "pricing.png", "write the error plot to this PNG file (empty: none)")
	flag.Parse()
	if *seeds < 1 {
		fmt.Fprintln(os.Stderr, "pricing: --seeds must be at least 1")
		os.Exit(2)
	}
	res, err := experiment(Laws(), methods(), *seeds, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pricing:", err)
		os.Exit(1)
	}
	if *png != "" {
		if err := plotErrors(res, *png); err != nil {
			fmt.Fprintln(os.Stderr, "pricing:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "wrote", *png)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(summaries(res)); err != nil {
			fmt.Fprintln(os.Stderr, "pricing:", err)
			os.Exit(1)
		}
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

// experiment runs every law, method and seed, printing progress to log.
func experiment(laws []Law, ms []method, seeds int, log io.Writer) ([]result, error) {
	var out []result
	for _, law := range laws {
		mu, p := Optimum(law)
		fmt.Fprintf(log, "%s service (Var V = %.3f): optimum mu* = %.4f, p* = %.4f, F* = %.4f\n",
			law.Name, law.Var(), mu, p, Objective(law, mu, p))
		for _, m := range ms {
			r := result{Law: law, Method: m, XStar: [2]float64{mu, p}, Grid: grid(m.Budget)}
			for s := range seeds {
				tr, err := run(law, m, r.XStar, maxLevel, uint64(s+1), r.Grid)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, seed %d: %w", law.Name, m.Label, s+1, err)
				}
				r.Traces = append(r.Traces, tr)
			}
			out = append(out, r)
			printDecisions(log, r)
		}
	}
	return out, nil
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
	Reached     int      `json:"seeds_reached"`
	Seeds       int      `json:"seeds"`
	Budget      int64    `json:"budget_steps"`
	// RatioToLSGD is L-SGD's median divided by this method's.
	RatioToLSGD *float64 `json:"lsgd_over_method,omitempty"`
}

func summaries(res []result) []summary {
	var out []summary
	lsgd := map[string]float64{}
	for _, r := range res {
		med, ok := medianHit(r.Traces)
		s := summary{Law: r.Law.Name, Method: r.Method.Label, Reached: countHits(r.Traces),
			Seeds: len(r.Traces), Budget: r.Method.Budget}
		if ok {
			s.MedianSteps = &med
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
