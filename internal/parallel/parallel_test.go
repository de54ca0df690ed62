package parallel

import (
	"sync"
	"testing"
)

// TestForCoversTheRangeOnce checks, for each n and requested part count,
// that every index is visited exactly once, that part p gets
// [p*n/parts, (p+1)*n/parts) with parts clamped to [1, n], and the count
// returned.
func TestForCoversTheRangeOnce(t *testing.T) {
	for _, tc := range []struct{ n, parts, want int }{
		{0, 4, 0}, {-3, 2, 0}, {1, 4, 1}, {5, 0, 1}, {5, -2, 1},
		{7, 3, 3}, {8, 8, 8}, {3, 16, 3}, {1000, 7, 7},
	} {
		visits := make([]int, max(tc.n, 0))
		var mu sync.Mutex
		var ranges [][3]int
		got := For(tc.n, tc.parts, func(part, lo, hi int) {
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
