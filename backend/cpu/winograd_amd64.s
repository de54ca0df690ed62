//go:build amd64 && !purego

#include "textflag.h"

// The Winograd tile transforms of winograd.go, 8 tiles per step in YMM
// registers and a last step of 4 in XMM registers (n must be a multiple
// of 4; winograd_amd64.go does the rest in Go). Strides are in elements.

// INGROUP computes the four outputs of one row group i of B^T d B:
// t = row ra OP row rb on the even (E) and odd (O) columns at tiles tx
// and tx+1, then (tE - tE1, tO + tE1, tE1 - tO, tO - tO1) stored to
// planes 4i..4i+3 through BX, which it advances by four planes.
#define INGROUP(ra, rb, OP, MOV, V0, V1, V2, V3, V4, V5, V6, V7) \
	MOV (ra), V0 \
	MOV 4(ra), V1 \
	MOV (ra)(R9*1), V2 \
	MOV 4(ra)(R9*1), V3 \
	OP (rb), V0, V0 \
	OP 4(rb), V1, V1 \
	OP (rb)(R9*1), V2, V2 \
	OP 4(rb)(R9*1), V3, V3 \
	VSUBPS V1, V0, V4 \
	VADDPS V1, V2, V5 \
	VSUBPS V2, V1, V6 \
	VSUBPS V3, V2, V7 \
	MOV V4, (BX) \
	ADDQ R10, BX \
	MOV V5, (BX) \
	ADDQ R10, BX \
	MOV V6, (BX) \
	ADDQ R10, BX \
	MOV V7, (BX) \
	ADDQ R10, BX

// func winoInputRowAVX2(src *float32, wp, half int, dst *float32, stride, n int)
//
// src holds four padded rows wp apart, each its even columns (E, half
// values) then its odd ones (O); tile tx of the row reads E[tx], O[tx],
// E[tx+1], O[tx+1] of each. Output e of tile tx goes to dst[e*stride+tx].
TEXT ·winoInputRowAVX2(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ wp+8(FP), R8
	SHLQ $2, R8
	MOVQ half+16(FP), R9
	SHLQ $2, R9
	MOVQ dst+24(FP), DI
	MOVQ stride+32(FP), R10
	SHLQ $2, R10
	MOVQ n+40(FP), CX
	LEAQ (SI)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13

in8:
	CMPQ CX, $8
	JLT in4
	MOVQ DI, BX
	INGROUP(SI, R12, VSUBPS, VMOVUPS, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	INGROUP(R11, R12, VADDPS, VMOVUPS, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	INGROUP(R12, R11, VSUBPS, VMOVUPS, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	INGROUP(R11, R13, VSUBPS, VMOVUPS, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7)
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, DI
	SUBQ $8, CX
	JMP in8

in4:
	CMPQ CX, $4
	JLT indone
	MOVQ DI, BX
	INGROUP(SI, R12, VSUBPS, VMOVUPS, X0, X1, X2, X3, X4, X5, X6, X7)
	INGROUP(R11, R12, VADDPS, VMOVUPS, X0, X1, X2, X3, X4, X5, X6, X7)
	INGROUP(R12, R11, VSUBPS, VMOVUPS, X0, X1, X2, X3, X4, X5, X6, X7)
	INGROUP(R11, R13, VSUBPS, VMOVUPS, X0, X1, X2, X3, X4, X5, X6, X7)

indone:
	VZEROUPPER
	RET

// OUTCOL loads column j of m (planes j, 4+j, 8+j, 12+j at BX, BX+R11,
// BX+2 R11, BX+R12) and leaves s_j = m_j + m_(4+j) + m_(8+j) in S and
// q_j = m_(4+j) - m_(8+j) - m_(12+j) in Q; it advances BX by one plane.
#define OUTCOL(MOV, V0, V1, V2, V3, S, Q) \
	MOV (BX), V0 \
	MOV (BX)(R11*1), V1 \
	MOV (BX)(R11*2), V2 \
	MOV (BX)(R12*1), V3 \
	VADDPS V1, V0, V0 \
	VADDPS V2, V0, S \
	VSUBPS V2, V1, V1 \
	VSUBPS V3, V1, Q \
	ADDQ R10, BX

// func winoOutputRowAVX2(m *float32, stride int, y0, y1 *float32, n int)
//
// A^T m A for tiles [0,n) of one tile row: m[e*stride+tx] is entry e of
// tile tx; outputs (y00, y01) go to y0[2tx], y0[2tx+1] and (y10, y11) to
// y1[2tx], y1[2tx+1].
TEXT ·winoOutputRowAVX2(SB), NOSPLIT, $0-40
	MOVQ m+0(FP), SI
	MOVQ stride+8(FP), R10
	SHLQ $2, R10
	MOVQ y0+16(FP), DI
	MOVQ y1+24(FP), DX
	MOVQ n+32(FP), CX
	LEAQ (R10)(R10*1), R11
	ADDQ R11, R11 // 4 planes
	LEAQ (R11)(R11*2), R12 // 12 planes

out8:
	CMPQ CX, $8
	JLT out4
	MOVQ SI, BX
	OUTCOL(VMOVUPS, Y0, Y1, Y2, Y3, Y4, Y8)
	OUTCOL(VMOVUPS, Y0, Y1, Y2, Y3, Y5, Y9)
	OUTCOL(VMOVUPS, Y0, Y1, Y2, Y3, Y6, Y10)
	OUTCOL(VMOVUPS, Y0, Y1, Y2, Y3, Y7, Y11)
	// y00 = s0+s1+s2, y01 = s1-s2-s3, y10 = q0+q1+q2, y11 = q1-q2-q3
	VADDPS Y5, Y4, Y0
	VADDPS Y6, Y0, Y0
	VSUBPS Y6, Y5, Y1
	VSUBPS Y7, Y1, Y1
	VADDPS Y9, Y8, Y2
	VADDPS Y10, Y2, Y2
	VSUBPS Y10, Y9, Y3
	VSUBPS Y11, Y3, Y3
	// Interleave (y00, y01) and (y10, y11) into output rows.
	VUNPCKLPS Y1, Y0, Y12
	VUNPCKHPS Y1, Y0, Y13
	VPERM2F128 $0x20, Y13, Y12, Y14
	VPERM2F128 $0x31, Y13, Y12, Y15
	VMOVUPS Y14, (DI)
	VMOVUPS Y15, 32(DI)
	VUNPCKLPS Y3, Y2, Y12
	VUNPCKHPS Y3, Y2, Y13
	VPERM2F128 $0x20, Y13, Y12, Y14
	VPERM2F128 $0x31, Y13, Y12, Y15
	VMOVUPS Y14, (DX)
	VMOVUPS Y15, 32(DX)
	ADDQ $32, SI
	ADDQ $64, DI
	ADDQ $64, DX
	SUBQ $8, CX
	JMP out8

out4:
	CMPQ CX, $4
	JLT outdone
	MOVQ SI, BX
	OUTCOL(VMOVUPS, X0, X1, X2, X3, X4, X8)
	OUTCOL(VMOVUPS, X0, X1, X2, X3, X5, X9)
	OUTCOL(VMOVUPS, X0, X1, X2, X3, X6, X10)
	OUTCOL(VMOVUPS, X0, X1, X2, X3, X7, X11)
	VADDPS X5, X4, X0
	VADDPS X6, X0, X0
	VSUBPS X6, X5, X1
	VSUBPS X7, X1, X1
	VADDPS X9, X8, X2
	VADDPS X10, X2, X2
	VSUBPS X10, X9, X3
	VSUBPS X11, X3, X3
	VUNPCKLPS X1, X0, X12
	VUNPCKHPS X1, X0, X13
	VMOVUPS X12, (DI)
	VMOVUPS X13, 16(DI)
	VUNPCKLPS X3, X2, X12
	VUNPCKHPS X3, X2, X13
	VMOVUPS X12, (DX)
	VMOVUPS X13, 16(DX)

outdone:
	VZEROUPPER
	RET

// GRADGROUP stores (p, p+q, p-q, -q) to the next four planes through BX.
#define GRADGROUP(MOV, P, Q, T0, T1, T2, Z) \
	VADDPS Q, P, T0 \
	VSUBPS Q, P, T1 \
	VSUBPS Q, Z, T2 \
	MOV P, (BX) \
	ADDQ R10, BX \
	MOV T0, (BX) \
	ADDQ R10, BX \
	MOV T1, (BX) \
	ADDQ R10, BX \
	MOV T2, (BX) \
	ADDQ R10, BX

// func winoGradRowAVX2(dy0, dy1, d *float32, stride, n int)
//
// A g A^T for the 2x2 tiles [0,n) of rows dy0, dy1 (tile tx: a = dy0[2tx],
// b = dy0[2tx+1], c = dy1[2tx], e = dy1[2tx+1]); entry e of tile tx goes
// to d[e*stride+tx]. Rows of A g are (a,b), (a+c,b+e), (a-c,b-e), (-c,-e),
// each (p,q) then becoming (p, p+q, p-q, -q).
TEXT ·winoGradRowAVX2(SB), NOSPLIT, $0-40
	MOVQ dy0+0(FP), SI
	MOVQ dy1+8(FP), DX
	MOVQ d+16(FP), DI
	MOVQ stride+24(FP), R10
	SHLQ $2, R10
	MOVQ n+32(FP), CX
	VXORPS Y15, Y15, Y15

grad8:
	CMPQ CX, $8
	JLT grad4
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VPERMPD $0xD8, Y2, Y2 // a
	VPERMPD $0xD8, Y3, Y3 // b
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VSHUFPS $0x88, Y1, Y0, Y4
	VSHUFPS $0xDD, Y1, Y0, Y5
	VPERMPD $0xD8, Y4, Y4 // c
	VPERMPD $0xD8, Y5, Y5 // e
	MOVQ DI, BX
	GRADGROUP(VMOVUPS, Y2, Y3, Y6, Y7, Y8, Y15)
	VADDPS Y4, Y2, Y9
	VADDPS Y5, Y3, Y10
	GRADGROUP(VMOVUPS, Y9, Y10, Y6, Y7, Y8, Y15)
	VSUBPS Y4, Y2, Y9
	VSUBPS Y5, Y3, Y10
	GRADGROUP(VMOVUPS, Y9, Y10, Y6, Y7, Y8, Y15)
	VSUBPS Y4, Y15, Y9
	VSUBPS Y5, Y15, Y10
	GRADGROUP(VMOVUPS, Y9, Y10, Y6, Y7, Y8, Y15)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP grad8

grad4:
	CMPQ CX, $4
	JLT graddone
	VMOVUPS (SI), X0
	VMOVUPS 16(SI), X1
	VSHUFPS $0x88, X1, X0, X2
	VSHUFPS $0xDD, X1, X0, X3
	VMOVUPS (DX), X0
	VMOVUPS 16(DX), X1
	VSHUFPS $0x88, X1, X0, X4
	VSHUFPS $0xDD, X1, X0, X5
	MOVQ DI, BX
	GRADGROUP(VMOVUPS, X2, X3, X6, X7, X8, X15)
	VADDPS X4, X2, X9
	VADDPS X5, X3, X10
	GRADGROUP(VMOVUPS, X9, X10, X6, X7, X8, X15)
	VSUBPS X4, X2, X9
	VSUBPS X5, X3, X10
	GRADGROUP(VMOVUPS, X9, X10, X6, X7, X8, X15)
	VSUBPS X4, X15, X9
	VSUBPS X5, X15, X10
	GRADGROUP(VMOVUPS, X9, X10, X6, X7, X8, X15)

graddone:
	VZEROUPPER
	RET

// func winoSplitRowAVX2(src, even, odd *float32, n int)
//
// Splits 2n values of src (n a multiple of 8) into even[m] = src[2m] and
// odd[m] = src[2m+1].
TEXT ·winoSplitRowAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ even+8(FP), DX
	MOVQ odd+16(FP), DI
	MOVQ n+24(FP), CX

split8:
	CMPQ CX, $8
	JLT splitdone
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VPERMPD $0xD8, Y2, Y2
	VPERMPD $0xD8, Y3, Y3
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, (DI)
	ADDQ $64, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JMP split8

splitdone:
	VZEROUPPER
	RET

// WFTAP gathers tap OFF/4 of the 8 filters at SI into V (a gather clears
// its mask, so Y13 is set to all ones each time).
#define WFTAP(OFF, V) \
	VPCMPEQD Y13, Y13, Y13 \
	VGATHERDPS Y13, OFF(SI)(Y15*4), V

// WFGROUP stores the four outputs of one row (X0, X1, X2) of G f to four
// planes from R9 on, R8 bytes apart: X0, (X0+X1+X2)/2, (X0-X1+X2)/2 and
// X2, leaving R9 at the fourth.
#define WFGROUP(X0, X1, X2) \
	VMOVUPS X0, (R9) \
	VADDPS X1, X0, Y12 \
	VADDPS X2, Y12, Y12 \
	VMULPS Y14, Y12, Y12 \
	ADDQ R8, R9 \
	VMOVUPS Y12, (R9) \
	VSUBPS X1, X0, Y12 \
	VADDPS X2, Y12, Y12 \
	VMULPS Y14, Y12, Y12 \
	ADDQ R8, R9 \
	VMOVUPS Y12, (R9) \
	ADDQ R8, R9 \
	VMOVUPS X2, (R9)

// WFCOMBINE sets Y9..Y11 to the middle rows of G f: (f_i OP f_(i+3) +
// f_(i+6))/2 for the taps f in Y0..Y8, OP VADDPS or VSUBPS.
#define WFCOMBINE(OP) \
	OP Y3, Y0, Y9 \
	VADDPS Y6, Y9, Y9 \
	VMULPS Y14, Y9, Y9 \
	OP Y4, Y1, Y10 \
	VADDPS Y7, Y10, Y10 \
	VMULPS Y14, Y10, Y10 \
	OP Y5, Y2, Y11 \
	VADDPS Y8, Y11, Y11 \
	VMULPS Y14, Y11, Y11

// func winoFiltersAVX2(w *float32, n int, u *float32, stride int)
//
// The filter transform of winoFilters for n filters (a multiple of 8),
// 8 at a time: the nine taps of 8 consecutive 3x3 filters (9 floats
// apart) gathered into Y0..Y8, the 16 outputs of each stored to the 16
// planes of u, stride floats apart, at the filters' own offsets. The
// operations are winoFilters' own, in the same order (no fused
// multiply-adds), so the results are the same bit for bit. Y15 holds the
// gather offsets 0, 9, ..., 63, Y14 the constant 0.5, Y13 the gathers'
// mask and then a scratch register with Y12.
TEXT ·winoFiltersAVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ u+16(FP), DI
	MOVQ stride+24(FP), R8
	SHLQ $2, R8
	MOVQ $0x3f000000, AX
	MOVQ AX, X14
	VBROADCASTSS X14, Y14
	VMOVDQU ·winoFilterOffsets(SB), Y15
	SHRQ $3, CX
	JEQ wfdone

wfloop:
	WFTAP(0, Y0)
	WFTAP(4, Y1)
	WFTAP(8, Y2)
	WFTAP(12, Y3)
	WFTAP(16, Y4)
	WFTAP(20, Y5)
	WFTAP(24, Y6)
	WFTAP(28, Y7)
	WFTAP(32, Y8)
	MOVQ DI, R9
	WFGROUP(Y0, Y1, Y2)
	ADDQ R8, R9
	WFCOMBINE(VADDPS)
	WFGROUP(Y9, Y10, Y11)
	ADDQ R8, R9
	WFCOMBINE(VSUBPS)
	WFGROUP(Y9, Y10, Y11)
	ADDQ R8, R9
	WFGROUP(Y6, Y7, Y8)
	ADDQ $288, SI
	ADDQ $32, DI
	DECQ CX
	JNE wfloop

wfdone:
	VZEROUPPER
	RET

// winoFilterOffsets are the gathers' offsets of one tap in 8 consecutive
// filters, in floats.
DATA ·winoFilterOffsets+0(SB)/4, $0
DATA ·winoFilterOffsets+4(SB)/4, $9
DATA ·winoFilterOffsets+8(SB)/4, $18
DATA ·winoFilterOffsets+12(SB)/4, $27
DATA ·winoFilterOffsets+16(SB)/4, $36
DATA ·winoFilterOffsets+20(SB)/4, $45
DATA ·winoFilterOffsets+24(SB)/4, $54
DATA ·winoFilterOffsets+28(SB)/4, $63
GLOBL ·winoFilterOffsets(SB), RODATA, $32
