package cuda

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// The vector kernels of tensor.Backend (kernels/vector.cu; the CPU
// counterpart is backend/cpu/vector.go).

func sameLen(op string, bufs ...tensor.Buffer) int {
	n := bufs[0].Len()
	for _, x := range bufs[1:] {
		if x.Len() != n {
			lens := make([]string, len(bufs))
			for i, y := range bufs {
				lens[i] = fmt.Sprint(y.Len())
			}
			panic(fmt.Sprintf("cuda: %s: lengths differ (%s)", op, strings.Join(lens, ", ")))
		}
	}
	return n
}

func (b *Backend) Zero(x tensor.Buffer) {
	d := b.buf(x)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(x)
	b.memsetLocked(d.ptr, d.n)
}

func (b *Backend) Copy(dst, src tensor.Buffer) {
	n := sameLen("Copy", dst, src)
	if n == 0 {
		return
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dst)
	if b.err != nil {
		return
	}
	b.used(b.ptr(dst), b.ptr(src))
	dr := &b.libs.driver
	b.fail(dr.check("cuMemcpyDtoDAsync", mustCall(dr.cuMemcpyDtoDAsync, uintptr(b.ptr(dst)), uintptr(b.ptr(src)), uintptr(n*4), b.stream)))
}

func (b *Backend) Scale(x tensor.Buffer, alpha float32) {
	n := x.Len()
	b.enter()
	defer b.leave()
	defer b.wroteLocked(x)
	if n > 0 {
		b.launch("k_scale", gridFor(n, b.sms), 1, b.buf(x), alpha, n)
	}
}

func (b *Backend) Axpy(y tensor.Buffer, alpha float32, x tensor.Buffer) {
	n := sameLen("Axpy", y, x)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y)
	if n > 0 {
		b.launch("k_axpy", gridFor(n, b.sms), 1, b.buf(y), alpha, b.buf(x), n)
	}
}

func (b *Backend) Add(out, x, y tensor.Buffer) {
	n := sameLen("Add", out, x, y)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(out)
	if n > 0 {
		b.launch("k_add", gridFor(n, b.sms), 1, b.buf(out), b.buf(x), b.buf(y), n)
	}
}

func (b *Backend) Dot(x, y tensor.Buffer) float64 {
	n := sameLen("Dot", x, y)
	b.enter()
	defer b.leave()
	return b.dotLocked(b.buf(x), b.buf(y), n)
}

func (b *Backend) SumSquares(x tensor.Buffer) float64 {
	b.enter()
	defer b.leave()
	return b.dotLocked(b.buf(x), b.buf(x), x.Len())
}

func (b *Backend) dotLocked(x, y *devBuf, n int) float64 {
	if n == 0 {
		return 0
	}
	g := reduceGrid(n)
	b.launch("k_dot_partial", g, 1, x, y, n, b.partial)
	b.launch("k_sum_partials", 1, 1, b.partial, g, b.scalars+scalarDot)
	if b.err != nil {
		return math.NaN()
	}
	b.copyToHost(unsafe.Pointer(&b.hostScalars[0]), b.scalars+scalarDot, 8)
	if b.err != nil {
		return math.NaN()
	}
	return b.hostScalars[0]
}

func (b *Backend) AllFinite(x tensor.Buffer) bool {
	n := x.Len()
	if n == 0 {
		return true
	}
	b.enter()
	defer b.leave()
	b.memsetLocked(b.scalars+scalarCount, 1)
	b.launch("k_count_nonfinite", reduceGrid(n), 1, b.buf(x), n, b.scalars+scalarCount)
	if b.err != nil {
		return false
	}
	var count uint32
	b.copyToHost(unsafe.Pointer(&count), b.scalars+scalarCount, 4)
	return b.err == nil && count == 0
}

// errClosed is reported when a closed Backend is used.
var errClosed = errors.New("cuda: backend used after Close")
