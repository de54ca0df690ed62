// Package blas provides single-precision matrix multiplication (SGEMM) for
// the CPU backend: a system BLAS found at run time through purego when it is
// known to be fast, else a pure-Go kernel.
//
// Choose (and Open) pick for the caller. The search loads libopenblas.so.0,
// then libopenblas.so, then libblas.so.3, from the loader's search path and
// the usual library directories, or only the library named by $SIMCLR_BLAS;
// no cgo is involved, so CGO_ENABLED=0 builds work. A library exporting
// cblas_sgemm is accepted when a symbol of its own identifies it as
// OpenBLAS, BLIS or MKL, or when a short timed product shows it faster than
// the pure-Go kernel; otherwise (Debian's reference BLAS, for one) the
// search goes on, and ends with the pure-Go kernel. An accepted library is
// then raced against the pure-Go kernel on a training step's products, once
// per process, and the faster is used. Choice.Why says which and why, and
// Choice.Kind lets ChooseKind make the same choice in another process.
// PerShape goes further: it sends each product shape to the library or the
// pure-Go kernel, whichever a race on that shape found faster; it is opt-in
// (KindPerShape), as a shape first met after a checkpoint is raced again
// by a resumed process, which may choose the other kernel.
// Unless OPENBLAS_CORETYPE is already set, it is set from the CPU's
// instruction sets before loading, because OpenBLAS releases older than the
// CPU fall back to their slowest kernels.
//
// PureGo is the fallback: a packed, cache-blocked SGEMM parallel over
// goroutines, whose micro-kernel is AVX-512 or AVX2+FMA Go assembly where
// the CPU has it and portable Go elsewhere (or with the purego build tag).
package blas

// Gemm computes C = alpha op(A) op(B) + beta C on row-major matrices, where
// op(A) is m x k, op(B) is k x n and C is m x n; lda, ldb and ldc are row
// strides (as cblas_sgemm with CblasRowMajor).
type Gemm interface {
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	// Name says which implementation this is, for logs and `simclr bench`.
	Name() string
}

// Naive is the textbook triple loop, the reference the fast kernels are
// tested against. It is slow; nothing but tests should use it.
type Naive struct{}

func (Naive) Name() string { return "naive" }

func (Naive) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var sum float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				sum += float64(av) * float64(bv)
			}
			cv := float32(0)
			if beta != 0 {
				cv = beta * c[i*ldc+j]
			}
			c[i*ldc+j] = alpha*float32(sum) + cv
		}
	}
}
