// Group normalisation (torch.nn.GroupNorm) over x (N,C,HW): the C channels
// form G groups of Cg = C/G consecutive channels, statistics are per image
// and group over the M = Cg*HW values x[(n*C + g*Cg)*HW ...], which are
// contiguous. backend/cpu/groupnorm.go is the reference; sums are double as
// there. One block of BLOCK threads per (image, group) pair: the pair's
// values are reduced and then written by the same block, with no scratch.
// Uses BLOCK, block_sum and GRID_STRIDE of prelude.cu.

// k_gn_fwd: block ng = n*G + g normalises its group. mean and invstd ((N,G))
// may be null (evaluation: nothing to save).
extern "C" __global__ void k_gn_fwd(const float* x, float* y, const float* gamma, const float* beta,
                                    float* mean, float* invstd, int N, int C, int HW, int G, float eps) {
    __shared__ double sh[BLOCK];
    int ng = blockIdx.x;
    int n = ng / G, g = ng - (ng / G) * G;
    int cg = C / G;
    long long m = (long long)cg * HW;
    long long base = ((long long)n * C + (long long)g * cg) * HW;
    double sum = 0, sq = 0;
    for (long long j = threadIdx.x; j < m; j += BLOCK) {
        double v = x[base + j];
        sum += v;
        sq += v * v;
    }
    sum = block_sum(sum, sh);
    sq = block_sum(sq, sh);
    double mu = sum / (double)m;
    double var = sq / (double)m - mu * mu;
    if (var < 0) var = 0;
    double inv = 1.0 / sqrt(var + (double)eps);
    if (threadIdx.x == 0 && mean != 0) {
        mean[ng] = (float)mu;
        invstd[ng] = (float)inv;
    }
    for (long long j = threadIdx.x; j < m; j += BLOCK) {
        int c = g * cg + (int)(j / HW);
        y[base + j] = (float)((x[base + j] - mu) * inv * gamma[c] + beta[c]);
    }
}

// k_gn_bwd_dx: block ng sums dy and dy*(x - mean) per channel of its group
// into sums ((N,C) pairs, double) and writes the group's
// dx = invstd (gamma dy - A/M - xhat B/M), A = sum gamma dy, B = sum gamma dy xhat.
extern "C" __global__ void k_gn_bwd_dx(const float* x, const float* dy, const float* gamma, const float* mean,
                                       const float* invstd, float* dx, double* sums, int N, int C, int HW, int G) {
    __shared__ double sh[BLOCK];
    int ng = blockIdx.x;
    int n = ng / G, g = ng - (ng / G) * G;
    int cg = C / G;
    long long base = ((long long)n * C + (long long)g * cg) * HW;
    double mu = mean[ng], inv = invstd[ng];
    double a = 0, b = 0; // sum gamma dy, sum gamma dy (x - mu)
    for (int k = 0; k < cg; k++) {
        int c = g * cg + k;
        long long off = base + (long long)k * HW;
        double s1 = 0, s2 = 0;
        for (int j = threadIdx.x; j < HW; j += BLOCK) {
            double d = dy[off + j];
            s1 += d;
            s2 += d * (x[off + j] - mu);
        }
        s1 = block_sum(s1, sh);
        s2 = block_sum(s2, sh);
        if (threadIdx.x == 0) {
            sums[((long long)n * C + c) * 2] = s1;
            sums[((long long)n * C + c) * 2 + 1] = s2;
        }
        a += gamma[c] * s1;
        b += gamma[c] * s2;
    }
    double M = (double)cg * HW;
    for (long long j = threadIdx.x; j < (long long)cg * HW; j += BLOCK) {
        int c = g * cg + (int)(j / HW);
        double xhat = (x[base + j] - mu) * inv;
        dx[base + j] = (float)(inv * (gamma[c] * (double)dy[base + j] - a / M - xhat * b * inv / M));
    }
}

// k_gn_bwd_params: one thread per channel; dbeta = sum over images of
// sum dy, dgamma = sum over images of invstd * sum dy (x - mean).
extern "C" __global__ void k_gn_bwd_params(const double* sums, const float* invstd, float* dgamma, float* dbeta,
                                           int N, int C, int G) {
    int cg = C / G;
    GRID_STRIDE(c, C) {
        int g = (int)c / cg;
        double sdy = 0, sdyx = 0;
        for (int n = 0; n < N; n++) {
            sdy += sums[((long long)n * C + c) * 2];
            sdyx += sums[((long long)n * C + c) * 2 + 1] * (double)invstd[(long long)n * G + g];
        }
        dbeta[c] = (float)sdy;
        dgamma[c] = (float)sdyx;
    }
}
