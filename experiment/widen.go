package experiment

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// PriorScores reads the scored settings of problem p in earlier summaries
// (each path a results file; a --tuning-from flag), to be taken instead of
// run again: from each file the first summary of p, which must have pr's
// budget and targets and p's F* (its scores are gaps to it), keeping the
// settings of the families asked for (nil: every family); a setting scored
// in two files is taken from the first.
func PriorScores(paths []string, p *Problem, pr Protocol, families []Family) ([]Scored, error) {
	pr = pr.withDefaults()
	var out []Scored
	seen := map[string]bool{}
	for _, path := range paths {
		sums, err := ReadSummaries(path)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(sums, func(s Summary) bool { return s.Problem == p.Name })
		if i < 0 {
			return nil, fmt.Errorf("%s has no summary of %s", path, p.Name)
		}
		s := sums[i]
		switch {
		case s.Budget != pr.Budget || !slices.Equal(s.Targets, pr.Targets):
			return nil, fmt.Errorf("%s: %s was tuned at budget %d for targets %v, this run is at %d for %v: run at the same budget and targets",
				path, p.Name, s.Budget, s.Targets, pr.Budget, pr.Targets)
		case p.Error == nil && (p.FStar.Reached || s.FStarReached || s.FStar != p.FStar.Value):
			return nil, fmt.Errorf("%s: %s has F* = %g there (the lowest value reached: %v), %g here (reached: %v): its scores are gaps to another optimum, or to one that new runs may lower; tune without them",
				path, p.Name, s.FStar, s.FStarReached, p.FStar.Value, p.FStar.Reached)
		case s.Tuning == nil || len(s.Tuning.Settings) == 0:
			return nil, fmt.Errorf("%s: %s has no scored settings (a run that tuned nothing): give a grid search's summary", path, p.Name)
		}
		for _, r := range s.Tuning.Settings {
			if k := r.Setting.Key(); (families == nil || slices.Contains(families, r.Setting.Family())) && !seen[k] {
				seen[k] = true
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// TuneWidened is a grid search that widens itself: it tunes the candidates
// that prior (earlier scores, PriorScores) lacks, then, for at most rounds
// rounds, the settings one value beyond every axis where a choice (overall
// or per target by the stays-below rule) sits at the smallest or largest
// value its family tried, until every choice is interior or at a cap (an
// axis's Next says why it cannot move). A choice at an edge says the grid
// cut the search short; a full grid one value wider in every direction
// would cost a multiple of the grid, the line search a few settings a round.
//
// The settings are the prior ones first, then the grid's, then each
// round's, and the choices are made over all of them (Choose: ties go to
// the earlier setting); the edges are the choices still at an edge of what
// was tried, and the caps met. Each round is announced on progress (nil:
// silent). Not where F* is the lowest value reached: each round's runs may
// lower it, and with it the gaps of the rounds before.
func TuneWidened(p *Problem, pr Protocol, candidates []Method, prior []Scored, axes []Axis, rounds int, progress io.Writer) (*Tuning, error) {
	if p.Error == nil && p.FStar.Reached && (len(prior) > 0 || rounds > 0) {
		return nil, fmt.Errorf("problem %s: F* is the lowest value any run reaches, which each round of new settings may lower, and with it the gaps of the earlier scores: tune without widening or earlier scores", p.Name)
	}
	if progress == nil {
		progress = io.Discard
	}
	rows := slices.Clone(prior)
	tried := map[string]bool{}
	for _, r := range rows {
		tried[r.Setting.Key()] = true
	}
	var todo []Method
	for _, m := range candidates {
		if !tried[m.Key()] {
			todo = append(todo, m)
			tried[m.Key()] = true
		}
	}
	var carrier *Tuning
	var choices []Choice
	var stuck []string
	widened := 0
	for round := 0; ; round++ {
		if len(todo) > 0 {
			t, err := Tune(p, pr, todo)
			if err != nil {
				return nil, err
			}
			carrier = t
			rows = append(rows, t.Settings...)
		}
		choices = Choose(rows, len(pr.withDefaults().Targets))
		var next []Method
		next, stuck = widenings(rows, choices, axes, tried)
		if round == rounds || len(next) == 0 {
			break
		}
		fmt.Fprintf(progress, "  widening, round %d: %d settings one value beyond an edge\n", round+1, len(next))
		for _, m := range next {
			tried[m.Key()] = true
		}
		widened += len(next)
		todo = next
	}
	if carrier == nil {
		// Nothing new was run: the choices come from the earlier scores
		// alone (F* is known, not the lowest value reached).
		carrier = TuningOf("", choices, math.Inf(1))
	}
	carrier.Settings, carrier.Choices = rows, choices
	carrier.Edges = append(triedEdges(rows, choices, axes), stuck...)
	carrier.About = fmt.Sprintf("%d settings x tuning seeds (%d from an earlier tuning, %d from the grid, %d added by widening along the axes where a choice sat at an edge); per target the smallest median cost by each rule",
		len(rows), len(prior), len(rows)-len(prior)-widened, widened)
	return carrier, nil
}

// widenings are the settings one value beyond the edge of every axis where
// a choice (overall or per target) sits at the smallest or largest value
// its family tried, skipping those already tried and an axis's End; stuck
// are the edges that cannot move (a cap), for the record.
func widenings(rows []Scored, choices []Choice, axes []Axis, tried map[string]bool) (next []Method, stuck []string) {
	added := map[string]bool{}
	// The first-touch choices are not widened: the reported runs are the
	// stays-below ones.
	AtEdges(rows, choices, axes, false, func(c Choice, a Axis, m Method, v float64, dir int, _ bool) {
		if dir < 0 && a.End != nil && a.End(v, m) {
			return // nothing below the end
		}
		n, why := a.Next(m, dir)
		switch {
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

// triedEdges are the choices still at an edge of what their family tried,
// over every axis of a widening.
func triedEdges(rows []Scored, choices []Choice, axes []Axis) []string {
	var out []string
	AtEdges(rows, choices, axes, false, func(c Choice, a Axis, m Method, v float64, dir int, single bool) {
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
