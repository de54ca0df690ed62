package main

import (
	"fmt"
	"math"
	"strings"
)

// tolerance is how far a measured exponent may sit from the table's
// before the cell says why.
const tolerance = 0.15

// cellResult is one line of cells.jsonl: a cell of the table with the
// table's exponent of 1/eps and the measured one [value, lo, hi] (95%).
type cellResult struct {
	cellID
	Params    string      `json:"params"`
	Predicted *float64    `json:"predicted"`
	Measured  *[3]float64 `json:"measured"`
	Explained string      `json:"explained,omitempty"`
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func pow(x, y float64) float64 { return math.Pow(x, y) }

// summarize fits the cell's exponent and, where it misses the table's by
// more than the tolerance, says what the points show: the exponent with
// the theorems' logarithms divided out, the local slope over the largest
// and the smallest eps, and the tuned level offsets.
func summarize(c cellSpec, pts []point) cellResult {
	r := cellResult{cellID: newCellID(c.Row, c.Regime, c.Method), Params: paramsName(c.Tuned)}
	pred, logPower, _ := predicted(c.Row, c.Method, c.Regime)
	r.Predicted = &pred
	eps, cost := pointSeries(pts)
	f, err := fitExponent(eps, cost, nil)
	if err != nil {
		r.Explained = fmt.Sprintf("not measured: %v (%d of %d eps reached the target within the work limit)", err, f.N, len(pts))
		return r
	}
	r.Measured = &[3]float64{round3(f.Slope), round3(f.Lo), round3(f.Hi)}
	if math.Abs(f.Slope-pred) <= tolerance {
		return r
	}
	var why []string
	if f.N < len(pts) {
		why = append(why, fmt.Sprintf("%d of %d eps reached the target", f.N, len(pts)))
	}
	if logPower > 0 {
		// The theorems' logarithms are powers of L + 1, the levels.
		div := make([]float64, len(pts))
		for i, p := range pts {
			div[i] = math.Pow(float64(p.Level+1), float64(logPower))
		}
		if fl, err := fitExponent(eps, cost, div); err == nil {
			why = append(why, fmt.Sprintf("with the theorem's log^%d factor, (L+1)^%d, divided out: %.2f [%.2f, %.2f]", logPower, logPower, fl.Slope, fl.Lo, fl.Hi))
		}
	}
	if lo, hi, ok := localSlopes(eps, cost); ok {
		why = append(why, fmt.Sprintf("local exponent %.2f over the largest eps, %.2f over the smallest", lo, hi))
	}
	if c.Tuned {
		var dl, kap []string
		for _, p := range pts {
			dl = append(dl, fmt.Sprint(p.Tuning.DL))
			kap = append(kap, fmt.Sprint(p.Tuning.Kappa))
		}
		why = append(why, fmt.Sprintf("tuned level offsets %s, factors %s (eps descending)", strings.Join(dl, " "), strings.Join(kap, " ")))
	}
	r.Explained = fmt.Sprintf("misses the table by %+.2f: %s", f.Slope-pred, strings.Join(why, "; "))
	return r
}

// pointSeries is the eps and cost of the points (+Inf where not reached).
func pointSeries(pts []point) (eps, cost []float64) {
	for _, p := range pts {
		eps = append(eps, p.Eps)
		if p.Hit != nil {
			cost = append(cost, p.Hit.Cost)
		} else {
			cost = append(cost, math.Inf(1))
		}
	}
	return eps, cost
}

// localSlopes are the exponents between the two largest and the two
// smallest eps that reached the target (eps descending).
func localSlopes(eps, cost []float64) (first, last float64, ok bool) {
	var xs, ys []float64
	for i := range eps {
		if cost[i] > 0 && !math.IsInf(cost[i], 0) {
			xs, ys = append(xs, math.Log(1/eps[i])), append(ys, math.Log(cost[i]))
		}
	}
	n := len(xs)
	if n < 3 {
		return 0, 0, false
	}
	return (ys[1] - ys[0]) / (xs[1] - xs[0]), (ys[n-1] - ys[n-2]) / (xs[n-1] - xs[n-2]), true
}

// markdownTable prints the cells as the paper's table is laid out: one
// line per row, regime and estimator, prescribed and tuned side by side.
func markdownTable(cells []cellResult) string {
	var b strings.Builder
	b.WriteString("| row | (a, b, c) | estimator | table | prescribed [95%] | tuned [95%] |\n|---|---|---|---|---|---|\n")
	type key struct {
		obj string
		vr  bool
		a   [3]float64
		est string
	}
	seen := map[key]bool{}
	find := func(k key, params string) *cellResult {
		for i := range cells {
			c := &cells[i]
			if c.Objective == k.obj && c.VR == k.vr && [3]float64{c.A, c.B, c.C} == k.a && c.Estimator == k.est && c.Params == params {
				return c
			}
		}
		return nil
	}
	cell := func(c *cellResult) string {
		switch {
		case c == nil:
			return "-"
		case c.Measured == nil:
			return "not measured"
		}
		m := c.Measured
		s := fmt.Sprintf("%.2f [%.2f, %.2f]", m[0], m[1], m[2])
		if c.Predicted != nil && math.Abs(m[0]-*c.Predicted) > tolerance {
			s += " *"
		}
		return s
	}
	for _, c := range cells {
		k := key{c.Objective, c.VR, [3]float64{c.A, c.B, c.C}, c.Estimator}
		if seen[k] {
			continue
		}
		seen[k] = true
		row := c.Objective
		if c.VR {
			row = "VR " + row
		}
		pred := "N.A."
		if c.Predicted != nil {
			pred = fmt.Sprintf("%.3g", *c.Predicted)
		}
		if c.Predicted == nil {
			fmt.Fprintf(&b, "| %s | (%g, %g, %g) | %s | N.A. | %s | |\n", row, c.A, c.B, c.C, c.Estimator, c.Explained)
			continue
		}
		fmt.Fprintf(&b, "| %s | (%g, %g, %g) | %s | %s | %s | %s |\n", row, c.A, c.B, c.C, c.Estimator, pred,
			cell(find(k, "prescribed")), cell(find(k, "tuned")))
	}
	b.WriteString("\n* more than 0.15 from the table's exponent (cells.jsonl says why).\n")
	return b.String()
}

// checkExponent is the check of the --quick subset: every eps reached
// its target and the fitted exponent is within tol of the table's pred.
func checkExponent(pts []point, pred, tol float64) error {
	eps, cost := pointSeries(pts)
	reached := 0
	for _, c := range cost {
		if !math.IsInf(c, 0) {
			reached++
		}
	}
	if reached < len(pts) {
		return fmt.Errorf("only %d of %d eps reached the target", reached, len(pts))
	}
	f, err := fitExponent(eps, cost, nil)
	if err != nil {
		return err
	}
	if math.Abs(f.Slope-pred) > tol {
		return fmt.Errorf("exponent %.2f [%.2f, %.2f] is more than %.2f from the table's %.2f", f.Slope, f.Lo, f.Hi, tol, pred)
	}
	return nil
}
