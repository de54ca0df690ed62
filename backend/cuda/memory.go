package cuda

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

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

func (b *Backend) cuMemAlloc(bytes uint64) (uint64, error) {
	if b.capture != nil {
		return 0, fmt.Errorf("cuda: allocating a %s chunk: %w", human(bytes), errCaptureAlloc)
	}
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
	if b.refuseCapture("Alloc") {
		// The memset would be recorded, not run: zeroed after the capture.
		b.capture.zero = append(b.capture.zero, [2]uint64{p, uint64(n)})
		return d
	}
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
	if b.refuseCapture("Free") {
		// Not zeroed after the capture: the address may be another's then.
		b.capture.zero = slices.DeleteFunc(b.capture.zero, func(z [2]uint64) bool { return z[0] == d.ptr })
	}
	if d.ptr != 0 && b.arena != nil {
		b.freedLocked(d)
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
	defer b.wroteLocked(dst)
	if b.err != nil || b.refuseCapture("Upload (a copy from host memory)") {
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
	if b.refuseCapture("a read of results to the host") {
		return
	}
	dr := &b.libs.driver
	b.fail(dr.check("cuMemcpyDtoHAsync", mustCall(dr.cuMemcpyDtoHAsync, uintptr(dst), uintptr(src), uintptr(bytes), b.stream)))
	b.fail(dr.check("cuStreamSynchronize", mustCall(dr.cuStreamSynchronize, b.stream)))
}

func (b *Backend) memsetLocked(p uint64, n int) {
	if n == 0 || b.err != nil {
		return
	}
	b.used(p)
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
