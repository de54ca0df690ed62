package cpu

import (
	"github.com/simclr-go/simclr/tensor"
)

// chunkImages is the number of images per GEMM for a worker given count
// images. The GEMM needs enough columns M = nb*P to run near peak
// (minGemmCols) and, in the deep layers whose weights outweigh one image's
// im2col matrix, enough to amortise streaming the weights once per chunk
// (M >= 4K makes col at least four times the size of w). Fewer images than
// that keep col small enough to stay in cache between im2col and the GEMM,
// and a single image needs no scatter. The workspace budget caps the
// count; at least one image.
func (b *Backend) chunkImages(s tensor.ConvShape, count int) int {
	P := s.OutH() * s.OutW()
	wantCols := max(minGemmCols, 4*s.K)
	nb := (wantCols + P - 1) / P
	perImage := (s.C*s.R*s.S + s.K) * P
	nb = min(nb, b.chunkBudget/perImage, count)
	return max(1, nb)
}

// minGemmCols is the smallest GEMM N dimension (images x output positions)
// a convolution chunk aims for.
const minGemmCols = 1024

// forImages splits images [0, n) into contiguous ranges, one per worker
// (fewer workers than images at most), and runs fn(worker, lo, hi) on each
// worker's goroutine. The split depends only on n and b.threads, so sums
// combined in worker order are deterministic.
func (b *Backend) forImages(n int, fn func(p, lo, hi int)) int {
	return b.pool.For(n, b.threads, fn)
}

// convSplit says how a convolution's work is shared among the workers.
type convSplit int

const (
	// splitAuto picks per layer with splitByChannels.
	splitAuto convSplit = iota
	// splitImages gives each worker its own images, lowered and multiplied
	// in chunks of its own, and sums the workers' filter gradients.
	splitImages
	// splitChannels lowers all images into one shared im2col matrix and
	// splits every GEMM over channels: output channels in the forward pass
	// and the filter gradient, input channels in the data gradient.
	splitChannels
)

// splitByChannels reports whether s runs split over channels. Splitting
// over images makes every worker stream the whole weight matrix (and, in
// the backward pass, write and then sum a whole filter gradient of its
// own) for the few columns its images give; at MLMC's small batches the
// deep layers' weights outweigh the images, so there each worker should
// take a share of the weights instead. Where the weights have fewer rows
// than a worker's images have output positions (K < cols/2, the first
// stages at every batch size), halving the GEMM's rows costs more than
// the weights save (BenchmarkSmallBatchConvs measures both splits per
// layer; studies/engine-speed/README.md has the figures). The shared im2col matrix and
// output must fit in the workspace budget.
func (b *Backend) splitByChannels(s tensor.ConvShape) bool {
	switch {
	case b.convSplit == splitImages || b.threads == 1 || pointwise(s):
		return false
	case b.convSplit == splitChannels:
		return true
	}
	P := s.OutH() * s.OutW()
	perWorker := (s.N + b.threads - 1) / b.threads
	if 2*s.K < perWorker*P {
		return false
	}
	return (s.C*s.R*s.S+s.K)*s.N*P <= b.chunkBudget
}

// convForwardChannels is Conv2dForward split over output channels: the
// workers lower all images into one im2col matrix col (CRS, N*P), rows
// split among them, then each multiplies its share of the filters' rows
// by all of col and scatters those channels into y.
func (b *Backend) convForwardChannels(s tensor.ConvShape, xd, wd, yd []float32) {
	P, CRS, K := s.OutH()*s.OutW(), s.C*s.R*s.S, s.K
	M := s.N * P
	b.mu.Lock()
	defer b.mu.Unlock()
	ws := b.grow(0, (CRS+K)*M)
	col := ws[:CRS*M]
	out := yd // one image: (K, P) is already y's layout
	if s.N > 1 {
		out = ws[CRS*M:]
	}
	b.pool.For(CRS, b.threads, func(_, lo, hi int) { im2col(s, xd, 0, s.N, col, lo, hi) })
	b.pool.For(K, b.threads, func(_, lo, hi int) {
		b.gemm.Sgemm(false, false, hi-lo, M, CRS, 1, wd[lo*CRS:], CRS, col, M, 0, out[lo*M:], M)
		if s.N > 1 {
			chunkToImagesRows(K, P, 0, s.N, lo, hi, out, yd)
		}
	})
}

// convBackwardChannels is Conv2dBackward split over channels. Phase one
// lowers x into col (CRS, N*P) and gathers dy into dyc (K, N*P), rows of
// both split among the workers; phase two gives each worker a share of
// the filters, dw[k0:k1] = dyc[k0:k1] col^T, so no partial filter
// gradients are summed; phase three, once col is free, gives each worker
// a share of the input channels c0..c1, whose rows of dcol = w^T dyc it
// computes into col and adds into dx with col2im.
func (b *Backend) convBackwardChannels(s tensor.ConvShape, xd, wd, dyd, dxd, dwd []float32) {
	P, CRS, K, RS := s.OutH()*s.OutW(), s.C*s.R*s.S, s.K, s.R*s.S
	M := s.N * P
	b.mu.Lock()
	defer b.mu.Unlock()
	ws := b.grow(0, (CRS+K)*M)
	col := ws[:CRS*M]
	dyc := dyd // one image: dy (K, P) is already the chunk layout
	if s.N > 1 {
		dyc = ws[CRS*M:]
	}
	b.pool.For(b.threads, b.threads, func(p, _, _ int) {
		im2col(s, xd, 0, s.N, col, p*CRS/b.threads, (p+1)*CRS/b.threads)
		if s.N > 1 {
			imagesToChunkRows(K, P, 0, s.N, p*K/b.threads, (p+1)*K/b.threads, dyd, dyc)
		}
	})
	b.pool.For(K, b.threads, func(_, lo, hi int) {
		b.gemm.Sgemm(false, true, hi-lo, CRS, M, 1, dyc[lo*M:], M, col, M, 0, dwd[lo*CRS:], CRS)
	})
	if dxd == nil {
		return
	}
	b.pool.For(s.C, b.threads, func(_, lo, hi int) {
		b.gemm.Sgemm(true, false, (hi-lo)*RS, M, K, 1, wd[lo*RS:], CRS, dyc, M, 0, col[lo*RS*M:], M)
		col2im(s, col, 0, s.N, dxd, lo, hi)
	})
}

// chunkToImagesRows scatters rows [klo,khi) of out (K, cnt*P) into
// y[n0:n0+cnt] of layout (N,K,P).
func chunkToImagesRows(K, P, n0, cnt, klo, khi int, out, y []float32) {
	M := cnt * P
	for k := klo; k < khi; k++ {
		for i := 0; i < cnt; i++ {
			copy(y[((n0+i)*K+k)*P:((n0+i)*K+k+1)*P], out[k*M+i*P:k*M+(i+1)*P])
		}
	}
}

// imagesToChunkRows gathers channels [klo,khi) of dy[n0:n0+cnt] (N,K,P)
// into rows [klo,khi) of dyc (K, cnt*P).
func imagesToChunkRows(K, P, n0, cnt, klo, khi int, dy, dyc []float32) {
	M := cnt * P
	for k := klo; k < khi; k++ {
		for i := 0; i < cnt; i++ {
			copy(dyc[k*M+i*P:k*M+(i+1)*P], dy[((n0+i)*K+k)*P:((n0+i)*K+k+1)*P])
		}
	}
}

// chunkToImages scatters out (K, cnt*P) into y[n0:n0+cnt] of layout (N,K,P).
func chunkToImages(K, P, n0, cnt int, out, y []float32) {
	chunkToImagesRows(K, P, n0, cnt, 0, K, out, y)
}

// imagesToChunk gathers dy[n0:n0+cnt] of layout (N,K,P) into dyc (K, cnt*P).
func imagesToChunk(K, P, n0, cnt int, dy, dyc []float32) {
	imagesToChunkRows(K, P, n0, cnt, 0, K, dy, dyc)
}
