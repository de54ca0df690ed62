package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/tensor"
)

// testBackend is one backend configuration the kernels are checked on.
type testBackend struct {
	name string
	b    *Backend
}

// testBackends covers one and several workers (3 splits ranges
// unevenly), GEMMs that are themselves multi-threaded, and what New gives.
func testBackends() []testBackend {
	ob, err := blas.OpenBLASThreads(1)
	if err != nil {
		ob = blas.PureGo(1)
	}
	return []testBackend{
		{"naive/1worker", NewWith(blas.Naive{}, 1)},
		{"naive/3workers", NewWith(blas.Naive{}, 3)},
		{"purego2/2workers", NewWith(blas.PureGo(2), 2)},
		{"openblas1/3workers", NewWith(ob, 3)},
		{"New", New()},
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(2*rng.Float64() - 1)
	}
	return s
}

func to64(s []float32) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = float64(v)
	}
	return d
}

// upload returns a new buffer of b holding a copy of data.
func upload(b tensor.Backend, data []float32) tensor.Buffer {
	buf := b.Alloc(len(data))
	b.Upload(buf, data)
	return buf
}

// filled returns a buffer of n elements all equal to v, to show that a
// kernel overwrites its output rather than accumulating into it.
func filled(b tensor.Backend, n int, v float32) tensor.Buffer {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return upload(b, s)
}

func download(b tensor.Backend, buf tensor.Buffer) []float32 {
	d := make([]float32, buf.Len())
	b.Download(d, buf)
	return d
}

// centralDiff returns the float64 central finite difference of f with
// respect to every element of p (p is restored afterwards).
func centralDiff(p []float64, eps float64, f func() float64) []float64 {
	g := make([]float64, len(p))
	for i := range p {
		orig := p[i]
		p[i] = orig + eps
		fp := f()
		p[i] = orig - eps
		fm := f()
		p[i] = orig
		g[i] = (fp - fm) / (2 * eps)
	}
	return g
}

func dot64s(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// assertClose fails unless |got_i - want_i| <= tol * max(1, max_j |want_j|)
// for every i: a tolerance relative to the scale of the whole tensor, as
// float32 rounding is relative to the magnitudes summed, not to each result.
func assertClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	worst, at := 0.0, -1
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > worst || math.IsNaN(d) {
			worst, at = d, i
			if math.IsNaN(d) {
				break
			}
		}
	}
	if at >= 0 && !(worst <= tol*scale) {
		t.Errorf("%s: element %d is %g, want %g (|diff| %.3g > tol %.3g x scale %.3g)", what, at, got[at], want[at], worst, tol, scale)
	}
}
