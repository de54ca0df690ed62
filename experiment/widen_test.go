package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/mlmc"
)

// stepAxis doubles or halves the step, capped at 0.8 (and 0.05 below).
var stepAxis = Axis{Name: "step", Value: func(m Method) float64 { return m.Step },
	Next: func(m Method, dir int) (Method, string) {
		s := m.Step * math.Pow(2, float64(dir))
		if s > 0.8 || s < 0.05 {
			return m, "cap step in [0.05, 0.8]"
		}
		m.Step = s
		return m, ""
	}}

// levelAxis moves L by one, ending at the minimum level.
var levelAxis = Axis{Name: "L", Value: func(m Method) float64 { return float64(m.Config.MaxLevel) },
	End: func(v float64, m Method) bool { return v == float64(m.Config.MinLevel) },
	Next: func(m Method, dir int) (Method, string) {
		m.Config.MaxLevel += dir
		return m, ""
	}}

func steps(ms []Method) []float64 {
	var out []float64
	for _, m := range ms {
		out = append(out, m.Step)
	}
	return out
}

func atSteps(l int, ss ...float64) []Method {
	var ms []Method
	for _, s := range ss {
		m := lsgd0
		m.Config.MaxLevel, m.Step = l, s
		ms = append(ms, m)
	}
	return ms
}

// TestTuneWidened: on the quadratic (gap (1 - step)^(2t)) the largest step
// wins, so a grid of steps 0.1 and 0.2 widens upwards one doubling a round
// until the cap 0.8 stops it, or until the rounds run out; earlier scores
// are taken, not run again (a doctored one wins), and come first; the
// edges say where the choice still sits and which cap held it.
func TestTuneWidened(t *testing.T) {
	pr := Protocol{Budget: 100, Points: func(b int64) []int64 { return GeometricGrid(b, 1) }}
	part, err := Tune(quadraticProblem(), pr, atSteps(0, 0.2, 0.1))
	if err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	doctored := slices.Clone(part.Settings)
	doctored[1] = Scored{Setting: doctored[1].Setting, Score: &zero,
		StaysBelow: []*float64{&zero, &zero, &zero}, FirstTouch: []*float64{&zero, &zero, &zero}}
	for _, tc := range []struct {
		name      string
		prior     []Scored
		cands     []Method
		rounds    int
		wantSteps []float64
		wantBest  float64
		wantEdges []string
		wantAbout string
		wantLog   string
	}{
		{"to the cap", nil, atSteps(0, 0.1, 0.2), 5, []float64{0.1, 0.2, 0.4, 0.8}, 0.8,
			[]string{"L-SGD: step 0.8 is the largest tried", "L-SGD: step 0.8 is at the cap step in [0.05, 0.8]"},
			"4 settings x tuning seeds (0 from an earlier tuning, 2 from the grid, 2 added by widening",
			"  widening, round 1: 1 settings one value beyond an edge\n  widening, round 2: 1 settings one value beyond an edge\n"},
		{"one round", nil, atSteps(0, 0.1, 0.2), 1, []float64{0.1, 0.2, 0.4}, 0.4,
			[]string{"L-SGD: step 0.4 is the largest tried"},
			"3 settings x tuning seeds (0 from an earlier tuning, 2 from the grid, 1 added by widening",
			"  widening, round 1: 1 settings one value beyond an edge\n"},
		{"no rounds", nil, atSteps(0, 0.4, 0.8), 0, []float64{0.4, 0.8}, 0.8,
			[]string{"L-SGD: step 0.8 is the largest tried", "L-SGD: step 0.8 is at the cap"}, "(0 from an earlier tuning, 2 from the grid, 0 added", ""},
		{"from earlier scores", part.Settings, atSteps(0, 0.1, 0.4), 1, []float64{0.2, 0.1, 0.4, 0.8}, 0.8,
			[]string{"L-SGD: step 0.8 is the largest tried", "L-SGD: step 0.8 is at the cap"},
			"4 settings x tuning seeds (2 from an earlier tuning, 1 from the grid, 1 added by widening", "  widening, round 1: 1 settings"},
		{"a doctored earlier score wins", doctored, atSteps(0, 0.1), 3, []float64{0.2, 0.1, 0.05}, 0.1,
			nil, "3 settings x tuning seeds (2 from an earlier tuning, 0 from the grid, 1 added", "  widening, round 1: 1 settings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			tn, err := TuneWidened(quadraticProblem(), pr, tc.cands, tc.prior, []Axis{stepAxis}, tc.rounds, &log)
			if err != nil {
				t.Fatal(err)
			}
			var got []Method
			for _, r := range tn.Settings {
				got = append(got, r.Setting)
			}
			if !slices.Equal(steps(got), tc.wantSteps) {
				t.Errorf("settings %v, want %v", steps(got), tc.wantSteps)
			}
			if len(tn.Choices) != 1 || tn.Choices[0].Best.Step != tc.wantBest {
				t.Errorf("choices %+v, want step %g", tn.Choices, tc.wantBest)
			}
			if len(tn.Edges) != len(tc.wantEdges) {
				t.Errorf("edges %q, want %q", tn.Edges, tc.wantEdges)
			}
			for i, e := range tc.wantEdges {
				if i < len(tn.Edges) && !strings.HasPrefix(tn.Edges[i], e) {
					t.Errorf("edge %d: %q, want %q", i, tn.Edges[i], e)
				}
			}
			if !strings.Contains(tn.About, tc.wantAbout) {
				t.Errorf("about %q, want %q", tn.About, tc.wantAbout)
			}
			if !strings.HasPrefix(log.String(), tc.wantLog) || tc.wantLog == "" && log.Len() > 0 {
				t.Errorf("progress %q, want %q", log.String(), tc.wantLog)
			}
		})
	}
	reached := quadraticProblem()
	reached.FStar = Optimum{Reached: true, Value: math.Inf(1)}
	if _, err := TuneWidened(reached, pr, atSteps(0, 0.1), nil, []Axis{stepAxis}, 1, nil); err == nil || !strings.Contains(err.Error(), "lowest value") {
		t.Errorf("widening with F* reached: error %v, want one naming it", err)
	}
}

// TestWidenings: a choice at the largest L tried gets L+1 and none below
// its End; a step tried alone gets both neighbours; a choice inside the
// grid gets nothing on that axis; a setting already tried is not added
// again; a cap is recorded once, and edges name what was tried.
func TestWidenings(t *testing.T) {
	num := func(v float64) *float64 { return &v }
	row := func(m Method, score float64) Scored {
		return Scored{Setting: m, Score: num(score), StaysBelow: []*float64{num(score)}}
	}
	rows := []Scored{row(atSteps(0, 0.4)[0], 3), row(atSteps(1, 0.4)[0], 2), row(atSteps(2, 0.4)[0], 1)}
	tried := map[string]bool{atSteps(2, 0.2)[0].Key(): true}
	for _, r := range rows {
		tried[r.Setting.Key()] = true
	}
	choices := Choose(rows, 1)
	next, stuck := widenings(rows, choices, []Axis{levelAxis, stepAxis}, tried)
	var names []string
	for _, m := range next {
		names = append(names, m.String())
	}
	want := []string{"L-SGD L=3 step=0.4", "L-SGD L=2 step=0.8"}
	if !slices.Equal(names, want) || len(stuck) != 0 {
		t.Errorf("widenings %q (stuck %q), want %q", names, stuck, want)
	}
	if e := triedEdges(rows, choices, []Axis{levelAxis, stepAxis}); !slices.Equal(e, []string{
		"L-SGD: L 2 is the largest tried (L-SGD L=2 step=0.4)", "L-SGD: step 0.4 is the largest tried (L-SGD L=2 step=0.4)"}) {
		t.Errorf("edges %q", e)
	}
	// The lowest L chosen: at its End, nothing below and no edge; the
	// step tried alone goes down, and up against its cap.
	low := []Scored{row(atSteps(0, 0.8)[0], 1), row(atSteps(1, 0.8)[0], 2)}
	next, stuck = widenings(low, Choose(low, 1), []Axis{levelAxis, stepAxis}, map[string]bool{})
	if len(next) != 1 || next[0].String() != "L-SGD L=0 step=0.4" || len(stuck) != 1 || !strings.Contains(stuck[0], "cap step") {
		t.Errorf("at L's end and the step's cap: next %v, stuck %q; want step 0.4 alone and the cap once", next, stuck)
	}
	if e := triedEdges(low, Choose(low, 1), []Axis{levelAxis, stepAxis}); len(e) != 1 || !strings.Contains(e[0], "step 0.8 is the largest") {
		t.Errorf("edges %q, want the step alone (L 0 is the end)", e)
	}
}

// writeSummaries writes summaries as a results file.
func writeSummaries(t *testing.T, path string, sums ...Summary) {
	t.Helper()
	var b bytes.Buffer
	for _, s := range sums {
		if err := s.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPriorScores: the scores of the problem's summary in each file, the
// families asked for, a setting scored twice once (from the first file);
// a summary of another budget, targets or F*, one without scores, a file
// without the problem, an F* that is the lowest value reached, and a
// missing file are errors that name the file.
func TestPriorScores(t *testing.T) {
	dir := t.TempDir()
	p := quadraticProblem()
	pr := Protocol{Budget: 100}
	targets := pr.withDefaults().Targets
	num := func(v float64) *float64 { return &v }
	score := func(m Method, s float64) Scored {
		return Scored{Setting: m, Score: num(s), StaysBelow: make([]*float64, 3), FirstTouch: make([]*float64, 3)}
	}
	rt := Method{Kind: mlmc.Kind{Method: mlmc.RTMLMC}, Step: 0.1}
	sum := func(problem string, budget int64, fStar float64, rows ...Scored) Summary {
		s := Summary{Problem: problem, Budget: budget, Targets: targets, FStar: fStar,
			Methods: []MethodSummary{{Name: "L-SGD"}}, PerTarget: make([]TargetSummary, 3)}
		if rows != nil {
			s.Tuning = &Tuning{Settings: rows}
		}
		return s
	}
	file := func(name string, sums ...Summary) string {
		path := filepath.Join(dir, name)
		writeSummaries(t, path, sums...)
		return path
	}
	a := file("a.jsonl", sum("other", 7, 1, score(lsgd0, 9)),
		sum("quadratic", 100, 0, score(atSteps(0, 0.1)[0], 1), score(rt, 2)),
		sum("quadratic", 100, 0, score(atSteps(0, 0.3)[0], 1)))
	b := file("b.jsonl", sum("quadratic", 100, 0, score(atSteps(0, 0.1)[0], 5), score(atSteps(0, 0.2)[0], 3)))
	lsgdOnly := []Family{lsgd0.Family()}
	reached := quadraticProblem()
	reached.FStar = Optimum{Reached: true, Value: math.Inf(1)}
	for _, tc := range []struct {
		name     string
		p        *Problem
		paths    []string
		families []Family
		want     string // the settings' steps and scores, or the error's words
	}{
		{"one file", p, []string{a}, nil, "[0.1:1 0.1:2]"},
		{"families", p, []string{a}, lsgdOnly, "[0.1:1]"},
		{"two files, the first's score", p, []string{a, b}, lsgdOnly, "[0.1:1 0.2:3]"},
		{"budget", p, []string{file("c", sum("quadratic", 200, 0, score(lsgd0, 1)))}, nil, "c: quadratic was tuned at budget 200"},
		{"F*", p, []string{file("d", sum("quadratic", 100, 0.5, score(lsgd0, 1)))}, nil, "d: quadratic has F* = 0.5 there"},
		{"reached", reached, []string{b}, nil, "new runs may lower"},
		{"no scores", p, []string{file("e", sum("quadratic", 100, 0))}, nil, "e: quadratic has no scored settings"},
		{"no problem", p, []string{b, file("f", sum("other", 100, 0, score(lsgd0, 1)))}, nil, "f has no summary of quadratic"},
		{"missing", p, []string{filepath.Join(dir, "none")}, nil, "none: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := PriorScores(tc.paths, tc.p, pr, tc.families)
			var got string
			if err != nil {
				got = err.Error()
			} else {
				var parts []string
				for _, r := range rows {
					parts = append(parts, fmt.Sprintf("%g:%g", r.Setting.Step, *r.Score))
				}
				got = fmt.Sprint(parts)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// The scores read back are the summary's, setting for setting.
	rows, err := PriorScores([]string{b}, p, pr, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(rows)
	w, _ := json.Marshal([]Scored{score(atSteps(0, 0.1)[0], 5), score(atSteps(0, 0.2)[0], 3)})
	if !bytes.Equal(g, w) {
		t.Errorf("read %s, want %s", g, w)
	}
}
