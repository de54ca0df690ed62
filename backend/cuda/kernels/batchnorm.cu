// Batch normalisation over x (N,C,HW), statistics per channel, accumulated
// in double through per-block partial sums added in a fixed order.
// Launched from batchnorm.go (the CPU counterpart is backend/cpu/batchnorm.go); kernels.go joins
// this file into one NVRTC program after prelude.cu.

// The element-wise kernels walk x grid-stride and need each element's
// channel, (i / HW) % C; the reductions walk one channel's N*HW values and
// need each one's image and position. A 64-bit division per element costs
// more than the memory traffic of these kernels, so each thread divides
// once and then carries its indices along its fixed stride (chan_walk,
// plane_walk): the same elements in the same order, so the same sums.

// chan_walk tracks c = (i / HW) % C for i advancing by a fixed step: r is
// i % HW, and dr, dc the step's position and channel increments.
struct chan_walk {
    int r, c, dr, dc, HW, C;
};

__device__ __forceinline__ chan_walk chan_walk_start(long long i, long long step, int HW, int C) {
    chan_walk w;
    w.HW = HW;
    w.C = C;
    w.r = (int)(i % HW);
    w.c = (int)((i / HW) % C);
    w.dr = (int)(step % HW);
    w.dc = (int)((step / HW) % C);
    return w;
}

__device__ __forceinline__ void chan_walk_next(chan_walk* w) {
    w->r += w->dr;
    w->c += w->dc;
    if (w->r >= w->HW) {
        w->r -= w->HW;
        w->c++;
    }
    if (w->c >= w->C) w->c -= w->C;
}

// plane_walk tracks j = n * HW + p (the image and position of one
// channel's j-th value) for j advancing by BLOCK; idx is the value's place
// in x (N,C,HW), (n * C + c) * HW + p.
struct plane_walk {
    long long idx;
    int p, dp, dn, HW, C;
};

__device__ __forceinline__ plane_walk plane_walk_start(long long j, int c, int HW, int C) {
    plane_walk w;
    long long n = j / HW;
    w.p = (int)(j - n * HW);
    w.idx = (n * C + c) * HW + w.p;
    w.dp = BLOCK % HW;
    w.dn = BLOCK / HW;
    w.HW = HW;
    w.C = C;
    return w;
}

__device__ __forceinline__ void plane_walk_next(plane_walk* w) {
    long long dn = w->dn;
    w->p += w->dp;
    if (w->p >= w->HW) {
        w->p -= w->HW;
        dn++;
    }
    w->idx += dn * w->C * w->HW + w->dp - (dn > w->dn ? w->HW : 0);
}

// plane_walk_take4 writes the places of the walk's next four values into
// i and moves past them: four loads a thread can have in flight at once.
__device__ __forceinline__ void plane_walk_take4(plane_walk* w, long long i[4]) {
    for (int k = 0; k < 4; k++) {
        i[k] = w->idx;
        plane_walk_next(w);
    }
}

// k_bn_partial: block (s, c) of a (splits, C) grid sums x and x^2 over its
// share of channel c's N*HW values: partial[(c*splits+s)*2 + {0,1}].
extern "C" __global__ void k_bn_partial(const float* x, int N, int C, int HW, int splits, double* partial) {
    __shared__ double sh[BLOCK];
    int s = blockIdx.x, c = blockIdx.y;
    long long m = (long long)N * HW;
    long long lo = m * s / splits, hi = m * (s + 1) / splits;
    double sum = 0, sq = 0;
    long long j = lo + threadIdx.x;
    plane_walk w = plane_walk_start(j, c, HW, C);
    // Four loads in flight per thread (a dependent sum waits on each load
    // otherwise), added in the order of the values, as one at a time.
    for (; j + 3 * BLOCK < hi; j += 4 * BLOCK) {
        long long i[4];
        plane_walk_take4(&w, i);
        double v[4];
        for (int k = 0; k < 4; k++) v[k] = x[i[k]];
        for (int k = 0; k < 4; k++) {
            sum += v[k];
            sq += v[k] * v[k];
        }
    }
    for (; j < hi; j += BLOCK, plane_walk_next(&w)) {
        double v = x[w.idx];
        sum += v;
        sq += v * v;
    }
    sum = block_sum(sum, sh);
    sq = block_sum(sq, sh);
    if (threadIdx.x == 0) {
        partial[((long long)c * splits + s) * 2] = sum;
        partial[((long long)c * splits + s) * 2 + 1] = sq;
    }
}

// k_bn_finalize: one thread per channel; biased variance for normalising,
// unbiased for the running estimate (as torch.nn.BatchNorm2d).
extern "C" __global__ void k_bn_finalize(const double* partial, int C, int splits, int M, float eps, float momentum,
                                         int update, float* mean, float* invstd, float* run_mean, float* run_var) {
    GRID_STRIDE(c, C) {
        double sum = 0, sq = 0;
        for (int s = 0; s < splits; s++) {
            sum += partial[((long long)c * splits + s) * 2];
            sq += partial[((long long)c * splits + s) * 2 + 1];
        }
        double mu = sum / M;
        double var = sq / M - mu * mu;
        if (var < 0) var = 0;
        mean[c] = (float)mu;
        invstd[c] = (float)(1.0 / sqrt(var + (double)eps));
        if (update) {
            double unbiased = M > 1 ? var * M / (M - 1) : var;
            run_mean[c] = (float)((1.0 - momentum) * run_mean[c] + momentum * mu);
            run_var[c] = (float)((1.0 - momentum) * run_var[c] + momentum * unbiased);
        }
    }
}

extern "C" __global__ void k_bn_apply(const float* x, float* y, const float* gamma, const float* beta,
                                      const float* mean, const float* invstd, int N, int C, int HW) {
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    chan_walk w = chan_walk_start(i0, step, HW, C);
    for (long long i = i0; i < (long long)N * C * HW; i += step, chan_walk_next(&w)) {
        int c = w.c;
        y[i] = (x[i] - mean[c]) * invstd[c] * gamma[c] + beta[c];
    }
}

// k_bn_apply_relu is k_bn_apply followed by y += residual (unless residual
// is null) and y = max(y, 0), in the order of the separate kernels.
extern "C" __global__ void k_bn_apply_relu(const float* x, const float* residual, float* y, const float* gamma,
                                           const float* beta, const float* mean, const float* invstd, int N, int C,
                                           int HW) {
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    chan_walk w = chan_walk_start(i0, step, HW, C);
    for (long long i = i0; i < (long long)N * C * HW; i += step, chan_walk_next(&w)) {
        int c = w.c;
        float v = (x[i] - mean[c]) * invstd[c] * gamma[c] + beta[c];
        if (residual) v = v + residual[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

extern "C" __global__ void k_bn_eval(const float* x, float* y, const float* gamma, const float* beta,
                                     const float* run_mean, const float* run_var, float eps, int N, int C, int HW) {
    GRID_STRIDE(i, (long long)N * C * HW) {
        int c = (int)((i / HW) % C);
        float inv = (float)(1.0 / sqrt((double)run_var[c] + (double)eps));
        y[i] = (x[i] - run_mean[c]) * inv * gamma[c] + beta[c];
    }
}

// k_bn_bwd_partial sums dy and dy*xhat per channel share, as k_bn_partial.
extern "C" __global__ void k_bn_bwd_partial(const float* x, const float* dy, const float* mean, const float* invstd,
                                            int N, int C, int HW, int splits, double* partial) {
    __shared__ double sh[BLOCK];
    int s = blockIdx.x, c = blockIdx.y;
    long long m = (long long)N * HW;
    long long lo = m * s / splits, hi = m * (s + 1) / splits;
    double mu = mean[c], is = invstd[c];
    double sdy = 0, sdyx = 0;
    long long j = lo + threadIdx.x;
    plane_walk w = plane_walk_start(j, c, HW, C);
    // Four positions' loads in flight per thread, as in k_bn_partial.
    for (; j + 3 * BLOCK < hi; j += 4 * BLOCK) {
        long long i[4];
        plane_walk_take4(&w, i);
        double g[4];
        float xv[4];
        for (int k = 0; k < 4; k++) {
            g[k] = dy[i[k]];
            xv[k] = x[i[k]];
        }
        for (int k = 0; k < 4; k++) {
            sdy += g[k];
            sdyx += g[k] * ((xv[k] - mu) * is);
        }
    }
    for (; j < hi; j += BLOCK, plane_walk_next(&w)) {
        long long idx = w.idx;
        double g = dy[idx];
        sdy += g;
        sdyx += g * ((x[idx] - mu) * is);
    }
    sdy = block_sum(sdy, sh);
    sdyx = block_sum(sdyx, sh);
    if (threadIdx.x == 0) {
        partial[((long long)c * splits + s) * 2] = sdy;
        partial[((long long)c * splits + s) * 2 + 1] = sdyx;
    }
}

// k_bn_bwd_finalize: dbeta = sum dy, dgamma = sum dy*xhat; sums (2C doubles)
// keeps them in double for k_bn_bwd_dx.
extern "C" __global__ void k_bn_bwd_finalize(const double* partial, int C, int splits, float* dgamma, float* dbeta, double* sums) {
    GRID_STRIDE(c, C) {
        double sdy = 0, sdyx = 0;
        for (int s = 0; s < splits; s++) {
            sdy += partial[((long long)c * splits + s) * 2];
            sdyx += partial[((long long)c * splits + s) * 2 + 1];
        }
        dbeta[c] = (float)sdy;
        dgamma[c] = (float)sdyx;
        sums[2 * c] = sdy;
        sums[2 * c + 1] = sdyx;
    }
}

// dx = gamma*invstd/M * (M dy - sum dy - xhat * sum dy*xhat).
extern "C" __global__ void k_bn_bwd_dx(const float* x, const float* dy, const float* gamma, const float* mean,
                                       const float* invstd, const double* sums, float* dx, int N, int C, int HW) {
    double M = (double)N * HW;
    long long i0 = (long long)blockIdx.x * blockDim.x + threadIdx.x, step = (long long)gridDim.x * blockDim.x;
    chan_walk w = chan_walk_start(i0, step, HW, C);
    for (long long i = i0; i < (long long)N * C * HW; i += step, chan_walk_next(&w)) {
        int c = w.c;
        double is = invstd[c];
        double xhat = (x[i] - mean[c]) * is;
        double g = dy[i] - sums[2 * c] / M - xhat * sums[2 * c + 1] / M;
        dx[i] = (float)(gamma[c] * is * g);
    }
}
