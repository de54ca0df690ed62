// An emulated libcublas for tests: handles, streams, math modes, the
// workspace, and cublasSgemm_v2 as a reference loop (column-major, both
// transposes, leading dimensions, alpha and beta through host pointers).
// Arguments are checked as cuBLAS documents (CUBLAS_STATUS_INVALID_VALUE),
// and, more strictly than cuBLAS can, every matrix must lie in device
// memory of the emulated driver. Under CUBLAS_TF32_TENSOR_OP_MATH the
// inputs are rounded to TF32 (10-bit mantissa) before the product, as
// tensor cores do; the sum is in float either way. cublasGemmEx takes A
// and B in float or bfloat16 (CUDA_R_32F, CUDA_R_16BF, both alike) and C in
// float with CUBLAS_COMPUTE_32F: the bf16 inputs are widened exactly and
// summed in float, as bf16 tensor cores with fp32 accumulation do.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_version.h"

typedef unsigned long long u64;
typedef int cublasStatus_t;
enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 };
enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TENSOR_OP_MATH = 1,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3,
    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16,
};

typedef struct handle {
    unsigned magic;
    u64 stream;
    int math;
    u64 workspace, workspace_size;
    int (*device_range)(u64, u64);
    int (*sticky)(void); // the driver's sticky error of the current context
    // The driver's recorder: on a capturing stream a product is recorded
    // (its arguments by value, alpha and beta read now, as cuBLAS reads
    // host-pointer scalars when it is called) and computed at each replay.
    int (*enqueue)(u64 stream, int (*fn)(void*), const void* arg, size_t size);
} handle;
#define MAGIC 0xC0B1A5u

static void logf_(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void logf_(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("cublas emulator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static handle* get(void* h) {
    handle* p = h;
    return p && p->magic == MAGIC ? p : NULL;
}

cublasStatus_t cublasCreate_v2(void** out) {
    if (!out) return CUBLAS_STATUS_INVALID_VALUE;
    int (*range)(u64, u64) = (int (*)(u64, u64))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_device_range");
    int (*has_ctx)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_has_context");
    if (!range || !has_ctx) {
        logf_("cublasCreate: the emulated driver (libcuda.so.1 of the emulator) is not loaded");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    if (!has_ctx()) {
        logf_("cublasCreate: no current CUDA context on the calling thread");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    handle* p = calloc(1, sizeof *p);
    if (!p) return CUBLAS_STATUS_ALLOC_FAILED;
    p->magic = MAGIC;
    p->device_range = range;
    p->sticky = (int (*)(void))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_sticky");
    p->enqueue = (int (*)(u64, int (*)(void*), const void*, size_t))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_enqueue");
    *out = p;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(void* h) {
    handle* p = get(h);
    if (!p) return CUBLAS_STATUS_NOT_INITIALIZED;
    p->magic = 0;
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(void* h, u64 stream) {
    handle* p = get(h);
    if (!p) return CUBLAS_STATUS_NOT_INITIALIZED;
    p->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(void* h, int mode) {
    handle* p = get(h);
    if (!p) return CUBLAS_STATUS_NOT_INITIALIZED;
    int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base < CUBLAS_DEFAULT_MATH || base > CUBLAS_TF32_TENSOR_OP_MATH) {
        logf_("cublasSetMathMode(%d): not a cublasMath_t", mode);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    p->math = base;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(void* h, u64 ws, size_t size) {
    handle* p = get(h);
    if (!p) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (size > 0 && (ws == 0 || !p->device_range(ws, size) || ws % 256)) {
        logf_("cublasSetWorkspace: %zu bytes at %#llx are not 256-byte aligned device memory", size, ws);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    p->workspace = ws;
    p->workspace_size = size;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(int type, int* value) {
    if (!value) return CUBLAS_STATUS_INVALID_VALUE;
    int major = emu_own_major(12); // 12.8.4, or N.0.0 for a copy named libcublas.so.N
    switch (type) {
    case 0: *value = major; return CUBLAS_STATUS_SUCCESS;
    case 1: *value = major == 12 ? 8 : 0; return CUBLAS_STATUS_SUCCESS;
    case 2: *value = major == 12 ? 4 : 0; return CUBLAS_STATUS_SUCCESS;
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasGetVersion_v2(void* h, int* version) {
    if (!get(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!version) return CUBLAS_STATUS_INVALID_VALUE;
    int major = emu_own_major(12);
    *version = major == 12 ? 120804 : major * 10000;
    return CUBLAS_STATUS_SUCCESS;
}

// tf32 rounds x to the nearest value with a 10-bit mantissa (ties to even).
static float tf32(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        u += 0xfffu + ((u >> 13) & 1u);
        u &= ~0x1fffu;
    }
    memcpy(&x, &u, 4);
    return x;
}

enum { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_32F = 68 };
enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 };

// at reads element i of a matrix of type t (float or bfloat16).
static float at(const void* m, int t, size_t i) {
    if (t == CUDA_R_16BF) {
        uint32_t u = (uint32_t)((const uint16_t*)m)[i] << 16;
        float x;
        memcpy(&x, &u, 4);
        return x;
    }
    return ((const float*)m)[i];
}

// op(M) is rows x cols; M is stored column-major with leading dimension ld
// and elements of unit bytes.
static int matrix_ok(handle* p, const char* name, u64 ptr, int op, int rows, int cols, int ld, int unit) {
    int stored_rows = op == CUBLAS_OP_N ? rows : cols, stored_cols = op == CUBLAS_OP_N ? cols : rows;
    if (stored_rows == 0 || stored_cols == 0) return 1;
    u64 bytes = ((u64)ld * (u64)(stored_cols - 1) + (u64)stored_rows) * (u64)unit;
    if (ptr == 0 || !p->device_range(ptr, bytes)) {
        logf_("cublasSgemm: %s (%d x %d, ld %d, %llu bytes from %#llx) is not inside one device allocation", name, stored_rows,
              stored_cols, ld, bytes, ptr);
        return 0;
    }
    return 1;
}

static cublasStatus_t gemm(void* h, int ta, int tb, int m, int n, int k, const float* alpha, u64 A, int lda, u64 B, int ldb,
                           const float* beta, u64 C, int ldc, int abtype);

// gemm_job is one product whose arguments were checked.
typedef struct gemm_job {
    int ta, tb, m, n, k;
    float alpha, beta;
    u64 A;
    int lda;
    u64 B;
    int ldb;
    u64 C;
    int ldc, abtype, round;
} gemm_job;
static int gemm_run(void* arg);

cublasStatus_t cublasSgemm_v2(void* h, int ta, int tb, int m, int n, int k, const float* alpha, u64 A, int lda, u64 B, int ldb,
                              const float* beta, u64 C, int ldc) {
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, CUDA_R_32F);
}

cublasStatus_t cublasGemmEx(void* h, int ta, int tb, int m, int n, int k, const void* alpha, u64 A, int atype, int lda, u64 B, int btype,
                            int ldb, const void* beta, u64 C, int ctype, int ldc, int compute, int algo) {
    if (!get(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (atype != btype || (atype != CUDA_R_32F && atype != CUDA_R_16BF) || ctype != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F ||
        (algo != CUBLAS_GEMM_DEFAULT && algo != CUBLAS_GEMM_DEFAULT_TENSOR_OP)) {
        logf_("cublasGemmEx: A type %d, B type %d, C type %d, compute type %d, algorithm %d: only A and B alike in CUDA_R_32F or CUDA_R_16BF, "
              "C in CUDA_R_32F, CUBLAS_COMPUTE_32F and the default algorithms are emulated",
              atype, btype, ctype, compute, algo);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return gemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, atype);
}

static cublasStatus_t gemm(void* h, int ta, int tb, int m, int n, int k, const float* alpha, u64 A, int lda, u64 B, int ldb,
                           const float* beta, u64 C, int ldc, int abtype) {
    handle* p = get(h);
    if (!p) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (p->sticky && p->sticky()) {
        logf_("cublasSgemm: the context holds the earlier fault %d", p->sticky());
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    // The checks of the cuBLAS documentation of cublas<t>gemm.
    if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T && ta != CUBLAS_OP_C) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T && tb != CUBLAS_OP_C) ||
        m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1)) ||
        ldb < (tb == CUBLAS_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1)) || ldc < (m > 1 ? m : 1) || !alpha || !beta) {
        logf_("cublasSgemm(transa %d, transb %d, m %d, n %d, k %d, lda %d, ldb %d, ldc %d): invalid arguments", ta, tb, m, n, k, lda, ldb,
              ldc);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    int unit = abtype == CUDA_R_16BF ? 2 : 4;
    if (!matrix_ok(p, "C", C, CUBLAS_OP_N, m, n, ldc, 4) ||
        (k > 0 && (!matrix_ok(p, "A", A, ta, m, k, lda, unit) || !matrix_ok(p, "B", B, tb, k, n, ldb, unit))))
        return CUBLAS_STATUS_INVALID_VALUE;
    // TF32 rounding applies to float inputs only (bf16 has fewer bits).
    gemm_job j = {ta, tb, m, n, k, *alpha, *beta, A, lda, B, ldb, C, ldc, abtype,
                  p->math == CUBLAS_TF32_TENSOR_OP_MATH && abtype == CUDA_R_32F};
    int rec = p->enqueue ? p->enqueue(p->stream, gemm_run, &j, sizeof j) : 0;
    if (rec) return rec > 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
    return gemm_run(&j) ? CUBLAS_STATUS_ALLOC_FAILED : CUBLAS_STATUS_SUCCESS;
}

// gemm_run computes one checked product; nonzero when out of host memory.
static int gemm_run(void* arg) {
    const gemm_job* J = arg;
    int ta = J->ta, tb = J->tb, m = J->m, n = J->n, k = J->k, lda = J->lda, ldb = J->ldb, ldc = J->ldc, abtype = J->abtype;
    float al = J->alpha, be = J->beta;
    int round = J->round;
    const void* a = (const void*)(uintptr_t)J->A;
    const void* b = (const void*)(uintptr_t)J->B;
    float* c = (float*)(uintptr_t)J->C;
    // op(A) as a column-major m x k copy and op(B)'s column j as needed.
    float* oa = malloc(sizeof(float) * (size_t)m * (size_t)(k > 0 ? k : 1));
    float* acc = malloc(sizeof(float) * (size_t)m);
    if (!oa || !acc) {
        free(oa);
        free(acc);
        return 1;
    }
    for (int l = 0; l < k; l++)
        for (int i = 0; i < m; i++) {
            float v = at(a, abtype, ta == CUBLAS_OP_N ? (size_t)l * lda + i : (size_t)i * lda + l);
            oa[(size_t)l * m + i] = round ? tf32(v) : v;
        }
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) acc[i] = 0;
        for (int l = 0; l < k; l++) {
            float bv = at(b, abtype, tb == CUBLAS_OP_N ? (size_t)j * ldb + l : (size_t)l * ldb + j);
            if (round) bv = tf32(bv);
            const float* col = oa + (size_t)l * m;
            for (int i = 0; i < m; i++) acc[i] += col[i] * bv;
        }
        float* cj = c + (size_t)j * ldc;
        // beta == 0: C is not read (it may hold NaN), as cuBLAS documents.
        for (int i = 0; i < m; i++) cj[i] = be == 0 ? al * acc[i] : al * acc[i] + be * cj[i];
    }
    free(oa);
    free(acc);
    return 0;
}
