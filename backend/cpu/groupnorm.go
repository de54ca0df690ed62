package cpu

import (
	"fmt"
	"math"

	"github.com/simclr-go/simclr/tensor"
)

// Group normalisation as torch.nn.GroupNorm(G, C),
// https://pytorch.org/docs/stable/generated/torch.nn.GroupNorm.html.
// x is (N,C,HW); the C channels form G groups of Cg = C/G consecutive
// channels, and statistics are per image and group over the M = Cg*HW
// values, which are contiguous in memory: x[(n*C + g*Cg)*HW : ...+M].
// Sums are float64. Each goroutine owns whole (image, group) pairs.

func checkGN(s tensor.GNShape, x []float32, what string) {
	if s.N < 1 || s.C < 1 || s.HW < 1 || s.G < 1 || s.C%s.G != 0 {
		panic(fmt.Sprintf("cpu: invalid group norm shape %+v (C must be a multiple of G)", s))
	}
	if len(x) != s.N*s.C*s.HW { // format the message only on failure: this runs every layer call
		checkLen(fmt.Sprintf("group norm %s for %+v", what, s), x, s.N*s.C*s.HW)
	}
}

func checkGNLen(s tensor.GNShape, what string, n int, bufs ...[]float32) {
	for _, b := range bufs {
		if len(b) != n {
			checkLen(fmt.Sprintf("group norm %s for %+v", what, s), b, n)
		}
	}
}

// GroupNormForward: x, y are (N,C,HW); gamma, beta are (C); mean and
// invStd, unless nil, receive the (N,G) means and 1/sqrt(biased var + eps).
func (b *Backend) GroupNormForward(s tensor.GNShape, x, gamma, beta, y, mean, invStd tensor.Buffer) {
	xd, yd := Data(x), Data(y)
	checkGN(s, xd, "input x")
	checkGN(s, yd, "output y")
	gd, bd := Data(gamma), Data(beta)
	checkGNLen(s, "gamma or beta", s.C, gd, bd)
	if (mean == nil) != (invStd == nil) {
		panic("cpu: GroupNormForward needs both mean and invStd, or neither")
	}
	var md, id []float32
	if mean != nil {
		md, id = Data(mean), Data(invStd)
		checkGNLen(s, "mean or invStd", s.N*s.G, md, id)
	}
	C, HW, G := s.C, s.HW, s.G
	cg := C / G
	M := float64(cg * HW)
	b.parallelFor(s.N*G, cg*HW, func(_, lo, hi int) {
		for ng := lo; ng < hi; ng++ {
			n, g := ng/G, ng%G
			base := (n*C + g*cg) * HW
			xs := xd[base : base+cg*HW]
			// Shifted by one of its values, as in BatchNormForwardTrain, so
			// sum(d^2) - sum(d)^2/M does not cancel when the mean is large.
			shift := float64(xs[0])
			sum, sq := sumAndSquares(xs, shift)
			mu := shift + sum/M
			inv := 1 / math.Sqrt(max(sq-sum*sum/M, 0)/M+float64(s.Eps))
			if md != nil {
				md[ng], id[ng] = float32(mu), float32(inv)
			}
			for j := 0; j < cg; j++ {
				c := g*cg + j
				scale := float64(gd[c]) * inv
				sc, sh := float32(scale), float32(float64(bd[c])-mu*scale)
				src, dst := xs[j*HW:(j+1)*HW], yd[base+j*HW:base+(j+1)*HW]
				for i, v := range src {
					dst[i] = v*sc + sh
				}
			}
		}
	})
}

// GroupNormBackward writes dx (N,C,HW) and dgamma, dbeta (C) from dy, the
// forward input x and the saved (N,G) mean and invStd. Within one group of
// image n, with xhat = (x - mean) invStd and sums over the group's M values,
//
//	dx     = invStd (gamma dy - A/M - xhat B/M),  A = sum gamma dy,  B = sum gamma dy xhat
//	dgamma = sum over n and HW of dy xhat,       dbeta = sum over n and HW of dy
//
// dx may alias dy. The per-(image, channel) sums of dy and dy (x - mean)
// serve both: they are kept in float64 scratch between the two passes.
func (b *Backend) GroupNormBackward(s tensor.GNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta tensor.Buffer) {
	xd, dyd, dxd := Data(x), Data(dy), Data(dx)
	checkGN(s, xd, "input x")
	checkGN(s, dyd, "output gradient dy")
	checkGN(s, dxd, "input gradient dx")
	gd, dgd, dbd := Data(gamma), Data(dgamma), Data(dbeta)
	checkGNLen(s, "gamma, dgamma or dbeta", s.C, gd, dgd, dbd)
	md, id := Data(mean), Data(invStd)
	checkGNLen(s, "mean or invStd", s.N*s.G, md, id)
	N, C, HW, G := s.N, s.C, s.HW, s.G
	cg := C / G
	M := float64(cg * HW)

	b.mu.Lock()
	defer b.mu.Unlock()
	if cap(b.normSums) < 2*N*C {
		b.normSums = make([]float64, 2*N*C)
	}
	sums := b.normSums[:2*N*C] // (N,C) pairs: sum dy, sum dy (x - mean)

	b.parallelFor(N*G, 2*cg*HW, func(_, lo, hi int) {
		for ng := lo; ng < hi; ng++ {
			n, g := ng/G, ng%G
			base := (n*C + g*cg) * HW
			mu, inv := md[ng], float64(id[ng])
			var sumA, sumB float64 // sum gamma dy, sum gamma dy (x - mean)
			for j := 0; j < cg; j++ {
				c := g*cg + j
				s1, s2 := sumAndDot(dyd[base+j*HW:base+(j+1)*HW], xd[base+j*HW:base+(j+1)*HW], mu)
				sums[2*(n*C+c)], sums[2*(n*C+c)+1] = s1, s2
				sumA += float64(gd[c]) * s1
				sumB += float64(gd[c]) * s2
			}
			// dx = inv gamma dy - inv A/M - (x - mu) inv^3 B/M = k_c dy + a x + a0
			a := -inv * inv * inv * sumB / M
			a0 := -inv*sumA/M - a*float64(mu)
			af, a0f := float32(a), float32(a0)
			for j := 0; j < cg; j++ {
				kf := float32(inv * float64(gd[g*cg+j]))
				off := base + j*HW
				xs, dys, dxs := xd[off:off+HW], dyd[off:off+HW], dxd[off:off+HW]
				for i, v := range dys {
					dxs[i] = kf*v + af*xs[i] + a0f
				}
			}
		}
	})
	b.parallelFor(C, 2*N, func(_, lo, hi int) {
		for c := lo; c < hi; c++ {
			g := c / cg
			var sdy, sdyx float64
			for n := 0; n < N; n++ {
				sdy += sums[2*(n*C+c)]
				sdyx += sums[2*(n*C+c)+1] * float64(id[n*G+g])
			}
			dgd[c], dbd[c] = float32(sdyx), float32(sdy)
		}
	})
}
