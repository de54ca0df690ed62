package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fakeDevice hands out chunks from a fake address space of capacity bytes.
type fakeDevice struct {
	next, capacity, used uint64
	grows                int
}

func (f *fakeDevice) grow(bytes uint64) (uint64, error) {
	if f.used+bytes > f.capacity {
		return 0, errors.New("CUDA_ERROR_OUT_OF_MEMORY")
	}
	base := f.next
	f.next += (bytes + 4095) &^ 4095
	f.used += bytes
	f.grows++
	return base, nil
}

func newTestArena(capacity, chunk uint64) (*arena, *fakeDevice) {
	f := &fakeDevice{next: 1 << 20, capacity: capacity}
	return newArena(256, chunk, f.grow, func() (uint64, uint64) { return capacity - f.used, capacity }), f
}

func TestArenaAlignmentAndDisjoint(t *testing.T) {
	a, _ := newTestArena(1<<30, 1<<20)
	type got struct{ addr, size uint64 }
	var all []got
	for _, size := range []uint64{1, 4, 255, 256, 257, 1000, 4096, 3, 70000} {
		p, err := a.alloc(size, "test")
		if err != nil {
			t.Fatal(err)
		}
		if p%256 != 0 {
			t.Errorf("alloc(%d) = %#x not 256-aligned", size, p)
		}
		for _, o := range all {
			if p < o.addr+o.size && o.addr < p+size {
				t.Errorf("alloc(%d) = %#x overlaps [%#x, +%d)", size, p, o.addr, o.size)
			}
		}
		all = append(all, got{p, size})
	}
}

func TestArenaReuseAndCoalesce(t *testing.T) {
	a, dev := newTestArena(1<<30, 1<<20)
	x, _ := a.alloc(1000, "x")
	y, _ := a.alloc(1000, "y")
	z, _ := a.alloc(1000, "z")
	a.free(y)
	y2, _ := a.alloc(1024, "y2")
	if y2 != y {
		t.Errorf("freed span not reused: got %#x, want %#x", y2, y)
	}
	a.free(x)
	a.free(y2)
	a.free(z)
	if a.inUse != 0 {
		t.Errorf("in use %d after freeing all", a.inUse)
	}
	// After coalescing, the whole chunk is one span again.
	c := a.chunks[0]
	if len(c.free) != 1 || c.free[0] != (span{0, c.size}) {
		t.Errorf("free list not coalesced: %+v", c.free)
	}
	big, err := a.alloc(1<<20, "whole chunk")
	if err != nil || big != c.base || dev.grows != 1 {
		t.Errorf("whole-chunk alloc = %#x, %v after %d grows; want %#x with no new chunk", big, err, dev.grows, c.base)
	}
	if a.peak < 3*1024 {
		t.Errorf("peak %d below the 3 KiB once in use", a.peak)
	}
}

func TestArenaLargeRequestGetsOwnChunk(t *testing.T) {
	a, dev := newTestArena(1<<30, 1<<20)
	p, err := a.alloc(5<<20, "big")
	if err != nil || dev.grows != 1 || a.chunks[0].size != 5<<20 || p != a.chunks[0].base {
		t.Fatalf("big alloc: %#x %v grows=%d chunks=%+v", p, err, dev.grows, a.chunks)
	}
}

func TestArenaFallsBackToSmallerChunk(t *testing.T) {
	// 3 MiB device, 2 MiB chunks: the second chunk must be exactly sized.
	a, _ := newTestArena(3<<20, 2<<20)
	if _, err := a.alloc(2<<20, "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.alloc(512<<10, "second"); err != nil {
		t.Fatalf("second alloc failed although 1 MiB is free: %v", err)
	}
}

func TestArenaOutOfMemoryMessage(t *testing.T) {
	a, _ := newTestArena(4<<20, 1<<20)
	if _, err := a.alloc(3<<20, "x"); err != nil {
		t.Fatal(err)
	}
	_, err := a.alloc(2<<20, "the activations of 1024 views")
	if err == nil {
		t.Fatal("allocation beyond capacity succeeded")
	}
	for _, want := range []string{"out of GPU memory", "2.0 MiB", "the activations of 1024 views", "device free 1.0 MiB of 4.0 MiB", "CUDA_ERROR_OUT_OF_MEMORY", "smaller batch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("error %q does not wrap ErrOutOfMemory", err)
	}
}

// Recover clears an out-of-memory failure (the device is still usable) and
// only that: a kernel fault stays recorded and is returned.
func TestRecoverClearsOnlyOutOfMemory(t *testing.T) {
	oom := fmt.Errorf("cuda: out of GPU memory allocating 2 GiB: %w", ErrOutOfMemory)
	fault := errors.New("cuda: cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS")
	tests := []struct {
		name    string
		failure error
		want    error // Recover's result and what stays recorded
	}{
		{"no failure", nil, nil},
		{"out of memory", oom, nil},
		{"kernel fault", fault, fault},
	}
	for _, tc := range tests {
		b := &Backend{err: tc.failure}
		if got := b.Recover(); got != tc.want || b.err != tc.want {
			t.Errorf("%s: Recover() = %v, recorded %v; want %v", tc.name, got, b.err, tc.want)
		}
	}
}

func TestArenaDoubleFreePanics(t *testing.T) {
	a, _ := newTestArena(1<<30, 1<<20)
	p, _ := a.alloc(10, "x")
	a.free(p)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "not a live allocation") {
			t.Fatalf("double free: recover() = %v", r)
		}
	}()
	a.free(p)
}
