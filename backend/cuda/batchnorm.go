package cuda

import (
	"fmt"

	"github.com/simclr-go/simclr/tensor"
)

// Batch normalisation (kernels/batchnorm.cu; the CPU counterpart is
// backend/cpu/batchnorm.go).

// bnSplits is how many blocks share one channel's N*HW values in the BN
// reductions: enough blocks in all to fill the device (about 4 per SM),
// but at least blockSize*4 values per block.
func bnSplits(c, m, sms int) int {
	want := (4*max(sms, 1) + c - 1) / c
	most := max(1, m/(blockSize*4))
	return max(1, min(want, most, 256))
}

func checkBN(op string, s tensor.BNShape, perElem []tensor.Buffer, perChan []tensor.Buffer) {
	if s.N <= 0 || s.C <= 0 || s.HW <= 0 {
		panic(fmt.Sprintf("cuda: %s: invalid BN shape %+v", op, s))
	}
	for _, x := range perElem {
		if x.Len() != s.N*s.C*s.HW {
			panic(fmt.Sprintf("cuda: %s: buffer of %d elements for (N=%d, C=%d, HW=%d)", op, x.Len(), s.N, s.C, s.HW))
		}
	}
	for _, x := range perChan {
		if x != nil && x.Len() != s.C {
			panic(fmt.Sprintf("cuda: %s: per-channel buffer of %d elements for C=%d", op, x.Len(), s.C))
		}
	}
}

// BatchNormForwardTrain normalises x (N,C,HW) with the batch statistics
// (float64 sums), saves mean and invStd, and updates the running statistics
// when runMean and runVar are given.
func (b *Backend) BatchNormForwardTrain(s tensor.BNShape, x, gamma, beta, y, mean, invStd, runMean, runVar tensor.Buffer) {
	b.batchNormForwardTrain("BatchNormForwardTrain", s, x, gamma, beta, nil, y, mean, invStd, runMean, runVar, false)
}

// BatchNormAddReLUForwardTrain is BatchNormForwardTrain whose last kernel
// also adds residual (unless nil) and applies the ReLU (k_bn_apply_relu).
func (b *Backend) BatchNormAddReLUForwardTrain(s tensor.BNShape, x, gamma, beta, residual, y, mean, invStd, runMean, runVar tensor.Buffer) {
	b.batchNormForwardTrain("BatchNormAddReLUForwardTrain", s, x, gamma, beta, residual, y, mean, invStd, runMean, runVar, true)
}

func (b *Backend) batchNormForwardTrain(op string, s tensor.BNShape, x, gamma, beta, residual, y, mean, invStd, runMean, runVar tensor.Buffer, relu bool) {
	checkBN(op, s, []tensor.Buffer{x, y}, []tensor.Buffer{gamma, beta, mean, invStd, runMean, runVar})
	if residual != nil {
		checkBN(op, s, []tensor.Buffer{residual}, nil)
	}
	if (runMean == nil) != (runVar == nil) {
		panic("cuda: " + op + ": runMean and runVar must both be given or both be nil")
	}
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y, mean, invStd, runMean, runVar)
	m := s.N * s.HW
	splits := bnSplits(s.C, m, b.sms)
	partial := b.scratchLocked("batch-norm partial sums", uint64(s.C*splits*2*8))
	b.launch("k_bn_partial", splits, s.C, b.buf(x), s.N, s.C, s.HW, splits, partial)
	update := runMean != nil
	b.launch("k_bn_finalize", gridFor(s.C, b.sms), 1, partial, s.C, splits, m, s.Eps, s.Momentum, update,
		b.buf(mean), b.buf(invStd), b.ptr(runMean), b.ptr(runVar))
	if relu {
		b.launch("k_bn_apply_relu", gridFor(m*s.C, b.sms), 1, b.buf(x), b.ptr(residual), b.buf(y), b.buf(gamma), b.buf(beta), b.buf(mean), b.buf(invStd), s.N, s.C, s.HW)
		return
	}
	b.launch("k_bn_apply", gridFor(m*s.C, b.sms), 1, b.buf(x), b.buf(y), b.buf(gamma), b.buf(beta), b.buf(mean), b.buf(invStd), s.N, s.C, s.HW)
}

// BatchNormForwardEval: y = gamma (x - runMean) / sqrt(runVar + eps) + beta.
func (b *Backend) BatchNormForwardEval(s tensor.BNShape, x, gamma, beta, runMean, runVar, y tensor.Buffer) {
	checkBN("BatchNormForwardEval", s, []tensor.Buffer{x, y}, []tensor.Buffer{gamma, beta, runMean, runVar})
	b.enter()
	defer b.leave()
	defer b.wroteLocked(y)
	b.launch("k_bn_eval", gridFor(s.N*s.C*s.HW, b.sms), 1, b.buf(x), b.buf(y), b.buf(gamma), b.buf(beta),
		b.buf(runMean), b.buf(runVar), s.Eps, s.N, s.C, s.HW)
}

// BatchNormBackward writes dx, dgamma and dbeta from dy, x and the saved
// statistics.
func (b *Backend) BatchNormBackward(s tensor.BNShape, x, dy, gamma, mean, invStd, dx, dgamma, dbeta tensor.Buffer) {
	checkBN("BatchNormBackward", s, []tensor.Buffer{x, dy, dx}, []tensor.Buffer{gamma, mean, invStd, dgamma, dbeta})
	b.enter()
	defer b.leave()
	defer b.wroteLocked(dx, dgamma, dbeta)
	m := s.N * s.HW
	splits := bnSplits(s.C, m, b.sms)
	partial := b.scratchLocked("batch-norm partial sums", uint64(s.C*splits*2*8))
	sums := b.scratchLocked("batch-norm channel sums", uint64(s.C*2*8))
	b.launch("k_bn_bwd_partial", splits, s.C, b.buf(x), b.buf(dy), b.buf(mean), b.buf(invStd), s.N, s.C, s.HW, splits, partial)
	b.launch("k_bn_bwd_finalize", gridFor(s.C, b.sms), 1, partial, s.C, splits, b.buf(dgamma), b.buf(dbeta), sums)
	b.launch("k_bn_bwd_dx", gridFor(m*s.C, b.sms), 1, b.buf(x), b.buf(dy), b.buf(gamma), b.buf(mean), b.buf(invStd), sums, b.buf(dx), s.N, s.C, s.HW)
}
