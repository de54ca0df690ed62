package cuda

import "github.com/simclr-go/simclr/tensor"

// The bf16 weight cache. A layer's weight changes once per optimiser step
// but is read by every convolution and matrix product of the step (the
// forward pass and the backward pass's data gradient, at every level of a
// multilevel step), so its bf16 copy (for a convolution the NHWC, KRSC
// filter) is made once and kept until the weight is written. Every method
// of the backend that writes a buffer reports the buffer (wroteLocked), and
// a copy whose source range it overlaps is marked stale, to be remade on
// its next use; a freed range drops its copies. Work the backend cannot see
// (a library queueing its own kernels through RunExternal) and a recovered
// failure, after which queued conversions may not have run, mark every
// copy stale. Weights may be views into one flat parameter buffer, so
// staleness goes by address range, not by buffer.

// bf16CopyKey names one bf16 copy: the fp32 source range and, for an NHWC
// copy, the (rows, c, hw) shape it is transposed as (c == 0: a plain copy
// of n values in their order).
type bf16CopyKey struct {
	src   uint64
	n     int
	c, hw int
}

// bf16Copy is a bf16 copy kept across calls; ptr is its own device block.
type bf16Copy struct {
	ptr   uint64
	valid bool
}

// bf16Conversions counts the launches of the conversion kernels: fp32 to
// bf16 (narrow) and bf16 to fp32 (widen). Tests hold a training step to
// its expected count, so that a conversion per call of what the cache
// keeps cannot come back unnoticed.
type bf16Conversions struct {
	narrow, widen int
}

// cachedBF16 returns the bf16 copy of the n fp32 values at src: when c > 0
// the NHWC copy of the (n/(c*hw), c, hw) array, else a plain one. It is
// made (a conversion) only when absent or stale.
func (b *Backend) cachedBF16(src uint64, n, c, hw int) uint64 {
	key := bf16CopyKey{src, n, c, hw}
	cp := b.bf16Copies[key]
	if cp == nil {
		p, err := b.arena.alloc(uint64(n)*2, "the bf16 copy of a weight")
		if err != nil {
			b.fail(err)
			return 0
		}
		cp = &bf16Copy{ptr: p}
		b.bf16Copies[key] = cp
	}
	// A step being recorded converts every copy it uses: the graph is
	// replayed after the weights change, and the conversion must be in it.
	if cp.valid && b.capture == nil {
		return cp.ptr
	}
	if c > 0 {
		b.narrowNHWC(src, cp.ptr, n/(c*hw), c, hw)
	} else {
		b.narrow(src, cp.ptr, n)
	}
	// A conversion skipped after a failure must not count as made.
	cp.valid = b.err == nil
	return cp.ptr
}

// wroteLocked marks stale the bf16 copies of every range the buffers
// (nil ones skipped) overlap; each method that writes a buffer calls it.
func (b *Backend) wroteLocked(bufs ...tensor.Buffer) {
	if len(b.bf16Copies) == 0 && b.capture == nil {
		return
	}
	for _, x := range bufs {
		if x == nil {
			continue
		}
		d := b.buf(x)
		b.staleRangeLocked(d.ptr, d.ptr+uint64(d.n)*4)
	}
}

// staleRangeLocked marks stale the bf16 copies of [lo, hi); while a step
// is recorded it also notes the range, which each replay marks again.
func (b *Backend) staleRangeLocked(lo, hi uint64) {
	if b.capture != nil {
		b.capture.wrote = append(b.capture.wrote, [2]uint64{lo, hi})
	}
	for k, cp := range b.bf16Copies {
		if k.src < hi && lo < k.src+uint64(k.n)*4 {
			cp.valid = false
		}
	}
}

// freedLocked drops the bf16 copies of the range of d, which Free is
// about to release: a later buffer at the same address is another tensor.
func (b *Backend) freedLocked(d *devBuf) {
	lo, hi := d.ptr, d.ptr+uint64(d.n)*4
	for k, cp := range b.bf16Copies {
		if k.src < hi && lo < k.src+uint64(k.n)*4 {
			b.arena.free(cp.ptr)
			delete(b.bf16Copies, k)
		}
	}
}

// staleAllLocked marks every bf16 copy stale.
func (b *Backend) staleAllLocked() {
	for _, cp := range b.bf16Copies {
		cp.valid = false
	}
}
