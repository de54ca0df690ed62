package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/tensor"
)

// TestGroupNormForwardHandComputed: N=2 images, C=4 channels in G=2
// groups, HW=1. Image 0 = {1, 3 | 0, 0}, image 1 = {2, 2 | -1, 5}: group
// means 2, 0, 2, 2 and biased variances 1, 0, 0, 9, worked out by hand.
func TestGroupNormForwardHandComputed(t *testing.T) {
	s := tensor.GNShape{N: 2, C: 4, HW: 1, G: 2, Eps: 1e-5}
	x := []float32{1, 3, 0, 0, 2, 2, -1, 5}
	gamma, beta := []float32{2, -1, 0.5, 1}, []float32{0, 1, -2, 3}
	mu := []float64{2, 0, 2, 2}
	inv := []float64{1 / math.Sqrt(1+1e-5), 1 / math.Sqrt(1e-5), 1 / math.Sqrt(1e-5), 1 / math.Sqrt(9+1e-5)}
	want := make([]float64, len(x))
	for i, v := range x {
		n, c := i/4, i%4
		ng := n*2 + c/2
		want[i] = float64(gamma[c])*(float64(v)-mu[ng])*inv[ng] + float64(beta[c])
	}
	for _, tb := range testBackends() {
		t.Run(tb.name, func(t *testing.T) {
			b := tb.b
			y, mean, invStd := filled(b, 8, 7), filled(b, 4, 7), filled(b, 4, 7)
			b.GroupNormForward(s, upload(b, x), upload(b, gamma), upload(b, beta), y, mean, invStd)
			assertClose(t, "y", download(b, y), want, 1e-6)
			assertClose(t, "mean", download(b, mean), mu, 1e-7)
			// 1/sqrt(eps) = 316: compare relative to the largest.
			assertClose(t, "invStd", download(b, invStd), inv, 1e-6)

			// Evaluation (nothing saved) computes the same function.
			y2 := filled(b, 8, 7)
			b.GroupNormForward(s, upload(b, x), upload(b, gamma), upload(b, beta), y2, nil, nil)
			if !slices.Equal(download(b, y), download(b, y2)) {
				t.Fatal("GroupNormForward without saved statistics gives another output")
			}
		})
	}
}

// An image's output depends only on that image: the property that makes
// the one-forward multilevel correction exact (docs/definitions.md, section 4
// "Contrastive learning as a biased oracle").
func TestGroupNormOutputDoesNotDependOnTheBatch(t *testing.T) {
	s := tensor.GNShape{N: 5, C: 6, HW: 7, G: 3, Eps: 1e-5}
	rng := rand.New(rand.NewPCG(5, 1))
	x := randSlice(rng, s.N*s.C*s.HW)
	gamma, beta := randSlice(rng, s.C), randSlice(rng, s.C)
	per := s.C * s.HW
	for _, tb := range testBackends() {
		t.Run(tb.name, func(t *testing.T) {
			b := tb.b
			gb, bb := upload(b, gamma), upload(b, beta)
			y := b.Alloc(len(x))
			b.GroupNormForward(s, upload(b, x), gb, bb, y, nil, nil)
			all := download(b, y)
			one := s
			one.N = 1
			for n := 0; n < s.N; n++ {
				y1 := b.Alloc(per)
				b.GroupNormForward(one, upload(b, x[n*per:(n+1)*per]), gb, bb, y1, nil, nil)
				if !slices.Equal(download(b, y1), all[n*per:(n+1)*per]) {
					t.Fatalf("image %d normalised alone differs from image %d in a batch of %d", n, n, s.N)
				}
			}
		})
	}
}

// gnRef is group norm in float64: the objective's forward.
func gnRef(s tensor.GNShape, x, gamma, beta []float64) []float64 {
	y := make([]float64, len(x))
	cg := s.C / s.G
	M := float64(cg * s.HW)
	for n := 0; n < s.N; n++ {
		for g := 0; g < s.G; g++ {
			vals := x[(n*s.C+g*cg)*s.HW : (n*s.C+(g+1)*cg)*s.HW]
			var sum, ss float64
			for _, v := range vals {
				sum += v
			}
			mu := sum / M
			for _, v := range vals {
				ss += (v - mu) * (v - mu)
			}
			inv := 1 / math.Sqrt(ss/M+float64(s.Eps))
			for i, v := range vals {
				c := g*cg + i/s.HW
				y[(n*s.C+g*cg)*s.HW+i] = gamma[c]*(v-mu)*inv + beta[c]
			}
		}
	}
	return y
}

// TestGroupNormBackwardFiniteDifferences checks dx, dgamma and dbeta of
// sum(y * r) against float64 central differences (step 1e-5, truncation
// error ~1e-10) of the float64 reference; the tolerance covers float32
// rounding of the kernel.
func TestGroupNormBackwardFiniteDifferences(t *testing.T) {
	shapes := []tensor.GNShape{
		{N: 4, C: 6, HW: 5, G: 3, Eps: 1e-5},
		{N: 3, C: 8, HW: 1, G: 4, Eps: 1e-5},     // the head's (N,C) case
		{N: 2, C: 4, HW: 9, G: 4, Eps: 1e-5},     // one channel per group (instance norm)
		{N: 2, C: 5, HW: 3, G: 1, Eps: 1e-5},     // one group (layer norm over C,HW)
		{N: 1, C: 4, HW: 4, G: 2, Eps: 1e-5},     // one image
		{N: 3, C: 64, HW: 64, G: 32, Eps: 1e-5},  // a ResNet stage's shape
		{N: 9, C: 96, HW: 1, G: 32, Eps: 1e-5},   // several workers over (n, g) and over c
		{N: 2, C: 2, HW: 2, G: 2, Eps: 1e-5},     // M = 2
		{N: 2, C: 3, HW: 400, G: 1, Eps: 0.0625}, // a large eps
	}
	for _, tb := range testBackends() {
		for si, s := range shapes {
			t.Run(fmt.Sprintf("%s/%+v", tb.name, s), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(si), 4))
				n := s.N * s.C * s.HW
				x, r := randSlice(rng, n), randSlice(rng, n)
				gamma, beta := randSlice(rng, s.C), randSlice(rng, s.C)
				for i := range x {
					x[i] = 3*x[i] + 0.5 // a mean away from 0 and variance away from 1
				}
				x64, g64, b64, r64 := to64(x), to64(gamma), to64(beta), to64(r)
				objective := func() float64 { return dot64s(gnRef(s, x64, g64, b64), r64) }
				b := tb.b
				xb, gb := upload(b, x), upload(b, gamma)
				y, mean, invStd := b.Alloc(n), b.Alloc(s.N*s.G), b.Alloc(s.N*s.G)
				b.GroupNormForward(s, xb, gb, upload(b, beta), y, mean, invStd)
				assertClose(t, "y", download(b, y), gnRef(s, x64, g64, b64), 1e-6)
				dx, dgamma, dbeta := filled(b, n, 7), filled(b, s.C, 7), filled(b, s.C, 7)
				b.GroupNormBackward(s, xb, upload(b, r), gb, mean, invStd, dx, dgamma, dbeta)

				assertClose(t, "dgamma", download(b, dgamma), centralDiff(g64, 1e-5, objective), 1e-5)
				assertClose(t, "dbeta", download(b, dbeta), centralDiff(b64, 1e-5, objective), 1e-5)
				got := download(b, dx)
				stride := max(1, n/200) // finite differences of every x take long on large shapes
				var gotSub []float32
				var wantSub []float64
				for i := 0; i < n; i += stride {
					gotSub = append(gotSub, got[i])
					wantSub = append(wantSub, centralDiff(x64[i:i+1], 1e-5, objective)[0])
				}
				assertClose(t, "dx", gotSub, wantSub, 1e-4)

				// dx may alias dy.
				dy := upload(b, r)
				b.GroupNormBackward(s, xb, dy, gb, mean, invStd, dy, dgamma, dbeta)
				assertClose(t, "dx aliasing dy", download(b, dy), to64(got), 1e-7)
			})
		}
	}
}

func TestGroupNormPanicsOnBadShapes(t *testing.T) {
	b := NewWith(blas.Naive{}, 1)
	buf := func(n int) tensor.Buffer { return b.Alloc(n) }
	cases := map[string]func(){
		"C not a multiple of G": func() {
			b.GroupNormForward(tensor.GNShape{N: 1, C: 6, HW: 1, G: 4}, buf(6), buf(6), buf(6), buf(6), nil, nil)
		},
		"short y": func() {
			b.GroupNormForward(tensor.GNShape{N: 2, C: 4, HW: 1, G: 2}, buf(8), buf(4), buf(4), buf(7), nil, nil)
		},
		"mean per channel instead of per group": func() {
			b.GroupNormForward(tensor.GNShape{N: 3, C: 4, HW: 1, G: 2}, buf(12), buf(4), buf(4), buf(12), buf(4), buf(4))
		},
		"only mean": func() {
			b.GroupNormForward(tensor.GNShape{N: 2, C: 4, HW: 1, G: 2}, buf(8), buf(4), buf(4), buf(8), buf(4), nil)
		},
		"short dgamma": func() {
			s := tensor.GNShape{N: 2, C: 4, HW: 1, G: 2}
			b.GroupNormBackward(s, buf(8), buf(8), buf(4), buf(4), buf(4), buf(8), buf(3), buf(4))
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			f()
		})
	}
}
