package experiment

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// WriteMarkdown writes the tables of a results file: per target, the cost
// every family needs at its best setting for that target (stays-below
// rule, with the first-touch ratio beside it); best-tuned L-SGD against
// the best multilevel method by both rules, with the medians' intervals;
// and each family at its overall-tuned setting. Documentation pastes them
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
			cells := []string{s.Problem, f0, fs, m.Name, short(m.Setting)}
			for t := range s.Targets {
				cells = append(cells, fmt.Sprintf("%s (%s)", mdCost(m.StaysBelow[t].Median), mdCost(m.FirstTouch[t].Median)))
			}
			row(w, append(cells, mdInterval(Passage{Median: m.FinalGap, CI: m.FinalGapCI}, s))...)
		}
	}
	writeAutoStages(w, sums)
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

// pct writes a gap target as a percentage to three significant figures:
// the continuation stages' targets fall by sqrt(10), which in full precision
// reads 3.162277660168379% and 0.9999999999999999%.
func pct(t float64) string { return strconv.FormatFloat(t*100, 'g', 3, 64) + "%" }

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

// writeAutoStages lists, for every auto method, each trial's stages (the
// plan each ran, the samples and the gap estimate at its end) and why the
// run stopped: its setting in the tables is only "auto".
func writeAutoStages(w io.Writer, sums []Summary) {
	for _, s := range sums {
		for _, m := range s.Methods {
			if len(m.Auto) == 0 {
				continue
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "auto's stages on %s, per trial (target, method and L, step, samples at the stage's end, its gap estimate), and why each run stopped:\n\n", s.Problem)
			for i, rec := range m.Auto {
				var parts []string
				for _, st := range rec.Stages {
					desc := "skipped"
					if len(st.Plans) > 0 {
						pl := st.Plans[len(st.Plans)-1]
						desc = fmt.Sprintf("%s L %d, step %.3g, %d samples, estimate %.3g", pl.Method, pl.MaxLevel, st.Step, st.Samples, float64(st.GapEstimate))
					}
					parts = append(parts, fmt.Sprintf("%s: %s", pct(st.Target), desc))
				}
				fmt.Fprintf(w, "- trial %d: %s; %s\n", i+1, strings.Join(parts, "; "), rec.Stopped)
			}
		}
	}
}
