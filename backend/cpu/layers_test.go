package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/tensor"
)

func TestReLU(t *testing.T) {
	for _, tb := range testBackends() {
		for _, n := range []int{7, 3*minWork + 5} { // inline and split over goroutines
			t.Run(fmt.Sprintf("%s/%d", tb.name, n), func(t *testing.T) {
				b := tb.b
				rng := rand.New(rand.NewPCG(uint64(n), 5))
				x, dy := randSlice(rng, n), randSlice(rng, n)
				x[0], x[1] = 0, float32(math.Copysign(0, -1)) // zero output passes no gradient, as PyTorch
				x[2], x[3] = math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32
				x[4], x[5] = math.MaxFloat32, float32(math.Inf(-1))
				wantY, wantDx := make([]float64, n), make([]float64, n)
				for i, v := range x {
					if v > 0 {
						wantY[i], wantDx[i] = float64(v), float64(dy[i])
					}
				}
				xb, y := upload(b, x), filled(b, n, 7)
				b.ReLUForward(xb, y)
				assertClose(t, "y", download(b, y), wantY, 0)
				dx := filled(b, n, 7)
				b.ReLUBackward(y, upload(b, dy), dx)
				assertClose(t, "dx", download(b, dx), wantDx, 0)

				// In place: y aliases x, dx aliases dy.
				b.ReLUForward(xb, xb)
				assertClose(t, "y in place", download(b, xb), wantY, 0)
				dyb := upload(b, dy)
				b.ReLUBackward(xb, dyb, dyb)
				assertClose(t, "dx in place", download(b, dyb), wantDx, 0)
			})
		}
	}
}

func TestGlobalAvgPool(t *testing.T) {
	cases := []struct{ n, c, hw int }{{2, 3, 4}, {3, 5, 1}, {128, 512, 16}}
	for _, tb := range testBackends() {
		for _, cs := range cases {
			t.Run(fmt.Sprintf("%s/%v", tb.name, cs), func(t *testing.T) {
				b := tb.b
				rng := rand.New(rand.NewPCG(uint64(cs.hw), 6))
				x, dy := randSlice(rng, cs.n*cs.c*cs.hw), randSlice(rng, cs.n*cs.c)
				wantY := make([]float64, cs.n*cs.c)
				wantDx := make([]float64, len(x))
				for row := range wantY {
					for j := 0; j < cs.hw; j++ {
						wantY[row] += float64(x[row*cs.hw+j]) / float64(cs.hw)
						wantDx[row*cs.hw+j] = float64(dy[row]) / float64(cs.hw)
					}
				}
				y, dx := filled(b, len(wantY), 7), filled(b, len(x), 7)
				b.GlobalAvgPoolForward(cs.n, cs.c, cs.hw, upload(b, x), y)
				b.GlobalAvgPoolBackward(cs.n, cs.c, cs.hw, upload(b, dy), dx)
				assertClose(t, "y", download(b, y), wantY, 1e-6)
				assertClose(t, "dx", download(b, dx), wantDx, 1e-7)
			})
		}
	}
}

func linearRef(n, in, out int, x, w, bias []float64) []float64 {
	y := make([]float64, n*out)
	for i := 0; i < n; i++ {
		for o := 0; o < out; o++ {
			s := 0.0
			if bias != nil {
				s = bias[o]
			}
			for k := 0; k < in; k++ {
				s += x[i*in+k] * w[o*in+k]
			}
			y[i*out+o] = s
		}
	}
	return y
}

// TestLinearFiniteDifferences checks y against the float64 reference and
// dx, dw, db of sum(y * r) against its central differences. The larger
// cases are split over the workers.
func TestLinearFiniteDifferences(t *testing.T) {
	cases := []struct {
		n, in, out int
		bias       bool
	}{{3, 5, 4, true}, {4, 7, 2, false}, {1, 3, 6, true}, {5, 64, 60, true}, {7, 33, 80, false}}
	for ci, cs := range cases {
		rng := rand.New(rand.NewPCG(uint64(ci), 7))
		x, w, r := randSlice(rng, cs.n*cs.in), randSlice(rng, cs.out*cs.in), randSlice(rng, cs.n*cs.out)
		x64, w64, r64 := to64(x), to64(w), to64(r)
		var bias []float32
		var bias64 []float64
		if cs.bias {
			bias = randSlice(rng, cs.out)
			bias64 = to64(bias)
		}
		wantY := linearRef(cs.n, cs.in, cs.out, x64, w64, bias64)
		objective := func() float64 { return dot64s(linearRef(cs.n, cs.in, cs.out, x64, w64, bias64), r64) }
		wantDx, wantDw := centralDiff(x64, 1e-3, objective), centralDiff(w64, 1e-3, objective)
		var wantDb []float64
		if cs.bias {
			wantDb = centralDiff(bias64, 1e-3, objective)
		}
		for _, tb := range testBackends() {
			t.Run(fmt.Sprintf("%s/%v", tb.name, cs), func(t *testing.T) {
				b := tb.b
				var bb, db tensor.Buffer // nil: no bias
				if cs.bias {
					bb, db = upload(b, bias), filled(b, cs.out, 7)
				}
				y := filled(b, cs.n*cs.out, 7)
				xb, wb := upload(b, x), upload(b, w)
				b.LinearForward(cs.n, cs.in, cs.out, xb, wb, bb, y)
				assertClose(t, "y", download(b, y), wantY, 1e-6)

				dx, dw := filled(b, len(x), 7), filled(b, len(w), 7)
				b.LinearBackward(cs.n, cs.in, cs.out, xb, wb, upload(b, r), dx, dw, db)
				assertClose(t, "dx", download(b, dx), wantDx, 1e-6)
				assertClose(t, "dw", download(b, dw), wantDw, 1e-6)
				if cs.bias {
					assertClose(t, "db", download(b, db), wantDb, 1e-6)
				}
				dw2 := filled(b, len(w), 7)
				b.LinearBackward(cs.n, cs.in, cs.out, xb, wb, upload(b, r), nil, dw2, nil)
				assertClose(t, "dw without dx", download(b, dw2), wantDw, 1e-6)
			})
		}
	}
}
