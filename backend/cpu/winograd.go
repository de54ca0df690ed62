package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/simclr-go/simclr/tensor"
)

// Winograd F(2x2,3x3) convolutions for 3x3, stride-1, pad-1 layers (all but
// four of ResNet-18's convolutions, and almost all of its FLOPs).
//
// One-dimensional F(2,3), interpolation points 0, 1, -1 and infinity: two
// outputs y_i = sum_j g_j d_(i+j) of a 3-tap filter g over 4 inputs d are
//
//	y = A^T [(G g) .* (B^T d)]
//
//	B^T = | 1  0 -1  0 |   G = | 1    0    0   |   A^T = | 1  1  1  0 |
//	      | 0  1  1  0 |       | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
//	      | 0 -1  1  0 |       | 1/2 -1/2  1/2 |
//	      | 0  1  0 -1 |       | 0    0    1   |
//
// 4 multiplications instead of 6; nested in two dimensions, a 2x2 output
// tile Y of a 4x4 input tile D is Y = A^T [(G g G^T) .* (B^T D B)] A, 16
// instead of 36. The products for one output tile sum over input channels,
// so each of the 16 positions e of the transformed tile is a GEMM:
//
//	forward        M[e] (K,T) = U[e] (K,C) V[e] (C,T)
//
// with U[e] the transformed filters, V[e] the transformed input tiles (T =
// images x tiles; tiles overlap by 2, i.e. stride 2) and Y = A^T M A per
// tile. Sizes not divisible by 2 get tiles padded with zeros past the
// edge, whose extra outputs are dropped.
//
// Backward data is the same convolution of dy with the filters rotated by
// 180 degrees and with C and K exchanged: w'[c,k,r,s] = w[k,c,2-r,2-s].
// Its transformed filters need no transform of their own: rotating g
// permutes G g G^T (winoRotated), so the products use the forward U[e]
// transposed, read in the GEMM.
//
// Backward filter swaps the roles of filter and output: dw[r,s] = sum over
// outputs of dy[i,j] x[i+r,j+s] is F(3,2), 3 outputs of a 2-tap "filter"
// dy. Writing F(2,3) as the trilinear form a^T y = sum_e (A a)_e (G g)_e
// (B^T d)_e and differentiating in g gives dw = G^T [(A dy) .* (B^T d)];
// in two dimensions, per 2x2 tile of dy and its 4x4 input tile,
//
//	dW[e] (K,C) += Dy[e] (K,T) V[e]^T (T,C),  Dy = A dy A^T per tile,
//
// summed over all tiles, then dw = G^T dW G (3x3) per filter. The matrices
// are checked against direct sums in winograd_test.go.

// winogradEligible reports whether s is a convolution Winograd F(2x2,3x3)
// computes: a 3x3 kernel, stride 1, one pixel of zero padding.
func winogradEligible(s tensor.ConvShape) bool {
	return s.R == 3 && s.S == 3 && s.Stride == 1 && s.Pad == 1
}

// winoTile is the number of positions of a transformed 4x4 tile.
const winoTile = 16

// winoScratch holds the Winograd buffers, grown to the largest layer and
// reused (guarded by Backend.mu): u the transformed filters (16,K,C), dw
// the transformed filter gradient (16,K,C), bufA and bufB the transformed
// tiles of one chunk (each buffer's 16 planes planeStride apart), and
// pads one zero-bordered input plane per worker.
type winoScratch struct {
	u, dw, bufA, bufB []float32
	pads              [][]float32
	bar               barrier
}

// planeStride is the distance between the 16 planes of a transformed
// buffer whose planes hold n values: n rounded up to whole cache lines,
// plus one line. Planes exactly a power of two apart (64 x 512 tiles is
// 128 KiB) put the 16 streams a transform reads or writes into the same
// cache sets; the extra line staggers them (studies/engine-speed/README.md, "The figures
// behind the CPU convolution constants").
func planeStride(n int) int { return (n+15)&^15 + 16 }

// growTo returns buf with at least n elements, reallocating once.
func growTo(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}

// winoGeometry is the tiling of one (H,W) plane.
type winoGeometry struct {
	H, W   int // plane size
	th, tw int // tile rows and columns: ceil(H/2), ceil(W/2)
	hp, wp int // padded plane: 2 th + 2 by 2 tw + 2
}

func newWinoGeometry(H, W int) winoGeometry {
	th, tw := (H+1)/2, (W+1)/2
	return winoGeometry{H: H, W: W, th: th, tw: tw, hp: 2*th + 2, wp: 2*tw + 2}
}

// tiles is the number of tiles per plane.
func (g winoGeometry) tiles() int { return g.th * g.tw }

// winoChunkImages is the number of images per chunk: enough for
// winoChunkTiles tiles, within the workspace budget (bufA and bufB each
// hold 16 x max(C,K) x tiles per image), at least one image. A chunk of
// about 512 tiles keeps the 64-channel layers' transformed tiles (2 MiB
// each way) in the 2 MiB L2 caches between the transforms and the GEMMs,
// which larger chunks spill (studies/engine-speed/README.md, "The figures behind the CPU
// convolution constants").
func (b *Backend) winoChunkImages(s tensor.ConvShape, g winoGeometry) int {
	perImage := 2 * winoTile * max(s.C, s.K) * g.tiles()
	nb := (winoChunkTiles + g.tiles() - 1) / g.tiles()
	return max(1, min(s.N, nb, b.chunkBudget/perImage))
}

// winoChunkTiles is the number of tiles a chunk aims for.
const winoChunkTiles = 512

// prepare sizes the scratch for s under b.mu and returns the geometry and
// the images per chunk.
func (b *Backend) winoPrepare(s tensor.ConvShape, workers int) (winoGeometry, int) {
	g := newWinoGeometry(s.H, s.W)
	nb := b.winoChunkImages(s, g)
	ws := &b.wino
	chunk := winoTile * planeStride(max(s.C, s.K)*nb*g.tiles())
	growTo(&ws.bufA, chunk)
	growTo(&ws.bufB, chunk)
	growTo(&ws.u, winoTile*planeStride(s.K*s.C))
	for len(ws.pads) < workers {
		ws.pads = append(ws.pads, nil)
	}
	for p := 0; p < workers; p++ {
		// A zero border: the interior is overwritten plane by plane, the
		// border is cleared here once per call (its size depends on s).
		pad := growTo(&ws.pads[p], g.hp*g.wp+4*g.wp)
		clear(pad)
	}
	ws.bar.reset(workers, b.pool.Spin())
	return g, nb
}

// span is worker p's share [lo, hi) of n items among workers.
func span(n, p, workers int) (int, int) {
	return p * n / workers, (p + 1) * n / workers
}

// winogradForward: x is (N,C,H,W), w is (K,C,3,3), y is (N,K,H,W).
// All workers share each chunk: they transform a share of its input
// channels, run a share of the 16 GEMMs and transform a share of its
// output channels, with a barrier between the phases. Splitting the GEMMs
// by e keeps both cores busy at any batch size, and each worker streams
// only its share of the transformed filters.
func (b *Backend) winogradForward(s tensor.ConvShape, xd, wd, yd []float32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	workers := b.threads
	g, nb := b.winoPrepare(s, workers)
	ws := &b.wino
	u, v, m := ws.u[:winoTile*planeStride(s.K*s.C)], ws.bufA, ws.bufB
	TI := g.tiles()
	b.pool.For(workers, workers, func(p, _, _ int) {
		lo, hi := span(s.K, p, workers)
		winoFilters(wd, s.K, s.C, lo, hi, u)
		pad := ws.pads[p]
		for n0 := 0; n0 < s.N; n0 += nb {
			cnt := min(nb, s.N-n0)
			T := cnt * TI
			lo, hi = span(s.C, p, workers)
			winoInput(xd, g, s.C, n0, cnt, lo, hi, v, T, pad)
			ws.bar.wait() // V (and, the first time, U) complete
			b.winoGemms(p, workers, gemmForward, s.K, T, s.C, u, v, m, 0)
			ws.bar.wait() // M complete
			lo, hi = span(s.K, p, workers)
			winoOutput(m, g, s.K, n0, cnt, lo, hi, yd, T)
			// No barrier: the next chunk's first phase writes V, which
			// nobody reads any more, and its GEMMs wait for every worker
			// to have finished this output transform.
		}
	})
}

// winogradBackward: given dy (N,K,H,W), writes dw (K,C,3,3) and, unless
// dxd is nil, dx (N,C,H,W). Per chunk: V = B^T x B and Dy = A dy A^T
// tiles, then dW[e] += Dy[e] V[e]^T; for dx, the forward machinery on dy
// with the forward filters U read transposed and permuted (gemmDataGrad).
// The workers share each phase as in winogradForward; the filter-gradient
// GEMMs split by e need no partial sums.
func (b *Backend) winogradBackward(s tensor.ConvShape, xd, wd, dyd, dxd, dwd []float32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	workers := b.threads
	g, nb := b.winoPrepare(s, workers)
	ws := &b.wino
	u, bufA, bufB := ws.u[:winoTile*planeStride(s.K*s.C)], ws.bufA, ws.bufB
	dW := growTo(&ws.dw, winoTile*planeStride(s.K*s.C))
	TI := g.tiles()
	b.pool.For(workers, workers, func(p, _, _ int) {
		pad := ws.pads[p]
		if dxd != nil {
			lo, hi := span(s.K, p, workers)
			winoFilters(wd, s.K, s.C, lo, hi, u)
		}
		for n0 := 0; n0 < s.N; n0 += nb {
			cnt := min(nb, s.N-n0)
			T := cnt * TI
			lo, hi := span(s.C, p, workers)
			winoInput(xd, g, s.C, n0, cnt, lo, hi, bufA, T, pad)
			lo, hi = span(s.K, p, workers)
			winoOutputGrad(dyd, g, s.K, n0, cnt, lo, hi, bufB, T)
			ws.bar.wait()
			beta := float32(1)
			if n0 == 0 {
				beta = 0
			}
			b.winoGemms(p, workers, gemmFilterGrad, s.K, s.C, T, bufB, bufA, dW, beta)
			ws.bar.wait() // bufA and bufB free again
			if dxd == nil {
				continue
			}
			winoInput(dyd, g, s.K, n0, cnt, lo, hi, bufA, T, pad)
			ws.bar.wait()
			b.winoGemms(p, workers, gemmDataGrad, s.C, T, s.K, u, bufA, bufB, 0)
			ws.bar.wait()
			lo, hi = span(s.C, p, workers)
			winoOutput(bufB, g, s.C, n0, cnt, lo, hi, dxd, T)
			ws.bar.wait() // the next chunk writes bufB
		}
		// The last barrier above follows the last filter-gradient GEMMs.
		lo, hi := span(s.K, p, workers)
		winoFilterGrad(dW, s.K, s.C, lo, hi, dwd)
	})
}

// winoGemm names the three kinds of products.
type winoGemm int

const (
	// gemmForward: out[e] (m,n) = a[e] (m,k) bm[e] (k,n).
	gemmForward winoGemm = iota
	// gemmFilterGrad: out[e] (m,n) = beta out[e] + a[e] (m,k) bm[e]^T,
	// bm[e] stored (n,k).
	gemmFilterGrad
	// gemmDataGrad: out[e] (m,n) = a[p(e)]^T bm[e] (k,n) with a[.]
	// stored (k,m), the forward filters: the transformed rotated filters
	// are a permutation of them (see winoRotated).
	gemmDataGrad
)

// winoGemms runs worker p's share of the 16 products of one phase. Up to
// 16 workers each take whole products; more split each product's rows as
// well.
func (b *Backend) winoGemms(p, workers int, kind winoGemm, m, n, k int, a, bm, out []float32, beta float32) {
	rowParts := (workers + winoTile - 1) / winoTile
	units := winoTile * rowParts
	ulo, uhi := span(units, p, workers)
	for unit := ulo; unit < uhi; unit++ {
		e, part := unit/rowParts, unit%rowParts
		rlo, rhi := span(m, part, rowParts)
		if rhi == rlo {
			continue
		}
		// Every operand's planes are planeStride(its size) apart.
		oe := out[e*planeStride(m*n)+rlo*n:]
		ae, be := a[e*planeStride(m*k):], bm[e*planeStride(k*n):]
		switch kind {
		case gemmForward:
			b.gemm.Sgemm(false, false, rhi-rlo, n, k, 1, ae[rlo*k:], k, be, n, beta, oe, n)
		case gemmFilterGrad:
			b.gemm.Sgemm(false, true, rhi-rlo, n, k, 1, ae[rlo*k:], k, be, k, beta, oe, n)
		case gemmDataGrad:
			ae = a[winoRotated[e]*planeStride(m*k):]
			b.gemm.Sgemm(true, false, rhi-rlo, n, k, 1, ae[rlo:], m, be, n, beta, oe, n)
		}
	}
}

// winoRotated maps a position e = 4i+j of a transformed tile to the
// position holding the same value for the filter rotated by 180 degrees:
// with J the 3x3 exchange matrix, G J = P G where P swaps rows 0 and 3,
// so G (J g J) G^T = P (G g G^T) P^T, i.e. i and j each map 0<->3.
var winoRotated = [winoTile]int{15, 13, 14, 12, 7, 5, 6, 4, 11, 9, 10, 8, 3, 1, 2, 0}

// winoFilters writes the transformed filters of output channels [lo,hi)
// into u: u[e,k,c] = (G w[k,c] G^T)[e]. At small batches this runs once
// per layer call for few tiles, so it must be cheap: where the CPU has
// AVX2, groups of 8 filters go through winoFiltersSIMD (the taps
// gathered, 8 consecutive entries of each plane stored at once); the rest
// is written for the compiler: nine loads, the sums in locals, sixteen
// stores, filters in memory order, to a block of winoFilterBlock filters
// on the stack first and then to the 16 planes of u a block at a time
// (sixteen stores a filter straight into planes a whole layer apart ran
// at a few GB/s). Both compute the same operations in the same order.
func winoFilters(w []float32, K, C, lo, hi int, u []float32) {
	stride := planeStride(K * C)
	u = u[:16*stride]
	start := lo * C
	start += winoFiltersSIMD(w, start, hi*C-start, u, stride)
	var blk [winoTile][winoFilterBlock]float32
	for row0 := start; row0 < hi*C; row0 += winoFilterBlock {
		n := min(winoFilterBlock, hi*C-row0)
		for j := 0; j < n; j++ {
			row := row0 + j
			f := w[row*9 : row*9+9 : row*9+9]
			f0, f1, f2, f3, f4, f5, f6, f7, f8 := f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]
			// Columns of G f (4x3): rows f0-2, (sum)/2, (alternating)/2, f6-8.
			a0, a1, a2 := f0, f1, f2
			b0, b1, b2 := 0.5*(f0+f3+f6), 0.5*(f1+f4+f7), 0.5*(f2+f5+f8)
			c0, c1, c2 := 0.5*(f0-f3+f6), 0.5*(f1-f4+f7), 0.5*(f2-f5+f8)
			d0, d1, d2 := f6, f7, f8
			// Then (G f) G^T row by row.
			blk[0][j] = a0
			blk[1][j] = 0.5 * (a0 + a1 + a2)
			blk[2][j] = 0.5 * (a0 - a1 + a2)
			blk[3][j] = a2
			blk[4][j] = b0
			blk[5][j] = 0.5 * (b0 + b1 + b2)
			blk[6][j] = 0.5 * (b0 - b1 + b2)
			blk[7][j] = b2
			blk[8][j] = c0
			blk[9][j] = 0.5 * (c0 + c1 + c2)
			blk[10][j] = 0.5 * (c0 - c1 + c2)
			blk[11][j] = c2
			blk[12][j] = d0
			blk[13][j] = 0.5 * (d0 + d1 + d2)
			blk[14][j] = 0.5 * (d0 - d1 + d2)
			blk[15][j] = d2
		}
		for e := range blk {
			copy(u[e*stride+row0:e*stride+row0+n], blk[e][:n])
		}
	}
}

// winoFilterBlock is the number of filters winoFilters transforms on the
// stack before storing them (16 x 64 floats, 4 KiB, in L1).
const winoFilterBlock = 64

// winoFilterGrad writes dw[k,c] = G^T dW[.,k,c] G (3x3) for output
// channels [lo,hi). G^T maps (m0, m1, m2, m3) to (m0 + (m1+m2)/2,
// (m1-m2)/2, (m1+m2)/2 + m3).
func winoFilterGrad(dW []float32, K, C, lo, hi int, dw []float32) {
	stride := planeStride(K * C)
	dW = dW[:16*stride]
	for row := lo * C; row < hi*C; row++ {
		m := func(e int) float32 { return dW[e*stride+row] }
		// z = G^T m down the columns: three rows of four.
		var z [12]float32
		for j := 0; j < 4; j++ {
			m0, m1, m2, m3 := m(j), m(4+j), m(8+j), m(12+j)
			h := 0.5 * (m1 + m2)
			z[j], z[4+j], z[8+j] = m0+h, 0.5*(m1-m2), h+m3
		}
		out := dw[row*9 : row*9+9 : row*9+9]
		for i := 0; i < 3; i++ {
			m0, m1, m2, m3 := z[4*i], z[4*i+1], z[4*i+2], z[4*i+3]
			h := 0.5 * (m1 + m2)
			out[3*i], out[3*i+1], out[3*i+2] = m0+h, 0.5*(m1-m2), h+m3
		}
	}
}

// winoInput writes the transformed 4x4 input tiles B^T d B of channels
// [clo,chi) of images n0..n0+cnt-1 of x (N,C,H,W) into v (16,C,T): entry
// v[e, c, i*tiles + ty*tw + tx] for tile (ty,tx) of image n0+i, whose rows
// are 2ty-1..2ty+2 and columns 2tx-1..2tx+2 (zero outside the plane).
//
// Each plane is first copied into pad, the worker's zero-bordered plane,
// with every padded row split into its even columns E and odd columns O
// (half = tw+1 values each): tile tx then reads E[tx], O[tx], E[tx+1],
// O[tx+1], so neighbouring tiles read neighbouring values and a tile row
// transforms as a few vector operations (winoInputRowSIMD).
func winoInput(x []float32, g winoGeometry, C, n0, cnt, clo, chi int, v []float32, T int, pad []float32) {
	HW, TI, wp, half := g.H*g.W, g.tiles(), g.wp, g.tw+1
	plane := pad[:g.hp*wp]
	stride := planeStride(C * T)
	for c := clo; c < chi; c++ {
		for i := 0; i < cnt; i++ {
			src := x[((n0+i)*C+c)*HW : ((n0+i)*C+c+1)*HW]
			for h := 0; h < g.H; h++ {
				row := plane[(h+1)*wp : (h+2)*wp]
				e, o := row[:half], row[half:]
				xs := src[h*g.W : (h+1)*g.W]
				// Padded column w+1 holds column w: even w goes to O[w/2],
				// odd w to E[(w+1)/2].
				w := 2 * winoSplitRowSIMD(xs, o, e[1:])
				for ; w+1 < len(xs); w += 2 {
					o[w/2] = xs[w]
					e[w/2+1] = xs[w+1]
				}
				if w < len(xs) {
					o[w/2] = xs[w]
				}
			}
			base := c*T + i*TI
			for ty := 0; ty < g.th; ty++ {
				rows := plane[2*ty*wp : (2*ty+4)*wp]
				dst := v[base+ty*g.tw:]
				done := winoInputRowSIMD(rows, wp, half, dst, stride, g.tw)
				winoInputRowGo(rows, wp, half, dst, stride, done, g.tw)
			}
		}
	}
}

// winoInputRowGo transforms tiles [from,n) of one tile row: rows holds the
// four split padded rows wp apart, and entry e of tile tx goes to
// dst[e*stride+tx]. Down the columns, B^T combines rows (r0-r2, r1+r2,
// r2-r1, r1-r3); along each combined row (a, b, c, d) = (E[tx], O[tx],
// E[tx+1], O[tx+1]) it gives (a-c, b+c, c-b, b-d).
func winoInputRowGo(rows []float32, wp, half int, dst []float32, stride, from, n int) {
	r0, r1, r2, r3 := rows[:wp], rows[wp:2*wp], rows[2*wp:3*wp], rows[3*wp:4*wp]
	for tx := from; tx < n; tx++ {
		i0, i1 := tx, half+tx // E[tx] and O[tx]; E[tx+1] and O[tx+1] follow each
		// Down the columns: the four combined rows at (E[tx], O[tx], E[tx+1], O[tx+1]).
		a0, b0, c0, d0 := r0[i0]-r2[i0], r0[i1]-r2[i1], r0[i0+1]-r2[i0+1], r0[i1+1]-r2[i1+1]
		a1, b1, c1, d1 := r1[i0]+r2[i0], r1[i1]+r2[i1], r1[i0+1]+r2[i0+1], r1[i1+1]+r2[i1+1]
		a2, b2, c2, d2 := r2[i0]-r1[i0], r2[i1]-r1[i1], r2[i0+1]-r1[i0+1], r2[i1+1]-r1[i1+1]
		a3, b3, c3, d3 := r1[i0]-r3[i0], r1[i1]-r3[i1], r1[i0+1]-r3[i0+1], r1[i1+1]-r3[i1+1]
		// Along each combined row (a, b, c, d): (a-c, b+c, c-b, b-d).
		dst[tx], dst[stride+tx], dst[2*stride+tx], dst[3*stride+tx] = a0-c0, b0+c0, c0-b0, b0-d0
		dst[4*stride+tx], dst[5*stride+tx], dst[6*stride+tx], dst[7*stride+tx] = a1-c1, b1+c1, c1-b1, b1-d1
		dst[8*stride+tx], dst[9*stride+tx], dst[10*stride+tx], dst[11*stride+tx] = a2-c2, b2+c2, c2-b2, b2-d2
		dst[12*stride+tx], dst[13*stride+tx], dst[14*stride+tx], dst[15*stride+tx] = a3-c3, b3+c3, c3-b3, b3-d3
	}
}

// winoOutput writes y[n0+i, k] = A^T m A per tile for channels [klo,khi)
// from m (16,K,T), dropping the outputs of padded tiles past the edge.
func winoOutput(m []float32, g winoGeometry, K, n0, cnt, klo, khi int, y []float32, T int) {
	HW, TI := g.H*g.W, g.tiles()
	stride := planeStride(K * T)
	full := g.W / 2 // tiles whose two columns lie inside the plane
	for k := klo; k < khi; k++ {
		for i := 0; i < cnt; i++ {
			dst := y[((n0+i)*K+k)*HW : ((n0+i)*K+k+1)*HW]
			base := k*T + i*TI
			for ty := 0; ty < g.th; ty++ {
				mrow := m[base+ty*g.tw:]
				h := 2 * ty
				done := 0
				if h+1 < g.H {
					done = winoOutputRowSIMD(mrow, stride, dst[h*g.W:], dst[(h+1)*g.W:], full)
				}
				for tx := done; tx < g.tw; tx++ {
					winoOutputTile(mrow, stride, tx, dst, g, h, 2*tx)
				}
			}
		}
	}
}

// winoOutputTile writes the 2x2 outputs A^T m A of tile tx (entry e at
// m[e*stride+tx]) to rows h, h+1 and columns w, w+1 of the plane dst,
// those inside it.
func winoOutputTile(m []float32, stride, tx int, dst []float32, g winoGeometry, h, w int) {
	o := tx
	m0, m1, m2, m3 := m[o], m[stride+o], m[2*stride+o], m[3*stride+o]
	m4, m5, m6, m7 := m[4*stride+o], m[5*stride+o], m[6*stride+o], m[7*stride+o]
	m8, m9, m10, m11 := m[8*stride+o], m[9*stride+o], m[10*stride+o], m[11*stride+o]
	m12, m13, m14, m15 := m[12*stride+o], m[13*stride+o], m[14*stride+o], m[15*stride+o]
	// s = A^T m: two rows of four; then the same along the rows.
	s0, s1, s2, s3 := m0+m4+m8, m1+m5+m9, m2+m6+m10, m3+m7+m11
	q0, q1, q2, q3 := m4-m8-m12, m5-m9-m13, m6-m10-m14, m7-m11-m15
	dst[h*g.W+w] = s0 + s1 + s2
	if w+1 < g.W {
		dst[h*g.W+w+1] = s1 - s2 - s3
	}
	if h+1 < g.H {
		dst[(h+1)*g.W+w] = q0 + q1 + q2
		if w+1 < g.W {
			dst[(h+1)*g.W+w+1] = q1 - q2 - q3
		}
	}
}

// winoOutputGrad writes the transformed 2x2 output-gradient tiles A dy
// A^T of channels [klo,khi) into d (16,K,T), tile (ty,tx) covering rows
// 2ty..2ty+1 and columns 2tx..2tx+1 of dy (zero past the edge).
func winoOutputGrad(dy []float32, g winoGeometry, K, n0, cnt, klo, khi int, d []float32, T int) {
	HW, TI := g.H*g.W, g.tiles()
	stride := planeStride(K * T)
	full := g.W / 2
	for k := klo; k < khi; k++ {
		for i := 0; i < cnt; i++ {
			src := dy[((n0+i)*K+k)*HW : ((n0+i)*K+k+1)*HW]
			base := k*T + i*TI
			for ty := 0; ty < g.th; ty++ {
				drow := d[base+ty*g.tw:]
				h := 2 * ty
				done := 0
				if h+1 < g.H {
					done = winoGradRowSIMD(src[h*g.W:], src[(h+1)*g.W:], drow, stride, full)
				}
				for tx := done; tx < g.tw; tx++ {
					winoGradTile(src, g, h, 2*tx, drow, stride, tx)
				}
			}
		}
	}
}

// winoGradTile writes A g A^T for the 2x2 tile of plane src at rows h,
// h+1 and columns w, w+1 (zero past the edge) to d[e*stride+tx]. Rows of A
// g are (a,b), (a+c, b+e), (a-c, b-e), (-c,-e); each row (p,q) then
// becomes (p, p+q, p-q, -q).
func winoGradTile(src []float32, g winoGeometry, h, w int, d []float32, stride, tx int) {
	var a, b, c, e float32 // g[h,w], g[h,w+1], g[h+1,w], g[h+1,w+1]
	a = src[h*g.W+w]
	if w+1 < g.W {
		b = src[h*g.W+w+1]
	}
	if h+1 < g.H {
		c = src[(h+1)*g.W+w]
		if w+1 < g.W {
			e = src[(h+1)*g.W+w+1]
		}
	}
	o := tx
	p0, q0 := a, b
	p1, q1 := a+c, b+e
	p2, q2 := a-c, b-e
	p3, q3 := -c, -e
	d[o], d[stride+o], d[2*stride+o], d[3*stride+o] = p0, p0+q0, p0-q0, -q0
	d[4*stride+o], d[5*stride+o], d[6*stride+o], d[7*stride+o] = p1, p1+q1, p1-q1, -q1
	d[8*stride+o], d[9*stride+o], d[10*stride+o], d[11*stride+o] = p2, p2+q2, p2-q2, -q2
	d[12*stride+o], d[13*stride+o], d[14*stride+o], d[15*stride+o] = p3, p3+q3, p3-q3, -q3
}

// barrier makes n goroutines wait for one another, phase after phase.
// A waiter first spins, yielding its core now and then, for up to spin
// (the backend's, parallel.DefaultSpin unless $SIMCLR_CPU_SPIN says
// otherwise), then sleeps on the condition variable: at MLMC's
// small batches a Winograd layer's phases take tens to hundreds of
// microseconds, and waking a sleeping thread costs tens of microseconds on
// a virtual machine, so the spin lets the workers meet without a sleep and
// a wake whenever they finish a phase close together.
type barrier struct {
	mu      sync.Mutex
	cond    sync.Cond
	n, seen int
	spin    time.Duration
	phase   atomic.Uint64 // written under mu, read by spinning waiters
}

// reset prepares the barrier for n goroutines; nobody may be waiting.
func (br *barrier) reset(n int, spin time.Duration) {
	br.cond.L = &br.mu
	br.n, br.seen, br.spin = n, 0, spin
}

// wait returns once all n goroutines have called it for this phase.
func (br *barrier) wait() {
	if br.n <= 1 {
		return
	}
	br.mu.Lock()
	phase := br.phase.Load()
	br.seen++
	if br.seen == br.n {
		br.seen = 0
		br.phase.Add(1)
		br.mu.Unlock()
		br.cond.Broadcast()
		return
	}
	br.mu.Unlock()
	start := time.Now()
	for i := 1; br.phase.Load() == phase; i++ {
		if i%64 != 0 {
			continue
		}
		runtime.Gosched()
		if time.Since(start) > br.spin {
			break
		}
	}
	br.mu.Lock()
	for phase == br.phase.Load() {
		br.cond.Wait()
	}
	br.mu.Unlock()
}
