package cuda

import (
	"fmt"
	"unsafe"
)

// The bf16 precision: convolutions and linear layers take bf16 copies of
// their fp32 operands and accumulate in fp32 (cuDNN's bf16 data type with a
// float compute type; cublasGemmEx with CUBLAS_COMPUTE_32F). Everything
// else, the parameters, their gradients, batch norm, the loss and the
// optimiser, stays fp32, so checkpoints and every buffer the backend hands
// out are those of the fp32 and tf32 runs. The copies are made by the
// kernels of kernels/bf16.cu. A weight's copy is kept until the weight is
// written (bf16cache.go); the copies of activations and gradients go into
// scratch blocks reused by every layer (one stream: a layer's copies are
// consumed before the next layer overwrites them).

// Scratch names of the bf16 copies.
const (
	bf16ConvIn         = "bf16 copy of a convolution's input or input gradient"
	bf16ConvFilterGrad = "bf16 filter gradient of a convolution"
	bf16ConvOut        = "bf16 copy of a convolution's output or output gradient"
	bf16MatA           = "bf16 copy of a matrix product's first operand"
	bf16MatB           = "bf16 copy of a matrix product's second operand"
)

// checkBF16 refuses the bf16 precision where the device or a library lacks
// it: tensor cores with bf16 need compute capability 8.0, the product of
// mixed types needs cublasGemmEx, and cuDNN must accept bf16 tensors and
// find a bf16 convolution algorithm for a small problem on this device.
func (b *Backend) checkBF16() error {
	if b.major < 8 {
		return fmt.Errorf("cuda: precision bf16 needs a GPU of compute capability 8.0 (Ampere) or newer, but %s is sm_%d%d: use precision fp32 (or tf32, which is fp32 on this GPU)",
			b.devName, b.major, b.minor)
	}
	if b.libs.cublas.gemmEx == 0 {
		return fmt.Errorf("cuda: precision bf16 needs cublasGemmEx, which cuBLAS at %s lacks: install cuBLAS 11 or newer, or use precision tf32", b.libs.cublas.lib.path)
	}
	c := &b.libs.cudnn
	var x, y, w, conv uintptr
	defer func() {
		for _, d := range []uintptr{x, y} {
			if d != 0 {
				mustCall(c.destroyTensor, d)
			}
		}
		if w != 0 {
			mustCall(c.destroyFilter, w)
		}
		if conv != 0 {
			mustCall(c.destroyConv, conv)
		}
	}()
	refuse := func(err error) error {
		return fmt.Errorf("cuda: precision bf16 needs bf16 convolutions, which cuDNN %s at %s refuses on %s (%v): use precision tf32, or a cuDNN with bf16 support",
			b.versions.CUDNN, c.lib.path, b.devName, err)
	}
	// One 3x3 convolution of 8 channels on a 4x4 image, in NHWC bf16.
	for _, step := range []struct {
		what string
		r    uintptr
	}{
		{"cudnnCreateTensorDescriptor", mustCall(c.createTensor, uintptr(unsafe.Pointer(&x)))},
		{"cudnnCreateTensorDescriptor", mustCall(c.createTensor, uintptr(unsafe.Pointer(&y)))},
		{"cudnnCreateFilterDescriptor", mustCall(c.createFilter, uintptr(unsafe.Pointer(&w)))},
		{"cudnnCreateConvolutionDescriptor", mustCall(c.createConv, uintptr(unsafe.Pointer(&conv)))},
	} {
		if err := c.check(step.what, step.r); err != nil {
			return refuse(err)
		}
	}
	for _, step := range []struct {
		what string
		call func() uintptr
	}{
		{"cudnnSetTensor4dDescriptor(bf16 NHWC)", func() uintptr {
			return mustCall(c.setTensor4d, x, cudnnTensorNHWC, cudnnDataBFloat16, 1, 8, 4, 4)
		}},
		{"cudnnSetTensor4dDescriptor(bf16 NHWC)", func() uintptr {
			return mustCall(c.setTensor4d, y, cudnnTensorNHWC, cudnnDataBFloat16, 1, 8, 4, 4)
		}},
		{"cudnnSetFilter4dDescriptor(bf16 NHWC)", func() uintptr {
			return mustCall(c.setFilter4d, w, cudnnDataBFloat16, cudnnTensorNHWC, 8, 8, 3, 3)
		}},
		{"cudnnSetConvolution2dDescriptor", func() uintptr {
			return mustCall(c.setConv2d, conv, 1, 1, 1, 1, 1, 1, cudnnCrossCorrelation, cudnnDataFloat)
		}},
		{"cudnnSetConvolutionMathType", func() uintptr { return mustCall(c.setConvMath, conv, cudnnTensorOpMath) }},
	} {
		if err := c.check(step.what, step.call()); err != nil {
			return refuse(err)
		}
	}
	raw := make([]byte, cudnnMaxAlgosRequested*cudnnAlgoPerfSize)
	var count int32
	if err := c.check("cudnnGetConvolutionForwardAlgorithm_v7(bf16)", mustCall(c.getFwdV7, b.cudnnHandle, x, w, conv, y, cudnnMaxAlgosRequested,
		uintptr(unsafe.Pointer(&count)), uintptr(unsafe.Pointer(&raw[0])))); err != nil {
		return refuse(err)
	}
	for _, p := range parsePerf(raw, int(count)) {
		if p.status == cudnnStatusSuccess {
			return nil
		}
	}
	return refuse(fmt.Errorf("no forward algorithm among %d supports it", count))
}

// bf16TileGrid is the grid of the tiled layout changes of kernels/bf16.cu
// over n images of c channels and hw positions: one block per tile of 32
// channels by 32 positions, at most 32 blocks per SM (each block walks
// further tiles).
func bf16TileGrid(n, c, hw, sms int) int {
	tiles := n * ((c + 31) / 32) * ((hw + 31) / 32)
	return max(1, min(tiles, max(sms, 1)*32))
}

// toBF16NHWC copies the fp32 (n, c, hw) array at src into the scratch
// block name as bf16 (n, hw, c) and returns the copy's address.
func (b *Backend) toBF16NHWC(name string, src uint64, n, c, hw int) uint64 {
	dst := b.scratchLocked(name, uint64(n*c*hw)*2)
	b.narrowNHWC(src, dst, n, c, hw)
	return dst
}

// narrowNHWC writes the fp32 (n, c, hw) array at src into dst as bf16
// (n, hw, c).
func (b *Backend) narrowNHWC(src, dst uint64, n, c, hw int) {
	if n*c*hw > 0 {
		b.conversions.narrow++
		b.launch("k_nchw_to_nhwc_bf16", bf16TileGrid(n, c, hw, b.sms), 1, src, dst, n, c, hw)
	}
}

// fromBF16NHWC writes the bf16 (n, hw, c) array at src into dst as fp32
// (n, c, hw).
func (b *Backend) fromBF16NHWC(src, dst uint64, n, c, hw int) {
	if n*c*hw > 0 {
		b.conversions.widen++
		b.launch("k_nhwc_bf16_to_nchw", bf16TileGrid(n, c, hw, b.sms), 1, src, dst, n, c, hw)
	}
}

// toBF16 copies n fp32 values at src into the scratch block name as bf16.
func (b *Backend) toBF16(name string, src uint64, n int) uint64 {
	dst := b.scratchLocked(name, uint64(n)*2)
	b.narrow(src, dst, n)
	return dst
}

// narrow writes n fp32 values at src into dst as bf16.
func (b *Backend) narrow(src, dst uint64, n int) {
	if n > 0 {
		b.conversions.narrow++
		b.launch("k_to_bf16", gridFor(n, b.sms), 1, src, dst, n)
	}
}

// gemmBF16 is gemm with a and bm rounded to bf16 copies (a has rowsA rows
// of lda, bm rowsB rows of ldb, as stored) and the product summed in fp32
// into the fp32 c by cublasGemmEx.
// When weightB is set, bm is a layer's weight and its bf16 copy comes from
// the weight cache (bf16cache.go) instead of a conversion per call.
func (b *Backend) gemmBF16(transA, transB bool, m, n, k int, a uint64, rowsA, lda int, bm uint64, rowsB, ldb int, weightB bool, beta float32, c uint64, ldc int) {
	if b.err != nil {
		return
	}
	a16 := b.toBF16(bf16MatA, a, rowsA*lda)
	var b16 uint64
	if weightB {
		b16 = b.cachedBF16(bm, rowsB*ldb, 0, 0)
	} else {
		b16 = b.toBF16(bf16MatB, bm, rowsB*ldb)
	}
	if b.err != nil {
		return
	}
	cb := &b.libs.cublas
	op := func(t bool) uintptr {
		if t {
			return cublasOpT
		}
		return cublasOpN
	}
	alpha := float32(1)
	b.used(a16, b16, c)
	b.fail(cb.check(fmt.Sprintf("cublasGemmEx(bf16, m=%d n=%d k=%d)", m, n, k), mustCall(cb.gemmEx, b.cublasHandle, op(transB), op(transA),
		uintptr(n), uintptr(m), uintptr(k), uintptr(unsafe.Pointer(&alpha)), uintptr(b16), cudaR16BF, uintptr(ldb), uintptr(a16), cudaR16BF, uintptr(lda),
		uintptr(unsafe.Pointer(&beta)), uintptr(c), cudaR32F, uintptr(ldc), cublasCompute32F, cublasGemmDefaultTC)))
}
