//go:build amd64 && !purego

#include "textflag.h"

// The batch-norm passes of batchnorm.go in AVX2, computing exactly what the
// Go loops compute: the sums keep the Go loops' four float64 accumulators
// as the four lanes of one register (lane i sums elements i, i+4, ...),
// and the element-wise passes multiply and add without fusing, as Go does
// on amd64. n is a multiple of 4 (the sums) or 8 (the passes); the callers
// do the rest in Go.

// func bnSumSquaresAVX2(x *float32, n int, shift float64, lanes *[8]float64)
//
// lanes[0:4] += the per-lane sums of x - shift, lanes[4:8] += of its squares.
TEXT ·bnSumSquaresAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD shift+16(FP), Y3
	MOVQ lanes+24(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	SHRQ $2, CX
	JEQ sqdone

sqloop:
	VCVTPS2PD (SI), Y2
	VSUBPD Y3, Y2, Y2
	VADDPD Y2, Y0, Y0
	VMULPD Y2, Y2, Y4
	VADDPD Y4, Y1, Y1
	ADDQ $16, SI
	DECQ CX
	JNE sqloop

sqdone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func bnSumDotAVX2(dy, x *float32, n int, mu float32, lanes *[8]float64)
//
// lanes[0:4] += the per-lane sums of dy, lanes[4:8] += of dy (x - mu), the
// difference taken in float32.
TEXT ·bnSumDotAVX2(SB), NOSPLIT, $0-40
	MOVQ dy+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ n+16(FP), CX
	VBROADCASTSS mu+24(FP), X5
	MOVQ lanes+32(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	SHRQ $2, CX
	JEQ dotdone

dotloop:
	VCVTPS2PD (SI), Y2
	VADDPD Y2, Y0, Y0
	VMOVUPS (DX), X4
	VSUBPS X5, X4, X4
	VCVTPS2PD X4, Y4
	VMULPD Y4, Y2, Y4
	VADDPD Y4, Y1, Y1
	ADDQ $16, SI
	ADDQ $16, DX
	DECQ CX
	JNE dotloop

dotdone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func bnAffineAVX2(src, dst *float32, n int, sc, sh float32)
//
// dst = src*sc + sh.
TEXT ·bnAffineAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTSS sc+24(FP), Y1
	VBROADCASTSS sh+28(FP), Y2
	SHRQ $3, CX
	JEQ affdone

affloop:
	VMULPS (SI), Y1, Y0
	VADDPS Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE affloop

affdone:
	VZEROUPPER
	RET

// func bnAffineReLUAVX2(src, res, dst *float32, n int, sc, sh float32)
//
// dst = max(src*sc + sh [+ res], 0) with res added when not nil; the
// maximum keeps the bits of values whose int32 pattern is positive, as
// positiveMask does.
TEXT ·bnAffineReLUAVX2(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ res+8(FP), DX
	MOVQ dst+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSS sc+32(FP), Y1
	VBROADCASTSS sh+36(FP), Y2
	VPXOR Y3, Y3, Y3
	SHRQ $3, CX
	JEQ reludone
	TESTQ DX, DX
	JEQ reluloop

addreluloop:
	VMULPS (SI), Y1, Y0
	VADDPS Y2, Y0, Y0
	VADDPS (DX), Y0, Y0
	VPCMPGTD Y3, Y0, Y4
	VPAND Y4, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNE addreluloop
	JMP reludone

reluloop:
	VMULPS (SI), Y1, Y0
	VADDPS Y2, Y0, Y0
	VPCMPGTD Y3, Y0, Y4
	VPAND Y4, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE reluloop

reludone:
	VZEROUPPER
	RET

// func bnBackwardDxAVX2(dy, x, dx *float32, n int, k, a, a0 float32)
//
// dx = (k dy + a x) + a0; dx may be dy.
TEXT ·bnBackwardDxAVX2(SB), NOSPLIT, $0-44
	MOVQ dy+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ dx+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSS k+32(FP), Y1
	VBROADCASTSS a+36(FP), Y2
	VBROADCASTSS a0+40(FP), Y3
	SHRQ $3, CX
	JEQ dxdone

dxloop:
	VMULPS (SI), Y1, Y0
	VMULPS (DX), Y2, Y4
	VADDPS Y4, Y0, Y0
	VADDPS Y3, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNE dxloop

dxdone:
	VZEROUPPER
	RET

// func reluBackwardAVX2(y, dy, dx *float32, n int)
//
// dx = dy where y's int32 pattern is positive (y > 0), else 0, as
// positiveMask; dx may be dy. n is a multiple of 8.
TEXT ·reluBackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), SI
	MOVQ dy+8(FP), DX
	MOVQ dx+16(FP), DI
	MOVQ n+24(FP), CX
	VPXOR Y3, Y3, Y3
	SHRQ $3, CX
	JEQ rbdone

rbloop:
	VMOVDQU (SI), Y0
	VPCMPGTD Y3, Y0, Y0
	VPAND (DX), Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ CX
	JNE rbloop

rbdone:
	VZEROUPPER
	RET
