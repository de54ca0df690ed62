package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// Options configures Open.
type Options struct {
	// Precision is "tf32" (default: convolutions and linear layers may use
	// TF32 tensor cores) or "fp32" (plain FMA arithmetic throughout).
	Precision string
	// Device is the CUDA device ordinal.
	Device int
	// CacheDir holds compiled kernels; "" means os.UserCacheDir()/simclr/cubin
	// and "-" disables the cache.
	CacheDir string
	// ChunkBytes is the size of the device memory chunks buffers are carved
	// from; 0 means 1 GiB.
	ChunkBytes uint64
	// WorkspaceBytes bounds cuDNN's convolution workspace; 0 means 256 MiB.
	WorkspaceBytes uint64
}

// ValidPrecision reports whether p is an accepted Options.Precision.
func ValidPrecision(p string) error {
	switch p {
	case "", "tf32", "fp32":
		return nil
	}
	return fmt.Errorf("unknown precision %q: use tf32 or fp32", p)
}

// maxReduceBlocks bounds the blocks of a reduction's first pass (and the
// partial-sum scratch it needs).
const maxReduceBlocks = 1024

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

	dev           int32
	devName       string
	major, minor  int
	sms           int
	totalMem      uint64
	ctx, stream   uintptr
	cublasHandle  uintptr
	cudnnHandle   uintptr
	module        uintptr
	fns           map[string]uintptr
	kernelKind    string
	versions      Versions
	arena         *arena
	err           error // first device failure; later work is skipped
	partial       uint64
	scalars       uint64
	argVals       [32]uint64
	argPtrs       [32]uintptr
	hostScalars   [8]float64
	scratch       map[string]*scratchBuf
	convPlans     map[tensor.ConvShape]*convPlan
	workspace     uint64
	workspaceSize uint64
	ntx           map[[2]int]*ntxentPlan
}

// Versions are the library versions in use, as the libraries report them.
type Versions struct {
	Driver, CUBLAS, CUDNN, NVRTC string
}

type scratchBuf struct {
	ptr, bytes uint64
}

// devBuf is a tensor.Buffer in device memory.
type devBuf struct {
	ptr  uint64
	n    int
	root bool // from Alloc (can be freed), not a Slice view
}

func (d *devBuf) Len() int { return d.n }

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
	if opts.ChunkBytes == 0 {
		opts.ChunkBytes = 1 << 30
	}
	if opts.WorkspaceBytes == 0 {
		opts.WorkspaceBytes = 256 << 20
	}
	libs, err := loadLibraries(defaultSearchEnv())
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := &Backend{libs: libs, opts: opts, tf32: opts.Precision == "tf32",
		fns: map[string]uintptr{}, scratch: map[string]*scratchBuf{},
		convPlans: map[tensor.ConvShape]*convPlan{}, ntx: map[[2]int]*ntxentPlan{}}
	if err := b.init(); err != nil {
		b.release()
		return nil, err
	}
	return b, nil
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
	if b.partial, err = b.arena.alloc(maxReduceBlocks*2*8, "reduction partial sums"); err != nil {
		return err
	}
	if b.scalars, err = b.arena.alloc(scalarBytes, "reduction results"); err != nil {
		return err
	}
	return nil
}

// loadKernels takes the compiled kernels from the cache or compiles them,
// then loads the module and every function of kernelSigs.
func (b *Backend) loadKernels() error {
	d := &b.libs.driver
	nvMajor, nvMinor := b.libs.nvrtc.versionNumbers()
	arch := fmt.Sprintf("sm_%d%d", b.major, b.minor)
	key := cacheKey(kernelSource, arch, nvMajor, nvMinor, nvrtcOptions)
	dir := b.opts.CacheDir
	if dir == "" {
		dir = defaultCacheDir()
	} else if dir == "-" {
		dir = ""
	}
	load := func(c compiled) error {
		return d.check("cuModuleLoadData("+c.kind+")", mustCall(d.cuModuleLoadData, uintptr(unsafe.Pointer(&b.module)), uintptr(unsafe.Pointer(&c.image[0]))))
	}
	c, cached := readCache(dir, key)
	if !cached || load(c) != nil {
		var err error
		if c, err = compileKernels(&b.libs.nvrtc, kernelSource, b.major, b.minor); err != nil {
			return fmt.Errorf("compile kernels for %s with NVRTC %d.%d: %w", arch, nvMajor, nvMinor, err)
		}
		if err := load(c); err != nil {
			return err
		}
		writeCache(dir, key, c)
	}
	b.kernelKind = c.kind
	for name := range kernelSigs {
		var fn uintptr
		cname := cstr(name)
		if err := d.check("cuModuleGetFunction("+name+")", mustCall(d.cuModuleGetFunction, uintptr(unsafe.Pointer(&fn)), b.module, uintptr(unsafe.Pointer(&cname[0])))); err != nil {
			return err
		}
		b.fns[name] = fn
	}
	return nil
}

func (b *Backend) cuMemAlloc(bytes uint64) (uint64, error) {
	var p uint64
	d := &b.libs.driver
	if err := d.check(fmt.Sprintf("cuMemAlloc(%s)", human(bytes)), mustCall(d.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes))); err != nil {
		return 0, err
	}
	return p, nil
}

func (b *Backend) memInfo() (free, total uint64) {
	d := &b.libs.driver
	mustCall(d.cuMemGetInfo, uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
	return free, total
}

// release frees what init created, in reverse order; used by Open on
// failure and by Close.
func (b *Backend) release() {
	d := &b.libs.driver
	if b.ctx != 0 {
		mustCall(d.cuCtxSetCurrent, b.ctx)
	}
	for _, p := range b.convPlans {
		p.destroy(&b.libs.cudnn)
	}
	b.convPlans = map[tensor.ConvShape]*convPlan{}
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

// fail records the first device error.
func (b *Backend) fail(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

func (b *Backend) Name() string { return "cuda" }

func (b *Backend) Describe() string {
	return fmt.Sprintf("cuda: %s (sm_%d%d, %d SMs, %s), %s, driver %s, cuBLAS %s, cuDNN %s, NVRTC %s (%s kernels)",
		b.devName, b.major, b.minor, b.sms, human(b.totalMem), b.opts.Precision,
		b.versions.Driver, b.versions.CUBLAS, b.versions.CUDNN, b.versions.NVRTC, b.kernelKind)
}

// MemoryInUse reports the bytes of live buffers, the peak, and the bytes
// reserved from the device (for `simclr bench`).
func (b *Backend) MemoryInUse() (inUse, peak, reserved uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arena == nil {
		return 0, 0, 0
	}
	return b.arena.inUse, b.arena.peak, b.arena.reserved()
}

// FreeMemory is the device memory new buffers can still get: the driver's
// free memory plus what the arena holds unused. The trainer caps its
// largest level with it.
func (b *Backend) FreeMemory() (uint64, error) {
	b.enter()
	defer b.leave()
	if b.err != nil {
		return 0, b.err
	}
	free, _ := b.memInfo()
	return free + b.arena.reserved() - b.arena.inUse, nil
}

// Recover clears a recorded out-of-memory failure (ErrOutOfMemory), after
// which buffers allocated before it can be read again, so that a trainer
// can still save a checkpoint. Buffers allocated while the failure stood
// are not backed and must not be used. Any other failure (a kernel fault
// may leave the context unusable) is returned and stays recorded.
func (b *Backend) Recover() error {
	b.enter()
	defer b.leave()
	if b.err == nil {
		return nil
	}
	if !errors.Is(b.err, ErrOutOfMemory) {
		return b.err
	}
	b.err = nil
	// Work queued before the failure must have completed cleanly.
	return b.syncLocked()
}

// ---- buffers ----

func (b *Backend) buf(x tensor.Buffer) *devBuf {
	d, ok := x.(*devBuf)
	if !ok {
		panic(fmt.Sprintf("cuda: buffer of type %T is not a cuda buffer", x))
	}
	return d
}

// ptr is the device address of x, or 0 for a nil buffer.
func (b *Backend) ptr(x tensor.Buffer) uint64 {
	if x == nil {
		return 0
	}
	return b.buf(x).ptr
}

func (b *Backend) Alloc(n int) tensor.Buffer {
	if n < 0 {
		panic(fmt.Sprintf("cuda: Alloc(%d)", n))
	}
	b.enter()
	defer b.leave()
	d := &devBuf{n: n, root: true}
	if b.err != nil {
		return d
	}
	p, err := b.arena.alloc(uint64(n)*4, fmt.Sprintf("a buffer of %d floats", n))
	if err != nil {
		b.fail(err)
		return d
	}
	d.ptr = p
	b.memsetLocked(p, n)
	return d
}

func (b *Backend) Free(x tensor.Buffer) {
	d := b.buf(x)
	if !d.root {
		panic("cuda: Free of a Slice view")
	}
	b.enter()
	defer b.leave()
	if d.ptr != 0 && b.arena != nil {
		b.arena.free(d.ptr)
	}
	d.ptr, d.n = 0, 0
}

func (b *Backend) Slice(x tensor.Buffer, off, n int) tensor.Buffer {
	d := b.buf(x)
	if off < 0 || n < 0 || off+n > d.n {
		panic(fmt.Sprintf("cuda: Slice(off=%d, n=%d) of a buffer of %d", off, n, d.n))
	}
	return &devBuf{ptr: d.ptr + uint64(off)*4, n: n}
}

func (b *Backend) Upload(dst tensor.Buffer, src []float32) {
	d := b.buf(dst)
	if len(src) != d.n {
		panic(fmt.Sprintf("cuda: Upload of %d floats into a buffer of %d", len(src), d.n))
	}
	if d.n == 0 {
		return
	}
	b.enter()
	defer b.leave()
	if b.err != nil {
		return
	}
	dr := &b.libs.driver
	// From pageable memory the driver waits for the stream, then copies
	// src into its staging area before returning (CUDA's documented
	// behaviour of asynchronous copies from pageable memory), so src may be
	// reused at once, as Upload promises.
	b.fail(dr.check("cuMemcpyHtoDAsync", mustCall(dr.cuMemcpyHtoDAsync, uintptr(d.ptr), uintptr(unsafe.Pointer(&src[0])), uintptr(d.n*4), b.stream)))
}

func (b *Backend) Download(dst []float32, src tensor.Buffer) {
	s := b.buf(src)
	if len(dst) != s.n {
		panic(fmt.Sprintf("cuda: Download of a buffer of %d floats into %d", s.n, len(dst)))
	}
	if s.n == 0 {
		return
	}
	b.enter()
	defer b.leave()
	if b.err != nil {
		return
	}
	b.copyToHost(unsafe.Pointer(&dst[0]), s.ptr, s.n*4)
	runtime.KeepAlive(dst)
}

// copyToHost copies bytes from the device to host memory and waits.
func (b *Backend) copyToHost(dst unsafe.Pointer, src uint64, bytes int) {
	dr := &b.libs.driver
	b.fail(dr.check("cuMemcpyDtoHAsync", mustCall(dr.cuMemcpyDtoHAsync, uintptr(dst), uintptr(src), uintptr(bytes), b.stream)))
	b.fail(dr.check("cuStreamSynchronize", mustCall(dr.cuStreamSynchronize, b.stream)))
}

func (b *Backend) Sync() error {
	b.enter()
	defer b.leave()
	return b.syncLocked()
}

func (b *Backend) syncLocked() error {
	if b.err == nil && b.stream != 0 {
		dr := &b.libs.driver
		b.fail(dr.check("cuStreamSynchronize", mustCall(dr.cuStreamSynchronize, b.stream)))
	}
	return b.err
}

func (b *Backend) memsetLocked(p uint64, n int) {
	if n == 0 || b.err != nil {
		return
	}
	dr := &b.libs.driver
	b.fail(dr.check("cuMemsetD32Async", mustCall(dr.cuMemsetD32Async, uintptr(p), 0, uintptr(n), b.stream)))
}

// scratchLocked returns a device block of at least bytes named name, grown
// (never shrunk) on demand. Everything runs on one stream, so reusing or
// replacing it never races with work already queued.
func (b *Backend) scratchLocked(name string, bytes uint64) uint64 {
	s := b.scratch[name]
	if s != nil && s.bytes >= bytes {
		return s.ptr
	}
	if s != nil {
		b.arena.free(s.ptr)
		delete(b.scratch, name)
	}
	p, err := b.arena.alloc(bytes, name)
	if err != nil {
		b.fail(err)
		return 0
	}
	b.scratch[name] = &scratchBuf{p, bytes}
	return p
}

// ---- kernel launches ----

// gridFor is the grid of a grid-stride element-wise kernel over n items.
func gridFor(n, sms int) int {
	g := (n + blockSize - 1) / blockSize
	limit := max(sms, 1) * 32
	return max(1, min(g, limit))
}

// reduceGrid is the number of partial sums of a two-pass reduction.
func reduceGrid(n int) int {
	return max(1, min((n+blockSize*4-1)/(blockSize*4), maxReduceBlocks))
}

// launch queues kernel name on the stream with a (gx, gy) grid of
// blockSize threads. args must match kernelSigs[name]: *devBuf, uint64
// (device address) or nil for p, int or bool for i, float32 for f.
func (b *Backend) launch(name string, gx, gy int, args ...any) {
	sig, ok := kernelSigs[name]
	if !ok {
		panic("cuda: unknown kernel " + name)
	}
	if len(args) != len(sig) {
		panic(fmt.Sprintf("cuda: kernel %s takes %d arguments (%s), got %d", name, len(sig), sig, len(args)))
	}
	if b.err != nil {
		return
	}
	for i, a := range args {
		var v uint64
		kind := sig[i]
		switch x := a.(type) {
		case *devBuf:
			if kind != 'p' {
				panic(fmt.Sprintf("cuda: kernel %s argument %d is %c, got a buffer", name, i, kind))
			}
			v = x.ptr
		case uint64:
			if kind != 'p' {
				panic(fmt.Sprintf("cuda: kernel %s argument %d is %c, got an address", name, i, kind))
			}
			v = x
		case nil:
			if kind != 'p' {
				panic(fmt.Sprintf("cuda: kernel %s argument %d is %c, got nil", name, i, kind))
			}
		case int:
			if kind != 'i' || x > math.MaxInt32 || x < math.MinInt32 {
				panic(fmt.Sprintf("cuda: kernel %s argument %d is %c, got int %d", name, i, kind, x))
			}
			v = uint64(uint32(int32(x)))
		case bool:
			if kind != 'i' {
				panic(fmt.Sprintf("cuda: kernel %s argument %d is %c, got bool", name, i, kind))
			}
			if x {
				v = 1
			}
		case float32:
			if kind != 'f' {
				panic(fmt.Sprintf("cuda: kernel %s argument %d is %c, got float32", name, i, kind))
			}
			v = uint64(math.Float32bits(x))
		default:
			panic(fmt.Sprintf("cuda: kernel %s argument %d has unsupported type %T", name, i, a))
		}
		b.argVals[i] = v
		b.argPtrs[i] = uintptr(unsafe.Pointer(&b.argVals[i]))
	}
	dr := &b.libs.driver
	// cuLaunchKernel reads the arguments before it returns, so the one
	// argument block of the Backend serves every launch.
	r := mustCall(dr.cuLaunchKernel, b.fns[name], uintptr(gx), uintptr(gy), 1, blockSize, 1, 1, 0, b.stream,
		uintptr(unsafe.Pointer(&b.argPtrs[0])), 0)
	b.fail(dr.check("cuLaunchKernel("+name+")", r))
}
