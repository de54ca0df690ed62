package blas

import "fmt"

// checkArgs panics when the operands of an Sgemm call cannot hold the
// matrices it describes: that is a programmer error (a shape mismatch), not
// something a user can cause. Empty products (m, n or k zero) need no
// storage for the empty operands, so their strides are not checked.
func checkArgs(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("blas: Sgemm with negative size m=%d n=%d k=%d", m, n, k))
	}
	// Stored shapes: A is m x k, or k x m when transposed; B is k x n, or n x k.
	aRows, aCols := m, k
	if transA {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if transB {
		bRows, bCols = n, k
	}
	checkOperand("A", transA, aRows, aCols, a, lda)
	checkOperand("B", transB, bRows, bCols, b, ldb)
	checkOperand("C", false, m, n, c, ldc)
}

func checkOperand(name string, trans bool, rows, cols int, s []float32, ld int) {
	if rows == 0 || cols == 0 {
		return
	}
	if ld < cols {
		panic(fmt.Sprintf("blas: Sgemm %s stored as %dx%d (transposed=%v) has row stride %d < %d", name, rows, cols, trans, ld, cols))
	}
	if need := (rows-1)*ld + cols; len(s) < need {
		panic(fmt.Sprintf("blas: Sgemm %s stored as %dx%d (transposed=%v) with row stride %d needs %d elements, slice has %d", name, rows, cols, trans, ld, need, len(s)))
	}
}

// scaleC sets the m x n matrix C to beta C. With beta = 0 it writes zeros
// without reading C, so NaN or Inf garbage is overwritten, as BLAS does.
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}
