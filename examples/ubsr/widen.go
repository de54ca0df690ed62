package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/simclr-go/simclr/experiment"
)

// Widening: the grid search goes on along every axis where a chosen
// setting sits at the edge of what its family tried, one value beyond the
// edge for that setting, until every choice is interior or at a cap. A
// choice at an edge says the grid cut the search short; a full grid one
// value wider in every direction would cost a multiple of the grid, the
// line search a few settings a round.

// Caps of the widening: a top level whose iteration costs 2^(L+1) samples
// leaves at most budget/2^(L+1) iterations, so L stops at maxWidenLevel;
// steps stay within [minStep, maxStep]; t0 and D1 move along their ladders.
const (
	maxWidenLevel = 14
	minStep       = 1.0 / 256
	maxStep       = 64.0
)

var (
	decayLadder = []float64{1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000}
	d1Ladder    = []int{1, 10, 100, 1000}
)

// ladderStep is the value next to v on a ladder in direction dir (+1 up,
// -1 down), or multiplied or divided by 3 off the ladder; ok is false past
// the ladder's end.
func ladderStep(ladder []float64, v float64, dir int) (float64, bool) {
	i := slices.Index(ladder, v)
	if i < 0 {
		if dir > 0 {
			return v * 3, v*3 <= ladder[len(ladder)-1]
		}
		return v / 3, v/3 >= ladder[0]
	}
	j := i + dir
	if j < 0 || j >= len(ladder) {
		return 0, false
	}
	return ladder[j], true
}

// widenAxes are the settings the widening moves, each with the value one
// beyond an edge.
var widenAxes = []experiment.Axis{
	{
		Name:    "L",
		Applies: func(m experiment.Method) bool { return !m.Family().Unbounded() },
		Value:   func(m experiment.Method) float64 { return float64(m.Config.MaxLevel) },
		End:     func(v float64, m experiment.Method) bool { return v == float64(m.Config.MinLevel) },
		Next: func(m experiment.Method, dir int) (experiment.Method, string) {
			l := m.Config.MaxLevel + dir
			if l < m.Config.MinLevel {
				return m, "floor"
			}
			if l > maxWidenLevel {
				return m, fmt.Sprintf("cap L = %d", maxWidenLevel)
			}
			m.Config.MaxLevel = l
			return m, ""
		},
	},
	{
		Name:  "step",
		Value: func(m experiment.Method) float64 { return m.Step },
		Next: func(m experiment.Method, dir int) (experiment.Method, string) {
			s := m.Step * math.Pow(2, float64(dir))
			if s < minStep || s > maxStep {
				return m, fmt.Sprintf("cap step in [%g, %g]", minStep, maxStep)
			}
			m.Step = s
			return m, ""
		},
	},
	{
		// t0 of a decaying schedule, among the decaying settings tried (a
		// constant step is its own schedule).
		Name:    "decay t0",
		Applies: func(m experiment.Method) bool { return m.Decay > 0 },
		Value:   func(m experiment.Method) float64 { return m.Decay },
		Next: func(m experiment.Method, dir int) (experiment.Method, string) {
			d, ok := ladderStep(decayLadder, m.Decay, dir)
			if !ok {
				return m, fmt.Sprintf("cap t0 in [%g, %g]", decayLadder[0], decayLadder[len(decayLadder)-1])
			}
			m.Decay = d
			return m, ""
		},
	},
	{
		Name:    "D1",
		Applies: func(m experiment.Method) bool { return m.Kind.VR },
		Value:   func(m experiment.Method) float64 { return float64(m.Config.D1) },
		End:     func(v float64, _ experiment.Method) bool { return v == 1 },
		Next: func(m experiment.Method, dir int) (experiment.Method, string) {
			i := slices.Index(d1Ladder, m.Config.D1) + dir
			if i < 0 {
				return m, "floor"
			}
			if i >= len(d1Ladder) {
				return m, fmt.Sprintf("cap D1 = %d", d1Ladder[len(d1Ladder)-1])
			}
			m.Config.D1 = d1Ladder[i]
			return m, ""
		},
	},
}

// widenings are the settings one value beyond the edge of every axis where
// a choice (overall or per target) sits at the smallest or largest value
// its family tried, skipping those already tried; stuck are the edges that
// cannot move (a cap), for the record.
func widenings(rows []experiment.Scored, choices []experiment.Choice, tried map[string]bool) (next []experiment.Method, stuck []string) {
	added := map[string]bool{}
	// The first-touch choices are not widened: the reported runs are the
	// stays-below ones.
	experiment.AtEdges(rows, choices, widenAxes, false, func(c experiment.Choice, a experiment.Axis, m experiment.Method, v float64, dir int, _ bool) {
		n, why := a.Next(m, dir)
		switch {
		case why == "floor":
		case why != "":
			note := fmt.Sprintf("%s: %s %g is at the %s (%s)", c.Name, a.Name, v, why, m)
			if !slices.Contains(stuck, note) {
				stuck = append(stuck, note)
			}
		case !tried[n.Key()] && !added[n.Key()]:
			added[n.Key()] = true
			next = append(next, n)
		}
	})
	return next, stuck
}

// edgeNotes are the choices still at an edge of what their family tried
// (the harness's rule, over every axis of the widening).
func edgeNotes(rows []experiment.Scored, choices []experiment.Choice) []string {
	var out []string
	experiment.AtEdges(rows, choices, widenAxes, false, func(c experiment.Choice, a experiment.Axis, m experiment.Method, v float64, dir int, single bool) {
		var note string
		switch {
		case dir < 0 && single: // one value tried: noted once, as the largest
		case dir > 0:
			note = fmt.Sprintf("%s: %s %g is the largest tried (%s)", c.Name, a.Name, v, m)
		case a.End == nil || !a.End(v, m):
			note = fmt.Sprintf("%s: %s %g is the smallest tried (%s)", c.Name, a.Name, v, m)
		}
		if note != "" && !slices.Contains(out, note) {
			out = append(out, note)
		}
	})
	return out
}

// tuneWidened tunes the candidates not already scored in prior, then widens
// for at most rounds rounds, and returns the tuning over every setting
// scored (prior ones included) with the choices and edges re-derived.
func tuneWidened(p *experiment.Problem, pr experiment.Protocol, prior []experiment.Scored, cands []experiment.Method, rounds int, w io.Writer) (*experiment.Tuning, error) {
	rows := slices.Clone(prior)
	tried := map[string]bool{}
	for _, r := range rows {
		tried[r.Setting.Key()] = true
	}
	var todo []experiment.Method
	for _, m := range cands {
		if !tried[m.Key()] {
			todo = append(todo, m)
			tried[m.Key()] = true
		}
	}
	var carrier *experiment.Tuning
	var choices []experiment.Choice
	var stuck []string
	widened := 0
	for round := 0; ; round++ {
		if len(todo) > 0 {
			t, err := experiment.Tune(p, pr, todo)
			if err != nil {
				return nil, err
			}
			carrier = t
			rows = append(rows, t.Settings...)
		}
		choices = experiment.Choose(rows, len(pr.Targets))
		var next []experiment.Method
		next, stuck = widenings(rows, choices, tried)
		if round == rounds || len(next) == 0 {
			break
		}
		fmt.Fprintf(w, "  widening, round %d: %d settings one value beyond an edge\n", round+1, len(next))
		for _, m := range next {
			tried[m.Key()] = true
		}
		widened += len(next)
		todo = next
	}
	if carrier == nil {
		// Nothing new was run: the choices come from the earlier scores
		// alone, and SR* is known (not the lowest value reached).
		carrier = experiment.TuningOf("", choices, math.Inf(1))
	}
	carrier.Settings, carrier.Choices = rows, choices
	carrier.Edges = append(edgeNotes(rows, choices), stuck...)
	carrier.About = fmt.Sprintf("%d settings x tuning seeds (%d from an earlier tuning, %d from the grid, %d added by widening along the axes where a choice sat at an edge); per target the smallest median cost by each rule",
		len(rows), len(prior), len(rows)-len(prior)-widened, widened)
	return carrier, nil
}

// priorSettings reads the scored settings of earlier runs' summaries,
// paths a comma-separated list of files that must each have had the same
// budget and targets, keeping the families asked for; a setting scored in
// two files is taken from the first.
func priorSettings(paths string, budget int64, targets []float64, kinds []experiment.Family) ([]experiment.Scored, error) {
	var out []experiment.Scored
	seen := map[string]bool{}
	for _, path := range strings.Split(paths, ",") {
		sums, err := experiment.ReadSummaries(path)
		if err != nil {
			return nil, fmt.Errorf("--tuning-from: %w", err)
		}
		sum := sums[len(sums)-1]
		if sum.Budget != budget || !slices.Equal(sum.Targets, targets) {
			return nil, fmt.Errorf("--tuning-from %s: budget %d and targets %v, this run's are %d and %v: give the same --budget and --targets", path, sum.Budget, sum.Targets, budget, targets)
		}
		if sum.Tuning == nil || len(sum.Tuning.Settings) == 0 {
			return nil, fmt.Errorf("--tuning-from %s: no tuned settings in it (a summary of --run)", path)
		}
		for _, r := range sum.Tuning.Settings {
			if k := r.Setting.Key(); slices.Contains(kinds, r.Setting.Family()) && !seen[k] {
				seen[k] = true
				out = append(out, r)
			}
		}
	}
	return out, nil
}
