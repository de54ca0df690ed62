package resnet18

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
)

// After InitHeadFromData the group-norm head's first layer outputs, on the
// batch it was fitted on, have mean 0 and variance 1 per feature (what the
// batch-norm head's BatchNorm1d gives at initialisation), although the
// images share a large common offset; with batch norm it changes nothing.
func TestInitHeadFromDataStandardisesTheHead(t *testing.T) {
	for _, norm := range []string{NormBatch, NormGroup} {
		b := cpu.New()
		m := New(b, Config{Width: 0.0625, ProjDim: 16, InputSize: 16, Norm: norm}, 3)
		const n = 32
		rng := rand.New(rand.NewPCG(3, 4))
		host := make([]float32, n*m.InputLen())
		for i := range host {
			host[i] = 2 + float32(rng.NormFloat64()) // a shared offset, as real images have
		}
		x := b.Alloc(len(host))
		b.Upload(x, host)
		before := append([]float32(nil), cpu.Data(m.params.Flat())...)
		if err := m.InitHeadFromData(x, n); err != nil {
			t.Fatal(err)
		}
		if norm == NormBatch {
			for i, v := range cpu.Data(m.params.Flat()) {
				if v != before[i] {
					t.Fatalf("batch norm: parameter %d changed from %g to %g", i, before[i], v)
				}
			}
			continue
		}
		m.Forward(x, n, false, false)
		h, f := cpu.Data(m.planFor(n, false).h1), m.featDim
		for j := 0; j < f; j++ {
			var mean, sq float64
			for i := 0; i < n; i++ {
				mean += float64(h[i*f+j]) / n
			}
			for i := 0; i < n; i++ {
				d := float64(h[i*f+j]) - mean
				sq += d * d / n
			}
			// Exact up to float32 rounding and batch norm's eps.
			if math.Abs(mean) > 1e-3 || math.Abs(sq-1) > 2e-2 {
				t.Errorf("feature %d: mean %.3g variance %.3g over the fitting batch, want 0 and 1", j, mean, sq)
			}
		}
	}
}
