package blas

import (
	"fmt"
	"testing"
)

// benchShape is an SGEMM shape worth timing.
type benchShape struct {
	name           string
	transA, transB bool
	m, n, k        int
}

// im2colShapes are the GEMMs of a ResNet-18 convolution on 32x32 inputs with
// a batch of 64 images, as the CPU backend lowers them (weights (K, C*R*S)
// times columns (C*R*S, N*H*W)): the forward product of the first stage's
// 3x3 convolutions (64 channels, 32x32), of the last stage's (512 channels,
// 4x4), and the weight gradient of the first stage (dY times columns^T).
var im2colShapes = []benchShape{
	{"conv64x32x32_fwd", false, false, 64, 64 * 1024, 576},
	{"conv512x4x4_fwd", false, false, 512, 64 * 16, 4608},
	{"conv64x32x32_dW", false, true, 64, 576, 64 * 1024},
}

func benchGemm(b *testing.B, g Gemm, s benchShape) {
	aLen, bLen := s.m*s.k, s.k*s.n
	a, bm, c := make([]float32, aLen), make([]float32, bLen), make([]float32, s.m*s.n)
	for i := range a {
		a[i] = float32(i%13) * 0.1
	}
	for i := range bm {
		bm[i] = float32(i%7) * 0.1
	}
	lda, ldb := s.k, s.n
	if s.transA {
		lda = s.m
	}
	if s.transB {
		ldb = s.k
	}
	b.ResetTimer()
	for b.Loop() {
		g.Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, lda, bm, ldb, 0, c, s.n)
	}
	b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// benchImpls lists the implementations to time: the pure-Go SGEMM on one
// and two threads, the portable kernel (when a SIMD one is used) if
// withGeneric, and OpenBLAS when the machine has it.
func benchImpls(b *testing.B, withGeneric bool) []struct {
	name string
	g    Gemm
} {
	impls := []struct {
		name string
		g    Gemm
	}{
		{"PureGo1", PureGo(1)},
		{"PureGo2", PureGo(2)},
	}
	if kern := bestKernel(); withGeneric && kern.name != genericKernel.name {
		impls = append(impls, struct {
			name string
			g    Gemm
		}{"PureGoGeneric2", newPureGo(2, genericKernel)})
	}
	if g, err := OpenBLAS(); err == nil {
		impls = append(impls, struct {
			name string
			g    Gemm
		}{"OpenBLAS", g})
	} else {
		b.Logf("OpenBLAS not benchmarked: %v", err)
	}
	return impls
}

func BenchmarkSgemm1024(b *testing.B) {
	for _, impl := range benchImpls(b, true) {
		b.Run(impl.name, func(b *testing.B) {
			benchGemm(b, impl.g, benchShape{"1024", false, false, 1024, 1024, 1024})
		})
	}
}

// BenchmarkSgemmIm2col leaves out the portable kernel: at under 3 GFLOP/s
// it needs seconds per product.
func BenchmarkSgemmIm2col(b *testing.B) {
	for _, impl := range benchImpls(b, false) {
		for _, s := range im2colShapes {
			b.Run(fmt.Sprintf("%s/%s", impl.name, s.name), func(b *testing.B) { benchGemm(b, impl.g, s) })
		}
	}
}

// BenchmarkKernel times each micro-kernel alone on L1-resident slivers: the
// ceiling the blocked product approaches.
func BenchmarkKernel(b *testing.B) {
	for _, k := range kernels() {
		b.Run(k.name, func(b *testing.B) {
			ap, bp, c := make([]float32, k.mr*k.kc), make([]float32, k.nr*k.kc), make([]float32, k.mr*k.nr)
			for b.Loop() {
				k.tile(k.kc, ap, bp, c, k.nr)
			}
			b.ReportMetric(2*float64(k.mr*k.nr*k.kc)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// stepShapes are SGEMMs of a full-width ResNet-18 training step on 8 images
// (16 views), as the CPU backend calls them on one worker: Winograd point
// products of the first and last stages, their weight gradients (B
// transposed), the projection head's products with 8 rows, and a stride-2
// convolution lowered through im2col.
var stepShapes = []benchShape{
	{"wino64_NN_64x512x64", false, false, 64, 512, 64},
	{"wino64_TN_64x512x64", true, false, 64, 512, 64},
	{"wino64_dW_NT_64x64x512", false, true, 64, 64, 512},
	{"wino512_NN_512x64x512", false, false, 512, 64, 512},
	{"wino128_dW_NT_128x128x512", false, true, 128, 128, 512},
	{"head_NT_8x512x512", false, true, 8, 512, 512},
	{"head_NN_8x512x512", false, false, 8, 512, 512},
	{"im2col_NT_256x2304x256", false, true, 256, 2304, 256},
}

// BenchmarkSgemmStep times the step's shapes on one thread, as the CPU
// backend's workers call them.
func BenchmarkSgemmStep(b *testing.B) {
	impls := []struct {
		name string
		g    Gemm
	}{{"PureGo1", PureGo(1)}}
	if g, err := OpenBLASThreads(1); err == nil {
		impls = append(impls, struct {
			name string
			g    Gemm
		}{"OpenBLAS1", g})
	}
	for _, impl := range impls {
		for _, s := range stepShapes {
			b.Run(fmt.Sprintf("%s/%s", impl.name, s.name), func(b *testing.B) { benchGemm(b, impl.g, s) })
		}
	}
}
