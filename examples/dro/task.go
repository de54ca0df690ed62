package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Defaults per kind of data set (docs/definitions.md, section 9).
const (
	// convexBudget and mlpBudget are the generated inner samples per run.
	convexBudget = 400_000
	mlpBudget    = 40_000
	// convexGrowth and mlpGrowth space the points at which a run is scored
	// (the MLP's objective is costly: a coarser grid).
	convexGrowth = 1.1
	mlpGrowth    = 1.25
	// mlpInitSeed seeds the MLP's common starting point.
	mlpInitSeed = 7
	// mlpEvalRows and mlpEvalLevel size the MLP's fixed evaluation sample:
	// rows with 2^level inner draws each.
	mlpEvalRows  = 400
	mlpEvalLevel = 4
	mlpEvalSeed  = 99
)

// newTask loads a data set and sets up its problem.
func newTask(ds dataset, o options) (*task, error) {
	data, err := loadData(ds, o.dataDir)
	if err != nil {
		return nil, err
	}
	t := &task{ds: ds, data: data}
	if ds.Convex {
		t.model = linear{data.Dim()}
		ex := newExactLinear(data)
		t.obj = ex
		t.x0 = make([]float64, t.model.dim())
		t.f0 = ex.value(t.x0)
		_, t.fStar, err = ex.minimise()
		if err != nil {
			return nil, fmt.Errorf("data set %s: the optimum: %w", ds.Name, err)
		}
		t.budget = convexBudget
	} else {
		m := mlp{d: data.Dim(), h: o.hidden}
		t.model = m
		t.obj = newCRNObjective(data, m, mlpEvalRows, mlpEvalLevel, mlpEvalSeed)
		t.x0 = m.init(mlpInitSeed)
		t.f0 = t.obj.value(t.x0)
		// F* is not known: tune sets it to the smallest value the tuning
		// runs reach, and experiment lowers it to the smallest any run
		// reaches (docs/definitions.md, section 9).
		t.fStar = math.Inf(1)
		t.budget = mlpBudget
	}
	if o.budget > 0 {
		t.budget = o.budget
	}
	growth := convexGrowth
	if !ds.Convex {
		growth = mlpGrowth
	}
	t.grid = sampleGrid(t.budget, growth)
	return t, nil
}

// result is an experiment's outcome on one data set.
type result struct {
	summary summary
	// curves of each method's chosen setting, for the plot
	curves map[string][]trace
	grid   []int64
}

// summary is the JSON object the command prints per data set.
type summary struct {
	Dataset   string  `json:"dataset"`
	About     string  `json:"about"`
	Model     string  `json:"model"`
	Objective string  `json:"objective"`
	F0        float64 `json:"F0"`
	FStar     float64 `json:"F_star"`
	Budget    int64   `json:"budget"`
	Trials    int     `json:"trials"`
	Tuning    string  `json:"tuning"`
	// CICoverage is the coverage of every median_ci: the order statistics
	// k and n+1-k of n trials for the largest k with coverage >= 95%.
	CICoverage float64                 `json:"median_ci_coverage"`
	Methods    map[string]methodResult `json:"methods"`
	// PerGap holds, for each gap, every method at its best setting for
	// that gap, and the ratio of L-SGD's samples to the best MLMC's.
	PerGap map[string]gapResult `json:"per_gap"`
	order  []string
}

// methodResult is one method at its tuned setting over the trials.
type methodResult struct {
	L    *int    `json:"L"` // null for RU-MLMC and RR-MLMC
	Step float64 `json:"step"`
	D1   int     `json:"d1,omitempty"` // VR only
	// SamplesToGap is the median over trials of the generated samples at
	// which the gap first fell to the key's value (null where the median
	// trial never got there).
	SamplesToGap  map[string]*float64 `json:"samples_to_gap"`
	TrialsReached map[string]int      `json:"trials_reached"`
	// FinalGap is the median over trials of the gap at the end of the
	// budget (null: infinite, the median trial left F's domain or diverged).
	FinalGap *float64 `json:"final_gap_median"`
	// FinalGapCI is the order-statistic interval of the median final gap
	// (coverage median_ci_coverage); FinalGaps the gap of every trial.
	FinalGapCI [2]*float64 `json:"final_gap_median_ci"`
	FinalGaps  []*float64  `json:"final_gaps"`
	Diverged   int         `json:"trials_diverged"`
}

// gapEntry is one method at its best setting for one gap.
type gapEntry struct {
	L       *int     `json:"L"`
	Step    float64  `json:"step"`
	D1      int      `json:"d1,omitempty"`
	Samples *float64 `json:"samples"`
	Reached int      `json:"trials_reached"`
	// CI is a distribution-free interval for the median samples (order
	// statistics; coverage in the summary's median_ci_coverage), null ends
	// where the order statistic never reached the gap; Trials the samples
	// of every trial, null where it never did.
	CI     [2]*float64 `json:"median_ci"`
	Trials []*float64  `json:"trials"`
}

type gapResult struct {
	Methods map[string]gapEntry `json:"methods"`
	// BestMLMC is the MLMC method (any of the eight) with the fewest
	// samples; BestVRT the better of V-MLMC and RT-MLMC.
	BestMLMC string `json:"best_mlmc"`
	BestVRT  string `json:"best_vmlmc_rtmlmc"`
	// Ratio is L-SGD's samples over BestMLMC's (>1: MLMC needs fewer);
	// RatioVRT the same against BestVRT. Null where either never reached
	// the gap.
	Ratio    *float64 `json:"lsgd_over_best_mlmc"`
	RatioVRT *float64 `json:"lsgd_over_best_vmlmc_rtmlmc"`
}

func gapKey(g float64) string { return strconv.FormatFloat(g, 'g', -1, 64) }

func levelPtr(s setting) *int {
	if s.L < 0 {
		return nil
	}
	l := s.L
	return &l
}

func finitePtr(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

// experiment tunes every method, then runs the chosen settings over the
// reported trials (seeds 1..trials).
func (t *task) experiment(methods []methodSpec, trials int, prior *summary) (*result, error) {
	var settings []setting // distinct settings to run over the trials
	seen := map[setting]int{}
	add := func(s setting) int {
		if i, ok := seen[s]; ok {
			return i
		}
		seen[s] = len(settings)
		settings = append(settings, s)
		return len(settings) - 1
	}
	var tn map[string]tuned
	var err error
	if prior != nil {
		tn, err = t.tunedFrom(*prior, methods)
	} else {
		tn, err = t.tune(methods)
	}
	if err != nil {
		return nil, err
	}
	for _, m := range methods {
		add(tn[m.Label].Best)
		for _, s := range tn[m.Label].PerGap {
			add(s)
		}
	}
	var jobs []job
	for _, s := range settings {
		for seed := 1; seed <= trials; seed++ {
			jobs = append(jobs, job{s, uint64(seed)})
		}
	}
	trs, err := t.runScored(jobs)
	if err != nil {
		return nil, err
	}
	runsOf := func(s setting) []trace { i := seen[s]; return trs[i*trials : (i+1)*trials] }
	res := &result{curves: map[string][]trace{}, grid: t.grid}
	sum := summary{Dataset: t.ds.Name, About: t.ds.About, Model: t.model.name(), Objective: t.obj.about(),
		F0: t.f0, FStar: t.fStar, Budget: t.budget, Trials: trials,
		Tuning: fmt.Sprintf("L in 0..10 (not RU/RR), step in %v, D1 in %v (VR); seeds %v; criterion: median over seeds of the mean gap over the second half of the budget",
			Steps, VRFresh, tuningSeeds),
		Methods: map[string]methodResult{}, PerGap: map[string]gapResult{}}
	_, sum.CICoverage = ciRanks(trials)
	for _, m := range methods {
		s := tn[m.Label].Best
		runs := runsOf(s)
		res.curves[m.Label] = runs
		mr := methodResult{L: levelPtr(s), Step: s.Step, D1: s.D1, SamplesToGap: map[string]*float64{}, TrialsReached: map[string]int{}}
		finals := make([]float64, len(runs))
		for i, tr := range runs {
			finals[i] = t.gap(tr.Curve[len(tr.Curve)-1])
			if tr.Diverged {
				mr.Diverged++
			}
		}
		mr.FinalGap = finitePtr(median(finals))
		lo, hi := medianCI(finals)
		mr.FinalGapCI = [2]*float64{finitePtr(lo), finitePtr(hi)}
		for _, f := range finals {
			mr.FinalGaps = append(mr.FinalGaps, finitePtr(f))
		}
		for g, gv := range gaps {
			mr.SamplesToGap[gapKey(gv)] = finitePtr(firstPassage(runs, g))
			mr.TrialsReached[gapKey(gv)] = reached(runs, g)
		}
		sum.Methods[m.Label] = mr
		sum.order = append(sum.order, m.Label)
	}
	for g, gv := range gaps {
		gr := gapResult{Methods: map[string]gapEntry{}}
		best, bestVRT := math.Inf(1), math.Inf(1)
		for _, m := range methods {
			s := tn[m.Label].PerGap[g]
			runs := runsOf(s)
			fp := firstPassage(runs, g)
			e := gapEntry{L: levelPtr(s), Step: s.Step, D1: s.D1, Samples: finitePtr(fp), Reached: reached(runs, g)}
			for _, tr := range runs {
				var p *float64
				if tr.First[g] >= 0 {
					p = finitePtr(float64(tr.First[g]))
				}
				e.Trials = append(e.Trials, p)
			}
			lo, hi := medianCI(passages(runs, g))
			e.CI = [2]*float64{finitePtr(lo), finitePtr(hi)}
			gr.Methods[m.Label] = e
			if m.Label == "L-SGD" || m.Label == "VR L-SGD" {
				continue
			}
			if fp < best || gr.BestMLMC == "" {
				best, gr.BestMLMC = fp, m.Label
			}
			if (m.Label == "V-MLMC" || m.Label == "RT-MLMC") && (fp < bestVRT || gr.BestVRT == "") {
				bestVRT, gr.BestVRT = fp, m.Label
			}
		}
		if tl, ok := tn["L-SGD"]; ok {
			lsgd := firstPassage(runsOf(tl.PerGap[g]), g)
			gr.Ratio, gr.RatioVRT = ratio(lsgd, best), ratio(lsgd, bestVRT)
		}
		sum.PerGap[gapKey(gv)] = gr
	}
	res.summary = sum
	return res, nil
}

// ratio is a/b where both are finite, else nil.
func ratio(a, b float64) *float64 {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return nil
	}
	return finitePtr(a / b)
}

func reached(runs []trace, g int) int {
	n := 0
	for _, tr := range runs {
		if tr.First[g] >= 0 {
			n++
		}
	}
	return n
}

// print writes the summary as tables.
func (s summary) print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s: %s\n%s; objective %s\nF(x0) = %.8g   F* = %.8g   budget %d generated samples, %d trials\n",
		s.Dataset, s.About, s.Model, s.Objective, s.F0, s.FStar, s.Budget, s.Trials)
	fmt.Fprintf(w, "\nEach method at its tuned setting (median generated samples to the gap; trials that reached it):\n")
	fmt.Fprintf(w, "%-12s %4s %7s %14s %14s %14s %12s\n", "method", "L", "step", "gap 1%", "gap 0.3%", "gap 0.1%", "final gap")
	for _, name := range s.order {
		m := s.Methods[name]
		cells := make([]string, len(gaps))
		for g, gv := range gaps {
			cells[g] = fmt.Sprintf("%s (%d)", fmtSamples(m.SamplesToGap[gapKey(gv)]), m.TrialsReached[gapKey(gv)])
		}
		fmt.Fprintf(w, "%-12s %4s %7g %14s %14s %14s %12s\n", name, fmtLevel(m.L), m.Step, cells[0], cells[1], cells[2], mdGap(m.FinalGap))
	}
	fmt.Fprintf(w, "\nEach method at its best setting for each gap:\n")
	fmt.Fprintf(w, "%-12s", "method")
	for _, gv := range gaps {
		fmt.Fprintf(w, " %24s", "gap "+strconv.FormatFloat(gv*100, 'g', -1, 64)+"%")
	}
	fmt.Fprintln(w)
	for _, name := range s.order {
		fmt.Fprintf(w, "%-12s", name)
		for _, gv := range gaps {
			e := s.PerGap[gapKey(gv)].Methods[name]
			fmt.Fprintf(w, " %24s", fmt.Sprintf("%s (L %s, %g)", fmtSamples(e.Samples), fmtLevel(e.L), e.Step))
		}
		fmt.Fprintln(w)
	}
	var parts []string
	for _, gv := range gaps {
		gr := s.PerGap[gapKey(gv)]
		parts = append(parts, fmt.Sprintf("gap %g%%: %s against %s (%s against %s)", gv*100,
			fmtRatio(gr.Ratio), gr.BestMLMC, fmtRatio(gr.RatioVRT), gr.BestVRT))
	}
	fmt.Fprintf(w, "\nL-SGD's samples over the best MLMC's: %s\n", strings.Join(parts, "; "))
}

func fmtSamples(p *float64) string {
	if p == nil {
		return "never"
	}
	return strconv.FormatFloat(*p, 'g', 3, 64)
}

func fmtLevel(l *int) string {
	if l == nil {
		return "-"
	}
	return strconv.Itoa(*l)
}

func fmtRatio(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", *p)
}

// passages are the trials' first passages to gap g (never = +Inf).
func passages(runs []trace, g int) []float64 {
	xs := make([]float64, len(runs))
	for i, tr := range runs {
		xs[i] = math.Inf(1)
		if tr.First[g] >= 0 {
			xs[i] = float64(tr.First[g])
		}
	}
	return xs
}

// ciRanks is the largest k for which the order statistics x_(k) and
// x_(n+1-k) of n independent trials cover the median with probability at
// least 95%, and that probability, 1 - 2 P(Binomial(n, 1/2) <= k-1).
// k = 0 (no interval) for n < 6.
func ciRanks(n int) (k int, coverage float64) {
	cdf := 0.0 // P(Bin <= j-1)
	choose := 1.0
	for j := 1; j <= n/2; j++ {
		if j > 1 {
			choose = choose * float64(n-j+2) / float64(j-1)
		}
		cdf += choose * math.Pow(0.5, float64(n))
		if c := 1 - 2*cdf; c >= 0.95 {
			k, coverage = j, c
		} else {
			break
		}
	}
	return k, coverage
}

// medianCI is the order-statistic interval of ciRanks (NaN ends without one).
func medianCI(xs []float64) (lo, hi float64) {
	k, _ := ciRanks(len(xs))
	if k == 0 {
		return math.NaN(), math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[k-1], s[len(s)-k]
}

// tunedFrom takes the chosen settings of an earlier summary instead of
// tuning (--tuned): the reported trials run again, with the same seeds. For
// the MLP, F* starts from the summary's.
func (t *task) tunedFrom(prior summary, methods []methodSpec) (map[string]tuned, error) {
	out := map[string]tuned{}
	setting := func(m methodSpec, l *int, step float64, d1 int) setting {
		s := setting{Method: m.Label, Estimator: m.Estimator, L: -1, Step: step, D1: d1}
		if l != nil {
			s.L = *l
		}
		return s
	}
	for _, m := range methods {
		mr, ok := prior.Methods[m.Label]
		if !ok {
			return nil, fmt.Errorf("--tuned: data set %s has no tuned setting of %s", prior.Dataset, m.Label)
		}
		tu := tuned{Best: setting(m, mr.L, mr.Step, mr.D1)}
		for _, gv := range gaps {
			e, ok := prior.PerGap[gapKey(gv)].Methods[m.Label]
			if !ok {
				return nil, fmt.Errorf("--tuned: data set %s has no setting of %s for the gap %g", prior.Dataset, m.Label, gv)
			}
			tu.PerGap = append(tu.PerGap, setting(m, e.L, e.Step, e.D1))
		}
		out[m.Label] = tu
	}
	if !t.obj.cheap() {
		t.fStar = prior.FStar
	}
	return out, nil
}
