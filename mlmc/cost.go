package mlmc

import (
	"fmt"
	"math"
)

// ExpectedCost is the one cost model of the estimators (SPEC section 1's
// cost accounting): the expected samples drawn and oracle evaluations of one
// iteration of the named estimator ("lsgd", ..., "vr-rrmlmc") with cfg
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
func ExpectedCost(name string, cfg Config, oracleMax int) (samples, evaluations float64, err error) {
	m, vr, err := ParseName(name)
	if err != nil {
		return 0, 0, err
	}
	cfg = cfg.withDefaults()
	if err := cfg.check(m, oracleMax); err != nil {
		return 0, 0, fmt.Errorf("estimator %s: %w", name, err)
	}
	levelCost := func(l int) float64 { return math.Exp2(float64(l)) }
	// passes is the oracle evaluations of one query at level l.
	passes := func(l int) float64 {
		if l == cfg.MinLevel {
			return 1
		}
		return float64(cfg.CorrectionPasses)
	}
	top := levelCap // the largest level RU-MLMC and RR-MLMC serve
	if oracleMax != Unbounded && oracleMax < levelCap {
		top = oracleMax
	}
	// evaluations (passes) and samples of one base estimate v(x).
	var queries float64
	switch m {
	case LSGD:
		queries = float64(cfg.NL)
		samples = queries * levelCost(cfg.MaxLevel)
	case VMLMC:
		for l := cfg.MinLevel; l <= cfg.MaxLevel; l++ {
			n := float64(cfg.vmlmcDraws(l))
			queries += n * passes(l)
			samples += n * levelCost(l)
		}
	case RTMLMC, RUMLMC:
		if m == RTMLMC {
			top = cfg.MaxLevel
		}
		// One query at a level drawn from the (conditioned) law.
		law := Truncated(cfg.MinLevel, top, cfg.B, cfg.C)
		if m == RTMLMC {
			law = cfg.rtLaw()
		}
		for l := cfg.MinLevel; l <= top; l++ {
			queries += law.Prob(l) * passes(l)
			samples += law.Prob(l) * levelCost(l)
		}
	case RRMLMC:
		// One query at every level up to the drawn top T: level l is
		// queried with probability P(T >= l).
		law := Truncated(cfg.MinLevel, top, cfg.B, cfg.C)
		for l := cfg.MinLevel; l <= top; l++ {
			queries += law.Tail(l) * passes(l)
			samples += law.Tail(l) * levelCost(l)
		}
	}
	if !vr {
		return samples, queries, nil
	}
	qe, d1, d2 := float64(cfg.QE), float64(cfg.D1), float64(cfg.D2)
	perCycle := func(base float64, evalsPerDraw float64) float64 {
		return (d1*base + (qe-1)*d2*base*evalsPerDraw) / qe
	}
	return perCycle(samples, 1), perCycle(queries, 2), nil
}
