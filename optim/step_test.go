package optim_test

import (
	"testing"

	"github.com/simclr-go/simclr/internal/ref"
	"github.com/simclr-go/simclr/optim"
	"github.com/simclr-go/simclr/tensor"
)

// The step maths is tested in internal/ref; this pins the public wrappers to
// it (argument order, every config field passed through).
func TestStepSlicesAreTheReference(t *testing.T) {
	sgd := tensor.SGDConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Nesterov: true}
	lars := tensor.LARSConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01, Eta: 0.002, Adapt: true}
	for _, tc := range []struct {
		name      string
		got, want func(w, g, v []float32)
	}{
		{"sgd", func(w, g, v []float32) { optim.SGDStepSlice(sgd, w, g, v) }, func(w, g, v []float32) { ref.SGDStep(sgd, w, g, v) }},
		{"lars", func(w, g, v []float32) { optim.LARSStepSlice(lars, w, g, v) }, func(w, g, v []float32) { ref.LARSStep(lars, w, g, v) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w1, v1 := []float32{1, -2, 0.5}, []float32{0.1, 0, -0.2}
			w2, v2 := append([]float32(nil), w1...), append([]float32(nil), v1...)
			g := []float32{0.5, 0.1, -0.3}
			tc.got(w1, g, v1)
			tc.want(w2, g, v2)
			for i := range w1 {
				if w1[i] != w2[i] || v1[i] != v2[i] {
					t.Fatalf("element %d: w %v v %v, reference w %v v %v", i, w1[i], v1[i], w2[i], v2[i])
				}
			}
			if w1[0] == 1 {
				t.Fatalf("the step left w unchanged")
			}
		})
	}
}
