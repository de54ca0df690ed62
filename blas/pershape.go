package blas

import (
	"fmt"
	"sync"
)

// PerShape returns a Gemm that sends each product to lib or to ours,
// whichever a short timed race on that product's shape found faster. A
// system BLAS is not fastest at every shape: its kernels may be older than
// the CPU (OpenBLAS 0.3.21 on an AVX-512 CPU told OPENBLAS_CORETYPE=Haswell
// runs 256-bit kernels where the built-in kernel uses 512-bit ones), and
// the small products of a few-image training step sit where packing and
// call overhead decide. The first call with a new shape (transposes, m, n,
// k, strides, and whether beta is zero) races the two on that call's A
// and B and a scratch C, alternating, and keeps the winner for the rest of the
// process; lib, the default, keeps every shape ours does not beat by
// perShapeMargin, so that near-ties (whose winner a noisy timing could
// flip) stay with one implementation.
//
// The choices are shared by every PerShape over the same pair of
// implementations in the process (looked up by their names), so that all
// backends of a process compute each shape with the same kernel: a run
// resumed in the same process repeats the uninterrupted one bit for bit.
// Both lib and ours must be safe for concurrent use.
func PerShape(lib, ours Gemm) Gemm {
	key := lib.Name() + "\x00" + ours.Name()
	machine.shapeMu.Lock()
	defer machine.shapeMu.Unlock()
	t, ok := machine.shapes[key]
	if !ok {
		t = &shapeTable{choice: map[shapeKey]bool{}}
		machine.shapes[key] = t
	}
	return &perShape{lib: lib, ours: ours, table: t}
}

// perShapeMargin is how much faster than lib ours must be on a shape to
// get it: its best time below perShapeMargin times lib's.
const perShapeMargin = 0.9

// maxRaceElements bounds the scratch C of a race: 16 Mi floats, 64 MiB
// (a full-width ResNet-18 training step needs 2.25 Mi at 64 images, 4.5
// Mi at 256); larger products stay with lib without a race.
const maxRaceElements = 1 << 24

// shapeKey is what the speed of a product depends on.
type shapeKey struct {
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int
	beta           bool // beta != 0: C is read
}

// shapeTable maps a shape to true when ours computes it. measure
// serialises the races, so that two workers meeting a new shape together
// do not race it twice, and guards scratch, the races' C, grown to the
// largest and reused (a C per race would be garbage that the collector,
// pacing itself on a training step's large live heap, leaves in place
// until after the memory peak).
type shapeTable struct {
	mu      sync.RWMutex
	choice  map[shapeKey]bool
	measure sync.Mutex
	scratch []float32
}

type perShape struct {
	lib, ours Gemm
	table     *shapeTable
}

func (g *perShape) Name() string {
	return fmt.Sprintf("%s and %s, the faster per product shape", g.lib.Name(), g.ours.Name())
}

func (g *perShape) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkArgs(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	key := shapeKey{transA, transB, m, n, k, lda, ldb, ldc, beta != 0}
	if g.useOurs(key, a, b) {
		g.ours.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	g.lib.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// useOurs returns the choice for key, racing the two implementations on
// the operands a and b of the call the first time.
func (g *perShape) useOurs(key shapeKey, a, b []float32) bool {
	t := g.table
	t.mu.RLock()
	ours, ok := t.choice[key]
	t.mu.RUnlock()
	if ok {
		return ours
	}
	t.measure.Lock()
	defer t.measure.Unlock()
	t.mu.RLock()
	ours, ok = t.choice[key]
	t.mu.RUnlock()
	if ok { // another worker raced it while this one waited
		return ours
	}
	if key.m*key.ldc <= maxRaceElements {
		c := growTo(&t.scratch, key.m*key.ldc)
		ours = raceShape(g.lib, g.ours, key, a, b, c)
	}
	t.mu.Lock()
	t.choice[key] = ours
	t.mu.Unlock()
	return ours
}

// Choices reports how many of the shapes met so far each implementation
// computes.
func (g *perShape) Choices() (lib, ours int) {
	g.table.mu.RLock()
	defer g.table.mu.RUnlock()
	for _, o := range g.table.choice {
		if o {
			ours++
		} else {
			lib++
		}
	}
	return lib, ours
}

// raceShape times the product of shape key on lib and on ours, with the
// call's operands a and b and the scratch c (m x ldc), one warm-up call
// each and then the best of three, alternating (the best time is the least
// disturbed by other work), and reports whether ours wins by
// perShapeMargin. Empty products stay with lib.
func raceShape(lib, ours Gemm, key shapeKey, a, b, c []float32) bool {
	if key.m == 0 || key.n == 0 || key.k == 0 {
		return false
	}
	beta := float32(0)
	if key.beta {
		beta = 1
	}
	bestLib, bestOurs := bestOfThree(lib, ours, func(g Gemm) {
		g.Sgemm(key.transA, key.transB, key.m, key.n, key.k, 1, a, key.lda, b, key.ldb, beta, c, key.ldc)
	})
	return float64(bestOurs) < perShapeMargin*float64(bestLib)
}

// growTo returns buf with n elements, reallocating when it holds fewer.
func growTo(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}

// EnvGemm names the environment variable that pins the CPU backend's SGEMM
// to one kind (KindLibrary, KindBuiltin or KindPerShape) instead of
// Choose's race: for runs that must repeat each other bit for bit on a
// machine where the race is near a tie, or to compare the kinds.
const EnvGemm = "SIMCLR_GEMM"
