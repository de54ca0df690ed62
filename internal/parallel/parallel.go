// Package parallel is the one fork-join loop the CPU backend, the loss and
// the evaluators share: an index range split into contiguous parts, each run
// on its own goroutine (For), or on goroutines that stay between calls
// (Pool, for the CPU backend's many short kernels).
package parallel

import "sync"

// For calls fn(part, lo, hi) on parts contiguous sub-ranges covering [0, n),
// part p covering [p*n/parts, (p+1)*n/parts), and returns when all have
// returned. Part 0 runs on the caller's goroutine, the others on new ones.
// parts is clamped to [1, n]; For returns the number it used, and 0 without
// calling fn when n <= 0. The split depends only on n and parts, so results
// combined in part order are deterministic.
func For(n, parts int, fn func(part, lo, hi int)) int {
	if n <= 0 {
		return 0
	}
	parts = min(max(parts, 1), n)
	if parts == 1 {
		fn(0, 0, n)
		return 1
	}
	var wg sync.WaitGroup
	wg.Add(parts - 1)
	for p := 1; p < parts; p++ {
		lo, hi := p*n/parts, (p+1)*n/parts
		go func() {
			defer wg.Done()
			fn(p, lo, hi)
		}()
	}
	fn(0, 0, n/parts)
	wg.Wait()
	return parts
}
