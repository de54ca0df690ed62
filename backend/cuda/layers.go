package cuda

import (
	"fmt"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// ---- ReLU ----

func (b *Backend) ReLUForward(x, y tensor.Buffer) {
	n := sameLen("ReLUForward", x, y)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y)
	if n > 0 {
		b.launch("k_relu_fwd", gridFor(n, b.sms), 1, b.buf(x), b.buf(y), n)
	}
}

func (b *Backend) ReLUBackward(y, dy, dx tensor.Buffer) {
	n := sameLen("ReLUBackward", y, dy, dx)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dx)
	if n > 0 {
		b.launch("k_relu_bwd", gridFor(n, b.sms), 1, b.buf(y), b.buf(dy), b.buf(dx), n)
	}
}

// ---- global average pooling: x (N,C,HW) -> y (N,C) ----

func (b *Backend) GlobalAvgPoolForward(n, c, hw int, x, y tensor.Buffer) {
	if x.Len() != n*c*hw || y.Len() != n*c {
		panic(fmt.Sprintf("cuda: GlobalAvgPoolForward(n=%d, c=%d, hw=%d): x has %d, y has %d elements", n, c, hw, x.Len(), y.Len()))
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y)
	if n*c > 0 {
		b.launch("k_gap_fwd", gridFor(n*c, b.sms), 1, b.buf(x), b.buf(y), n*c, hw)
	}
}

func (b *Backend) GlobalAvgPoolBackward(n, c, hw int, dy, dx tensor.Buffer) {
	if dx.Len() != n*c*hw || dy.Len() != n*c {
		panic(fmt.Sprintf("cuda: GlobalAvgPoolBackward(n=%d, c=%d, hw=%d): dy has %d, dx has %d elements", n, c, hw, dy.Len(), dx.Len()))
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dx)
	if n*c*hw > 0 {
		b.launch("k_gap_bwd", gridFor(n*c*hw, b.sms), 1, b.buf(dy), b.buf(dx), n*c, hw)
	}
}

// ---- linear layer: x (N,In), w (Out,In), b (Out), y (N,Out) ----

// gemm is row-major C (m x n) = alpha op(A) op(B) + beta C through
// column-major cuBLAS: a row-major matrix is its transpose in column-major
// order, so C^T = op(B)^T op(A)^T is computed with A and B swapped.
func (b *Backend) gemm(transA, transB bool, m, n, k int, alpha float32, a uint64, lda int, bm uint64, ldb int, beta float32, c uint64, ldc int, tf32 bool) {
	if b.err != nil {
		return
	}
	cb := &b.libs.cublas
	mode := uintptr(cublasDefaultMath)
	if tf32 {
		mode = cublasTF32TensorOp
	}
	b.fail(cb.check("cublasSetMathMode", mustCall(cb.setMathMode, b.cublasHandle, mode)))
	op := func(t bool) uintptr {
		if t {
			return cublasOpT
		}
		return cublasOpN
	}
	b.used(a, bm, c)
	b.fail(cb.check(fmt.Sprintf("cublasSgemm(m=%d n=%d k=%d)", m, n, k), mustCall(cb.sgemm, b.cublasHandle, op(transB), op(transA),
		uintptr(n), uintptr(m), uintptr(k), uintptr(unsafe.Pointer(&alpha)), uintptr(bm), uintptr(ldb), uintptr(a), uintptr(lda),
		uintptr(unsafe.Pointer(&beta)), uintptr(c), uintptr(ldc))))
}

func (b *Backend) LinearForward(n, in, out int, x, w, bias, y tensor.Buffer) {
	if x.Len() != n*in || w.Len() != out*in || y.Len() != n*out || (bias != nil && bias.Len() != out) {
		panic(fmt.Sprintf("cuda: LinearForward(n=%d, in=%d, out=%d): x %d, w %d, y %d elements", n, in, out, x.Len(), w.Len(), y.Len()))
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y)
	if b.bf16 {
		b.gemmBF16(false, true, n, out, in, b.ptr(x), n, in, b.ptr(w), out, in, true, 0, b.ptr(y), out)
	} else {
		b.gemm(false, true, n, out, in, 1, b.ptr(x), in, b.ptr(w), in, 0, b.ptr(y), out, b.tf32)
	}
	if bias != nil {
		b.launch("k_bias_add", gridFor(n*out, b.sms), 1, b.buf(y), b.buf(bias), n, out)
	}
}

func (b *Backend) LinearBackward(n, in, out int, x, w, dy, dx, dw, db tensor.Buffer) {
	if x.Len() != n*in || w.Len() != out*in || dy.Len() != n*out || dw.Len() != out*in ||
		(dx != nil && dx.Len() != n*in) || (db != nil && db.Len() != out) {
		panic(fmt.Sprintf("cuda: LinearBackward(n=%d, in=%d, out=%d): x %d, w %d, dy %d, dw %d elements", n, in, out, x.Len(), w.Len(), dy.Len(), dw.Len()))
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dx, dw, db)
	if dx != nil {
		// dx (N,In) = dy (N,Out) w (Out,In)
		if b.bf16 {
			b.gemmBF16(false, false, n, in, out, b.ptr(dy), n, out, b.ptr(w), out, in, true, 0, b.ptr(dx), in)
		} else {
			b.gemm(false, false, n, in, out, 1, b.ptr(dy), out, b.ptr(w), in, 0, b.ptr(dx), in, b.tf32)
		}
	}
	// dw (Out,In) = dy^T (Out,N) x (N,In)
	if b.bf16 {
		b.gemmBF16(true, false, out, in, n, b.ptr(dy), n, out, b.ptr(x), n, in, false, 0, b.ptr(dw), in)
	} else {
		b.gemm(true, false, out, in, n, 1, b.ptr(dy), out, b.ptr(x), in, 0, b.ptr(dw), in, b.tf32)
	}
	if db != nil {
		b.launch("k_bias_grad", gridFor(out, b.sms), 1, b.buf(dy), b.buf(db), n, out)
	}
}
