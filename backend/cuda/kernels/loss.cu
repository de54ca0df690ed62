// NT-Xent (docs/definitions.md, section 4 "Contrastive learning as a biased
// oracle") on z (rows = 2n views, d): the reference is internal/ref/ntxent.go.
// Launched from loss.go (the CPU counterpart is backend/cpu/loss.go);
// kernels.go joins this file into one NVRTC program after prelude.cu.

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

// The decoupled losses (docs/definitions.md, section 10 "Decoupled losses",
// DCL and SogCLR): the reference is internal/ref/decoupled.go.
//
// k_decoupled_rows: block i handles row i of S. The negatives of view i
// are every column but i and its positive i^1. DCL (sog 0): terms[i] is
// log sum_neg exp(s/tau) - s_pos/tau and row i of G = dLoss/dS the
// softmax over the negatives (and -1 at the positive) times 1/(tau rows).
// SogCLR (sog 1): u_i = (1-g) uimg[i/2] + g m_i with m_i the mean of
// exp(s/tau) over the negatives (g = 1 where uimg is 0), urow[i] = u_i,
// terms[i] = log((rows-2) u_i) - s_pos/tau and G the step's weights
// exp(s/tau)/((rows-2) u_i) (and -1 at the positive) times 1/rows.
extern "C" __global__ void k_decoupled_rows(const float* S, float* G, double* terms, const float* uimg, float* urow,
                                            int rows, float tau, float gamma, int sog) {
    __shared__ double sh[BLOCK];
    int i = blockIdx.x;
    int pos = i ^ 1;
    const float* Si = S + (long long)i * rows;
    double itau = 1.0 / (double)tau;
    double mx = -1e300;
    for (int u = threadIdx.x; u < rows; u += BLOCK)
        if (u != i && u != pos && Si[u] * itau > mx) mx = Si[u] * itau;
    mx = block_max(mx, sh);
    double sb = 0;
    for (int u = threadIdx.x; u < rows; u += BLOCK)
        if (u != i && u != pos) sb += exp(Si[u] * itau - mx);
    sb = block_sum(sb, sh);
    double lse = mx + log(sb);
    double spos = Si[pos] * itau;
    double negs = (double)(rows - 2);
    double logDenom = lse, c = itau / rows;
    if (sog) {
        double old = (double)uimg[i / 2];
        double g = old == 0 ? 1.0 : (double)gamma;
        double ui = (1 - g) * old + g * exp(lse) / negs;
        logDenom = log(negs * ui);
        c = 1.0 / rows;
        if (threadIdx.x == 0) urow[i] = (float)ui;
    }
    if (threadIdx.x == 0) terms[i] = logDenom - spos;
    for (int u = threadIdx.x; u < rows; u += BLOCK) {
        double g = 0;
        if (u == pos) g = -c;
        else if (u != i) g = c * exp(Si[u] * itau - logDenom);
        G[(long long)i * rows + u] = (float)g;
    }
}

// k_u_mean: u[k] = the mean of its two views' u_i, in float as the host does.
extern "C" __global__ void k_u_mean(const float* urow, float* u, int n) {
    GRID_STRIDE(k, n) u[k] = (urow[2 * k] + urow[2 * k + 1]) * 0.5f;
}
