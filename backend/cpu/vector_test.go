package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/blas"
)

func TestBuffersAndViews(t *testing.T) {
	b := NewWith(blas.Naive{}, 2)
	buf := b.Alloc(10)
	if buf.Len() != 10 {
		t.Fatalf("Alloc(10).Len() = %d", buf.Len())
	}
	for i, v := range Data(buf) {
		if v != 0 {
			t.Fatalf("Alloc is not zeroed: element %d is %g", i, v)
		}
	}
	b.Upload(buf, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	view := b.Slice(buf, 3, 4)
	if got := download(b, view); fmt.Sprint(got) != "[3 4 5 6]" {
		t.Errorf("Slice(3,4) holds %v, want [3 4 5 6]", got)
	}
	b.Scale(view, 10) // writes through to the parent
	if got := download(b, buf); fmt.Sprint(got) != "[0 1 2 30 40 50 60 7 8 9]" {
		t.Errorf("after scaling the view the parent holds %v", got)
	}
	if got := Data(b.Slice(view, 1, 2)); fmt.Sprint(got) != "[40 50]" {
		t.Errorf("view of a view holds %v, want [40 50]", got)
	}
	if err := b.Sync(); err != nil {
		t.Errorf("Sync: %v", err)
	}
	if d := b.Describe(); d != "cpu: naive; 2 worker threads, one GEMM each, waiting 200µs for the next kernel before sleeping" {
		t.Errorf("Describe() = %q", d)
	}
	for name, f := range map[string]func(){
		"slice past end":   func() { b.Slice(buf, 8, 3) },
		"upload too short": func() { b.Upload(buf, make([]float32, 9)) },
		"add mismatched":   func() { b.Add(buf, buf, view) },
		"foreign buffer":   func() { Data(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		})
	}
}

func TestVectorKernels(t *testing.T) {
	for _, tb := range testBackends() {
		for _, n := range []int{5, 4*minWork + 3} {
			t.Run(fmt.Sprintf("%s/%d", tb.name, n), func(t *testing.T) {
				b := tb.b
				rng := rand.New(rand.NewPCG(uint64(n), 8))
				x, y := randSlice(rng, n), randSlice(rng, n)
				xb, yb := upload(b, x), upload(b, y)

				var dot, ss float64
				sum, axpy, scaled := make([]float64, n), make([]float64, n), make([]float64, n)
				for i := range x {
					dot += float64(x[i]) * float64(y[i])
					ss += float64(x[i]) * float64(x[i])
					sum[i] = float64(x[i]) + float64(y[i])
					axpy[i] = float64(y[i]) + 0.25*float64(x[i])
					scaled[i] = -3 * float64(x[i])
				}
				if got := b.Dot(xb, yb); math.Abs(got-dot) > 1e-12*float64(n) {
					t.Errorf("Dot = %.15g, want %.15g", got, dot)
				}
				if got := b.SumSquares(xb); math.Abs(got-ss) > 1e-12*float64(n) {
					t.Errorf("SumSquares = %.15g, want %.15g", got, ss)
				}
				out := filled(b, n, 7)
				b.Add(out, xb, yb)
				assertClose(t, "Add", download(b, out), sum, 1e-7)
				b.Copy(out, yb)
				b.Add(out, xb, out) // out aliases an input
				assertClose(t, "Add aliased", download(b, out), sum, 1e-7)
				b.Copy(out, yb)
				b.Axpy(out, 0.25, xb)
				assertClose(t, "Axpy", download(b, out), axpy, 1e-7)
				b.Copy(out, xb)
				b.Scale(out, -3)
				assertClose(t, "Scale", download(b, out), scaled, 1e-7)
				b.Zero(out)
				assertClose(t, "Zero", download(b, out), make([]float64, n), 0)

				if !b.AllFinite(xb) {
					t.Errorf("AllFinite of finite values is false")
				}
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
					for _, at := range []int{0, n / 2, n - 1} {
						b.Copy(out, xb)
						Data(out)[at] = bad
						if b.AllFinite(out) {
							t.Errorf("AllFinite is true with %g at %d of %d", bad, at, n)
						}
					}
				}
			})
		}
	}
}

// New says in Describe (the run log's device line) which SGEMM it chose
// and why: here $SIMCLR_BLAS names a library that does not exist, so the
// built-in kernel, with the reason.
func TestNewDescribesItsBLASChoice(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnothing.so")
	t.Setenv(blas.EnvLibrary, missing)
	// The start-up race is what is described here: a kind pinned in the
	// caller's environment would skip it.
	t.Setenv(blas.EnvGemm, "")
	d := New().Describe()
	want := "[built-in kernel: " + blas.EnvLibrary + "=" + missing + ": "
	if !strings.HasPrefix(d, "cpu: pure Go") || !strings.Contains(d, want) {
		t.Errorf("Describe() = %q, want the pure-Go kernel and %q", d, want)
	}
}

// TestNewReadsTheSpin: $SIMCLR_CPU_SPIN sets the workers' spin, and a
// value that is not a duration is reported and left at the default.
func TestNewReadsTheSpin(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"", "waiting 200µs for the next kernel before sleeping"},
		{"0", "waiting 0s for the next kernel before sleeping (SIMCLR_CPU_SPIN=0)"},
		{"1ms", "waiting 1ms for the next kernel before sleeping (SIMCLR_CPU_SPIN=1ms)"},
		{"fast", "waiting 200µs for the next kernel before sleeping (SIMCLR_CPU_SPIN=fast not used: want a duration such as 200us, or 0 for none)"},
	} {
		t.Setenv(EnvSpin, tc.env)
		if d := New().Describe(); !strings.HasSuffix(d, tc.want) {
			t.Errorf("%s=%q: Describe() = %q, want it to end %q", EnvSpin, tc.env, d, tc.want)
		}
	}
}
