// Conversions between fp32 and bfloat16 for the bf16 precision: the
// convolutions and matrix products take bf16 copies of their fp32 inputs
// (activations and filters in NHWC, the layout of cuDNN's bf16 tensor-core
// kernels) and give their bf16 outputs back in fp32 NCHW.
// Launched from bf16.go (the CPU backend computes in fp32 only);
// kernels.go joins this file into one NVRTC program after prelude.cu.
//
// bf16 is stored as its 16 bits (unsigned short) and converted with bit
// operations: NVRTC 11.2 has no cuda_bf16.h. A bf16 is the upper half of
// an fp32 (8-bit exponent, 7 stored mantissa bits), so widening is a shift
// and narrowing rounds the lower half away, to nearest, ties to even.

__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
    return __uint_as_float((unsigned int)h << 16);
}

// f32_to_bf16 rounds x to the nearest bf16, ties to even; NaN stays a
// (quiet) NaN and overflow past the largest bf16 gives infinity, as IEEE
// rounding does.
__device__ __forceinline__ unsigned short f32_to_bf16(float x) {
    unsigned int u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void k_to_bf16(const float* x, unsigned short* y, int n) {
    GRID_STRIDE(i, n) y[i] = f32_to_bf16(x[i]);
}

// k_nchw_to_nhwc_bf16 writes y (N,HW,C) in bf16 from x (N,C,HW) in fp32;
// one thread per output element, so the writes are coalesced.
extern "C" __global__ void k_nchw_to_nhwc_bf16(const float* x, unsigned short* y, int n, int c, int hw) {
    GRID_STRIDE(i, (long long)n * c * hw) {
        long long ch = i % c, rest = i / c;
        long long p = rest % hw, img = rest / hw;
        y[i] = f32_to_bf16(x[(img * c + ch) * hw + p]);
    }
}

// k_nhwc_bf16_to_nchw writes y (N,C,HW) in fp32 from x (N,HW,C) in bf16.
extern "C" __global__ void k_nhwc_bf16_to_nchw(const unsigned short* x, float* y, int n, int c, int hw) {
    GRID_STRIDE(i, (long long)n * c * hw) {
        long long p = i % hw, rest = i / hw;
        long long ch = rest % c, img = rest / c;
        y[i] = bf16_to_f32(x[(img * hw + p) * c + ch]);
    }
}
