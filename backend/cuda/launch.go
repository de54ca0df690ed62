package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// maxReduceBlocks bounds the blocks of a reduction's first pass (and the
// partial-sum scratch it needs).
const maxReduceBlocks = 1024

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
		if kind == 'p' {
			b.used(v)
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
