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

// The F(2,3) matrices of winograd.go, in float64, to check the identities
// the kernels rely on (the kernels write them out as sums).
var (
	winoBT = [4][4]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}}
	winoG  = [4][3]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}
	winoAT = [2][4]float64{{1, 1, 1, 0}, {0, 1, -1, -1}}
)

// TestWinogradMatrices checks the one-dimensional identities on random
// vectors in float64: F(2,3), y_i = sum_j g_j d_(i+j) = (A^T [(G g) .*
// (B^T d)])_i, and the filter-gradient form F(3,2) derived from it, dw_j =
// sum_i a_i d_(i+j) = (G^T [(A a) .* (B^T d)])_j. The two-dimensional
// transforms are these applied along rows and then columns, checked by the
// convolution tests below. It also checks G J = P G (J reverses the 3
// taps, P swaps rows 0 and 3), which lets the data gradient reuse the
// forward filters (winoRotated).
func TestWinogradMatrices(t *testing.T) {
	for i := 0; i < 4; i++ {
		pi := [4]int{3, 1, 2, 0}[i]
		for j := 0; j < 3; j++ {
			if winoG[i][2-j] != winoG[pi][j] {
				t.Fatalf("(G J)[%d][%d] = %g, (P G)[%d][%d] = %g", i, j, winoG[i][2-j], i, j, winoG[pi][j])
			}
		}
		for j := 0; j < 4; j++ {
			if want := 4*pi + [4]int{3, 1, 2, 0}[j]; winoRotated[4*i+j] != want {
				t.Fatalf("winoRotated[%d] = %d, want %d", 4*i+j, winoRotated[4*i+j], want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := 0; trial < 20; trial++ {
		var d [4]float64
		var g [3]float64
		var a [2]float64
		for i := range d {
			d[i] = 2*rng.Float64() - 1
		}
		for i := range g {
			g[i] = 2*rng.Float64() - 1
		}
		for i := range a {
			a[i] = 2*rng.Float64() - 1
		}
		var btd, gg, aa [4]float64
		for e := 0; e < 4; e++ {
			for j := 0; j < 4; j++ {
				btd[e] += winoBT[e][j] * d[j]
			}
			for j := 0; j < 3; j++ {
				gg[e] += winoG[e][j] * g[j]
			}
			for i := 0; i < 2; i++ {
				aa[e] += winoAT[i][e] * a[i]
			}
		}
		for i := 0; i < 2; i++ {
			var got, want float64
			for e := 0; e < 4; e++ {
				got += winoAT[i][e] * gg[e] * btd[e]
			}
			for j := 0; j < 3; j++ {
				want += g[j] * d[i+j]
			}
			if math.Abs(got-want) > 1e-12 {
				t.Fatalf("F(2,3) output %d: %g, want %g", i, got, want)
			}
		}
		for j := 0; j < 3; j++ {
			var got, want float64
			for e := 0; e < 4; e++ {
				got += winoG[e][j] * aa[e] * btd[e]
			}
			for i := 0; i < 2; i++ {
				want += a[i] * d[i+j]
			}
			if math.Abs(got-want) > 1e-12 {
				t.Fatalf("F(3,2) output %d: %g, want %g", j, got, want)
			}
		}
	}
}

// convBackwardRef is the float64 data and filter gradients of convRef for
// output gradient dy, straight from the definition.
func convBackwardRef(s tensor.ConvShape, x, w, dy []float64) (dx, dw []float64) {
	OH, OW := s.OutH(), s.OutW()
	dx, dw = make([]float64, s.InLen()), make([]float64, s.WeightLen())
	for n := 0; n < s.N; n++ {
		for k := 0; k < s.K; k++ {
			for oh := 0; oh < OH; oh++ {
				for ow := 0; ow < OW; ow++ {
					g := dy[((n*s.K+k)*OH+oh)*OW+ow]
					for c := 0; c < s.C; c++ {
						for r := 0; r < s.R; r++ {
							for q := 0; q < s.S; q++ {
								ih, iw := oh*s.Stride-s.Pad+r, ow*s.Stride-s.Pad+q
								if ih < 0 || ih >= s.H || iw < 0 || iw >= s.W {
									continue
								}
								xi, wi := ((n*s.C+c)*s.H+ih)*s.W+iw, ((k*s.C+c)*s.R+r)*s.S+q
								dx[xi] += g * w[wi]
								dw[wi] += g * x[xi]
							}
						}
					}
				}
			}
		}
	}
	return dx, dw
}

// winogradShapes are 3x3 stride-1 pad-1 convolutions: one image, odd
// channel counts, 4x4 and 32x32 planes, odd and non-square sizes (padded
// tiles), planes smaller than a tile, tile rows of every length the
// assembly splits differently.
var winogradShapes = []tensor.ConvShape{
	{N: 1, C: 3, H: 4, W: 4, K: 5, R: 3, S: 3, Stride: 1, Pad: 1},
	{N: 2, C: 7, H: 4, W: 4, K: 9, R: 3, S: 3, Stride: 1, Pad: 1},
	{N: 3, C: 5, H: 5, W: 7, K: 3, R: 3, S: 3, Stride: 1, Pad: 1},
	{N: 1, C: 16, H: 32, W: 32, K: 8, R: 3, S: 3, Stride: 1, Pad: 1},
	{N: 2, C: 2, H: 1, W: 1, K: 3, R: 3, S: 3, Stride: 1, Pad: 1},
	{N: 2, C: 3, H: 3, W: 2, K: 2, R: 3, S: 3, Stride: 1, Pad: 1},
	{N: 4, C: 33, H: 8, W: 8, K: 17, R: 3, S: 3, Stride: 1, Pad: 1},
	// Tile rows of 13 and 12 tiles: the assembly's 8- and 4-tile steps and
	// a Go tail, with an odd plane height.
	{N: 1, C: 4, H: 6, W: 26, K: 5, R: 3, S: 3, Stride: 1, Pad: 1},
	{N: 2, C: 3, H: 3, W: 24, K: 4, R: 3, S: 3, Stride: 1, Pad: 1},
}

// winogradTol bounds |got - want| / max(1, max |want|) for Winograd
// F(2x2,3x3) in float32. Each output is a sum of 9C products (in the
// backward filter pass N H W of them) computed as 16 GEMM sums over C
// transformed values followed by the output transform: the transforms
// add at most 4 terms per stage (entries 0, +-1/2, +-1), so they scale
// rounding by a small constant (at most about 4 x 2.25 x 9 in the worst
// case, far less on average), and GEMM accumulation grows it like sqrt of
// the sum length. Against a tensor's largest value, which grows like the
// square root of that sum length too, the error stays below 1e-6 for
// these shapes (measured: up to 3e-7, and 8e-7 with 512 input channels,
// where im2col gave up to 5e-7); 1e-5 leaves a 10x margin and still fails
// on any wrong transform entry, whose error is of order 1.
const winogradTol = 1e-5

// TestWinogradMatchesDirectConvolution checks the three passes of the
// Winograd path against the float64 definitions on every test backend and
// on more workers than products, with all images in one chunk and one
// image per chunk.
func TestWinogradMatchesDirectConvolution(t *testing.T) {
	for si, s := range winogradShapes {
		rng := rand.New(rand.NewPCG(uint64(si), 7))
		x, w, dy := randSlice(rng, s.InLen()), randSlice(rng, s.WeightLen()), randSlice(rng, s.OutLen())
		x64, w64, dy64 := to64(x), to64(w), to64(dy)
		wantY := convRef(s, x64, w64)
		wantDx, wantDw := convBackwardRef(s, x64, w64, dy64)
		perImage := 2 * winoTile * max(s.C, s.K) * ((s.H + 1) / 2) * ((s.W + 1) / 2)
		// 20 workers split each of the 16 products by rows as well.
		backends := append(testBackends(), testBackend{"purego1/20workers", NewWith(blas.PureGo(1), 20)})
		for _, tb := range backends {
			for _, budget := range []struct {
				name   string
				budget int
			}{{"all", defaultChunkBudget}, {"1image", perImage}} {
				t.Run(fmt.Sprintf("%s/%d/%s", tb.name, si, budget.name), func(t *testing.T) {
					b := tb.b
					b.chunkBudget, b.convAlgo = budget.budget, algoWinograd
					defer func() { b.chunkBudget, b.convAlgo = defaultChunkBudget, algoAuto }()
					y := filled(b, s.OutLen(), 7)
					b.Conv2dForward(s, upload(b, x), upload(b, w), y)
					assertClose(t, s.String()+" y", download(b, y), wantY, winogradTol)
					dx, dw := filled(b, s.InLen(), 7), filled(b, s.WeightLen(), 7)
					b.Conv2dBackward(s, upload(b, x), upload(b, w), upload(b, dy), dx, dw)
					assertClose(t, s.String()+" dx", download(b, dx), wantDx, winogradTol)
					assertClose(t, s.String()+" dw", download(b, dw), wantDw, winogradTol)
					dw2 := filled(b, s.WeightLen(), 7)
					b.Conv2dBackward(s, upload(b, x), upload(b, w), upload(b, dy), nil, dw2)
					assertClose(t, s.String()+" dw without dx", download(b, dw2), wantDw, winogradTol)
				})
			}
		}
	}
}

// TestWinogradAgreesWithIm2col runs ResNet-18 layer shapes (small batches)
// through both algorithms on the default backend: the two float32 results
// agree within the same bound as each does with the float64 definition.
func TestWinogradAgreesWithIm2col(t *testing.T) {
	for _, s := range []tensor.ConvShape{
		{N: 4, C: 64, H: 32, W: 32, K: 64, R: 3, S: 3, Stride: 1, Pad: 1},
		{N: 2, C: 128, H: 16, W: 16, K: 128, R: 3, S: 3, Stride: 1, Pad: 1},
		{N: 3, C: 512, H: 4, W: 4, K: 512, R: 3, S: 3, Stride: 1, Pad: 1},
	} {
		t.Run(s.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(s.C), 9))
			x, w, dy := randSlice(rng, s.InLen()), randSlice(rng, s.WeightLen()), randSlice(rng, s.OutLen())
			type result struct{ y, dx, dw []float32 }
			run := func(algo convAlgo) result {
				b := New()
				b.convAlgo = algo
				y, dx, dw := b.Alloc(s.OutLen()), b.Alloc(s.InLen()), b.Alloc(s.WeightLen())
				b.Conv2dForward(s, upload(b, x), upload(b, w), y)
				b.Conv2dBackward(s, upload(b, x), upload(b, w), upload(b, dy), dx, dw)
				return result{download(b, y), download(b, dx), download(b, dw)}
			}
			im, wi := run(algoIm2col), run(algoWinograd)
			assertClose(t, "y", wi.y, to64(im.y), winogradTol)
			assertClose(t, "dx", wi.dx, to64(im.dx), winogradTol)
			assertClose(t, "dw", wi.dw, to64(im.dw), winogradTol)
		})
	}
}

// TestConvAlgorithmChoice pins which ResNet-18 convolutions run as
// Winograd: the 3x3 stride-1 layers with enough channels and tiles, not
// the stem, the stride-2 convolutions or the 1x1 shortcuts.
func TestConvAlgorithmChoice(t *testing.T) {
	b := New()
	for _, tc := range []struct {
		views    int
		winograd []string
	}{
		{4, []string{"L1_3x3_64_32", "L2_3x3_128_16", "L3_3x3_256_8"}},
		{8, []string{"L1_3x3_64_32", "L2_3x3_128_16", "L3_3x3_256_8"}},
		{16, []string{"L1_3x3_64_32", "L2_3x3_128_16", "L3_3x3_256_8", "L4_3x3_512_4"}},
		{128, []string{"L1_3x3_64_32", "L2_3x3_128_16", "L3_3x3_256_8", "L4_3x3_512_4"}},
	} {
		for _, c := range resnet18Convs {
			s := c.shape
			s.N = tc.views
			want := algoIm2col
			if slices.Contains(tc.winograd, c.name) {
				want = algoWinograd
			}
			if got := b.convAlgorithm(s); got != want {
				t.Errorf("%s at %d views: algorithm %d, want %d", c.name, tc.views, got, want)
			}
		}
	}
	b.convAlgo = algoWinograd
	if got := b.convAlgorithm(resnet18Convs[2].shape); got != algoIm2col {
		t.Errorf("forced Winograd on a stride-2 convolution: algorithm %d, want the im2col fallback", got)
	}
}

// TestWinoFiltersMatchTheGoLoop: the filter transform, with the assembly
// taking whole groups of 8 filters where the CPU has it, writes what the
// Go loop's operations give, bit for bit, for every filter of a worker's
// share of output channels (35 filters a channel range here: 32 in the
// assembly, 3 in Go) and leaves the other channels' entries alone.
func TestWinoFiltersMatchTheGoLoop(t *testing.T) {
	const K, C = 9, 7
	rng := rand.New(rand.NewPCG(5, 6))
	w := make([]float32, K*C*9)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	stride := planeStride(K * C)
	u := make([]float32, 16*stride)
	const sentinel = float32(-7.25)
	for i := range u {
		u[i] = sentinel
	}
	lo, hi := 2, 7 // channels 2..6: filters 14..48
	winoFilters(w, K, C, lo, hi, u)
	half := func(x float32) float32 { return 0.5 * x }
	for row := 0; row < K*C; row++ {
		f := w[row*9 : row*9+9]
		b := [3]float32{half(f[0] + f[3] + f[6]), half(f[1] + f[4] + f[7]), half(f[2] + f[5] + f[8])}
		c := [3]float32{half(f[0] - f[3] + f[6]), half(f[1] - f[4] + f[7]), half(f[2] - f[5] + f[8])}
		var want [16]float32
		for g, x := range [4][3]float32{{f[0], f[1], f[2]}, b, c, {f[6], f[7], f[8]}} {
			want[4*g], want[4*g+1], want[4*g+2], want[4*g+3] = x[0], half(x[0]+x[1]+x[2]), half(x[0]-x[1]+x[2]), x[2]
		}
		inside := row >= lo*C && row < hi*C
		for e := range 16 {
			got := u[e*stride+row]
			if !inside {
				want[e] = sentinel
			}
			if math.Float32bits(got) != math.Float32bits(want[e]) {
				t.Fatalf("filter %d (channels [%d,%d) transformed), entry %d = %v, want %v", row, lo, hi, e, got, want[e])
			}
		}
	}
}
