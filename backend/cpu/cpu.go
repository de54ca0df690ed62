package cpu

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/simclr-go/simclr/blas"
	"github.com/simclr-go/simclr/internal/parallel"
	"github.com/simclr-go/simclr/internal/ref"
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

// HostData is Data: the CPU backend's buffers are host memory
// (tensor.HostMemory).
func (b *Backend) HostData(buf tensor.Buffer) []float32 { return Data(buf) }

var _ tensor.HostMemory = (*Backend)(nil)

// Backend runs tensor.Backend kernels on the host.
type Backend struct {
	// gemm multiplies matrices on the calling goroutine: the backend calls
	// it from its workers concurrently, one product per worker.
	gemm blas.Gemm
	// gemmWhy says why New chose gemm (blas.Choice.Why), for the run log.
	gemmWhy string
	// gemmKind is blas.Choice.Kind of gemm when New chose it, else "".
	gemmKind string
	threads  int
	// pool runs the kernels' parts on helpers that stay between kernels,
	// spinning for pool.Spin() before they sleep.
	pool *parallel.Pool
	// spinWhy says why spin is not the default ($SIMCLR_CPU_SPIN), or "".
	spinWhy string

	// workspaces[p] holds worker p's im2col matrix, GEMM output/gradient
	// chunk and weight-gradient partial sum; each grows to the largest size
	// seen and is then reused by every convolution.
	workspaces [][]float32
	// chunkBudget bounds each worker's im2col plus output chunk in float32
	// elements (at least one image is processed at a time). Tests lower it
	// to exercise several chunks.
	chunkBudget int
	// convSplit chooses how convolutions share work among the workers;
	// tests force each way, New leaves splitAuto.
	convSplit convSplit
	// convAlgo forces one convolution algorithm (tests, benchmarks); New
	// leaves algoAuto.
	convAlgo convAlgo
	// wino is the Winograd convolutions' scratch (guarded by mu).
	wino winoScratch
	// normSums is GroupNormBackward's per-(image, channel) float64 sums,
	// grown to the largest layer and reused (guarded by mu).
	normSums []float64
	// mu guards the workspaces, should two goroutines share a Backend.
	mu sync.Mutex
	// lossScratch is NTXent's similarity matrices, reused every step.
	lossScratch ref.NTXentWorkspace
}

// defaultChunkBudget is 8 Mi floats (32 MiB) per worker: more than the
// chunks chunkImages asks for in ResNet-18 (5 Mi floats in the last stage
// at 64 images per worker), a small share of the 2 GB target of a step.
const defaultChunkBudget = 8 << 20

// New returns a backend with one worker goroutine per CPU, each running
// its own single-threaded SGEMMs: the faster, as blas.Choose's start-up
// race finds it, of the system BLAS it accepts, set to one thread
// (OpenBLAS's own threads would spin-wait between products while the
// workers lower the next chunk, burning a third of the CPU), and the
// pure-Go kernel. $SIMCLR_GEMM pins the kind instead (blas.EnvGemm): the
// library, the built-in kernel, or per shape (each product shape to
// whichever a race at its first call found faster). Describe says which
// and why; GemmKind and SetGemmKind let a resumed run keep the choice it
// trained with.
func New() *Backend {
	kind := os.Getenv(blas.EnvGemm)
	c, err := blas.ChooseKind(1, kind)
	if err != nil {
		c = blas.Choose(1)
		c.Why = fmt.Sprintf("%s=%s not used: %v; %s", blas.EnvGemm, kind, err, c.Why)
	}
	spin, spinWhy := parallel.DefaultSpin, ""
	if v := os.Getenv(EnvSpin); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			spinWhy = fmt.Sprintf("%s=%s not used: want a duration such as 200us, or 0 for none", EnvSpin, v)
		} else {
			spin, spinWhy = d, fmt.Sprintf("%s=%s", EnvSpin, v)
		}
	}
	b := newBackend(c.Gemm, runtime.NumCPU(), spin)
	b.gemmWhy, b.gemmKind, b.spinWhy = c.Why, c.Kind, spinWhy
	return b
}

// EnvSpin names the environment variable that sets how long the workers
// wait for the next kernel, spinning, before they sleep (a Go duration;
// parallel.DefaultSpin when unset). Spinning hands a training step's
// kernels over without waking a sleeping thread; on a machine with more
// busy threads than cores, where a spinning worker keeps another process
// off its core, 0 turns it off.
const EnvSpin = "SIMCLR_CPU_SPIN"

// GemmKind says which SGEMM New chose (blas.Choice.Kind: the system
// library, the built-in kernel or per shape), "" for a backend made by
// NewWith.
func (b *Backend) GemmKind() string { return b.gemmKind }

// SetGemmKind makes the backend compute with the SGEMM of the given kind
// (blas.ChooseKind), as a run resumed in another process must to repeat
// the uninterrupted one bit for bit. It must be called before the
// backend's first product; a kind equal to GemmKind changes nothing.
func (b *Backend) SetGemmKind(kind string) error {
	if kind == b.gemmKind {
		return nil
	}
	c, err := blas.ChooseKind(1, kind)
	if err != nil {
		return err
	}
	b.gemm, b.gemmWhy, b.gemmKind = c.Gemm, c.Why, c.Kind
	return nil
}

// NewWith returns a backend using gemm for matrix products and threads
// worker goroutines (threads < 1 means 1). Convolutions and linear layers
// call gemm from several workers at once, so gemm must be safe for
// concurrent use and should be single-threaded when threads > 1.
func NewWith(gemm blas.Gemm, threads int) *Backend {
	if threads < 1 {
		threads = 1
	}
	return newBackend(gemm, threads, parallel.DefaultSpin)
}

func newBackend(gemm blas.Gemm, threads int, spin time.Duration) *Backend {
	return &Backend{gemm: gemm, threads: threads, chunkBudget: defaultChunkBudget,
		workspaces: make([][]float32, threads), pool: parallel.NewPool(threads, spin)}
}

// The backend implements every part of tensor.Backend, each in its own
// file: tensor.Device and tensor.Memory here, tensor.Vector in vector.go,
// tensor.Convolution in conv.go, tensor.Normalization in batchnorm.go and
// groupnorm.go, tensor.Layers in layers.go, tensor.ContrastiveLoss (and
// the optional tensor.DecoupledLoss) in loss.go, tensor.OptimizerSteps in
// optim.go.
var (
	_ tensor.Backend = (*Backend)(nil)
	_ tensor.Device  = (*Backend)(nil)
	_ tensor.Memory  = (*Backend)(nil)
)

func (b *Backend) Name() string { return "cpu" }

// Describe names the GEMM, why it was chosen (when New chose it), the
// worker count and their spin, e.g. "cpu: pure Go (avx512 kernel 12x32), 1
// threads [built-in kernel: ...]; 2 worker threads, one GEMM each, waiting
// 200µs for the next kernel before sleeping".
func (b *Backend) Describe() string {
	unit := "worker threads"
	if b.threads == 1 {
		unit = "worker thread"
	}
	why := ""
	if b.gemmWhy != "" {
		why = " [" + b.gemmWhy + "]"
	}
	spin := fmt.Sprintf("waiting %v for the next kernel before sleeping", b.pool.Spin())
	if b.spinWhy != "" {
		spin += " (" + b.spinWhy + ")"
	}
	return fmt.Sprintf("cpu: %s%s; %d %s, one GEMM each, %s", b.gemm.Name(), why, b.threads, unit, spin)
}

// GemmName names the matrix-multiplication library alone, for `simclr bench`.
func (b *Backend) GemmName() string { return b.gemm.Name() }

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

// grow returns worker p's workspace with at least n elements, growing it
// once. The caller holds b.mu.
func (b *Backend) grow(p, n int) []float32 {
	if cap(b.workspaces[p]) < n {
		b.workspaces[p] = make([]float32, n)
	}
	return b.workspaces[p][:n]
}

// checkLen panics unless buf holds exactly n elements; what names the
// argument in the message.
func checkLen(what string, buf []float32, n int) {
	if len(buf) != n {
		panic(fmt.Sprintf("cpu: %s has %d elements, want %d", what, len(buf), n))
	}
}
