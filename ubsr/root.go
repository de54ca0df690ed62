package ubsr

import (
	"fmt"
	"math"
)

// DefaultTol is the tolerance on t of the sample-average root: 1e-12. A
// looser root adds to h^l and H^l an error of its own size that the
// antithetic correction does not cancel.
const DefaultTol = 1e-12

// SampleRoot returns the sample-average shortfall risk of the samples xs,
// the root t of
//
//	(1/n) sum_i l(-xs_i - t) = lambda,
//
// to within tol (absolute, relative above |t| = 1), by Newton steps
// (docs/definitions.md, section 12). The left side is convex and
// nonincreasing in t, so a Newton step from either side lands left of the
// root and the iterates then rise to it; when that fails (a flat stretch of
// l, a step that leaves the finite numbers) it brackets the root and takes
// safeguarded Newton steps inside the bracket, bisecting when a step leaves
// it or shrinks the residual too slowly. It fails when lambda is outside the
// range the loss reaches on these samples, or when l' is zero all along the
// bracket.
func SampleRoot(l Loss, xs []float64, lambda, tol float64) (float64, error) {
	return sampleRoot(l, xs, lambda, tol, math.NaN())
}

// sampleRoot is SampleRoot started from start, or from minus the samples'
// mean when start is NaN. The oracle starts each half's root from the
// root of all the samples, a few Newton steps away.
func sampleRoot(l Loss, xs []float64, lambda, tol, start float64) (float64, error) {
	if len(xs) == 0 {
		return 0, fmt.Errorf("ubsr: sample root of no samples")
	}
	mean, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		mean += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean /= float64(len(xs))
	n := float64(len(xs))
	f := func(t float64) (float64, float64) {
		var v, d float64
		for _, x := range xs {
			v += l.Value(-x - t)
			d += l.Deriv(-x - t)
		}
		return v/n - lambda, -d / n
	}
	if math.IsNaN(start) {
		start = -mean
	}
	if t, ok := newtonFromLeft(f, start, tol); ok {
		return t, nil
	}
	return solveDecreasing(f, start, math.Max(1, hi-lo), tol, l.Name, lambda)
}

// newtonFromLeft runs plain Newton steps on a convex nonincreasing f from
// t0. The tangent of a convex function lies below it, so after the first
// step every iterate is left of the root (f >= 0) and the iterates rise to
// it, quadratically near it: no bracket is needed. It gives up (ok false)
// on anything else, a flat stretch (f' = 0), a number that is not finite,
// a step back to the right, or 60 steps, and the caller brackets instead.
func newtonFromLeft(f func(t float64) (float64, float64), t0, tol float64) (float64, bool) {
	t := t0
	for k := range 60 {
		v, d := f(t)
		if v == 0 {
			return t, true
		}
		if !(d < 0) || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		step := -v / d
		scale := tol * math.Max(1, math.Abs(t))
		if math.Abs(step) <= scale {
			return t + step, true
		}
		if k > 0 && step < 0 {
			return 0, false // left of the root, a step left: rounding or a nonconvex f
		}
		t += step
		if math.IsInf(t, 0) {
			return 0, false
		}
	}
	return 0, false
}

// solveDecreasing finds the root of a convex nonincreasing f (returning f
// and f') from the start t0: it brackets the root by doubling steps of
// initial width w, then takes safeguarded Newton steps until the step or the
// bracket is below tol (absolute, relative above |t| = 1).
func solveDecreasing(f func(t float64) (float64, float64), t0, w, tol float64, name string, lambda float64) (float64, error) {
	if !(tol > 0) {
		tol = DefaultTol
	}
	v0, _ := f(t0)
	if math.IsNaN(v0) {
		return 0, fmt.Errorf("ubsr: %s: the mean loss at t = %g is not a number", name, t0)
	}
	if v0 == 0 {
		return t0, nil
	}
	// lo has f >= 0, hi has f <= 0.
	lo, hi := t0, t0
	for k := 0; ; k++ {
		t := t0 + w
		if v0 < 0 {
			t = t0 - w
		}
		v, _ := f(t)
		switch {
		case math.IsNaN(v):
			return 0, fmt.Errorf("ubsr: %s: the mean loss at t = %g is not a number", name, t)
		case v == 0:
			return t, nil
		case v > 0 && v0 > 0:
			lo = t
		case v < 0 && v0 < 0:
			hi = t
		case v0 > 0:
			hi = t
		default:
			lo = t
		}
		if hi > lo {
			break
		}
		if k > 1100 || math.IsInf(t, 0) {
			side := "above the largest"
			if v0 < 0 {
				side = "below the smallest"
			}
			return 0, fmt.Errorf("ubsr: %s: risk level lambda = %g is %s mean loss these samples reach: "+
				"no root t; choose lambda inside the loss's range", name, lambda, side)
		}
		w *= 2
	}
	t := (lo + hi) / 2
	v, d := f(t)
	prevAbs := math.Inf(1)
	for range 300 {
		if v == 0 {
			return t, nil
		}
		if v > 0 {
			lo = t
		} else {
			hi = t
		}
		// Newton while it stays inside the bracket and at least halves the
		// residual; bisection otherwise (a flat stretch of an exponential
		// loss far from the root would make Newton crawl).
		next := (lo + hi) / 2
		if d < 0 && math.Abs(v) <= prevAbs/2 {
			if nt := t - v/d; nt > lo && nt < hi {
				next = nt
			}
		}
		prevAbs = math.Abs(v)
		step := math.Abs(next - t)
		t = next
		v, d = f(t)
		if math.IsNaN(v) {
			return 0, fmt.Errorf("ubsr: %s: the mean loss at t = %g is not a number", name, t)
		}
		scale := tol * math.Max(1, math.Abs(t))
		if step <= scale || hi-lo <= scale {
			return t, nil
		}
	}
	if hi-lo <= 1e3*tol*math.Max(1, math.Abs(t)) {
		return t, nil
	}
	return 0, fmt.Errorf("ubsr: %s: the root for lambda = %g did not converge (bracket [%g, %g]): "+
		"is l' zero on a whole interval?", name, lambda, lo, hi)
}
