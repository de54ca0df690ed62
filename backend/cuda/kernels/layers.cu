// ReLU, global average pooling and the bias of a linear layer.
// Launched from layers.go (the CPU counterpart is backend/cpu/layers.go); kernels.go joins
// this file into one NVRTC program after prelude.cu.

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
