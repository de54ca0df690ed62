package cpu

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// This file implements tensor.Layers (ReLU, pooling and the linear layer).
var _ tensor.Layers = (*Backend)(nil)

// ReLUForward: y = max(x, 0), y may alias x.
func (b *Backend) ReLUForward(x, y tensor.Buffer) {
	xd, yd := same("ReLUForward", x, y)
	b.parallelFor(len(xd), 1, func(_, lo, hi int) {
		xs, ys := xd[lo:hi], yd[lo:hi]
		ys = ys[:len(xs)]
		for i, v := range xs {
			ys[i] = math.Float32frombits(math.Float32bits(v) & positiveMask(v))
		}
	})
}

// positiveMask is all ones when v > 0 (or a NaN with the sign bit clear)
// and 0 otherwise, computed without a branch: ReLU inputs are positive
// about half the time, at random, so a branch would mispredict on every
// other element (Go does not turn float comparisons into conditional
// moves). For a float32 bit pattern m read as int32, v > 0 exactly when
// m > 0; (-m &^ m) has its sign bit set exactly then.
func positiveMask(v float32) uint32 {
	m := int32(math.Float32bits(v))
	return uint32((-m &^ m) >> 31)
}

// ReLUBackward: dx = dy where y > 0, else 0; y is the forward output (dx
// may alias dy).
func (b *Backend) ReLUBackward(y, dy, dx tensor.Buffer) {
	yd, dyd := same("ReLUBackward", y, dy)
	_, dxd := same("ReLUBackward", y, dx)
	b.parallelFor(len(yd), 2, func(_, lo, hi int) {
		ys, dys, dxs := yd[lo:hi], dyd[lo:hi], dxd[lo:hi]
		dys, dxs = dys[:len(ys)], dxs[:len(ys)]
		for i := reluBackwardSIMD(ys, dys, dxs); i < len(ys); i++ {
			dxs[i] = math.Float32frombits(math.Float32bits(dys[i]) & positiveMask(ys[i]))
		}
	})
}

// GlobalAvgPoolForward: x (N,C,HW) -> y (N,C), the mean over HW
// (torch.nn.AdaptiveAvgPool2d(1) followed by flatten).
func (b *Backend) GlobalAvgPoolForward(n, c, hw int, x, y tensor.Buffer) {
	xd, yd := Data(x), Data(y)
	if len(xd) != n*c*hw { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("pool input x (N=%d,C=%d,HW=%d)", n, c, hw), xd, n*c*hw)
	}
	if len(yd) != n*c { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("pool output y (N=%d,C=%d)", n, c), yd, n*c)
	}
	inv := 1 / float64(hw)
	b.parallelFor(n*c, hw, func(_, lo, hi int) {
		for row := lo; row < hi; row++ {
			var sum float64
			for _, v := range xd[row*hw : (row+1)*hw] {
				sum += float64(v)
			}
			yd[row] = float32(sum * inv)
		}
	})
}

// GlobalAvgPoolBackward: dy (N,C) -> dx (N,C,HW), dx = dy/HW.
func (b *Backend) GlobalAvgPoolBackward(n, c, hw int, dy, dx tensor.Buffer) {
	dyd, dxd := Data(dy), Data(dx)
	if len(dyd) != n*c { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("pool output gradient dy (N=%d,C=%d)", n, c), dyd, n*c)
	}
	if len(dxd) != n*c*hw { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("pool input gradient dx (N=%d,C=%d,HW=%d)", n, c, hw), dxd, n*c*hw)
	}
	inv := 1 / float32(hw)
	b.parallelFor(n*c, hw, func(_, lo, hi int) {
		for row := lo; row < hi; row++ {
			g := dyd[row] * inv
			dst := dxd[row*hw : (row+1)*hw]
			for j := range dst {
				dst[j] = g
			}
		}
	})
}

// LinearForward: x (N,In), w (Out,In), b (Out) or nil, y (N,Out) = x w^T + b,
// as torch.nn.Linear.
func (b *Backend) LinearForward(n, in, out int, x, w, bias, y tensor.Buffer) {
	xd, wd, yd := Data(x), Data(w), Data(y)
	checkLinear(n, in, out, xd, wd, yd, "output y")
	beta := float32(0)
	if bias != nil {
		bd := Data(bias)
		if len(bd) != out { // format the message only on failure: this runs every layer call
			checkLen(fmt.Sprintf("linear bias (Out=%d)", out), bd, out)
		}
		for i := 0; i < n; i++ {
			copy(yd[i*out:(i+1)*out], bd)
		}
		beta = 1
	}
	// Rows of y split over the workers, one single-threaded GEMM each.
	b.parallelFor(n, in*out, func(_, lo, hi int) {
		b.gemm.Sgemm(false, true, hi-lo, out, in, 1, xd[lo*in:hi*in], in, wd, in, beta, yd[lo*out:hi*out], out)
	})
}

// LinearBackward writes dx (N,In) unless nil, dw (Out,In), and db (Out)
// unless nil, from dy (N,Out). All are overwritten.
func (b *Backend) LinearBackward(n, in, out int, x, w, dy, dx, dw, db tensor.Buffer) {
	xd, wd, dyd, dwd := Data(x), Data(w), Data(dy), Data(dw)
	checkLinear(n, in, out, xd, wd, dyd, "output gradient dy")
	if len(dwd) != out*in { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("linear weight gradient dw (Out=%d,In=%d)", out, in), dwd, out*in)
	}
	if dx != nil {
		dxd := Data(dx)
		if len(dxd) != n*in { // format the message only on failure: this runs every layer call
			checkLen(fmt.Sprintf("linear input gradient dx (N=%d,In=%d)", n, in), dxd, n*in)
		}
		b.parallelFor(n, in*out, func(_, lo, hi int) {
			b.gemm.Sgemm(false, false, hi-lo, in, out, 1, dyd[lo*out:hi*out], out, wd, in, 0, dxd[lo*in:hi*in], in)
		})
	}
	// Rows o of dw = (columns o of dy)^T x, split over the workers.
	b.parallelFor(out, n*in, func(_, lo, hi int) {
		b.gemm.Sgemm(true, false, hi-lo, in, n, 1, dyd[lo:], out, xd, in, 0, dwd[lo*in:hi*in], in)
	})
	if db != nil {
		dbd := Data(db)
		if len(dbd) != out { // format the message only on failure: this runs every layer call
			checkLen(fmt.Sprintf("linear bias gradient db (Out=%d)", out), dbd, out)
		}
		b.parallelFor(out, n, func(_, lo, hi int) {
			for o := lo; o < hi; o++ {
				var sum float64
				for i := 0; i < n; i++ {
					sum += float64(dyd[i*out+o])
				}
				dbd[o] = float32(sum)
			}
		})
	}
}

func checkLinear(n, in, out int, x, w, y []float32, yName string) {
	if n < 1 || in < 1 || out < 1 {
		panic(fmt.Sprintf("cpu: invalid linear shape N=%d In=%d Out=%d", n, in, out))
	}
	if len(x) != n*in { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("linear input x (N=%d,In=%d)", n, in), x, n*in)
	}
	if len(w) != out*in { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("linear weight w (Out=%d,In=%d)", out, in), w, out*in)
	}
	if len(y) != n*out { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("linear %s (N=%d,Out=%d)", yName, n, out), y, n*out)
	}
}
