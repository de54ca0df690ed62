package mlmc

import (
	"fmt"
	"math"
	"slices"
)

// PredictEstimators computes each estimator's variance and expected cost
// per estimate from the levels' statistics (levels[0] is h^(l_min), the rest
// H^l), top (h^L) and sumNorm = |sum_l mean Y_l|, with vmlmc's n_l and rtmlmc's q_l set by the rates b
// and c as the estimators use them, and with the allocations that minimise
// variance x cost for the measured levels ("-opt"):
//
//	lsgd:   Var h^L,                           cost C_L
//	vmlmc:  sum_l Var_l / n_l,                 cost sum_l n_l C_l
//	rtmlmc: sum_l E|Y_l|^2 / q_l - |sum_l E Y_l|^2, cost sum_l q_l C_l
//
// The optimal allocations are n_l proportional to sqrt(Var_l / C_l) and q_l
// proportional to sqrt(E|Y_l|^2 / C_l) (Lagrange; the latter ignores the
// |E v|^2 term). The VR versions need the corrections measured at x_(t-1)
// as well: PredictVR.
func PredictEstimators(levels []LevelStat, top LevelStat, sumNorm, b, c float64) []Prediction {
	if len(levels) == 0 {
		return nil
	}
	minL, maxL := levels[0].Level, levels[len(levels)-1].Level
	// The estimators' allocations, as the cost model states them.
	alloc := Config{MinLevel: minL, MaxLevel: maxL, B: b, C: c}.withDefaults()
	// The optimal allocations weigh the cost in time when every level has
	// one, else in images.
	byTime := true
	for _, st := range levels {
		byTime = byTime && st.Seconds > 0
	}
	// |E v|^2 of the MLMC estimators, E v = sum_l E Y_l, unbiased:
	// |sum_l mean Y_l|^2 - sum_l Var_l / K (the levels are independent).
	mean2 := sumNorm * sumNorm
	for _, st := range levels {
		mean2 -= st.Var / float64(st.Draws)
	}
	mean2 = math.Max(mean2, 0)

	var preds []Prediction
	for _, m := range predictable() {
		q, stats, ok := measured(m.Bind(alloc, maxL).Expected(), levels, top)
		if !ok {
			continue
		}
		preds = append(preds, predict(m.Name(), m, q, stats, mean2))
		cost := make([]float64, len(stats))
		for i, st := range stats {
			cost[i] = st.Images
			if byTime {
				cost[i] = st.Seconds
			}
		}
		if n := m.Optimal(q, stats, cost); n != nil {
			opt := slices.Clone(q)
			for i := range opt {
				opt[i].Queries = n[i]
			}
			p := predict(m.Name()+optSuffix, m, opt, stats, mean2)
			if math.IsNaN(p.Var) {
				p.Note = "needs positive variances and times"
			}
			preds = append(preds, p)
		}
	}
	// Relative to L-SGD, the first method of the table.
	if len(preds) == 0 || preds[0].Name != LSGD.String() {
		return preds
	}
	ref := preds[0]
	for i := range preds {
		preds[i].RelImages = preds[i].Var * preds[i].Images / (ref.Var * ref.Images)
		preds[i].RelSeconds = preds[i].Var * preds[i].Seconds / (ref.Var * ref.Seconds)
	}
	preds[0].RelImages, preds[0].RelSeconds = 1, 1
	return preds
}

// predictable lists the methods of the table whose variance can be
// predicted, in the table's order.
func predictable() []interface {
	Scheme
	Predictable
} {
	table.RLock()
	defer table.RUnlock()
	var out []interface {
		Scheme
		Predictable
	}
	for _, s := range table.schemes {
		if p, ok := s.(interface {
			Scheme
			Predictable
		}); ok {
			out = append(out, p)
		}
	}
	return out
}

// measured pairs each level of an allocation with its measured statistic:
// h^L is top (also where the minimum level is L), h^l at the minimum level
// levels[0] and H^l above it levels[l-minimum]. ok is false when a level was not measured. Levels
// with no expected query are dropped.
func measured(q []LevelQueries, levels []LevelStat, top LevelStat) (kept []LevelQueries, stats []LevelStat, ok bool) {
	minL := levels[0].Level
	for _, lq := range q {
		if lq.Queries == 0 {
			continue
		}
		var st LevelStat
		switch i := lq.Level - minL; {
		case !lq.Correction && lq.Level == top.Level:
			st = top
		case !lq.Correction && i == 0, lq.Correction && i > 0 && i < len(levels):
			st = levels[i]
		default:
			return nil, nil, false
		}
		kept = append(kept, lq)
		stats = append(stats, st)
	}
	return kept, stats, len(kept) > 0
}

// predict is the prediction of one base estimate that makes the queries q.
func predict(name string, p Predictable, q []LevelQueries, stats []LevelStat, mean2 float64) Prediction {
	out := Prediction{Name: name, Var: p.Variance(q, stats, mean2)}
	for i, st := range stats {
		out.Images += q[i].Queries * st.Images
		out.Seconds += q[i].Queries * st.Seconds
	}
	return out
}

// PredictVR predicts the vr- versions of the predictable methods (lsgd,
// vmlmc and rtmlmc) from the
// base predictions and the measured corrections (levels measured with
// LevelsConfig.Previous). Over a period of QE iterations, a fresh step's
// mean of D1 estimates has variance Var/D1, and each correction step adds
// the variance of a mean of D2 corrections v(x_t; s) - v(x_(t-1); s), at
// most their second moment E|corr|^2/D2, which for every method of the
// table is sum_l E|ΔY_l|^2 / n_l, n_l its expected queries at level l
// (lsgd: E|Δh^L|^2),
// so the variance averaged over the period is Var/D1 + (QE-1)/2 E|corr|^2/D2
// (an upper bound, E|corr|^2 >= Var corr), and the cost per iteration is
// (D1 C + (QE-1) D2 C)/QE images, (D1 T + (QE-1) D2 (T + T_prev))/QE
// seconds: a correction evaluates each draw twice. The corrections scale
// with the step |x_t - x_(t-1)| the measurement was made at: the prediction
// holds for training at that learning rate.
func PredictVR(base []Prediction, levels []LevelStat, top LevelStat, cfg LevelsConfig) []Prediction {
	cfg = cfg.withDefaults()
	if len(levels) == 0 {
		return nil
	}
	minL, maxL := levels[0].Level, levels[len(levels)-1].Level
	alloc := Config{MinLevel: minL, MaxLevel: maxL, B: cfg.B, C: cfg.C, D1: cfg.D1, D2: cfg.D2, QE: cfg.QE}.withDefaults()
	var lsgd Prediction
	for _, p := range base {
		if k, ok := lookupKind(p.Name); ok && k == (Kind{Method: LSGD}) {
			lsgd = p
		}
	}
	d1, d2, qe := float64(cfg.D1), float64(cfg.D2), float64(cfg.QE)
	var out []Prediction
	for _, p := range base {
		// The "-opt" allocations are no estimator's: lookupKind refuses them.
		k, ok := lookupKind(p.Name)
		if !ok || k.VR {
			continue
		}
		s, _ := k.Method.scheme()
		if _, ok := s.(Predictable); !ok {
			continue
		}
		q, stats, ok := measured(s.Bind(alloc, maxL).Expected(), levels, top)
		if !ok {
			continue
		}
		var corr, prevSec float64 // E|corr|^2, and the expected time of the evaluations at x_(t-1)
		for i, st := range stats {
			corr += st.CorrMoment2 / q[i].Queries
			prevSec += q[i].Queries * st.CorrSeconds
		}
		vr := Prediction{Name: "vr-" + k.Method.String(),
			Var:     p.Var/d1 + (qe-1)/2*corr/d2,
			Images:  alloc.vrAverage(p.Images, p.Images),
			Seconds: alloc.vrAverage(p.Seconds, p.Seconds+prevSec),
			Note:    fmt.Sprintf("D1 = %d, D2 = %d, QE = %d, at the measured step x_t - x_(t-1)", cfg.D1, cfg.D2, cfg.QE)}
		vr.RelImages = vr.Var * vr.Images / (lsgd.Var * lsgd.Images)
		vr.RelSeconds = vr.Var * vr.Seconds / (lsgd.Var * lsgd.Seconds)
		out = append(out, vr)
	}
	return out
}

// optSuffix marks the predictions of the allocations that minimise
// variance x cost for the measured levels, which no estimator uses.
const optSuffix = "-opt"
