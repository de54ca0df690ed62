package main

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// mlp is the nonconvex predictor: one hidden layer of h tanh units,
// f_x(z) = v . tanh(W z + c) + v0, with x = (W row-major, c, v, v0).
type mlp struct{ d, h int }

func (m mlp) dim() int     { return m.h*m.d + 2*m.h + 1 }
func (m mlp) name() string { return fmt.Sprintf("mlp (%d inputs, %d tanh units, 1 output)", m.d, m.h) }

func (m mlp) predict(x, z []float64) float64 {
	w, c, v := x[:m.h*m.d], x[m.h*m.d:m.h*m.d+m.h], x[m.h*m.d+m.h:m.h*m.d+2*m.h]
	y := x[len(x)-1]
	for k := range m.h {
		s := c[k]
		for j, zj := range z {
			s += w[k*m.d+j] * zj
		}
		y += v[k] * math.Tanh(s)
	}
	return y
}

func (m mlp) addGrad(x, z []float64, alpha float64, grad []float64) {
	nw := m.h * m.d
	w, c, v := x[:nw], x[nw:nw+m.h], x[nw+m.h:nw+2*m.h]
	for k := range m.h {
		s := c[k]
		for j, zj := range z {
			s += w[k*m.d+j] * zj
		}
		a := math.Tanh(s)
		grad[nw+m.h+k] += alpha * a
		delta := alpha * v[k] * (1 - a*a)
		grad[nw+k] += delta
		for j, zj := range z {
			grad[k*m.d+j] += delta * zj
		}
	}
	grad[len(grad)-1] += alpha
}

// init returns the MLP's starting point: W and v with entries
// N(0, 1/fan_in), c and v0 zero, from seed (the same start for every method
// and trial of a data set).
func (m mlp) init(seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x1417))
	x := make([]float64, m.dim())
	nw := m.h * m.d
	for i := range nw {
		x[i] = r.NormFloat64() / math.Sqrt(float64(m.d))
	}
	for k := range m.h {
		x[nw+m.h+k] = r.NormFloat64() / math.Sqrt(float64(m.h))
	}
	return x
}
