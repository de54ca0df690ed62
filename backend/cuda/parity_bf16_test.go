package cuda_test

// Parity of the bf16 precision against backend/cpu's fp32, with tolerances
// derived from bf16's precision. bf16 keeps 8 significant bits (7 stored
// and the implicit one), so rounding a value to the nearest bf16 changes it
// by at most half a spacing: |x̂ - x| <= u|x| with u = 2^-8.
//
// A convolution or matrix product sums k products of bf16-rounded
// operands in fp32: x̂ŵ = xw(1+θ) with |θ| <= 2u+u², and an fp32 sum of k
// terms errs by at most γ_k = k 2^-24 / (1 - k 2^-24) times the sum of the
// terms' magnitudes (the standard bound for recursive summation; the CPU's
// own fp32 sum errs by as much again). With A = Σ|x||w| (the same product
// of the operands' magnitudes, computed on the CPU) and c the CPU's result,
// the bf16 result g obeys, element by element,
//
//	|g - c| <= (2u + 4u² + 2.1 γ_k) A          (fp32 output: cuBLAS)
//	|g - c| <= u|c| + (2u + 4u² + 2.1 γ_k) A   (bf16 output: cuDNN, then widened)
//
// (the u|c| term is the output's own rounding; u² and γ_k terms collect
// the products of the small errors). That bound holds whatever the data,
// so it can only fail on a wrong result. As it is worst-case, each check
// also asks the typical error to be of bf16's size: rounding errors are
// independent and of mean zero, of variance at most u²/3 each, so the
// relative L2 error of the whole result is about u (sqrt(2/3) u from the
// operands, u/sqrt(3) from the output); a check at 4u = 2^-6 leaves a
// margin of 4, while a wrong layout or a dropped term errs by order 1.

import (
	"fmt"
	"math"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/tensor"
)

const (
	bf16U     = 1.0 / 256 // u = 2^-8
	bf16L2Tol = 4 * bf16U
)

// bf16Bound is the element-wise bound above for k-term sums.
func bf16Bound(c, a float64, k int, roundedOut bool) float64 {
	gamma := float64(k) * 0x1p-24 / (1 - float64(k)*0x1p-24)
	b := (2*bf16U + 4*bf16U*bf16U + 2.1*gamma) * a
	if roundedOut {
		b += bf16U * math.Abs(c)
	}
	return b + 1e-30
}

func abs32(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(math.Abs(float64(v)))
	}
	return out
}

// checkBF16 compares the GPU's g with the CPU's c under bf16Bound, A being
// the CPU's result on the operands' magnitudes, and the relative L2 error
// with bf16L2Tol.
func (p *pair) checkBF16(t *testing.T, what string, g, c, absRef tensor.Buffer, k int, roundedOut bool) {
	t.Helper()
	if err := p.gpu.Sync(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got, want, a := p.download(g), cpu.Data(c), cpu.Data(absRef)
	var worst, num, den float64
	at := -1
	for i := range want {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		r := d / bf16Bound(float64(want[i]), float64(a[i]), k, roundedOut)
		if !(r <= worst) {
			worst, at = r, i
		}
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if !(worst <= 1) {
		t.Errorf("%s: at %d gpu %g, cpu %g: error %.3g times the bf16 bound (k=%d, A=%g)", what, at, got[at], want[at], worst, k, a[at])
	}
	rel := math.Sqrt(num / den)
	if !(rel <= bf16L2Tol) {
		t.Errorf("%s: relative L2 error %.3g > %.3g (4u)", what, rel, bf16L2Tol)
	}
	t.Logf("%s: worst error %.3g of the bound, relative L2 error %.3g (u = %.3g)", what, worst, rel, bf16U)
}

// TestParityBF16Conv: the three convolution directions in bf16 against
// the CPU's fp32, on the shapes of TestParityConv.
func TestParityBF16Conv(t *testing.T) {
	parityBF16Conv(t, openPair(t, "bf16"))
}

// TestParityBF16ConvGraph: TestParityBF16Conv through cuDNN's backend API
// alone (graph-only: no shape may fall back to the legacy API).
func TestParityBF16ConvGraph(t *testing.T) {
	parityBF16Conv(t, openPairWith(t, cuda.Options{Precision: "bf16", ConvAPI: cuda.ConvAPIGraphOnly}))
}

// parityBF16Conv checks the three directions in bf16 on every shape of
// convShapes.
func parityBF16Conv(t *testing.T, p *pair) {
	for _, s := range convShapes {
		t.Run(s.String(), func(t *testing.T) {
			xh, wh, dyh := p.randn(s.InLen(), 1), p.randn(s.WeightLen(), 0.1), p.randn(s.OutLen(), 1)
			xg, xc := p.both(xh)
			wg, wc := p.both(wh)
			dyg, dyc := p.both(dyh)
			yg, yc := p.zeros(s.OutLen())
			p.gpu.Upload(yg, p.randn(s.OutLen(), 5)) // garbage: overwritten
			p.gpu.Conv2dForward(s, xg, wg, yg)
			p.cpu.Conv2dForward(s, xc, wc, yc)
			// Magnitudes: A of each direction.
			_, xa := p.both(abs32(xh))
			_, wa := p.both(abs32(wh))
			_, dya := p.both(abs32(dyh))
			ya := p.cpu.Alloc(s.OutLen())
			p.cpu.Conv2dForward(s, xa, wa, ya)
			p.checkBF16(t, "forward", yg, yc, ya, s.C*s.R*s.S, true)

			dxg, dxc := p.zeros(s.InLen())
			dwg, dwc := p.zeros(s.WeightLen())
			p.gpu.Upload(dxg, p.randn(s.InLen(), 5))
			p.gpu.Upload(dwg, p.randn(s.WeightLen(), 5))
			p.gpu.Conv2dBackward(s, xg, wg, dyg, dxg, dwg)
			p.cpu.Conv2dBackward(s, xc, wc, dyc, dxc, dwc)
			dxa, dwa := p.cpu.Alloc(s.InLen()), p.cpu.Alloc(s.WeightLen())
			p.cpu.Conv2dBackward(s, xa, wa, dya, dxa, dwa)
			p.checkBF16(t, "backward dx", dxg, dxc, dxa, s.K*s.R*s.S, true)
			p.checkBF16(t, "backward dw", dwg, dwc, dwa, s.N*s.OutH()*s.OutW(), true)
			p.gpu.Zero(dwg)
			p.gpu.Conv2dBackward(s, xg, wg, dyg, nil, dwg)
			p.checkBF16(t, "backward dw (dx nil)", dwg, dwc, dwa, s.N*s.OutH()*s.OutW(), true)
		})
	}
}

// TestParityBF16Linear: the linear layer's products in bf16 (fp32 output),
// with and without bias and dx; the bias and its gradient are fp32 kernels
// of our own, within tolOwn.
func TestParityBF16Linear(t *testing.T) {
	p := openPair(t, "bf16")
	for _, sh := range [][3]int{{32, 512, 512}, {32, 512, 128}, {5, 7, 3}, {1024, 512, 128}} {
		n, in, out := sh[0], sh[1], sh[2]
		t.Run(fmt.Sprint(sh), func(t *testing.T) {
			xh, wh, dyh := p.randn(n*in, 1), p.randn(out*in, 0.05), p.randn(n*out, 1)
			xg, xc := p.both(xh)
			wg, wc := p.both(wh)
			dyg, dyc := p.both(dyh)
			_, xa := p.both(abs32(xh))
			_, wa := p.both(abs32(wh))
			_, dya := p.both(abs32(dyh))
			ya := p.cpu.Alloc(n * out)
			p.cpu.LinearForward(n, in, out, xa, wa, nil, ya)
			yg, yc := p.zeros(n * out)
			p.gpu.LinearForward(n, in, out, xg, wg, nil, yg)
			p.cpu.LinearForward(n, in, out, xc, wc, nil, yc)
			p.checkBF16(t, "forward", yg, yc, ya, in, false)
			bg, bc := p.both(p.randn(out, 1))
			p.gpu.LinearForward(n, in, out, xg, wg, bg, yg)
			p.cpu.LinearForward(n, in, out, xc, wc, bc, yc)
			// The bias add rounds once more in fp32 on either side: well
			// inside the product's bound (A >= |x w| term by term).
			p.checkBF16(t, "forward with bias", yg, yc, ya, in+1, false)

			dxg, dxc := p.zeros(n * in)
			dwg, dwc := p.zeros(out * in)
			dbg, dbc := p.zeros(out)
			p.gpu.LinearBackward(n, in, out, xg, wg, dyg, dxg, dwg, dbg)
			p.cpu.LinearBackward(n, in, out, xc, wc, dyc, dxc, dwc, dbc)
			dxa, dwa := p.cpu.Alloc(n*in), p.cpu.Alloc(out*in)
			p.cpu.LinearBackward(n, in, out, xa, wa, dya, dxa, dwa, nil)
			p.checkBF16(t, "dx", dxg, dxc, dxa, out, false)
			p.checkBF16(t, "dw", dwg, dwc, dwa, n, false)
			p.check(t, "db", dbg, dbc, tolOwn)
			p.gpu.Zero(dwg)
			p.gpu.LinearBackward(n, in, out, xg, wg, dyg, nil, dwg, nil)
			p.checkBF16(t, "dw (dx, db nil)", dwg, dwc, dwa, n, false)
		})
	}
}
