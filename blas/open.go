package blas

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"
)

// Open returns the SGEMM Choose picks with runtime.NumCPU() threads.
func Open() Gemm { return Choose(runtime.NumCPU()).Gemm }

// Choice is the SGEMM Choose picked and why, for `simclr devices` and the
// run log.
type Choice struct {
	Gemm Gemm
	// Why says why this implementation: the symbol that identified the
	// library, the timed check's figures, or why no system library is used.
	Why string
}

// Choose returns a system BLAS known to be fast (OpenBLASThreads) with
// threads threads, else the built-in pure-Go kernel.
func Choose(threads int) Choice {
	g, why, err := systemBLAS(threads)
	if err == nil {
		return Choice{Gemm: g, Why: why}
	}
	return Choice{Gemm: PureGo(threads), Why: "built-in kernel: " + summary(err)}
}

// knownLibraries are the optimised BLAS libraries used without a timed
// check, each recognised by a symbol of its own.
var knownLibraries = []struct{ name, symbol string }{
	{"OpenBLAS", "openblas_get_config"},
	{"BLIS", "bli_info_get_version_str"},
	{"Intel MKL", "MKL_Get_Version"},
}

// NotUsedError says why no system BLAS is used: the libraries that were
// found but refused, and the paths that could not be loaded.
type NotUsedError struct {
	// Unsupported, when set, says that this platform cannot load libraries.
	Unsupported string
	// Override is $SIMCLR_BLAS, the only library tried when set.
	Override string
	// Refused holds one "library: reason" line per library that loaded but
	// was neither identified as optimised nor faster than the built-in kernel.
	Refused []string
	// Missing holds one "path: error" line per path that did not load or
	// had no cblas_sgemm.
	Missing []string
}

func (e *NotUsedError) Error() string {
	var b strings.Builder
	b.WriteString("blas: " + e.Summary())
	if len(e.Missing) > 0 {
		b.WriteString("; tried:\n  " + strings.Join(e.Missing, "\n  "))
	}
	return b.String()
}

// Summary is Error in one line, without the list of paths that did not load.
func (e *NotUsedError) Summary() string {
	if e.Unsupported != "" {
		return e.Unsupported
	}
	if len(e.Refused) > 0 {
		return strings.Join(e.Refused, "; ")
	}
	if e.Override != "" {
		return fmt.Sprintf("%s=%s", EnvLibrary, strings.Join(e.Missing, "; "))
	}
	return fmt.Sprintf("no CBLAS library found (install OpenBLAS, e.g. `apt-get install libopenblas0`, or set %s to the library's path)", EnvLibrary)
}

// The timed check multiplies the matrices of one ResNet-18 first-stage
// convolution as the CPU backend lowers it for one 32x32 image: 64 output
// channels by 576 (64 channels x 3x3) weights by 1,024 pixels.
const checkM, checkN, checkK = 64, 1024, 576

// vet accepts lib when it was identified as an optimised library (known is
// its name and symbol) or when it beats the built-in kernel with the same
// thread count on the check's product, and returns why; else an error
// saying why it is refused. file names the library in messages.
func vet(lib Gemm, known, file string, threads int) (string, error) {
	if known != "" {
		return fmt.Sprintf("%s: %s", file, known), nil
	}
	libTime, builtinTime := race(lib, PureGo(threads))
	verdict := fmt.Sprintf("not identified as OpenBLAS, BLIS or MKL, and a timed %dx%dx%d product took %s against %s with the built-in kernel",
		checkM, checkN, checkK, libTime.Round(10*time.Microsecond), builtinTime.Round(10*time.Microsecond))
	if libTime < builtinTime {
		return fmt.Sprintf("%s: %s", file, verdict), nil
	}
	return "", fmt.Errorf("%s refused: %s", file, verdict)
}

// race times the check's product on a and on b, alternating, and returns
// the best of three for each after one warm-up call each: the best time is
// the least disturbed by other work on the machine.
func race(a, b Gemm) (time.Duration, time.Duration) {
	x := make([]float32, checkM*checkK)
	y := make([]float32, checkK*checkN)
	z := make([]float32, checkM*checkN)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range y {
		y[i] = float32(i%5) - 2
	}
	return bestOfThree(a, b, func(g Gemm) {
		g.Sgemm(false, false, checkM, checkN, checkK, 1, x, checkK, y, checkN, 0, z, checkN)
	})
}

// bestOfThree times call on a and on b, alternating: one warm-up call each,
// then the best of three for each.
func bestOfThree(a, b Gemm, call func(Gemm)) (time.Duration, time.Duration) {
	run := func(g Gemm) time.Duration {
		start := time.Now()
		call(g)
		return time.Since(start)
	}
	run(a)
	run(b)
	bestA, bestB := time.Duration(1<<62), time.Duration(1<<62)
	for range 3 {
		bestA = min(bestA, run(a))
		bestB = min(bestB, run(b))
	}
	return bestA, bestB
}

// summary is err's one-line Summary when it is a NotUsedError.
func summary(err error) string {
	if e, ok := errors.AsType[*NotUsedError](err); ok {
		return e.Summary()
	}
	return err.Error()
}
