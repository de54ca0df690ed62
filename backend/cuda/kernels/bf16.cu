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

// The layout changes go through shared memory in tiles of 32 channels by
// 32 positions of one image, so that both sides are read and written at
// consecutive addresses: a direct transpose touches one element per 32-byte
// sector on one of its sides. Each block walks its tiles (grid-stride);
// its BLOCK threads cover a tile in BLOCK/32 rows per pass.
#define BF16_TILE 32

// k_nchw_to_nhwc_bf16 writes y (N,HW,C) in bf16 from x (N,C,HW) in fp32.
extern "C" __global__ void k_nchw_to_nhwc_bf16(const float* x, unsigned short* y, int n, int c, int hw) {
    __shared__ float tile[BF16_TILE][BF16_TILE + 1];
    int ct = (c + BF16_TILE - 1) / BF16_TILE, pt = (hw + BF16_TILE - 1) / BF16_TILE;
    long long tiles = (long long)n * ct * pt;
    int col = threadIdx.x % BF16_TILE, row0 = threadIdx.x / BF16_TILE;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        int p0 = (int)(t % pt) * BF16_TILE;
        long long rest = t / pt;
        int c0 = (int)(rest % ct) * BF16_TILE;
        long long img = rest / ct;
        for (int r = row0; r < BF16_TILE; r += BLOCK / BF16_TILE) {
            int ch = c0 + r, p = p0 + col;
            if (ch < c && p < hw) tile[r][col] = x[(img * c + ch) * hw + p];
        }
        __syncthreads();
        for (int r = row0; r < BF16_TILE; r += BLOCK / BF16_TILE) {
            int p = p0 + r, ch = c0 + col;
            if (ch < c && p < hw) y[(img * hw + p) * c + ch] = f32_to_bf16(tile[col][r]);
        }
        __syncthreads();
    }
}

// k_nhwc_bf16_to_nchw writes y (N,C,HW) in fp32 from x (N,HW,C) in bf16.
extern "C" __global__ void k_nhwc_bf16_to_nchw(const unsigned short* x, float* y, int n, int c, int hw) {
    __shared__ float tile[BF16_TILE][BF16_TILE + 1];
    int ct = (c + BF16_TILE - 1) / BF16_TILE, pt = (hw + BF16_TILE - 1) / BF16_TILE;
    long long tiles = (long long)n * ct * pt;
    int col = threadIdx.x % BF16_TILE, row0 = threadIdx.x / BF16_TILE;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        int p0 = (int)(t % pt) * BF16_TILE;
        long long rest = t / pt;
        int c0 = (int)(rest % ct) * BF16_TILE;
        long long img = rest / ct;
        for (int r = row0; r < BF16_TILE; r += BLOCK / BF16_TILE) {
            int p = p0 + r, ch = c0 + col;
            if (ch < c && p < hw) tile[r][col] = bf16_to_f32(x[(img * hw + p) * c + ch]);
        }
        __syncthreads();
        for (int r = row0; r < BF16_TILE; r += BLOCK / BF16_TILE) {
            int ch = c0 + r, p = p0 + col;
            if (ch < c && p < hw) y[(img * c + ch) * hw + p] = tile[col][r];
        }
        __syncthreads();
    }
}
