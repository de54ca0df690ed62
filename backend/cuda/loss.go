package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/simclr-go/simclr/tensor"
)

// ntxentPlan is the scratch of the NT-Xent kernel for one (views, d).
type ntxentPlan struct {
	zn, norms, s, g, dzn, terms uint64
	urow                        uint64 // SogCLR's u_i of each view
}

func (b *Backend) ntxentPlanLocked(rows, d int) *ntxentPlan {
	key := [2]int{rows, d}
	if p := b.ntx[key]; p != nil {
		return p
	}
	p := &ntxentPlan{}
	for _, a := range []struct {
		dst   *uint64
		bytes int
		what  string
	}{
		{&p.zn, rows * d * 4, "NT-Xent normalised projections"},
		{&p.norms, rows * 4, "NT-Xent row norms"},
		{&p.s, rows * rows * 4, "NT-Xent similarity matrix"},
		{&p.g, rows * rows * 4, "NT-Xent similarity gradient"},
		{&p.dzn, rows * d * 4, "NT-Xent gradient of the normalised projections"},
		{&p.terms, rows * 2 * 8, "NT-Xent per-view loss terms"},
		{&p.urow, rows * 4, "SogCLR per-view averages"},
	} {
		ptr, err := b.arena.alloc(uint64(a.bytes), fmt.Sprintf("%s (%d views, d=%d)", a.what, rows, d))
		if err != nil {
			b.fail(err)
			return nil
		}
		*a.dst = ptr
	}
	b.ntx[key] = p
	return p
}

// NTXent is the SimCLR loss of docs/definitions.md, section 4 "Contrastive
// learning as a biased oracle" on z (2n x d): rows are L2-normalised, the
// similarity matrix is one cuBLAS product (always FP32: the loss is cheap and
// TF32 would cost it three digits), each row's log-sum-exp over the batch and
// over its half is computed in double, and dz = (G + G^T) zn pushed back
// through the normalisation.
func (b *Backend) NTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) tensor.LossResult {
	checkNTXent(n, d, tau, multilevel, z, dz)
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dz)
	b.queueNTXentLocked(n, d, tau, multilevel, z, dz)
	return b.readNTXentLocked(multilevel)
}

func checkNTXent(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) {
	rows := 2 * n
	if n < 1 || d < 1 || z.Len() != rows*d || dz.Len() != rows*d {
		panic(fmt.Sprintf("cuda: NTXent(n=%d, d=%d): z has %d, dz has %d elements, want %d", n, d, z.Len(), dz.Len(), rows*d))
	}
	if multilevel && n%2 != 0 {
		panic(fmt.Sprintf("cuda: NTXent: multilevel needs an even number of images, got %d", n))
	}
	if !(tau > 0) {
		panic(fmt.Sprintf("cuda: NTXent: temperature %g must be positive", tau))
	}
}

// queueNTXentLocked queues the loss and its gradient, leaving the three
// scalars (L_B and the halves' losses) in the scalars block.
func (b *Backend) queueNTXentLocked(n, d int, tau float32, multilevel bool, z, dz tensor.Buffer) {
	if b.err != nil {
		return
	}
	rows := 2 * n
	p := b.pairwiseLocked(rows, d, z, dz, func(p *ntxentPlan) {
		b.launch("k_ntxent_rows", rows, 1, p.s, p.g, p.terms, rows, tau, multilevel)
	})
	if p == nil {
		return
	}
	b.launch("k_ntxent_sum", 1, 1, p.terms, rows, multilevel, b.scalars+scalarNTXent)
}

// readNTXentLocked reads the scalars queueNTXentLocked left (NaN after a
// failure).
func (b *Backend) readNTXentLocked(multilevel bool) tensor.LossResult {
	nan := tensor.LossResult{Loss: math.NaN(), Full: math.NaN()}
	if b.err != nil {
		return nan
	}
	b.copyToHost(unsafe.Pointer(&b.hostScalars[0]), b.scalars+scalarNTXent, 3*8)
	if b.err != nil {
		return nan
	}
	full, h1, h2 := b.hostScalars[0], b.hostScalars[1], b.hostScalars[2]
	if multilevel {
		return tensor.LossResult{Loss: full - (h1+h2)/2, Full: full}
	}
	return tensor.LossResult{Loss: full, Full: full}
}

// pairwiseLocked runs what NT-Xent and the decoupled losses share on z
// (rows x d): the rows normalised, their similarities S = zn zn^T, the
// loss's own rows kernel (which fills p.g = dL/dS and p.terms from p.s),
// and dz = (G + G^T) zn pushed back through the normalisation. It returns
// the plan holding p.terms, or nil when the plan could not be made.
func (b *Backend) pairwiseLocked(rows, d int, z, dz tensor.Buffer, rowsKernel func(p *ntxentPlan)) *ntxentPlan {
	p := b.ntxentPlanLocked(rows, d)
	if p == nil {
		return nil
	}
	b.launch("k_l2norm_rows", rows, 1, b.buf(z), p.zn, p.norms, rows, d)
	b.gemm(false, true, rows, rows, d, 1, p.zn, d, p.zn, d, 0, p.s, rows, false)
	rowsKernel(p)
	b.gemm(false, false, rows, d, rows, 1, p.g, rows, p.zn, d, 0, p.dzn, d, false)
	b.gemm(true, false, rows, d, rows, 1, p.g, rows, p.zn, d, 1, p.dzn, d, false)
	b.launch("k_l2norm_bwd", rows, 1, p.zn, p.dzn, p.norms, b.buf(dz), rows, d)
	return p
}

// Decoupled is tensor.DecoupledLoss: DCL (u nil) or a SogCLR step on z
// (2n x d), as NTXent is computed, with the rows of the loss in
// k_decoupled_rows and SogCLR's u updated in place by k_u_mean.
func (b *Backend) Decoupled(n, d int, tau, gamma float32, u, z, dz tensor.Buffer) tensor.LossResult {
	rows := 2 * n
	if n < 2 || d < 1 || z.Len() != rows*d || dz.Len() != rows*d || (u != nil && u.Len() != n) {
		panic(fmt.Sprintf("cuda: Decoupled(n=%d, d=%d): z has %d, dz has %d elements, want %d (and n >= 2, u of n)", n, d, z.Len(), dz.Len(), rows*d))
	}
	if !(tau > 0) || (u != nil && !(gamma > 0 && gamma <= 1)) {
		panic(fmt.Sprintf("cuda: Decoupled: temperature %g must be positive and gamma %g in (0, 1]", tau, gamma))
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(u, dz)
	nan := tensor.LossResult{Loss: math.NaN(), Full: math.NaN()}
	if b.err != nil {
		return nan
	}
	sog, uimg := 0, uint64(0)
	if u != nil {
		sog, uimg = 1, b.ptr(u)
	}
	p := b.pairwiseLocked(rows, d, z, dz, func(p *ntxentPlan) {
		b.launch("k_decoupled_rows", rows, 1, p.s, p.g, p.terms, uimg, p.urow, rows, tau, gamma, sog)
	})
	if p == nil {
		return nan
	}
	if u != nil {
		b.launch("k_u_mean", gridFor(n, b.sms), 1, p.urow, uimg, n)
	}
	b.launch("k_ntxent_sum", 1, 1, p.terms, rows, 0, b.scalars+scalarNTXent)
	if b.err != nil {
		return nan
	}
	b.copyToHost(unsafe.Pointer(&b.hostScalars[0]), b.scalars+scalarNTXent, 8)
	if b.err != nil {
		return nan
	}
	return tensor.LossResult{Loss: b.hostScalars[0], Full: b.hostScalars[0]}
}

var _ tensor.DecoupledLoss = (*Backend)(nil)
