package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// readSummaries reads the JSON lines that --json printed.
func readSummaries(path string) ([]summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	defer f.Close()
	var out []summary
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s summary
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return nil, fmt.Errorf("%s:%d: not a summary printed by --json: %w", path, line, err)
		}
		for _, m := range methodSpecs {
			if _, ok := s.Methods[m.Label]; ok {
				s.order = append(s.order, m.Label)
			}
		}
		if len(s.order) == 0 {
			return nil, fmt.Errorf("%s:%d: data set %q has no methods", path, line, s.Dataset)
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

// writeMarkdown writes the tables of BENCHMARKS.md and the README from
// summaries: the samples each method needs at its best setting for each gap,
// and the ratio of best-tuned L-SGD's samples to the best MLMC's.
func writeMarkdown(w io.Writer, sums []summary) {
	fmt.Fprintln(w, "Median generated samples to reach each gap, every method at its best setting for that gap (in brackets: the trials, of 10, that reached it; — where the median trial did not):")
	fmt.Fprintln(w)
	fmt.Fprint(w, "| data set | gap |")
	for _, m := range methodSpecs {
		fmt.Fprintf(w, " %s |", m.Label)
	}
	fmt.Fprintln(w, " L-SGD / best MLMC |")
	fmt.Fprint(w, "|---|---|")
	for range methodSpecs {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w, "---|")
	for _, s := range sums {
		for _, gv := range gaps {
			gr := s.PerGap[gapKey(gv)]
			fmt.Fprintf(w, "| %s | %g%% |", s.Dataset, gv*100)
			for _, m := range methodSpecs {
				e, ok := gr.Methods[m.Label]
				if !ok {
					fmt.Fprint(w, " not run |")
					continue
				}
				fmt.Fprintf(w, " %s (%d) |", mdSamples(e.Samples), e.Reached)
			}
			fmt.Fprintf(w, " %s |\n", mdRatio(gr.Ratio, gr.BestMLMC))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Best-tuned L-SGD against the best MLMC method at each gap: median samples with the median's order-statistic interval (its coverage in brackets under the data set), and the ratio of the medians:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| data set | gap | L-SGD: L, step | L-SGD samples | best MLMC: method, L, step | its samples | L-SGD / MLMC |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---:|---:|")
	for _, s := range sums {
		for _, gv := range gaps {
			gr := s.PerGap[gapKey(gv)]
			l, okL := gr.Methods["L-SGD"]
			b, okB := gr.Methods[gr.BestMLMC]
			if !okL || !okB {
				continue
			}
			fmt.Fprintf(w, "| %s (%.1f%%) | %g%% | %s, %g | %s | %s, %s, %g | %s | %s |\n", s.Dataset, 100*s.CICoverage, gv*100,
				fmtLevel(l.L), l.Step, mdInterval(l.Samples, l.CI), gr.BestMLMC, fmtLevel(b.L), b.Step, mdInterval(b.Samples, b.CI), mdRatio(gr.Ratio, ""))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each method at its tuned setting (samples to 1% / 0.3% / 0.1%; median final gap with its interval):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| data set | F(x0) | F* | method | L | step | D1 | to 1% | to 0.3% | to 0.1% | final gap |")
	fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range sums {
		for i, name := range s.order {
			m := s.Methods[name]
			f0, fs := "", ""
			if i == 0 {
				f0, fs = fmt.Sprintf("%.6g", s.F0), fmt.Sprintf("%.6g", s.FStar)
			}
			d1 := ""
			if m.D1 > 0 {
				d1 = fmt.Sprint(m.D1)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %g | %s |", s.Dataset, f0, fs, name, fmtLevel(m.L), m.Step, d1)
			for _, gv := range gaps {
				fmt.Fprintf(w, " %s |", mdSamples(m.SamplesToGap[gapKey(gv)]))
			}
			fmt.Fprintf(w, " %s |\n", mdInterval(m.FinalGap, m.FinalGapCI))
		}
	}
}

func mdSamples(p *float64) string {
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

// mdInterval is "median [lo, hi]", with "—" for a missing median and "∞"
// for an end that never reached the gap or left F's domain.
func mdInterval(m *float64, ci [2]*float64) string {
	if m == nil {
		return "—"
	}
	end := func(p *float64) string {
		if p == nil {
			return "∞"
		}
		return fmt.Sprintf("%.3g", *p)
	}
	return fmt.Sprintf("%.3g [%s, %s]", *m, end(ci[0]), end(ci[1]))
}

func mdGap(g *float64) string {
	if g == nil {
		return "infinite"
	}
	return fmt.Sprintf("%.3g", *g)
}
