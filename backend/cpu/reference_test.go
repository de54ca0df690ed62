package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/internal/ref"
	"github.com/simclr-go/simclr/tensor"
)

// The loss and optimizer kernels are the host references themselves; these
// tests pin the wiring (argument order, tau, the multilevel flag).

func TestNTXentIsTheHostReference(t *testing.T) {
	b := NewWith(blas.Naive{}, 2)
	rng := rand.New(rand.NewPCG(9, 9))
	n, d := 4, 6
	z := randSlice(rng, 2*n*d)
	for _, multilevel := range []bool{false, true} {
		want := make([]float32, len(z))
		value, full := ref.NTXent(n, d, float64(float32(0.2)), multilevel, z, want)
		dz := filled(b, len(z), 7)
		got := b.NTXent(n, d, 0.2, multilevel, upload(b, z), dz)
		if got.Loss != value || got.Full != full {
			t.Errorf("multilevel=%v: NTXent = %+v, want Loss %g Full %g", multilevel, got, value, full)
		}
		assertClose(t, "dz", download(b, dz), to64(want), 0)
	}
}

func TestOptimizerStepsAreTheHostReferences(t *testing.T) {
	b := NewWith(blas.Naive{}, 2)
	rng := rand.New(rand.NewPCG(10, 10))
	w, g, v := randSlice(rng, 9), randSlice(rng, 9), randSlice(rng, 9)

	// SGD is split over the workers above 4,096 elements: the large case
	// checks that the parts cover every element once, in place.
	for _, n := range []int{9, 1<<14 + 3} {
		for _, sgd := range []tensor.SGDConfig{
			{LR: 0.1, Momentum: 0.9, WeightDecay: 5e-4, Nesterov: true},
			{LR: 0.2, Momentum: 0.8, WeightDecay: 1e-3},
		} {
			w, g, v := randSlice(rng, n), randSlice(rng, n), randSlice(rng, n)
			ws, vs := append([]float32(nil), w...), append([]float32(nil), v...)
			ref.SGDStep(sgd, ws, g, vs)
			wb, vb := upload(b, w), upload(b, v)
			b.SGDStep(sgd, wb, upload(b, g), vb)
			assertClose(t, "SGD w", download(b, wb), to64(ws), 0)
			assertClose(t, "SGD v", download(b, vb), to64(vs), 0)
		}
	}

	lars := tensor.LARSConfig{LR: 0.3, Momentum: 0.9, WeightDecay: 1e-6, Eta: 0.001, Adapt: true}
	wl, vl := append([]float32(nil), w...), append([]float32(nil), v...)
	ref.LARSStep(lars, wl, g, vl)
	wb, vb := upload(b, w), upload(b, v)
	b.LARSStep(lars, wb, upload(b, g), vb)
	assertClose(t, "LARS w", download(b, wb), to64(wl), 0)
	assertClose(t, "LARS v", download(b, vb), to64(vl), 0)
}
