package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/simclr-go/simclr/model/resnet18"
	"github.com/simclr-go/simclr/tensor"
)

// TestBF16WeightCacheFollowsWrites: a convolution and a linear layer read
// their weight's cached bf16 copy, and every way the backend can write the
// weight (or the flat buffer it is a view of) makes the next call see the
// new values. The reference is the same call on a fresh buffer holding
// the same values, whose copy is made afresh: the two must agree bit for
// bit (same algorithm, same operands), where a stale copy differs in
// every output.
func TestBF16WeightCacheFollowsWrites(t *testing.T) {
	b := openReal(t, "bf16")
	r := rand.New(rand.NewPCG(3, 4))
	randn := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	s := tensor.ConvShape{N: 2, C: 5, H: 6, W: 6, K: 7, R: 3, S: 3, Stride: 1, Pad: 1}
	const in, out, rows = 6, 4, 3
	// The weights are views into one flat buffer, as nn.Params lays them out.
	flat := b.Alloc(s.WeightLen() + in*out + 3)
	b.Upload(flat, randn(flat.Len()))
	w := b.Slice(flat, 1, s.WeightLen())
	lw := b.Slice(flat, 2+s.WeightLen(), in*out)
	x, y, yRef := b.Alloc(s.InLen()), b.Alloc(s.OutLen()), b.Alloc(s.OutLen())
	b.Upload(x, randn(x.Len()))
	lx, ly, lyRef := b.Alloc(rows*in), b.Alloc(rows*out), b.Alloc(rows*out)
	b.Upload(lx, randn(lx.Len()))
	other := b.Alloc(flat.Len())
	b.Upload(other, randn(other.Len()))
	g, v := b.Alloc(flat.Len()), b.Alloc(flat.Len())
	b.Upload(g, randn(g.Len()))

	check := func(what string) {
		t.Helper()
		b.Conv2dForward(s, x, w, y)
		b.LinearForward(rows, in, out, lx, lw, nil, ly)
		fresh := b.Alloc(flat.Len())
		b.Copy(fresh, flat)
		b.Conv2dForward(s, x, b.Slice(fresh, 1, s.WeightLen()), yRef)
		b.LinearForward(rows, in, out, lx, b.Slice(fresh, 2+s.WeightLen(), in*out), nil, lyRef)
		got, want := make([]float32, y.Len()), make([]float32, y.Len())
		b.Download(got, y)
		b.Download(want, yRef)
		lgot, lwant := make([]float32, ly.Len()), make([]float32, ly.Len())
		b.Download(lgot, ly)
		b.Download(lwant, lyRef)
		b.Free(fresh)
		if err := b.Sync(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: convolution output %d is %g, with a fresh copy of the weight %g: a stale bf16 copy", what, i, got[i], want[i])
			}
		}
		for i := range lwant {
			if math.Float32bits(lgot[i]) != math.Float32bits(lwant[i]) {
				t.Fatalf("%s: linear output %d is %g, with a fresh copy of the weight %g: a stale bf16 copy", what, i, lgot[i], lwant[i])
			}
		}
	}
	check("first use")
	before := b.conversions
	b.Conv2dForward(s, x, w, y)
	b.LinearForward(rows, in, out, lx, lw, nil, ly)
	// Unchanged weights: only the inputs (2) are narrowed and the
	// convolution's output widened (1).
	if d := (bf16Conversions{b.conversions.narrow - before.narrow, b.conversions.widen - before.widen}); d != (bf16Conversions{2, 1}) {
		t.Errorf("calls with unchanged weights made %+v conversions, want {narrow:2 widen:1}", d)
	}
	for _, tc := range []struct {
		what  string
		write func()
	}{
		{"Upload", func() { b.Upload(flat, randn(flat.Len())) }},
		{"Upload into a view", func() { b.Upload(b.Slice(flat, 3, 40), randn(40)) }},
		{"Copy", func() { b.Copy(flat, other) }},
		{"Scale", func() { b.Scale(flat, -0.5) }},
		{"Axpy", func() { b.Axpy(flat, 0.25, other) }},
		{"Add", func() { b.Add(flat, flat, other) }},
		{"SGDStep", func() { b.SGDStep(tensor.SGDConfig{LR: 0.1, Momentum: 0.9}, flat, g, v) }},
		{"LARSStep", func() {
			b.LARSStep(tensor.LARSConfig{LR: 0.1, Momentum: 0.9, WeightDecay: 1e-4, Eta: 0.01, Adapt: true}, flat, g, v)
		}},
		{"ReLUForward", func() { b.ReLUForward(flat, flat) }},
		{"RunExternal", func() {
			host := randn(flat.Len())
			if err := b.RunExternal(func(uintptr, func(tensor.Buffer) uintptr) error {
				// A library's own copy into the buffer, here the driver's.
				dr := &b.libs.driver
				return dr.check("cuMemcpyHtoD", mustCall(dr.cuMemcpyHtoDAsync, uintptr(b.ptr(flat)), uintptr(unsafe.Pointer(&host[0])), uintptr(4*len(host)), b.stream))
			}); err != nil {
				t.Fatal(err)
			}
			if err := b.Sync(); err != nil { // host must outlive the copy
				t.Fatal(err)
			}
		}},
		{"Zero", func() { b.Zero(flat) }},
	} {
		tc.write()
		check(tc.what)
	}
	// A freed weight's copy goes with it: a new buffer at the same
	// address (zeros) is another tensor.
	b.Conv2dForward(s, x, w, y)
	b.Upload(flat, randn(flat.Len()))
	b.Conv2dForward(s, x, w, y)
	addr := b.ptr(flat)
	b.Free(flat)
	flat = b.Alloc(s.WeightLen() + in*out + 3)
	if b.ptr(flat) != addr {
		t.Logf("the new buffer is at another address: the check below is weaker")
	}
	w = b.Slice(flat, 1, s.WeightLen())
	b.Conv2dForward(s, x, w, y)
	got := make([]float32, y.Len())
	b.Download(got, y)
	for i, v := range got {
		if v != 0 {
			t.Fatalf("after Free and Alloc: output %d is %g with an all-zero weight: the freed weight's copy was used", i, v)
		}
	}
}

// TestBF16ConversionsPerStep counts the conversion launches of ResNet-18
// training steps in bf16 (forward, backward, SGD step on the flat
// parameters). With 20 convolutions (the stem, 16 in the blocks and 3
// downsamples) and 2 linear layers, a step converts:
//
//	convolution forward   x narrowed, y widened                      20 + 20
//	convolution backward  dy and x narrowed; dx (not the stem's)
//	                      and dw widened                             40 + 39
//	linear forward        x narrowed                                 2
//	linear backward       dy twice and x narrowed                    6
//	weights               one narrowing each after the optimiser
//	                      step, none when unchanged                  22 or 0
//
// that is 90 narrowings and 59 widenings (68 and 59 when the weights did
// not change). Converting each weight at each use, as the first bf16
// build did, makes 112 narrowings: the count fails then.
func TestBF16ConversionsPerStep(t *testing.T) {
	b := openReal(t, "bf16")
	cfg := resnet18.Config{Width: 1, ProjDim: 16, InputSize: 8, Norm: resnet18.NormBatch}
	m := resnet18.New(b, cfg, 7)
	pr := m.Params()
	const images = 2
	views := 2 * images
	r := rand.New(rand.NewPCG(8, 9))
	host := make([]float32, views*m.InputLen())
	for i := range host {
		host[i] = float32(r.NormFloat64())
	}
	x := b.Alloc(len(host))
	b.Upload(x, host)
	dz := b.Alloc(views * cfg.ProjDim)
	v := b.Alloc(pr.Flat().Len())
	step := func(optimise bool) bf16Conversions {
		before := b.conversions
		z := m.Forward(x, views, true, true)
		b.NTXent(images, cfg.ProjDim, 0.5, false, z, dz)
		m.Backward(dz)
		if optimise {
			b.SGDStep(tensor.SGDConfig{LR: 0.05, Momentum: 0.9}, pr.Flat(), pr.Grad(), v)
		}
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		return bf16Conversions{b.conversions.narrow - before.narrow, b.conversions.widen - before.widen}
	}
	for i, tc := range []struct {
		optimise bool
		want     bf16Conversions
	}{
		{true, bf16Conversions{90, 59}},  // the first step converts every weight
		{false, bf16Conversions{90, 59}}, // after the optimiser step: again
		{true, bf16Conversions{68, 59}},  // weights unchanged since the last step
		{true, bf16Conversions{90, 59}},
	} {
		if got := step(tc.optimise); got != tc.want {
			t.Errorf("step %d: %+v conversions, want %+v", i, got, tc.want)
		}
	}
}
