package mlmc

import (
	"fmt"
	"math"
)

// roundingShare is the size relative to h^(l_min) below which H^l counts
// as zero: a difference of float64 gradients cancelled to rounding
// (|H^l|^2 <= roundingShare^2 |h^(l_min)|^2 in mean square).
const roundingShare = 1e-10

// biasInvisible says every H^l above the minimum level vanished to
// rounding: the levels agree at the point measured. At such a point (a
// linear model at x = 0, where every inner draw gives the same value; an
// empty queue) the measurement shows no bias and no variance of the
// corrections, whatever the problem has elsewhere.
func biasInvisible(levels []LevelStat) bool {
	if len(levels) < 2 {
		return false
	}
	scale := levels[0].Moment2
	if math.IsNaN(scale) || math.IsInf(scale, 0) {
		return false
	}
	for _, st := range levels[1:] {
		if !(st.Moment2 <= roundingShare*roundingShare*scale) {
			return false
		}
	}
	return true
}

// verdict is one line: can MLMC pay off here, judged on wall time (images
// when no time was measured), and does the telescoping sum hold. Where no
// bias is visible it recommends no method: the predictions there hold at
// this point only, where every level gives the same gradient.
func verdict(rep *LevelsReport) string {
	s := recommendation(rep)
	if !rep.Telescope.Pass {
		s += fmt.Sprintf("; and the telescoping check fails (max |z| above %.2f): the MLMC estimators are biased for grad F^%d",
			rep.Telescope.Critical, rep.MaxLevel)
	}
	return s
}

// recommendation is the verdict's first part: the method that pays off,
// or why none can be named.
func recommendation(rep *LevelsReport) string {
	if rep.NoBiasVisible {
		return noBiasVerdict(rep)
	}
	best := Prediction{RelSeconds: math.Inf(1), RelImages: math.Inf(1)}
	useTime := rep.Top.Seconds > 0
	relOf := func(p Prediction) float64 {
		if useTime {
			return p.RelSeconds
		}
		return p.RelImages
	}
	for _, p := range rep.Estimators {
		// L-SGD, with variance reduction or without, is not MLMC.
		if k, ok := lookupKind(p.Name); (ok && k.Method == LSGD) || math.IsNaN(relOf(p)) {
			continue
		}
		if relOf(p) < relOf(best) {
			best = p
		}
	}
	unit := "wall time"
	if !useTime {
		unit = "images"
	}
	switch r := relOf(best); {
	case math.IsInf(r, 1):
		return "no MLMC estimator could be predicted"
	case r < 1:
		return fmt.Sprintf("MLMC can pay off: %s reaches L-SGD's variance at %.2g of its cost (in %s)", best.Name, r, unit)
	}
	return fmt.Sprintf("MLMC cannot pay off: the best, %s, needs %.3g times L-SGD's variance x cost (in %s)",
		best.Name, relOf(best), unit)
}

// noBiasVerdict is the verdict at a point where every H^l vanished.
func noBiasVerdict(rep *LevelsReport) string {
	what := fmt.Sprintf("H^l is zero (to rounding: below %g |h^%d|) at every level %d..%d", roundingShare, rep.MinLevel, rep.MinLevel+1, rep.MaxLevel)
	if !(rep.Levels[0].Moment2 > 0) {
		what = fmt.Sprintf("every query returned a zero gradient, h^%d and H^l at every level %d..%d alike", rep.MinLevel, rep.MinLevel+1, rep.MaxLevel)
	}
	return "no bias is visible at the point measured: " + what +
		", so every level gives the same gradient here and this measurement cannot tell whether MLMC pays off (no method is recommended). " +
		"This is typical at a degenerate start, such as x0 = 0 for some problems (a linear model at 0 gives every inner draw the same value): " +
		"measure again at another point, for example after a few dozen iterations of L-SGD at a low level"
}
