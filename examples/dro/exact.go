package main

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// kappa is 2 Sigma2 / Lambda: the closed form is finite where kappa |w|^2 < 1.
const kappa = 2 * Sigma2 / Lambda

// exactLinear is the closed form of the linear problem's objective
// (docs/definitions.md, section 9). Given the row xi = (a, b), the residual
// u = w.z + w0 - b is N(mu, s^2) with mu = w.a + w0 - b and s^2 = Sigma2 |w|^2,
// and E exp(u^2/Lambda) = r^(-1/2) exp(mu^2/(Lambda r)) with
// r = 1 - kappa |w|^2, so
//
//	F_xi(x) = -(Lambda/2) log r + mu^2 / r,   F(x) = mean over rows of F_xi(x),
//
// finite only where r > 0. F is convex there and grows without bound at its
// edge. Because mean mu^2 is a quadratic form in x = (w, w0), F costs
// O(dim^2) whatever the number of rows.
type exactLinear struct {
	data *Data
	d    int
	s    []float64 // (d+1) x (d+1) mean of (a,1)(a,1)^T, row-major
	q    []float64 // mean of b (a, 1)
	c    float64   // mean of b^2
}

func newExactLinear(data *Data) *exactLinear {
	d := data.Dim()
	e := &exactLinear{data: data, d: d, s: make([]float64, (d+1)*(d+1)), q: make([]float64, d+1)}
	n := float64(len(data.Y))
	at := make([]float64, d+1)
	for i, a := range data.X {
		copy(at, a)
		at[d] = 1
		b := data.Y[i]
		for j := range at {
			e.q[j] += b * at[j] / n
			for k := range at {
				e.s[j*(d+1)+k] += at[j] * at[k] / n
			}
		}
		e.c += b * b / n
	}
	return e
}

// r is 1 - kappa |w|^2.
func (e *exactLinear) r(x []float64) float64 {
	w2 := 0.0
	for _, wk := range x[:e.d] {
		w2 += wk * wk
	}
	return 1 - kappa*w2
}

// meanSquare is mean over rows of mu^2 = x^T S x - 2 q^T x + c, and writes
// S x - q into sxq when not nil.
func (e *exactLinear) meanSquare(x, sxq []float64) float64 {
	m := e.c
	for j := range x {
		sx := 0.0
		for k, xk := range x {
			sx += e.s[j*len(x)+k] * xk
		}
		m += x[j]*sx - 2*e.q[j]*x[j]
		if sxq != nil {
			sxq[j] = sx - e.q[j]
		}
	}
	return m
}

// value is F(x), +Inf outside the domain r > 0.
func (e *exactLinear) value(x []float64) float64 {
	r := e.r(x)
	if r <= 0 {
		return math.Inf(1)
	}
	return -Lambda/2*math.Log(r) + e.meanSquare(x, nil)/r
}

// grad writes grad F(x) into g:
// grad_w = kappa Lambda w / r + 2 (Sx - q)_w / r + 2 kappa M w / r^2,
// grad_w0 = 2 (Sx - q)_w0 / r, with M = mean mu^2.
func (e *exactLinear) grad(x, g []float64) {
	r := e.r(x)
	m := e.meanSquare(x, g)
	for k := range g {
		g[k] *= 2 / r
	}
	for k, wk := range x[:e.d] {
		g[k] += kappa*Lambda*wk/r + 2*kappa*m*wk/(r*r)
	}
}

// rowValue is F_xi(x) for row i.
func (e *exactLinear) rowValue(x []float64, i int) float64 {
	r := e.r(x)
	if r <= 0 {
		return math.Inf(1)
	}
	mu := linear{e.d}.predict(x, e.data.X[i]) - e.data.Y[i]
	return -Lambda/2*math.Log(r) + mu*mu/r
}

// rowGrad adds alpha * grad F_xi(x) for row i into g.
func (e *exactLinear) rowGrad(x []float64, i int, alpha float64, g []float64) {
	r := e.r(x)
	a := e.data.X[i]
	mu := linear{e.d}.predict(x, a) - e.data.Y[i]
	for k, wk := range x[:e.d] {
		g[k] += alpha * (kappa*Lambda*wk/r + 2*mu*a[k]/r + 2*kappa*mu*mu*wk/(r*r))
	}
	g[e.d] += alpha * 2 * mu / r
}

// minimise finds x* = argmin F by damped Newton steps (Hessian by central
// differences of the exact gradient, Armijo backtracking that keeps r > 0)
// from x = 0, and returns x* and F(x*). It fails if the gradient norm does
// not fall below 1e-9 (1 + |F|).
func (e *exactLinear) minimise() ([]float64, float64, error) {
	n := e.d + 1
	x := make([]float64, n)
	g := make([]float64, n)
	gp, gm, xt := make([]float64, n), make([]float64, n), make([]float64, n)
	h := mat.NewSymDense(n, nil)
	hraw := mat.NewDense(n, n, nil)
	f := e.value(x)
	for it := 0; it < 200; it++ {
		e.grad(x, g)
		if mat.Norm(mat.NewVecDense(n, g), 2) < 1e-9*(1+math.Abs(f)) {
			return x, f, nil
		}
		// hraw[j][k] = dg_j/dx_k from central differences; h is its
		// symmetric part.
		for k := range n {
			eps := 1e-5 * (1 + math.Abs(x[k]))
			copy(xt, x)
			xt[k] = x[k] + eps
			e.grad(xt, gp)
			xt[k] = x[k] - eps
			e.grad(xt, gm)
			for j := range n {
				hraw.Set(j, k, (gp[j]-gm[j])/(2*eps))
			}
		}
		for j := range n {
			for k := j; k < n; k++ {
				h.SetSym(j, k, (hraw.At(j, k)+hraw.At(k, j))/2)
			}
		}
		var chol mat.Cholesky
		dir := mat.NewVecDense(n, nil)
		if chol.Factorize(h) {
			if err := chol.SolveVecTo(dir, mat.NewVecDense(n, g)); err != nil {
				dir.CopyVec(mat.NewVecDense(n, g))
			}
		} else {
			dir.CopyVec(mat.NewVecDense(n, g)) // not positive definite: a gradient step
		}
		slope := mat.Dot(dir, mat.NewVecDense(n, g))
		t := 1.0
		for ; t > 1e-20; t /= 2 {
			for k := range xt {
				xt[k] = x[k] - t*dir.AtVec(k)
			}
			if ft := e.value(xt); ft <= f-1e-4*t*slope {
				copy(x, xt)
				f = ft
				break
			}
		}
		if t <= 1e-20 {
			break
		}
	}
	e.grad(x, g)
	return nil, 0, fmt.Errorf("the Newton solver did not converge: |grad F| = %g at F = %g", mat.Norm(mat.NewVecDense(n, g), 2), f)
}

// rowRho is the relative variance Var(g)/(E g)^2 of the inner function
// g = exp(l/Lambda) for row i at x (docs/definitions.md, section 9): the
// antithetic corrections of the row decay at their asymptotic rate b = 2
// only once 2^l is large against it. +Inf where 4 s^2 >= Lambda.
func (e *exactLinear) rowRho(x []float64, i int) float64 {
	s2 := Sigma2 * (1 - e.r(x)) / kappa // Sigma2 |w|^2
	t := 1 / Lambda
	r1, r2 := 1-2*t*s2, 1-4*t*s2
	if r2 <= 0 {
		return math.Inf(1)
	}
	mu := linear{e.d}.predict(x, e.data.X[i]) - e.data.Y[i]
	return r1/math.Sqrt(r2)*math.Exp(2*t*mu*mu*(1/r2-1/r1)) - 1
}
