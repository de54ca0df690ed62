//go:build !amd64 || purego

package cpu

// Without the assembly every tile is transformed in Go.

func hasAVX2() bool { return false }

func winoInputRowSIMD(rows []float32, wp, half int, dst []float32, stride, n int) int { return 0 }

func winoOutputRowSIMD(m []float32, stride int, y0, y1 []float32, n int) int { return 0 }

func winoGradRowSIMD(dy0, dy1, d []float32, stride, n int) int { return 0 }

func winoSplitRowSIMD(src, even, odd []float32) int { return 0 }
