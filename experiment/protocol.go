package experiment

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/simclr-go/simclr/mlmc"
)

// Protocol is how an experiment is run: the targets, the budget and its
// logged points, the tuning and reported seeds, the interval's confidence.
// Zero values take the defaults stated on each field.
type Protocol struct {
	// Targets are the gaps (or errors) at which the cost is counted
	// (default 1%, 0.3%, 0.1%).
	Targets []float64
	// Budget is a trial's cost budget (a Method's own Budget overrides it).
	Budget int64
	// Points gives the logged points of a budget: the costs at which a
	// trial's value is recorded, plotted and read by the stays-below rule
	// (default GeometricGrid(budget, 1.1)).
	Points func(budget int64) []int64
	// TuningSeeds are the seeds of the grid search (default 1001, 1002,
	// 1003); the reported trials never use them.
	TuningSeeds []uint64
	// Trials is the number of reported trials, seeds FirstSeed,
	// FirstSeed+1, ... (default 10 from seed 1).
	Trials    int
	FirstSeed uint64
	// Confidence is the least coverage of the median's interval (default
	// 0.95).
	Confidence float64
	// Criterion is the tuning criterion of the overall-tuned setting.
	Criterion Criterion
	// Workers is the number of trials run at a time (default GOMAXPROCS).
	Workers int
	// Progress, when set, receives a line at most every ProgressEvery
	// (default 10 s) with the trials done and the time left at the rate
	// so far: a grid search takes minutes.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Criterion is how the grid search scores a setting over the tuning seeds
// (smaller is better).
type Criterion int

const (
	// MeanGapLateHalf is the median over tuning seeds of the mean gap over
	// the logged points in the second half of the budget: a setting that
	// reaches a small gap and stays there wins.
	MeanGapLateHalf Criterion = iota
	// CostToFirstTarget is the median over tuning seeds of the cost after
	// which the gap stays at or below the first target, a seed that does
	// not get there counting as twice the budget.
	CostToFirstTarget
)

func (c Criterion) String() string {
	switch c {
	case MeanGapLateHalf:
		return "median over seeds of the mean gap over the second half of the budget"
	case CostToFirstTarget:
		return "median over seeds of the cost after which the gap stays at or below the first target (not reached: twice the budget)"
	}
	return fmt.Sprintf("Criterion(%d)", int(c))
}

func (pr Protocol) withDefaults() Protocol {
	if len(pr.Targets) == 0 {
		pr.Targets = []float64{0.01, 0.003, 0.001}
	}
	if pr.Points == nil {
		pr.Points = func(b int64) []int64 { return GeometricGrid(b, 1.1) }
	}
	if len(pr.TuningSeeds) == 0 {
		pr.TuningSeeds = []uint64{1001, 1002, 1003}
	}
	if pr.Trials == 0 {
		pr.Trials = 10
	}
	if pr.FirstSeed == 0 {
		pr.FirstSeed = 1
	}
	if pr.Confidence == 0 {
		pr.Confidence = 0.95
	}
	if pr.Workers < 1 {
		pr.Workers = runtime.GOMAXPROCS(0)
	}
	return pr
}

func (pr Protocol) check() error {
	switch {
	case pr.Budget < 0:
		return fmt.Errorf("budget %d: give a positive budget", pr.Budget)
	case pr.Trials < 1:
		return fmt.Errorf("%d trials: run at least 1", pr.Trials)
	case pr.Confidence <= 0 || pr.Confidence >= 1:
		return fmt.Errorf("confidence %g is not in (0, 1)", pr.Confidence)
	}
	return nil
}

func (pr Protocol) budget(m Method) int64 {
	if m.Budget > 0 {
		return m.Budget
	}
	return pr.Budget
}

// Scored is one setting of the grid search with its scores on the tuning
// seeds: every setting is kept, the losers too.
type Scored struct {
	Setting Method `json:"setting"`
	// Score is the criterion's value (null: infinite).
	Score *float64 `json:"score"`
	// StaysBelow and FirstTouch are the medians over the tuning seeds of
	// the cost to each target by the two rules (null: not reached).
	StaysBelow []*float64 `json:"stays_below"`
	FirstTouch []*float64 `json:"first_touch"`
}

// Choice is what tuning chose within one family.
type Choice struct {
	Family Family `json:"-"`
	Name   string `json:"name"`
	// Best has the smallest score; Stays[i] and First[i] the smallest
	// median cost to target i by the stays-below and the first-touch rule
	// (ties: the smaller score).
	Best  Method   `json:"best"`
	Stays []Method `json:"stays_below"`
	First []Method `json:"first_touch"`
}

// Tuning is the outcome of a grid search, or the settings taken from an
// earlier summary or given as they are (Fixed).
type Tuning struct {
	Choices []Choice `json:"choices"`
	// Settings are every setting tried (empty for Fixed and From).
	Settings []Scored `json:"settings,omitempty"`
	// Edges say which chosen values sit at the edge of their grid, where
	// the grid should be widened.
	Edges []string `json:"edges,omitempty"`
	// About says how the settings were chosen.
	About string `json:"about"`
	// fStar is the lowest value the tuning runs reached (Optimum.Reached).
	fStar float64
}

// Fixed makes a Tuning that runs each method as it is: no grid search (a
// problem whose settings were chosen by hand, or the auto method).
func Fixed(about string, methods ...Method) *Tuning {
	var choices []Choice
	for _, m := range methods {
		choices = append(choices, Choice{Best: m})
	}
	return TuningOf(about, choices, math.Inf(1))
}

// job is one trial of a setting.
type job struct {
	m    Method
	seed uint64
}

// session holds what the runs of one experiment share: the problem, the
// protocol and the gauge (F(x0), F* so far).
type session struct {
	p  *Problem
	pr Protocol
	g  gauge
}

func newSession(p *Problem, pr Protocol) (*session, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	pr = pr.withDefaults()
	if err := pr.check(); err != nil {
		return nil, fmt.Errorf("problem %s: %w", p.Name, err)
	}
	g, err := gaugeOf(p)
	if err != nil {
		return nil, err
	}
	return &session{p: p, pr: pr, g: g}, nil
}

// gaugeOf is how p's values become gaps: the relative gap from F(x0) and
// F* (+Inf where F* is the lowest value reached and none is known yet),
// or, where the targets are read on Error, the Error as it is, with the
// Objective and F* kept for auto's claims, which are of a relative
// objective gap.
func gaugeOf(p *Problem) (gauge, error) {
	g := gauge{err: p.Error != nil}
	switch {
	case p.Error == nil:
		g.f0, _ = p.Objective(p.X0)
		g.fStar = p.FStar.Value
		if p.FStar.Reached && g.fStar == 0 {
			g.fStar = math.Inf(1)
		}
	case p.Objective != nil:
		g.objective = p.Objective
		g.f0, _ = p.Objective(p.X0)
		g.fStar = p.FStar.Value
		if p.FStar.Reached || math.IsNaN(g.f0) || math.IsInf(g.f0, 0) || math.IsInf(g.fStar, 0) || !(g.f0 > g.fStar) {
			return g, fmt.Errorf("problem %s: its targets are read on Error and it has an Objective, so FStar must be the Objective's known optimum, below F(x0) = %g (auto's claims are checked on that gap); FStar is %+v: set FStar.Value, or leave the Objective out", p.Name, g.f0, p.FStar)
		}
	}
	return g, nil
}

// everyIterate says first touches are read during the run: the value is
// cheap and the gap known while the run goes.
func (s *session) everyIterate() bool {
	return s.p.EveryIterate && (s.p.Error != nil || !s.p.FStar.Reached)
}

// run runs the jobs pr.Workers at a time and returns their traces in
// order; where F* is the lowest value reached, it lowers it.
func (s *session) run(jobs []job) ([]Trace, error) {
	p, pr, every := s.p, s.pr, s.everyIterate()
	for _, j := range jobs {
		if pr.budget(j.m) < 1 {
			return nil, fmt.Errorf("problem %s: %s has no budget: set the protocol's Budget or the method's", p.Name, j.m)
		}
	}
	trs := make([]Trace, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	prog := newProgress(pr.Progress, pr.ProgressEvery, p.Name, len(jobs))
	for range min(pr.Workers, max(len(jobs), 1)) {
		wg.Go(func() {
			for i := range next {
				b := pr.budget(jobs[i].m)
				trs[i], errs[i] = trial(p, jobs[i].m, jobs[i].seed, b, pr.Points(b), pr.Targets, s.g, every)
				prog.done()
			}
		})
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("problem %s: %w", p.Name, err)
		}
	}
	if p.Error == nil && p.FStar.Reached {
		for _, tr := range trs {
			for _, v := range tr.Values {
				s.g.fStar = min(s.g.fStar, v)
			}
		}
	}
	return trs, nil
}

// gaps are a trace's gaps at its logged points.
func (s *session) gaps(tr Trace) []float64 {
	out := make([]float64, len(tr.Values))
	for k, v := range tr.Values {
		out[k] = s.g.gap(v)
	}
	return out
}

// passages are the trials' costs to target i by the stays-below rule or
// the first touch (+Inf: not reached).
func (s *session) passages(trs []Trace, m Method, i int, stays bool) []float64 {
	points := s.pr.Points(s.pr.budget(m))
	out := make([]float64, len(trs))
	for j, tr := range trs {
		var c int64
		switch {
		case stays:
			c = StaysBelow(points, s.gaps(tr), s.pr.Targets[i])
		case tr.firstRead:
			c = tr.First[i]
		default:
			c = FirstTouch(points, s.gaps(tr), s.pr.Targets[i])
		}
		out[j] = math.Inf(1)
		if c >= 0 {
			out[j] = float64(c)
		}
	}
	return out
}

// score is the tuning criterion over the traces of one setting.
func (s *session) score(trs []Trace, m Method) float64 {
	b := s.pr.budget(m)
	points := s.pr.Points(b)
	scores := make([]float64, len(trs))
	for j, tr := range trs {
		switch s.pr.Criterion {
		case CostToFirstTarget:
			c := StaysBelow(points, s.gaps(tr), s.pr.Targets[0])
			scores[j] = float64(c)
			if c < 0 {
				scores[j] = 2 * float64(b)
			}
		default:
			sum, n := 0.0, 0
			for k, pt := range points {
				if pt >= b/2 {
					sum += s.g.gap(tr.Values[k])
					n++
				}
			}
			scores[j] = sum / float64(n)
		}
	}
	return Median(scores)
}

// Tune runs every candidate on the tuning seeds and chooses, within each
// family (estimator kind), the setting with the best criterion and the
// settings with the smallest median cost to each target by the
// stays-below and the first-touch rules.
func Tune(p *Problem, pr Protocol, candidates []Method) (*Tuning, error) {
	return TuneReusing(p, pr, candidates, nil)
}

// TuneReusing is Tune where the candidates that prior already scores (the
// tuning record of an earlier summary of the same problem, budget, targets
// and tuning seeds) take those scores instead of running again: a grid
// widened after a search runs only its new settings, and chooses exactly
// as Tune over the whole grid would, since each setting's runs depend only
// on it and the seeds. Not where F* is the lowest value reached: new runs
// may lower it, and with it every earlier setting's gaps.
func TuneReusing(p *Problem, pr Protocol, candidates []Method, prior []Scored) (*Tuning, error) {
	s, err := newSession(p, pr)
	if err != nil {
		return nil, err
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("problem %s: no settings to tune", p.Name)
	}
	pr = s.pr
	ns, nt := len(pr.TuningSeeds), len(pr.Targets)
	known := map[string]Scored{}
	for _, r := range prior {
		if len(r.StaysBelow) != nt || len(r.FirstTouch) != nt {
			return nil, fmt.Errorf("problem %s: the earlier score of %s has %d and %d costs, not one per target (%d): reuse a tuning of the same targets",
				p.Name, r.Setting, len(r.StaysBelow), len(r.FirstTouch), nt)
		}
		known[r.Setting.Key()] = r
	}
	var jobs []job
	reused := 0
	for _, m := range candidates {
		if _, ok := known[m.Key()]; ok {
			reused++
			continue
		}
		for _, seed := range pr.TuningSeeds {
			jobs = append(jobs, job{m, seed})
		}
	}
	if reused > 0 && p.Error == nil && p.FStar.Reached {
		return nil, fmt.Errorf("problem %s: F* is the lowest value any run reaches, which new settings may lower, and with it the gaps of the %d earlier scores: tune every setting again", p.Name, reused)
	}
	trs, err := s.run(jobs)
	if err != nil {
		return nil, err
	}
	about := fmt.Sprintf("%d settings x seeds %v", len(candidates), pr.TuningSeeds)
	if reused > 0 {
		about += fmt.Sprintf(" (%d scored by an earlier tuning on the same seeds, taken from it)", reused)
	}
	t := &Tuning{About: fmt.Sprintf("%s; criterion: %s; per target the smallest median cost by each rule",
		about, pr.Criterion), fStar: s.g.fStar}
	ran := 0
	for _, m := range candidates {
		if row, ok := known[m.Key()]; ok {
			t.Settings = append(t.Settings, row)
			continue
		}
		runs := trs[ran*ns : (ran+1)*ns]
		ran++
		row := Scored{Setting: m, Score: finitePtr(s.score(runs, m))}
		for i := range pr.Targets {
			row.StaysBelow = append(row.StaysBelow, finitePtr(Median(s.passages(runs, m, i, true))))
			row.FirstTouch = append(row.FirstTouch, finitePtr(Median(s.passages(runs, m, i, false))))
		}
		t.Settings = append(t.Settings, row)
	}
	t.Choices = Choose(t.Settings, len(pr.Targets))
	t.Edges = edges(t.Settings, t.Choices)
	return t, nil
}

// Choose makes each family's choices from scored settings, the families in
// the order they first appear: the setting with the smallest score, and
// per target the smallest median cost by each rule, ties going to the
// smaller score, then to the earlier setting; a score or cost that is
// missing (null: infinite or not reached) counts as +Inf. Tune chooses so;
// a search that scores settings in several rounds chooses over all of them
// with it.
func Choose(rows []Scored, targets int) []Choice {
	val := func(ps []*float64, i int) float64 {
		if i >= len(ps) || ps[i] == nil {
			return math.Inf(1)
		}
		return *ps[i]
	}
	score := func(r Scored) float64 { return val([]*float64{r.Score}, 0) }
	var families []Family
	for _, r := range rows {
		if f := r.Setting.Family(); !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	var out []Choice
	for _, f := range families {
		// pick is the family's setting with the smallest cost, ties going
		// to the smaller score, then to the earlier setting.
		pick := func(cost func(r Scored) float64) Method {
			b := -1
			for i, r := range rows {
				if r.Setting.Family() == f && (b < 0 || cost(r) < cost(rows[b]) || (cost(r) == cost(rows[b]) && score(r) < score(rows[b]))) {
					b = i
				}
			}
			return rows[b].Setting
		}
		c := Choice{Family: f, Name: f.Name(), Best: pick(score)}
		for i := range targets {
			c.Stays = append(c.Stays, pick(func(r Scored) float64 { return val(r.StaysBelow, i) }))
			c.First = append(c.First, pick(func(r Scored) float64 { return val(r.FirstTouch, i) }))
		}
		out = append(out, c)
	}
	return out
}

// Axis is one numeric setting of a method along which a grid is laid out,
// for finding the chosen values at its edges (and for widening it there).
type Axis struct {
	Name string
	// Applies says a method has the setting (nil: every method has it).
	Applies func(m Method) bool
	Value   func(m Method) float64
	// End, when set, says v is a value the setting cannot go beyond (the
	// minimum level for L, one base estimate for D1, a constant step for
	// the decay): a choice there is at no edge of the grid.
	End func(v float64, m Method) bool
	// Next, when set, is m moved one value beyond its value in direction
	// dir (+1 up, -1 down), or why it cannot move there (a cap): a search
	// that widens its grid at the edges (TuneWidened) uses it, never down
	// from an End.
	Next func(m Method, dir int) (Method, string)
}

// gridAxes are the axes of the harness's edge notes.
var gridAxes = []Axis{
	{Name: "step", Value: func(m Method) float64 { return m.Step }},
	{Name: "L", Applies: func(m Method) bool { return !m.Family().Unbounded() },
		Value: func(m Method) float64 { return float64(m.Config.MaxLevel) },
		End:   func(v float64, m Method) bool { return v == float64(m.Config.MinLevel) }},
	{Name: "D1", Value: func(m Method) float64 { return float64(m.Config.D1) },
		End: func(v float64, _ Method) bool { return v <= 1 }},
	// Decay t0 0 means a constant step, the limit of an ever larger t0, so
	// it sorts above every t0 tried.
	{Name: "decay t0", Value: func(m Method) float64 {
		if m.Decay == 0 {
			return math.Inf(1)
		}
		return m.Decay
	}, End: func(v float64, _ Method) bool { return math.IsInf(v, 1) }},
	{Name: "NL", Value: func(m Method) float64 { return float64(m.Config.NL) }},
}

// AtEdges calls visit for every chosen setting that sits at the smallest
// (dir -1) or largest (dir 1) value of an axis among its family's scored
// settings that have the axis; single says the family tried one value
// there (both edges at once). A choice's chosen settings are its Best and
// Stays, and with first its First too.
func AtEdges(rows []Scored, choices []Choice, axes []Axis, first bool, visit func(c Choice, a Axis, m Method, v float64, dir int, single bool)) {
	for _, c := range choices {
		chosen := append([]Method{c.Best}, c.Stays...)
		if first {
			chosen = append(chosen, c.First...)
		}
		for _, a := range axes {
			has := func(m Method) bool { return a.Applies == nil || a.Applies(m) }
			var vals []float64
			for _, r := range rows {
				if r.Setting.Family() == c.Family && has(r.Setting) {
					vals = append(vals, a.Value(r.Setting))
				}
			}
			if len(vals) == 0 {
				continue
			}
			lo, hi := slices.Min(vals), slices.Max(vals)
			for _, m := range chosen {
				if !has(m) {
					continue
				}
				v := a.Value(m)
				if v == lo {
					visit(c, a, m, v, -1, lo == hi)
				}
				if v == hi {
					visit(c, a, m, v, 1, lo == hi)
				}
			}
		}
	}
}

// edges lists the chosen values (overall, and per target by both rules)
// that sit at the smallest or largest value their family's settings tried,
// on every axis that tried at least two values (with two, either choice is
// at an edge: the grid has not yet shown that the value between or beyond
// is worse).
func edges(rows []Scored, choices []Choice) []string {
	var out, seen []string
	AtEdges(rows, choices, gridAxes, true, func(c Choice, a Axis, m Method, v float64, dir int, single bool) {
		if single || a.End != nil && a.End(v, m) {
			return
		}
		note := fmt.Sprintf("%s: %s %g is the smallest of its grid", c.Name, a.Name, v)
		if dir > 0 {
			note = fmt.Sprintf("%s: %s %g is the largest of its grid", c.Name, a.Name, v)
		}
		if !slices.Contains(seen, note) {
			seen = append(seen, note)
			out = append(out, note+" ("+m.String()+")")
		}
	})
	return out
}

// Key identifies a setting (Methods hold slices, so they are not
// comparable): its JSON form, or for the auto method its planner.
func (m Method) Key() string {
	if m.Auto != nil {
		return fmt.Sprintf("auto %p", m.Auto)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// Curve is one family's trials at its overall-tuned setting, for plots.
type Curve struct {
	Name   string
	Family Family
	Points []int64
	// Gaps[j][k] is trial j's gap at Points[k].
	Gaps [][]float64
}

// Result is a reported experiment: the summary that goes to results files
// and the curves of the plots.
type Result struct {
	Summary Summary
	Curves  []Curve
}

// Report runs each family's chosen settings (overall-tuned and best per
// target by each rule) on the reported seeds and summarises them.
func Report(p *Problem, pr Protocol, t *Tuning) (*Result, error) {
	s, err := newSession(p, pr)
	if err != nil {
		return nil, err
	}
	pr = s.pr
	if t.fStar < s.g.fStar {
		s.g.fStar = t.fStar
	}
	var settings []Method
	seen := map[string]int{}
	add := func(m Method) {
		if _, ok := seen[m.Key()]; !ok {
			seen[m.Key()] = len(settings)
			settings = append(settings, m)
		}
	}
	for _, c := range t.Choices {
		add(c.Best)
		for _, m := range c.Stays {
			add(m)
		}
		for _, m := range c.First {
			add(m)
		}
	}
	var jobs []job
	for _, m := range settings {
		for j := range pr.Trials {
			jobs = append(jobs, job{m, pr.FirstSeed + uint64(j)})
		}
	}
	trs, err := s.run(jobs)
	if err != nil {
		return nil, err
	}
	runsOf := func(m Method) []Trace { i := seen[m.Key()]; return trs[i*pr.Trials : (i+1)*pr.Trials] }
	return s.summarise(t, runsOf), nil
}

// setting picks target i's setting of a choice by a rule; a choice
// without per-target settings (Fixed) uses its Best.
func (c Choice) setting(i int, stays bool) Method {
	switch {
	case stays && i < len(c.Stays):
		return c.Stays[i]
	case !stays && i < len(c.First):
		return c.First[i]
	}
	return c.Best
}

// lsgd is the baseline family of the ratios.
var lsgd = Family{Kind: mlmc.Kind{Method: mlmc.LSGD}}

// isMLMC says a family competes for "best MLMC": a multilevel estimator
// (auto is reported on its own).
func isMLMC(f Family) bool { return !f.Auto && !f.Kind.Method.SingleLevel() }

// progress reports a run of trials: done of total, and the time left at
// the rate so far.
type progress struct {
	w           io.Writer
	every       time.Duration
	name        string
	total, n    int
	start, last time.Time
	mu          sync.Mutex
}

func newProgress(w io.Writer, every time.Duration, name string, total int) *progress {
	if every <= 0 {
		every = 10 * time.Second
	}
	now := time.Now()
	return &progress{w: w, every: every, name: name, total: total, start: now, last: now}
}

func (p *progress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	now := time.Now()
	if now.Sub(p.last) < p.every && p.n < p.total {
		return
	}
	p.last = now
	el := now.Sub(p.start)
	left := time.Duration(float64(el) * float64(p.total-p.n) / float64(p.n))
	fmt.Fprintf(p.w, "%s: %d of %d trials, %s elapsed, about %s left\n", p.name, p.n, p.total, el.Round(time.Second), left.Round(time.Second))
}
