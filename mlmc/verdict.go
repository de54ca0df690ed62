package mlmc

import (
	"fmt"
	"math"
)

// verdict is one line: can MLMC pay off here, judged on wall time (images
// when no time was measured), and does the telescoping sum hold.
func verdict(rep *LevelsReport) string {
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
		if k, err := ParseKind(p.Name); (err == nil && k.Method == LSGD) || math.IsNaN(relOf(p)) {
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
	var s string
	switch r := relOf(best); {
	case math.IsInf(r, 1):
		s = "no MLMC estimator could be predicted"
	case r < 1:
		s = fmt.Sprintf("MLMC can pay off: %s reaches L-SGD's variance at %.2f of its cost (in %s)", best.Name, r, unit)
	default:
		s = fmt.Sprintf("MLMC cannot pay off: the best, %s, needs %.2f times L-SGD's variance x cost (in %s)",
			best.Name, r, unit)
	}
	if !rep.Telescope.Pass {
		s += fmt.Sprintf("; and the telescoping check fails (max |z| above %.2f): the MLMC estimators are biased for grad F^%d",
			rep.Telescope.Critical, rep.MaxLevel)
	}
	return s
}
