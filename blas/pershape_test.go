package blas

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowGemm is PureGo behind a fixed delay per call, named uniquely so
// that each test gets its own per-process choice table, and counting its
// calls.
type slowGemm struct {
	name  string
	delay time.Duration
	inner Gemm
	calls atomic.Int64
}

func (g *slowGemm) Name() string { return g.name }

func (g *slowGemm) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	g.calls.Add(1)
	time.Sleep(g.delay)
	g.inner.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// TestPerShapeIsCorrect: whatever it chooses, PerShape computes every
// case and transpose of the SGEMM tests within the float32 error bound.
func TestPerShapeIsCorrect(t *testing.T) {
	lib := &slowGemm{name: t.Name() + "/lib", inner: PureGo(1)}
	checkGemm(t, PerShape(lib, newPureGo(1, genericKernel)))
}

// TestPerShapeKeepsTheFasterPerShape: a pair whose one side sleeps 5 ms a
// call (thousands of times an 8x8x8 product) goes to the other side, in
// either role, and the race runs once per shape: later calls, from a
// second PerShape over the same pair too, go straight to the winner. The
// sleeping side's result is the winner's bit for bit, so the test reads
// which one ran from the call counts.
func TestPerShapeKeepsTheFasterPerShape(t *testing.T) {
	const m, n, k = 8, 8, 8
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%5) - 2
		b[i] = float32(i%3) - 1
	}
	for _, tc := range []struct {
		name     string
		slowLib  bool
		wantOurs bool
	}{
		{"library slow", true, true},
		{"ours slow", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := &slowGemm{name: t.Name() + "/slow", delay: 5 * time.Millisecond, inner: PureGo(1)}
			fast := &slowGemm{name: t.Name() + "/fast", inner: PureGo(1)}
			lib, ours := Gemm(fast), Gemm(slow)
			if tc.slowLib {
				lib, ours = slow, fast
			}
			c := make([]float32, m*n)
			PerShape(lib, ours).Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
			raced := slow.calls.Load()
			if raced != 4 {
				t.Fatalf("the race called the slow side %d times, want 4 (a warm-up and the best of three)", raced)
			}
			second := PerShape(lib, ours)
			for range 3 {
				second.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
			}
			if got := slow.calls.Load() - raced; got != 0 {
				t.Errorf("after the race the slow side ran %d more products, want 0", got)
			}
			libN, oursN := second.(*perShape).Choices()
			if tc.wantOurs != (oursN == 1) || libN+oursN != 1 {
				t.Errorf("choices: %d shapes to the library, %d to ours; want the one shape to the fast side", libN, oursN)
			}
			want := make([]float32, m*n)
			Naive{}.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, want, n)
			for i := range want {
				if math.Abs(float64(c[i]-want[i])) > 1e-4 {
					t.Fatalf("C[%d] = %g, want %g", i, c[i], want[i])
				}
			}
		})
	}
}

// TestPerShapeConcurrentFirstCalls: workers meeting a new shape together
// race it once and all get the right product (run with -race).
func TestPerShapeConcurrentFirstCalls(t *testing.T) {
	lib := &slowGemm{name: t.Name() + "/lib", inner: PureGo(1)}
	ours := &slowGemm{name: t.Name() + "/ours", inner: newPureGo(1, genericKernel)}
	g := PerShape(lib, ours)
	const m, n, k = 17, 33, 9
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) - 2
	}
	want := make([]float32, m*n)
	Naive{}.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, want, n)
	var wg sync.WaitGroup
	errs := make([]float64, 4)
	for w := range errs {
		wg.Go(func() {
			c := make([]float32, m*n)
			g.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
			for i := range c {
				errs[w] = max(errs[w], math.Abs(float64(c[i]-want[i])))
			}
		})
	}
	wg.Wait()
	for w, e := range errs {
		if e > 1e-4 {
			t.Errorf("worker %d: max error %g", w, e)
		}
	}
	if l, o := lib.calls.Load(), ours.calls.Load(); l+o != 8+4 {
		t.Errorf("%d library and %d built-in calls, want 8 for one race and 4 products", l, o)
	}
}
