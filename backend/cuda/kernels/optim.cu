// Optimiser steps (tensor.SGDConfig, tensor.LARSConfig): the reference is
// internal/ref/step.go.
// Launched from optim.go (the CPU counterpart is backend/cpu/optim.go); kernels.go joins
// this file into one NVRTC program after prelude.cu.

extern "C" __global__ void k_sgd(float* w, const float* g, float* v, int n, float lr, float mom, float wd, int nesterov) {
    GRID_STRIDE(i, n) {
        float gi = g[i] + wd * w[i];
        float vi = mom * v[i] + gi;
        v[i] = vi;
        float step = nesterov ? gi + mom * vi : vi;
        w[i] = w[i] - lr * step;
    }
}

// k_lars_partial: per block, partial[2b] = sum w^2, partial[2b+1] = sum (g + wd w)^2.
extern "C" __global__ void k_lars_partial(const float* w, const float* g, int n, float wd, double* partial) {
    __shared__ double sh[BLOCK];
    double ww = 0, gg = 0;
    GRID_STRIDE(i, n) {
        double wi = w[i];
        double gi = (double)(g[i] + wd * w[i]);
        ww += wi * wi;
        gg += gi * gi;
    }
    ww = block_sum(ww, sh);
    gg = block_sum(gg, sh);
    if (threadIdx.x == 0) {
        partial[2 * blockIdx.x] = ww;
        partial[2 * blockIdx.x + 1] = gg;
    }
}

// k_lars_trust: trust[0] = eta |w| / |g| (1 when either norm is 0), one block.
extern "C" __global__ void k_lars_trust(const double* partial, int m, float eta, float* trust) {
    __shared__ double sh[BLOCK];
    double ww = 0, gg = 0;
    for (int i = threadIdx.x; i < m; i += BLOCK) {
        ww += partial[2 * i];
        gg += partial[2 * i + 1];
    }
    ww = block_sum(ww, sh);
    gg = block_sum(gg, sh);
    if (threadIdx.x == 0) {
        double wn = sqrt(ww), gn = sqrt(gg);
        trust[0] = (wn > 0 && gn > 0) ? (float)(eta * wn / gn) : 1.0f;
    }
}

// k_lars_update: v = mom v + lr trust g', w -= v, with g' = g + wd w; trust
// is read from device memory (written by k_lars_trust) unless use_trust is 0.
extern "C" __global__ void k_lars_update(float* w, const float* g, float* v, int n, float lr, float mom, float wd,
                                         const float* trust, int use_trust) {
    float t = use_trust ? trust[0] : 1.0f;
    GRID_STRIDE(i, n) {
        float gi = g[i] + wd * w[i];
        float vi = mom * v[i] + lr * t * gi;
        v[i] = vi;
        w[i] = w[i] - vi;
    }
}
