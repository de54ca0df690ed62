//go:build amd64 && !purego
#include "textflag.h"
// func tile6x16AVX2(kc int, a, b, c *float32, ldc int)
//
// C[0:6, 0:16] += A B for a packed 6 x kc sliver of A (a[p*6+i]) and a
// packed kc x 16 sliver of B (b[p*16+j]); C rows are ldc floats apart.
// Y4..Y15 hold the 6x16 tile (two 8-wide registers a row), Y0 and Y1 a step
// of B, Y2 and Y3 broadcast elements of A.
TEXT ·tile6x16AVX2(SB), NOSPLIT, $0-40
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	TESTQ CX, CX
	JEQ avx2store

avx2loop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VBROADCASTSS 0(SI), Y2
	VFMADD231PS Y0, Y2, Y4
	VFMADD231PS Y1, Y2, Y5
	VBROADCASTSS 4(SI), Y3
	VFMADD231PS Y0, Y3, Y6
	VFMADD231PS Y1, Y3, Y7
	VBROADCASTSS 8(SI), Y2
	VFMADD231PS Y0, Y2, Y8
	VFMADD231PS Y1, Y2, Y9
	VBROADCASTSS 12(SI), Y3
	VFMADD231PS Y0, Y3, Y10
	VFMADD231PS Y1, Y3, Y11
	VBROADCASTSS 16(SI), Y2
	VFMADD231PS Y0, Y2, Y12
	VFMADD231PS Y1, Y2, Y13
	VBROADCASTSS 20(SI), Y3
	VFMADD231PS Y0, Y3, Y14
	VFMADD231PS Y1, Y3, Y15
	ADDQ $24, SI
	ADDQ $64, DI
	DECQ CX
	JNE avx2loop

avx2store:
	VADDPS (DX), Y4, Y4
	VMOVUPS Y4, (DX)
	VADDPS 32(DX), Y5, Y5
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y6, Y6
	VMOVUPS Y6, (DX)
	VADDPS 32(DX), Y7, Y7
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y8, Y8
	VMOVUPS Y8, (DX)
	VADDPS 32(DX), Y9, Y9
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y10, Y10
	VMOVUPS Y10, (DX)
	VADDPS 32(DX), Y11, Y11
	VMOVUPS Y11, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y12, Y12
	VMOVUPS Y12, (DX)
	VADDPS 32(DX), Y13, Y13
	VMOVUPS Y13, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y14, Y14
	VMOVUPS Y14, (DX)
	VADDPS 32(DX), Y15, Y15
	VMOVUPS Y15, 32(DX)
	VZEROUPPER
	RET

// func tile12x32StridedAVX512(kc int, a *float32, aRow, aStep int, b *float32, bStep int, c *float32, ldc int, overwrite bool)
//
// C[0:12, 0:32] += A B, as tile6x16AVX2 for 6 x 16: Z8..Z31 hold the tile
// (two 16-wide registers a row), Z0 and Z1 a step of B, Z2 and Z3
// broadcast elements of A. A and B are read where they lie: A's element
// (i, p) at a[i*aRow+p*aStep], B's step p at b[p*bStep:p*bStep+32] (a
// packed sliver has aRow 1, aStep 12 and bStep 32; a matrix read in place
// has its row stride in one of them). With overwrite the tile is stored
// into C without reading it (a product with beta = 0, first block of k).
// SI, R12, R13 and BX point at rows 0, 3, 6 and 9 of A, R10 holds aRow in
// bytes.

// ROWFMA multiplies row ROW of A (broadcast into VA) by the step of B and
// adds it to the row's two accumulators.
#define ROWFMA(ROW, VA, C0, C1) \
	VBROADCASTSS ROW, VA \
	VFMADD231PS Z0, VA, C0 \
	VFMADD231PS Z1, VA, C1

// ADDROW adds a row's accumulators to C at DX; SETROW stores them there.
#define ADDROW(C0, C1) \
	VADDPS (DX), C0, C0 \
	VMOVUPS C0, (DX) \
	VADDPS 64(DX), C1, C1 \
	VMOVUPS C1, 64(DX)

#define SETROW(C0, C1) \
	VMOVUPS C0, (DX) \
	VMOVUPS C1, 64(DX)

TEXT ·tile12x32StridedAVX512(SB), NOSPLIT, $0-65
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R10
	SHLQ $2, R10
	MOVQ aStep+24(FP), R9
	SHLQ $2, R9
	MOVQ b+32(FP), DI
	MOVQ bStep+40(FP), R11
	SHLQ $2, R11
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	LEAQ (R10)(R10*2), AX
	LEAQ (SI)(AX*1), R12
	LEAQ (R12)(AX*1), R13
	LEAQ (R13)(AX*1), BX
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	TESTQ CX, CX
	JEQ stridedstore

stridedloop:
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	ROWFMA((SI), Z2, Z8, Z9)
	ROWFMA((SI)(R10*1), Z3, Z10, Z11)
	ROWFMA((SI)(R10*2), Z2, Z12, Z13)
	ROWFMA((R12), Z3, Z14, Z15)
	ROWFMA((R12)(R10*1), Z2, Z16, Z17)
	ROWFMA((R12)(R10*2), Z3, Z18, Z19)
	ROWFMA((R13), Z2, Z20, Z21)
	ROWFMA((R13)(R10*1), Z3, Z22, Z23)
	ROWFMA((R13)(R10*2), Z2, Z24, Z25)
	ROWFMA((BX), Z3, Z26, Z27)
	ROWFMA((BX)(R10*1), Z2, Z28, Z29)
	ROWFMA((BX)(R10*2), Z3, Z30, Z31)
	ADDQ R9, SI
	ADDQ R9, R12
	ADDQ R9, R13
	ADDQ R9, BX
	ADDQ R11, DI
	DECQ CX
	JNE stridedloop

stridedstore:
	MOVBLZX overwrite+64(FP), AX
	TESTQ AX, AX
	JNE stridedoverwrite
	ADDROW(Z8, Z9)
	ADDQ R8, DX
	ADDROW(Z10, Z11)
	ADDQ R8, DX
	ADDROW(Z12, Z13)
	ADDQ R8, DX
	ADDROW(Z14, Z15)
	ADDQ R8, DX
	ADDROW(Z16, Z17)
	ADDQ R8, DX
	ADDROW(Z18, Z19)
	ADDQ R8, DX
	ADDROW(Z20, Z21)
	ADDQ R8, DX
	ADDROW(Z22, Z23)
	ADDQ R8, DX
	ADDROW(Z24, Z25)
	ADDQ R8, DX
	ADDROW(Z26, Z27)
	ADDQ R8, DX
	ADDROW(Z28, Z29)
	ADDQ R8, DX
	ADDROW(Z30, Z31)
	VZEROUPPER
	RET

stridedoverwrite:
	SETROW(Z8, Z9)
	ADDQ R8, DX
	SETROW(Z10, Z11)
	ADDQ R8, DX
	SETROW(Z12, Z13)
	ADDQ R8, DX
	SETROW(Z14, Z15)
	ADDQ R8, DX
	SETROW(Z16, Z17)
	ADDQ R8, DX
	SETROW(Z18, Z19)
	ADDQ R8, DX
	SETROW(Z20, Z21)
	ADDQ R8, DX
	SETROW(Z22, Z23)
	ADDQ R8, DX
	SETROW(Z24, Z25)
	ADDQ R8, DX
	SETROW(Z26, Z27)
	ADDQ R8, DX
	SETROW(Z28, Z29)
	ADDQ R8, DX
	SETROW(Z30, Z31)
	VZEROUPPER
	RET

// DOT16 adds the products of rows Z16..Z19 of A and Z20..Z23 of B to the
// 16 sums, lane-wise.
#define DOT16 \
	VFMADD231PS Z20, Z16, Z0 \
	VFMADD231PS Z21, Z16, Z1 \
	VFMADD231PS Z22, Z16, Z2 \
	VFMADD231PS Z23, Z16, Z3 \
	VFMADD231PS Z20, Z17, Z4 \
	VFMADD231PS Z21, Z17, Z5 \
	VFMADD231PS Z22, Z17, Z6 \
	VFMADD231PS Z23, Z17, Z7 \
	VFMADD231PS Z20, Z18, Z8 \
	VFMADD231PS Z21, Z18, Z9 \
	VFMADD231PS Z22, Z18, Z10 \
	VFMADD231PS Z23, Z18, Z11 \
	VFMADD231PS Z20, Z19, Z12 \
	VFMADD231PS Z21, Z19, Z13 \
	VFMADD231PS Z22, Z19, Z14 \
	VFMADD231PS Z23, Z19, Z15

// FOLD adds a sum register's upper 256 bits to its lower ones, then the
// upper 128 of those to the lower 128 (Z, Y and X name the same register).
#define FOLD(Z, Y, X) \
	VEXTRACTF64X4 $1, Z, Y16 \
	VADDPS Y16, Y, Y \
	VEXTRACTF32X4 $1, Y, X16 \
	VADDPS X16, X, X

// func dot4x4AVX512(k int, a *float32, lda int, b *float32, ldb int, sums *[16]float32)
//
// sums[4i+j] = sum over p < k of a[i*lda+p] b[j*ldb+p], for the products
// whose operands both run along k (C = A B^T): rows of A and B read where
// they lie, 16 steps of k a vector, a masked last vector. Z0..Z15 hold
// the 16 sums lane-wise, Z16..Z19 rows of A, Z20..Z23 rows of B; SI and R9
// point at rows 0 and 3 of A, DI and R11 at rows 0 and 3 of B.
TEXT ·dot4x4AVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $2, R10
	MOVQ sums+40(FP), DX
	LEAQ (R8)(R8*2), AX
	LEAQ (SI)(AX*1), R9
	LEAQ (R10)(R10*2), AX
	LEAQ (DI)(AX*1), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ CX, BX
	SHRQ $4, CX
	JEQ dottail

dotloop:
	VMOVUPS (SI), Z16
	VMOVUPS (SI)(R8*1), Z17
	VMOVUPS (SI)(R8*2), Z18
	VMOVUPS (R9), Z19
	VMOVUPS (DI), Z20
	VMOVUPS (DI)(R10*1), Z21
	VMOVUPS (DI)(R10*2), Z22
	VMOVUPS (R11), Z23
	DOT16
	ADDQ $64, SI
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $64, R11
	DECQ CX
	JNE dotloop

dottail:
	ANDQ $15, BX
	JEQ dotreduce
	MOVQ BX, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z16
	VMOVUPS.Z (SI)(R8*1), K1, Z17
	VMOVUPS.Z (SI)(R8*2), K1, Z18
	VMOVUPS.Z (R9), K1, Z19
	VMOVUPS.Z (DI), K1, Z20
	VMOVUPS.Z (DI)(R10*1), K1, Z21
	VMOVUPS.Z (DI)(R10*2), K1, Z22
	VMOVUPS.Z (R11), K1, Z23
	DOT16

dotreduce:
	FOLD(Z0, Y0, X0)
	FOLD(Z1, Y1, X1)
	FOLD(Z2, Y2, X2)
	FOLD(Z3, Y3, X3)
	FOLD(Z4, Y4, X4)
	FOLD(Z5, Y5, X5)
	FOLD(Z6, Y6, X6)
	FOLD(Z7, Y7, X7)
	FOLD(Z8, Y8, X8)
	FOLD(Z9, Y9, X9)
	FOLD(Z10, Y10, X10)
	FOLD(Z11, Y11, X11)
	FOLD(Z12, Y12, X12)
	FOLD(Z13, Y13, X13)
	FOLD(Z14, Y14, X14)
	FOLD(Z15, Y15, X15)
	VHADDPS X1, X0, X0
	VHADDPS X3, X2, X2
	VHADDPS X2, X0, X0
	VMOVUPS X0, 0(DX)
	VHADDPS X5, X4, X4
	VHADDPS X7, X6, X6
	VHADDPS X6, X4, X4
	VMOVUPS X4, 16(DX)
	VHADDPS X9, X8, X8
	VHADDPS X11, X10, X10
	VHADDPS X10, X8, X8
	VMOVUPS X8, 32(DX)
	VHADDPS X13, X12, X12
	VHADDPS X15, X14, X14
	VHADDPS X14, X12, X12
	VMOVUPS X12, 48(DX)
	VZEROUPPER
	RET
