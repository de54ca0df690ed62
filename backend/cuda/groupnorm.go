package cuda

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// Group normalisation (kernels/groupnorm.cu; the CPU counterpart is
// backend/cpu/groupnorm.go).

func checkGN(op string, s tensor.GNShape, perElem, perChan, perGroup []tensor.Buffer) {
	if s.N <= 0 || s.C <= 0 || s.HW <= 0 || s.G <= 0 || s.C%s.G != 0 {
		panic(fmt.Sprintf("cuda: %s: invalid group norm shape %+v (C must be a multiple of G)", op, s))
	}
	for _, x := range perElem {
		if x.Len() != s.N*s.C*s.HW {
			panic(fmt.Sprintf("cuda: %s: buffer of %d elements for (N=%d, C=%d, HW=%d)", op, x.Len(), s.N, s.C, s.HW))
		}
	}
	for _, x := range perChan {
		if x.Len() != s.C {
			panic(fmt.Sprintf("cuda: %s: per-channel buffer of %d elements for C=%d", op, x.Len(), s.C))
		}
	}
	for _, x := range perGroup {
		if x != nil && x.Len() != s.N*s.G {
			panic(fmt.Sprintf("cuda: %s: per-group buffer of %d elements for N*G = %d*%d", op, x.Len(), s.N, s.G))
		}
	}
}

// GroupNormForward normalises x (N,C,HW) per image and group (float64
// sums), saving the (N,G) mean and invStd unless they are nil.
func (b *Backend) GroupNormForward(s tensor.GNShape, x, gamma, beta, y, mean, invStd tensor.Buffer) {
	checkGN("GroupNormForward", s, []tensor.Buffer{x, y}, []tensor.Buffer{gamma, beta}, []tensor.Buffer{mean, invStd})
	if (mean == nil) != (invStd == nil) {
		panic("cuda: GroupNormForward: mean and invStd must both be given or both be nil")
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y, mean, invStd)
	b.launch("k_gn_fwd", s.N*s.G, 1, b.buf(x), b.buf(y), b.buf(gamma), b.buf(beta), b.ptr(mean), b.ptr(invStd),
		s.N, s.C, s.HW, s.G, s.Eps)
}

// GroupNormBackward writes dx, dgamma and dbeta from dy, x and the saved
// statistics: one kernel per (image, group) for dx and the per-(image,
// channel) sums, one per channel for dgamma and dbeta.
func (b *Backend) GroupNormBackward(s tensor.GNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta tensor.Buffer) {
	checkGN("GroupNormBackward", s, []tensor.Buffer{x, dy, dx}, []tensor.Buffer{gamma, dgamma, dbeta}, []tensor.Buffer{mean, invStd})
	if mean == nil || invStd == nil {
		panic("cuda: GroupNormBackward needs the mean and invStd its forward pass saved")
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dx, dgamma, dbeta)
	sums := b.scratchLocked("group-norm channel sums", uint64(s.N*s.C*2*8))
	b.launch("k_gn_bwd_dx", s.N*s.G, 1, b.buf(x), b.buf(dy), b.buf(gamma), b.buf(mean), b.buf(invStd), b.buf(dx), sums,
		s.N, s.C, s.HW, s.G)
	b.launch("k_gn_bwd_params", gridFor(s.C, b.sms), 1, sums, b.buf(invStd), b.buf(dgamma), b.buf(dbeta), s.N, s.C, s.G)
}
