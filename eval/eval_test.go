package eval_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/data"
	"github.com/simclr-go/simclr/eval"
	"github.com/simclr-go/simclr/model/resnet18"
)

// randomSet is n random 32x32 images with labels i mod classes.
func randomSet(n, classes int) *data.Set {
	r := rand.New(rand.NewPCG(3, 4))
	s := &data.Set{Name: "random", Classes: make([]string, classes), H: 32, W: 32}
	s.Pix = make([]uint8, n*3*32*32)
	for i := range s.Pix {
		s.Pix[i] = uint8(r.IntN(256))
	}
	for i := range n {
		s.Labels = append(s.Labels, int32(i%classes))
	}
	return s
}

// Batch norm runs in evaluation mode, so an image's features must not depend
// on the batch it is extracted with: extracting the whole set (more than one
// batch of 256) must give, row for row, what extracting each image alone
// gives, with the set's labels.
func TestExtractIsPerImage(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{Width: 0.125, ProjDim: 16, InputSize: 32}, 1)
	set := randomSet(260, 3)
	mean, std := [3]float32{0.5, 0.5, 0.5}, [3]float32{0.25, 0.25, 0.25}
	all := eval.Extract(b, m, set, mean, std)
	if all.N != set.Len() || all.Dim != m.FeatureDim() || len(all.X) != all.N*all.Dim || len(all.Y) != all.N {
		t.Fatalf("Extract gave %d x %d features (%d values, %d labels) for %d images of dimension %d",
			all.N, all.Dim, len(all.X), len(all.Y), set.Len(), m.FeatureDim())
	}
	for _, i := range []int{0, 255, 256, 259} {
		one := &data.Set{Name: "one", Classes: set.Classes, H: 32, W: 32, Pix: set.Image(i), Labels: set.Labels[i : i+1]}
		f := eval.Extract(b, m, one, mean, std)
		if all.Y[i] != set.Labels[i] {
			t.Errorf("image %d: label %d, want %d", i, all.Y[i], set.Labels[i])
		}
		for k, v := range f.X {
			w := all.X[i*all.Dim+k]
			if math.Abs(float64(v-w)) > 1e-4*math.Max(1, math.Abs(float64(w))) {
				t.Fatalf("image %d feature %d: %v alone, %v in the whole set", i, k, v, w)
			}
		}
	}
}
