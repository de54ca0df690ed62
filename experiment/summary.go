package experiment

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/simclr-go/simclr/mlmc/auto"
)

// Summary is one problem's reported experiment, the JSON line a results
// file holds.
type Summary struct {
	Problem   string `json:"problem"`
	About     string `json:"about"`
	Objective string `json:"objective,omitempty"`
	// Cost and Error name what is counted and what the targets are read on.
	Cost  string `json:"cost"`
	Error string `json:"error"`
	// F0 and FStar are F(x0) and F* (with F0SE, the estimate's standard
	// error); FStarReached says F* is the lowest value any run reached.
	// Zero where the targets are read on the problem's Error.
	F0           float64   `json:"F0"`
	F0SE         float64   `json:"F0_se,omitempty"`
	FStar        float64   `json:"F_star"`
	FStarReached bool      `json:"F_star_reached,omitempty"`
	Budget       int64     `json:"budget"`
	Targets      []float64 `json:"targets"`
	// Trials are the reported seeds FirstSeed..FirstSeed+Trials-1.
	Trials    int    `json:"trials"`
	FirstSeed uint64 `json:"first_seed"`
	// Confidence is the coverage asked of the median's interval, Coverage
	// what the order statistics of Trials trials give (at least it).
	Confidence float64 `json:"median_ci_confidence"`
	Coverage   float64 `json:"median_ci_coverage"`
	Tuning     *Tuning `json:"tuning"`
	// Methods are each family at its overall-tuned setting.
	Methods []MethodSummary `json:"methods"`
	// PerTarget are, for each target, each family at its best setting for
	// it, by each rule.
	PerTarget []TargetSummary `json:"per_target"`
}

// Passage is the cost to one target over the trials, by one rule.
type Passage struct {
	// Median over trials (null: the median trial did not reach), the
	// order-statistic interval of the median (null ends: not reached),
	// the trials that reached, and every trial's cost (null: not reached).
	Median  *float64    `json:"median"`
	CI      [2]*float64 `json:"median_ci"`
	Reached int         `json:"trials_reached"`
	Trials  []*float64  `json:"trials"`
}

// MethodSummary is one family at one setting over the reported trials.
type MethodSummary struct {
	Name    string `json:"name"`
	Setting Method `json:"setting"`
	Budget  int64  `json:"budget"`
	// StaysBelow[i] is the cost after which the gap stays at or below
	// target i, checked at every logged point (the headline); FirstTouch[i]
	// the cost at which it first touches it.
	StaysBelow []Passage `json:"stays_below"`
	FirstTouch []Passage `json:"first_touch"`
	// FinalGap is the median gap at the end of the budget with its
	// interval, FinalGaps every trial's (null: infinite).
	FinalGap   *float64    `json:"final_gap_median"`
	FinalGapCI [2]*float64 `json:"final_gap_median_ci"`
	FinalGaps  []*float64  `json:"final_gaps"`
	Diverged   int         `json:"trials_diverged"`
	// Auto is the auto method's record per trial: its stages, plans and
	// reasons, its own gap estimate and whether the trial reached it.
	Auto []*auto.Record `json:"auto,omitempty"`
}

// Ranked is one family at its best setting for a target by one rule.
type Ranked struct {
	Name    string  `json:"name"`
	Setting Method  `json:"setting"`
	Passage Passage `json:"samples"`
	// LSGDOver is L-SGD's median over this one's (>1: fewer than L-SGD).
	LSGDOver *float64 `json:"lsgd_over_method,omitempty"`
}

// Ranking is every family at its best setting for one target by one rule.
type Ranking struct {
	Methods []Ranked `json:"methods"`
	// BestMLMC is the multilevel family with the smallest median, Ratio
	// best-tuned L-SGD's median over its (null where either did not reach).
	BestMLMC string   `json:"best_mlmc,omitempty"`
	Ratio    *float64 `json:"lsgd_over_best_mlmc"`
}

// TargetSummary is one target's rankings.
type TargetSummary struct {
	Target     float64 `json:"target"`
	StaysBelow Ranking `json:"stays_below"`
	FirstTouch Ranking `json:"first_touch"`
}

func (s *session) passage(costs []float64) Passage {
	var ps Passage
	ps.Median = finitePtr(Median(costs))
	lo, hi := MedianCI(costs, s.pr.Confidence)
	ps.CI = [2]*float64{finitePtr(lo), finitePtr(hi)}
	for _, c := range costs {
		ps.Trials = append(ps.Trials, finitePtr(c))
		if !math.IsInf(c, 1) {
			ps.Reached++
		}
	}
	return ps
}

func (s *session) summarise(t *Tuning, runsOf func(Method) []Trace) *Result {
	pr := s.pr
	sum := Summary{Problem: s.p.Name, About: s.p.About, Objective: s.p.ObjectiveAbout,
		Cost: s.p.costName(), Error: s.p.errorName(), Budget: pr.Budget, Targets: pr.Targets,
		Trials: pr.Trials, FirstSeed: pr.FirstSeed, Confidence: pr.Confidence, Tuning: t}
	if s.p.Error == nil {
		sum.F0, sum.F0SE = s.p.Objective(s.p.X0)
		sum.FStar, sum.FStarReached = s.g.fStar, s.p.FStar.Reached
	}
	_, sum.Coverage = CIRanks(pr.Trials, pr.Confidence)
	res := &Result{}
	for _, c := range t.Choices {
		m := c.Best
		runs := runsOf(m)
		ms := MethodSummary{Name: c.Name, Setting: m, Budget: pr.budget(m)}
		for i := range pr.Targets {
			ms.StaysBelow = append(ms.StaysBelow, s.passage(s.passages(runs, m, i, true)))
			ms.FirstTouch = append(ms.FirstTouch, s.passage(s.passages(runs, m, i, false)))
		}
		finals := make([]float64, len(runs))
		cv := Curve{Name: c.Name, Family: c.Family, Points: pr.Points(pr.budget(m))}
		for j, tr := range runs {
			g := s.gaps(tr)
			cv.Gaps = append(cv.Gaps, g)
			finals[j] = g[len(g)-1]
			if tr.Diverged {
				ms.Diverged++
			}
			if tr.Auto != nil {
				ms.Auto = append(ms.Auto, tr.Auto)
			}
		}
		fg := s.passage(finals)
		ms.FinalGap, ms.FinalGapCI, ms.FinalGaps = fg.Median, fg.CI, fg.Trials
		sum.Methods = append(sum.Methods, ms)
		res.Curves = append(res.Curves, cv)
	}
	for i, target := range pr.Targets {
		sum.PerTarget = append(sum.PerTarget, TargetSummary{Target: target,
			StaysBelow: s.rank(t, runsOf, i, true), FirstTouch: s.rank(t, runsOf, i, false)})
	}
	res.Summary = sum
	return res
}

// rank is every family at its setting for target i by one rule, with
// best-tuned L-SGD's median over each one's and over the best multilevel
// family's.
func (s *session) rank(t *Tuning, runsOf func(Method) []Trace, i int, stays bool) Ranking {
	var rk Ranking
	meds := make([]float64, len(t.Choices))
	base := math.NaN()
	for ci, c := range t.Choices {
		m := c.setting(i, stays)
		ps := s.passage(s.passages(runsOf(m), m, i, stays))
		meds[ci] = math.Inf(1)
		if ps.Median != nil {
			meds[ci] = *ps.Median
		}
		if c.Family == lsgd {
			base = meds[ci]
		}
		rk.Methods = append(rk.Methods, Ranked{Name: c.Name, Setting: m, Passage: ps})
	}
	best := math.Inf(1)
	for ci, c := range t.Choices {
		if !math.IsNaN(base) {
			rk.Methods[ci].LSGDOver = ratio(base, meds[ci])
		}
		if isMLMC(c.Family) && (rk.BestMLMC == "" || meds[ci] < best) {
			best, rk.BestMLMC = meds[ci], c.Name
		}
	}
	if !math.IsNaN(base) && rk.BestMLMC != "" {
		rk.Ratio = ratio(base, best)
	}
	return rk
}

// ratio is a/b where both are finite, else nil.
func ratio(a, b float64) *float64 {
	if math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return nil
	}
	return finitePtr(a / b)
}

// WriteJSON writes the summary as one JSON line.
func (s Summary) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(s)
}

// WriteMarkdownOf writes the tables of the summaries in the results file
// path (a --markdown flag).
func WriteMarkdownOf(w io.Writer, path string) error {
	sums, err := ReadSummaries(path)
	if err != nil {
		return err
	}
	WriteMarkdown(w, sums)
	return nil
}

// ReadSummaries reads the JSON lines of summaries in a results file, or,
// where path is missing, in its gzip-compressed form path.gz (committed
// results are kept compressed).
func ReadSummaries(path string) ([]Summary, error) {
	f, err := os.Open(path)
	var r io.Reader = f
	if errors.Is(err, os.ErrNotExist) {
		if gz, gzErr := os.Open(path + ".gz"); gzErr == nil {
			f, err = gz, nil
			zr, zErr := gzip.NewReader(gz)
			if zErr != nil {
				gz.Close()
				return nil, fmt.Errorf("%s.gz: %w", path, zErr)
			}
			r = zr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	defer f.Close()
	var out []Summary
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s Summary
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s:%d: not a summary of package experiment: %w", path, line, err)
		}
		if len(s.Methods) == 0 || len(s.PerTarget) != len(s.Targets) {
			return nil, fmt.Errorf("%s:%d: problem %q has no methods or not one entry per target: not a summary of package experiment", path, line, s.Problem)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no summaries", path)
	}
	return out, nil
}

// TuningFrom takes the chosen settings of an earlier summary, to run the
// reported trials again without tuning; where F* is the lowest value
// reached, the summary's F* is where it starts.
func TuningFrom(s Summary) (*Tuning, error) {
	if s.Tuning == nil {
		return nil, fmt.Errorf("summary of %s has no tuning record", s.Problem)
	}
	fStar := math.Inf(1)
	if s.FStarReached {
		fStar = s.FStar
	}
	t := TuningOf("settings from an earlier summary ("+s.Tuning.About+")", s.Tuning.Choices, fStar)
	if slices.ContainsFunc(t.Choices, func(c Choice) bool { return c.Family.Auto }) {
		return nil, fmt.Errorf("summary of %s: the auto method cannot be rerun from a file", s.Problem)
	}
	return t, nil
}

// TuningOf makes a Tuning from settings chosen elsewhere, with F* where it
// is the lowest value reached (+Inf: none yet).
func TuningOf(about string, choices []Choice, fStar float64) *Tuning {
	// A copy: the caller's choices (a summary's, read from a file) keep
	// their fields.
	t := &Tuning{About: about, Choices: slices.Clone(choices), fStar: fStar}
	for i := range t.Choices {
		t.Choices[i].Family = t.Choices[i].Best.Family()
		t.Choices[i].Name = t.Choices[i].Family.Name()
	}
	return t
}
