package eval_test

import (
	"errors"
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

// The Projection output is the head applied to the backbone features in
// evaluation mode: head.0 Linear, head.1 batch norm with its running
// statistics (eps 1e-5), ReLU, head.3 Linear, recomputed here on the host
// in float64 from the checkpointed tensors (running statistics set to
// values far from their initial 0 and 1, so that a head that used batch
// statistics, or none, would fail), for images spread over two batches.
func TestExtractProjectionIsTheHeadOnTheFeatures(t *testing.T) {
	b := cpu.New()
	m := resnet18.New(b, resnet18.Config{Width: 0.125, ProjDim: 16, InputSize: 32}, 1)
	p := m.Params()
	r := rand.New(rand.NewPCG(5, 6))
	tensorOf := func(name string) []float32 {
		view, shape := p.Lookup(name)
		if view == nil {
			t.Fatalf("no tensor %s", name)
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		b.Download(v, view)
		return v
	}
	setTensor := func(name string, lo, hi float64) {
		view, shape := p.Lookup(name)
		v := make([]float32, shape[0])
		for i := range v {
			v[i] = float32(lo + (hi-lo)*r.Float64())
		}
		b.Upload(view, v)
	}
	setTensor("head.1.running_mean", -0.5, 0.5)
	setTensor("head.1.running_var", 0.2, 3)
	setTensor("head.1.weight", 0.5, 1.5)
	setTensor("head.1.bias", -0.3, 0.3)

	set := randomSet(260, 3)
	mean, std := [3]float32{0.5, 0.5, 0.5}, [3]float32{0.25, 0.25, 0.25}
	feat := eval.Extract(b, m, set, mean, std)
	proj := make([]float32, set.Len()*16)
	batches := 0
	err := eval.ExtractBatches(b, m, set, mean, std, eval.Projection, func(lo int, rows []float32) error {
		copy(proj[lo*16:], rows)
		batches++
		return nil
	})
	if err != nil || batches != 2 {
		t.Fatalf("ExtractBatches: %v after %d batches, want 2 batches", err, batches)
	}
	f := feat.Dim
	w0, b0 := tensorOf("head.0.weight"), tensorOf("head.0.bias")
	g, beta := tensorOf("head.1.weight"), tensorOf("head.1.bias")
	rm, rv := tensorOf("head.1.running_mean"), tensorOf("head.1.running_var")
	w3, b3 := tensorOf("head.3.weight"), tensorOf("head.3.bias")
	for _, i := range []int{0, 7, 255, 256, 259} {
		x := feat.X[i*f : (i+1)*f]
		h := make([]float64, f)
		for o := range f {
			s := float64(b0[o])
			for k := range f {
				s += float64(w0[o*f+k]) * float64(x[k])
			}
			s = (s-float64(rm[o]))/math.Sqrt(float64(rv[o])+1e-5)*float64(g[o]) + float64(beta[o])
			h[o] = math.Max(s, 0)
		}
		for o := range 16 {
			want := float64(b3[o])
			for k := range f {
				want += float64(w3[o*f+k]) * h[k]
			}
			if got := float64(proj[i*16+o]); math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Fatalf("image %d, z[%d] = %v, the head on the features gives %v", i, o, got, want)
			}
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := eval.ExtractBatches(b, m, set, mean, std, eval.Backbone, func(int, []float32) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("a failing sink: error %v after %d calls, want %v after 1", err, calls, stop)
	}
}
