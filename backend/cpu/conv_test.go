package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/tensor"
)

// convRef is the direct nested-loop convolution in float64, the definition
// of torch.nn.Conv2d(bias=False).
func convRef(s tensor.ConvShape, x, w []float64) []float64 {
	OH, OW := s.OutH(), s.OutW()
	y := make([]float64, s.OutLen())
	for n := 0; n < s.N; n++ {
		for k := 0; k < s.K; k++ {
			for oh := 0; oh < OH; oh++ {
				for ow := 0; ow < OW; ow++ {
					var sum float64
					for c := 0; c < s.C; c++ {
						for r := 0; r < s.R; r++ {
							for q := 0; q < s.S; q++ {
								ih, iw := oh*s.Stride-s.Pad+r, ow*s.Stride-s.Pad+q
								if ih < 0 || ih >= s.H || iw < 0 || iw >= s.W {
									continue
								}
								sum += x[((n*s.C+c)*s.H+ih)*s.W+iw] * w[((k*s.C+c)*s.R+r)*s.S+q]
							}
						}
					}
					y[((n*s.K+k)*OH+oh)*OW+ow] = sum
				}
			}
		}
	}
	return y
}

var convShapes = []tensor.ConvShape{
	{N: 3, C: 2, H: 5, W: 5, K: 4, R: 3, S: 3, Stride: 1, Pad: 1},   // 3x3 same
	{N: 3, C: 3, H: 7, W: 6, K: 5, R: 3, S: 3, Stride: 2, Pad: 1},   // 3x3 stride 2, odd size
	{N: 3, C: 3, H: 5, W: 7, K: 2, R: 3, S: 3, Stride: 1, Pad: 0},   // valid
	{N: 2, C: 4, H: 7, W: 7, K: 3, R: 1, S: 1, Stride: 2, Pad: 0},   // downsample shortcut, odd size
	{N: 3, C: 2, H: 4, W: 5, K: 3, R: 1, S: 1, Stride: 1, Pad: 0},   // 1x1 on a small plane: im2col path
	{N: 2, C: 3, H: 16, W: 16, K: 4, R: 1, S: 1, Stride: 1, Pad: 0}, // 1x1 on a large plane: no im2col
	{N: 3, C: 2, H: 6, W: 5, K: 2, R: 3, S: 2, Stride: 3, Pad: 2},   // rectangular kernel, pad > stride-1
	{N: 1, C: 1, H: 3, W: 3, K: 1, R: 3, S: 3, Stride: 1, Pad: 1},   // one image, one channel
	{N: 2, C: 3, H: 1, W: 1, K: 2, R: 3, S: 3, Stride: 1, Pad: 1},   // 1x1 plane, 3x3 same: most taps read nothing (ResNet-18 layer4 on 8x8 inputs)
	{N: 2, C: 2, H: 2, W: 2, K: 2, R: 3, S: 3, Stride: 2, Pad: 1},   // 2x2 plane, stride 2
	{N: 2, C: 2, H: 6, W: 7, K: 3, R: 5, S: 5, Stride: 1, Pad: 2},   // 5x5 same: shifts wrap two columns
	{N: 3, C: 2, H: 4, W: 6, K: 2, R: 1, S: 3, Stride: 1, Pad: 1},   // 1x3 same width, padded rows
}

// chunkBudgets returns workspace budgets giving all images in one GEMM, one
// image per GEMM, and two per GEMM (a partial last chunk when N is odd).
func chunkBudgets(s tensor.ConvShape) map[string]int {
	perImage := (s.C*s.R*s.S + s.K) * s.OutH() * s.OutW()
	return map[string]int{"all": defaultChunkBudget, "1image": perImage, "2images": 2 * perImage}
}

// convSplits are the ways of sharing a convolution among workers that
// every test runs: the automatic choice and each forced one.
var convSplits = []struct {
	name  string
	split convSplit
}{{"auto", splitAuto}, {"images", splitImages}, {"channels", splitChannels}}

func TestConv2dForwardMatchesDirectConvolution(t *testing.T) {
	for _, tb := range testBackends() {
		for si, s := range convShapes {
			for cname, budget := range chunkBudgets(s) {
				for _, sp := range convSplits {
					t.Run(fmt.Sprintf("%s/%d/%s/%s", tb.name, si, cname, sp.name), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(uint64(si), 1))
						b := tb.b
						b.chunkBudget, b.convSplit = budget, sp.split
						x, w := randSlice(rng, s.InLen()), randSlice(rng, s.WeightLen())
						y := filled(b, s.OutLen(), 7)
						b.Conv2dForward(s, upload(b, x), upload(b, w), y)
						assertClose(t, s.String()+" y", download(b, y), convRef(s, to64(x), to64(w)), 1e-5)
					})
				}
			}
		}
	}
}

// TestConv2dBackwardFiniteDifferences checks dx and dw of the objective
// sum(y * r) for a fixed random r against float64 central differences of
// the float64 reference convolution. The objective is bilinear, so the
// differences are exact up to float64 rounding and the tolerance covers
// float32 accumulation only.
func TestConv2dBackwardFiniteDifferences(t *testing.T) {
	for si, s := range convShapes {
		rng := rand.New(rand.NewPCG(uint64(si), 2))
		x, w, r := randSlice(rng, s.InLen()), randSlice(rng, s.WeightLen()), randSlice(rng, s.OutLen())
		x64, w64, r64 := to64(x), to64(w), to64(r)
		objective := func() float64 { return dot64s(convRef(s, x64, w64), r64) }
		wantDx := centralDiff(x64, 1e-3, objective)
		wantDw := centralDiff(w64, 1e-3, objective)
		for _, tb := range testBackends() {
			for cname, budget := range chunkBudgets(s) {
				for _, sp := range convSplits {
					t.Run(fmt.Sprintf("%s/%d/%s/%s", tb.name, si, cname, sp.name), func(t *testing.T) {
						b := tb.b
						b.chunkBudget, b.convSplit = budget, sp.split
						dx, dw := filled(b, s.InLen(), 7), filled(b, s.WeightLen(), 7)
						b.Conv2dBackward(s, upload(b, x), upload(b, w), upload(b, r), dx, dw)
						assertClose(t, s.String()+" dx", download(b, dx), wantDx, 1e-5)
						assertClose(t, s.String()+" dw", download(b, dw), wantDw, 1e-5)

						// Without dx (the network input) dw is unchanged.
						dw2 := filled(b, s.WeightLen(), 7)
						b.Conv2dBackward(s, upload(b, x), upload(b, w), upload(b, r), nil, dw2)
						assertClose(t, s.String()+" dw without dx", download(b, dw2), wantDw, 1e-5)
					})
				}
			}
		}
	}
}

func TestConvPanicsOnShapeMismatch(t *testing.T) {
	b := NewWith(blas.Naive{}, 1)
	s := convShapes[0]
	x, w, y := b.Alloc(s.InLen()), b.Alloc(s.WeightLen()), b.Alloc(s.OutLen())
	cases := map[string]func(){
		"short x":  func() { b.Conv2dForward(s, b.Alloc(s.InLen()-1), w, y) },
		"short w":  func() { b.Conv2dForward(s, x, b.Alloc(s.WeightLen()+1), y) },
		"short y":  func() { b.Conv2dForward(s, x, w, b.Alloc(1)) },
		"short dw": func() { b.Conv2dBackward(s, x, w, y, x, b.Alloc(1)) },
		"short dx": func() { b.Conv2dBackward(s, x, w, y, b.Alloc(1), w) },
		"stride 0": func() { s2 := s; s2.Stride = 0; b.Conv2dForward(s2, x, w, y) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		})
	}
}
