package experiment

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// WriteMarkdown writes the tables of a results file: per target, the cost
// every family needs at its best setting for that target (stays-below
// rule, with the first-touch ratio beside it); best-tuned L-SGD against
// the best multilevel method by both rules, with the medians' intervals;
// and each family at its overall-tuned setting, the auto method's by the
// plans its trials ran, which a list then gives trial by trial (where the
// results record them). Documentation pastes them
// as they are, and a test can check that they still match the file.
func WriteMarkdown(w io.Writer, sums []Summary) {
	if len(sums) == 0 {
		return
	}
	var names []string
	for _, s := range sums {
		for _, m := range s.Methods {
			if !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	cost := sums[0].Cost
	fmt.Fprintf(w, "Median %s after which the gap stays at or below each target (checked at every logged point), every method at its best setting for that target (in brackets: the trials, of %d, that reached it; — where the median trial did not); the last two columns are best-tuned L-SGD's median over the best multilevel method's by this rule and by the first touch:\n\n",
		cost, sums[0].Trials)
	row(w, slices.Concat([]string{"problem", "target"}, names, []string{"L-SGD / best MLMC", "first touch: L-SGD / best MLMC"})...)
	rule(w, slices.Concat([]string{"---", "---"}, slices.Repeat([]string{"---:"}, len(names)), []string{"---", "---"})...)
	for _, s := range sums {
		for _, ts := range s.PerTarget {
			cells := []string{s.Problem, pct(ts.Target)}
			for _, n := range names {
				i := slices.IndexFunc(ts.StaysBelow.Methods, func(r Ranked) bool { return r.Name == n })
				if i < 0 {
					cells = append(cells, "not run")
					continue
				}
				r := ts.StaysBelow.Methods[i]
				cells = append(cells, fmt.Sprintf("%s (%d)", mdCost(r.Passage.Median), r.Passage.Reached))
			}
			row(w, append(cells, mdRatio(ts.StaysBelow.Ratio, ts.StaysBelow.BestMLMC), mdRatio(ts.FirstTouch.Ratio, ts.FirstTouch.BestMLMC))...)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Best-tuned L-SGD against the best multilevel method at each target, by each rule (stays below: the headline; first touch: the first logged cost at or below the target): median with the median's order-statistic interval (its coverage in brackets under the problem) and the ratio of the medians:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| problem | target | rule | L-SGD setting | L-SGD | best MLMC setting | best MLMC | L-SGD / MLMC |")
	fmt.Fprintln(w, "|---|---|---|---|---:|---|---:|---:|")
	for _, s := range sums {
		for _, ts := range s.PerTarget {
			for _, rr := range []struct {
				rule string
				rk   Ranking
			}{{"stays below", ts.StaysBelow}, {"first touch", ts.FirstTouch}} {
				li := slices.IndexFunc(rr.rk.Methods, func(r Ranked) bool { return r.Setting.Family() == lsgd })
				bi := slices.IndexFunc(rr.rk.Methods, func(r Ranked) bool { return r.Name == rr.rk.BestMLMC })
				if li < 0 || bi < 0 {
					continue
				}
				l, b := rr.rk.Methods[li], rr.rk.Methods[bi]
				row(w, s.Problem+" ("+coverage(s)+")", pct(ts.Target), rr.rule, short(l.Setting), mdInterval(l.Passage, s),
					b.Name+", "+short(b.Setting), mdInterval(b.Passage, s), mdRatio(rr.rk.Ratio, ""))
			}
		}
	}
	fmt.Fprintln(w)
	targets := sums[0].Targets
	fmt.Fprintf(w, "Each method at its overall-tuned setting (%s after which the gap stays at or below each target, the first touch in brackets; median final gap with its interval):\n\n", cost)
	var toTarget []string
	for _, t := range targets {
		toTarget = append(toTarget, "to "+pct(t))
	}
	row(w, slices.Concat([]string{"problem", "F(x0)", "F*", "method", "setting"}, toTarget, []string{"final gap"})...)
	rule(w, slices.Concat([]string{"---", "---:", "---:", "---", "---"}, slices.Repeat([]string{"---:"}, len(targets)+1))...)
	for _, s := range sums {
		for i, m := range s.Methods {
			f0, fs := "", ""
			if i == 0 && (s.F0 != 0 || s.FStar != 0) {
				f0, fs = fmt.Sprintf("%.6g", s.F0), fmt.Sprintf("%.6g", s.FStar)
				if s.FStarReached {
					fs += " (lowest reached)"
				}
			}
			setting := short(m.Setting)
			if m.Setting.Auto != nil && len(m.Plans) > 0 {
				setting = autoSetting(m.Plans)
			}
			cells := []string{s.Problem, f0, fs, m.Name, setting}
			for t := range s.Targets {
				cells = append(cells, fmt.Sprintf("%s (%s)", mdCost(m.StaysBelow[t].Median), mdCost(m.FirstTouch[t].Median)))
			}
			row(w, append(cells, mdInterval(Passage{Median: m.FinalGap, CI: m.FinalGapCI}, s))...)
		}
	}
	writePlans(w, sums)
	var edges []string
	for _, s := range sums {
		if s.Tuning == nil {
			continue
		}
		for _, e := range s.Tuning.Edges {
			edges = append(edges, s.Problem+": "+e)
		}
	}
	if len(edges) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Chosen values at the edge of their grid:")
		fmt.Fprintln(w)
		for _, e := range edges {
			fmt.Fprintln(w, "- "+e)
		}
	}
}

// row writes one line of a markdown table.
func row(w io.Writer, cells ...string) { fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |") }

// rule writes the line under a table's header: "---" for a column aligned
// left, "---:" for one aligned right.
func rule(w io.Writer, cols ...string) { fmt.Fprintln(w, "|"+strings.Join(cols, "|")+"|") }

// pct writes a target as a percentage: "0.3%".
func pct(t float64) string { return strconv.FormatFloat(t*100, 'g', -1, 64) + "%" }

// writePlans lists the auto method's plans trial by trial, where the
// results record them: each plan's method, L and step, from which cost
// it ran, and what its pilot spent.
func writePlans(w io.Writer, sums []Summary) {
	header := false
	for i, s := range sums {
		name := s.Problem
		same := 0
		for _, o := range sums {
			if o.Problem == s.Problem {
				same++
			}
		}
		if same > 1 { // the tables' rows of one problem, told apart
			name = fmt.Sprintf("%s (summary %d of %d)", s.Problem, i+1, len(sums))
		}
		for _, m := range s.Methods {
			if m.Setting.Auto == nil || len(m.Plans) == 0 {
				continue
			}
			if !header {
				fmt.Fprintln(w)
				fmt.Fprintf(w, "The auto method's plans, trial by trial (each plan's method, L and step, the %s from which it ran, and its pilot's cost, counted in the trial's):\n\n", s.Cost)
				header = true
			}
			for j, plans := range m.Plans {
				trial := fmt.Sprintf("trial %d", j+1)
				if len(m.Plans) == s.Trials {
					trial += fmt.Sprintf(" (seed %d)", s.FirstSeed+uint64(j))
				}
				var parts []string
				from := int64(0)
				for _, pl := range plans {
					parts = append(parts, fmt.Sprintf("from %d: %s (pilot %d)", from, planSetting(pl.Method), pl.Spent))
					from = pl.ReplanAt
				}
				fmt.Fprintf(w, "- %s, %s: %s\n", name, trial, strings.Join(parts, "; "))
			}
		}
	}
}

// autoSetting is the setting cell of the auto method: the plans its
// trials ran, stage by stage (the plan at x0, then each re-plan), each
// distinct one with the number of trials that ran it; a stage of more
// than three distinct plans shows its methods and the range of its steps.
func autoSetting(trials [][]Plan) string {
	var stages []string
	for k := 0; ; k++ {
		var order []string
		count := map[string]int{}
		kinds := map[string]int{}
		var kindOrder []string
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, plans := range trials {
			if k >= len(plans) {
				continue
			}
			m := plans[k].Method
			text := planSetting(m)
			if count[text] == 0 {
				order = append(order, text)
			}
			count[text]++
			kind := planLevels(m)
			if kinds[kind] == 0 {
				kindOrder = append(kindOrder, kind)
			}
			kinds[kind]++
			lo, hi = math.Min(lo, m.Step), math.Max(hi, m.Step)
		}
		if len(order) == 0 {
			break
		}
		var cells []string
		if len(order) <= 3 {
			for _, text := range order {
				cells = append(cells, fmt.Sprintf("%s (%d)", text, count[text]))
			}
		} else {
			for _, kind := range kindOrder {
				cells = append(cells, fmt.Sprintf("%s (%d)", kind, kinds[kind]))
			}
			cells[len(cells)-1] += fmt.Sprintf(", step %.3g to %.3g", lo, hi)
		}
		stage := strings.Join(cells, ", ")
		if k > 0 {
			stage = "re-planned: " + stage
		}
		stages = append(stages, stage)
	}
	return "auto: " + strings.Join(stages, "; ")
}

// planLevels is a planned method's estimator and top level: "RT-MLMC L 8".
func planLevels(m Method) string {
	if m.Family().Unbounded() {
		return m.Name()
	}
	return fmt.Sprintf("%s L %d", m.Name(), m.Config.MaxLevel)
}

// planSetting is a planned method as a table shows it: "RT-MLMC L 8,
// step 0.00316, t0 4000" (a planner's steps are not round numbers).
func planSetting(m Method) string {
	s := fmt.Sprintf("%s, step %.3g", planLevels(m), m.Step)
	if m.Decay > 0 {
		s += fmt.Sprintf(", t0 %.0f", m.Decay)
	}
	if m.Kind.VR && m.Config.D1 > 0 {
		s += fmt.Sprintf(", D1 %d", m.Config.D1)
	}
	return s
}

// short is a setting in a table cell: "L 5, step 0.01, D1 10".
func short(m Method) string {
	if m.Auto != nil {
		return "auto"
	}
	return m.settings(" ", ", ")
}

func mdCost(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.3g", *p)
}

func mdRatio(p *float64, best string) string {
	switch {
	case p == nil:
		return "—"
	case best == "":
		return fmt.Sprintf("%.2f", *p)
	}
	return fmt.Sprintf("%.2f (%s)", *p, best)
}

// coverage is the intervals' coverage as a table says it.
func coverage(s Summary) string {
	if s.Coverage == 0 {
		return fmt.Sprintf("no interval: %d trials", s.Trials)
	}
	return fmt.Sprintf("%.1f%%", 100*s.Coverage)
}

// mdInterval is "median [lo, hi]", "—" for a missing median and "∞" for an
// end that never reached the target (or left F's domain); the median alone
// where the trials are too few for an interval.
func mdInterval(ps Passage, s Summary) string {
	switch {
	case ps.Median == nil:
		return "—"
	case s.Coverage == 0:
		return fmt.Sprintf("%.3g", *ps.Median)
	}
	end := func(p *float64) string {
		if p == nil {
			return "∞"
		}
		return fmt.Sprintf("%.3g", *p)
	}
	return fmt.Sprintf("%.3g [%s, %s]", *ps.Median, end(ps.CI[0]), end(ps.CI[1]))
}
