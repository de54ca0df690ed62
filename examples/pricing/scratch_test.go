package main

import (
	"math"
	"slices"
	"testing"
)

func TestScratch(t *testing.T) {
	for _, law := range Laws() {
		mu, p := Optimum(law)
		for _, b := range []int64{1 << 27, 1 << 30} {
			m := methods(EndCoupled)[0]
			m.Budget = b
			var errs []float64
			for s := uint64(1); s <= 4; s++ {
				tr, _ := run(law, EndCoupled, m, [2]float64{mu, p}, maxLevel, s, grid(m.Budget))
				errs = append(errs, math.Hypot(tr.Final[0]-mu, tr.Final[1]-p)/math.Hypot(mu, p))
			}
			slices.Sort(errs)
			t.Logf("%s L-SGD budget %.3g: final errors %.4f", law.Name, float64(b), errs)
		}
	}
}
