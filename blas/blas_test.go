package blas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// gemmCase is one Sgemm call to check against Naive.
type gemmCase struct {
	m, n, k     int
	alpha, beta float32
	pad         int // extra elements per row of every operand (lda, ldb, ldc > row length)
}

func (tc gemmCase) String() string {
	return fmt.Sprintf("m=%d,n=%d,k=%d,alpha=%g,beta=%g,pad=%d", tc.m, tc.n, tc.k, tc.alpha, tc.beta, tc.pad)
}

// gemmCases covers odd sizes around the micro-tiles (4x4 generic, up to
// 16 columns in the SIMD kernels) and block sizes (kc 256, mc 128 or more,
// nc 1024 or more), strides larger than the rows, and the alpha/beta
// special cases BLAS treats apart.
func gemmCases() []gemmCase {
	var cases []gemmCase
	sizes := []int{1, 3, 17, 65, 129}
	for i, m := range sizes {
		for j, n := range sizes {
			k := sizes[(i+2*j)%len(sizes)]
			cases = append(cases, gemmCase{m: m, n: n, k: k, alpha: 1, beta: 0, pad: (i + j) % 3})
		}
	}
	cases = append(cases,
		gemmCase{m: 7, n: 9, k: 5, alpha: 0.5, beta: -1.5, pad: 2},
		gemmCase{m: 33, n: 31, k: 300, alpha: -2, beta: 1, pad: 1},
		gemmCase{m: 16, n: 32, k: 8, alpha: 1, beta: 1, pad: 0},
		gemmCase{m: 300, n: 70, k: 257, alpha: 1.25, beta: 0.75, pad: 3},
		gemmCase{m: 5, n: 1100, k: 7, alpha: 1, beta: 0, pad: 1},
		gemmCase{m: 200, n: 2100, k: 20, alpha: 0.5, beta: 0.5, pad: 0},
		gemmCase{m: 13, n: 11, k: 0, alpha: 1, beta: 0, pad: 1},   // k = 0 with beta = 0: C becomes 0
		gemmCase{m: 13, n: 11, k: 0, alpha: 1, beta: 3, pad: 1},   // k = 0: C = beta C
		gemmCase{m: 13, n: 11, k: 19, alpha: 0, beta: -1, pad: 0}, // alpha = 0: C = beta C
		gemmCase{m: 0, n: 11, k: 19, alpha: 1, beta: 0, pad: 0},
		gemmCase{m: 11, n: 0, k: 19, alpha: 1, beta: 0, pad: 0},
	)
	return cases
}

// sentinel marks padding elements of C that Sgemm must leave alone.
const sentinel = float32(-12345.5)

// checkGemm runs every case and transpose combination on g and compares
// with Naive. Tolerance: the standard forward error bound of a float32 dot
// product of length k, |C - C_ref| <= 2 (k+2) eps (|alpha| sum_p |a_ip b_pj|
// + |beta c_ij|) with eps = 2^-24, evaluated in float64. A wrong element,
// index or transpose gives errors of order one, far above it.
func checkGemm(t *testing.T, g Gemm) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range gemmCases() {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			transA, transB := tr[0], tr[1]
			name := fmt.Sprintf("%v/transA=%v,transB=%v", tc, transA, transB)
			aRows, aCols := tc.m, tc.k
			if transA {
				aRows, aCols = tc.k, tc.m
			}
			bRows, bCols := tc.k, tc.n
			if transB {
				bRows, bCols = tc.n, tc.k
			}
			lda, ldb, ldc := aCols+tc.pad, bCols+tc.pad, tc.n+tc.pad
			a := randomSlice(rng, aRows*lda)
			b := randomSlice(rng, bRows*ldb)
			c0 := randomSlice(rng, tc.m*ldc)
			for i := 0; i < tc.m; i++ {
				for j := 0; j < ldc; j++ {
					switch {
					case j >= tc.n:
						c0[i*ldc+j] = sentinel
					case tc.beta == 0:
						c0[i*ldc+j] = float32(math.NaN()) // must be overwritten, not scaled
					}
				}
			}
			want := append([]float32(nil), c0...)
			Naive{}.Sgemm(transA, transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, want, ldc)
			got := append([]float32(nil), c0...)
			g.Sgemm(transA, transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)

			opA := func(i, p int) float32 {
				if transA {
					return a[p*lda+i]
				}
				return a[i*lda+p]
			}
			opB := func(p, j int) float32 {
				if transB {
					return b[j*ldb+p]
				}
				return b[p*ldb+j]
			}
			const eps = 1.0 / (1 << 24)
			bad := 0
			for i := 0; i < tc.m && bad < 3; i++ {
				for j := 0; j < ldc && bad < 3; j++ {
					g, w := got[i*ldc+j], want[i*ldc+j]
					if j >= tc.n {
						if g != sentinel {
							t.Errorf("%s: %s wrote C[%d,%d] = %g outside the %dx%d result (padding)", name, "Sgemm", i, j, g, tc.m, tc.n)
							bad++
						}
						continue
					}
					scale := 0.0
					for p := 0; p < tc.k; p++ {
						scale += math.Abs(float64(opA(i, p)) * float64(opB(p, j)))
					}
					scale *= math.Abs(float64(tc.alpha))
					if tc.beta != 0 {
						scale += math.Abs(float64(tc.beta) * float64(c0[i*ldc+j]))
					}
					tol := 2 * float64(tc.k+2) * eps * scale
					if diff := math.Abs(float64(g) - float64(w)); !(diff <= tol) {
						t.Errorf("%s: C[%d,%d] = %g, want %g (|diff| %.3g > tol %.3g)", name, i, j, g, w, diff, tol)
						bad++
					}
				}
			}
		}
	}
}

func randomSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 2*rng.Float32() - 1
	}
	return s
}

func TestNaiveSmall(t *testing.T) {
	// Computed by hand: [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50], then
	// 2 AB + 1 C with C = [1 1; 1 1].
	a := []float32{1, 2, 3, 4}
	b := []float32{5, 6, 7, 8}
	tests := []struct {
		transA, transB bool
		want           []float32
	}{
		{false, false, []float32{39, 45, 87, 101}},
		{true, false, []float32{2*26 + 1, 2*30 + 1, 2*38 + 1, 2*44 + 1}}, // A^T B = [26 30; 38 44]
		{false, true, []float32{2*17 + 1, 2*23 + 1, 2*39 + 1, 2*53 + 1}}, // A B^T = [17 23; 39 53]
		{true, true, []float32{2*23 + 1, 2*31 + 1, 2*34 + 1, 2*46 + 1}},  // A^T B^T = [23 31; 34 46]
	}
	for _, tc := range tests {
		c := []float32{1, 1, 1, 1}
		Naive{}.Sgemm(tc.transA, tc.transB, 2, 2, 2, 2, a, 2, b, 2, 1, c, 2)
		for i := range c {
			if c[i] != tc.want[i] {
				t.Errorf("transA=%v transB=%v: C = %v, want %v", tc.transA, tc.transB, c, tc.want)
				break
			}
		}
	}
}

func TestPureGo(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) { checkGemm(t, PureGo(threads)) })
	}
}

func TestKernels(t *testing.T) {
	// Every micro-kernel this machine runs, the portable one included, even
	// though PureGo only uses the fastest.
	for _, k := range kernels() {
		t.Run(k.name, func(t *testing.T) { checkGemm(t, newPureGo(2, k)) })
	}
}

// openBLASForTest returns OpenBLAS or skips the test, saying why.
func openBLASForTest(t *testing.T) Gemm {
	t.Helper()
	g, err := OpenBLAS()
	if err != nil {
		testenv.Missing(t, "no CBLAS library here (apt-get install libopenblas0): %v", err)
	}
	return g
}

func TestOpenBLAS(t *testing.T) {
	g := openBLASForTest(t)
	t.Logf("testing %s", g.Name())
	if g.(*openBLAS).fortranSgemm == 0 {
		t.Errorf("%s exports no sgemm_: every call goes through reflection", g.Name())
	}
	checkGemm(t, g)
}

// TestOpenBLASThroughCBLAS checks the cblas_sgemm path that libraries
// without the Fortran sgemm_ take.
func TestOpenBLASThroughCBLAS(t *testing.T) {
	g := openBLASForTest(t).(*openBLAS)
	g.fortranSgemm = 0
	checkGemm(t, g)
}

// The Fortran path is what a training step calls thousands of times. One
// object a call is left inside purego.SyscallN (the cblas_sgemm binding
// through RegisterFunc allocated five and more).
func TestOpenBLASAllocatesAtMostOne(t *testing.T) {
	g := openBLASForTest(t)
	a := make([]float32, 64*64)
	c := make([]float32, 64*64)
	if n := testing.AllocsPerRun(50, func() { g.Sgemm(true, false, 64, 64, 64, 1, a, 64, a, 64, 0.5, c, 64) }); n > 1 {
		t.Errorf("OpenBLAS Sgemm allocates %v objects a call, want at most 1", n)
	}
}

func TestOpenRacesOpenBLAS(t *testing.T) {
	const lib = "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"
	if _, err := os.Stat(lib); err != nil {
		testenv.Missing(t, "%s is absent (apt-get install libopenblas0): %v", lib, err)
	}
	t.Setenv(EnvLibrary, "")
	// Identified by its own symbol, then raced against the built-in kernel:
	// the choice follows the race, and the Gemm matches the kind.
	c := Choose(1)
	if !strings.Contains(c.Why, "libopenblas.so.0: OpenBLAS (exports openblas_get_config)") || !strings.Contains(c.Why, "a training step's products took") {
		t.Errorf("Choose(1).Why = %q, want OpenBLAS identified by openblas_get_config and the race's figures", c.Why)
	}
	switch name := c.Gemm.Name(); c.Kind {
	case KindLibrary:
		if !strings.Contains(name, "OpenBLAS") || !strings.Contains(name, "libopenblas") {
			t.Errorf("Choose(1) kind %s computes with %q, want OpenBLAS from libopenblas", c.Kind, name)
		}
	case KindBuiltin:
		if !strings.HasPrefix(name, "pure Go") {
			t.Errorf("Choose(1) kind %s computes with %q, want the pure-Go kernel", c.Kind, name)
		}
	default:
		t.Errorf("Choose(1).Kind = %q, want %s or %s", c.Kind, KindLibrary, KindBuiltin)
	}
	// Each kind asked for by name is what it says.
	for kind, want := range map[string]string{KindLibrary: "OpenBLAS", KindBuiltin: "pure Go", KindPerShape: "the faster per product shape"} {
		c, err := ChooseKind(1, kind)
		if err != nil || c.Kind != kind || !strings.Contains(c.Gemm.Name(), want) {
			t.Errorf("ChooseKind(1, %q) = %q kind %q, %v; want %q in the name", kind, c.Gemm.Name(), c.Kind, err, want)
		}
	}
	if _, err := ChooseKind(1, "fastest"); err == nil || !strings.Contains(err.Error(), `unknown SGEMM kind "fastest"`) {
		t.Errorf("ChooseKind of an unknown kind: error %v, want one naming it", err)
	}
}

// TestChooseFasterFollowsTheRace: the built-in kernel is chosen only when
// the race finds it faster by the margin, whatever the library's name.
func TestChooseFasterFollowsTheRace(t *testing.T) {
	fast := &slowGemm{name: "fast", inner: PureGo(1)}
	slow := &slowGemm{name: "slow", delay: 5 * time.Millisecond, inner: PureGo(1)}
	// Equal sleeps dwarf the products, so noise cannot open a 10% gap.
	tie := &slowGemm{name: "tie", delay: 2 * time.Millisecond, inner: PureGo(1)}
	for _, tc := range []struct {
		lib, ours *slowGemm
		want      string
	}{
		{fast, slow, KindLibrary},
		{slow, fast, KindBuiltin},
		{tie, tie, KindLibrary}, // a tie keeps the library
	} {
		c := chooseFaster(tc.lib, "known library", tc.ours)
		if c.Kind != tc.want {
			t.Errorf("library %s against built-in %s: chose %s (%s), want %s", tc.lib.name, tc.ours.name, c.Kind, c.Why, tc.want)
		}
	}
}

func TestLibraryCandidates(t *testing.T) {
	// $SIMCLR_BLAS names the only library tried.
	if got := libraryCandidates("/opt/blas/libmkl_rt.so"); len(got) != 1 || got[0] != "/opt/blas/libmkl_rt.so" {
		t.Errorf("libraryCandidates(override) = %v, want the override alone", got)
	}
	got := libraryCandidates("")
	if len(got) == 0 || got[0] != "libopenblas.so.0" {
		t.Errorf("libraryCandidates(\"\") starts %v, want libopenblas.so.0 first", got[:min(1, len(got))])
	}
	seen := map[string]bool{}
	for _, p := range got {
		if seen[p] {
			t.Errorf("libraryCandidates(\"\") lists %q twice", p)
		}
		seen[p] = true
	}
	for _, want := range []string{"libopenblas.so", "/usr/lib/x86_64-linux-gnu/libblas.so.3", "/usr/local/lib/libopenblas.so.0"} {
		if !seen[want] {
			t.Errorf("libraryCandidates(\"\") = %v, missing %q", got, want)
		}
	}
}

func TestShapeMismatchPanics(t *testing.T) {
	impls := []Gemm{PureGo(1)}
	if g, err := OpenBLAS(); err == nil {
		impls = append(impls, g)
	}
	tests := []struct {
		name          string
		transA        bool
		m, n, k       int
		lenA, lda     int
		lenB, ldb     int
		lenC, ldc     int
		wantInMessage string
	}{
		{"negative m", false, -1, 2, 2, 4, 2, 4, 2, 4, 2, "negative size"},
		{"lda below k", false, 2, 2, 3, 6, 2, 6, 2, 4, 2, "A stored as 2x3"},
		{"A too short", false, 2, 2, 3, 5, 3, 6, 2, 4, 2, "needs 6 elements"},
		{"A transposed too short", true, 2, 2, 3, 5, 2, 6, 2, 4, 2, "A stored as 3x2"},
		{"B too short", false, 2, 2, 3, 6, 3, 5, 2, 4, 2, "B stored as 3x2"},
		{"ldc below n", false, 2, 2, 3, 6, 3, 6, 2, 4, 1, "C stored as 2x2"},
	}
	for _, g := range impls {
		for _, tc := range tests {
			func() {
				defer func() {
					r := recover()
					msg, _ := r.(string)
					if !strings.Contains(msg, tc.wantInMessage) {
						t.Errorf("%s %s: panic %v, want one mentioning %q", g.Name(), tc.name, r, tc.wantInMessage)
					}
				}()
				g.Sgemm(tc.transA, false, tc.m, tc.n, tc.k, 1, make([]float32, tc.lenA), tc.lda,
					make([]float32, tc.lenB), tc.ldb, 0, make([]float32, tc.lenC), tc.ldc)
			}()
		}
	}
}

func TestPureGoNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random, so calls allocate")
	}
	const m, n, k = 96, 80, 72 // several parts' worth of work on 2 threads
	g := PureGo(2)
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	g.Sgemm(false, true, m, n, k, 1, a, k, b, k, 0, c, n) // warm up: buffers grow once
	allocs := testing.AllocsPerRun(50, func() {
		g.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
	})
	if allocs != 0 {
		t.Errorf("PureGo(2).Sgemm allocates %v times per call in steady state, want 0", allocs)
	}
}

func TestPureGoWorkersExitWhenUnreachable(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		g := PureGo(5)
		c := make([]float32, 64*64)
		g.Sgemm(false, false, 64, 64, 64, 1, make([]float32, 64*64), 64, make([]float32, 64*64), 64, 0, c, 64)
	}()
	// Cleanups run after a collection finds g unreachable; give them time.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if now := runtime.NumGoroutine(); now > before {
		t.Errorf("%d goroutines after dropping PureGo(5), %d before: its workers leaked", now, before)
	}
}

func TestPureGoConcurrentCalls(t *testing.T) {
	// Calls from several goroutines share the workers; each must get its own
	// product. Sizes differ per goroutine so that mixed-up parts would show.
	g := PureGo(2)
	const callers = 4
	errs := make(chan string, callers)
	for caller := range callers {
		go func() {
			m, n, k := 40+caller*7, 50+caller*5, 30+caller*3
			rng := rand.New(rand.NewPCG(uint64(caller), 9))
			a, b := randomSlice(rng, m*k), randomSlice(rng, k*n)
			want := make([]float32, m*n)
			Naive{}.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, want, n)
			for range 20 {
				got := make([]float32, m*n)
				g.Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, got, n)
				for i := range got {
					// |a|, |b| <= 1: the error bound of checkGemm with sum |a b| <= k.
					if diff := math.Abs(float64(got[i] - want[i])); diff > 2*float64(k+2)*float64(k)/(1<<24) {
						errs <- fmt.Sprintf("caller %d: C[%d] = %g, want %g", caller, i, got[i], want[i])
						return
					}
				}
			}
			errs <- ""
		}()
	}
	for range callers {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
}

// TestOpenBLASHandlesKeepTheirThreadCount: OpenBLAS has one process-wide
// thread count, so a handle must restore its own before each call (the CPU
// backend's single-threaded workers would otherwise inherit a probe's two
// threads and spin).
func TestOpenBLASHandlesKeepTheirThreadCount(t *testing.T) {
	one, err := OpenBLASThreads(1)
	if err != nil {
		testenv.Missing(t, "no OpenBLAS here (apt-get install libopenblas0): %v", err)
	}
	two, err := OpenBLASThreads(2)
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := one.(*openBLAS), two.(*openBLAS)
	if h1.getThreads == nil {
		testenv.Missing(t, "this CBLAS has no openblas_get_num_threads (it is not OpenBLAS)")
	}
	a := []float32{1, 2, 3, 4}
	c := make([]float32, 4)
	for _, tc := range []struct {
		h    *openBLAS
		want int32
	}{{h1, 1}, {h2, 2}, {h1, 1}} {
		tc.h.Sgemm(false, false, 2, 2, 2, 1, a, 2, a, 2, 0, c, 2)
		if got := tc.h.getThreads(); got != tc.want {
			t.Fatalf("after a call on the %d-thread handle OpenBLAS runs %d threads", tc.want, got)
		}
	}
	if want := []float32{7, 10, 15, 22}; !slices.Equal(c, want) {
		t.Fatalf("product %v, want %v", c, want)
	}
}
