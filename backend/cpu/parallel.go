package cpu

// minWork is the number of elements below which splitting an element-wise
// kernel over goroutines costs more than it saves.
const minWork = 1 << 14

// maxThreads bounds the per-part partial sums kept on the stack by the
// reductions.
const maxThreads = 64

// parts is the number of pieces parallelFor splits n indices of cost
// elements each into.
func (b *Backend) parts(n, cost int) int {
	p := b.threads
	if p > maxThreads {
		p = maxThreads
	}
	if p > n {
		p = n
	}
	if p < 1 || n*cost < minWork {
		p = 1
	}
	return p
}

// parallelFor calls fn(part, lo, hi) on contiguous sub-ranges of [0, n)
// covering it, on up to b.threads goroutines (the caller's included), and
// returns the number of parts. cost is the approximate work per index in
// elements, so that small jobs run inline. Part p covers
// [p*n/parts, (p+1)*n/parts), so results combined in part order are
// deterministic for a given thread count.
func (b *Backend) parallelFor(n, cost int, fn func(part, lo, hi int)) int {
	return b.pool.For(n, b.parts(n, cost), fn)
}
