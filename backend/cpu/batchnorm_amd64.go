//go:build amd64 && !purego

package cpu

// The batch-norm passes and the ReLU's backward pass in AVX2 assembly
// (batchnorm_amd64.s): Go emits no SIMD, and these passes over every
// activation were a tenth of a small training step. Each helper does the longest prefix the assembly takes
// and returns its length; the callers finish in Go, with the same
// operations in the same order, so the results do not depend on the CPU.

//go:noescape
func bnSumSquaresAVX2(x *float32, n int, shift float64, lanes *[8]float64)

//go:noescape
func bnSumDotAVX2(dy, x *float32, n int, mu float32, lanes *[8]float64)

//go:noescape
func bnAffineAVX2(src, dst *float32, n int, sc, sh float32)

//go:noescape
func bnAffineReLUAVX2(src, res, dst *float32, n int, sc, sh float32)

//go:noescape
func bnBackwardDxAVX2(dy, x, dx *float32, n int, k, a, a0 float32)

func bnSumSquaresSIMD(x []float32, shift float64, lanes *[8]float64) int {
	n := len(x) &^ 3
	if n == 0 || !hasAVX2() {
		return 0
	}
	bnSumSquaresAVX2(&x[0], n, shift, lanes)
	return n
}

func bnSumDotSIMD(g, x []float32, mu float32, lanes *[8]float64) int {
	n := len(g) &^ 3
	if n == 0 || !hasAVX2() {
		return 0
	}
	_ = x[n-1]
	bnSumDotAVX2(&g[0], &x[0], n, mu, lanes)
	return n
}

func bnAffineSIMD(src, dst []float32, sc, sh float32) int {
	n := len(src) &^ 7
	if n == 0 || !hasAVX2() {
		return 0
	}
	_ = dst[n-1]
	bnAffineAVX2(&src[0], &dst[0], n, sc, sh)
	return n
}

// bnAffineReLUSIMD adds res unless it is nil.
func bnAffineReLUSIMD(src, res, dst []float32, sc, sh float32) int {
	n := len(src) &^ 7
	if n == 0 || !hasAVX2() {
		return 0
	}
	_ = dst[n-1]
	var r *float32
	if res != nil {
		_ = res[n-1]
		r = &res[0]
	}
	bnAffineReLUAVX2(&src[0], r, &dst[0], n, sc, sh)
	return n
}

func bnBackwardDxSIMD(dy, x, dx []float32, k, a, a0 float32) int {
	n := len(dy) &^ 7
	if n == 0 || !hasAVX2() {
		return 0
	}
	_ = x[n-1]
	_ = dx[n-1]
	bnBackwardDxAVX2(&dy[0], &x[0], &dx[0], n, k, a, a0)
	return n
}

//go:noescape
func reluBackwardAVX2(y, dy, dx *float32, n int)

func reluBackwardSIMD(y, dy, dx []float32) int {
	n := len(y) &^ 7
	if n == 0 || !hasAVX2() {
		return 0
	}
	_ = dy[n-1]
	_ = dx[n-1]
	reluBackwardAVX2(&y[0], &dy[0], &dx[0], n)
	return n
}
