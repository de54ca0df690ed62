package cpu

import (
	"fmt"

	"github.com/simclr-go/simclr/internal/parallel"
	"github.com/simclr-go/simclr/tensor"
)

// Convolutions as torch.nn.Conv2d (bias=False, dilation 1, groups 1),
// https://pytorch.org/docs/stable/generated/torch.nn.Conv2d.html, computed
// as GEMMs on im2col matrices.
//
// Notation: x is (N,C,H,W), w is (K,C,R,S), y is (N,K,OH,OW), P = OH*OW
// output positions per image, CRS = C*R*S. A chunk of nb images starting
// at image n0 has M = nb*P columns. Its im2col matrix col is (CRS, M): row
// (c*R+r)*S+s, column i*P + oh*OW + ow holds x[n0+i, c, oh*stride-pad+r,
// ow*stride-pad+s] (0 outside the image). Then, per chunk,
//
//	forward          yc  (K,M)   = w (K,CRS)  col (CRS,M)
//	backward filter  dw  (K,CRS) += dyc (K,M) col^T
//	backward data    dcol (CRS,M) = w^T dyc, then col2im adds dcol into dx
//
// where yc and dyc are the chunk's outputs in (K, nb*P) order; they are
// scattered to / gathered from the (nb,K,P) layout of y and dy. A single
// image needs no scatter, and a 1x1 stride-1 unpadded convolution on large
// planes needs no im2col either (col is x itself).

// checkConv panics unless the buffers match the shape.
func checkConv(s tensor.ConvShape, x, w, y []float32, yName string) {
	if s.N < 1 || s.C < 1 || s.K < 1 || s.R < 1 || s.S < 1 || s.Stride < 1 || s.Pad < 0 || s.OutH() < 1 || s.OutW() < 1 {
		panic(fmt.Sprintf("cpu: invalid %v", s))
	}
	if x != nil {
		if len(x) != s.InLen() { // format the message only on failure: this runs every layer call
			checkLen(fmt.Sprintf("conv input x for %v", s), x, s.InLen())
		}
	}
	if len(w) != s.WeightLen() { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("conv weight w for %v", s), w, s.WeightLen())
	}
	if len(y) != s.OutLen() { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("conv %s for %v", yName, s), y, s.OutLen())
	}
}

// convAlgo is how a convolution is computed.
type convAlgo int

const (
	// algoAuto lets convAlgorithm choose per shape.
	algoAuto convAlgo = iota
	// algoIm2col lowers the input to an im2col matrix and multiplies.
	algoIm2col
	// algoWinograd uses Winograd F(2x2,3x3) (winograd.go).
	algoWinograd
)

// convAlgorithm is the one place that chooses the algorithm of a
// convolution. Winograd F(2x2,3x3) needs 16 multiplications per 2x2
// output tile and input channel where im2col's GEMM needs 36, and its
// transformed tiles (16 values per 4 outputs) are smaller than an im2col
// matrix (9 per output), so it wins on the 3x3 stride-1 pad-1 layers
// when its 16 GEMMs are long and deep enough. BenchmarkConvAlgorithms
// runs every layer both ways; its figures, which set the two thresholds
// below, are in BENCHMARKS.md ("The figures behind the CPU convolution
// constants"). It needs
//   - at least minWinogradChannels input channels: the stem (3 channels)
//     writes 16 x K transformed outputs per tile through memory to save a
//     27-deep GEMM little (ahead of im2col at a few views, behind at more;
//     the stem is 0.3% of the FLOPs either way);
//   - at least minWinogradTiles tiles in the batch (N x tiles per image):
//     each of the 16 GEMMs streams its whole (K,C) share of the
//     transformed filters, 16/9 the size of the weights, for T columns,
//     and the filter transforms cost the same whatever T, so a few tiles
//     make them memory-bound (the 4x4 layer loses at 4 and 8 views, T = 16
//     and 32).
//
// Stride-2 and 1x1 layers stay on im2col, which Winograd F(2,3) does not
// compute. Tests and benchmarks may force either algorithm (b.convAlgo);
// forcing Winograd on a shape it cannot compute falls back to im2col.
func (b *Backend) convAlgorithm(s tensor.ConvShape) convAlgo {
	if !winogradEligible(s) || b.convAlgo == algoIm2col {
		return algoIm2col
	}
	if b.convAlgo == algoWinograd {
		return algoWinograd
	}
	tiles := s.N * newWinoGeometry(s.H, s.W).tiles()
	if s.C >= minWinogradChannels && tiles >= minWinogradTiles {
		return algoWinograd
	}
	return algoIm2col
}

// minWinogradChannels and minWinogradTiles bound the shapes convAlgorithm
// sends to Winograd (see there).
const (
	minWinogradChannels = 8
	minWinogradTiles    = 64
)

// pointwise reports whether col for one image is x itself (1x1 kernel,
// stride 1, no padding) and planes are large enough that a GEMM per image
// is efficient.
func pointwise(s tensor.ConvShape) bool {
	return s.R == 1 && s.S == 1 && s.Stride == 1 && s.Pad == 0 && s.H*s.W >= 256
}

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
	return parallel.For(n, b.threads, fn)
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
// layer; BENCHMARKS.md has the figures). The shared im2col matrix and
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

// Conv2dForward: x is (N,C,H,W), w is (K,C,R,S), y is (N,K,OH,OW).
// Each worker convolves its own images with its own GEMMs, or, at small
// batches, a share of the output channels of all images.
func (b *Backend) Conv2dForward(s tensor.ConvShape, x, w, y tensor.Buffer) {
	xd, wd, yd := Data(x), Data(w), Data(y)
	checkConv(s, xd, wd, yd, "output y")
	if b.convAlgorithm(s) == algoWinograd {
		b.winogradForward(s, xd, wd, yd)
		return
	}
	P, CRS, K := s.OutH()*s.OutW(), s.C*s.R*s.S, s.K
	if b.splitByChannels(s) {
		b.convForwardChannels(s, xd, wd, yd)
		return
	}
	if pointwise(s) {
		b.forImages(s.N, func(_, lo, hi int) {
			for n := lo; n < hi; n++ {
				b.gemm.Sgemm(false, false, K, P, CRS, 1, wd, CRS, xd[n*CRS*P:(n+1)*CRS*P], P, 0, yd[n*K*P:(n+1)*K*P], P)
			}
		})
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	workers := min(b.threads, s.N)
	nb := b.chunkImages(s, (s.N+workers-1)/workers)
	for p := 0; p < workers; p++ {
		b.grow(p, (CRS+K)*nb*P)
	}
	b.forImages(s.N, func(p, lo, hi int) {
		ws := b.workspaces[p]
		for n0 := lo; n0 < hi; n0 += nb {
			cnt := min(nb, hi-n0)
			M := cnt * P
			col := ws[:CRS*M]
			im2col(s, xd, n0, cnt, col, 0, CRS)
			if cnt == 1 {
				b.gemm.Sgemm(false, false, K, M, CRS, 1, wd, CRS, col, M, 0, yd[n0*K*P:(n0+1)*K*P], M)
				continue
			}
			out := ws[CRS*M : CRS*M+K*M]
			b.gemm.Sgemm(false, false, K, M, CRS, 1, wd, CRS, col, M, 0, out, M)
			chunkToImages(K, P, n0, cnt, out, yd)
		}
	})
}

// Conv2dBackward: given dy (N,K,OH,OW), writes dx (N,C,H,W) unless dx is
// nil, and dw (K,C,R,S). Both are overwritten, not accumulated. Each worker
// handles its own images; worker 0 writes its filter gradient into dw and
// the others into their workspaces, summed into dw at the end.
func (b *Backend) Conv2dBackward(s tensor.ConvShape, x, w, dy, dx, dw tensor.Buffer) {
	xd, wd, dyd, dwd := Data(x), Data(w), Data(dy), Data(dw)
	checkConv(s, xd, wd, dyd, "output gradient dy")
	if len(dwd) != s.WeightLen() { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("conv weight gradient dw for %v", s), dwd, s.WeightLen())
	}
	var dxd []float32
	if dx != nil {
		dxd = Data(dx)
		if len(dxd) != s.InLen() { // format the message only on failure: this runs every layer call
			checkLen(fmt.Sprintf("conv input gradient dx for %v", s), dxd, s.InLen())
		}
	}
	if b.convAlgorithm(s) == algoWinograd {
		b.winogradBackward(s, xd, wd, dyd, dxd, dwd)
		return
	}
	P, CRS, K := s.OutH()*s.OutW(), s.C*s.R*s.S, s.K
	if b.splitByChannels(s) {
		b.convBackwardChannels(s, xd, wd, dyd, dxd, dwd)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	workers := min(b.threads, s.N)
	nb := b.chunkImages(s, (s.N+workers-1)/workers)
	chunkLen := (CRS + K) * nb * P
	if pointwise(s) {
		chunkLen = 0
	}
	for p := 0; p < workers; p++ {
		b.grow(p, chunkLen+K*CRS)
	}
	b.forImages(s.N, func(p, lo, hi int) {
		ws := b.workspaces[p]
		dwp := dwd
		if p > 0 {
			dwp = ws[chunkLen : chunkLen+K*CRS]
		}
		if pointwise(s) {
			for n := lo; n < hi; n++ {
				xn, dyn := xd[n*CRS*P:(n+1)*CRS*P], dyd[n*K*P:(n+1)*K*P]
				b.gemm.Sgemm(false, true, K, CRS, P, 1, dyn, P, xn, P, float32(min(n-lo, 1)), dwp, CRS)
				if dxd != nil {
					b.gemm.Sgemm(true, false, CRS, P, K, 1, wd, CRS, dyn, P, 0, dxd[n*CRS*P:(n+1)*CRS*P], P)
				}
			}
			return
		}
		for n0 := lo; n0 < hi; n0 += nb {
			cnt := min(nb, hi-n0)
			M := cnt * P
			col := ws[:CRS*M]
			var dyc []float32
			if cnt == 1 {
				dyc = dyd[n0*K*P : (n0+1)*K*P]
			} else {
				dyc = ws[CRS*M : CRS*M+K*M]
				imagesToChunk(K, P, n0, cnt, dyd, dyc)
			}
			im2col(s, xd, n0, cnt, col, 0, CRS)
			beta := float32(1)
			if n0 == lo {
				beta = 0
			}
			b.gemm.Sgemm(false, true, K, CRS, M, 1, dyc, M, col, M, beta, dwp, CRS)
			if dxd != nil {
				// col is free again: reuse it for dcol.
				b.gemm.Sgemm(true, false, CRS, M, K, 1, wd, CRS, dyc, M, 0, col, M)
				col2im(s, col, n0, cnt, dxd, 0, s.C)
			}
		}
	})
	if workers > 1 {
		b.parallelFor(len(dwd), workers, func(_, lo, hi int) {
			for p := 1; p < workers; p++ {
				addTo(dwd[lo:hi], b.workspaces[p][chunkLen+lo:chunkLen+hi])
			}
		})
	}
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
	parallel.For(CRS, b.threads, func(_, lo, hi int) { im2col(s, xd, 0, s.N, col, lo, hi) })
	parallel.For(K, b.threads, func(_, lo, hi int) {
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
	parallel.For(b.threads, b.threads, func(p, _, _ int) {
		im2col(s, xd, 0, s.N, col, p*CRS/b.threads, (p+1)*CRS/b.threads)
		if s.N > 1 {
			imagesToChunkRows(K, P, 0, s.N, p*K/b.threads, (p+1)*K/b.threads, dyd, dyc)
		}
	})
	parallel.For(K, b.threads, func(_, lo, hi int) {
		b.gemm.Sgemm(false, true, hi-lo, CRS, M, 1, dyc[lo*M:], M, col, M, 0, dwd[lo*CRS:], CRS)
	})
	if dxd == nil {
		return
	}
	parallel.For(s.C, b.threads, func(_, lo, hi int) {
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

// validRange is the range [lo, hi) of output columns o (0 <= o < outLen)
// whose input column o*stride - pad + off lies in [0, inLen).
func validRange(outLen, inLen, stride, pad, off int) (lo, hi int) {
	// o*stride >= pad-off  and  o*stride <= inLen-1+pad-off
	lo = max(0, ceilDiv(pad-off, stride))
	hi = min(outLen, floorDiv(inLen-1+pad-off, stride)+1)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return -((-a) / b)
	}
	return (a + b - 1) / b
}

func floorDiv(a, b int) int {
	if a >= 0 {
		return a / b
	}
	return -((-a + b - 1) / b)
}

// im2col fills rows [qlo,qhi) of col (CRS, cnt*P) from images
// n0..n0+cnt-1 of x.
func im2col(s tensor.ConvShape, x []float32, n0, cnt int, col []float32, qlo, qhi int) {
	OH, OW := s.OutH(), s.OutW()
	P, HW, RS := OH*OW, s.H*s.W, s.R*s.S
	M := cnt * P
	for q := qlo; q < qhi; q++ {
		c, r, sx := q/RS, (q/s.S)%s.R, q%s.S
		wlo, whi := validRange(OW, s.W, s.Stride, s.Pad, sx)
		hlo, hhi := validRange(OH, s.H, s.Stride, s.Pad, r)
		for i := 0; i < cnt; i++ {
			plane := x[((n0+i)*s.C+c)*HW : ((n0+i)*s.C+c+1)*HW]
			dst := col[q*M+i*P : q*M+(i+1)*P]
			clear(dst[:hlo*OW])
			clear(dst[hhi*OW:])
			if sameWidth(s) {
				im2colShifted(dst, plane, s, OW, r, sx, hlo, hhi, wlo, whi)
				continue
			}
			for oh := hlo; oh < hhi; oh++ {
				ih := oh*s.Stride - s.Pad + r
				row := dst[oh*OW : (oh+1)*OW]
				src := plane[ih*s.W : (ih+1)*s.W]
				clearEdges(row, wlo, whi)
				if s.Stride == 1 {
					copy(row[wlo:whi], src[wlo-s.Pad+sx:])
					continue
				}
				iw := wlo*s.Stride - s.Pad + sx
				for ow := wlo; ow < whi; ow++ {
					row[ow] = src[iw]
					iw += s.Stride
				}
			}
		}
	}
}

// sameWidth reports whether output rows are as wide as input rows at
// stride 1 (a "same" convolution, S = 2 Pad + 1): then one kernel tap
// reads the input plane shifted by a constant, dst[j] = plane[j + off]
// with off = (r-Pad) W + (s-Pad), except in the columns where the shift
// wraps from one row into the next, which are padding.
func sameWidth(s tensor.ConvShape) bool {
	return s.Stride == 1 && s.S == 2*s.Pad+1
}

// im2colShifted fills rows [hlo,hhi) of one image's row of col for tap
// (r,sx) of a sameWidth convolution with one copy, then zeroes the padding
// columns [0,wlo) and [whi,OW) of each row.
func im2colShifted(dst, plane []float32, s tensor.ConvShape, OW, r, sx, hlo, hhi, wlo, whi int) {
	off := (r-s.Pad)*s.W + sx - s.Pad
	// On planes smaller than the kernel a tap may read nothing at all
	// (j1 <= j0); its rows are then all padding, cleared below.
	if j0, j1 := max(hlo*OW, -off), min(hhi*OW, len(plane)-off); j1 > j0 {
		copy(dst[j0:j1], plane[j0+off:j1+off])
	}
	for oh := hlo; oh < hhi; oh++ {
		row := dst[oh*OW : (oh+1)*OW]
		clearEdges(row, wlo, whi)
	}
}

// col2im writes into channels [clo,chi) of dx[n0:n0+cnt] the sum of dcol
// (CRS, cnt*P) over the kernel positions that read each input element: the
// adjoint of im2col. dcol is scratch: its padding entries may be zeroed.
func col2im(s tensor.ConvShape, dcol []float32, n0, cnt int, dx []float32, clo, chi int) {
	OH, OW := s.OutH(), s.OutW()
	P, HW := OH*OW, s.H*s.W
	M := cnt * P
	for c := clo; c < chi; c++ {
		for i := 0; i < cnt; i++ {
			plane := dx[((n0+i)*s.C+c)*HW : ((n0+i)*s.C+c+1)*HW]
			clear(plane)
			for r := 0; r < s.R; r++ {
				hlo, hhi := validRange(OH, s.H, s.Stride, s.Pad, r)
				for sx := 0; sx < s.S; sx++ {
					wlo, whi := validRange(OW, s.W, s.Stride, s.Pad, sx)
					q := (c*s.R+r)*s.S + sx
					src := dcol[q*M+i*P : q*M+(i+1)*P]
					if sameWidth(s) {
						col2imShifted(plane, src, s, OW, r, sx, hlo, hhi, wlo, whi)
						continue
					}
					for oh := hlo; oh < hhi; oh++ {
						ih := oh*s.Stride - s.Pad + r
						row := src[oh*OW : (oh+1)*OW]
						dst := plane[ih*s.W : (ih+1)*s.W]
						if s.Stride == 1 {
							addTo(dst[wlo-s.Pad+sx:], row[wlo:whi])
							continue
						}
						iw := wlo*s.Stride - s.Pad + sx
						for ow := wlo; ow < whi; ow++ {
							dst[iw] += row[ow]
							iw += s.Stride
						}
					}
				}
			}
		}
	}
}

// col2imShifted is the adjoint of im2colShifted: it zeroes the padding
// columns of src (so that the wrapped entries add nothing) and adds rows
// [hlo,hhi) into the plane shifted by off in one pass.
func col2imShifted(plane, src []float32, s tensor.ConvShape, OW, r, sx, hlo, hhi, wlo, whi int) {
	for oh := hlo; oh < hhi; oh++ {
		row := src[oh*OW : (oh+1)*OW]
		clearEdges(row, wlo, whi)
	}
	off := (r-s.Pad)*s.W + sx - s.Pad
	if j0, j1 := max(hlo*OW, -off), min(hhi*OW, len(plane)-off); j1 > j0 {
		addTo(plane[j0+off:], src[j0:j1])
	}
}

// clearEdges zeroes row[:lo] and row[hi:], the padding columns of one
// output row: usually a single element each (pad 1), where an index loop
// costs a fraction of two calls into memclr per row.
func clearEdges(row []float32, lo, hi int) {
	for j := 0; j < lo; j++ {
		row[j] = 0
	}
	for j := hi; j < len(row); j++ {
		row[j] = 0
	}
}

// addTo adds src into dst[:len(src)].
func addTo(dst, src []float32) {
	dst = dst[:len(src)]
	i := 0
	for ; i+4 <= len(src); i += 4 {
		d, v := dst[i:i+4:i+4], src[i:i+4:i+4]
		d[0] += v[0]
		d[1] += v[1]
		d[2] += v[2]
		d[3] += v[3]
	}
	for ; i < len(src); i++ {
		dst[i] += src[i]
	}
}
