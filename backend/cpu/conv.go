package cpu

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// This file implements tensor.Convolution (the convolution).
var _ tensor.Convolution = (*Backend)(nil)

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
