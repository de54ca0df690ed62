package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
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
	// Bootstrap is the 95% percentile interval of the exponent fitted to
	// each resample of the trials (the same resample at every eps): the
	// spread the trials' noise leaves, where Measured's interval is that
	// of the fit's residuals.
	Bootstrap *[2]float64 `json:"bootstrap_95,omitempty"`
	// EpsRange is the largest and smallest eps that reached the target,
	// Decades the decades of eps between them.
	EpsRange *[2]float64 `json:"eps_range,omitempty"`
	Decades  float64     `json:"decades,omitempty"`
	// LocalLargest and LocalSmallest are the exponents between the two
	// largest and the two smallest eps reached (with a = 2: the first and
	// third, the last and third last, one step of L apart), with their
	// bootstrap 95% intervals: [value, lo, hi]. Where the fit over the whole range
	// misses, the local exponent at the smallest eps shows whether the
	// difference shrinks.
	LocalLargest  *[3]float64 `json:"local_largest_eps,omitempty"`
	LocalSmallest *[3]float64 `json:"local_smallest_eps,omitempty"`
	// EvalsSmallest is the oracle evaluations (report runs and tuning)
	// of the smallest eps reached; EvalsGrid those predicted for the
	// grid's smallest eps, EvalsGridEps, where the cell stopped short of
	// it (from the growth over the last step of L).
	EvalsSmallest float64 `json:"evals_smallest_eps,omitempty"`
	EvalsGrid     float64 `json:"evals_grid_end,omitempty"`
	EvalsGridEps  float64 `json:"grid_end_eps,omitempty"`
	Explained     string  `json:"explained,omitempty"`
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

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
		r.Explained = fmt.Sprintf("not measured: %v (%d of %d eps reached the target; %s)", err, f.N, len(pts), firstError(pts))
		return r
	}
	r.Measured = &[3]float64{round3(f.Slope), round3(f.Lo), round3(f.Hi)}
	bootstrapCell(&r, pts)
	if math.Abs(f.Slope-pred) <= tolerance {
		return r
	}
	var why []string
	if r.EpsRange != nil {
		why = append(why, fmt.Sprintf("%d eps from %.3g to %.3g (%.2f decades)", f.N, r.EpsRange[0], r.EpsRange[1], r.Decades))
	}
	if f.N < len(pts) {
		why = append(why, fmt.Sprintf("%d eps of the grid not reached or not attempted (%s)", len(pts)-f.N, firstError(pts)))
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
	if w := preAsymptoticWhy(c, pts, eps, cost); w != "" {
		why = append(why, w)
	}
	if r.LocalLargest != nil {
		l, h := r.LocalLargest, r.LocalSmallest
		trend := "the difference does not shrink at smaller eps"
		if math.Abs(h[0]-pred) < math.Abs(l[0]-pred) {
			trend = "the difference shrinks at smaller eps"
		}
		if h[1] <= pred && pred <= h[2] {
			trend += ", and the table's exponent is inside the smallest eps' interval"
		}
		why = append(why, fmt.Sprintf("local exponent %.2f [%.2f, %.2f] at the largest eps, %.2f [%.2f, %.2f] at the smallest (one step of L; bootstrap 95%%): %s",
			l[0], l[1], l[2], h[0], h[1], h[2], trend))
	}
	if c.Tuned {
		var dl, kap []string
		for _, p := range pts {
			if p.Hit == nil {
				continue
			}
			dl = append(dl, fmt.Sprint(p.Tuning.DL))
			kap = append(kap, fmt.Sprint(p.Tuning.Kappa))
		}
		why = append(why, fmt.Sprintf("tuned level offsets %s, factors %s (eps reached, descending)", strings.Join(dl, " "), strings.Join(kap, " ")))
	}
	r.Explained = fmt.Sprintf("misses the table by %+.2f: %s", f.Slope-pred, strings.Join(why, "; "))
	return r
}

// bootstrapCell fills r's bootstrap interval, eps range and local
// exponents from the points reached and their resamples' costs.
func bootstrapCell(r *cellResult, pts []point) {
	var reached []point
	for _, p := range pts {
		if p.Hit != nil {
			reached = append(reached, p)
		}
	}
	n := len(reached)
	if n < 2 {
		return
	}
	slices.SortFunc(reached, func(x, y point) int { return cmp.Compare(y.Eps, x.Eps) }) // eps descending
	r.EpsRange = &[2]float64{reached[0].Eps, reached[n-1].Eps}
	r.Decades = round3(math.Log10(reached[0].Eps / reached[n-1].Eps))
	nb := len(reached[0].Boot)
	slope := func(i, j int, ci, cj float64) float64 {
		return math.Log(cj/ci) / math.Log(reached[i].Eps/reached[j].Eps)
	}
	local := func(i, j int) *[3]float64 {
		v := [3]float64{round3(slope(i, j, reached[i].Hit.Cost, reached[j].Hit.Cost)), math.NaN(), math.NaN()}
		var bs []float64
		for b := 0; b < nb && len(reached[i].Boot) == nb && len(reached[j].Boot) == nb; b++ {
			bs = append(bs, slope(i, j, reached[i].Boot[b], reached[j].Boot[b]))
		}
		if ci, _ := percentiles(bs); ci != nil {
			v[1], v[2] = round3(ci[0]), round3(ci[1])
		} else {
			v[1], v[2] = v[0], v[0]
		}
		return &v
	}
	// With a = 2 the level L steps up every other eps of the grid: the
	// local exponents span one such step, so that the staircase of L
	// does not make them alternate.
	span := max(1, int(math.Ceil(r.A-1e-9)))
	if n <= span {
		span = n - 1
	}
	r.LocalLargest, r.LocalSmallest = local(0, span), local(n-1-span, n-1)
	// The work (oracle evaluations, the CPU cost) of the smallest eps,
	// and what the grid's two decades would take at the growth of the
	// last step of L.
	w := func(p point) float64 { return p.Evals + p.TuneEvals }
	last, prev := reached[n-1], reached[n-1-span]
	r.EvalsSmallest = w(last)
	if grid := pts[len(pts)-1].Eps; grid < last.Eps && w(prev) > 0 {
		g := math.Log(w(last)/w(prev)) / math.Log(prev.Eps/last.Eps)
		r.EvalsGrid = math.Round(w(last) * math.Pow(last.Eps/grid, g))
		r.EvalsGridEps = grid
	}
	eps := make([]float64, n)
	for i, p := range reached {
		eps[i] = p.Eps
	}
	var fits []float64
	for b := range nb {
		cost := make([]float64, n)
		for i, p := range reached {
			cost[i] = math.NaN()
			if len(p.Boot) == nb {
				cost[i] = p.Boot[b]
			}
		}
		f, err := fitExponent(eps, cost, nil)
		if err != nil {
			// Counted as unresolved, so that percentiles sees it.
			f.Slope = math.NaN()
		}
		fits = append(fits, f.Slope)
	}
	// A resample with fewer than three eps resolved has no fit; percentiles
	// refuses an interval when more than half have none.
	if ci, _ := percentiles(fits); ci != nil {
		r.Bootstrap = &[2]float64{round3(ci[0]), round3(ci[1])}
	}
}

// firstError is the first error among the points (why the grid
// stopped), "" for none.
func firstError(pts []point) string {
	for _, p := range pts {
		if p.Error != "" {
			return fmt.Sprintf("eps %.3g: %s", p.Eps, p.Error)
		}
	}
	return ""
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

// markdownTable prints the cells as the paper's table is laid out: one
// line per row, regime and estimator (in the table's order), the
// prescribed and the tuned parameters side by side, each with its
// exponent, fit and bootstrap intervals, local exponent at the smallest
// eps and range of eps; N.A. cells with their truncation study.
func markdownTable(cells []cellResult) string {
	var b strings.Builder
	b.WriteString("| row | (a, b, c) | estimator | table | prescribed: exponent [fit 95%] (bootstrap 95%) | local at smallest eps (bootstrap 95%) | eps range (decades) | tuned: exponent [fit 95%] (bootstrap 95%) | local at smallest eps | eps range (decades) |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n")
	type key struct {
		obj string
		vr  bool
		a   [3]float64
		est string
	}
	var keys []key
	seen := map[key]bool{}
	regimeOrder := map[[3]float64]int{}
	for _, c := range cells {
		k := key{c.Objective, c.VR, [3]float64{c.A, c.B, c.C}, c.Estimator}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		if _, ok := regimeOrder[k.a]; !ok {
			regimeOrder[k.a] = len(regimeOrder)
		}
	}
	rowIndex := func(k key) int {
		return slices.IndexFunc(rows, func(r Row) bool { return r.Class.String() == k.obj && r.VR == k.vr })
	}
	estIndex := func(k key) int {
		return slices.IndexFunc(methods, func(m mlmc.Method) bool { return m.DisplayName() == k.est })
	}
	slices.SortStableFunc(keys, func(x, y key) int {
		return cmp.Or(cmp.Compare(rowIndex(x), rowIndex(y)), cmp.Compare(regimeOrder[x.a], regimeOrder[y.a]), cmp.Compare(estIndex(x), estIndex(y)))
	})
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
			return "- | | "
		case c.Measured == nil:
			return "not measured | | "
		}
		m := c.Measured
		s := fmt.Sprintf("%.2f [%.2f, %.2f]", m[0], m[1], m[2])
		if c.Bootstrap != nil {
			s += fmt.Sprintf(" (%.2f, %.2f)", c.Bootstrap[0], c.Bootstrap[1])
		}
		if c.Predicted != nil && math.Abs(m[0]-*c.Predicted) > tolerance {
			s += " \\*"
		}
		local, rng := "", ""
		if l := c.LocalSmallest; l != nil {
			local = fmt.Sprintf("%.2f (%.2f, %.2f)", l[0], l[1], l[2])
			rng = fmt.Sprintf("%.3g to %.3g (%.2f)", c.EpsRange[0], c.EpsRange[1], c.Decades)
		}
		return s + " | " + local + " | " + rng
	}
	for _, k := range keys {
		row := k.obj
		if k.vr {
			row = "VR " + row
		}
		c := find(k, "prescribed")
		if c == nil {
			c = find(k, "tuned")
		}
		if c.Predicted == nil {
			// The explanation up to the measured variances, which
			// cells.jsonl keeps.
			na, _, _ := strings.Cut(c.Explained, " (over ")
			fmt.Fprintf(&b, "| %s | (%g, %g, %g) | %s | N.A. | %s | | | | | |\n", row, c.A, c.B, c.C, c.Estimator, na)
			continue
		}
		fmt.Fprintf(&b, "| %s | (%g, %g, %g) | %s | %.3g | %s | %s |\n", row, c.A, c.B, c.C, c.Estimator, *c.Predicted,
			cell(find(k, "prescribed")), cell(find(k, "tuned")))
	}
	b.WriteString("\n\\* more than 0.15 from the table's exponent (cells.jsonl says why).\n")
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

// preAsymptoticWhy explains a prescribed RT-MLMC cell of the convex or
// nonconvex row, or a prescribed V-MLMC cell of the convex row, with
// b != c by the factor R^L(-|c-b|/2)^2 of its C_iter V
// that the table's exponent leaves out (see preAsymptotic): how much it
// grows over the levels reached, what it adds to the exponent at the
// smallest eps and from which level it adds less than the tolerance, and
// the exponent with it divided out (on the nonconvex row also with the
// bias's share of the target, which the rounding of L alternates).
func preAsymptoticWhy(c cellSpec, pts []point, eps, cost []float64) string {
	r := c.Regime
	// V-MLMC's batches n_l proportional to 2^(-(b+c)l/2) give the same
	// sum as RT-MLMC's q_l; measured on the convex row only.
	lemma := c.Method == mlmc.RTMLMC || c.Method == mlmc.VMLMC && c.Row.Class == Convex
	if !lemma || c.Row.VR || c.Tuned || c.Row.Class == StronglyConvex || r.B == r.C {
		return ""
	}
	lo, hi := math.MaxInt, -1
	div, both := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		div[i], both[i] = preAsymptotic(r, p.Level), preAsymptotic(r, p.Level)
		if p.Hit == nil {
			continue
		}
		lo, hi = min(lo, p.Level), max(hi, p.Level)
		if c.Row.Class == Nonconvex {
			both[i] /= math.Pow(1-biasShare(r, p.Level, p.Eps), 2)
		}
	}
	f, err := fitExponent(eps, cost, div)
	if err != nil || hi < 1 {
		return ""
	}
	counted := "as O(1) (c < b)"
	if r.C > r.B {
		counted = "as its power 2^((c-b)L) (c > b)"
	}
	Ls, es := settlesAt(c.Row, r, hi, tolerance)
	s := fmt.Sprintf("the theorem's C_iter V = M_b M_c R^L((c-b)/2)^2, which the table counts %s, keeps a factor R^L(%g)^2 that grows towards %.3g: %.3g at L = %d, %.3g at L = %d; it adds %+.2f to the exponent from L = %d to %d, and less than %.2f per step of L only from L = %d (eps %.3g) on; with it divided out: %.2f [%.2f, %.2f]",
		counted, -math.Abs(r.C-r.B)/2, math.Pow(1-math.Exp2(-math.Abs(r.C-r.B)/2), -2), preAsymptotic(r, lo), lo, preAsymptotic(r, hi), hi,
		preAsymptoticSlope(c.Row, r, hi-1), hi-1, hi, tolerance, Ls, es, f.Slope, f.Lo, f.Hi)
	if c.Row.Class == Nonconvex {
		if fb, err := fitExponent(eps, cost, both); err == nil {
			s += fmt.Sprintf("; with the bias's share 2^(-aL)/eps^2 of the target, which leaves T proportional to V/(eps^2 - 2^(-aL))^2, divided out too: %.2f [%.2f, %.2f]", fb.Slope, fb.Lo, fb.Hi)
		}
	}
	return s
}
