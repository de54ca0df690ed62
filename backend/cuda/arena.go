package cuda

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// arena carves device memory out of a few large chunks so that buffers cost
// no cuMemAlloc (which synchronises the device) once a training step has
// been planned. Each chunk keeps a free list of spans sorted by offset;
// allocation is first fit, freeing coalesces with both neighbours.
//
// arena knows nothing of CUDA: grow obtains a chunk (cuMemAlloc in
// production, a counter in tests) and memInfo describes the device for the
// out-of-memory message.
type arena struct {
	align     uint64
	chunkSize uint64
	grow      func(bytes uint64) (base uint64, err error)
	memInfo   func() (free, total uint64)

	// onFree, when set, is told of each allocation about to be freed
	// (the backend drops the step graphs that use it).
	onFree func(addr uint64)

	chunks []*chunk
	live   map[uint64]liveSpan // address -> allocation
	inUse  uint64
	peak   uint64
}

type chunk struct {
	base, size uint64
	free       []span // sorted by off, non-adjacent
}

type span struct{ off, size uint64 }

type liveSpan struct {
	c    *chunk
	size uint64
}

// ErrOutOfMemory marks an allocation the device refused. It leaves the
// device usable (nothing ran with the missing buffer: the backend skips
// work after a failure), so Backend.Recover may clear it.
var ErrOutOfMemory = errors.New("out of device memory")

func newArena(align, chunkSize uint64, grow func(uint64) (uint64, error), memInfo func() (uint64, uint64)) *arena {
	if align == 0 || align&(align-1) != 0 {
		panic(fmt.Sprintf("cuda: arena alignment %d is not a power of two", align))
	}
	return &arena{align: align, chunkSize: chunkSize, grow: grow, memInfo: memInfo, live: map[uint64]liveSpan{}}
}

func (a *arena) roundUp(n uint64) uint64 { return (n + a.align - 1) &^ (a.align - 1) }

// alloc returns the address of bytes bytes aligned to a.align. what names
// the allocation for the out-of-memory error.
func (a *arena) alloc(bytes uint64, what string) (uint64, error) {
	size := a.roundUp(max(bytes, 1))
	for _, c := range a.chunks {
		if addr, ok := c.take(size); ok {
			a.note(addr, c, size)
			return addr, nil
		}
	}
	chunkBytes := max(a.chunkSize, size)
	base, err := a.grow(chunkBytes)
	if err != nil && chunkBytes > size && !errors.Is(err, ErrDeviceFault) && !errors.Is(err, errCaptureAlloc) {
		// A smaller chunk may still fit.
		chunkBytes = size
		base, err = a.grow(chunkBytes)
	}
	if errors.Is(err, ErrDeviceFault) || errors.Is(err, errCaptureAlloc) {
		// An earlier fault surfacing here, or a step graph being recorded,
		// not a lack of memory: no smaller batch helps, and the failure
		// must not be recovered.
		return 0, fmt.Errorf("cuda: allocating %s for %s: %w", human(bytes), what, err)
	}
	if err != nil {
		msg := fmt.Sprintf("cuda: out of GPU memory allocating %s for %s (buffers in use %s, peak %s, reserved %s in %d chunks",
			human(bytes), what, human(a.inUse), human(a.peak), human(a.reserved()), len(a.chunks))
		if a.memInfo != nil {
			free, total := a.memInfo()
			msg += fmt.Sprintf("; device free %s of %s", human(free), human(total))
		}
		return 0, fmt.Errorf("%s): %w (%w); use a smaller batch (lower --level), a narrower model, or --device cpu", msg, ErrOutOfMemory, err)
	}
	if base%a.align != 0 {
		panic(fmt.Sprintf("cuda: chunk base %#x not aligned to %d", base, a.align))
	}
	c := &chunk{base: base, size: chunkBytes, free: []span{{0, chunkBytes}}}
	a.chunks = append(a.chunks, c)
	addr, _ := c.take(size)
	a.note(addr, c, size)
	return addr, nil
}

func (a *arena) note(addr uint64, c *chunk, size uint64) {
	a.live[addr] = liveSpan{c, size}
	a.inUse += size
	a.peak = max(a.peak, a.inUse)
}

// free returns an allocation; freeing an address that is not live is a
// programmer error.
func (a *arena) free(addr uint64) {
	l, ok := a.live[addr]
	if !ok {
		panic(fmt.Sprintf("cuda: free of %#x, which is not a live allocation (double free or a Slice view?)", addr))
	}
	if a.onFree != nil {
		a.onFree(addr)
	}
	delete(a.live, addr)
	a.inUse -= l.size
	l.c.give(addr-l.c.base, l.size)
}

// owners returns, sorted and without repeats, the addresses of the live
// allocations that hold the given device addresses; an address outside
// every allocation (none should be) is left out.
func (a *arena) owners(addrs []uint64) []uint64 {
	bases := make([]uint64, 0, len(a.live))
	for base := range a.live {
		bases = append(bases, base)
	}
	slices.Sort(bases)
	var out []uint64
	for _, p := range addrs {
		i, found := slices.BinarySearch(bases, p)
		if !found {
			i--
		}
		if i < 0 || p >= bases[i]+a.live[bases[i]].size {
			continue
		}
		out = append(out, bases[i])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (a *arena) reserved() uint64 {
	var s uint64
	for _, c := range a.chunks {
		s += c.size
	}
	return s
}

// take removes size bytes from the first free span that holds them.
func (c *chunk) take(size uint64) (uint64, bool) {
	for i, s := range c.free {
		if s.size < size {
			continue
		}
		addr := c.base + s.off
		if s.size == size {
			c.free = append(c.free[:i], c.free[i+1:]...)
		} else {
			c.free[i] = span{s.off + size, s.size - size}
		}
		return addr, true
	}
	return 0, false
}

// give puts [off, off+size) back, merging with adjacent free spans.
func (c *chunk) give(off, size uint64) {
	i := sort.Search(len(c.free), func(i int) bool { return c.free[i].off > off })
	c.free = append(c.free, span{})
	copy(c.free[i+1:], c.free[i:])
	c.free[i] = span{off, size}
	if i+1 < len(c.free) && c.free[i].off+c.free[i].size == c.free[i+1].off {
		c.free[i].size += c.free[i+1].size
		c.free = append(c.free[:i+1], c.free[i+2:]...)
	}
	if i > 0 && c.free[i-1].off+c.free[i-1].size == c.free[i].off {
		c.free[i-1].size += c.free[i].size
		c.free = append(c.free[:i], c.free[i+1:]...)
	}
}

// human formats a byte count with a binary unit.
func human(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
