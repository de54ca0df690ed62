package experiment

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/simclr-go/simclr/mlmc"
	"github.com/simclr-go/simclr/mlmc/sgd"
)

// scripted is a deterministic oracle that moves the iterate along a
// prescribed path: the t-th query's gradient is (x - path[t])/step, so that
// x_t = path[t] (the last value held once the path ends). Every query costs
// cost samples.
type scripted struct {
	path []float64
	step float64
	cost int64
	x    []float64
	t    int
}

func (s *scripted) MaxLevel() int { return mlmc.Unbounded }
func (s *scripted) Draw(int) (mlmc.Sample, int64, error) {
	s.t++
	return s.t, s.cost, nil
}
func (s *scripted) Eval(smp mlmc.Sample, _ mlmc.Point, _ bool, alpha float64, out []float64) error {
	t := min(smp.(int), len(s.path)) - 1
	out[0] += alpha * (s.x[0] - s.path[t]) / s.step
	return nil
}
func (s *scripted) Release(mlmc.Sample) {}

// path is |x_t| for t = 1..8 from x0 = 1: it touches 1% at t = 2, leaves
// and is back below for good at t = 4; touches 0.1% at t = 5, leaves at 6
// and stays from t = 7.
var path = []float64{0.5, 0.008, 0.02, 0.004, 0.0009, 0.002, 0.0008, 0.0005}

// scriptedProblem: trial s pays 10 s samples a query, so it reaches every
// iterate at 10 s t samples.
func scriptedProblem(errorMode bool) *Problem {
	const step = 0.5
	p := &Problem{Name: "scripted", EveryIterate: true, Problem: sgd.Problem{X0: []float64{1},
		NewOracle: func(seed uint64) (Instance, error) {
			o := &scripted{path: path, step: step, cost: 10 * int64(seed)}
			return Instance{Oracle: o, At: func(x, _ []float64) { o.x = x }}, nil
		}}}
	abs := func(x []float64) float64 { return math.Abs(x[0]) }
	if errorMode {
		p.Error = abs
	} else {
		p.Objective, p.ObjectiveAbout = func(x []float64) (float64, float64) { return abs(x), 0 }, "|x|"
		p.FStar = Optimum{Value: 0}
	}
	return p
}

var lsgd0 = Method{Kind: mlmc.Kind{Method: mlmc.LSGD}, Config: mlmc.Config{MaxLevel: 0}, Step: 0.5}

// everyTen are logged points 10, 20, ..., budget.
func everyTen(b int64) []int64 {
	var g []int64
	for c := int64(10); c <= b; c += 10 {
		g = append(g, c)
	}
	return g
}

// TestScriptedCosts checks the harness's figures on the scripted path,
// whose answers are known by hand: trial s reaches iterate t at 10 s t
// samples, so the stays-below costs are 40 s (1%), 50 s (0.3%), 70 s
// (0.1%) and the first touches 20 s, 50 s, 50 s; over seeds 1..10 the
// medians are 5.5 times those of seed 1 and the 97.9% intervals (order
// statistics 2 and 9) twice and nine times them.
func TestScriptedCosts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		error  bool
		points func(int64) []int64
		every  bool
		// per seed 1 costs by rule
		stays, first []float64
	}{
		{"error, every iterate", true, everyTen, true, []float64{40, 50, 70}, []float64{20, 50, 50}},
		{"gap, every iterate", false, everyTen, true, []float64{40, 50, 70}, []float64{20, 50, 50}},
		// Logged every 40 samples and first touches read there: trial 1 is
		// at iterates 4 (0.004) and 8 (0.0005) at the first two points, so
		// it reaches 1% at 40 and the smaller targets at 80 by both rules.
		// (Only trial 1 is checked: the others' iterates fall between.)
		{"gap, logged points only", false, func(b int64) []int64 {
			var g []int64
			for c := int64(40); c <= b; c += 40 {
				g = append(g, c)
			}
			return g
		}, false, []float64{40, 80, 80}, []float64{40, 80, 80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scriptedProblem(tc.error)
			p.EveryIterate = tc.every
			pr := Protocol{Budget: 800, Points: tc.points, Trials: 10, Workers: 3}
			res, err := Report(p, pr, Fixed("by hand", lsgd0))
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			if math.Abs(s.Coverage-0.978515625) > 1e-12 {
				t.Errorf("coverage %v, want 0.978515625 (order statistics 2 and 9 of 10)", s.Coverage)
			}
			m := s.Methods[0]
			if !tc.every {
				for i := range s.Targets {
					if a, b := m.StaysBelow[i].Trials[0], m.FirstTouch[i].Trials[0]; a == nil || b == nil || *a != tc.stays[i] || *b != tc.first[i] {
						t.Errorf("target %g, seed 1: stays below %v, first touch %v; want %g, %g", s.Targets[i], ptr(a), ptr(b), tc.stays[i], tc.first[i])
					}
				}
				return
			}
			for i := range s.Targets {
				for _, r := range []struct {
					rule string
					ps   Passage
					one  float64
				}{{"stays below", m.StaysBelow[i], tc.stays[i]}, {"first touch", m.FirstTouch[i], tc.first[i]}} {
					ps := r.ps
					if ps.Median == nil || *ps.Median != 5.5*r.one || ps.Reached != 10 {
						t.Errorf("target %g, %s: median %v reached %d, want %g by 10", s.Targets[i], r.rule, ptr(ps.Median), ps.Reached, 5.5*r.one)
					}
					if ps.CI[0] == nil || ps.CI[1] == nil || *ps.CI[0] != 2*r.one || *ps.CI[1] != 9*r.one {
						t.Errorf("target %g, %s: interval [%v, %v], want [%g, %g]", s.Targets[i], r.rule, ptr(ps.CI[0]), ptr(ps.CI[1]), 2*r.one, 9*r.one)
					}
					for j, c := range ps.Trials {
						if c == nil || *c != float64(j+1)*r.one {
							t.Errorf("target %g, %s, seed %d: %v, want %g", s.Targets[i], r.rule, j+1, ptr(c), float64(j+1)*r.one)
						}
					}
				}
			}
			if m.FinalGap == nil || *m.FinalGap != 0.0005 {
				t.Errorf("final gap %v, want 0.0005", ptr(m.FinalGap))
			}
		})
	}
}

func ptr(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

// TestReachedOptimum: with F* unknown, the harness takes the lowest value
// any run reached, and reads gaps against it.
func TestReachedOptimum(t *testing.T) {
	p := scriptedProblem(false)
	p.Objective = func(x []float64) (float64, float64) { return 5 + math.Abs(x[0]), 0 }
	p.FStar = Optimum{Reached: true, Value: math.Inf(1)}
	res, err := Report(p, Protocol{Budget: 800, Points: everyTen, Trials: 3}, Fixed("by hand", lsgd0))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.FStar != 5.0005 || !s.FStarReached || s.F0 != 6 {
		t.Fatalf("F0 = %v, F* = %v (reached %v), want 6, 5.0005, true", s.F0, s.FStar, s.FStarReached)
	}
	// The gap (|x| - 0.0005)/0.9995 stays at or below 0.1% from iterate 6
	// on (0.0015/0.9995 > 0.001 at iterate 6, so from 7): 70 for seed 1.
	if got := s.Methods[0].StaysBelow[2].Trials[0]; got == nil || *got != 70 {
		t.Errorf("seed 1 stays below 0.1%% at %v, want 70", ptr(got))
	}
	if got := s.Methods[0].FirstTouch[2].Trials[0]; got == nil || *got != 50 {
		t.Errorf("seed 1 first touches 0.1%% at %v, want 50 (read at the logged points)", ptr(got))
	}
}

// quadratic is F(x) = x^2/2 with the exact gradient at every level, one
// sample a query: gradient descent with step a gives x_t = (1 - a)^t and
// the gap (1 - a)^(2t).
type quadratic struct{ x []float64 }

func (q *quadratic) MaxLevel() int                        { return mlmc.Unbounded }
func (q *quadratic) Draw(int) (mlmc.Sample, int64, error) { return nil, 1, nil }
func (q *quadratic) Eval(_ mlmc.Sample, _ mlmc.Point, _ bool, alpha float64, out []float64) error {
	out[0] += alpha * q.x[0]
	return nil
}
func (q *quadratic) Release(mlmc.Sample) {}

func quadraticProblem() *Problem {
	return &Problem{Name: "quadratic", EveryIterate: true, Problem: sgd.Problem{X0: []float64{1},
		NewOracle: func(uint64) (Instance, error) {
			q := &quadratic{}
			return Instance{Oracle: q, At: func(x, _ []float64) { q.x = x }}, nil
		},
		Objective: func(x []float64) (float64, float64) { return x[0] * x[0] / 2, 0 }},
		FStar: Optimum{Value: 0}}
}

// TestTuneQuadratic: on the quadratic the step 0.8 wins every criterion
// (gap 0.04^t against 0.25^t and 0.81^t), reaches 1% and 0.3% at t = 2 and
// 0.1% at t = 3 (0.04^2 = 0.0016 > 0.001), and sits at the largest value of its grid.
func TestTuneQuadratic(t *testing.T) {
	var cands []Method
	for _, st := range []float64{0.1, 0.5, 0.8} {
		m := lsgd0
		m.Step = st
		cands = append(cands, m)
	}
	pr := Protocol{Budget: 100, Points: func(b int64) []int64 { return GeometricGrid(b, 1) }, Trials: 6}
	tn, err := Tune(quadraticProblem(), pr, cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(tn.Choices) != 1 || len(tn.Settings) != 3 {
		t.Fatalf("%d choices, %d settings; want 1, 3", len(tn.Choices), len(tn.Settings))
	}
	c := tn.Choices[0]
	if c.Best.Step != 0.8 || c.Stays[0].Step != 0.8 || c.First[2].Step != 0.8 {
		t.Errorf("chose %v, %v, %v; want step 0.8", c.Best, c.Stays[0], c.First[2])
	}
	if len(tn.Edges) != 1 || !strings.Contains(tn.Edges[0], "step 0.8 is the largest of its grid") {
		t.Errorf("edges %q, want step 0.8 at the largest", tn.Edges)
	}
	res, err := Report(quadraticProblem(), pr, tn)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2, 2, 3}
	for i, w := range want {
		if got := res.Summary.PerTarget[i].StaysBelow.Methods[0].Passage.Median; got == nil || *got != w {
			t.Errorf("target %g: %v samples, want %g", pr.withDefaults().Targets[i], ptr(got), w)
		}
	}
	// The step 0.1 gives gap 0.81^t: 1% at t = 22, and the tuning row says so.
	if got := tn.Settings[0].StaysBelow[0]; got == nil || *got != 22 {
		t.Errorf("step 0.1 reaches 1%% at %v on the tuning seeds, want 22", ptr(got))
	}
}

// TestMedianIntervalCoverage checks by simulation that the order-statistic
// interval covers the median with the probability CIRanks states: 20,000
// samples of n exponential draws per n, the empirical coverage within 4
// standard errors of the stated one, which is at least the confidence.
func TestMedianIntervalCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const reps, conf = 20000, 0.95
	for _, n := range []int{6, 10, 20, 31} {
		_, stated := CIRanks(n, conf)
		if stated < conf {
			t.Fatalf("n = %d: stated coverage %v below %v", n, stated, conf)
		}
		hits := 0
		xs := make([]float64, n)
		for range reps {
			for i := range xs {
				xs[i] = r.ExpFloat64()
			}
			lo, hi := MedianCI(xs, conf)
			if lo <= math.Ln2 && math.Ln2 <= hi {
				hits++
			}
		}
		got := float64(hits) / reps
		se := math.Sqrt(stated * (1 - stated) / reps)
		if math.Abs(got-stated) > 4*se {
			t.Errorf("n = %d: coverage %.4f, stated %.4f (4 SE = %.4f)", n, got, stated, 4*se)
		}
	}
}

func TestCIRanks(t *testing.T) {
	for _, c := range []struct {
		n, k int
		cov  float64
	}{{10, 2, 0.978515625}, {5, 0, 0}, {20, 6, 0.9586105346679688}} {
		k, cov := CIRanks(c.n, 0.95)
		if k != c.k || math.Abs(cov-c.cov) > 1e-12 {
			t.Errorf("n = %d: k = %d coverage %g, want %d, %g", c.n, k, cov, c.k, c.cov)
		}
	}
}

func TestStaysBelowAndFirstTouch(t *testing.T) {
	points := []int64{1, 2, 4, 8, 16}
	for _, tc := range []struct {
		name         string
		gaps         []float64
		stays, first int64
	}{
		{"always below", []float64{0, 0, 0, 0, 0}, 1, 1},
		{"crosses once", []float64{1, 1, 0, 0, 0}, 4, 4},
		{"touches, leaves, returns", []float64{1, 0, 1, 0, 0}, 8, 2},
		{"above at the end", []float64{0, 0, 0, 0, 1}, -1, 1},
		{"infinite (diverged)", []float64{1, 0, math.Inf(1), math.Inf(1), math.Inf(1)}, -1, 2},
		{"not a number", []float64{1, 0, 0, math.NaN(), 0}, 16, 2},
	} {
		if got := StaysBelow(points, tc.gaps, 0.5); got != tc.stays {
			t.Errorf("%s: StaysBelow = %d, want %d", tc.name, got, tc.stays)
		}
		if got := FirstTouch(points, tc.gaps, 0.5); got != tc.first {
			t.Errorf("%s: FirstTouch = %d, want %d", tc.name, got, tc.first)
		}
	}
}

func TestMethodJSONRoundTrip(t *testing.T) {
	for _, m := range []Method{
		lsgd0,
		{Kind: mlmc.Kind{Method: mlmc.RTMLMC, VR: true}, Config: mlmc.Config{MaxLevel: 5, B: 2, C: 1, D1: 10}, Step: 1e-4},
		{Kind: mlmc.Kind{Method: mlmc.RUMLMC}, Config: mlmc.Config{B: 2, C: 1}, Step: 0.01, Decay: 100, Budget: 1 << 20},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Method
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Key() != m.Key() || back.Name() != m.Name() {
			t.Errorf("%s: round trip gives %s (%s)", b, back.Key(), back.Name())
		}
	}
	if n := (Method{Kind: mlmc.Kind{Method: mlmc.RTMLMC, VR: true}}).Name(); n != "VR RT-MLMC" {
		t.Errorf("name %q, want VR RT-MLMC", n)
	}
}

// TestRerunFromSummary: the reported trials rerun from a summary's chosen
// settings give the same summary, and the markdown regenerates from the
// file.
func TestRerunFromSummary(t *testing.T) {
	var cands []Method
	for _, k := range []mlmc.Kind{{Method: mlmc.LSGD}, {Method: mlmc.RTMLMC}} {
		for _, st := range []float64{0.1, 0.5} {
			cands = append(cands, Method{Kind: k, Config: mlmc.Config{MaxLevel: 1}, Step: st})
		}
	}
	pr := Protocol{Budget: 200, Trials: 6}
	tn, err := Tune(quadraticProblem(), pr, cands)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Report(quadraticProblem(), pr, tn)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "q.jsonl")
	var buf bytes.Buffer
	if err := res.Summary.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sums, err := ReadSummaries(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := TuningFrom(sums[0])
	if err != nil {
		t.Fatal(err)
	}
	res2, err := Report(quadraticProblem(), pr, again)
	if err != nil {
		t.Fatal(err)
	}
	res2.Summary.Tuning = res.Summary.Tuning
	a, _ := json.Marshal(res.Summary)
	b, _ := json.Marshal(res2.Summary)
	if !bytes.Equal(a, b) {
		t.Errorf("rerun differs:\n%s\n%s", a, b)
	}
	var md strings.Builder
	WriteMarkdown(&md, sums)
	for _, want := range []string{"| quadratic | 1% |", "| quadratic (", "RT-MLMC"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// equalLevels is the quadratic with levels that all give its gradient:
// H^l = 0 above level 0, and level l costs 2^l samples.
type equalLevels struct{ quadratic }

func (q *equalLevels) Draw(l int) (mlmc.Sample, int64, error) { return nil, 1 << l, nil }
func (q *equalLevels) Eval(_ mlmc.Sample, _ mlmc.Point, diff bool, alpha float64, out []float64) error {
	if !diff {
		out[0] += alpha * q.x[0]
	}
	return nil
}

// TestAutoOnTheHarness: the auto method runs on a trial, its pilots
// counted in the trial's cost (the value at the first logged points is
// still F(x0)), and its record is kept. The quadratic's levels are all
// equal (every H^l is zero): a degenerate start auto must leave, here with
// L-SGD on the minimum level, reaching the target.
func TestAutoOnTheHarness(t *testing.T) {
	p := quadraticProblem()
	p.NewOracle = func(uint64) (Instance, error) {
		q := &equalLevels{}
		return Instance{Oracle: q, At: func(x, _ []float64) { q.x = x }}, nil
	}
	m := AutoMethod(0.001)
	tr, err := trial(p, m, 1, 100_000, GeometricGrid(100_000, 1.1), []float64{0.001}, gauge{f0: 0.5}, true)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Auto == nil || len(tr.Auto.Stages) == 0 {
		t.Fatalf("no auto record: %+v", tr)
	}
	t.Log(tr.Auto.Summary())
	if tr.Values[0] != 0.5 {
		t.Errorf("F at the first logged point = %v, want F(x0) = 0.5: the pilot's samples come first", tr.Values[0])
	}
	if pl := tr.Auto.Stages[0].Plans[0].Samples; tr.First[0] < 0 || tr.First[0] <= pl {
		t.Errorf("first touch of 0.1%% at %d, want after the first measurement's %d samples", tr.First[0], pl)
	}
	if g := tr.Values[len(tr.Values)-1] / 0.5; !(g <= 0.001) {
		t.Errorf("final gap %g, want at most 0.001", g)
	}
}

// TuningOf names each choice by its family in the Tuning it returns and
// leaves the caller's choices (a summary's, read from a file) as they were.
func TestTuningOfCopiesChoices(t *testing.T) {
	in := []Choice{{Name: "as written", Best: Method{Kind: mlmc.Kind{Method: mlmc.RTMLMC}, Step: 0.1}}}
	tn := TuningOf("test", in, math.Inf(1))
	if in[0].Name != "as written" || in[0].Family != (Family{}) {
		t.Errorf("the caller's choice became %+v", in[0])
	}
	if want := in[0].Best.Family(); tn.Choices[0].Family != want || tn.Choices[0].Name != want.Name() {
		t.Errorf("TuningOf's choice is %q (%+v), want %q", tn.Choices[0].Name, tn.Choices[0].Family, want.Name())
	}
}

// TestEdges: a choice at the smallest or largest value of an axis its family
// tried is an edge, with two values tried as with more; the ends a setting
// cannot pass (a constant step for the decay t0, one base estimate for D1,
// the minimum level for L) are not.
func TestEdges(t *testing.T) {
	at := func(step, decay float64, d1, level int) Method {
		m := lsgd0
		m.Step, m.Decay = step, decay
		m.Config.D1, m.Config.MaxLevel = d1, level
		return m
	}
	for _, tc := range []struct {
		name   string
		tried  []Method
		chosen Method
		want   []string // substrings, one per expected edge
	}{
		{"interior step", []Method{at(0.1, 0, 1, 0), at(0.5, 0, 1, 0), at(0.8, 0, 1, 0)}, at(0.5, 0, 1, 0), nil},
		{"two steps, the larger chosen", []Method{at(0.1, 0, 1, 0), at(0.5, 0, 1, 0)}, at(0.5, 0, 1, 0),
			[]string{"step 0.5 is the largest"}},
		{"two steps, the smaller chosen", []Method{at(0.1, 0, 1, 0), at(0.5, 0, 1, 0)}, at(0.1, 0, 1, 0),
			[]string{"step 0.1 is the smallest"}},
		{"constant step beside a decay", []Method{at(0.5, 0, 1, 0), at(0.5, 300, 1, 0)}, at(0.5, 0, 1, 0), nil},
		{"the only decay tried, the fastest", []Method{at(0.5, 0, 1, 0), at(0.5, 300, 1, 0)}, at(0.5, 300, 1, 0),
			[]string{"decay t0 300 is the smallest"}},
		{"decay between constant and a faster one", []Method{at(0.5, 0, 1, 0), at(0.5, 300, 1, 0), at(0.5, 10, 1, 0)},
			at(0.5, 300, 1, 0), nil},
		{"D1 1 is no edge", []Method{at(0.5, 0, 1, 0), at(0.5, 0, 4, 0)}, at(0.5, 0, 1, 0), nil},
		{"D1 at its largest", []Method{at(0.5, 0, 1, 0), at(0.5, 0, 4, 0)}, at(0.5, 0, 4, 0),
			[]string{"D1 4 is the largest"}},
		{"L at the minimum level is no edge", []Method{at(0.5, 0, 1, 0), at(0.5, 0, 1, 3)}, at(0.5, 0, 1, 0), nil},
		{"L at its largest", []Method{at(0.5, 0, 1, 0), at(0.5, 0, 1, 3)}, at(0.5, 0, 1, 3),
			[]string{"L 3 is the largest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Choice{Family: tc.chosen.Family(), Name: "L-SGD", Best: tc.chosen}
			var rows []Scored
			for _, m := range tc.tried {
				rows = append(rows, Scored{Setting: m})
			}
			got := edges(rows, []Choice{c})
			if len(got) != len(tc.want) {
				t.Fatalf("edges %q, want %d naming %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("edge %q, want one naming %q", got[i], w)
				}
			}
		})
	}
}

// TestTuneReusing: tuning the quadratic's steps 0.1 and 0.5 and then the
// grid widened to 0.8 with the first tuning's record (read back from its
// JSON, as from a results file) gives the tuning over the whole grid row
// for row, choices and edges alike, and runs only the new step: a prior
// score doctored to win is chosen, since it is not run again. Where F* is
// the lowest value reached, reusing is an error.
func TestTuneReusing(t *testing.T) {
	at := func(steps ...float64) []Method {
		var ms []Method
		for _, st := range steps {
			m := lsgd0
			m.Step = st
			ms = append(ms, m)
		}
		return ms
	}
	pr := Protocol{Budget: 100, Points: func(b int64) []int64 { return GeometricGrid(b, 1) }}
	full, err := Tune(quadraticProblem(), pr, at(0.1, 0.5, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	part, err := Tune(quadraticProblem(), pr, at(0.1, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(part)
	if err != nil {
		t.Fatal(err)
	}
	var read Tuning
	if err := json.Unmarshal(b, &read); err != nil {
		t.Fatal(err)
	}
	widened, err := TuneReusing(quadraticProblem(), pr, at(0.1, 0.5, 0.8), read.Settings)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func(*Tuning) any{
		func(t *Tuning) any { return t.Settings },
		func(t *Tuning) any { return t.Choices },
		func(t *Tuning) any { return t.Edges },
	} {
		g, _ := json.Marshal(f(widened))
		w, _ := json.Marshal(f(full))
		if !bytes.Equal(g, w) {
			t.Errorf("reusing gives\n%s\nthe whole grid\n%s", g, w)
		}
	}
	if !strings.Contains(widened.About, "2 scored by an earlier tuning") {
		t.Errorf("about %q does not say 2 settings were taken from the earlier tuning", widened.About)
	}

	// Step 0.1 (gap 0.81^t) made to look perfect: reused, it wins.
	doctored := slices.Clone(read.Settings)
	zero := 0.0
	doctored[0] = Scored{Setting: doctored[0].Setting, Score: &zero,
		StaysBelow: []*float64{&zero, &zero, &zero}, FirstTouch: []*float64{&zero, &zero, &zero}}
	got, err := TuneReusing(quadraticProblem(), pr, at(0.1, 0.5, 0.8), doctored)
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Choices[0]; c.Best.Step != 0.1 || c.Stays[2].Step != 0.1 {
		t.Errorf("chose steps %g and %g, want the doctored 0.1: the earlier setting was run again", c.Best.Step, c.Stays[2].Step)
	}

	short := doctored[:1]
	short[0].StaysBelow = short[0].StaysBelow[:2]
	if _, err := TuneReusing(quadraticProblem(), pr, at(0.1, 0.8), short); err == nil || !strings.Contains(err.Error(), "one per target") {
		t.Errorf("a score with 2 costs for 3 targets: error %v, want one naming the targets", err)
	}
	reached := quadraticProblem()
	reached.FStar = Optimum{Reached: true, Value: math.Inf(1)}
	if _, err := TuneReusing(reached, pr, at(0.1, 0.8), read.Settings); err == nil || !strings.Contains(err.Error(), "tune every setting again") {
		t.Errorf("reusing with F* reached: error %v, want one saying to tune every setting again", err)
	}
}

// noisyQuadratic is F(x) = x^2/2 with gradient x + noise, H^l = 2^-l x +
// 2^-l noise (a bias 2^-l x), level l costing 2^l; seeds records every
// seed an oracle was made with, in order.
type noisyQuadratic struct {
	x   []float64
	rng *rand.Rand
}

func (q *noisyQuadratic) MaxLevel() int { return mlmc.Unbounded }
func (q *noisyQuadratic) Draw(l int) (mlmc.Sample, int64, error) {
	return [2]float64{float64(l), q.rng.NormFloat64()}, 1 << l, nil
}
func (q *noisyQuadratic) Eval(s mlmc.Sample, _ mlmc.Point, diff bool, alpha float64, out []float64) error {
	d := s.([2]float64)
	w := math.Exp2(-d[0])
	if diff {
		out[0] += alpha * (-w*q.x[0] + w*d[1])
		return nil
	}
	out[0] += alpha * (q.x[0] + w*q.x[0] + 0.3*d[1])
	return nil
}
func (q *noisyQuadratic) Release(mlmc.Sample) {}

// TestAutoDrawsFreshNumbers: the run after a change of plan draws new
// random numbers: no oracle seed comes back after another was used (the
// step candidates share one seed, back to back, to be compared on the same
// draws). A harness that made the new plan's oracle with the trial's seed
// again would replay the first phase's draws.
func TestAutoDrawsFreshNumbers(t *testing.T) {
	p := quadraticProblem()
	var seeds []uint64
	var mu sync.Mutex
	p.NewOracle = func(seed uint64) (Instance, error) {
		mu.Lock()
		seeds = append(seeds, seed)
		mu.Unlock()
		q := &noisyQuadratic{rng: rand.New(rand.NewPCG(seed, 1))}
		return Instance{Oracle: q, At: func(x, _ []float64) { q.x = x }}, nil
	}
	tr, err := trial(p, AutoMethod(0.001), 7, 300_000, GeometricGrid(300_000, 1.1), []float64{0.001}, gauge{f0: 0.5}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Auto.Stages) < 2 {
		t.Fatalf("one stage only, nothing to check: %s", tr.Auto.Summary())
	}
	seen := map[uint64]int{}
	for i, s := range seeds {
		if j, ok := seen[s]; ok && j != i-1 {
			t.Fatalf("oracle seed %d used at %d and again at %d (of %d): the draws repeat", s, j, i, len(seeds))
		}
		seen[s] = i
	}
}

// TestTrialStopsOutsideDomain: step 2.5 on the quadratic gives x_t =
// (-1.5)^t, finite for long; with F = +Inf where |x| > 10 (outside the
// domain from t = 6), the trial is marked diverged and every logged value
// from there on is +Inf, instead of iterating on where F is not defined.
func TestTrialStopsOutsideDomain(t *testing.T) {
	p := quadraticProblem()
	p.Objective = func(x []float64) (float64, float64) {
		if math.Abs(x[0]) > 10 {
			return math.Inf(1), 0
		}
		return x[0] * x[0] / 2, 0
	}
	m := lsgd0
	m.Step = 2.5
	tr, err := trial(p, m, 1, 100, everyTen(100), []float64{0.01}, gauge{f0: 0.5}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Diverged || tr.Iterations > 11 {
		t.Errorf("diverged %v after %d iterations, want diverged by the logged point after t = 6", tr.Diverged, tr.Iterations)
	}
	for k, v := range tr.Values {
		if everyTen(100)[k] >= 10 && !math.IsInf(v, 1) {
			t.Errorf("value at %d = %v, want +Inf", everyTen(100)[k], v)
		}
	}
}

// TestProgress: a run of trials with Progress set says how many are done
// and the time left, the last line at the end.
func TestProgress(t *testing.T) {
	var out bytes.Buffer
	p := quadraticProblem()
	pr := Protocol{Budget: 100, Points: everyTen, Trials: 4, Progress: &out, ProgressEvery: time.Hour}
	if _, err := Report(p, pr, Fixed("by hand", lsgd0)); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "quadratic: 4 of 4 trials") || !strings.Contains(s, "left") {
		t.Errorf("progress %q", s)
	}
}

// TestAutoLogsStages: the auto method's line per stage reaches the log
// with the trial it belongs to.
func TestAutoLogsStages(t *testing.T) {
	p := quadraticProblem()
	p.NewOracle = func(uint64) (Instance, error) {
		q := &equalLevels{}
		return Instance{Oracle: q, At: func(x, _ []float64) { q.x = x }}, nil
	}
	var log bytes.Buffer
	if _, err := Report(p, Protocol{Budget: 100_000, Trials: 2, Workers: 1}, AutoFixed(0.01, &log)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"quadratic, seed 1: auto stage 1: target 0.1, lsgd L=0", "quadratic, seed 2: auto stage"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestMarkdownShowsAutoStages: the tables name auto's setting "auto", so
// the markdown lists each trial's stages and why it stopped.
func TestMarkdownShowsAutoStages(t *testing.T) {
	p := quadraticProblem()
	p.NewOracle = func(uint64) (Instance, error) {
		q := &equalLevels{}
		return Instance{Oracle: q, At: func(x, _ []float64) { q.x = x }}, nil
	}
	res, err := Report(p, Protocol{Budget: 100_000, Trials: 2, Workers: 1}, AutoFixed(0.01, nil))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	WriteMarkdown(&md, []Summary{res.Summary})
	for _, want := range []string{"auto's stages on quadratic", "- trial 1: 10%: lsgd L 0", "- trial 2:"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

// TestReadSummariesCompressed: a results file kept as NAME.gz reads as
// NAME does; a damaged archive is an error naming it; a missing file is an
// error too.
func TestReadSummariesCompressed(t *testing.T) {
	sum := Summary{Problem: "toy", Cost: "samples", Targets: []float64{0.01}, Trials: 1,
		Methods:   []MethodSummary{{Name: "L-SGD", StaysBelow: []Passage{{}}, FirstTouch: []Passage{{}}}},
		PerTarget: []TargetSummary{{}}}
	line, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.jsonl")
	if err := os.WriteFile(plain, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(append(line, '\n'))
	zw.Close()
	packed := filepath.Join(dir, "packed.jsonl")
	if err := os.WriteFile(packed+".gz", zipped.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := ReadSummaries(plain)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadSummaries(packed)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || len(b) != 1 || a[0].Problem != b[0].Problem || a[0].Methods[0].Name != b[0].Methods[0].Name {
		t.Errorf("plain %+v, compressed %+v: want the same one summary", a, b)
	}
	damaged := filepath.Join(dir, "damaged.jsonl")
	os.WriteFile(damaged+".gz", []byte("not gzip"), 0o644)
	if _, err := ReadSummaries(damaged); err == nil || !strings.Contains(err.Error(), "damaged.jsonl.gz") {
		t.Errorf("damaged archive: error %v, want one naming it", err)
	}
	if _, err := ReadSummaries(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Error("missing file: no error")
	}
}

// TestAutoClaimCheckedOnTheObjectiveGap: where the targets are read on an
// Error (the pricing problem's |x - x*|/|x*|) and the problem has its
// Objective and F* as well, auto's record is checked on the relative
// objective gap it plans for and claims, not on the Error. Here F = x^2/2
// from x0 = 1 with F* = 0, so the gap is x^2 and the Error |x| its square
// root: checked on the Error, a claim of 0.1% would need |x| <= 0.001.
func TestAutoClaimCheckedOnTheObjectiveGap(t *testing.T) {
	p := quadraticProblem()
	p.NewOracle = func(seed uint64) (Instance, error) {
		q := &noisyQuadratic{rng: rand.New(rand.NewPCG(seed, 1))}
		return Instance{Oracle: q, At: func(x, _ []float64) { q.x = x }}, nil
	}
	p.Error = func(x []float64) float64 { return math.Abs(x[0]) }
	s, err := newSession(p, Protocol{Budget: 300_000, Trials: 1})
	if err != nil {
		t.Fatal(err)
	}
	claims := 0
	for seed := uint64(1); seed <= 4; seed++ {
		tr, err := trial(p, AutoMethod(0.001), seed, 300_000, []int64{300_000}, nil, s.g, false)
		if err != nil {
			t.Fatal(err)
		}
		rec := tr.Auto
		gap := tr.Final[0] * tr.Final[0]
		if rec.TrueGap == nil || float64(*rec.TrueGap) != gap {
			t.Fatalf("seed %d: true gap %v, want the objective gap x^2 = %g (the Error |x| is %g)", seed, rec.TrueGap, gap, math.Abs(tr.Final[0]))
		}
		if rec.Claimed() {
			claims++
			if rec.EstimateHeld == nil || *rec.EstimateHeld != (gap <= 0.001) {
				t.Fatalf("seed %d: estimate held %v at the objective gap %g, target 0.001", seed, rec.EstimateHeld, gap)
			}
		}
	}
	if claims == 0 {
		t.Fatal("no trial claimed the target: nothing checked the claims")
	}
}

// TestErrorProblemNeedsObjectiveOptimum: a problem whose targets are read
// on an Error and which has an Objective must give that Objective's known
// optimum, below F(x0), since auto's claims are checked on it: one without
// (F* only reached, or not below F(x0)) is refused with the reason, not
// checked against a wrong F*.
func TestErrorProblemNeedsObjectiveOptimum(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fStar Optimum
		ok    bool
	}{
		{"known optimum", Optimum{Value: 0}, true},
		{"only reached", Optimum{Reached: true, Value: math.Inf(1)}, false},
		{"above F(x0)", Optimum{Value: 0.7}, false},
	} {
		p := quadraticProblem()
		p.Error = func(x []float64) float64 { return math.Abs(x[0]) }
		p.FStar = tc.fStar
		_, err := newSession(p, Protocol{Budget: 100, Trials: 1})
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "FStar") {
			t.Errorf("%s: %v", tc.name, err)
		}
		if _, err := Trial(p, lsgd0, 1, 10); (err == nil) != tc.ok {
			t.Errorf("%s: Trial: %v", tc.name, err)
		}
	}
}

// TestPct: a stage target sqrt(10) below another reads as a short
// percentage, not the float's full digits.
func TestPct(t *testing.T) {
	for _, c := range []struct {
		target float64
		want   string
	}{
		{0.1, "10%"},
		{0.1 / math.Sqrt(10), "3.16%"},
		{0.1 / math.Sqrt(10) / math.Sqrt(10), "1%"},
		{0.003, "0.3%"},
		{0.001, "0.1%"},
		{0.0125, "1.25%"},
	} {
		if got := pct(c.target); got != c.want {
			t.Errorf("pct(%v) = %q, want %q", c.target, got, c.want)
		}
	}
}
