package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/simclr-go/simclr/experiment"
	"github.com/simclr-go/simclr/experiment/plots"
	"github.com/simclr-go/simclr/mlmc"
)

// targets are the relative gaps (SR - SR*)/(SR(x0) - SR*) at which samples
// are counted: the headline 1%, 0.3% and 0.1% among five over two decades,
// on which the complexity exponents are fitted.
var targets = []float64{0.1, 0.03, 0.01, 0.003, 0.001}

// headline are the targets of the JSON's samples_to_gap.
var headline = []float64{0.01, 0.003, 0.001}

// outcome is one instance's experiment: the harness's result, the
// diagnostic's rates and the complexity fits.
type outcome struct {
	in         *instance
	res        *experiment.Result
	lv         *levelsReport
	complexity map[string]exponent
}

// exponent is a fitted slope of log samples against log(1/eps) with a 95%
// bootstrap interval over the trials, and the targets it was fitted on.
type exponent struct {
	Exponent interval  `json:"exponent"`
	Targets  []float64 `json:"targets"`
	// Settings are the best settings per target (by the stays-below rule).
	Settings []string `json:"settings"`
	Note     string   `json:"note,omitempty"`
}

// runExperiment tunes every candidate on the tuning seeds, reports the
// chosen settings on the trials, and fits the complexity exponents.
func runExperiment(in *instance, s settings, g experiment.Grid, kinds []mlmc.Kind, w io.Writer) (*outcome, error) {
	var lv *levelsReport
	var err error
	if s.LevelsFrom != "" {
		lv, err = readLevels(s.LevelsFrom, in)
	} else {
		lv, err = measureLevels(in)
	}
	if err != nil {
		return nil, err
	}
	lv.print(w)
	p := in.problem()
	pr := experiment.Protocol{Targets: s.Targets, Budget: s.Budget, Trials: s.Trials, FirstSeed: s.FirstSeed, Workers: s.Workers}
	for i := range s.TuningSeeds {
		pr.TuningSeeds = append(pr.TuningSeeds, 1001+uint64(i))
	}
	// The randomized laws take the measured variance rate b, to two
	// decimals; V-MLMC takes the paper's n_l = 2^(L-l).
	g.B = math.Round(lv.B[0]*100) / 100
	cands := g.Methods(kinds)
	var prior []experiment.Scored
	if s.TuningFrom != "" {
		fams := make([]experiment.Family, len(kinds))
		for i, k := range kinds {
			fams[i] = experiment.Family{Kind: k}
		}
		if prior, err = experiment.PriorScores(strings.Split(s.TuningFrom, ","), p, pr, fams); err != nil {
			return nil, fmt.Errorf("--tuning-from: %w", err)
		}
	}
	fmt.Fprintf(w, "%s: tuning %d settings of the grid on seeds %v (%d scored earlier, reused), budget %d samples, %d rounds of widening at most\n",
		p.Name, len(cands), pr.TuningSeeds, len(prior), s.Budget, s.Widen)
	t, err := experiment.TuneWidened(p, pr, cands, prior, widenAxes, s.Widen, w)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "  %s\n", t.About)
	for _, e := range t.Edges {
		fmt.Fprintln(w, "  at the grid's edge:", e)
	}
	if !s.FirstTouch {
		// Only the stays-below choices are reported (the first-touch ones
		// would double the reported runs): a first-touch figure is then read
		// off the stays-below setting's trials.
		for i := range t.Choices {
			t.Choices[i].First = t.Choices[i].Stays
		}
	}
	res, err := experiment.Report(p, pr, t)
	if err != nil {
		return nil, err
	}
	return newOutcome(in, res, lv), nil
}

// refit rebuilds the outcome of an earlier --run from its summary file
// under s.Out (the complexity fits and the --json object), without running.
func refit(in *instance, s settings, w io.Writer) (*outcome, error) {
	lv, err := readLevels(s.LevelsFrom, in)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(s.Out, in.Name+"-"+in.Loss.Name+".summary.json")
	sums, err := experiment.ReadSummaries(path)
	if err != nil {
		return nil, fmt.Errorf("--refit: %w", err)
	}
	return newOutcome(in, &experiment.Result{Summary: sums[len(sums)-1]}, lv), nil
}

// newOutcome fits the complexity exponents of a reported experiment.
func newOutcome(in *instance, res *experiment.Result, lv *levelsReport) *outcome {
	o := &outcome{in: in, res: res, lv: lv, complexity: map[string]exponent{}}
	o.complexity["L-SGD"] = fitExponent(res.Summary, in, func(r experiment.Ranking) string { return "L-SGD" })
	o.complexity["best MLMC"] = fitExponent(res.Summary, in, func(r experiment.Ranking) string { return r.BestMLMC })
	for _, ms := range res.Summary.Methods {
		if ms.Name != "L-SGD" {
			name := ms.Name
			o.complexity[name] = fitExponent(res.Summary, in, func(experiment.Ranking) string { return name })
		}
	}
	return o
}

// fitExponent fits log N = k + e log(1/eps) over the targets where the
// median trial of the method pick(ranking) reached, N the median
// samples after which the gap stays below eps (each target at its own best
// setting), and bootstraps the trials 1000 times for the interval.
func fitExponent(sum experiment.Summary, in *instance, pick func(experiment.Ranking) string) exponent {
	scale := in.SR0 - in.SRStar
	var xs []float64
	var trials [][]float64
	ex := exponent{}
	for _, ts := range sum.PerTarget {
		name := pick(ts.StaysBelow)
		i := slices.IndexFunc(ts.StaysBelow.Methods, func(r experiment.Ranked) bool { return r.Name == name })
		if i < 0 {
			continue
		}
		r := ts.StaysBelow.Methods[i]
		if r.Passage.Median == nil {
			continue // the median trial did not reach it
		}
		var costs []float64
		for _, c := range r.Passage.Trials {
			if c == nil {
				costs = append(costs, math.Inf(1))
			} else {
				costs = append(costs, *c)
			}
		}
		xs = append(xs, math.Log(1/(ts.Target*scale)))
		trials = append(trials, costs)
		ex.Targets = append(ex.Targets, ts.Target)
		ex.Settings = append(ex.Settings, r.Setting.String())
	}
	if len(xs) < 3 {
		ex.Exponent = interval{math.NaN(), math.NaN(), math.NaN()}
		ex.Note = fmt.Sprintf("reached at %d targets: too few to fit", len(xs))
		return ex
	}
	slope := func(cs [][]float64) float64 {
		ys := make([]float64, len(cs))
		for i, c := range cs {
			ys[i] = math.Log(experiment.Median(c))
		}
		slope, _, _ := mlmc.LineFit(xs, ys)
		return slope
	}
	ex.Exponent[0] = slope(trials)
	r := rand.New(rand.NewPCG(99, 1))
	var boots []float64
	re := make([][]float64, len(trials))
	for range 1000 {
		for i, c := range trials {
			re[i] = re[i][:0]
			for range c {
				re[i] = append(re[i], c[r.IntN(len(c))])
			}
		}
		if b := slope(re); !math.IsNaN(b) && !math.IsInf(b, 0) {
			boots = append(boots, b)
		}
	}
	slices.Sort(boots)
	if len(boots) > 0 {
		ex.Exponent[1], ex.Exponent[2] = boots[len(boots)*25/1000], boots[len(boots)*975/1000]
	}
	return ex
}

// summaryJSON is the per-loss object of --json: the ground truth, the
// measured rates, each family's samples to the headline gaps at its best
// setting for each, and the complexity exponents with the predictions.
func (o *outcome) summaryJSON() map[string]any {
	in, sum := o.in, o.res.Summary
	methods := map[string]any{}
	for _, ms := range sum.Methods {
		stg, ci, set := map[string]any{}, map[string]any{}, map[string]any{}
		for _, h := range headline {
			i := slices.Index(sum.Targets, h)
			ts := sum.PerTarget[i]
			j := slices.IndexFunc(ts.StaysBelow.Methods, func(r experiment.Ranked) bool { return r.Name == ms.Name })
			key := strconv.FormatFloat(h, 'g', -1, 64)
			r := ts.StaysBelow.Methods[j]
			stg[key] = r.Passage.Median
			ci[key] = r.Passage.CI
			set[key] = r.Setting.String()
		}
		methods[ms.Name] = map[string]any{"samples_to_gap": stg, "median_ci": ci, "setting": set}
	}
	a, c, v := o.lv.A[0], o.lv.C[0], o.lv.V[0]
	cx := map[string]any{}
	for name, e := range o.complexity {
		cx[name] = e
	}
	cx["predictions"] = map[string]any{
		"L-SGD (paper, Var h^l bounded): 1 + c/a":         1 + c/a,
		"L-SGD (measured Var h^l ~ 2^-vl): 1 + (c - v)/a": 1 + (c-v)/a,
		"MLMC (b > c)": 1.0,
	}
	return map[string]any{"instance": in.Name, "loss": in.Loss.Name, "lambda": in.Lambda,
		"SR0": in.SR0, "SR_star": in.SRStar, "SR_star_spread": in.Spread, "theta_star": in.ThetaStar,
		"rates":  map[string]any{"a": o.lv.A, "b": o.lv.B, "c": o.lv.C, "v": o.lv.V, "paper": o.lv.Paper},
		"budget": sum.Budget, "trials": sum.Trials, "targets": sum.Targets,
		"methods": methods, "complexity": cx,
		"cpu": machine()}
}

// machine describes the processor the timings ran on (the figures depend on
// it): the first model name of /proc/cpuinfo and the cores Go may use.
func machine() string {
	model := "unknown processor"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		model = cpuModel(string(b))
	}
	return fmt.Sprintf("%d cores of %s", runtime.GOMAXPROCS(0), model)
}

// cpuModel returns the first non-empty "model name" of a /proc/cpuinfo
// text, or "unknown processor".
func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(key) == "model name" && strings.TrimSpace(val) != "" {
			return strings.TrimSpace(val)
		}
	}
	return "unknown processor"
}

// write saves the harness's summary, its tables and the plot of an
// outcome under dir.
func (o *outcome) write(dir string) error {
	base := filepath.Join(dir, o.in.Name+"-"+o.in.Loss.Name)
	f, err := os.Create(base + ".summary.json")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := o.res.Summary.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	md, err := os.Create(base + ".md")
	if err != nil {
		return err
	}
	experiment.WriteMarkdown(md, []experiment.Summary{o.res.Summary})
	if err := md.Close(); err != nil {
		return err
	}
	panels := plots.Panels(o.res, []string{o.in.Name + " " + o.in.Loss.Name + ": plain", o.in.Name + " " + o.in.Loss.Name + ": VR"}, plots.ByVR)
	return plots.WritePNG(base+".png", panels)
}

func (o *outcome) print(w io.Writer) {
	sum := o.res.Summary
	fmt.Fprintf(w, "%s: samples until the gap stays below each target, each family at its best setting for it (median of %d trials)\n", sum.Problem, sum.Trials)
	for _, ts := range sum.PerTarget {
		fmt.Fprintf(w, "  %6g:", ts.Target)
		for _, r := range ts.StaysBelow.Methods {
			if r.Passage.Median != nil {
				fmt.Fprintf(w, " %s %.3g;", r.Name, *r.Passage.Median)
			} else {
				fmt.Fprintf(w, " %s -;", r.Name)
			}
		}
		if ts.StaysBelow.Ratio != nil {
			fmt.Fprintf(w, " L-SGD/%s = %.2f", ts.StaysBelow.BestMLMC, *ts.StaysBelow.Ratio)
		}
		fmt.Fprintln(w)
	}
	a, c, v := o.lv.A[0], o.lv.C[0], o.lv.V[0]
	for _, name := range []string{"L-SGD", "best MLMC"} {
		e := o.complexity[name]
		fmt.Fprintf(w, "  exponent of samples in 1/eps, %s: %.2f [%.2f, %.2f] over targets %v %s\n", name, e.Exponent[0], e.Exponent[1], e.Exponent[2], e.Targets, e.Note)
	}
	fmt.Fprintf(w, "  predictions: L-SGD 1 + c/a = %.2f (the paper's bound Var h^l = O(1)), 1 + (c - v)/a = %.2f (measured Var h^l); MLMC 1\n", 1+c/a, 1+(c-v)/a)
}

// readLevels reads the diagnostic of in's instance and loss from a --levels
// JSON file.
func readLevels(path string, in *instance) (*levelsReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--levels-from: %w", err)
	}
	var reps []*levelsReport
	if err := json.Unmarshal(b, &reps); err != nil {
		return nil, fmt.Errorf("--levels-from %s: %w (write it with --levels --json)", path, err)
	}
	for _, r := range reps {
		if r.Instance != in.Name || r.Loss != in.Loss.Name {
			continue
		}
		for name, dst := range map[string]*interval{"a": &r.A, "b": &r.B, "c": &r.C, "v": &r.V} {
			var iv []*float64
			raw, _ := json.Marshal(r.Rates[name])
			if err := json.Unmarshal(raw, &iv); err != nil || len(iv) != 3 {
				return nil, fmt.Errorf("--levels-from %s: rate %s of %s, %s is not [value, lo, hi]", path, name, in.Name, in.Loss.Name)
			}
			for i, v := range iv {
				dst[i] = math.NaN()
				if v != nil {
					dst[i] = *v
				}
			}
		}
		return r, nil
	}
	return nil, fmt.Errorf("--levels-from %s: no diagnostic of %s with the %s loss (run --levels for it)", path, in.Name, in.Loss.Name)
}
