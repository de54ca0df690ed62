package blas

// genericKernel is the portable micro-kernel: a 4x4 tile of C in sixteen
// local accumulators. amd64 has sixteen SSE registers, which is why the tile
// is not larger: with more accumulators the compiler spills them to the
// stack and the kernel gets slower, not faster (measured: 4x8 below 4x4).
var genericKernel = kernel{name: "generic", mr: 4, nr: 4, mc: 128, kc: 256, nc: 1024, tile: tile4x4}

// tile4x4 adds the product of a 4 x kc sliver of A and a kc x 4 sliver of B
// (both packed step by step) to the 4x4 tile of C at c[0], c[ldc], ...
func tile4x4(kc int, a, b, c []float32, ldc int) {
	a = a[:4*kc]
	b = b[:4*kc]
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for len(a) >= 4 && len(b) >= 4 {
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		a0 := a[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := a[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := a[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := a[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
		a = a[4:]
		b = b[4:]
	}
	r := c[0:4:4]
	r[0] += c00
	r[1] += c01
	r[2] += c02
	r[3] += c03
	r = c[ldc : ldc+4 : ldc+4]
	r[0] += c10
	r[1] += c11
	r[2] += c12
	r[3] += c13
	r = c[2*ldc : 2*ldc+4 : 2*ldc+4]
	r[0] += c20
	r[1] += c21
	r[2] += c22
	r[3] += c23
	r = c[3*ldc : 3*ldc+4 : 3*ldc+4]
	r[0] += c30
	r[1] += c31
	r[2] += c32
	r[3] += c33
}
