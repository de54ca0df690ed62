package cpu

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// This file implements tensor.Vector (the element-wise kernels).
var _ tensor.Vector = (*Backend)(nil)

// same returns the slices of two buffers, panicking unless their lengths match.
func same(op string, a, b tensor.Buffer) ([]float32, []float32) {
	x, y := Data(a), Data(b)
	if len(x) != len(y) {
		panic(fmt.Sprintf("cpu: %s on buffers of %d and %d elements", op, len(x), len(y)))
	}
	return x, y
}

func (b *Backend) Zero(x tensor.Buffer) {
	d := Data(x)
	b.parallelFor(len(d), 1, func(_, lo, hi int) { clear(d[lo:hi]) })
}

func (b *Backend) Copy(dst, src tensor.Buffer) {
	d, s := same("Copy", dst, src)
	b.parallelFor(len(d), 1, func(_, lo, hi int) { copy(d[lo:hi], s[lo:hi]) })
}

func (b *Backend) Scale(x tensor.Buffer, alpha float32) {
	d := Data(x)
	b.parallelFor(len(d), 1, func(_, lo, hi int) {
		for i := range d[lo:hi] {
			d[lo+i] *= alpha
		}
	})
}

func (b *Backend) Axpy(y tensor.Buffer, alpha float32, x tensor.Buffer) {
	yd, xd := same("Axpy", y, x)
	b.parallelFor(len(yd), 1, func(_, lo, hi int) {
		ys, xs := yd[lo:hi], xd[lo:hi]
		for i, v := range xs {
			ys[i] += alpha * v
		}
	})
}

func (b *Backend) Add(out, a, c tensor.Buffer) {
	od, ad := same("Add", out, a)
	_, cd := same("Add", out, c)
	b.parallelFor(len(od), 1, func(_, lo, hi int) {
		os, as, cs := od[lo:hi], ad[lo:hi], cd[lo:hi]
		for i := range os {
			os[i] = as[i] + cs[i]
		}
	})
}

func (b *Backend) Dot(a, c tensor.Buffer) float64 {
	ad, cd := same("Dot", a, c)
	var partial [maxThreads]float64
	parts := b.parallelFor(len(ad), 2, func(p, lo, hi int) {
		partial[p] = dot64(ad[lo:hi], cd[lo:hi])
	})
	return sumParts(partial[:parts])
}

func (b *Backend) SumSquares(x tensor.Buffer) float64 {
	d := Data(x)
	var partial [maxThreads]float64
	parts := b.parallelFor(len(d), 1, func(p, lo, hi int) {
		partial[p] = dot64(d[lo:hi], d[lo:hi])
	})
	return sumParts(partial[:parts])
}

func (b *Backend) AllFinite(x tensor.Buffer) bool {
	d := Data(x)
	var bad [maxThreads]bool
	parts := b.parallelFor(len(d), 1, func(p, lo, hi int) {
		for _, v := range d[lo:hi] {
			// v-v is NaN exactly when v is NaN or +-Inf.
			if v-v != 0 {
				bad[p] = true
				return
			}
		}
	})
	for _, b := range bad[:parts] {
		if b {
			return false
		}
	}
	return true
}

// dot64 is sum a_i b_i in float64, with four accumulators so the adds
// pipeline.
func dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func sumParts(p []float64) float64 {
	var s float64
	for _, v := range p {
		s += v
	}
	return s
}
