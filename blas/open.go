package blas

import (
	"errors"
	"fmt"
	"os"
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
	// Kind says which it is: KindLibrary, KindBuiltin or KindPerShape, for
	// ChooseKind to make the same choice again in another process.
	Kind string
	// Why says why this implementation: the symbol that identified the
	// library, the timed checks' figures, or why no system library is used.
	Why string
}

// The kinds of SGEMM Choose and ChooseKind return.
const (
	KindLibrary  = "library"   // the system BLAS
	KindBuiltin  = "built-in"  // the pure-Go kernel
	KindPerShape = "per-shape" // each shape to the faster of the two (PerShape)
)

// Choose returns the faster of a system BLAS known to be fast and the
// built-in kernel, each with threads threads, as a short timed race on
// the products of a few-image training step finds them (stepRaceShapes).
// The library keeps near-ties: the built-in kernel must take less than
// builtinMargin of its time. The race is what makes the choice, not the
// library's name: a library may run kernels older than the CPU (OpenBLAS
// told OPENBLAS_CORETYPE=Haswell on an AVX-512 CPU) or lose on the small
// products of the levels MLMC queries most.
//
// The choice is made once per process for each thread count and library
// override (machine.choices): the kNN monitor and the probe, which open a
// BLAS at every evaluation, reuse it rather than load and time the
// library again.
func Choose(threads int) Choice {
	key := chooseKey{threads: threads, library: os.Getenv(EnvLibrary)}
	machine.choiceMu.Lock()
	defer machine.choiceMu.Unlock()
	if c, ok := machine.choices[key]; ok {
		return c
	}
	c := choose(threads)
	machine.choices[key] = c
	return c
}

// choose is Choose without the cache.
func choose(threads int) Choice {
	g, why, err := systemBLAS(threads)
	if err != nil {
		return Choice{Gemm: PureGo(threads), Kind: KindBuiltin, Why: "built-in kernel: " + summary(err)}
	}
	if bestKernel().name == genericKernel.name {
		// The portable kernel is an order of magnitude behind any library
		// vet accepts.
		return Choice{Gemm: g, Kind: KindLibrary, Why: why}
	}
	return chooseFaster(g, why, PureGo(threads))
}

// chooseFaster races lib (accepted for the reason why) against the
// built-in ours on stepRaceShapes and returns the choice. The race runs
// once per process and pair of implementations (machine.races).
func chooseFaster(lib Gemm, why string, ours Gemm) Choice {
	key := lib.Name() + "\x00" + ours.Name()
	machine.raceMu.Lock()
	r, ok := machine.races[key]
	if !ok {
		r.lib, r.ours = raceStep(lib, ours)
		machine.races[key] = r
	}
	machine.raceMu.Unlock()
	libTime, oursTime := r.lib, r.ours
	figures := fmt.Sprintf("a training step's products took %s with the built-in kernel and %s with the library",
		oursTime.Round(10*time.Microsecond), libTime.Round(10*time.Microsecond))
	if float64(oursTime) < builtinMargin*float64(libTime) {
		return Choice{Gemm: ours, Kind: KindBuiltin, Why: "built-in kernel: " + figures + " (" + why + ")"}
	}
	return Choice{Gemm: lib, Kind: KindLibrary, Why: why + "; " + figures}
}

// ChooseKind returns the SGEMM of the given kind (as Choice.Kind), so that
// a resumed run computes with what it trained with; an empty kind is
// Choose. A library that can no longer be loaded is an error.
func ChooseKind(threads int, kind string) (Choice, error) {
	switch kind {
	case "":
		return Choose(threads), nil
	case KindBuiltin:
		return Choice{Gemm: PureGo(threads), Kind: KindBuiltin, Why: "built-in kernel, as asked"}, nil
	case KindLibrary, KindPerShape:
		if kind == KindPerShape && bestKernel().name == genericKernel.name {
			return Choice{}, fmt.Errorf("the %s SGEMM needs a SIMD built-in kernel, and this CPU runs the portable one", kind)
		}
		g, why, err := systemBLAS(threads)
		if err != nil {
			return Choice{}, fmt.Errorf("the %s SGEMM asked for is unavailable: %w", kind, err)
		}
		if kind == KindLibrary {
			return Choice{Gemm: g, Kind: KindLibrary, Why: why + ", as asked"}, nil
		}
		return Choice{Gemm: PerShape(g, PureGo(threads)), Kind: KindPerShape, Why: why + ", each product shape raced against the built-in kernel, as asked"}, nil
	default:
		return Choice{}, fmt.Errorf("unknown SGEMM kind %q (want %s, %s or %s)", kind, KindLibrary, KindBuiltin, KindPerShape)
	}
}

// builtinMargin is how much faster than the library the built-in kernel
// must be to be chosen: its time below builtinMargin times the library's,
// so that near-ties, whose winner a noisy timing could flip, keep the
// library.
const builtinMargin = 0.9

// stepRaceShapes are the race's products: the per-worker SGEMMs of a
// full-width ResNet-18 step on 8 images (Winograd point products of the
// first and last stages, forward, backward data and weight gradient, and
// the start-up check's im2col product), about 150 MFLOP in all.
var stepRaceShapes = []struct {
	transA, transB bool
	m, n, k        int
}{
	{false, false, 64, 512, 64},
	{true, false, 64, 512, 64},
	{false, true, 64, 64, 512},
	{false, false, 512, 64, 512},
	{false, true, 128, 128, 512},
	{false, false, checkM, checkN, checkK},
}

// raceStep times every product of stepRaceShapes on lib and on ours (best
// of three, alternating) and returns the sums.
func raceStep(lib, ours Gemm) (libTime, oursTime time.Duration) {
	var x, y, z []float32
	for _, s := range stepRaceShapes {
		x = growTo(&x, s.m*s.k)
		y = growTo(&y, s.k*s.n)
		z = growTo(&z, s.m*s.n)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		for i := range y {
			y[i] = float32(i%5) - 2
		}
		lda, ldb := s.k, s.n
		if s.transA {
			lda = s.m
		}
		if s.transB {
			ldb = s.k
		}
		l, o := bestOfThree(lib, ours, func(g Gemm) {
			g.Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n)
		})
		libTime += l
		oursTime += o
	}
	return libTime, oursTime
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
