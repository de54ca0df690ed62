package resnet18

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
)

// After InitHeadFromData the group-norm head's first layer (head.0, the
// running-statistics norm) outputs, on the batch it was fitted on, mean 0
// and variance 1 per feature (what the batch-norm head's BatchNorm1d gives
// at initialisation; up to the unbiased against biased variance), although
// the images share a large common offset; no trainable parameter changes.
// With batch norm it changes nothing at all.
func TestInitHeadFromDataStandardisesTheHead(t *testing.T) {
	for _, norm := range []Norm{NormBatch, NormGroup} {
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
		stateBefore := append([]float32(nil), cpu.Data(m.params.State())...)
		if err := m.InitHeadFromData(x, n); err != nil {
			t.Fatal(err)
		}
		for i, v := range cpu.Data(m.params.Flat()) {
			if v != before[i] {
				t.Fatalf("%s norm: parameter %d changed from %g to %g", norm, i, before[i], v)
			}
		}
		if norm == NormBatch {
			for i, v := range cpu.Data(m.params.State()) {
				if v != stateBefore[i] {
					t.Fatalf("batch norm: state %d changed from %g to %g", i, stateBefore[i], v)
				}
			}
			continue
		}
		m.Forward(x, n, false, false)
		u, f := cpu.Data(m.activationPlanFor(n, false).u), m.featDim
		for j := 0; j < f; j++ {
			var mean, sq float64
			for i := 0; i < n; i++ {
				mean += float64(u[i*f+j]) / n
			}
			for i := 0; i < n; i++ {
				d := float64(u[i*f+j]) - mean
				sq += d * d / (n - 1)
			}
			// Exact up to float32 rounding and the norm's eps.
			if math.Abs(mean) > 1e-3 || math.Abs(sq-1) > 2e-2 {
				t.Errorf("feature %d: mean %.3g variance %.3g over the fitting batch, want 0 and 1", j, mean, sq)
			}
		}
	}
}
