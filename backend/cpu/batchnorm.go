package cpu

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// This file implements tensor.Normalization (batch norm here, group norm in groupnorm.go).
var _ tensor.Normalization = (*Backend)(nil)

// Batch normalisation as torch.nn.BatchNorm2d / BatchNorm1d,
// https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html.
// x is (N,C,HW); statistics are per channel over the M = N*HW values of
// the channel, accumulated in float64. Each goroutine owns whole channels.

func checkBN(s tensor.BNShape, x []float32, what string) {
	if s.N < 1 || s.C < 1 || s.HW < 1 {
		panic(fmt.Sprintf("cpu: invalid BN shape %+v", s))
	}
	if len(x) != s.N*s.C*s.HW { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("batch norm %s for %+v", what, s), x, s.N*s.C*s.HW)
	}
}

func checkChannels(s tensor.BNShape, what string, bufs ...[]float32) {
	for _, b := range bufs {
		if len(b) != s.C { // format the message only on failure: this runs every layer call
			checkLen(fmt.Sprintf("batch norm %s for %+v", what, s), b, s.C)
		}
	}
}

// BatchNormForwardTrain: x, y are (N,C,HW); gamma, beta, mean, invStd,
// runMean, runVar are (C). mean and invStd receive the batch mean and
// 1/sqrt(biased var + eps); runMean and runVar, when not nil, move towards
// the batch mean and the unbiased batch variance by Momentum.
func (b *Backend) BatchNormForwardTrain(s tensor.BNShape, x, gamma, beta, y, mean, invStd, runMean, runVar tensor.Buffer) {
	b.batchNormForwardTrain(s, x, gamma, beta, nil, y, mean, invStd, runMean, runVar, false)
}

// BatchNormAddReLUForwardTrain is BatchNormForwardTrain whose pass
// writing y also adds residual (unless nil) and applies the ReLU: one
// pass over y where the separate kernels make three. The result is the
// separate kernels' bit for bit (the same float32 operations in the same
// order).
func (b *Backend) BatchNormAddReLUForwardTrain(s tensor.BNShape, x, gamma, beta, residual, y, mean, invStd, runMean, runVar tensor.Buffer) {
	b.batchNormForwardTrain(s, x, gamma, beta, residual, y, mean, invStd, runMean, runVar, true)
}

// batchNormForwardTrain is both: with relu, y = max(bn(x) + residual, 0),
// residual nil meaning none.
func (b *Backend) batchNormForwardTrain(s tensor.BNShape, x, gamma, beta, residual, y, mean, invStd, runMean, runVar tensor.Buffer, relu bool) {
	xd, yd := Data(x), Data(y)
	var rd []float32
	if residual != nil {
		rd = Data(residual)
		checkBN(s, rd, "residual")
	}
	checkBN(s, xd, "input x")
	checkBN(s, yd, "output y")
	gd, bd, md, id := Data(gamma), Data(beta), Data(mean), Data(invStd)
	checkChannels(s, "gamma, beta, mean or invStd", gd, bd, md, id)
	var rmd, rvd []float32
	if (runMean == nil) != (runVar == nil) {
		panic("cpu: BatchNormForwardTrain needs both runMean and runVar, or neither")
	}
	if runMean != nil {
		rmd, rvd = Data(runMean), Data(runVar)
		checkChannels(s, "runMean or runVar", rmd, rvd)
	}
	N, C, HW := s.N, s.C, s.HW
	M := float64(N * HW)
	mom := float64(s.Momentum)
	b.parallelFor(C, N*HW, func(_, clo, chi int) {
		for c := clo; c < chi; c++ {
			// One pass over x shifted by one of its values: the shift keeps
			// sum(d^2) - sum(d)^2/M free of cancellation when the mean is
			// large relative to the spread.
			shift := float64(xd[c*HW])
			var sum, sq float64
			for n := 0; n < N; n++ {
				s1, s2 := sumAndSquares(xd[(n*C+c)*HW:(n*C+c+1)*HW], shift)
				sum += s1
				sq += s2
			}
			mu := shift + sum/M
			ss := max(sq-sum*sum/M, 0)
			variance := ss / M
			inv := 1 / math.Sqrt(variance+float64(s.Eps))
			md[c], id[c] = float32(mu), float32(inv)
			scale := float64(gd[c]) * inv
			sc, sh := float32(scale), float32(float64(bd[c])-mu*scale)
			for n := 0; n < N; n++ {
				lo, hi := (n*C+c)*HW, (n*C+c+1)*HW
				src, dst := xd[lo:hi], yd[lo:hi]
				switch {
				case !relu:
					for j := bnAffineSIMD(src, dst, sc, sh); j < len(src); j++ {
						dst[j] = src[j]*sc + sh
					}
				case rd == nil:
					for j := bnAffineReLUSIMD(src, nil, dst, sc, sh); j < len(src); j++ {
						t := src[j]*sc + sh
						dst[j] = math.Float32frombits(math.Float32bits(t) & positiveMask(t))
					}
				default:
					res := rd[lo:hi]
					for j := bnAffineReLUSIMD(src, res, dst, sc, sh); j < len(src); j++ {
						t := src[j]*sc + sh
						t += res[j]
						dst[j] = math.Float32frombits(math.Float32bits(t) & positiveMask(t))
					}
				}
			}
			if rmd != nil {
				unbiased := variance
				if M > 1 {
					unbiased = ss / (M - 1)
				}
				rmd[c] = float32((1-mom)*float64(rmd[c]) + mom*mu)
				rvd[c] = float32((1-mom)*float64(rvd[c]) + mom*unbiased)
			}
		}
	})
}

// BatchNormForwardEval: y = gamma (x - runMean) / sqrt(runVar + eps) + beta,
// x and y (N,C,HW), the others (C).
func (b *Backend) BatchNormForwardEval(s tensor.BNShape, x, gamma, beta, runMean, runVar, y tensor.Buffer) {
	xd, yd := Data(x), Data(y)
	checkBN(s, xd, "input x")
	checkBN(s, yd, "output y")
	gd, bd, rmd, rvd := Data(gamma), Data(beta), Data(runMean), Data(runVar)
	checkChannels(s, "gamma, beta, runMean or runVar", gd, bd, rmd, rvd)
	N, C, HW := s.N, s.C, s.HW
	b.parallelFor(C, N*HW, func(_, clo, chi int) {
		for c := clo; c < chi; c++ {
			scale := float64(gd[c]) / math.Sqrt(float64(rvd[c])+float64(s.Eps))
			sc, sh := float32(scale), float32(float64(bd[c])-float64(rmd[c])*scale)
			for n := 0; n < N; n++ {
				src, dst := xd[(n*C+c)*HW:(n*C+c+1)*HW], yd[(n*C+c)*HW:(n*C+c+1)*HW]
				for j, v := range src {
					dst[j] = v*sc + sh
				}
			}
		}
	})
}

// BatchNormBackward writes dx (N,C,HW) and dgamma, dbeta (C) from dy, the
// forward input x and the saved mean and invStd:
//
//	dbeta  = sum dy,  dgamma = sum dy xhat,  xhat = (x - mean) invStd
//	dx     = gamma invStd (dy - dbeta/M - xhat dgamma/M)
//
// dx may alias dy.
func (b *Backend) BatchNormBackward(s tensor.BNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta tensor.Buffer) {
	xd, dyd, dxd := Data(x), Data(dy), Data(dx)
	checkBN(s, xd, "input x")
	checkBN(s, dyd, "output gradient dy")
	checkBN(s, dxd, "input gradient dx")
	gd, md, id, dgd, dbd := Data(gamma), Data(mean), Data(invStd), Data(dgamma), Data(dbeta)
	checkChannels(s, "gamma, mean, invStd, dgamma or dbeta", gd, md, id, dgd, dbd)
	N, C, HW := s.N, s.C, s.HW
	M := float64(N * HW)
	b.parallelFor(C, 2*N*HW, func(_, clo, chi int) {
		for c := clo; c < chi; c++ {
			mu, inv := md[c], float64(id[c])
			var sumDy, sumDyXc float64
			for n := 0; n < N; n++ {
				s1, s2 := sumAndDot(dyd[(n*C+c)*HW:(n*C+c+1)*HW], xd[(n*C+c)*HW:(n*C+c+1)*HW], mu)
				sumDy += s1
				sumDyXc += s2
			}
			dgamma := sumDyXc * inv
			dgd[c], dbd[c] = float32(dgamma), float32(sumDy)
			// dx = k (dy - sumDy/M - (x-mu) inv^2 sumDyXc/M) = k dy + a x + a0
			k := float64(gd[c]) * inv
			a := -k * inv * inv * sumDyXc / M
			a0 := -k*sumDy/M - a*float64(mu)
			kf, af, a0f := float32(k), float32(a), float32(a0)
			for n := 0; n < N; n++ {
				xs, dys, dxs := xd[(n*C+c)*HW:(n*C+c+1)*HW], dyd[(n*C+c)*HW:(n*C+c+1)*HW], dxd[(n*C+c)*HW:(n*C+c+1)*HW]
				for j := bnBackwardDxSIMD(dys, xs, dxs, kf, af, a0f); j < len(dys); j++ {
					dxs[j] = kf*dys[j] + af*xs[j] + a0f
				}
			}
		}
	})
}

// sumAndSquares returns sum(x - shift) and sum((x - shift)^2) in float64,
// with four independent accumulators each so the additions pipeline.
func sumAndSquares(x []float32, shift float64) (sum, sq float64) {
	var lanes [8]float64
	i := bnSumSquaresSIMD(x, shift, &lanes)
	s0, s1, s2, s3, q0, q1, q2, q3 := lanes[0], lanes[1], lanes[2], lanes[3], lanes[4], lanes[5], lanes[6], lanes[7]
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		d0, d1, d2, d3 := float64(v[0])-shift, float64(v[1])-shift, float64(v[2])-shift, float64(v[3])-shift
		s0, s1, s2, s3 = s0+d0, s1+d1, s2+d2, s3+d3
		q0, q1, q2, q3 = q0+d0*d0, q1+d1*d1, q2+d2*d2, q3+d3*d3
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - shift
		s0 += d
		q0 += d * d
	}
	return (s0 + s1) + (s2 + s3), (q0 + q1) + (q2 + q3)
}

// sumAndDot returns sum(g) and sum(g (x - mu)) in float64 (len(x) >=
// len(g)), with four accumulators each.
func sumAndDot(g, x []float32, mu float32) (sum, dot float64) {
	x = x[:len(g)]
	var lanes [8]float64
	i := bnSumDotSIMD(g, x, mu, &lanes)
	s0, s1, s2, s3, p0, p1, p2, p3 := lanes[0], lanes[1], lanes[2], lanes[3], lanes[4], lanes[5], lanes[6], lanes[7]
	for ; i+4 <= len(g); i += 4 {
		gv, xv := g[i:i+4:i+4], x[i:i+4:i+4]
		s0, s1, s2, s3 = s0+float64(gv[0]), s1+float64(gv[1]), s2+float64(gv[2]), s3+float64(gv[3])
		p0 += float64(gv[0]) * float64(xv[0]-mu)
		p1 += float64(gv[1]) * float64(xv[1]-mu)
		p2 += float64(gv[2]) * float64(xv[2]-mu)
		p3 += float64(gv[3]) * float64(xv[3]-mu)
	}
	for ; i < len(g); i++ {
		s0 += float64(g[i])
		p0 += float64(g[i]) * float64(x[i]-mu)
	}
	return (s0 + s1) + (s2 + s3), (p0 + p1) + (p2 + p3)
}
