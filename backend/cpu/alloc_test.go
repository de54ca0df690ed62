package cpu

import (
	"testing"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/tensor"
)

// TestLayerKernelsAllocateAlmostNothing: the layer kernels run hundreds of
// times per training step, so their shape checks must not build their panic
// messages unless they fail. On one thread with the pure-Go GEMM a call may
// allocate at most 3 objects (the closures it hands to parallelFor);
// formatting the messages eagerly cost 3 to 25 per call.
func TestLayerKernelsAllocateAlmostNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops sync.Pool items on purpose")
	}
	b := NewWith(blas.PureGo(1), 1)
	bn := tensor.BNShape{N: 4, C: 3, HW: 5, Eps: 1e-5, Momentum: 0.1}
	x, y, dy, dx := b.Alloc(60), b.Alloc(60), b.Alloc(60), b.Alloc(60)
	ch := func() tensor.Buffer { return b.Alloc(3) }
	gamma, beta, mean, invStd, runMean, runVar, dGamma, dBeta := ch(), ch(), ch(), ch(), ch(), ch(), ch(), ch()
	gn := tensor.GNShape{N: 4, C: 3, HW: 5, G: 3, Eps: 1e-5}
	gnMean, gnInvStd := b.Alloc(12), b.Alloc(12)
	cs := tensor.ConvShape{N: 2, C: 3, H: 5, W: 5, K: 4, R: 3, S: 3, Stride: 1, Pad: 1}
	cx, cw, cy, cdx, cdw, cdy := b.Alloc(cs.InLen()), b.Alloc(cs.WeightLen()), b.Alloc(cs.OutLen()),
		b.Alloc(cs.InLen()), b.Alloc(cs.WeightLen()), b.Alloc(cs.OutLen())
	lx, lw, lb, ly, ldx, ldw, ldb, ldy := b.Alloc(8), b.Alloc(12), b.Alloc(3), b.Alloc(6), b.Alloc(8), b.Alloc(12), b.Alloc(3), b.Alloc(6)
	px, py := b.Alloc(30), b.Alloc(6)
	for _, tc := range []struct {
		name string
		call func()
	}{
		{"BatchNormForwardTrain", func() { b.BatchNormForwardTrain(bn, x, gamma, beta, y, mean, invStd, runMean, runVar) }},
		{"BatchNormForwardEval", func() { b.BatchNormForwardEval(bn, x, gamma, beta, runMean, runVar, y) }},
		{"BatchNormBackward", func() { b.BatchNormBackward(bn, x, dy, gamma, mean, invStd, dx, dGamma, dBeta) }},
		{"GroupNormForward", func() { b.GroupNormForward(gn, x, gamma, beta, y, gnMean, gnInvStd) }},
		{"GroupNormForward/eval", func() { b.GroupNormForward(gn, x, gamma, beta, y, nil, nil) }},
		{"GroupNormBackward", func() { b.GroupNormBackward(gn, x, dy, gamma, gnMean, gnInvStd, dx, dGamma, dBeta) }},
		{"Conv2dForward", func() { b.Conv2dForward(cs, cx, cw, cy) }},
		{"Conv2dBackward", func() { b.Conv2dBackward(cs, cx, cw, cdy, cdx, cdw) }},
		{"LinearForward", func() { b.LinearForward(2, 4, 3, lx, lw, lb, ly) }},
		{"LinearBackward", func() { b.LinearBackward(2, 4, 3, lx, lw, ldy, ldx, ldw, ldb) }},
		{"GlobalAvgPoolForward", func() { b.GlobalAvgPoolForward(2, 3, 5, px, py) }},
		{"GlobalAvgPoolBackward", func() { b.GlobalAvgPoolBackward(2, 3, 5, py, px) }},
	} {
		tc.call() // size the workspaces
		if got := testing.AllocsPerRun(10, tc.call); got > 3 {
			t.Errorf("%s allocates %g objects per call, want at most 3", tc.name, got)
		}
	}
}
