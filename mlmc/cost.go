package mlmc

import "math"

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
	cfg = cfg.withDefaults()
	alloc, err := bind(k, cfg, oracleMax)
	if err != nil {
		return 0, 0, err
	}
	// evaluations (passes) and samples of one base estimate v(x): a
	// correction H^l takes CorrectionPasses.
	var queries float64
	for _, q := range alloc.Expected() {
		passes := 1.0
		if q.Correction {
			passes = float64(cfg.CorrectionPasses)
		}
		queries += q.Queries * passes
		samples += q.Queries * math.Exp2(float64(q.Level))
	}
	if !k.VR {
		return samples, queries, nil
	}
	return cfg.vrAverage(samples, samples), cfg.vrAverage(queries, 2*queries), nil
}

// vrAverage is a cost per iteration of a VR estimator, averaged over a
// cycle of QE iterations: one fresh iteration of D1 base estimates costing
// fresh each, then QE-1 corrections of D2 base estimates costing
// correction each (a correction evaluates its draws at x_t and x_(t-1)).
func (cfg Config) vrAverage(fresh, correction float64) float64 {
	qe, d1, d2 := float64(cfg.QE), float64(cfg.D1), float64(cfg.D2)
	return (d1*fresh + (qe-1)*d2*correction) / qe
}
