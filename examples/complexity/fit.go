package main

import (
	"errors"
	"math"

	"github.com/simclr-go/simclr/mlmc"
)

// fit is the exponent p of cost = K eps^-p, fitted by least squares to
// log cost against log(1/eps), with its 95% interval from Student's t on
// the residuals (n - 2 degrees of freedom).
type fit struct {
	Slope, Lo, Hi float64
	N             int
}

// tQuantile975 holds Student's t 0.975 quantiles for 1..10 degrees of
// freedom.
var tQuantile975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228}

// fitExponent fits log(cost) = log K + p log(1/eps) over the points with
// a finite positive cost. With div set, cost/div is fitted instead (the
// exponent with the theorems' hidden logarithms divided out).
func fitExponent(eps, cost, div []float64) (fit, error) {
	var xs, ys []float64
	for i := range eps {
		if !(cost[i] > 0) || math.IsInf(cost[i], 0) {
			continue
		}
		y := math.Log(cost[i])
		if div != nil {
			y -= math.Log(div[i])
		}
		xs, ys = append(xs, math.Log(1/eps[i])), append(ys, y)
	}
	n := len(xs)
	if n < 3 {
		return fit{N: n}, errors.New("fewer than three eps reached their target")
	}
	slope, _, se := mlmc.LineFit(xs, ys)
	df := n - 2
	tq := 2.0 // beyond the table, close to the normal quantile
	if df <= len(tQuantile975) {
		tq = tQuantile975[df-1]
	}
	return fit{Slope: slope, Lo: slope - tq*se, Hi: slope + tq*se, N: n}, nil
}
