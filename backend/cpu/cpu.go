package cpu

import (
	"fmt"

	"runtime"
	"sync"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/tensor"
)

// buffer is the CPU tensor.Buffer: a float32 slice. Slice views are
// sub-slices of the same backing array.
type buffer struct {
	data []float32
}

func (b *buffer) Len() int { return len(b.data) }

// Data returns the float32 slice behind a buffer of this backend (a view
// returns its window of the parent). It panics on a buffer of another
// backend, which is a programmer error.
func Data(b tensor.Buffer) []float32 {
	cb, ok := b.(*buffer)
	if !ok {
		panic(fmt.Sprintf("cpu: buffer of type %T is not a CPU buffer", b))
	}
	return cb.data
}

// Backend runs tensor.Backend kernels on the host.
type Backend struct {
	gemm    blas.Gemm
	threads int

	// workspace holds the im2col matrix and the GEMM output/gradient
	// chunk of a convolution; it grows to the largest chunk seen and is
	// then reused by every convolution.
	workspace []float32
	// chunkBudget bounds the workspace in float32 elements: a convolution
	// processes as many images per GEMM as fit (at least one). Tests lower
	// it to exercise several chunks.
	chunkBudget int
	mu          sync.Mutex
}

// defaultChunkBudget is 16 Mi floats (64 MiB): large enough that the
// 4x4 last stage of ResNet-18 at 128 views runs as one GEMM, small enough
// to stay a small share of the 2 GB target of a training step.
const defaultChunkBudget = 16 << 20

// New returns a backend using blas.Open() (OpenBLAS when present) and one
// goroutine per CPU.
func New() *Backend {
	return NewWith(blas.Open(), runtime.NumCPU())
}

// NewWith returns a backend using gemm for matrix products and threads
// goroutines for the element-wise kernels (threads < 1 means 1).
func NewWith(gemm blas.Gemm, threads int) *Backend {
	if threads < 1 {
		threads = 1
	}
	return &Backend{gemm: gemm, threads: threads, chunkBudget: defaultChunkBudget}
}

var _ tensor.Backend = (*Backend)(nil)

func (b *Backend) Name() string { return "cpu" }

func (b *Backend) Describe() string {
	unit := "threads"
	if b.threads == 1 {
		unit = "thread"
	}
	return fmt.Sprintf("cpu: %s, %d %s", b.gemm.Name(), b.threads, unit)
}

func (b *Backend) Alloc(n int) tensor.Buffer {
	if n < 0 {
		panic(fmt.Sprintf("cpu: Alloc of %d elements", n))
	}
	return &buffer{data: make([]float32, n)}
}

// Free drops the reference to the storage so the garbage collector can
// reclaim it once no view refers to it either.
func (b *Backend) Free(buf tensor.Buffer) {
	if cb, ok := buf.(*buffer); ok {
		cb.data = nil
	}
}

func (b *Backend) Slice(buf tensor.Buffer, off, n int) tensor.Buffer {
	d := Data(buf)
	if off < 0 || n < 0 || off+n > len(d) {
		panic(fmt.Sprintf("cpu: Slice [%d:%d] of a buffer of %d elements", off, off+n, len(d)))
	}
	return &buffer{data: d[off : off+n : off+n]}
}

func (b *Backend) Upload(dst tensor.Buffer, src []float32) {
	d := Data(dst)
	if len(src) != len(d) {
		panic(fmt.Sprintf("cpu: Upload of %d elements into a buffer of %d", len(src), len(d)))
	}
	copy(d, src)
}

func (b *Backend) Download(dst []float32, src tensor.Buffer) {
	s := Data(src)
	if len(dst) != len(s) {
		panic(fmt.Sprintf("cpu: Download of a buffer of %d elements into %d", len(s), len(dst)))
	}
	copy(dst, s)
}

// Sync has nothing to wait for: every kernel has finished when it returns.
func (b *Backend) Sync() error { return nil }

// grow returns the workspace with at least n elements, growing it once.
func (b *Backend) grow(n int) []float32 {
	if cap(b.workspace) < n {
		b.workspace = make([]float32, n)
	}
	return b.workspace[:n]
}

// checkLen panics unless buf holds exactly n elements; what names the
// argument in the message.
func checkLen(what string, buf []float32, n int) {
	if len(buf) != n {
		panic(fmt.Sprintf("cpu: %s has %d elements, want %d", what, len(buf), n))
	}
}
