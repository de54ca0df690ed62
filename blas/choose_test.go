package blas

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/simclr-go/simclr/internal/testsupport/testenv"
)

// envReferenceBLAS names a copy of the reference BLAS for
// TestReferenceBLASRefused on systems that keep it elsewhere than Debian's
// libblas3 does.
const envReferenceBLAS = "SIMCLR_TEST_REFERENCE_BLAS"

// referenceBLAS returns the path of Netlib's reference BLAS (Debian's
// libblas3, which has cblas_sgemm and no optimised kernels), or skips the
// test (fails it under CI=true). The alternatives symlink libblas.so.3 may
// point at OpenBLAS, so the file in blas/ is used.
func referenceBLAS(t *testing.T) string {
	t.Helper()
	paths := []string{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", "/usr/lib/aarch64-linux-gnu/blas/libblas.so.3"}
	if p := os.Getenv(envReferenceBLAS); p != "" {
		paths = []string{p}
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testenv.Missing(t, "no reference BLAS at %s (apt-get install libblas3, or set %s)", strings.Join(paths, " or "), envReferenceBLAS)
	return ""
}

// TestReferenceBLASRefused: the reference BLAS exports cblas_sgemm but is an
// order of magnitude slower than the built-in kernel, so neither the search
// nor $SIMCLR_BLAS may pick it. With only the portable kernel (the purego
// build tag, or a CPU without AVX2) the reference BLAS is the faster of the
// two and rightly taken, so there the test has nothing to check.
func TestReferenceBLASRefused(t *testing.T) {
	if bestKernel().name == genericKernel.name {
		t.Skip("the built-in kernel is the portable one, which the reference BLAS outruns")
	}
	ref := referenceBLAS(t)
	for _, threads := range []int{1, runtime.NumCPU()} {
		// The search: the reference BLAS is the only library it finds.
		g, why, err := openSystem([]string{ref}, threads)
		if err == nil {
			t.Fatalf("search finding only %s chose %s (%s), want no system BLAS", ref, g.Name(), why)
		}
		if e, ok := err.(*NotUsedError); !ok || len(e.Refused) != 1 || !strings.Contains(e.Refused[0], "refused: not identified as OpenBLAS, BLIS or MKL") {
			t.Errorf("search finding only %s: error %v, want one refusal saying it is not a known optimised BLAS", ref, err)
		}
		// $SIMCLR_BLAS pointing at it.
		t.Setenv(EnvLibrary, ref)
		c := Choose(threads)
		if _, ok := c.Gemm.(*pureGo); !ok {
			t.Errorf("%s=%s, %d threads: Choose picked %s, want the built-in kernel", EnvLibrary, ref, threads, c.Gemm.Name())
		}
		if !strings.HasPrefix(c.Why, "built-in kernel: libblas.so.3 refused") {
			t.Errorf("%s=%s: Why = %q, want it to say the built-in kernel was chosen because libblas.so.3 was refused", EnvLibrary, ref, c.Why)
		}
		t.Log(c.Why)
	}
}

// noop is a "library" that returns at once: faster than any real kernel.
type noop struct{}

func (noop) Name() string { return "noop" }
func (noop) Sgemm(bool, bool, int, int, int, float32, []float32, int, []float32, int, float32, []float32, int) {
}

func TestVet(t *testing.T) {
	tests := []struct {
		name    string
		lib     Gemm
		known   string
		wantErr string // "" when accepted
		wantWhy string
	}{
		// Identified by its symbol: no timed check, however slow it is.
		{"identified", Naive{}, "OpenBLAS (exports openblas_get_config)", "", "lib.so: OpenBLAS (exports openblas_get_config)"},
		// The float64 triple loop is tens of times slower than the built-in kernel.
		{"unknown and slow", Naive{}, "", "lib.so refused: not identified as OpenBLAS, BLIS or MKL, and a timed 64x1024x576 product took", ""},
		{"unknown and fast", noop{}, "", "", "lib.so: not identified as OpenBLAS, BLIS or MKL, and a timed 64x1024x576 product took"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why, err := vet(tc.lib, tc.known, "lib.so", 1)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Errorf("vet: (%q, %v), want an error starting %q", why, err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.HasPrefix(why, tc.wantWhy) {
				t.Errorf("vet: (%q, %v), want acceptance starting %q", why, err, tc.wantWhy)
			}
		})
	}
}

func TestNotUsedErrorSummary(t *testing.T) {
	tests := []struct {
		name string
		err  NotUsedError
		want string
	}{
		{"nothing found", NotUsedError{Missing: []string{"libopenblas.so.0: not found"}}, "no CBLAS library found (install OpenBLAS"},
		{"refused", NotUsedError{Refused: []string{"libblas.so.3 refused: slow"}, Missing: []string{"libopenblas.so.0: not found"}}, "libblas.so.3 refused: slow"},
		{"override", NotUsedError{Override: "/x.so", Missing: []string{"/x.so: not found"}}, "SIMCLR_BLAS=/x.so: not found"},
		{"platform", NotUsedError{Unsupported: "not on plan9"}, "not on plan9"},
	}
	for _, tc := range tests {
		if got := tc.err.Summary(); !strings.HasPrefix(got, tc.want) || strings.Contains(got, "\n") {
			t.Errorf("%s: Summary() = %q, want one line starting %q", tc.name, got, tc.want)
		}
	}
}

// Choose measures once per process and library override: a second call
// (every kNN or probe evaluation opens a BLAS) returns the same SGEMM
// without loading and timing the library again.
func TestChooseOncePerProcess(t *testing.T) {
	t.Setenv(EnvLibrary, "")
	first := Choose(1)
	second := Choose(1)
	if first.Gemm != second.Gemm || first.Why != second.Why {
		t.Errorf("Choose(1) made two choices: %s (%s) and %s (%s)", first.Gemm.Name(), first.Why, second.Gemm.Name(), second.Why)
	}
	if Open() != Open() {
		t.Error("Open() made two choices")
	}
}
