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
	Objective string  `json:"objective"`
	Estimator string  `json:"estimator"`
	VR        bool    `json:"vr"`
	A         float64 `json:"a"`
	B         float64 `json:"b"`
	C         float64 `json:"c"`
	K         int     `json:"K"`
	Draws     int     `json:"draws"`
	// Samples is the mean cost of one estimate over the draws, Expected
	// its exact value sum_l P(query at l) round(2^(c l)).
	Samples  float64 `json:"samples"`
	Expected float64 `json:"expected_samples"`
	// Variance is the measured total variance of one estimate;
	// VarianceBound the paper's bound with the law truncated at K.
	Variance      float64 `json:"variance"`
	VarianceBound float64 `json:"variance_bound"`
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
		out = append(out, truncation{Objective: row.Class.String(), Estimator: estimatorLabels[m], VR: row.VR,
			A: r.A, B: r.B, C: r.C, K: K, Draws: truncationDraws,
			Samples: float64(est.Totals().Samples) / truncationDraws, Expected: exp, Variance: v, VarianceBound: bound})
	}
	return out
}

// naCell is the cells.jsonl line of an N.A. cell: no exponent, and what
// the truncation study shows.
func naCell(row Row, r Regime, m mlmc.Method, t []truncation) cellResult {
	first, last := t[0], t[len(t)-1]
	return cellResult{Objective: row.Class.String(), Estimator: estimatorLabels[m], VR: row.VR, A: r.A, B: r.B, C: r.C,
		Params: "prescribed",
		Explained: fmt.Sprintf("N.A. (c >= b): capped at level K, one estimate costs %.3g samples (K=%d) to %.3g (K=%d) "+
			"(exactly %.3g to %.3g) and its variance is %.3g to %.3g (bound %.3g to %.3g); both grow without bound as K grows, "+
			"so the untruncated estimator has no finite cost to any eps",
			first.Samples, first.K, last.Samples, last.K, first.Expected, last.Expected,
			first.Variance, last.Variance, first.VarianceBound, last.VarianceBound)}
}
