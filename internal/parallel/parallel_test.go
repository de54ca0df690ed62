package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForCoversTheRangeOnce checks, for each n and requested part count,
// that every index is visited exactly once, that part p gets
// [p*n/parts, (p+1)*n/parts) with parts clamped to [1, n], and the count
// returned.
func TestForCoversTheRangeOnce(t *testing.T) {
	checkCovers(t, For)
}

// TestPoolCoversTheRangeOnce: a Pool's For splits as For does, with
// fewer, as many and more parts than it has goroutines, and after Close.
func TestPoolCoversTheRangeOnce(t *testing.T) {
	p := NewPool(3, DefaultSpin)
	checkCovers(t, p.For)
	p.Close()
	checkCovers(t, p.For)
}

func checkCovers(t *testing.T, forFn func(n, parts int, fn func(part, lo, hi int)) int) {
	t.Helper()
	for _, tc := range []struct{ n, parts, want int }{
		{0, 4, 0}, {-3, 2, 0}, {1, 4, 1}, {5, 0, 1}, {5, -2, 1},
		{7, 3, 3}, {8, 8, 8}, {3, 16, 3}, {1000, 7, 7},
	} {
		visits := make([]int, max(tc.n, 0))
		var mu sync.Mutex
		var ranges [][3]int
		got := forFn(tc.n, tc.parts, func(part, lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			ranges = append(ranges, [3]int{part, lo, hi})
			for i := lo; i < hi; i++ {
				visits[i]++
			}
		})
		if got != tc.want || len(ranges) != tc.want {
			t.Fatalf("For(%d, %d): returned %d with %d calls, want %d", tc.n, tc.parts, got, len(ranges), tc.want)
		}
		for i, v := range visits {
			if v != 1 {
				t.Fatalf("For(%d, %d): index %d visited %d times", tc.n, tc.parts, i, v)
			}
		}
		for _, r := range ranges {
			p, lo, hi := r[0], r[1], r[2]
			if lo != p*tc.n/got || hi != (p+1)*tc.n/got {
				t.Errorf("For(%d, %d): part %d got [%d, %d), want [%d, %d)", tc.n, tc.parts, p, lo, hi, p*tc.n/got, (p+1)*tc.n/got)
			}
		}
	}
}

// TestPoolRunsPartsTogether: every part of a For runs at the same time as
// the others (the Winograd phases wait for one another at barriers), on
// the helpers or, for a For called while another runs, on new goroutines.
// A part that waited alone would hang; the test fails after 10 s instead.
func TestPoolRunsPartsTogether(t *testing.T) {
	p := NewPool(4, DefaultSpin)
	defer p.Close()
	together := func(parts int) func(part, lo, hi int) {
		var arrived sync.WaitGroup
		arrived.Add(parts)
		return func(part, lo, hi int) {
			arrived.Done()
			done := make(chan struct{})
			go func() { arrived.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Errorf("part %d waited 10 s for the other parts", part)
			}
		}
	}
	for range 100 {
		p.For(4, 4, together(4))
	}
	// Nested: a part's own For, with the pool busy, still runs together.
	p.For(2, 2, func(part, lo, hi int) { p.For(3, 3, together(3)) })
	// Concurrent Fors from two goroutines.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 50 {
				p.For(4, 4, together(4))
			}
		})
	}
	wg.Wait()
}

// TestPoolWakesSleepingHelpers: after a pause longer than the spin, the
// helpers sleep, and the next For wakes them (or it would hang).
func TestPoolWakesSleepingHelpers(t *testing.T) {
	p := NewPool(2, time.Microsecond)
	defer p.Close()
	var sum atomic.Int64
	for range 20 {
		time.Sleep(2 * time.Millisecond)
		p.For(10, 2, func(_, lo, hi int) { sum.Add(int64(hi - lo)) })
	}
	if got := sum.Load(); got != 200 {
		t.Errorf("20 Fors over 10 indices covered %d, want 200", got)
	}
}

// TestPoolForAllocatesNothing: a For on the helpers reuses its tasks.
func TestPoolForAllocatesNothing(t *testing.T) {
	p := NewPool(2, DefaultSpin)
	defer p.Close()
	var sink [2]int
	fn := func(part, lo, hi int) { sink[part] += hi - lo }
	if n := testing.AllocsPerRun(100, func() { p.For(100, 2, fn) }); n != 0 {
		t.Errorf("Pool.For allocates %v objects a call, want 0", n)
	}
}

// TestPoolHelpersEnd: Close ends the helpers, and so does dropping the
// pool.
func TestPoolHelpersEnd(t *testing.T) {
	before := runtime.NumGoroutine()
	p := NewPool(5, DefaultSpin)
	p.For(8, 5, func(_, _, _ int) {})
	p.Close()
	q := NewPool(5, DefaultSpin)
	q.For(8, 5, func(_, _, _ int) {})
	q = nil
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after closing one pool and dropping another, %d before", n, before)
	}
}

// TestPoolPanicWaitsForTheHelpers: a panic in the caller's part reaches
// the caller only once the helpers are done, so that the next For does
// not share its count with their late parts.
func TestPoolPanicWaitsForTheHelpers(t *testing.T) {
	p := NewPool(3, DefaultSpin)
	defer p.Close()
	var finished atomic.Int32
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the part's panic did not reach the caller")
			}
			if n := finished.Load(); n != 2 {
				t.Errorf("the panic reached the caller with %d of 2 helper parts finished", n)
			}
		}()
		p.For(3, 3, func(part, _, _ int) {
			if part == 0 {
				panic("part 0")
			}
			time.Sleep(20 * time.Millisecond)
			finished.Add(1)
		})
	}()
	var sum atomic.Int64
	p.For(30, 3, func(_, lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 30 {
		t.Errorf("the For after a panic covered %d of 30 indices", sum.Load())
	}
}
