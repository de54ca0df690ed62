//go:build !amd64 || purego

package cpu

// Without the assembly every tile is transformed, and every batch-norm
// pass made, in Go.

func winoSIMD() bool { return false }

func winoInputRowSIMD(rows []float32, wp, half int, dst []float32, stride, n int) int { return 0 }

func winoOutputRowSIMD(m []float32, stride int, y0, y1 []float32, n int) int { return 0 }

func winoGradRowSIMD(dy0, dy1, d []float32, stride, n int) int { return 0 }

func winoSplitRowSIMD(src, even, odd []float32) int { return 0 }

func bnSumSquaresSIMD(x []float32, shift float64, lanes *[8]float64) int { return 0 }

func bnSumDotSIMD(g, x []float32, mu float32, lanes *[8]float64) int { return 0 }

func bnAffineSIMD(src, dst []float32, sc, sh float32) int { return 0 }

func bnAffineReLUSIMD(src, res, dst []float32, sc, sh float32) int { return 0 }

func bnBackwardDxSIMD(dy, x, dx []float32, k, a, a0 float32) int { return 0 }

func reluBackwardSIMD(y, dy, dx []float32) int { return 0 }

func winoFiltersSIMD(w []float32, row0, n int, u []float32, stride int) int { return 0 }
