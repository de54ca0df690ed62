package mlmc

import "math"

// FitLog2 fits log2 y = k + s x by weighted least squares, each point
// weighted by its standard error ySE through the delta method, and returns
// the slope s with its standard error: the one fit behind MeasureLevels'
// rates, for callers that fit a rate of their own (a bias, say) the same
// way. ySE nil weights every point alike. A fit that cannot be made has a
// NaN Rate and a Note saying why: y or ySE of another length than x, fewer
// than two points, a y that is not positive.
func FitLog2(x, y, ySE []float64) RateFit { return fitLog2(x, y, ySE) }

// LineFit fits y = k + s x by ordinary least squares and gives the slope's
// standard error from the residuals (NaN with two points): for callers
// that fit a line with every point alike (FitLog2 weights its points).
// x and y of different lengths, fewer than two points, or every x alike
// give NaN for all three: no line is determined.
func LineFit(x, y []float64) (s, k, se float64) {
	nan := math.NaN()
	if len(x) != len(y) || len(x) < 2 {
		return nan, nan, nan
	}
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return nan, nan, nan
	}
	s = sxy / sxx
	k = my - s*mx
	se = math.NaN()
	if len(x) > 2 {
		rss := 0.0
		for i := range x {
			d := y[i] - k - s*x[i]
			rss += d * d
		}
		se = math.Sqrt(rss / (n - 2) / sxx)
	}
	return s, k, se
}
