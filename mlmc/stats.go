package mlmc

import (
	"fmt"
	"math"
)

// meanSE is the mean of xs and its standard error.
func meanSE(xs []float64) (mean, se float64) {
	n := float64(len(xs))
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if n < 2 {
		return mean, math.NaN()
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}

// NormalCritical is the two-sided standard normal quantile z with
// P(|Z| > z) = (1 - confidence)/tests: the Bonferroni-corrected critical
// value of tests simultaneous z-tests at the given confidence.
func NormalCritical(confidence float64, tests int) float64 {
	return math.Sqrt2 * math.Erfinv(1-(1-confidence)/float64(tests))
}

// fitRates fits b on the variances of H^l (levels above the minimum; with
// fewer than two of them the minimum level's h^l is included) and c on the
// costs of every level, in images and, where the queries were timed, in
// seconds (else NaN, with a note).
func fitRates(levels []LevelStat, timed bool) (b, cImages, cTime RateFit) {
	pts := levels
	note := ""
	if len(levels) >= 3 {
		pts = levels[1:]
	} else {
		note = "includes the minimum level's h^l (fewer than two H^l levels)"
	}
	var ls, ys, ses []float64
	for _, st := range pts {
		ls = append(ls, float64(st.Level))
		ys = append(ys, st.Var)
		ses = append(ses, st.VarSE)
	}
	b = fitLog2(ls, ys, ses)
	b.Rate = -b.Rate
	if note != "" && b.Note == "" {
		b.Note = note
	}
	ls, ys, ses = ls[:0], ys[:0], ses[:0]
	for _, st := range levels {
		ls = append(ls, float64(st.Level))
		ys = append(ys, st.Images)
		ses = append(ses, 0)
	}
	cImages = fitLog2(ls, ys, ses)
	if !timed {
		// Zero seconds at every level: no fit to try, and no message of
		// why it failed to build at every measurement.
		return b, cImages, RateFit{Rate: math.NaN(), SE: math.NaN(), Note: "the queries were not timed"}
	}
	ts, tses := make([]float64, len(levels)), make([]float64, len(levels))
	for i, st := range levels {
		ts[i], tses[i] = st.Seconds, st.SecondsSE
	}
	return b, cImages, fitLog2(ls, ts, tses)
}

// fitLog2 fits log2 y = k + s x by weighted least squares, the weight of a
// point being 1/se(log2 y)^2 with se(log2 y) = se(y)/(y ln 2) (the delta
// method). Its standard error is the weighted fit's, inflated by
// sqrt(chi^2/(n-2)) when the points scatter more than their standard errors
// say (the model does not fit exactly). With no standard errors (ySE nil,
// or any of them zero or not finite: exact costs) the fit is unweighted
// and its standard error is the residuals'. A fit that cannot be made
// (lengths that differ, fewer than two points, a y that is not positive)
// has a NaN rate and a Note that says why.
func fitLog2(x, y, ySE []float64) RateFit {
	f := RateFit{Rate: math.NaN(), SE: math.NaN()}
	if len(y) != len(x) || (ySE != nil && len(ySE) != len(x)) {
		f.Note = fmt.Sprintf("%d levels x, %d values y and %d standard errors: give one y per x, and one standard error per x or none (nil, equal weights)",
			len(x), len(y), len(ySE))
		return f
	}
	if len(x) > 0 {
		f.From, f.To = int(x[0]), int(x[len(x)-1])
	}
	switch len(x) {
	case 0:
		f.Note = "no levels: no rate"
		return f
	case 1:
		f.Note = "one level: no rate"
		return f
	}
	ly, w := make([]float64, len(x)), make([]float64, len(x))
	weighted := ySE != nil
	for i := range x {
		if !(y[i] > 0) {
			f.Note = fmt.Sprintf("level %d: %g is not positive", int(x[i]), y[i])
			return f
		}
		ly[i] = math.Log2(y[i])
		if !weighted {
			continue
		}
		se := ySE[i] / (y[i] * math.Ln2)
		if !(se > 0) || math.IsInf(se, 0) {
			weighted = false
		}
		w[i] = 1 / (se * se)
	}
	if !weighted {
		for i := range w {
			w[i] = 1
		}
	}
	var sw, sx, sy float64
	for i := range x {
		sw += w[i]
		sx += w[i] * x[i]
		sy += w[i] * ly[i]
	}
	mx, my := sx/sw, sy/sw
	var sxx, sxy float64
	for i := range x {
		sxx += w[i] * (x[i] - mx) * (x[i] - mx)
		sxy += w[i] * (x[i] - mx) * (ly[i] - my)
	}
	if !(sxx > 0) {
		f.Note = fmt.Sprintf("every point is at level %d: a rate needs two levels", int(x[0]))
		return f
	}
	f.Rate = sxy / sxx
	chi2 := 0.0
	for i := range x {
		r := ly[i] - my - f.Rate*(x[i]-mx)
		chi2 += w[i] * r * r
	}
	n := float64(len(x))
	switch {
	case weighted:
		scale := 1.0
		if n > 2 {
			scale = math.Max(1, chi2/(n-2))
		}
		f.SE = math.Sqrt(scale / sxx)
	case n > 2:
		f.SE = math.Sqrt(chi2 / (n - 2) / sxx)
	default:
		f.SE = math.NaN()
		f.Note = "two levels and no sampling error: no standard error"
	}
	return f
}
