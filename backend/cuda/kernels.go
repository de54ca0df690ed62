package cuda

// kernelSource is the CUDA C of every kernel that is not a convolution or a
// matrix product, compiled by NVRTC at start-up. It includes no headers (NVRTC
// has none of the C library), uses a fixed block size of blockSize threads for
// every kernel that reduces in shared memory, and accumulates every sum in
// double so results match backend/cpu, which does the same. Reductions go
// through per-block partial sums added in a fixed order, so results do not
// depend on scheduling (no floating-point atomics).
//
// Each kernel's signature is also listed in kernelSigs; a test checks the two
// agree, and launch checks every call site against kernelSigs.
const kernelSource = `
#define BLOCK 256

__device__ __forceinline__ int finite_f(float x) {
    return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

// block_sum adds v over the block (blockDim.x == BLOCK); every thread gets the total.
__device__ double block_sum(double v, double* sh) {
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ double block_max(double v, double* sh) {
    int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s && sh[t + s] > sh[t]) sh[t] = sh[t + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

#define GRID_STRIDE(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n); i += (long long)gridDim.x * blockDim.x)

// ---- vector kernels ----

extern "C" __global__ void k_scale(float* x, float alpha, int n) {
    GRID_STRIDE(i, n) x[i] = alpha * x[i];
}

extern "C" __global__ void k_axpy(float* y, float alpha, const float* x, int n) {
    GRID_STRIDE(i, n) y[i] += alpha * x[i];
}

extern "C" __global__ void k_add(float* out, const float* a, const float* b, int n) {
    GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}

// k_dot_partial writes one partial sum of a_i b_i per block.
extern "C" __global__ void k_dot_partial(const float* a, const float* b, int n, double* partial) {
    __shared__ double sh[BLOCK];
    double acc = 0;
    GRID_STRIDE(i, n) acc += (double)a[i] * (double)b[i];
    double s = block_sum(acc, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// k_sum_partials adds m partial sums in one block: out[0] = sum.
extern "C" __global__ void k_sum_partials(const double* partial, int m, double* out) {
    __shared__ double sh[BLOCK];
    double acc = 0;
    for (int i = threadIdx.x; i < m; i += BLOCK) acc += partial[i];
    double s = block_sum(acc, sh);
    if (threadIdx.x == 0) out[0] = s;
}

extern "C" __global__ void k_count_nonfinite(const float* x, int n, unsigned int* count) {
    __shared__ double sh[BLOCK];
    double bad = 0;
    GRID_STRIDE(i, n) if (!finite_f(x[i])) bad += 1;
    double s = block_sum(bad, sh);
    if (threadIdx.x == 0 && s > 0) atomicAdd(count, (unsigned int)s);
}

// ---- ReLU ----

extern "C" __global__ void k_relu_fwd(const float* x, float* y, int n) {
    GRID_STRIDE(i, n) { float v = x[i]; y[i] = v > 0.0f ? v : 0.0f; }
}

// y is the forward output: dx = dy where y > 0.
extern "C" __global__ void k_relu_bwd(const float* y, const float* dy, float* dx, int n) {
    GRID_STRIDE(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

// ---- global average pool: x (N,C,HW) -> y (N,C) ----

extern "C" __global__ void k_gap_fwd(const float* x, float* y, int nc, int hw) {
    GRID_STRIDE(i, nc) {
        const float* p = x + i * (long long)hw;
        double s = 0;
        for (int j = 0; j < hw; j++) s += p[j];
        y[i] = (float)(s / hw);
    }
}

extern "C" __global__ void k_gap_bwd(const float* dy, float* dx, int nc, int hw) {
    GRID_STRIDE(i, (long long)nc * hw) dx[i] = dy[i / hw] / (float)hw;
}

// ---- bias of a linear layer: y (rows, cols) ----

extern "C" __global__ void k_bias_add(float* y, const float* b, int rows, int cols) {
    GRID_STRIDE(i, (long long)rows * cols) y[i] += b[i % cols];
}

// db[j] = sum over rows of dy[r, j], one thread per column.
extern "C" __global__ void k_bias_grad(const float* dy, float* db, int rows, int cols) {
    GRID_STRIDE(j, cols) {
        double s = 0;
        for (int r = 0; r < rows; r++) s += dy[(long long)r * cols + j];
        db[j] = (float)s;
    }
}

// ---- batch normalisation over x (N,C,HW), statistics per channel ----

// k_bn_partial: block (s, c) of a (splits, C) grid sums x and x^2 over its
// share of channel c's N*HW values: partial[(c*splits+s)*2 + {0,1}].
extern "C" __global__ void k_bn_partial(const float* x, int N, int C, int HW, int splits, double* partial) {
    __shared__ double sh[BLOCK];
    int s = blockIdx.x, c = blockIdx.y;
    long long m = (long long)N * HW;
    long long lo = m * s / splits, hi = m * (s + 1) / splits;
    double sum = 0, sq = 0;
    for (long long j = lo + threadIdx.x; j < hi; j += BLOCK) {
        long long n = j / HW, p = j - n * HW;
        double v = x[(n * C + c) * HW + p];
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
    GRID_STRIDE(i, (long long)N * C * HW) {
        int c = (int)((i / HW) % C);
        y[i] = (x[i] - mean[c]) * invstd[c] * gamma[c] + beta[c];
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
    for (long long j = lo + threadIdx.x; j < hi; j += BLOCK) {
        long long n = j / HW, p = j - n * HW;
        long long idx = (n * C + c) * HW + p;
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
    GRID_STRIDE(i, (long long)N * C * HW) {
        int c = (int)((i / HW) % C);
        double is = invstd[c];
        double xhat = (x[i] - mean[c]) * is;
        double g = dy[i] - sums[2 * c] / M - xhat * sums[2 * c + 1] / M;
        dx[i] = (float)(gamma[c] * is * g);
    }
}

// ---- NT-Xent (SPEC section 2) on z (rows = 2n views, d) ----

// k_l2norm_rows: zn = z / max(|z|, 1e-12) per row, norms keeps the divisor.
extern "C" __global__ void k_l2norm_rows(const float* z, float* zn, float* norms, int rows, int d) {
    __shared__ double sh[BLOCK];
    int r = blockIdx.x;
    const float* zr = z + (long long)r * d;
    double s = 0;
    for (int j = threadIdx.x; j < d; j += BLOCK) s += (double)zr[j] * zr[j];
    s = block_sum(s, sh);
    double nrm = sqrt(s);
    if (nrm < 1e-12) nrm = 1e-12;
    for (int j = threadIdx.x; j < d; j += BLOCK) zn[(long long)r * d + j] = (float)(zr[j] / nrm);
    if (threadIdx.x == 0) norms[r] = (float)nrm;
}

// k_ntxent_rows: block i handles row i of the similarity matrix S (rows x
// rows). It writes the per-view loss terms l(i, pos(i)) over the whole batch
// (terms[i]) and over its half (terms[rows+i], multilevel only) and row i of
// G = dLoss/dS, where Loss = L_B or L_B - (L_B1 + L_B2)/2.
extern "C" __global__ void k_ntxent_rows(const float* S, float* G, double* terms, int rows, float tau, int multilevel) {
    __shared__ double sh[BLOCK];
    int i = blockIdx.x;
    int pos = i ^ 1;
    int half = rows / 2;
    int hlo = multilevel ? (i / half) * half : 0;
    int hhi = multilevel ? hlo + half : 0;
    const float* Si = S + (long long)i * rows;
    double itau = 1.0 / (double)tau;
    double mx = -1e300;
    for (int u = threadIdx.x; u < rows; u += BLOCK)
        if (u != i && Si[u] * itau > mx) mx = Si[u] * itau;
    mx = block_max(mx, sh);
    double sb = 0, sh2 = 0;
    for (int u = threadIdx.x; u < rows; u += BLOCK) {
        if (u == i) continue;
        double e = exp(Si[u] * itau - mx);
        sb += e;
        if (u >= hlo && u < hhi) sh2 += e;
    }
    sb = block_sum(sb, sh);
    sh2 = block_sum(sh2, sh);
    double spos = Si[pos] * itau;
    if (threadIdx.x == 0) {
        terms[i] = -(spos - mx - log(sb));
        terms[rows + i] = multilevel ? -(spos - mx - log(sh2)) : 0.0;
    }
    double cb = itau / rows, ch = multilevel ? itau / half : 0.0;
    for (int u = threadIdx.x; u < rows; u += BLOCK) {
        double g = 0;
        if (u != i) {
            double e = exp(Si[u] * itau - mx);
            double delta = u == pos ? 1.0 : 0.0;
            g = cb * (e / sb - delta);
            if (u >= hlo && u < hhi) g -= 0.5 * ch * (e / sh2 - delta);
        }
        G[(long long)i * rows + u] = (float)g;
    }
}

// k_ntxent_sum: out[0] = L_B, out[1] = L_B1, out[2] = L_B2 (0 unless multilevel).
extern "C" __global__ void k_ntxent_sum(const double* terms, int rows, int multilevel, double* out) {
    __shared__ double sh[BLOCK];
    int half = rows / 2;
    double b = 0, h1 = 0, h2 = 0;
    for (int i = threadIdx.x; i < rows; i += BLOCK) {
        b += terms[i];
        if (i < half) h1 += terms[rows + i]; else h2 += terms[rows + i];
    }
    b = block_sum(b, sh);
    h1 = block_sum(h1, sh);
    h2 = block_sum(h2, sh);
    if (threadIdx.x == 0) {
        out[0] = b / rows;
        out[1] = multilevel ? h1 / half : 0.0;
        out[2] = multilevel ? h2 / half : 0.0;
    }
}

// k_l2norm_bwd: dz = (dzn - zn (zn . dzn)) / norm, per row.
extern "C" __global__ void k_l2norm_bwd(const float* zn, const float* dzn, const float* norms, float* dz, int rows, int d) {
    __shared__ double sh[BLOCK];
    int r = blockIdx.x;
    long long o = (long long)r * d;
    double s = 0;
    for (int j = threadIdx.x; j < d; j += BLOCK) s += (double)zn[o + j] * dzn[o + j];
    s = block_sum(s, sh);
    double nrm = norms[r];
    for (int j = threadIdx.x; j < d; j += BLOCK) dz[o + j] = (float)((dzn[o + j] - zn[o + j] * s) / nrm);
}

// ---- optimisers (tensor.SGDConfig, tensor.LARSConfig) ----

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
`

// blockSize is the BLOCK of kernelSource.
const blockSize = 256

// kernelSigs lists every kernel launched from Go with its parameter kinds:
// p = pointer, i = int, f = float, d = double.
var kernelSigs = map[string]string{
	"k_scale":           "pfi",
	"k_axpy":            "pfpi",
	"k_add":             "pppi",
	"k_dot_partial":     "ppip",
	"k_sum_partials":    "pip",
	"k_count_nonfinite": "pip",
	"k_relu_fwd":        "ppi",
	"k_relu_bwd":        "pppi",
	"k_gap_fwd":         "ppii",
	"k_gap_bwd":         "ppii",
	"k_bias_add":        "ppii",
	"k_bias_grad":       "ppii",
	"k_bn_partial":      "piiiip",
	"k_bn_finalize":     "piiiffipppp",
	"k_bn_apply":        "ppppppiii",
	"k_bn_eval":         "ppppppfiii",
	"k_bn_bwd_partial":  "ppppiiiip",
	"k_bn_bwd_finalize": "piippp",
	"k_bn_bwd_dx":       "pppppppiii",
	"k_gn_fwd":          "ppppppiiiif",
	"k_gn_bwd_dx":       "pppppppiiii",
	"k_gn_bwd_params":   "ppppiii",
	"k_l2norm_rows":     "pppii",
	"k_ntxent_rows":     "pppifi",
	"k_ntxent_sum":      "piip",
	"k_l2norm_bwd":      "ppppii",
	"k_sgd":             "pppifffi",
	"k_lars_partial":    "ppifp",
	"k_lars_trust":      "pifp",
	"k_lars_update":     "pppifffpi",
}
