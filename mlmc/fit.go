package mlmc

// FitLog2 fits log2 y = k + s x by weighted least squares, each point
// weighted by its standard error ySE through the delta method, and returns
// the slope s with its standard error: the one fit behind MeasureLevels'
// rates, for callers that fit a rate of their own (a bias, say) the same
// way. Points with y <= 0 make the fit fail with a note.
func FitLog2(x, y, ySE []float64) RateFit { return fitLog2(x, y, ySE) }
