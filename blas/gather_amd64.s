//go:build amd64 && !purego
#include "textflag.h"

// func gatherSliverAVX512(dst, src *float32, idx *int32, steps, width, gLo, gHi, sLo, sHi int, alpha float32)
//
// For each step p < steps, dst[p*width+i] = alpha * src[idx[i]+p] for the
// lanes i set in the gather masks gLo (lanes 0-15) and gHi (lanes 16-31),
// and 0 for the other lanes of the store masks sLo and sHi (which cover
// width lanes). Z4 and Z5 hold the 32 indices, Z2 alpha; a gather clears its
// mask register, so K1 and K2 are reloaded from the masks at every step.
TEXT ·gatherSliverAVX512(SB), NOSPLIT, $0-76
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ idx+16(FP), AX
	MOVQ steps+24(FP), CX
	MOVQ width+32(FP), R12
	SHLQ $2, R12
	MOVQ gLo+40(FP), R8
	MOVQ gHi+48(FP), R9
	MOVQ sLo+56(FP), R10
	MOVQ sHi+64(FP), R11
	VBROADCASTSS alpha+72(FP), Z2
	VMOVDQU32 (AX), Z4
	VMOVDQU32 64(AX), Z5
	KMOVW R8, K3
	KMOVW R9, K4
	KMOVW R10, K5
	KMOVW R11, K6
	TESTQ CX, CX
	JEQ done

loop:
	VPXORD Z0, Z0, Z0
	KMOVW R8, K1
	VGATHERDPS (SI)(Z4*4), K1, Z0
	VMULPS Z2, Z0, K3, Z0
	VMOVUPS Z0, K5, (DI)
	TESTQ R11, R11
	JEQ next
	VPXORD Z1, Z1, Z1
	KMOVW R9, K2
	VGATHERDPS (SI)(Z5*4), K2, Z1
	VMULPS Z2, Z1, K4, Z1
	VMOVUPS Z1, K6, 64(DI)

next:
	ADDQ $4, SI
	ADDQ R12, DI
	DECQ CX
	JNE loop

done:
	VZEROUPPER
	RET
