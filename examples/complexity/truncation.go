package main

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/mlmc"
)

// truncation is one line of truncation.jsonl: RU- or RR-MLMC in a regime
// with c >= b (the table's N.A.), its oracle capped at level K, one
// estimate at the starting point measured over many draws.
type truncation struct {
	cellID
	K     int `json:"K"`
	Draws int `json:"draws"`
	// Samples is the mean cost of one estimate over the draws, Expected
	// its exact value sum_l P(query at l) round(2^(c l)).
	Samples  float64 `json:"samples"`
	Expected float64 `json:"expected_samples"`
	// Variance is the measured total variance of one estimate;
	// VarianceBound the paper's bound with the law truncated at K.
	Variance      float64 `json:"variance"`
	VarianceBound float64 `json:"variance_bound"`
	// VarianceExact is the exact variance of one estimate at the start,
	// from the oracle's known means E H^l and variances Var H^l: the
	// measured Variance misses the rare deep levels that dominate it when
	// it grows with K.
	VarianceExact float64 `json:"variance_exact"`
	// Why says which study the line belongs to: "N.A." (c >= b), or
	// "second moment" (c < b, but on a nonconvex row with a <= (b+c)/2,
	// where E|H^l|^2 decays at a, not b; see secondMomentGrows).
	Why string `json:"why"`
}

// secondMomentGrows says that on this row the estimators' variance
// sum_l E|H^l|^2 / q_l diverges with the level although b > c: the
// paper's a on the nonconvex rows is the rate of |E H^l|^2 (the squared
// gradient bias), and E|H^l|^2 = Var H^l + |E H^l|^2 decays at min(a, b),
// so with q_l proportional to 2^(-(b+c)l/2) the sum's terms grow when
// a < (b+c)/2 (and stay level when they are equal). The paper's variance
// lemmas bound the variance by sum_l Var(H^l)/q_l, which leaves out
// the |E H^l|^2 terms.
func secondMomentGrows(row Row, r Regime) bool {
	return row.Class == Nonconvex && r.C < r.B && r.A <= (r.B+r.C)/2
}

// truncationCaps are the levels K the N.A. cells are capped at.
var truncationCaps = []int{4, 6, 8, 10, 12, 14, 16}

const truncationDraws = 4000

// truncationStudy shows what goes wrong with RU- or RR-MLMC when c >= b:
// with the geometric law q_l proportional to 2^(-(b+c)l/2) capped at K
// (levels above K redrawn), the expected cost of an estimate grows as
// sum_{l<=K} 2^((c-b)l/2) (linearly in K when b = c, geometrically when
// c > b) and so does its variance; without a cap both are infinite.
func truncationStudy(row Row, r Regime, m mlmc.Method) []truncation {
	var out []truncation
	for _, K := range truncationCaps {
		p := objective(row.Class, r.A, r.B, r.C, 7)
		copy(p.x, p.start)
		copy(p.xp, p.start)
		switch o := p.oracle.(type) {
		case *mlmc.Synthetic:
			o.Max = K
		case *shaped:
			o.Max = K
		}
		est, err := mlmc.New(mlmc.Kind{Method: m}, mlmc.Config{B: r.B, C: r.C, Seed: 7}, mlmc.Float64Ops{Dim: dim}, p.oracle)
		if err != nil {
			panic(fmt.Sprintf("complexity: truncation study: %v", err))
		}
		g := make([]float64, dim)
		var mean, sq [dim]float64
		for t := range truncationDraws {
			if _, err := est.Estimate(t, g); err != nil {
				panic(fmt.Sprintf("complexity: truncation study: %v", err))
			}
			for i := range g {
				mean[i] += g[i] / truncationDraws
				sq[i] += g[i] * g[i] / truncationDraws
			}
		}
		v := 0.0
		for i := range mean {
			v += sq[i] - mean[i]*mean[i]
		}
		law := mlmc.Truncated(0, K, r.B, r.C)
		exp, bound := 0.0, 0.0
		mb := noiseScale(p, row.Class)
		for l := 0; l <= K; l++ {
			w := law.Prob(l) // RU: one query at l with probability q_l
			if m == mlmc.RRMLMC {
				w = law.Tail(l) // RR: a query at every l <= T
			}
			exp += w * math.Round(math.Exp2(r.C*float64(l)))
			bound += mb * math.Exp2(-r.B*float64(l)) / w
		}
		exact := exactVariance(p, r, m, law, K, mb)
		why := "N.A."
		if applicable(m, r) {
			why = "second moment"
		}
		out = append(out, truncation{cellID: newCellID(row, r, m), K: K, Draws: truncationDraws,
			Samples: float64(est.Totals().Samples) / truncationDraws, Expected: exp, Variance: v, VarianceBound: bound, VarianceExact: exact, Why: why})
	}
	return out
}

// naCell is the cells.jsonl line of an N.A. cell: no exponent, and what
// the truncation study shows.
func naCell(row Row, r Regime, m mlmc.Method, t []truncation) cellResult {
	first, last := t[0], t[len(t)-1]
	return cellResult{cellID: newCellID(row, r, m), Params: "prescribed",
		Explained: fmt.Sprintf("N.A. (c >= b): capped at level K, one estimate costs %.3g samples on average (K=%d) to %.3g (K=%d) "+
			"and its exact variance at the start is %.3g to %.3g (over %d draws: %.3g to %.3g, which miss the rare deep levels); "+
			"both grow without bound with K, so the untruncated estimator has no finite cost to any eps",
			first.Expected, first.K, last.Expected, last.K, first.VarianceExact, last.VarianceExact, first.Draws,
			first.Variance, last.Variance)}
}

// exactVariance is the variance of one RU- or RR-MLMC estimate at the
// start with the law capped at K: the queries' noise, sum_l Var H^l / w_l
// with w_l = q_l (RU) or P(T >= l) (RR), plus the variance over the drawn
// level(s) of the weighted means, where E H^l = grad F^0 + u at l = 0 and
// (2^(-A l) - 2^(-A(l-1))) u above (A the oracle's gradient-bias rate).
func exactVariance(p *problem, r Regime, m mlmc.Method, law mlmc.LevelDist, K int, mb float64) float64 {
	A := r.A
	if isNonconvex(p) {
		A = r.A / 2
	}
	xs := xStar(p)
	means := make([][]float64, K+1)
	for l := range means {
		means[l] = make([]float64, dim)
		for i := range dim {
			u := 1 / math.Sqrt(dim)
			if l == 0 {
				means[l][i] = gradAt(p, i, p.x[i]-xs[i]) + u
			} else {
				means[l][i] = (math.Exp2(-A*float64(l)) - math.Exp2(-A*float64(l-1))) * u
			}
		}
	}
	noise := 0.0
	for l := 0; l <= K; l++ {
		w := law.Prob(l)
		if m == mlmc.RRMLMC {
			w = law.Tail(l)
		}
		noise += mb * math.Exp2(-r.B*float64(l)) / w
	}
	// E over the draw of |weighted mean|^2, minus |sum of means|^2.
	total := make([]float64, dim)
	for l := range means {
		for i := range dim {
			total[i] += means[l][i]
		}
	}
	second := 0.0
	partial := make([]float64, dim)
	for T := 0; T <= K; T++ {
		v := make([]float64, dim)
		if m == mlmc.RUMLMC {
			for i := range dim {
				v[i] = means[T][i] / law.Prob(T)
			}
		} else {
			for i := range dim {
				partial[i] += means[T][i] / law.Tail(T)
			}
			copy(v, partial)
		}
		n2 := 0.0
		for i := range dim {
			n2 += v[i] * v[i]
		}
		second += law.Prob(T) * n2
	}
	t2 := 0.0
	for i := range dim {
		t2 += total[i] * total[i]
	}
	return noise + second - t2
}

func isNonconvex(p *problem) bool {
	o, ok := p.oracle.(*shaped)
	if !ok {
		return false
	}
	_, nc := o.phi.(cosineBump)
	return nc
}

// gradAt is phi'(u) of the problem's objective, coordinate i.
func gradAt(p *problem, i int, u float64) float64 {
	if o, ok := p.oracle.(*shaped); ok {
		return o.phi.deriv(u)
	}
	return u // the quadratic
}
