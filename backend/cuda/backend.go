package cuda

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// Options configures Open.
type Options struct {
	// Precision is "tf32" (default: convolutions and linear layers may use
	// TF32 tensor cores), "fp32" (plain FMA arithmetic throughout) or
	// "bf16" (convolutions and linear layers on bf16 copies of their
	// operands with fp32 sums; everything else fp32; needs compute
	// capability 8.0 and a cuDNN with bf16 convolutions).
	Precision string
	// Device is the CUDA device ordinal.
	Device int
	// CacheDir holds compiled kernels; "" means os.UserCacheDir()/simclr/cubin
	// and "-" disables the cache.
	CacheDir string
	// ChunkBytes is the size of the device memory chunks buffers are carved
	// from; 0 means 1 GiB.
	ChunkBytes uint64
	// WorkspaceBytes bounds cuDNN's convolution workspace; 0 means a
	// sixteenth of the device memory free at Open, at least 256 MiB and at
	// most 4 GiB (defaultWorkspace).
	WorkspaceBytes uint64
	// AlgoLog, when set, receives one line per cuDNN algorithm measured for
	// each convolution shape and direction, and the one chosen: where a
	// shape is slow, it says whether the workspace bound or the precision
	// ruled out a faster algorithm.
	AlgoLog io.Writer
	// ConvAPI chooses how convolutions reach cuDNN: "legacy" (the
	// cudnnFindConvolution* algorithms), "graph" (cuDNN's backend API and
	// its engines, which hold the fast bf16 kernels; a shape and direction
	// it cannot run goes to the legacy API, the reason written to AlgoLog,
	// or to stderr without one) or "graph-only" (the same without that
	// fallback: such a shape is an error). "" means the value of the
	// SIMCLR_CUDNN_CONV_API environment variable, else "legacy".
	ConvAPI string
	// GraphTune is how many of the usable engine configs the backend API's
	// heuristics rank are timed on first use of each convolution shape and
	// direction, the fastest kept (cuDNN's benchmark of the legacy API
	// does the same for its algorithms); 1 keeps the heuristics' first
	// untimed. 0 means the SIMCLR_CUDNN_GRAPH_TUNE environment variable,
	// else 1.
	GraphTune int
}

// ValidPrecision reports whether p is an accepted Options.Precision.
func ValidPrecision(p string) error {
	switch p {
	case "", "tf32", "fp32", "bf16":
		return nil
	}
	return fmt.Errorf("unknown precision %q: use tf32, fp32 or bf16", p)
}

// Byte offsets in the small device block of scalars copied to the host.
const (
	scalarDot    = 0  // double
	scalarCount  = 8  // uint32
	scalarTrust  = 16 // float
	scalarNTXent = 32 // 3 doubles
	scalarBytes  = 64
)

// Backend is tensor.Backend on one NVIDIA GPU.
type Backend struct {
	mu   sync.Mutex
	libs *libraries
	opts Options
	tf32 bool
	bf16 bool

	dev          int32
	devName      string
	major, minor int
	sms          int
	totalMem     uint64
	ctx, stream  uintptr
	cublasHandle uintptr
	cudnnHandle  uintptr
	module       uintptr
	fns          map[string]uintptr
	kernelKind   string
	versions     Versions
	arena        *arena
	err          error // first device failure; later work is skipped
	partial      uint64
	scalars      uint64
	argVals      [32]uint64
	argPtrs      [32]uintptr
	hostScalars  [8]float64
	scratch      map[string]*scratchBuf
	convPlans    map[tensor.ConvShape]*convPlan
	ntx          map[[2]int]*ntxentPlan
	bf16Copies   map[bf16CopyKey]*bf16Copy // the bf16 weight cache (bf16cache.go)
	conversions  bf16Conversions
	convAPI      string // Options.ConvAPI as resolved by Open
	graphTune    int    // Options.GraphTune as resolved by Open
	// graphAttempts counts the backend-API plans tried (one per shape and
	// direction, made or not), convFallbacks the shapes and directions the
	// graph API left to the legacy one, convCalls the convolutions each
	// path ran.
	graphAttempts int
	convFallbacks int
	convCalls     struct{ graph, legacy int }
	graphs        map[any]*stepGraph // GraphStep's state by key (graph.go)
	capture       *captureState      // non-nil while a step is recorded
	graphStats    GraphStats
}

// Versions are the library versions in use, as the libraries report them.
type Versions struct {
	Driver, CUBLAS, CUDNN, NVRTC string
}

// The backend implements every part of tensor.Backend, each in the file
// of its kind as in backend/cpu (memory.go, vector.go, conv.go,
// batchnorm.go and groupnorm.go, layers.go, loss.go, optim.go), and the
// optional tensor.DecoupledLoss and tensor.ExternalStream.
var _ tensor.Backend = (*Backend)(nil)

// Open loads the CUDA libraries, creates a context on opts.Device, compiles
// (or loads from the cache) the kernels and returns the backend. It fails
// with an error naming what is missing on a machine without a usable GPU.
func Open(opts Options) (*Backend, error) {
	if err := ValidPrecision(opts.Precision); err != nil {
		return nil, err
	}
	if opts.Precision == "" {
		opts.Precision = "tf32"
	}
	convAPI, err := resolveConvAPI(opts.ConvAPI, os.Getenv(ConvAPIEnv))
	if err != nil {
		return nil, err
	}
	graphTune, err := resolveGraphTune(opts.GraphTune, os.Getenv(GraphTuneEnv))
	if err != nil {
		return nil, err
	}
	if opts.ChunkBytes == 0 {
		opts.ChunkBytes = 1 << 30
	}
	libs, err := loadLibraries(defaultSearchEnv())
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := &Backend{libs: libs, opts: opts, tf32: opts.Precision == "tf32", bf16: opts.Precision == "bf16",
		fns: map[string]uintptr{}, scratch: map[string]*scratchBuf{},
		convPlans: map[tensor.ConvShape]*convPlan{}, ntx: map[[2]int]*ntxentPlan{},
		bf16Copies: map[bf16CopyKey]*bf16Copy{}, convAPI: convAPI, graphTune: graphTune,
		graphs: map[any]*stepGraph{}, graphStats: GraphStats{Refused: map[any]string{}}}
	if err := b.init(); err != nil {
		b.release()
		return nil, err
	}
	if b.convAPI != ConvAPILegacy && !libs.cudnn.graph.ok() {
		if b.convAPI == ConvAPIGraphOnly {
			b.release()
			return nil, fmt.Errorf("cuda: convolution API %s: cuDNN at %s lacks the backend API (cudnnBackendCreateDescriptor): use %s, or a cuDNN 9 with libcudnn_graph",
				ConvAPIGraphOnly, libs.cudnn.lib.path, ConvAPILegacy)
		}
		fmt.Fprintf(b.convLog(), "cuda: cuDNN at %s lacks the backend API (cudnnBackendCreateDescriptor): convolutions run on its legacy API\n", libs.cudnn.lib.path)
		b.convAPI = ConvAPILegacy
	}
	if b.bf16 {
		b.enter()
		err := b.checkBF16()
		b.leave()
		if err != nil {
			b.release()
			return nil, err
		}
	}
	if b.opts.WorkspaceBytes == 0 {
		b.enter()
		free, _ := b.memInfo()
		b.leave()
		b.opts.WorkspaceBytes = defaultWorkspace(min(free, b.totalMem))
	}
	return b, nil
}

// defaultWorkspace is the convolution workspace bound on a device with
// avail bytes of memory free: a sixteenth of it, at least 256 MiB and at
// most 4 GiB. cuDNN's fastest algorithms for ResNet-18's 64-channel 32x32
// layers need 256 MiB (tensor-op implicit GEMM) to 577 MiB (non-fused
// Winograd, fp32) at 512 views and twice that at the 1,024 views of a
// 512-image step; a fixed 256 MiB bound left them out and made such a step
// several times slower. The bound is an upper limit: each convolution's
// benchmark gets only what its algorithms need (findWorkspace). A
// sixteenth of the free memory stays inside the 15% the trainer's level
// planning leaves for what it does not count, the workspace among them.
func defaultWorkspace(avail uint64) uint64 {
	return min(max(avail/16, 256<<20), 4<<30)
}

// resolveConvAPI is the convolution API of Options.ConvAPI opt, else of
// the environment variable's value env, else legacy.
func resolveConvAPI(opt, env string) (string, error) {
	if err := ValidConvAPI(opt); err != nil {
		return "", fmt.Errorf("cuda: Options.ConvAPI: %w", err)
	}
	if opt != "" {
		return opt, nil
	}
	if err := ValidConvAPI(env); err != nil {
		return "", fmt.Errorf("cuda: %s: %w", ConvAPIEnv, err)
	}
	if env != "" {
		return env, nil
	}
	return ConvAPILegacy, nil
}

// resolveGraphTune is Options.GraphTune opt when above 0, else the
// environment variable's value env (a whole number from 1), else 1.
func resolveGraphTune(opt int, env string) (int, error) {
	if opt < 0 {
		return 0, fmt.Errorf("cuda: Options.GraphTune %d: want 1 or more (0 for the default)", opt)
	}
	if opt > 0 {
		return opt, nil
	}
	if env == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(env)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("cuda: %s=%q: want a whole number of engine configs to time, 1 or more (1 takes the heuristics' first)", GraphTuneEnv, env)
	}
	return n, nil
}

func (b *Backend) init() error {
	d := &b.libs.driver
	if err := d.check("cuInit", mustCall(d.cuInit, 0)); err != nil {
		return fmt.Errorf("%w (driver found at %s but it cannot initialise: is the GPU visible, e.g. CUDA_VISIBLE_DEVICES?)", err, d.lib.path)
	}
	var count int32
	if err := d.check("cuDeviceGetCount", mustCall(d.cuDeviceGetCount, uintptr(unsafe.Pointer(&count)))); err != nil {
		return err
	}
	if b.opts.Device < 0 || b.opts.Device >= int(count) {
		return fmt.Errorf("cuda: device %d requested but %d found", b.opts.Device, count)
	}
	info, err := deviceInfo(d, b.opts.Device)
	if err != nil {
		return err
	}
	b.dev, b.devName, b.major, b.minor, b.sms, b.totalMem = info.handle, info.Name, info.Major, info.Minor, info.SMs, info.TotalMem
	if err := d.check("cuDevicePrimaryCtxRetain", mustCall(d.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&b.ctx)), uintptr(b.dev))); err != nil {
		return err
	}
	if err := d.check("cuCtxSetCurrent", mustCall(d.cuCtxSetCurrent, b.ctx)); err != nil {
		return err
	}
	if err := d.check("cuStreamCreate", mustCall(d.cuStreamCreate, uintptr(unsafe.Pointer(&b.stream)), streamNonBlocking)); err != nil {
		return err
	}
	b.versions = libraryVersions(b.libs)

	cb := &b.libs.cublas
	if err := cb.check("cublasCreate", mustCall(cb.create, uintptr(unsafe.Pointer(&b.cublasHandle)))); err != nil {
		return err
	}
	if err := cb.check("cublasSetStream", mustCall(cb.setStream, b.cublasHandle, b.stream)); err != nil {
		return err
	}
	dn := &b.libs.cudnn
	if err := dn.check("cudnnCreate", mustCall(dn.create, uintptr(unsafe.Pointer(&b.cudnnHandle)))); err != nil {
		return fmt.Errorf("%w (cuDNN at %s; its sub-libraries libcudnn_*.so.9 must sit beside it)", err, dn.lib.path)
	}
	if err := dn.check("cudnnSetStream", mustCall(dn.setStream, b.cudnnHandle, b.stream)); err != nil {
		return err
	}
	if err := b.loadKernels(); err != nil {
		return err
	}
	b.arena = newArena(256, b.opts.ChunkBytes, b.cuMemAlloc, b.memInfo)
	b.arena.onFree = b.graphFreed
	if b.partial, err = b.arena.alloc(maxReduceBlocks*2*8, "reduction partial sums"); err != nil {
		return err
	}
	if b.scalars, err = b.arena.alloc(scalarBytes, "reduction results"); err != nil {
		return err
	}
	return nil
}

// release frees what init created, in reverse order; used by Open on
// failure and by Close.
func (b *Backend) release() {
	d := &b.libs.driver
	if b.ctx != 0 {
		mustCall(d.cuCtxSetCurrent, b.ctx)
	}
	for _, g := range b.graphs {
		b.destroyGraph(g)
	}
	b.graphs = map[any]*stepGraph{}
	for _, p := range b.convPlans {
		p.destroy(&b.libs.cudnn)
	}
	b.convPlans = map[tensor.ConvShape]*convPlan{}
	b.bf16Copies = map[bf16CopyKey]*bf16Copy{} // their memory goes with the arena's
	if b.arena != nil {
		for _, c := range b.arena.chunks {
			mustCall(d.cuMemFree, uintptr(c.base))
		}
		b.arena = nil
	}
	if b.module != 0 {
		mustCall(d.cuModuleUnload, b.module)
		b.module = 0
	}
	if b.cudnnHandle != 0 {
		mustCall(b.libs.cudnn.destroy, b.cudnnHandle)
		b.cudnnHandle = 0
	}
	if b.cublasHandle != 0 {
		mustCall(b.libs.cublas.destroy, b.cublasHandle)
		b.cublasHandle = 0
	}
	if b.stream != 0 {
		mustCall(d.cuStreamDestroy, b.stream)
		b.stream = 0
	}
	if b.ctx != 0 {
		mustCall(d.cuDevicePrimaryCtxRelease, uintptr(b.dev))
		b.ctx = 0
	}
}

// Close waits for queued work and releases the device memory, handles and
// context. The Backend must not be used afterwards.
func (b *Backend) Close() error {
	b.enter()
	defer b.leave()
	err := b.syncLocked()
	b.release()
	b.err = errClosed
	return err
}

// enter makes the context current on a locked OS thread (CUDA contexts are
// per thread and goroutines move between threads); leave undoes it.
func (b *Backend) enter() {
	b.mu.Lock()
	runtime.LockOSThread()
	if b.ctx != 0 {
		b.fail(b.libs.driver.check("cuCtxSetCurrent", mustCall(b.libs.driver.cuCtxSetCurrent, b.ctx)))
	}
}

func (b *Backend) leave() {
	runtime.UnlockOSThread()
	b.mu.Unlock()
}

func (b *Backend) Name() string { return "cuda" }

func (b *Backend) Describe() string {
	return fmt.Sprintf("cuda: %s (sm_%d%d, %d SMs, %s), %s, driver %s, cuBLAS %s, cuDNN %s (%s convolution API), NVRTC %s (%s kernels)",
		b.devName, b.major, b.minor, b.sms, human(b.totalMem), b.opts.Precision,
		b.versions.Driver, b.versions.CUBLAS, b.versions.CUDNN, b.convAPI, b.versions.NVRTC, b.kernelKind)
}
