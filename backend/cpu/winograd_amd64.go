//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// The Winograd tile transforms in AVX2 assembly (winograd_amd64.s): the Go
// compiler emits no SIMD, and in scalar Go the transforms of the 64-channel
// layers cost as much CPU time as their GEMMs. Each handles a multiple of
// 4 tiles of one tile row; the callers finish the row in Go.

//go:noescape
func winoInputRowAVX2(src *float32, wp, half int, dst *float32, stride, n int)

//go:noescape
func winoOutputRowAVX2(m *float32, stride int, y0, y1 *float32, n int)

//go:noescape
func winoSplitRowAVX2(src, even, odd *float32, n int)

//go:noescape
func winoGradRowAVX2(dy0, dy1, d *float32, stride, n int)

// hasAVX2 reports whether this CPU runs the package's assembly (AVX2 for
// the 256-bit steps; the 128-bit steps use the same VEX encoding).
func hasAVX2() bool { return cpu.X86.HasAVX2 }

// winoInputRowSIMD transforms the first n &^ 3 tiles of a tile row (see
// winoInputRowGo) and returns how many it did.
func winoInputRowSIMD(rows []float32, wp, half int, dst []float32, stride, n int) int {
	n4 := n &^ 3
	if n4 == 0 || !hasAVX2() {
		return 0
	}
	// The bounds the assembly cannot check: the last odd column read and
	// the last entry written.
	_ = rows[3*wp+half+n4]
	_ = dst[15*stride+n4-1]
	winoInputRowAVX2(&rows[0], wp, half, &dst[0], stride, n4)
	return n4
}

// winoOutputRowSIMD writes the first n &^ 3 tiles of a tile row whose two
// output rows y0 and y1 lie inside the plane (see winoOutputTile) and
// returns how many it did.
func winoOutputRowSIMD(m []float32, stride int, y0, y1 []float32, n int) int {
	n4 := n &^ 3
	if n4 == 0 || !hasAVX2() {
		return 0
	}
	_ = m[15*stride+n4-1]
	_ = y0[2*n4-1]
	_ = y1[2*n4-1]
	winoOutputRowAVX2(&m[0], stride, &y0[0], &y1[0], n4)
	return n4
}

// winoGradRowSIMD transforms the first n &^ 3 full 2x2 tiles of output
// gradient rows dy0 and dy1 (see winoGradTile) and returns how many it did.
func winoGradRowSIMD(dy0, dy1, d []float32, stride, n int) int {
	n4 := n &^ 3
	if n4 == 0 || !hasAVX2() {
		return 0
	}
	_ = dy0[2*n4-1]
	_ = dy1[2*n4-1]
	_ = d[15*stride+n4-1]
	winoGradRowAVX2(&dy0[0], &dy1[0], &d[0], stride, n4)
	return n4
}

// winoSplitRowSIMD sets even[m] = src[2m] and odd[m] = src[2m+1] for the
// first (len(src)/2) &^ 7 pairs and returns how many it did.
func winoSplitRowSIMD(src, even, odd []float32) int {
	n8 := (len(src) / 2) &^ 7
	if n8 == 0 || !hasAVX2() {
		return 0
	}
	_ = even[n8-1]
	_ = odd[n8-1]
	winoSplitRowAVX2(&src[0], &even[0], &odd[0], n8)
	return n8
}

//go:noescape
func winoFiltersAVX2(w *float32, n int, u *float32, stride int)

// winoFiltersSIMD transforms the filters [row0, row0+n&^7) of w into u as
// winoFilters does (u[e*stride+row] for filter row) and returns how many
// it did.
func winoFiltersSIMD(w []float32, row0, n int, u []float32, stride int) int {
	n8 := n &^ 7
	if n8 == 0 || !hasAVX2() {
		return 0
	}
	_ = w[(row0+n8)*9-1]
	_ = u[15*stride+row0+n8-1]
	winoFiltersAVX2(&w[row0*9], n8, &u[row0], stride)
	return n8
}
