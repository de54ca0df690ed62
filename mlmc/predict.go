package mlmc

import (
	"fmt"
	"math"
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
	lsgd := Prediction{Name: LSGD.String(), Var: top.Var, Images: top.Images, Seconds: top.Seconds, RelImages: 1, RelSeconds: 1}
	preds := []Prediction{lsgd}
	rel := func(p Prediction) Prediction {
		p.RelImages = p.Var * p.Images / (lsgd.Var * lsgd.Images)
		p.RelSeconds = p.Var * p.Seconds / (lsgd.Var * lsgd.Seconds)
		return p
	}

	vm := func(name string, n func(i int) float64) Prediction {
		p := Prediction{Name: name}
		for i, st := range levels {
			p.Var += st.Var / n(i)
			p.Images += n(i) * st.Images
			p.Seconds += n(i) * st.Seconds
		}
		return rel(p)
	}
	nVM := alloc.perLevel(VMLMC)
	preds = append(preds, vm(VMLMC.String(), func(i int) float64 { return nVM(levels[i].Level) }))
	// The optimal allocations weigh the cost in time when every level has
	// one, else in images. The optimal n_l is scaled so that the top level
	// has one draw; var x cost does not depend on the scale.
	cost := func(i int) float64 { return levels[i].Seconds }
	for _, st := range levels {
		if !(st.Seconds > 0) {
			cost = func(i int) float64 { return levels[i].Images }
		}
	}
	sqrtVC := func(i int) float64 { return math.Sqrt(levels[i].Var / cost(i)) }
	last := len(levels) - 1
	preds = append(preds, vm(VMLMC.String()+optSuffix, func(i int) float64 { return sqrtVC(i) / sqrtVC(last) }))
	if p := preds[len(preds)-1]; math.IsNaN(p.Var) {
		preds[len(preds)-1].Note = "needs positive variances and times"
	}

	// |E v|^2 of the MLMC estimators, E v = sum_l E Y_l, unbiased:
	// |sum_l mean Y_l|^2 - sum_l Var_l / K (the levels are independent).
	mean2 := sumNorm * sumNorm
	for _, st := range levels {
		mean2 -= st.Var / float64(st.Draws)
	}
	mean2 = math.Max(mean2, 0)
	rt := func(name string, q []float64) Prediction {
		p := Prediction{Name: name}
		for i, st := range levels {
			p.Var += st.Moment2 / q[i]
			p.Images += q[i] * st.Images
			p.Seconds += q[i] * st.Seconds
		}
		p.Var -= mean2
		return rel(p)
	}
	qRT := alloc.perLevel(RTMLMC)
	q := make([]float64, len(levels))
	for i, st := range levels {
		q[i] = qRT(st.Level)
	}
	preds = append(preds, rt(RTMLMC.String(), q))
	sum := 0.0
	for i, st := range levels {
		q[i] = math.Sqrt(st.Moment2 / cost(i))
		sum += q[i]
	}
	for i := range q {
		q[i] /= sum
	}
	preds = append(preds, rt(RTMLMC.String()+optSuffix, q))
	return preds
}

// PredictVR predicts the vr- versions of lsgd, vmlmc and rtmlmc from the
// base predictions and the measured corrections (levels measured with
// LevelsConfig.Previous). Over a period of QE iterations, a fresh step's
// mean of D1 estimates has variance Var/D1, and each correction step adds
// the variance of a mean of D2 corrections v(x_t; s) - v(x_(t-1); s), at
// most their second moment E|corr|^2/D2:
//
//	lsgd:   E|corr|^2 = E|Δh^L|^2
//	vmlmc:  sum_l E|ΔY_l|^2 / n_l
//	rtmlmc: sum_l E|ΔY_l|^2 / q_l
//
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
		if k, err := ParseKind(p.Name); err == nil && k == (Kind{Method: LSGD}) {
			lsgd = p
		}
	}
	d1, d2, qe := float64(cfg.D1), float64(cfg.D2), float64(cfg.QE)
	var out []Prediction
	for _, p := range base {
		// The "-opt" allocations are no estimator's: ParseKind refuses them.
		k, err := ParseKind(p.Name)
		m := k.Method
		if err != nil || k.VR {
			continue
		}
		var corr, prevSec float64 // E|corr|^2, and the expected time of the evaluations at x_(t-1)
		switch m {
		case LSGD:
			corr, prevSec = top.CorrMoment2, top.CorrSeconds
		case VMLMC, RTMLMC:
			n := alloc.perLevel(m)
			for _, st := range levels {
				nl := n(st.Level)
				corr += st.CorrMoment2 / nl
				prevSec += nl * st.CorrSeconds
			}
		default:
			continue
		}
		vr := Prediction{Name: "vr-" + m.String(),
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

// perLevel is the expected number of queries at each level of one base
// estimate of method m (Config.queries, the cost model's allocation), as a
// function of the level; 0 outside its levels.
func (cfg Config) perLevel(m Method) func(level int) float64 {
	from, n := cfg.queries(m, cfg.MaxLevel)
	return func(l int) float64 {
		if i := l - from; i >= 0 && i < len(n) {
			return n[i]
		}
		return 0
	}
}
