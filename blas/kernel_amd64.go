//go:build amd64 && !purego

package blas

import (
	"math"

	"golang.org/x/sys/cpu"
)

// The SIMD micro-kernels keep the C tile in vector registers and use fused
// multiply-adds, which the Go compiler does not emit for float32 loops. They
// are Go assembly, so the package still builds with CGO_ENABLED=0; the
// generic kernel remains for other CPUs (and the purego build tag).

//go:noescape
func tile6x16AVX2(kc int, a, b, c *float32, ldc int)

// avx2Kernel: 6x16 tile in 12 YMM registers. The block sizes keep a
// kc x 16 sliver of B (16 KiB) in L1 and an mc x kc block of A (96 KiB) in L2.
var avx2Kernel = kernel{name: "avx2+fma", mr: 6, nr: 16, mc: 96, kc: 256, nc: 1024, tile: func(kc int, a, b, c []float32, ldc int) {
	// Bounds checks the assembly cannot make.
	_ = a[6*kc-1]
	_ = b[16*kc-1]
	_ = c[5*ldc+15]
	tile6x16AVX2(kc, &a[0], &b[0], &c[0], ldc)
}}

// avx512Kernel: 12x32 tile in 24 ZMM registers; kc is smaller so that a
// kc x 32 sliver of B (24 KiB) and a 12 x kc sliver of A fit in L1 together.
// One assembly tile serves packed slivers (tile) and operands read in place
// (strided).
var avx512Kernel = kernel{name: "avx512", mr: 12, nr: 32, mc: 144, kc: 192, nc: 1024,
	tile: func(kc int, a, b, c []float32, ldc int) {
		tile12x32Strided(kc, a, 1, 12, b, 32, c, ldc, false)
	},
	gather: gatherSliver, dot: dot4x4, strided: tile12x32Strided}

func tile12x32Strided(kc int, a []float32, aRow, aStep int, b []float32, bStep int, c []float32, ldc int, overwrite bool) {
	// Bounds checks the assembly cannot make.
	_ = a[11*aRow+(kc-1)*aStep]
	_ = b[(kc-1)*bStep+31]
	_ = c[11*ldc+31]
	tile12x32StridedAVX512(kc, &a[0], aRow, aStep, &b[0], bStep, &c[0], ldc, overwrite)
}

//go:noescape
func tile12x32StridedAVX512(kc int, a *float32, aRow, aStep int, b *float32, bStep int, c *float32, ldc int, overwrite bool)

//go:noescape
func gatherSliverAVX512(dst, src *float32, idx *int32, steps, width, gLo, gHi, sLo, sHi int, alpha float32)

// gatherSliver is the kernel's gather with AVX-512 gathers: one step of up
// to 32 rows in two gathers, where the scalar loop writes one element a
// cache line apart at a time. It declines widths over 32 and strides whose
// offsets do not fit the gathers' 32-bit indices.
func gatherSliver(dst, src []float32, stride, rows, steps, width int, alpha float32) bool {
	if width > 32 || rows > width || rows < 1 || steps < 1 || stride > math.MaxInt32/32 {
		return false
	}
	// Bounds checks the assembly cannot make.
	_ = dst[steps*width-1]
	_ = src[(rows-1)*stride+steps-1]
	var idx [32]int32
	for i := range rows {
		idx[i] = int32(i * stride)
	}
	lo, hi := min(rows, 16), max(rows-16, 0)
	gatherSliverAVX512(&dst[0], &src[0], &idx[0], steps, width,
		1<<lo-1, 1<<hi-1, 1<<min(width, 16)-1, 1<<max(width-16, 0)-1, alpha)
	return true
}

// kernels lists the micro-kernels this machine can run, fastest first.
func kernels() []kernel {
	var ks []kernel
	// VL as well: the dot kernel reduces in the upper 16 registers at 256
	// and 128 bits, which AVX-512F alone does not encode.
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, genericKernel)
}

//go:noescape
func dot4x4AVX512(k int, a *float32, lda int, b *float32, ldb int, sums *[16]float32)

// dot4x4 is avx512Kernel's dot: the 16 sums of a 4 x 4 block of A B^T
// from rows of A and B read in place.
func dot4x4(k int, a []float32, lda int, b []float32, ldb int, sums *[16]float32) {
	_ = a[3*lda+k-1]
	_ = b[3*ldb+k-1]
	dot4x4AVX512(k, &a[0], lda, &b[0], ldb, sums)
}
