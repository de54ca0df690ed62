//go:build !amd64 || purego

package cpu

// Without the assembly every batch-norm pass, and the ReLU's backward
// pass, is made in Go.

func bnSumSquaresSIMD(x []float32, shift float64, lanes *[8]float64) int { return 0 }

func bnSumDotSIMD(g, x []float32, mu float32, lanes *[8]float64) int { return 0 }

func bnAffineSIMD(src, dst []float32, sc, sh float32) int { return 0 }

func bnAffineReLUSIMD(src, res, dst []float32, sc, sh float32) int { return 0 }

func bnBackwardDxSIMD(dy, x, dx []float32, k, a, a0 float32) int { return 0 }

func reluBackwardSIMD(y, dy, dx []float32) int { return 0 }

func winoFiltersSIMD(w []float32, row0, n int, u []float32, stride int) int { return 0 }
