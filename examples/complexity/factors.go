package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/simclr-go/simclr/mlmc"
)

// The theorems' total cost of RT-MLMC on the convex and nonconvex rows is
// T C_iter, with T proportional to the variance bound V (the step
// [V T]^(-1/2) makes the average criterion scale with sqrt(V/T)), and the
// lemma "Variance and Per-Iteration Cost of RT-MLMC" gives, for q_l
// proportional to 2^(-(b+c)l/2),
//
//	C_iter V = M_b M_c R^L((c-b)/2)^2,  R^L(s) = sum_{l=0..L} 2^(s l).
//
// For c < b the table counts that as O(1), for c > b as its power
// 2^((c-b)L), for c = b as log^2: what is left, R^L(-|c-b|/2)^2 (c != b)
// or (L+1)^2 (c = b), grows with L towards a constant, slowly where |c-b|
// is small. preAsymptotic is that factor; the summary divides it out of a
// cell that misses, and --factors measures T, C_iter and the estimator's
// variance per eps to show which of them carries the difference.

// rsum is R^L(s) = sum_{l=0..L} 2^(s l).
func rsum(s float64, L int) float64 {
	v := 0.0
	for l := 0; l <= L; l++ {
		v += math.Exp2(s * float64(l))
	}
	return v
}

// preAsymptotic is the factor of RT-MLMC's C_iter V that the table's
// exponent leaves out at level L: R^L(-|c-b|/2)^2, or (L+1)^2 when b = c.
func preAsymptotic(r Regime, L int) float64 {
	if r.B == r.C {
		return float64((L + 1) * (L + 1))
	}
	return math.Pow(rsum(-math.Abs(r.C-r.B)/2, L), 2)
}

// levelsPerHalving is how much the theorems' level L grows when eps
// halves: log2(4/target)/a with target eps (convex rows) or eps^2.
func levelsPerHalving(row Row, a float64) float64 {
	if row.Class == Nonconvex {
		return 2 / a
	}
	return 1 / a
}

// preAsymptoticSlope is the eps-exponent the factor adds between levels
// L and L+1: log2 of its growth times the levels per halving of eps.
func preAsymptoticSlope(row Row, r Regime, L int) float64 {
	return math.Log2(preAsymptotic(r, L+1)/preAsymptotic(r, L)) * levelsPerHalving(row, r.A)
}

// settlesAt is the first level from L on where the factor adds at most
// tol to the exponent, and the eps at which the theorems' L reaches it.
func settlesAt(row Row, r Regime, L int, tol float64) (int, float64) {
	for preAsymptoticSlope(row, r, L) > tol && L < 200 {
		L++
	}
	t := 4 * math.Exp2(-r.A*float64(L)) // the target where L = log2(4/target)/a
	if row.Class == Nonconvex {
		return L, math.Sqrt(t)
	}
	return L, t
}

// biasShare is the share of the nonconvex criterion's target eps^2 that
// the squared gradient bias 2^(-aL) at level L takes (M_a = 1): the
// iterates settle where |grad F^L| is small, so |grad F|^2 is about
// |grad F^L|^2 + 2^(-aL), and the optimisation has eps^2 (1 - share)
// left. With a = 2 the rounding of L alternates the share between 1/4
// and 1/8 along the grid.
func biasShare(r Regime, L int, eps float64) float64 {
	return math.Exp2(-r.A*float64(L)) / (eps * eps)
}

// factorPoint is one line of factors.jsonl: for one eps of a prescribed
// RT-MLMC cell, the terms of its cost T C_iter.
type factorPoint struct {
	cellID
	Eps float64 `json:"eps"`
	L   int     `json:"L"`
	// Iterations and Samples are the cell's measured T and total cost
	// (points.jsonl); SamplesPerIter is their ratio, the realised
	// C_iter, and ExpectedCost the law's sum_l q_l C_l.
	Iterations     int     `json:"iterations"`
	Samples        float64 `json:"samples"`
	SamplesPerIter float64 `json:"samples_per_iteration"`
	ExpectedCost   float64 `json:"expected_cost_per_iteration"`
	// MeanLevel is the mean level drawn (sum_l l q_l).
	MeanLevel float64 `json:"mean_level"`
	// VarianceBound is the V the step uses (sum_l M_b 2^(-bl)/q_l, M_b
	// at the start); VarianceStart and VarianceStationary are the
	// variance of one estimate measured at the start and at the
	// stationary point x*, over Draws estimates each.
	VarianceBound      float64 `json:"variance_bound"`
	VarianceStart      float64 `json:"variance_start"`
	VarianceStationary float64 `json:"variance_stationary"`
	Draws              int     `json:"draws"`
	// PreAsymptotic is R^L(-|c-b|/2)^2 ((L+1)^2 when b = c); BiasShare
	// 2^(-aL)/eps^2 (nonconvex); TPerV is T (eps^2 - 2^(-aL))^2 / V on
	// the nonconvex row and T eps^2 / V on the convex one: constant
	// where T scales as the theorem says.
	PreAsymptotic float64 `json:"pre_asymptotic"`
	BiasShare     float64 `json:"bias_share,omitempty"`
	TPerV         float64 `json:"T_per_V"`
}

// factorDraws is the estimates drawn per eps and point for the measured
// variance: its relative standard error is below 2% for these laws.
const factorDraws = 200000

// measureFactors computes the factors of every prescribed non-VR RT-MLMC
// point reached on the convex and nonconvex rows.
func measureFactors(pts []point) ([]factorPoint, error) {
	var out []factorPoint
	for _, p := range pts {
		if p.Estimator != mlmc.RTMLMC.DisplayName() || p.VR || p.Params != "prescribed" || p.Hit == nil ||
			(p.Objective != Convex.String() && p.Objective != Nonconvex.String()) {
			continue
		}
		row := Row{Class: Convex}
		if p.Objective == Nonconvex.String() {
			row.Class = Nonconvex
		}
		r := Regime{p.A, p.B, p.C}
		prob := objective(row.Class, r.A, r.B, r.C, 0)
		s := prescribe(row, mlmc.RTMLMC, r, p.Eps, prescribedTuning, prob)
		L := s.Cfg.MaxLevel
		q := mlmc.Truncated(0, L, r.B, r.C)
		f := factorPoint{cellID: p.cellID, Eps: p.Eps, L: L, Iterations: p.Hit.Iter, Samples: p.Hit.Cost,
			SamplesPerIter: p.Hit.Cost / float64(p.Hit.Iter), VarianceBound: s.V, Draws: factorDraws,
			PreAsymptotic: preAsymptotic(r, L)}
		for l := 0; l <= L; l++ {
			f.ExpectedCost += q.Prob(l) * math.Round(math.Exp2(r.C*float64(l)))
			f.MeanLevel += q.Prob(l) * float64(l)
		}
		var err error
		if f.VarianceStart, err = estimateVariance(row, r, s, prob.start, factorDraws); err != nil {
			return nil, err
		}
		if f.VarianceStationary, err = estimateVariance(row, r, s, xStar(prob), factorDraws); err != nil {
			return nil, err
		}
		budget := p.Eps
		if row.Class == Nonconvex {
			f.BiasShare = biasShare(r, L, p.Eps)
			budget = p.Eps * p.Eps * (1 - f.BiasShare)
		}
		f.TPerV = float64(p.Hit.Iter) * budget * budget / s.V
		if row.Class == Convex {
			f.TPerV = float64(p.Hit.Iter) * p.Eps * p.Eps / s.V
		}
		out = append(out, f)
	}
	return out, nil
}

// estimateVariance is the variance of one estimate of setting s at x,
// E|v - E v|^2 over n estimates of a fresh estimator on the row's
// oracle.
func estimateVariance(row Row, r Regime, s setting, x []float64, n int) (float64, error) {
	p := objective(row.Class, r.A, r.B, r.C, 7)
	copy(p.x, x)
	copy(p.xp, x)
	cfg := s.Cfg
	cfg.Seed = 7
	est, err := mlmc.New(s.Kind, cfg, mlmc.Float64Ops{Dim: dim}, p.oracle)
	if err != nil {
		return 0, fmt.Errorf("factors: %w", err)
	}
	g := make([]float64, dim)
	var mean [dim]float64
	var m2 float64
	for i := range n {
		clear(g)
		if _, err := est.Estimate(i, g); err != nil {
			return 0, fmt.Errorf("factors: %w", err)
		}
		for k := range dim {
			mean[k] += g[k] / float64(n)
			m2 += g[k] * g[k] / float64(n)
		}
	}
	for k := range dim {
		m2 -= mean[k] * mean[k]
	}
	return m2, nil
}

// factorTable fits each factor's exponent per cell and prints them as a
// markdown table next to the theorem's: C_iter and V each grow as
// 2^((c-b)L/2) when c > b, that is as eps^-((c-b)/a) on the nonconvex row
// and eps^-((c-b)/(2a)) on the convex one, and not at all (up to
// logarithms) when c <= b; T as V times eps^-4 (nonconvex) or eps^-2.
func factorTable(fs []factorPoint) string {
	var keys []cellID
	groups := map[cellID][]factorPoint{}
	for _, f := range fs {
		if _, ok := groups[f.cellID]; !ok {
			keys = append(keys, f.cellID)
		}
		groups[f.cellID] = append(groups[f.cellID], f)
	}
	slope := func(g []factorPoint, v func(factorPoint) float64) float64 {
		eps, y := make([]float64, len(g)), make([]float64, len(g))
		for i, f := range g {
			eps[i], y[i] = f.Eps, v(f)
		}
		fit, err := fitExponent(eps, y, nil)
		if err != nil {
			return math.NaN()
		}
		return fit.Slope
	}
	var b strings.Builder
	b.WriteString("| row | (a, b, c) | eps (L) | cost | T | table's T | C_iter realised | V bound | variance at x* | table's C_iter, V | R^L(-\\|c-b\\|/2)^2 | T / V, target share divided out |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range keys {
		g := groups[k]
		slices.SortFunc(g, func(x, y factorPoint) int { return cmp.Compare(y.Eps, x.Eps) })
		base := 2.0
		perHalf := 1.0
		if k.Objective == Nonconvex.String() {
			base, perHalf = 4, 2
		}
		th := math.Max(k.C-k.B, 0) / k.A * perHalf / 2 // the exponent of each of C_iter and V
		fmt.Fprintf(&b, "| %s | (%g, %g, %g) | %.3g (%d) to %.3g (%d) | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
			k.Objective, k.A, k.B, k.C, g[0].Eps, g[0].L, g[len(g)-1].Eps, g[len(g)-1].L,
			slope(g, func(f factorPoint) float64 { return f.Samples }),
			slope(g, func(f factorPoint) float64 { return float64(f.Iterations) }), base+th,
			slope(g, func(f factorPoint) float64 { return f.SamplesPerIter }),
			slope(g, func(f factorPoint) float64 { return f.VarianceBound }),
			slope(g, func(f factorPoint) float64 { return f.VarianceStationary }), th,
			slope(g, func(f factorPoint) float64 { return f.PreAsymptotic }),
			slope(g, func(f factorPoint) float64 { return f.TPerV }))
	}
	b.WriteString("\nExponents of 1/eps, least squares over the eps reached. cost = T C_iter; the table's cost exponent is T's plus C_iter's. " +
		"The last column is T over V and over the theorem's power of the target (nonconvex: T (eps^2 - 2^(-aL))^2 / V, the squared bias taking its share of eps^2; convex: T eps^2 / V): 0 where T scales as the theorem says.\n")
	return b.String()
}

// factors measures the factors of the prescribed RT-MLMC cells of the
// folder dir (its points.jsonl) and writes dir/factors.jsonl and
// dir/factors.md.
func factors(dir string, stdout io.Writer) error {
	pts, err := readJSONLines[point](filepath.Join(dir, "points.jsonl"))
	if err != nil {
		return err
	}
	fs, err := measureFactors(pts)
	if err != nil {
		return err
	}
	if len(fs) == 0 {
		return fmt.Errorf("%s holds no prescribed RT-MLMC point of the convex or nonconvex row: run the cells first", filepath.Join(dir, "points.jsonl"))
	}
	if err := writeJSONLines(filepath.Join(dir, "factors.jsonl"), fs); err != nil {
		return err
	}
	table := factorTable(fs)
	fmt.Fprint(stdout, table)
	if err := os.WriteFile(filepath.Join(dir, "factors.md"), []byte(table), 0o644); err != nil {
		return fmt.Errorf("write the factors table: %w", err)
	}
	return nil
}
