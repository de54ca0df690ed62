package main

import (
	"encoding/json"
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

// settingKey identifies a setting by its JSON form (Methods hold slices).
func settingKey(m experiment.Method) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func orInf(p *float64) float64 {
	if p == nil {
		return math.Inf(1)
	}
	return *p
}

// choose derives each family's choices from scored settings by the rule of
// experiment.Tune: the smallest score, and per target the smallest median
// cost by each rule, ties going to the smaller score, the earlier setting
// on a full tie.
func choose(rows []experiment.Scored, nTargets int) []experiment.Choice {
	var out []experiment.Choice
	type best struct {
		score       float64
		stays, firs [][2]float64
	}
	var bests []best
	index := map[experiment.Family]int{}
	for _, r := range rows {
		m, sc := r.Setting, orInf(r.Score)
		cost := func(ps []*float64, i int) float64 {
			if i < len(ps) {
				return orInf(ps[i])
			}
			return math.Inf(1)
		}
		f := m.Family()
		fi, ok := index[f]
		if !ok {
			index[f] = len(out)
			c := experiment.Choice{Family: f, Name: f.Name(), Best: m}
			b := best{score: sc}
			for i := range nTargets {
				c.Stays = append(c.Stays, m)
				c.First = append(c.First, m)
				b.stays = append(b.stays, [2]float64{cost(r.StaysBelow, i), sc})
				b.firs = append(b.firs, [2]float64{cost(r.FirstTouch, i), sc})
			}
			out = append(out, c)
			bests = append(bests, b)
			continue
		}
		c, b := &out[fi], &bests[fi]
		if sc < b.score {
			c.Best, b.score = m, sc
		}
		for i := range nTargets {
			if v, s := b.stays[i], cost(r.StaysBelow, i); s < v[0] || (s == v[0] && sc < v[1]) {
				c.Stays[i], b.stays[i] = m, [2]float64{s, sc}
			}
			if v, s := b.firs[i], cost(r.FirstTouch, i); s < v[0] || (s == v[0] && sc < v[1]) {
				c.First[i], b.firs[i] = m, [2]float64{s, sc}
			}
		}
	}
	return out
}

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

// widenAxis is one numeric setting the widening moves.
type widenAxis struct {
	name string
	// applies says the family has this axis.
	applies func(m experiment.Method) bool
	value   func(m experiment.Method) float64
	// next is m moved one value in direction dir, or why it cannot move.
	next func(m experiment.Method, dir int) (experiment.Method, string)
}

var widenAxes = []widenAxis{
	{
		name:    "L",
		applies: func(m experiment.Method) bool { return !m.Family().Unbounded() },
		value:   func(m experiment.Method) float64 { return float64(m.Config.MaxLevel) },
		next: func(m experiment.Method, dir int) (experiment.Method, string) {
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
		name:    "step",
		applies: func(experiment.Method) bool { return true },
		value:   func(m experiment.Method) float64 { return m.Step },
		next: func(m experiment.Method, dir int) (experiment.Method, string) {
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
		name:    "decay t0",
		applies: func(m experiment.Method) bool { return m.Decay > 0 },
		value:   func(m experiment.Method) float64 { return m.Decay },
		next: func(m experiment.Method, dir int) (experiment.Method, string) {
			d, ok := ladderStep(decayLadder, m.Decay, dir)
			if !ok {
				return m, fmt.Sprintf("cap t0 in [%g, %g]", decayLadder[0], decayLadder[len(decayLadder)-1])
			}
			m.Decay = d
			return m, ""
		},
	},
	{
		name:    "D1",
		applies: func(m experiment.Method) bool { return m.Kind.VR },
		value:   func(m experiment.Method) float64 { return float64(m.Config.D1) },
		next: func(m experiment.Method, dir int) (experiment.Method, string) {
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

// atEdges calls visit for every chosen setting (the overall best and the
// stays-below choices; the first-touch ones are not widened, since the
// reported runs are the stays-below ones) that sits at the smallest (dir -1)
// or largest (dir 1) value of an axis among its family's scored settings;
// single says the family tried one value there (both edges at once).
func atEdges(rows []experiment.Scored, choices []experiment.Choice, visit func(c experiment.Choice, a widenAxis, m experiment.Method, v float64, dir int, single bool)) {
	for _, c := range choices {
		chosen := append([]experiment.Method{c.Best}, c.Stays...)
		for _, a := range widenAxes {
			lo, hi, ok := a.span(rows, c.Family)
			if !ok {
				continue
			}
			for _, m := range chosen {
				if !a.applies(m) {
					continue
				}
				v := a.value(m)
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

// widenings are the settings one value beyond the edge of every axis where
// a choice (overall or per target) sits at the smallest or largest value
// its family tried, skipping those already tried; stuck are the edges that
// cannot move (a cap), for the record.
func widenings(rows []experiment.Scored, choices []experiment.Choice, tried map[string]bool) (next []experiment.Method, stuck []string) {
	added := map[string]bool{}
	atEdges(rows, choices, func(c experiment.Choice, a widenAxis, m experiment.Method, v float64, dir int, _ bool) {
		n, why := a.next(m, dir)
		switch {
		case why == "floor":
		case why != "":
			note := fmt.Sprintf("%s: %s %g is at the %s (%s)", c.Name, a.name, v, why, m)
			if !slices.Contains(stuck, note) {
				stuck = append(stuck, note)
			}
		case !tried[settingKey(n)] && !added[settingKey(n)]:
			added[settingKey(n)] = true
			next = append(next, n)
		}
	})
	return next, stuck
}

// span is the smallest and largest value of the axis among the family's
// scored settings; ok is false when none of them has the axis.
func (a widenAxis) span(rows []experiment.Scored, fam experiment.Family) (lo, hi float64, ok bool) {
	var vals []float64
	for _, r := range rows {
		if r.Setting.Family() == fam && a.applies(r.Setting) {
			vals = append(vals, a.value(r.Setting))
		}
	}
	if len(vals) == 0 {
		return 0, 0, false
	}
	return slices.Min(vals), slices.Max(vals), true
}

// edgeNotes are the choices still at an edge of what their family tried
// (the harness's rule, over every axis of the widening).
func edgeNotes(rows []experiment.Scored, choices []experiment.Choice) []string {
	var out []string
	atEdges(rows, choices, func(c experiment.Choice, a widenAxis, m experiment.Method, v float64, dir int, single bool) {
		var note string
		switch {
		case dir < 0 && single: // one value tried: noted once, as the largest
		case dir > 0:
			note = fmt.Sprintf("%s: %s %g is the largest tried (%s)", c.Name, a.name, v, m)
		case !(a.name == "L" && int(v) == m.Config.MinLevel) && !(a.name == "D1" && v == 1):
			note = fmt.Sprintf("%s: %s %g is the smallest tried (%s)", c.Name, a.name, v, m)
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
		tried[settingKey(r.Setting)] = true
	}
	var todo []experiment.Method
	for _, m := range cands {
		if !tried[settingKey(m)] {
			todo = append(todo, m)
			tried[settingKey(m)] = true
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
		choices = choose(rows, len(pr.Targets))
		var next []experiment.Method
		next, stuck = widenings(rows, choices, tried)
		if round == rounds || len(next) == 0 {
			break
		}
		fmt.Fprintf(w, "  widening, round %d: %d settings one value beyond an edge\n", round+1, len(next))
		for _, m := range next {
			tried[settingKey(m)] = true
		}
		widened += len(next)
		todo = next
	}
	if carrier == nil {
		// Nothing new to run: one tuning run of a known setting gives the
		// harness's Tuning (its optimum gauge), whose fields are replaced.
		t, err := experiment.Tune(p, pr, []experiment.Method{rows[0].Setting})
		if err != nil {
			return nil, err
		}
		carrier = t
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
			if k := settingKey(r.Setting); slices.Contains(kinds, r.Setting.Family()) && !seen[k] {
				seen[k] = true
				out = append(out, r)
			}
		}
	}
	return out, nil
}
