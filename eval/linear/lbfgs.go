package linear

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// lbfgs minimises f (which returns the value and writes the gradient) from
// x in place by limited-memory BFGS (Nocedal and Wright, Algorithm 7.4, two
// loops) with a backtracking Armijo line search, which suffices for a smooth
// convex objective. It stops when the gradient's max-norm is below tol or
// after maxIter iterations, and returns the iterations used.
func lbfgs(f func(x, grad []float64) float64, x []float64, maxIter int, tol float64) int {
	const memory = 10
	n := len(x)
	g := make([]float64, n)
	fx := f(x, g)
	var sHist, yHist [][]float64
	var rho []float64
	dir := make([]float64, n)
	xNew := make([]float64, n)
	gNew := make([]float64, n)
	alpha := make([]float64, memory)
	for iter := 0; iter < maxIter; iter++ {
		if maxAbs(g) < tol {
			return iter
		}
		// Two-loop recursion: dir = -H g.
		for i := range dir {
			dir[i] = -g[i]
		}
		for k := len(sHist) - 1; k >= 0; k-- {
			alpha[k] = rho[k] * floats.Dot(sHist[k], dir)
			floats.AddScaled(dir, -alpha[k], yHist[k])
		}
		if k := len(sHist) - 1; k >= 0 {
			gamma := floats.Dot(sHist[k], yHist[k]) / floats.Dot(yHist[k], yHist[k])
			for i := range dir {
				dir[i] *= gamma
			}
		}
		for k := range sHist {
			beta := rho[k] * floats.Dot(yHist[k], dir)
			floats.AddScaled(dir, alpha[k]-beta, sHist[k])
		}
		slope := floats.Dot(g, dir)
		if slope >= 0 { // not a descent direction (numerical trouble): restart from steepest descent
			sHist, yHist, rho = nil, nil, nil
			for i := range dir {
				dir[i] = -g[i]
			}
			slope = floats.Dot(g, dir)
		}
		step := 1.0
		if len(sHist) == 0 {
			step = math.Min(1, 1/math.Sqrt(-slope))
		}
		var fNew float64
		accepted := false
		for try := 0; try < 40; try++ {
			for i := range x {
				xNew[i] = x[i] + step*dir[i]
			}
			fNew = f(xNew, gNew)
			if fNew <= fx+1e-4*step*slope {
				accepted = true
				break
			}
			step *= 0.5
		}
		if !accepted {
			return iter // no decrease possible at float64 precision: converged as far as it goes
		}
		s := make([]float64, n)
		y := make([]float64, n)
		if len(sHist) == memory { // recycle the oldest pair
			s, y = sHist[0], yHist[0]
			sHist, yHist, rho = sHist[1:], yHist[1:], rho[1:]
		}
		for i := range x {
			s[i] = xNew[i] - x[i]
			y[i] = gNew[i] - g[i]
		}
		if sy := floats.Dot(s, y); sy > 1e-12*math.Sqrt(floats.Dot(s, s)*floats.Dot(y, y)) {
			sHist, yHist, rho = append(sHist, s), append(yHist, y), append(rho, 1/sy)
		}
		copy(x, xNew)
		copy(g, gNew)
		if fx-fNew <= 1e-12*math.Max(1, math.Abs(fx)) {
			fx = fNew
			return iter + 1
		}
		fx = fNew
	}
	return maxIter
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}
