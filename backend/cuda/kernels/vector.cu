// Element-wise vector kernels and the reductions behind Dot, SumSquares and
// AllFinite (tensor.Backend's vector kernels).
// Launched from vector.go (the CPU counterpart is backend/cpu/vector.go); kernels.go joins
// this file into one NVRTC program after prelude.cu.

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
