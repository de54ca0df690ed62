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
	lsgd := Prediction{Name: "lsgd", Var: top.Var, Images: top.Images, Seconds: top.Seconds, RelImages: 1, RelSeconds: 1}
	preds := []Prediction{lsgd}
	rel := func(p Prediction) Prediction {
		p.RelImages = p.Var * p.Images / (lsgd.Var * lsgd.Images)
		p.RelSeconds = p.Var * p.Seconds / (lsgd.Var * lsgd.Seconds)
		return p
	}
	minL, maxL := levels[0].Level, levels[len(levels)-1].Level

	vm := func(name string, n func(i int) float64) Prediction {
		p := Prediction{Name: name}
		for i, st := range levels {
			p.Var += st.Var / n(i)
			p.Images += n(i) * st.Images
			p.Seconds += n(i) * st.Seconds
		}
		return rel(p)
	}
	nTop := math.Ceil(math.Exp2((b + c) * float64(maxL) / 2))
	preds = append(preds, vm("vmlmc", func(i int) float64 {
		return float64(VMLMCDraws(levels[i].Level, b, c, nTop))
	}))
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
	preds = append(preds, vm("vmlmc-opt", func(i int) float64 { return sqrtVC(i) / sqrtVC(last) }))
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
	law := Truncated(minL, maxL, b, c)
	q := make([]float64, len(levels))
	for i, st := range levels {
		q[i] = law.Prob(st.Level)
	}
	preds = append(preds, rt("rtmlmc", q))
	sum := 0.0
	for i, st := range levels {
		q[i] = math.Sqrt(st.Moment2 / cost(i))
		sum += q[i]
	}
	for i := range q {
		q[i] /= sum
	}
	preds = append(preds, rt("rtmlmc-opt", q))
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
	law := Truncated(minL, maxL, cfg.B, cfg.C)
	nTop := math.Ceil(math.Exp2((cfg.B + cfg.C) * float64(maxL) / 2))
	var lsgd Prediction
	for _, p := range base {
		if p.Name == "lsgd" {
			lsgd = p
		}
	}
	d1, d2, qe := float64(cfg.D1), float64(cfg.D2), float64(cfg.QE)
	var out []Prediction
	for _, p := range base {
		var corr, prevSec float64 // E|corr|^2, and the expected time of the evaluations at x_(t-1)
		switch p.Name {
		case "lsgd":
			corr, prevSec = top.CorrMoment2, top.CorrSeconds
		case "vmlmc":
			for _, st := range levels {
				n := float64(VMLMCDraws(st.Level, cfg.B, cfg.C, nTop))
				corr += st.CorrMoment2 / n
				prevSec += n * st.CorrSeconds
			}
		case "rtmlmc":
			for _, st := range levels {
				q := law.Prob(st.Level)
				corr += st.CorrMoment2 / q
				prevSec += q * st.CorrSeconds
			}
		default:
			continue
		}
		vr := Prediction{Name: "vr-" + p.Name,
			Var:     p.Var/d1 + (qe-1)/2*corr/d2,
			Images:  (d1*p.Images + (qe-1)*d2*p.Images) / qe,
			Seconds: (d1*p.Seconds + (qe-1)*d2*(p.Seconds+prevSec)) / qe,
			Note:    fmt.Sprintf("D1 = %d, D2 = %d, QE = %d, at the measured step x_t - x_(t-1)", cfg.D1, cfg.D2, cfg.QE)}
		vr.RelImages = vr.Var * vr.Images / (lsgd.Var * lsgd.Images)
		vr.RelSeconds = vr.Var * vr.Seconds / (lsgd.Var * lsgd.Seconds)
		out = append(out, vr)
	}
	return out
}
