package mlmc

import (
	"fmt"
	"math"
)

// ExpectedCost is the one cost model of the estimators (docs/definitions.md,
// section 3 "Cost accounting"): the expected samples drawn and oracle evaluations of one
// iteration of the estimator k with cfg
// (zero fields take New's defaults), over an oracle that serves levels up to
// oracleMax (Unbounded for any level). A level-l draw costs 2^l samples, as
// in SimCLR (2^l images) and the pricing model (2^l simulated steps).
//
// RU-MLMC and RR-MLMC redraw levels above oracleMax, so their law is the
// geometric one conditioned on the servable levels, as New builds it. For a
// VR estimator the figures are averaged over a cycle of QE iterations: one
// fresh iteration of D1 base estimates, then QE-1 corrections of D2 base
// estimates each evaluated twice (at x_t and x_{t-1}) on the same draws.
// The error is New's for the same arguments.
func ExpectedCost(k Kind, cfg Config, oracleMax int) (samples, evaluations float64, err error) {
	if k.Method < 0 || int(k.Method) >= len(methodNames) {
		return 0, 0, fmt.Errorf("unknown estimator %v", k.Method)
	}
	m, vr := k.Method, k.VR
	cfg = cfg.withDefaults()
	if err := cfg.check(m, oracleMax); err != nil {
		return 0, 0, fmt.Errorf("estimator %s: %w", k, err)
	}
	levelCost := func(l int) float64 { return math.Exp2(float64(l)) }
	// passes is the oracle evaluations of one query at level l: a
	// correction H^l takes CorrectionPasses.
	passes := func(l int) float64 {
		if !cfg.correction(m, l) {
			return 1
		}
		return float64(cfg.CorrectionPasses)
	}
	// evaluations (passes) and samples of one base estimate v(x).
	var queries float64
	from, n := cfg.queries(m, oracleMax)
	for i, ni := range n {
		l := from + i
		queries += ni * passes(l)
		samples += ni * levelCost(l)
	}
	if !vr {
		return samples, queries, nil
	}
	return cfg.vrAverage(samples, samples), cfg.vrAverage(queries, 2*queries), nil
}

// queries is the allocation of one base estimate v(x) of method m (docs/definitions.md,
// section 2 "The estimators"): n[i] is the expected number of queries at level
// from+i, over an oracle that serves levels up to oracleMax. It is the one
// statement of the allocations, which ExpectedCost prices in samples and
// the per-level diagnostics in measured variance and time. cfg has its
// defaults filled in.
func (cfg Config) queries(m Method, oracleMax int) (from int, n []float64) {
	top := levelCap // the largest level RU-MLMC and RR-MLMC serve
	if oracleMax != Unbounded && oracleMax < levelCap {
		top = oracleMax
	}
	switch m {
	case LSGD:
		return cfg.MaxLevel, []float64{float64(cfg.NL)}
	case VMLMC:
		for l := cfg.MinLevel; l <= cfg.MaxLevel; l++ {
			n = append(n, float64(cfg.vmlmcDraws(l)))
		}
	case RTMLMC, RUMLMC:
		// One query at a level drawn from RT-MLMC's law on
		// MinLevel..MaxLevel, or RU-MLMC's conditioned on the servable
		// levels.
		var law LevelDist
		if m == RTMLMC {
			top, law = cfg.MaxLevel, cfg.rtLaw()
		} else {
			law = Truncated(cfg.MinLevel, top, cfg.B, cfg.C)
		}
		for l := cfg.MinLevel; l <= top; l++ {
			n = append(n, law.Prob(l))
		}
	case RRMLMC:
		// One query at every level up to the drawn top T: level l is
		// queried with probability P(T >= l).
		law := Truncated(cfg.MinLevel, top, cfg.B, cfg.C)
		for l := cfg.MinLevel; l <= top; l++ {
			n = append(n, law.Tail(l))
		}
	}
	return cfg.MinLevel, n
}

// vrAverage is a cost per iteration of a VR estimator, averaged over a
// cycle of QE iterations: one fresh iteration of D1 base estimates costing
// fresh each, then QE-1 corrections of D2 base estimates costing
// correction each (a correction evaluates its draws at x_t and x_(t-1)).
func (cfg Config) vrAverage(fresh, correction float64) float64 {
	qe, d1, d2 := float64(cfg.QE), float64(cfg.D1), float64(cfg.D2)
	return (d1*fresh + (qe-1)*d2*correction) / qe
}
