package experiment

import (
	"math"
	"slices"
)

// Median is the median of xs, +Inf counting as larger than every number (a
// trial that never reached a target); NaN for none. With an even count it
// is the mean of the middle two, +Inf when the upper one is.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	if math.IsInf(s[n/2], 1) {
		return math.Inf(1)
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// CIRanks is the largest k for which the order statistics x_(k) and
// x_(n+1-k) of n independent trials cover the median of their law with
// probability at least confidence, and that probability,
// 1 - 2 P(Binomial(n, 1/2) <= k-1). The interval is distribution-free
// (it holds for any continuous law). k = 0 (no interval) when even the
// widest, [x_(1), x_(n)], covers with less than confidence (n < 6 at 95%).
func CIRanks(n int, confidence float64) (k int, coverage float64) {
	cdf := 0.0 // P(Bin <= j-1)
	choose := 1.0
	for j := 1; j <= n/2; j++ {
		if j > 1 {
			choose = choose * float64(n-j+2) / float64(j-1)
		}
		cdf += choose * math.Pow(0.5, float64(n))
		if c := 1 - 2*cdf; c >= confidence {
			k, coverage = j, c
		} else {
			break
		}
	}
	return k, coverage
}

// MedianCI is the order-statistic interval of CIRanks for the median of
// xs (NaN ends without one). +Inf values (trials that never reached) sort
// last, so an upper end may be +Inf.
func MedianCI(xs []float64, confidence float64) (lo, hi float64) {
	k, _ := CIRanks(len(xs), confidence)
	if k == 0 {
		return math.NaN(), math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[k-1], s[len(s)-k]
}

// StaysBelow is the cost after which gaps stay at or below target: the
// smallest logged point points[k] with gaps[j] <= target for every j >= k,
// or -1 when the last is above target (the trial did not end there).
func StaysBelow(points []int64, gaps []float64, target float64) int64 {
	hit := int64(-1)
	for k := len(gaps) - 1; k >= 0; k-- {
		if !(gaps[k] <= target) {
			break
		}
		hit = points[k]
	}
	return hit
}

// FirstTouch is the first logged point at which the gap is at or below
// target, -1 for none.
func FirstTouch(points []int64, gaps []float64, target float64) int64 {
	for k, g := range gaps {
		if g <= target {
			return points[k]
		}
	}
	return -1
}

// GeometricGrid is about growth^k for k = 0, 1, ... below budget (each
// integer once), then budget: the logged points of a run. A growth of 1 or
// less logs every cost 1..budget.
func GeometricGrid(budget int64, growth float64) []int64 {
	var g []int64
	if growth <= 1 {
		for c := int64(1); c <= budget; c++ {
			g = append(g, c)
		}
		return g
	}
	for s := 1.0; s < float64(budget); s *= growth {
		if n := int64(s); len(g) == 0 || n > g[len(g)-1] {
			g = append(g, n)
		}
	}
	return append(g, budget)
}

// PowersOfTwo is 2^k for k = from..floor(log2 budget), and budget when it
// is not a power of two.
func PowersOfTwo(budget int64, from int) []int64 {
	var g []int64
	for b := int64(1) << from; b <= budget && b > 0; b *= 2 {
		g = append(g, b)
	}
	if len(g) == 0 || g[len(g)-1] != budget {
		g = append(g, budget)
	}
	return g
}

func finitePtr(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}
