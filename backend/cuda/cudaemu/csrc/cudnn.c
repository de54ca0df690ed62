// An emulated libcudnn.so.9 for tests: the legacy convolution API that
// backend/cuda calls, and the part of the backend (graph) API that runs
// the same convolutions (at the end of this file). Tensor descriptors are 4-d NCHW or NHWC, float or
// bfloat16, filters KCRS (NCHW) or KRSC (NHWC) of the same data type as the
// tensors, convolutions 2-d with padding, stride and dilation, as
// cross-correlation or convolution; forward, backward data and backward
// filter are reference loops over exactly what the descriptors say. Find
// and get return a plausible list of algorithms (the status, time,
// workspace and math type of each, fastest first; some unsupported), find
// clobbers the output buffer as the real one does by running the
// algorithms on it, and a run checks its algorithm, workspace and buffers.
// Anything outside that (another layout, data type, group count, a
// dimension mismatch) is CUDNN_STATUS_BAD_PARAM or
// CUDNN_STATUS_NOT_SUPPORTED with the reason on stderr.
//
// Math: under CUDNN_FMA_MATH everything is fp32; under the other math types
// the tensor-core algorithms (IMPLICIT_PRECOMP_GEMM forward, ALGO_1
// backward) round their inputs to TF32, as Ampere and later GPUs do.
// bfloat16 data (cuDNN's PSEUDO_BFLOAT16_CONFIG: bf16 tensors, float
// compute type) is widened to float, summed in float and the output rounded
// to bf16 (nearest, ties to even). SIMCLR_CUDA_EMU_CUDNN_NO_BF16=1 makes
// bf16 descriptors CUDNN_STATUS_NOT_SUPPORTED, as on a cuDNN or GPU
// without bf16 convolutions.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long u64;
typedef int cudnnStatus_t;
enum {
    CUDNN_STATUS_SUCCESS = 0,
    CUDNN_STATUS_NOT_INITIALIZED = 1001,
    CUDNN_STATUS_BAD_PARAM = 2000,
    CUDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
    CUDNN_STATUS_NOT_SUPPORTED = 3000,
    CUDNN_STATUS_INTERNAL_ERROR = 4000,
    CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED = 4001,
    CUDNN_STATUS_EXECUTION_FAILED = 5000,
};
enum { CUDNN_TENSOR_NCHW = 0, CUDNN_TENSOR_NHWC = 1 };
enum { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_BFLOAT16 = 9 };
enum { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 };
enum { CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2, CUDNN_FMA_MATH = 3 };
enum { CUDNN_NON_DETERMINISTIC = 0, CUDNN_DETERMINISTIC = 1 };

// cudnnConvolutionFwdAlgoPerf_t (and the backward ones, laid out alike).
typedef struct {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    int determinism;
    int mathType;
    int reserved[3];
} algo_perf;

static void logf_(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("cudnn emulator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

enum { K_HANDLE = 0x6d0001, K_TENSOR, K_FILTER, K_CONV };

typedef struct handle {
    int kind;
    u64 stream;
    int (*device_range)(u64, u64);
    int (*sticky)(void); // the driver's sticky error of the current context
    // The driver's recorder and refusal for a capturing stream: a
    // convolution is recorded (its descriptors and scalars by value) and
    // computed at each replay; an algorithm search invalidates the capture.
    int (*enqueue)(u64 stream, int (*fn)(void*), const void* arg, size_t size);
    int (*unsupported)(u64 stream, const char* call);
} handle;

typedef struct tensor {
    int kind, set;
    int n, c, h, w;
    int format, dtype;
} tensor;

typedef struct filter {
    int kind, set;
    int k, c, r, s;
    int format, dtype;
} filter;

// layout_ok reports whether a descriptor's format and data type are
// emulated, logging why not.
static cudnnStatus_t layout_ok(const char* what, int format, int dtype) {
    if ((format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC) || (dtype != CUDNN_DATA_FLOAT && dtype != CUDNN_DATA_BFLOAT16)) {
        logf_("%s: format %d, data type %d: only NCHW or NHWC, float or bfloat16 is emulated", what, format, dtype);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    const char* no = getenv("SIMCLR_CUDA_EMU_CUDNN_NO_BF16");
    if (dtype == CUDNN_DATA_BFLOAT16 && no && strcmp(no, "1") == 0) {
        logf_("%s: bfloat16 is not supported (SIMCLR_CUDA_EMU_CUDNN_NO_BF16=1)", what);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    return CUDNN_STATUS_SUCCESS;
}

static size_t elem_size(int dtype) { return dtype == CUDNN_DATA_BFLOAT16 ? 2 : 4; }

typedef struct conv {
    int kind, set;
    int pad_h, pad_w, u, v, dil_h, dil_w, mode;
    int math;
} conv;

#define CHECK_KIND(p, K) ((p) != NULL && *(const int*)(p) == (K))

size_t cudnnGetVersion(void) { return 90800; }

// The CUDA version this cuDNN was "built for": SIMCLR_CUDA_EMU_CUDNN_CUDA
// (e.g. 13000), else 12080; the tests of the library set choose it.
size_t cudnnGetCudartVersion(void) {
    const char* v = getenv("SIMCLR_CUDA_EMU_CUDNN_CUDA");
    long n = v && *v ? strtol(v, NULL, 10) : 0;
    return n > 0 ? (size_t)n : 12080;
}

const char* cudnnGetErrorString(cudnnStatus_t s) {
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    case 2004: return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
    case 2010: return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
    case 3001: return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
    case 3002: return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
    case 3004: return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
    }
    return "CUDNN_STATUS_UNKNOWN";
}

cudnnStatus_t cudnnCreate(void** out) {
    if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    int (*range)(u64, u64) = (int (*)(u64, u64))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_device_range");
    int (*has_ctx)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_has_context");
    if (!range || !has_ctx) {
        logf_("cudnnCreate: the emulated driver (libcuda.so.1 of the emulator) is not loaded");
        return CUDNN_STATUS_NOT_INITIALIZED;
    }
    if (!has_ctx()) {
        logf_("cudnnCreate: no current CUDA context on the calling thread");
        return CUDNN_STATUS_NOT_INITIALIZED;
    }
    handle* h = calloc(1, sizeof *h);
    h->kind = K_HANDLE;
    h->device_range = range;
    h->sticky = (int (*)(void))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_sticky");
    h->enqueue = (int (*)(u64, int (*)(void*), const void*, size_t))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_enqueue");
    h->unsupported = (int (*)(u64, const char*))dlsym(RTLD_DEFAULT, "simclr_cuda_emu_capture_unsupported");
    *out = h;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(void* h) {
    if (!CHECK_KIND(h, K_HANDLE)) return CUDNN_STATUS_BAD_PARAM;
    ((handle*)h)->kind = 0;
    free(h);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(void* h, u64 stream) {
    if (!CHECK_KIND(h, K_HANDLE)) return CUDNN_STATUS_BAD_PARAM;
    ((handle*)h)->stream = stream;
    return CUDNN_STATUS_SUCCESS;
}

#define CREATE_DESTROY(Name, type, K)                                                                                                    \
    cudnnStatus_t cudnnCreate##Name##Descriptor(void** out) {                                                                           \
        if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;                                                                           \
        type* d = calloc(1, sizeof(type));                                                                                              \
        d->kind = K;                                                                                                                    \
        *out = d;                                                                                                                       \
        return CUDNN_STATUS_SUCCESS;                                                                                                    \
    }                                                                                                                                   \
    cudnnStatus_t cudnnDestroy##Name##Descriptor(void* d) {                                                                             \
        if (d == NULL) return CUDNN_STATUS_SUCCESS;                                                                                     \
        if (!CHECK_KIND(d, K)) return CUDNN_STATUS_BAD_PARAM;                                                                           \
        ((type*)d)->kind = 0;                                                                                                           \
        free(d);                                                                                                                        \
        return CUDNN_STATUS_SUCCESS;                                                                                                    \
    }
CREATE_DESTROY(Tensor, tensor, K_TENSOR)
CREATE_DESTROY(Filter, filter, K_FILTER)
CREATE_DESTROY(Convolution, conv, K_CONV)

cudnnStatus_t cudnnSetTensor4dDescriptor(void* d, int format, int dtype, int n, int c, int h, int w) {
    if (!CHECK_KIND(d, K_TENSOR)) return CUDNN_STATUS_BAD_PARAM;
    cudnnStatus_t st = layout_ok("cudnnSetTensor4dDescriptor", format, dtype);
    if (st) return st;
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0) {
        logf_("cudnnSetTensor4dDescriptor: dimensions %d %d %d %d", n, c, h, w);
        return CUDNN_STATUS_BAD_PARAM;
    }
    tensor* t = d;
    t->n = n, t->c = c, t->h = h, t->w = w, t->format = format, t->dtype = dtype, t->set = 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(void* d, int dtype, int format, int k, int c, int r, int s) {
    if (!CHECK_KIND(d, K_FILTER)) return CUDNN_STATUS_BAD_PARAM;
    cudnnStatus_t st = layout_ok("cudnnSetFilter4dDescriptor", format, dtype);
    if (st) return st;
    if (k <= 0 || c <= 0 || r <= 0 || s <= 0) {
        logf_("cudnnSetFilter4dDescriptor: dimensions %d %d %d %d", k, c, r, s);
        return CUDNN_STATUS_BAD_PARAM;
    }
    filter* f = d;
    f->k = k, f->c = c, f->r = r, f->s = s, f->format = format, f->dtype = dtype, f->set = 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(void* d, int pad_h, int pad_w, int u, int v, int dil_h, int dil_w, int mode, int ctype) {
    if (!CHECK_KIND(d, K_CONV)) return CUDNN_STATUS_BAD_PARAM;
    if (pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dil_h <= 0 || dil_w <= 0 || (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)) {
        logf_("cudnnSetConvolution2dDescriptor: pad %d %d, stride %d %d, dilation %d %d, mode %d", pad_h, pad_w, u, v, dil_h, dil_w, mode);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (ctype != CUDNN_DATA_FLOAT) {
        logf_("cudnnSetConvolution2dDescriptor: compute type %d: only float is emulated", ctype);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    conv* cv = d;
    cv->pad_h = pad_h, cv->pad_w = pad_w, cv->u = u, cv->v = v, cv->dil_h = dil_h, cv->dil_w = dil_w, cv->mode = mode, cv->set = 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(void* d, int math) {
    if (!CHECK_KIND(d, K_CONV)) return CUDNN_STATUS_BAD_PARAM;
    if (math < CUDNN_DEFAULT_MATH || math > CUDNN_FMA_MATH) {
        logf_("cudnnSetConvolutionMathType(%d): not a cudnnMathType_t", math);
        return CUDNN_STATUS_BAD_PARAM;
    }
    ((conv*)d)->math = math;
    return CUDNN_STATUS_SUCCESS;
}

// ---- the problem a call describes ----

enum { FWD, BWD_DATA, BWD_FILTER };
static const char* dir_name[] = {"forward", "backward data", "backward filter"};

typedef struct problem {
    int N, C, H, W, K, R, S, OH, OW;
    const conv* cv;
    int dtype;                  // of every tensor and the filter
    int xfmt, wfmt, yfmt;       // their formats
} problem;

// describe checks the descriptors of one convolution and fills pr.
static cudnnStatus_t describe(int dir, const void* h, const void* xd, const void* wd, const void* cd, const void* yd, problem* pr) {
    if (!CHECK_KIND(h, K_HANDLE) || !CHECK_KIND(xd, K_TENSOR) || !CHECK_KIND(wd, K_FILTER) || !CHECK_KIND(cd, K_CONV) ||
        !CHECK_KIND(yd, K_TENSOR)) {
        logf_("%s: a handle or descriptor argument is of the wrong kind (arguments out of order?)", dir_name[dir]);
        return CUDNN_STATUS_BAD_PARAM;
    }
    const tensor *x = xd, *y = yd;
    const filter* w = wd;
    const conv* cv = cd;
    if (!x->set || !y->set || !w->set || !cv->set) {
        logf_("%s: a descriptor was never set", dir_name[dir]);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (x->c != w->c) {
        logf_("%s: input has %d channels, filter %d (group count 1)", dir_name[dir], x->c, w->c);
        return CUDNN_STATUS_BAD_PARAM;
    }
    int oh = 1 + (x->h + 2 * cv->pad_h - ((w->r - 1) * cv->dil_h + 1)) / cv->u;
    int ow = 1 + (x->w + 2 * cv->pad_w - ((w->s - 1) * cv->dil_w + 1)) / cv->v;
    if (x->h + 2 * cv->pad_h < (w->r - 1) * cv->dil_h + 1 || x->w + 2 * cv->pad_w < (w->s - 1) * cv->dil_w + 1) {
        logf_("%s: filter %dx%d (dilation %d,%d) larger than the padded input %dx%d", dir_name[dir], w->r, w->s, cv->dil_h, cv->dil_w,
              x->h + 2 * cv->pad_h, x->w + 2 * cv->pad_w);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (y->n != x->n || y->c != w->k || y->h != oh || y->w != ow) {
        logf_("%s: output descriptor (%d,%d,%d,%d), the convolution gives (%d,%d,%d,%d)", dir_name[dir], y->n, y->c, y->h, y->w, x->n, w->k,
              oh, ow);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (x->dtype != y->dtype || x->dtype != w->dtype) {
        logf_("%s: data types x %d, filter %d, y %d: all must be alike (float, or bfloat16 with a float compute type)", dir_name[dir], x->dtype,
              w->dtype, y->dtype);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    *pr = (problem){x->n, x->c, x->h, x->w, w->k, w->r, w->s, oh, ow, cv, x->dtype, x->format, w->format, y->format};
    return CUDNN_STATUS_SUCCESS;
}

// tensor_core reports whether algorithm algo of direction dir runs on
// tensor cores under math (then in TF32).
static int tensor_core(int dir, int algo, int math) {
    (void)dir;
    return math != CUDNN_FMA_MATH && algo == 1;
}

// algo_info gives algorithm algo's workspace for the problem under math, or
// a status when it does not support the problem.
static cudnnStatus_t algo_info(int dir, int algo, const problem* p, int math, size_t* ws) {
    int count = dir == FWD ? 8 : dir == BWD_DATA ? 6 : 7;
    if (algo < 0 || algo >= count) {
        logf_("%s: algorithm %d does not exist", dir_name[dir], algo);
        return CUDNN_STATUS_BAD_PARAM;
    }
    size_t unit = elem_size(p->dtype);
    size_t im2col = unit * (size_t)p->C * p->R * p->S * p->OH * p->OW;
    int strided = p->cv->u > 1 || p->cv->v > 1 || p->cv->dil_h > 1 || p->cv->dil_w > 1;
    switch (algo) {
    case 0: // IMPLICIT_GEMM / ALGO_0: no workspace
        *ws = 0;
        return CUDNN_STATUS_SUCCESS;
    case 1: // IMPLICIT_PRECOMP_GEMM / ALGO_1: index tables; TF32 needs a converted filter too
        *ws = sizeof(int) * (size_t)p->C * p->R * p->S + (tensor_core(dir, algo, math) ? unit * (size_t)p->K * p->C * p->R * p->S : 0);
        return CUDNN_STATUS_SUCCESS;
    case 2: // GEMM (forward) / FFT (backward)
        if (dir != FWD && strided) return CUDNN_STATUS_NOT_SUPPORTED;
        *ws = dir == FWD ? im2col * (size_t)p->N : unit * 4 * (size_t)(p->N + p->K) * p->C * (p->H + 8) * (p->W + 8);
        return CUDNN_STATUS_SUCCESS;
    }
    return CUDNN_STATUS_NOT_SUPPORTED; // the FFT, Winograd and direct variants are not emulated
}

// perf_list fills up to want records for the problem, fastest first:
// the algorithms that run, then the ones that do not (status set).
static int perf_list(int dir, const problem* p, int want, algo_perf* out) {
    int math = p->cv->math;
    int count = dir == FWD ? 8 : dir == BWD_DATA ? 6 : 7;
    static const int fast_order[] = {1, 0, 2, 3, 4, 5, 6, 7};
    double flops = 2.0 * p->N * p->K * p->C * p->R * p->S * p->OH * p->OW;
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 8 && n < want; i++) {
            int algo = fast_order[i];
            if (algo >= count) continue;
            size_t ws = 0;
            cudnnStatus_t st = algo_info(dir, algo, p, math, &ws);
            if ((pass == 0) != (st == CUDNN_STATUS_SUCCESS)) continue;
            algo_perf* r = &out[n++];
            memset(r, 0, sizeof *r);
            r->algo = algo;
            r->status = st;
            r->time = st == CUDNN_STATUS_SUCCESS ? (float)(flops / (tensor_core(dir, algo, math) ? 4e11 : 5e10) * (1 + 0.25 * i)) : -1.0f;
            r->memory = ws;
            r->determinism = CUDNN_DETERMINISTIC;
            r->mathType = tensor_core(dir, algo, math) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
        }
    return n;
}

static cudnnStatus_t check_buffer(const handle* h, const char* what, const char* name, u64 ptr, size_t elems, size_t unit) {
    if (ptr == 0 || !h->device_range(ptr, elems * unit)) {
        logf_("%s: %s (%zu elements of %zu bytes at %#llx) is not inside one device allocation", what, name, elems, unit, ptr);
        return CUDNN_STATUS_BAD_PARAM;
    }
    return CUDNN_STATUS_SUCCESS;
}

static void poison(u64 ptr, size_t bytes) { memset((void*)(uintptr_t)ptr, 0xFF, bytes); }

// ---- the reference loops ----

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

static float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

// float_to_bf16 rounds to the nearest bfloat16, ties to even; NaN stays NaN.
static uint16_t float_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

// at is the storage index of element (a, b, c, d) of a 4-d array of
// dimensions (A, B, C, D) in format fmt: NCHW order, or NHWC (a, c, d, b).
static size_t at(int fmt, int b, int c, int d, int B, int C, int D, int a) {
    if (fmt == CUDNN_TENSOR_NHWC) return (((size_t)a * C + c) * D + d) * B + b;
    return (((size_t)a * B + b) * C + c) * D + d;
}

// copy_in reads the (A, B, C, D) array at src (of dtype and fmt) into an
// NCHW-ordered float copy, rounding to TF32 when round is set.
static float* copy_in(u64 src, int dtype, int fmt, int A, int B, int C, int D, int round) {
    size_t n = (size_t)A * B * C * D;
    float* d = malloc(n * sizeof(float));
    const float* f = (const float*)(uintptr_t)src;
    const uint16_t* h = (const uint16_t*)(uintptr_t)src;
    size_t i = 0;
    for (int a = 0; a < A; a++)
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                for (int e = 0; e < D; e++, i++) {
                    size_t j = at(fmt, b, c, e, B, C, D, a);
                    float v = dtype == CUDNN_DATA_BFLOAT16 ? bf16_to_float(h[j]) : f[j];
                    d[i] = round ? tf32(v) : v;
                }
    return d;
}

// store_out writes out = alpha acc + beta out for the NCHW-ordered acc into
// the (A, B, C, D) array at dst of dtype and fmt (bf16 rounded to nearest
// even; beta == 0 reads nothing, as cuDNN documents).
static void store_out(u64 dst, int dtype, int fmt, int A, int B, int C, int D, const float* acc, float al, float be) {
    float* f = (float*)(uintptr_t)dst;
    uint16_t* h = (uint16_t*)(uintptr_t)dst;
    size_t i = 0;
    for (int a = 0; a < A; a++)
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                for (int e = 0; e < D; e++, i++) {
                    size_t j = at(fmt, b, c, e, B, C, D, a);
                    if (dtype == CUDNN_DATA_BFLOAT16) {
                        float v = be == 0 ? al * acc[i] : al * acc[i] + be * bf16_to_float(h[j]);
                        h[j] = float_to_bf16(v);
                    } else {
                        f[j] = be == 0 ? al * acc[i] : al * acc[i] + be * f[j];
                    }
                }
}

// wat is the filter element applied at (r, s): convolution mode flips it.
#define WIDX(p, k, c, r, s)                                                                                                              \
    ((((size_t)(k) * (p)->C + (c)) * (p)->R + ((p)->cv->mode == CUDNN_CONVOLUTION ? (p)->R - 1 - (r) : (r))) * (p)->S +                   \
     ((p)->cv->mode == CUDNN_CONVOLUTION ? (p)->S - 1 - (s) : (s)))

// span gives the output columns [*lo, *hi) whose input column o*stride +
// off lies in [0, size).
static void span(int off, int stride, int size, int out, int* lo, int* hi) {
    *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
    *hi = size - 1 - off < 0 ? 0 : (size - 1 - off) / stride + 1;
    if (*hi > out) *hi = out;
    if (*hi < *lo) *hi = *lo;
}

// par_for runs fn(ctx, lo, hi) over [0, n) split in contiguous parts, one
// per worker (SIMCLR_CUDA_EMU_WORKERS, default 2). Every output element is
// computed by one part in a fixed order, so results do not depend on the
// split.
typedef void (*part_fn)(void* ctx, int lo, int hi);
typedef struct part {
    part_fn fn;
    void* ctx;
    int lo, hi;
} part;
static void* part_main(void* arg) {
    part* p = arg;
    p->fn(p->ctx, p->lo, p->hi);
    return NULL;
}
static void par_for(int n, part_fn fn, void* ctx) {
    const char* v = getenv("SIMCLR_CUDA_EMU_WORKERS");
    int w = v && *v ? atoi(v) : 2;
    if (w < 1) w = 1;
    if (w > 64) w = 64;
    if (w > n) w = n > 0 ? n : 1;
    part parts[64];
    pthread_t th[64];
    for (int i = 0; i < w; i++) parts[i] = (part){fn, ctx, (int)((long long)n * i / w), (int)((long long)n * (i + 1) / w)};
    for (int i = 1; i < w; i++)
        if (pthread_create(&th[i], NULL, part_main, &parts[i]) != 0) {
            part_main(&parts[i]);
            th[i] = 0;
        }
    part_main(&parts[0]);
    for (int i = 1; i < w; i++)
        if (th[i]) pthread_join(th[i], NULL);
}

typedef struct loop {
    const problem* p;
    const float *a, *b;
    float* out;
} loop;

// out[n,k,oh,ow] = sum_{c,r,s} x[n,c,oh*u - pad_h + r*dil_h, ow*v - pad_w + s*dil_w] w[k,c,r,s],
// one (n, k) plane per index.
static void forward_part(void* ctx, int lo, int hi) {
    const loop* L = ctx;
    const problem* p = L->p;
    const conv* cv = p->cv;
    size_t plane = (size_t)p->OH * p->OW;
    for (int q = lo; q < hi; q++) {
        int n = q / p->K, k = q % p->K;
        float* acc = L->out + ((size_t)n * p->K + k) * plane;
        for (size_t i = 0; i < plane; i++) acc[i] = 0;
        for (int c = 0; c < p->C; c++) {
            const float* xp = L->a + ((size_t)n * p->C + c) * p->H * p->W;
            for (int r = 0; r < p->R; r++) {
                int oh_lo, oh_hi;
                span(r * cv->dil_h - cv->pad_h, cv->u, p->H, p->OH, &oh_lo, &oh_hi);
                for (int s = 0; s < p->S; s++) {
                    float wv = L->b[WIDX(p, k, c, r, s)];
                    int off = s * cv->dil_w - cv->pad_w, ow_lo, ow_hi;
                    span(off, cv->v, p->W, p->OW, &ow_lo, &ow_hi);
                    for (int oh = oh_lo; oh < oh_hi; oh++) {
                        const float* row = xp + (size_t)(oh * cv->u - cv->pad_h + r * cv->dil_h) * p->W + off;
                        float* arow = acc + (size_t)oh * p->OW;
                        if (cv->v == 1)
                            for (int ow = ow_lo; ow < ow_hi; ow++) arow[ow] += row[ow] * wv;
                        else
                            for (int ow = ow_lo; ow < ow_hi; ow++) arow[ow] += row[ow * cv->v] * wv;
                    }
                }
            }
        }
    }
}

// dx[n,c,ih,iw] = sum over (k, r, s, oh, ow) with ih = oh*u - pad_h + r*dil_h
// (and alike for iw) of dy[n,k,oh,ow] w[k,c,r,s], one (n, c) plane per index.
static void backward_data_part(void* ctx, int lo, int hi) {
    const loop* L = ctx;
    const problem* p = L->p;
    const conv* cv = p->cv;
    size_t plane = (size_t)p->H * p->W;
    for (int q = lo; q < hi; q++) {
        int n = q / p->C, c = q % p->C;
        float* acc = L->out + ((size_t)n * p->C + c) * plane;
        for (size_t i = 0; i < plane; i++) acc[i] = 0;
        for (int k = 0; k < p->K; k++) {
            const float* g = L->b + ((size_t)n * p->K + k) * p->OH * p->OW;
            for (int r = 0; r < p->R; r++) {
                int oh_lo, oh_hi;
                span(r * cv->dil_h - cv->pad_h, cv->u, p->H, p->OH, &oh_lo, &oh_hi);
                for (int s = 0; s < p->S; s++) {
                    float wv = L->a[WIDX(p, k, c, r, s)];
                    int off = s * cv->dil_w - cv->pad_w, ow_lo, ow_hi;
                    span(off, cv->v, p->W, p->OW, &ow_lo, &ow_hi);
                    for (int oh = oh_lo; oh < oh_hi; oh++) {
                        float* row = acc + (size_t)(oh * cv->u - cv->pad_h + r * cv->dil_h) * p->W + off;
                        const float* grow = g + (size_t)oh * p->OW;
                        if (cv->v == 1)
                            for (int ow = ow_lo; ow < ow_hi; ow++) row[ow] += grow[ow] * wv;
                        else
                            for (int ow = ow_lo; ow < ow_hi; ow++) row[ow * cv->v] += grow[ow] * wv;
                    }
                }
            }
        }
    }
}

// dw[k,c,r,s] = sum_{n,oh,ow} dy[n,k,oh,ow] x[n,c,oh*u - pad_h + r*dil_h, ow*v - pad_w + s*dil_w]
// (at the flipped (r, s) in convolution mode), one (k, c) pair per index;
// the sum runs in one lane per output column, then over the lanes.
static void backward_filter_part(void* ctx, int lo, int hi) {
    const loop* L = ctx;
    const problem* p = L->p;
    const conv* cv = p->cv;
    float* lanes = malloc(sizeof(float) * (size_t)p->OW);
    for (int q = lo; q < hi; q++) {
        int k = q / p->C, c = q % p->C;
        for (int r = 0; r < p->R; r++) {
            int oh_lo, oh_hi;
            span(r * cv->dil_h - cv->pad_h, cv->u, p->H, p->OH, &oh_lo, &oh_hi);
            for (int s = 0; s < p->S; s++) {
                int off = s * cv->dil_w - cv->pad_w, ow_lo, ow_hi;
                span(off, cv->v, p->W, p->OW, &ow_lo, &ow_hi);
                for (int ow = 0; ow < p->OW; ow++) lanes[ow] = 0;
                for (int n = 0; n < p->N; n++) {
                    const float* xp = L->a + ((size_t)n * p->C + c) * p->H * p->W;
                    const float* g = L->b + ((size_t)n * p->K + k) * p->OH * p->OW;
                    for (int oh = oh_lo; oh < oh_hi; oh++) {
                        const float* row = xp + (size_t)(oh * cv->u - cv->pad_h + r * cv->dil_h) * p->W + off;
                        const float* grow = g + (size_t)oh * p->OW;
                        if (cv->v == 1)
                            for (int ow = ow_lo; ow < ow_hi; ow++) lanes[ow] += grow[ow] * row[ow];
                        else
                            for (int ow = ow_lo; ow < ow_hi; ow++) lanes[ow] += grow[ow] * row[ow * cv->v];
                    }
                }
                float sum = 0;
                for (int ow = 0; ow < p->OW; ow++) sum += lanes[ow];
                L->out[WIDX(p, k, c, r, s)] = sum;
            }
        }
    }
    free(lanes);
}

static cudnnStatus_t compute(int dir, const handle* h, const problem* p, int round, float alpha, float beta, u64 in1, u64 in2, u64 out,
                             u64 ws, size_t need);

// run_job is one checked execution.
typedef struct run_job {
    int dir;
    problem p;
    conv cv;
    size_t need;
    u64 ws;
    float alpha, beta;
    u64 in1, in2, out;
    int round;
} run_job;
static int run_exec(void* arg);

// run checks one execution and computes out = alpha op + beta out (on a
// capturing stream: records it).
static cudnnStatus_t run(int dir, const handle* h, const problem* p, int algo, u64 ws, size_t ws_size, const float* alpha, const float* beta,
                         u64 in1, u64 in2, u64 out) {
    const char* what = dir_name[dir];
    if (h->sticky && h->sticky()) {
        logf_("%s: the context holds the earlier fault %d", what, h->sticky());
        return CUDNN_STATUS_EXECUTION_FAILED;
    }
    size_t need;
    cudnnStatus_t st = algo_info(dir, algo, p, p->cv->math, &need);
    if (st != CUDNN_STATUS_SUCCESS) {
        logf_("%s: algorithm %d does not support this convolution", what, algo);
        return st;
    }
    if (ws_size < need || (need > 0 && (ws == 0 || !h->device_range(ws, ws_size)))) {
        logf_("%s: algorithm %d (math type %d) needs a %zu-byte workspace, got %zu bytes at %#llx", what, algo, p->cv->math, need, ws_size, ws);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    return compute(dir, h, p, tensor_core(dir, algo, p->cv->math), *alpha, *beta, in1, in2, out, ws, need);
}

// compute checks the three buffers of one convolution and computes out =
// alpha op + beta out, rounding the inputs to TF32 when round is set, and
// leaves the need bytes of workspace at ws holding nothing (on a
// capturing stream: records it).
static cudnnStatus_t compute(int dir, const handle* h, const problem* p, int round, float alpha, float beta, u64 in1, u64 in2, u64 out,
                             u64 ws, size_t need) {
    const char* what = dir_name[dir];
    cudnnStatus_t st;
    size_t nx = (size_t)p->N * p->C * p->H * p->W, nw = (size_t)p->K * p->C * p->R * p->S, ny = (size_t)p->N * p->K * p->OH * p->OW;
    size_t n1 = dir == FWD ? nx : dir == BWD_DATA ? nw : nx;
    size_t n2 = dir == FWD ? nw : ny;
    size_t no = dir == FWD ? ny : dir == BWD_DATA ? nx : nw;
    size_t unit = elem_size(p->dtype);
    if ((st = check_buffer(h, what, "the first input", in1, n1, unit)) || (st = check_buffer(h, what, "the second input", in2, n2, unit)) ||
        (st = check_buffer(h, what, "the output", out, no, unit)))
        return st;
    run_job j = {dir, *p, *p->cv, need, ws, alpha, beta, in1, in2, out, round};
    int rec = h->enqueue ? h->enqueue(h->stream, run_exec, &j, sizeof j) : 0;
    if (rec) return rec > 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    return run_exec(&j) ? CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED : CUDNN_STATUS_SUCCESS;
}

// run_exec computes one checked convolution; nonzero when out of host memory.
static int run_exec(void* arg) {
    run_job* J = arg;
    J->p.cv = &J->cv; // the copy's own descriptor, wherever the job was copied to
    const problem* p = &J->p;
    int dir = J->dir, round = J->round;
    size_t need = J->need, no = dir == FWD ? (size_t)p->N * p->K * p->OH * p->OW : dir == BWD_DATA ? (size_t)p->N * p->C * p->H * p->W : (size_t)p->K * p->C * p->R * p->S;
    u64 in1 = J->in1, in2 = J->in2, out = J->out, ws = J->ws;
    // The arrays as (A, B, C, D): x (N, C, H, W), w (K, C, R, S), y (N, K, OH, OW).
    int xd[4] = {p->N, p->C, p->H, p->W}, wd[4] = {p->K, p->C, p->R, p->S}, yd[4] = {p->N, p->K, p->OH, p->OW};
    const int* d1 = dir == FWD ? xd : dir == BWD_DATA ? wd : xd;
    const int* d2 = dir == FWD ? wd : yd;
    const int* dO = dir == FWD ? yd : dir == BWD_DATA ? xd : wd;
    int f1 = dir == BWD_DATA ? p->wfmt : p->xfmt, f2 = dir == FWD ? p->wfmt : p->yfmt;
    int fO = dir == FWD ? p->yfmt : dir == BWD_DATA ? p->xfmt : p->wfmt;
    float* a = copy_in(in1, p->dtype, f1, d1[0], d1[1], d1[2], d1[3], round);
    float* b = copy_in(in2, p->dtype, f2, d2[0], d2[1], d2[2], d2[3], round);
    float* acc = malloc(no * sizeof(float));
    if (!a || !b || !acc) {
        free(a);
        free(b);
        free(acc);
        return 1;
    }
    loop L = {p, a, b, acc};
    if (dir == FWD) par_for(p->N * p->K, forward_part, &L);
    else if (dir == BWD_DATA) par_for(p->N * p->C, backward_data_part, &L);
    else par_for(p->K * p->C, backward_filter_part, &L);
    if (need > 0) poison(ws, need); // the workspace holds nothing afterwards
    store_out(out, p->dtype, fO, dO[0], dO[1], dO[2], dO[3], acc, J->alpha, J->beta);
    free(a);
    free(b);
    free(acc);
    return 0;
}

// ---- find, get, workspace sizes, the three runs ----

static cudnnStatus_t find_or_get(int dir, const void* h, const problem* p, int want, int* got, algo_perf* perf) {
    (void)h;
    if (!got || !perf) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (want <= 0) {
        logf_("%s: requestedAlgoCount %d", dir_name[dir], want);
        return CUDNN_STATUS_BAD_PARAM;
    }
    *got = perf_list(dir, p, want, perf);
    return CUDNN_STATUS_SUCCESS;
}

// find: the real one runs each algorithm on the buffers given, so the
// output buffer holds garbage afterwards, and so does the workspace.
static cudnnStatus_t find_ex(int dir, const handle* h, const problem* p, u64 out, size_t nout, u64 ws, size_t ws_size, int want, int* got,
                             algo_perf* perf) {
    if (h->unsupported && h->unsupported(h->stream, "cudnnFindConvolution*AlgorithmEx")) return CUDNN_STATUS_NOT_SUPPORTED;
    cudnnStatus_t st = check_buffer(h, dir_name[dir], "the output", out, nout, elem_size(p->dtype));
    if (st) return st;
    if (ws_size > 0 && (ws == 0 || !h->device_range(ws, ws_size))) {
        logf_("%s find: workspace of %zu bytes at %#llx is not device memory", dir_name[dir], ws_size, ws);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if ((st = find_or_get(dir, h, p, want, got, perf))) return st;
    // Records whose algorithm needs more workspace than given could not run.
    for (int i = 0; i < *got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory > ws_size) {
            perf[i].status = CUDNN_STATUS_NOT_SUPPORTED;
            perf[i].time = -1;
        }
    size_t used = 0;
    for (int i = 0; i < *got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory > used) used = perf[i].memory;
    poison(out, nout * elem_size(p->dtype));
    if (used > 0) poison(ws, used);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(void* h, void* xd, u64 x, void* wd, u64 w, void* cd, void* yd, u64 y, int want,
                                                     int* got, algo_perf* perf, u64 ws, size_t ws_size) {
    problem p;
    cudnnStatus_t st = describe(FWD, h, xd, wd, cd, yd, &p);
    if (st) return st;
    if ((st = check_buffer(h, "forward find", "x", x, (size_t)p.N * p.C * p.H * p.W, elem_size(p.dtype))) ||
        (st = check_buffer(h, "forward find", "w", w, (size_t)p.K * p.C * p.R * p.S, elem_size(p.dtype))))
        return st;
    return find_ex(FWD, h, &p, y, (size_t)p.N * p.K * p.OH * p.OW, ws, ws_size, want, got, perf);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(void* h, void* wd, u64 w, void* dyd, u64 dy, void* cd, void* dxd, u64 dx, int want,
                                                          int* got, algo_perf* perf, u64 ws, size_t ws_size) {
    problem p;
    cudnnStatus_t st = describe(BWD_DATA, h, dxd, wd, cd, dyd, &p);
    if (st) return st;
    if ((st = check_buffer(h, "backward data find", "w", w, (size_t)p.K * p.C * p.R * p.S, elem_size(p.dtype))) ||
        (st = check_buffer(h, "backward data find", "dy", dy, (size_t)p.N * p.K * p.OH * p.OW, elem_size(p.dtype))))
        return st;
    return find_ex(BWD_DATA, h, &p, dx, (size_t)p.N * p.C * p.H * p.W, ws, ws_size, want, got, perf);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(void* h, void* xd, u64 x, void* dyd, u64 dy, void* cd, void* dwd, u64 dw, int want,
                                                            int* got, algo_perf* perf, u64 ws, size_t ws_size) {
    problem p;
    cudnnStatus_t st = describe(BWD_FILTER, h, xd, dwd, cd, dyd, &p);
    if (st) return st;
    if ((st = check_buffer(h, "backward filter find", "x", x, (size_t)p.N * p.C * p.H * p.W, elem_size(p.dtype))) ||
        (st = check_buffer(h, "backward filter find", "dy", dy, (size_t)p.N * p.K * p.OH * p.OW, elem_size(p.dtype))))
        return st;
    return find_ex(BWD_FILTER, h, &p, dw, (size_t)p.K * p.C * p.R * p.S, ws, ws_size, want, got, perf);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(void* h, void* xd, void* wd, void* cd, void* yd, int want, int* got, algo_perf* perf) {
    problem p;
    cudnnStatus_t st = describe(FWD, h, xd, wd, cd, yd, &p);
    return st ? st : find_or_get(FWD, h, &p, want, got, perf);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(void* h, void* wd, void* dyd, void* cd, void* dxd, int want, int* got,
                                                         algo_perf* perf) {
    problem p;
    cudnnStatus_t st = describe(BWD_DATA, h, dxd, wd, cd, dyd, &p);
    return st ? st : find_or_get(BWD_DATA, h, &p, want, got, perf);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(void* h, void* xd, void* dyd, void* cd, void* dwd, int want, int* got,
                                                           algo_perf* perf) {
    problem p;
    cudnnStatus_t st = describe(BWD_FILTER, h, xd, dwd, cd, dyd, &p);
    return st ? st : find_or_get(BWD_FILTER, h, &p, want, got, perf);
}

static cudnnStatus_t ws_size(int dir, const problem* p, int algo, size_t* size) {
    if (!size) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    // Quietly, as cuDNN does: the backend asks every algorithm's size to
    // size the benchmark's workspace, and most do not apply.
    return algo_info(dir, algo, p, p->cv->math, size);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(void* h, void* xd, void* wd, void* cd, void* yd, int algo, size_t* size) {
    problem p;
    cudnnStatus_t st = describe(FWD, h, xd, wd, cd, yd, &p);
    return st ? st : ws_size(FWD, &p, algo, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(void* h, void* wd, void* dyd, void* cd, void* dxd, int algo, size_t* size) {
    problem p;
    cudnnStatus_t st = describe(BWD_DATA, h, dxd, wd, cd, dyd, &p);
    return st ? st : ws_size(BWD_DATA, &p, algo, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(void* h, void* xd, void* dyd, void* cd, void* dwd, int algo, size_t* size) {
    problem p;
    cudnnStatus_t st = describe(BWD_FILTER, h, xd, dwd, cd, dyd, &p);
    return st ? st : ws_size(BWD_FILTER, &p, algo, size);
}

cudnnStatus_t cudnnConvolutionForward(void* h, const float* alpha, void* xd, u64 x, void* wd, u64 w, void* cd, int algo, u64 ws, size_t wsb,
                                      const float* beta, void* yd, u64 y) {
    problem p;
    cudnnStatus_t st = describe(FWD, h, xd, wd, cd, yd, &p);
    return st ? st : run(FWD, h, &p, algo, ws, wsb, alpha, beta, x, w, y);
}

cudnnStatus_t cudnnConvolutionBackwardData(void* h, const float* alpha, void* wd, u64 w, void* dyd, u64 dy, void* cd, int algo, u64 ws,
                                           size_t wsb, const float* beta, void* dxd, u64 dx) {
    problem p;
    cudnnStatus_t st = describe(BWD_DATA, h, dxd, wd, cd, dyd, &p);
    return st ? st : run(BWD_DATA, h, &p, algo, ws, wsb, alpha, beta, w, dy, dx);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(void* h, const float* alpha, void* xd, u64 x, void* dyd, u64 dy, void* cd, int algo, u64 ws,
                                             size_t wsb, const float* beta, void* dwd, u64 dw) {
    problem p;
    cudnnStatus_t st = describe(BWD_FILTER, h, xd, dwd, cd, dyd, &p);
    return st ? st : run(BWD_FILTER, h, &p, algo, ws, wsb, alpha, beta, x, dy, dw);
}

// ---- the backend (graph) API: one convolution per operation graph ----
//
// Descriptors are objects of a type with attributes, set one at a time
// and checked at finalize, as cuDNN's are. What is emulated: tensors
// (4-d, float or bfloat16, packed NCHW or NHWC strides; filters are
// tensors of dimensions K, C, R, S), 2-d convolution descriptors, the
// three convolution operations, operation graphs of one operation,
// engine heuristics (modes INSTANT, A, B and FALLBACK), engine configs,
// engines (their global index and numerical notes), execution plans with
// their workspace, variant packs and cudnnBackendExecute. Two fake engines
// serve each operation:
//
//   engine 0, "tensor cores": numerical note TENSOR_CORE; needs C and K
//     multiples of 8 (its plan does not finalize otherwise, as a real
//     engine's may not); float data is rounded to TF32; a workspace.
//   engine 1, "fallback": no notes, no workspace, any shape.
//
// Mode A, B and INSTANT list engine 0 then 1, FALLBACK only engine 1.
// SIMCLR_CUDA_EMU_CUDNN_GRAPH_MAX_C=N makes every engine refuse (plan
// finalize CUDNN_STATUS_NOT_SUPPORTED_SHAPE) a convolution of more than N
// input channels: a shape no engine runs. SIMCLR_CUDA_EMU_CUDNN_NO_GRAPH=1
// makes operation graphs fail to finalize, as a cuDNN whose backend API
// lacks an operation would.

enum {
    CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED = 2004,
    CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE = 2010,
    CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN = 3001,
    CUDNN_STATUS_NOT_SUPPORTED_SHAPE = 3002,
    CUDNN_STATUS_NOT_SUPPORTED_LAYOUT = 3004,
};
// cudnnBackendDescriptorType_t
enum {
    BK_CONVOLUTION = 1,
    BK_ENGINE = 2,
    BK_ENGINECFG = 3,
    BK_ENGINEHEUR = 4,
    BK_EXECUTION_PLAN = 5,
    BK_OP_CONV_FWD = 10,
    BK_OP_CONV_BWD_FILTER = 11,
    BK_OP_CONV_BWD_DATA = 12,
    BK_OPERATIONGRAPH = 15,
    BK_VARIANT_PACK = 16,
    BK_TENSOR = 17,
};
// cudnnBackendAttributeType_t
enum {
    T_HANDLE = 0,
    T_DATA_TYPE = 1,
    T_INT64 = 3,
    T_FLOAT = 4,
    T_DOUBLE = 5,
    T_VOID_PTR = 6,
    T_CONVOLUTION_MODE = 7,
    T_HEUR_MODE = 8,
    T_NUMERICAL_NOTE = 11,
    T_BACKEND_DESCRIPTOR = 15,
};
// cudnnBackendAttributeName_t
enum {
    A_CONV_COMP_TYPE = 100,
    A_CONV_MODE = 101,
    A_CONV_DILATIONS = 102,
    A_CONV_STRIDES = 103,
    A_CONV_POST_PAD = 104,
    A_CONV_PRE_PAD = 105,
    A_CONV_SPATIAL_DIMS = 106,
    A_HEUR_MODE = 200,
    A_HEUR_GRAPH = 201,
    A_HEUR_RESULTS = 202,
    A_CFG_ENGINE = 300,
    A_CFG_WORKSPACE = 303,
    A_PLAN_HANDLE = 400,
    A_PLAN_CFG = 401,
    A_PLAN_WORKSPACE = 402,
    A_OP_FIRST = 700, // 700..705 forward, 706..711 backward data, 712..717 backward filter
    A_OP_LAST = 717,
    A_GRAPH_HANDLE = 800,
    A_GRAPH_OPS = 801,
    A_GRAPH_ENGINE_COUNT = 802,
    A_TENSOR_ALIGNMENT = 900,
    A_TENSOR_DATA_TYPE = 901,
    A_TENSOR_DIMS = 902,
    A_TENSOR_STRIDES = 903,
    A_TENSOR_UID = 906,
    A_TENSOR_VIRTUAL = 907,
    A_PACK_UIDS = 1000,
    A_PACK_POINTERS = 1001,
    A_PACK_WORKSPACE = 1003,
    A_ENGINE_GRAPH = 1300,
    A_ENGINE_INDEX = 1301,
    A_ENGINE_NOTES = 1303,
};
enum { HEUR_INSTANT = 0, HEUR_B = 1, HEUR_FALLBACK = 2, HEUR_A = 3 };
enum { NOTE_TENSOR_CORE = 0 };
enum { K_BACKEND = 0x6d0010, GRAPH_ENGINES = 2, PACK_MAX = 8 };

typedef struct bdesc bdesc;
struct bdesc {
    int kind, type, finalized;
    // tensor
    int dtype, ndims, is_virtual;
    long long dims[4], strides[4], uid, alignment;
    int has_dtype, has_uid, has_alignment;
    // convolution
    int comp_type, mode, spatial, has_comp, has_mode;
    long long pre[2], post[2], dil[2], stride[2];
    int has_pre, has_post, has_dil, has_stride;
    // operation: the three tensors (x, w, y as the forward names them), the convolution
    bdesc *x, *w, *y, *conv;
    float alpha, beta;
    int has_alpha, has_beta;
    // operation graph, heuristics, engine, engine config, plan
    handle* h;
    bdesc* op;    // graph: its one operation
    bdesc* graph; // heuristics, engine, engine config, plan: the graph
    int heur_mode, has_heur_mode;
    int engine; // engine, engine config, plan: the engine's global index
    bdesc* cfg; // plan: its engine config
    size_t ws;  // plan: its workspace
    // variant pack
    long long uids[PACK_MAX];
    u64 ptrs[PACK_MAX];
    int nuids, nptrs;
    u64 workspace;
    int has_workspace;
};

static const char* btype_name(int t) {
    switch (t) {
    case BK_CONVOLUTION: return "CONVOLUTION";
    case BK_ENGINE: return "ENGINE";
    case BK_ENGINECFG: return "ENGINECFG";
    case BK_ENGINEHEUR: return "ENGINEHEUR";
    case BK_EXECUTION_PLAN: return "EXECUTION_PLAN";
    case BK_OP_CONV_FWD: return "OPERATION_CONVOLUTION_FORWARD";
    case BK_OP_CONV_BWD_FILTER: return "OPERATION_CONVOLUTION_BACKWARD_FILTER";
    case BK_OP_CONV_BWD_DATA: return "OPERATION_CONVOLUTION_BACKWARD_DATA";
    case BK_OPERATIONGRAPH: return "OPERATIONGRAPH";
    case BK_VARIANT_PACK: return "VARIANT_PACK";
    case BK_TENSOR: return "TENSOR";
    }
    return "?";
}

#define IS_B(d) ((d) != NULL && ((const bdesc*)(d))->kind == K_BACKEND)

cudnnStatus_t cudnnBackendCreateDescriptor(int type, void** out) {
    if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    switch (type) {
    case BK_CONVOLUTION: case BK_ENGINE: case BK_ENGINECFG: case BK_ENGINEHEUR: case BK_EXECUTION_PLAN: case BK_OP_CONV_FWD:
    case BK_OP_CONV_BWD_FILTER: case BK_OP_CONV_BWD_DATA: case BK_OPERATIONGRAPH: case BK_VARIANT_PACK: case BK_TENSOR:
        break;
    default:
        logf_("cudnnBackendCreateDescriptor: descriptor type %d is not emulated", type);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    bdesc* d = calloc(1, sizeof *d);
    d->kind = K_BACKEND;
    d->type = type;
    *out = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(void* d) {
    if (d == NULL) return CUDNN_STATUS_SUCCESS;
    if (!IS_B(d)) return CUDNN_STATUS_BAD_PARAM;
    ((bdesc*)d)->kind = 0;
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

// want checks an attribute's type and element count (exactly n, or at
// most n when upto is set), logging what was wrong.
static cudnnStatus_t want(const bdesc* d, int attr, int type, int got_type, long long n, long long got_n, int upto) {
    if (got_type != type) {
        logf_("cudnnBackendSetAttribute(%s, attribute %d): type %d, want %d", btype_name(d->type), attr, got_type, type);
        return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
    }
    if (upto ? (got_n < 1 || got_n > n) : got_n != n) {
        logf_("cudnnBackendSetAttribute(%s, attribute %d): %lld elements, want %s%lld", btype_name(d->type), attr, got_n, upto ? "1 to " : "", n);
        return CUDNN_STATUS_BAD_PARAM;
    }
    return CUDNN_STATUS_SUCCESS;
}

static bdesc* desc_of(const void* arr, int type, const char* what) {
    bdesc* d = *(bdesc* const*)arr;
    if (!IS_B(d) || d->type != type) {
        logf_("%s: not a %s descriptor", what, btype_name(type));
        return NULL;
    }
    if (!d->finalized) {
        logf_("%s: the %s descriptor is not finalized", what, btype_name(type));
        return NULL;
    }
    return d;
}

cudnnStatus_t cudnnBackendSetAttribute(void* dp, int attr, int type, long long n, const void* arr) {
    if (!IS_B(dp)) return CUDNN_STATUS_BAD_PARAM;
    if (!arr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    bdesc* d = dp;
    if (d->finalized) {
        logf_("cudnnBackendSetAttribute(%s, attribute %d): the descriptor is finalized", btype_name(d->type), attr);
        return CUDNN_STATUS_BAD_PARAM;
    }
    cudnnStatus_t st;
    const long long* i64 = arr;
#define WANT(T, N, UPTO)                                                                                                                 \
    if ((st = want(d, attr, T, type, N, n, UPTO))) return st
    switch (d->type) {
    case BK_TENSOR:
        switch (attr) {
        case A_TENSOR_DATA_TYPE:
            WANT(T_DATA_TYPE, 1, 0);
            d->dtype = *(const int*)arr, d->has_dtype = 1;
            return CUDNN_STATUS_SUCCESS;
        case A_TENSOR_DIMS:
            WANT(T_INT64, 4, 1);
            d->ndims = (int)n;
            memcpy(d->dims, arr, sizeof(long long) * n);
            return CUDNN_STATUS_SUCCESS;
        case A_TENSOR_STRIDES:
            WANT(T_INT64, 4, 1);
            if (d->ndims && n != d->ndims) {
                logf_("cudnnBackendSetAttribute(TENSOR, strides): %lld strides for %d dimensions", n, d->ndims);
                return CUDNN_STATUS_BAD_PARAM;
            }
            memcpy(d->strides, arr, sizeof(long long) * n);
            return CUDNN_STATUS_SUCCESS;
        case A_TENSOR_UID:
            WANT(T_INT64, 1, 0);
            d->uid = *i64, d->has_uid = 1;
            return CUDNN_STATUS_SUCCESS;
        case A_TENSOR_ALIGNMENT:
            WANT(T_INT64, 1, 0);
            d->alignment = *i64, d->has_alignment = 1;
            return CUDNN_STATUS_SUCCESS;
        case A_TENSOR_VIRTUAL:
            WANT(2 /* CUDNN_TYPE_BOOLEAN */, 1, 0);
            d->is_virtual = *(const _Bool*)arr;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_CONVOLUTION:
        switch (attr) {
        case A_CONV_COMP_TYPE:
            WANT(T_DATA_TYPE, 1, 0);
            d->comp_type = *(const int*)arr, d->has_comp = 1;
            return CUDNN_STATUS_SUCCESS;
        case A_CONV_MODE:
            WANT(T_CONVOLUTION_MODE, 1, 0);
            d->mode = *(const int*)arr, d->has_mode = 1;
            return CUDNN_STATUS_SUCCESS;
        case A_CONV_SPATIAL_DIMS:
            WANT(T_INT64, 1, 0);
            d->spatial = (int)*i64;
            return CUDNN_STATUS_SUCCESS;
        case A_CONV_PRE_PAD: case A_CONV_POST_PAD: case A_CONV_DILATIONS: case A_CONV_STRIDES: {
            WANT(T_INT64, 2, 0);
            long long* dst = attr == A_CONV_PRE_PAD ? d->pre : attr == A_CONV_POST_PAD ? d->post : attr == A_CONV_DILATIONS ? d->dil : d->stride;
            int* has = attr == A_CONV_PRE_PAD ? &d->has_pre : attr == A_CONV_POST_PAD ? &d->has_post : attr == A_CONV_DILATIONS ? &d->has_dil : &d->has_stride;
            dst[0] = i64[0], dst[1] = i64[1], *has = 1;
            return CUDNN_STATUS_SUCCESS;
        }
        }
        break;
    case BK_OP_CONV_FWD: case BK_OP_CONV_BWD_DATA: case BK_OP_CONV_BWD_FILTER: {
        // Attributes 700+6k..705+6k of operation k: alpha, beta, conv, then
        // the three tensors in the header's order.
        int base = d->type == BK_OP_CONV_FWD ? 700 : d->type == BK_OP_CONV_BWD_DATA ? 706 : 712;
        int slot = attr - base;
        if (attr < A_OP_FIRST || attr > A_OP_LAST || slot < 0 || slot > 5) break;
        if (slot <= 1) {
            if (type != T_FLOAT && type != T_DOUBLE) WANT(T_FLOAT, 1, 0);
            WANT(type, 1, 0);
            float v = type == T_FLOAT ? *(const float*)arr : (float)*(const double*)arr;
            if (slot == 0) d->alpha = v, d->has_alpha = 1;
            else d->beta = v, d->has_beta = 1;
            return CUDNN_STATUS_SUCCESS;
        }
        WANT(T_BACKEND_DESCRIPTOR, 1, 0);
        if (slot == 2) {
            if (!(d->conv = desc_of(arr, BK_CONVOLUTION, "convolution operation"))) return CUDNN_STATUS_BAD_PARAM;
            return CUDNN_STATUS_SUCCESS;
        }
        bdesc* t = desc_of(arr, BK_TENSOR, "convolution operation");
        if (!t) return CUDNN_STATUS_BAD_PARAM;
        // forward W, X, Y; backward data W, DX, DY; backward filter DW, X, DY.
        if (slot == 3) d->w = t;
        else if (slot == 4) d->x = t;
        else d->y = t;
        return CUDNN_STATUS_SUCCESS;
    }
    case BK_OPERATIONGRAPH:
        if (attr == A_GRAPH_HANDLE) {
            WANT(T_HANDLE, 1, 0);
            handle* h = *(handle* const*)arr;
            if (!CHECK_KIND(h, K_HANDLE)) return CUDNN_STATUS_BAD_PARAM;
            d->h = h;
            return CUDNN_STATUS_SUCCESS;
        }
        if (attr == A_GRAPH_OPS) {
            WANT(T_BACKEND_DESCRIPTOR, 1, 1);
            bdesc* op = *(bdesc* const*)arr;
            if (!IS_B(op) || (op->type != BK_OP_CONV_FWD && op->type != BK_OP_CONV_BWD_DATA && op->type != BK_OP_CONV_BWD_FILTER) || !op->finalized) {
                logf_("operation graph: the operation is not a finalized convolution operation (only those are emulated)");
                return CUDNN_STATUS_NOT_SUPPORTED;
            }
            d->op = op;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_ENGINEHEUR:
        if (attr == A_HEUR_GRAPH) {
            WANT(T_BACKEND_DESCRIPTOR, 1, 0);
            if (!(d->graph = desc_of(arr, BK_OPERATIONGRAPH, "engine heuristics"))) return CUDNN_STATUS_BAD_PARAM;
            return CUDNN_STATUS_SUCCESS;
        }
        if (attr == A_HEUR_MODE) {
            WANT(T_HEUR_MODE, 1, 0);
            int m = *(const int*)arr;
            if (m < HEUR_INSTANT || m > HEUR_A) {
                logf_("engine heuristics: mode %d", m);
                return CUDNN_STATUS_BAD_PARAM;
            }
            d->heur_mode = m, d->has_heur_mode = 1;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_EXECUTION_PLAN:
        if (attr == A_PLAN_HANDLE) {
            WANT(T_HANDLE, 1, 0);
            handle* h = *(handle* const*)arr;
            if (!CHECK_KIND(h, K_HANDLE)) return CUDNN_STATUS_BAD_PARAM;
            d->h = h;
            return CUDNN_STATUS_SUCCESS;
        }
        if (attr == A_PLAN_CFG) {
            WANT(T_BACKEND_DESCRIPTOR, 1, 0);
            if (!(d->cfg = desc_of(arr, BK_ENGINECFG, "execution plan"))) return CUDNN_STATUS_BAD_PARAM;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_VARIANT_PACK:
        if (attr == A_PACK_UIDS) {
            WANT(T_INT64, PACK_MAX, 1);
            memcpy(d->uids, arr, sizeof(long long) * n);
            d->nuids = (int)n;
            return CUDNN_STATUS_SUCCESS;
        }
        if (attr == A_PACK_POINTERS) {
            WANT(T_VOID_PTR, PACK_MAX, 1);
            memcpy(d->ptrs, arr, sizeof(u64) * n);
            d->nptrs = (int)n;
            return CUDNN_STATUS_SUCCESS;
        }
        if (attr == A_PACK_WORKSPACE) {
            WANT(T_VOID_PTR, 1, 0);
            d->workspace = *(const u64*)arr, d->has_workspace = 1;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    }
#undef WANT
    logf_("cudnnBackendSetAttribute(%s): attribute %d (type %d, %lld elements) does not belong to this descriptor", btype_name(d->type), attr,
          type, n);
    return CUDNN_STATUS_BAD_PARAM;
}

// tensor_format gives a finalized 4-d tensor's format from its strides:
// packed NCHW or packed NHWC (with C == 1 or H == W == 1 both read as
// NCHW when the strides fit it), else -1.
static int tensor_format(const bdesc* t) {
    const long long *d = t->dims, *s = t->strides;
    if (s[3] == 1 && s[2] == d[3] && s[1] == d[2] * d[3] && s[0] == d[1] * d[2] * d[3]) return CUDNN_TENSOR_NCHW;
    if (s[1] == 1 && s[3] == d[1] && s[2] == d[1] * d[3] && s[0] == d[1] * d[2] * d[3]) return CUDNN_TENSOR_NHWC;
    return -1;
}

// graph_problem fills pr (and cv, which pr points at) from a finalized
// convolution operation.
static cudnnStatus_t graph_problem(const bdesc* op, problem* pr, conv* cv) {
    const bdesc *x = op->x, *w = op->w, *y = op->y, *c = op->conv;
    int fx = tensor_format(x), fw = tensor_format(w), fy = tensor_format(y);
    if (fx < 0 || fw < 0 || fy < 0) {
        logf_("%s: tensor strides are not packed NCHW or NHWC", btype_name(op->type));
        return CUDNN_STATUS_NOT_SUPPORTED_LAYOUT;
    }
    if (x->dtype != w->dtype || x->dtype != y->dtype || (x->dtype != CUDNN_DATA_FLOAT && x->dtype != CUDNN_DATA_BFLOAT16) ||
        c->comp_type != CUDNN_DATA_FLOAT) {
        logf_("%s: data types x %d, w %d, y %d, compute %d: only all float or all bfloat16, with a float compute type, is emulated",
              btype_name(op->type), x->dtype, w->dtype, y->dtype, c->comp_type);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (c->pre[0] != c->post[0] || c->pre[1] != c->post[1]) {
        logf_("%s: asymmetric padding is not emulated", btype_name(op->type));
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    *cv = (conv){K_CONV, 1, (int)c->pre[0], (int)c->pre[1], (int)c->stride[0], (int)c->stride[1], (int)c->dil[0], (int)c->dil[1], c->mode,
                 CUDNN_TENSOR_OP_MATH};
    int N = (int)x->dims[0], C = (int)x->dims[1], H = (int)x->dims[2], W = (int)x->dims[3];
    int K = (int)w->dims[0], R = (int)w->dims[2], S = (int)w->dims[3];
    if (w->dims[1] != C) {
        logf_("%s: x has %d channels, w %lld (group count 1)", btype_name(op->type), C, w->dims[1]);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (H + 2 * cv->pad_h < (R - 1) * cv->dil_h + 1 || W + 2 * cv->pad_w < (S - 1) * cv->dil_w + 1) {
        logf_("%s: filter larger than the padded input", btype_name(op->type));
        return CUDNN_STATUS_BAD_PARAM;
    }
    int oh = 1 + (H + 2 * cv->pad_h - ((R - 1) * cv->dil_h + 1)) / cv->u;
    int ow = 1 + (W + 2 * cv->pad_w - ((S - 1) * cv->dil_w + 1)) / cv->v;
    if (y->dims[0] != N || y->dims[1] != K || y->dims[2] != oh || y->dims[3] != ow) {
        logf_("%s: y (%lld,%lld,%lld,%lld), the convolution gives (%d,%d,%d,%d)", btype_name(op->type), y->dims[0], y->dims[1], y->dims[2],
              y->dims[3], N, K, oh, ow);
        return CUDNN_STATUS_BAD_PARAM;
    }
    *pr = (problem){N, C, H, W, K, R, S, oh, ow, cv, x->dtype, fx, fw, fy};
    return CUDNN_STATUS_SUCCESS;
}

static int op_dir(const bdesc* op) { return op->type == BK_OP_CONV_FWD ? FWD : op->type == BK_OP_CONV_BWD_DATA ? BWD_DATA : BWD_FILTER; }

// engine_ws is engine e's workspace for the problem.
static size_t engine_ws(int e, const problem* p) { return e == 0 ? sizeof(float) * (size_t)p->K * p->C * p->R * p->S + 4096 : 0; }

// engine_supports says whether engine e runs the problem, logging why not.
static cudnnStatus_t engine_supports(int e, const problem* p) {
    const char* v = getenv("SIMCLR_CUDA_EMU_CUDNN_GRAPH_MAX_C");
    if (v && *v && p->C > atoi(v)) {
        logf_("engine %d: %d input channels, more than SIMCLR_CUDA_EMU_CUDNN_GRAPH_MAX_C=%s", e, p->C, v);
        return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
    }
    if (e == 0 && (p->C % 8 != 0 || p->K % 8 != 0)) {
        logf_("engine 0: needs channel counts that are multiples of 8, got C=%d K=%d", p->C, p->K);
        return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
    }
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t missing(const bdesc* d, const char* what) {
    logf_("cudnnBackendFinalize(%s): %s not set", btype_name(d->type), what);
    return CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t cudnnBackendFinalize(void* dp) {
    if (!IS_B(dp)) return CUDNN_STATUS_BAD_PARAM;
    bdesc* d = dp;
    if (d->finalized) return CUDNN_STATUS_BAD_PARAM;
    switch (d->type) {
    case BK_TENSOR:
        if (!d->has_dtype) return missing(d, "the data type");
        if (!d->ndims) return missing(d, "the dimensions");
        if (!d->strides[0]) return missing(d, "the strides");
        if (!d->has_uid) return missing(d, "the unique id");
        if (!d->has_alignment) return missing(d, "the byte alignment");
        if (d->ndims != 4) {
            logf_("cudnnBackendFinalize(TENSOR): %d dimensions: only 4 are emulated", d->ndims);
            return CUDNN_STATUS_NOT_SUPPORTED;
        }
        for (int i = 0; i < 4; i++)
            if (d->dims[i] <= 0 || d->strides[i] <= 0) {
                logf_("cudnnBackendFinalize(TENSOR): dimension %d is %lld with stride %lld", i, d->dims[i], d->strides[i]);
                return CUDNN_STATUS_BAD_PARAM;
            }
        if (layout_ok("cudnnBackendFinalize(TENSOR)", CUDNN_TENSOR_NCHW, d->dtype)) return CUDNN_STATUS_NOT_SUPPORTED;
        if (d->is_virtual) {
            logf_("cudnnBackendFinalize(TENSOR): virtual tensors are not emulated");
            return CUDNN_STATUS_NOT_SUPPORTED;
        }
        break;
    case BK_CONVOLUTION:
        if (!d->has_comp) return missing(d, "the compute type");
        if (!d->has_mode) return missing(d, "the mode");
        if (d->spatial != 2) {
            logf_("cudnnBackendFinalize(CONVOLUTION): %d spatial dimensions: only 2 are emulated", d->spatial);
            return d->spatial ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_BAD_PARAM;
        }
        if (!d->has_pre || !d->has_post || !d->has_dil || !d->has_stride) return missing(d, "a padding, dilation or stride");
        for (int i = 0; i < 2; i++)
            if (d->pre[i] < 0 || d->post[i] < 0 || d->dil[i] <= 0 || d->stride[i] <= 0) {
                logf_("cudnnBackendFinalize(CONVOLUTION): padding %lld/%lld, dilation %lld, stride %lld", d->pre[i], d->post[i], d->dil[i],
                      d->stride[i]);
                return CUDNN_STATUS_BAD_PARAM;
            }
        if (d->mode != CUDNN_CONVOLUTION && d->mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
        break;
    case BK_OP_CONV_FWD: case BK_OP_CONV_BWD_DATA: case BK_OP_CONV_BWD_FILTER: {
        if (!d->x || !d->w || !d->y || !d->conv) return missing(d, "a tensor or the convolution");
        if (!d->has_alpha) d->alpha = 1;
        if (!d->has_beta) d->beta = 0;
        if (d->x->uid == d->w->uid || d->x->uid == d->y->uid || d->w->uid == d->y->uid) {
            logf_("cudnnBackendFinalize(%s): two tensors share a unique id", btype_name(d->type));
            return CUDNN_STATUS_BAD_PARAM;
        }
        problem p;
        conv cv;
        cudnnStatus_t st = graph_problem(d, &p, &cv);
        if (st) return st;
        break;
    }
    case BK_OPERATIONGRAPH: {
        if (!d->h) return missing(d, "the handle");
        if (!d->op) return missing(d, "the operations");
        const char* no = getenv("SIMCLR_CUDA_EMU_CUDNN_NO_GRAPH");
        if (no && strcmp(no, "1") == 0) {
            logf_("cudnnBackendFinalize(OPERATIONGRAPH): the backend API is off (SIMCLR_CUDA_EMU_CUDNN_NO_GRAPH=1)");
            return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
        }
        break;
    }
    case BK_ENGINEHEUR:
        if (!d->graph) return missing(d, "the operation graph");
        if (!d->has_heur_mode) return missing(d, "the mode");
        break;
    case BK_ENGINECFG:
    case BK_ENGINE:
        // Made by the heuristics' results (and ENGINECFG_ENGINE), which
        // finalize them; one set by hand is not emulated.
        logf_("cudnnBackendFinalize(%s): only the ones heuristics return are emulated", btype_name(d->type));
        return CUDNN_STATUS_NOT_SUPPORTED;
    case BK_EXECUTION_PLAN: {
        if (!d->h) return missing(d, "the handle");
        if (!d->cfg) return missing(d, "the engine config");
        problem p;
        conv cv;
        cudnnStatus_t st = graph_problem(d->cfg->graph->op, &p, &cv);
        if (st) return st;
        if ((st = engine_supports(d->cfg->engine, &p))) return st;
        d->graph = d->cfg->graph;
        d->engine = d->cfg->engine;
        d->ws = engine_ws(d->engine, &p);
        break;
    }
    case BK_VARIANT_PACK:
        if (!d->nuids || d->nuids != d->nptrs) {
            logf_("cudnnBackendFinalize(VARIANT_PACK): %d unique ids, %d pointers", d->nuids, d->nptrs);
            return CUDNN_STATUS_BAD_PARAM;
        }
        break;
    }
    d->finalized = 1;
    return CUDNN_STATUS_SUCCESS;
}

// heur_engines lists the engines mode offers, best first.
static int heur_engines(int mode, int* out) {
    if (mode == HEUR_FALLBACK) {
        out[0] = 1;
        return 1;
    }
    out[0] = 0, out[1] = 1;
    return 2;
}

cudnnStatus_t cudnnBackendGetAttribute(void* dp, int attr, int type, long long want_n, long long* got_n, void* arr) {
    if (!IS_B(dp)) return CUDNN_STATUS_BAD_PARAM;
    bdesc* d = dp;
    if (!d->finalized) {
        logf_("cudnnBackendGetAttribute(%s, attribute %d): the descriptor is not finalized", btype_name(d->type), attr);
        return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    }
    if (want_n < 0 || (want_n > 0 && !arr)) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
#define GOT(T)                                                                                                                           \
    if (type != (T)) {                                                                                                                   \
        logf_("cudnnBackendGetAttribute(%s, attribute %d): type %d, want %d", btype_name(d->type), attr, type, (T));                      \
        return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;                                                                                     \
    }
    switch (d->type) {
    case BK_ENGINEHEUR:
        if (attr == A_HEUR_RESULTS) {
            GOT(T_BACKEND_DESCRIPTOR);
            int engines[GRAPH_ENGINES];
            int n = heur_engines(d->heur_mode, engines);
            long long k = 0;
            for (; k < n && k < want_n; k++) {
                bdesc* c = ((bdesc**)arr)[k];
                if (!IS_B(c) || c->type != BK_ENGINECFG || c->finalized) {
                    logf_("engine heuristics results: element %lld is not a new ENGINECFG descriptor", k);
                    return CUDNN_STATUS_BAD_PARAM;
                }
                c->graph = d->graph, c->engine = engines[k], c->finalized = 1;
            }
            if (got_n) *got_n = want_n == 0 ? n : k;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_ENGINECFG:
        if (attr == A_CFG_ENGINE) {
            GOT(T_BACKEND_DESCRIPTOR);
            if (got_n) *got_n = 1;
            if (want_n < 1) return CUDNN_STATUS_SUCCESS;
            bdesc* e = *(bdesc**)arr;
            if (!IS_B(e) || e->type != BK_ENGINE || e->finalized) {
                logf_("engine config: the element is not a new ENGINE descriptor");
                return CUDNN_STATUS_BAD_PARAM;
            }
            e->graph = d->graph, e->engine = d->engine, e->finalized = 1;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_ENGINE:
        if (attr == A_ENGINE_INDEX) {
            GOT(T_INT64);
            if (got_n) *got_n = 1;
            if (want_n >= 1) *(long long*)arr = d->engine;
            return CUDNN_STATUS_SUCCESS;
        }
        if (attr == A_ENGINE_NOTES) {
            GOT(T_NUMERICAL_NOTE);
            int n = d->engine == 0 ? 1 : 0;
            if (got_n) *got_n = n;
            if (n && want_n >= 1) *(int*)arr = NOTE_TENSOR_CORE;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_EXECUTION_PLAN:
        if (attr == A_PLAN_WORKSPACE) {
            GOT(T_INT64);
            if (got_n) *got_n = 1;
            if (want_n >= 1) *(long long*)arr = (long long)d->ws;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    case BK_OPERATIONGRAPH:
        if (attr == A_GRAPH_ENGINE_COUNT) {
            GOT(T_INT64);
            if (got_n) *got_n = 1;
            if (want_n >= 1) *(long long*)arr = GRAPH_ENGINES;
            return CUDNN_STATUS_SUCCESS;
        }
        break;
    }
#undef GOT
    logf_("cudnnBackendGetAttribute(%s): attribute %d is not emulated", btype_name(d->type), attr);
    return CUDNN_STATUS_BAD_PARAM;
}

// pack_ptr finds uid's pointer in the variant pack, 0 when absent.
static u64 pack_ptr(const bdesc* pack, long long uid) {
    for (int i = 0; i < pack->nuids; i++)
        if (pack->uids[i] == uid) return pack->ptrs[i];
    return 0;
}

cudnnStatus_t cudnnBackendExecute(void* hp, void* planp, void* packp) {
    if (!CHECK_KIND(hp, K_HANDLE) || !IS_B(planp) || !IS_B(packp)) return CUDNN_STATUS_BAD_PARAM;
    handle* h = hp;
    bdesc *plan = planp, *pack = packp;
    if (plan->type != BK_EXECUTION_PLAN || pack->type != BK_VARIANT_PACK || !plan->finalized || !pack->finalized) {
        logf_("cudnnBackendExecute: want a finalized execution plan and variant pack");
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (h != plan->h) {
        logf_("cudnnBackendExecute: the handle is not the plan's");
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (h->sticky && h->sticky()) {
        logf_("cudnnBackendExecute: the context holds the earlier fault %d", h->sticky());
        return CUDNN_STATUS_EXECUTION_FAILED;
    }
    const bdesc* op = plan->graph->op;
    problem p;
    conv cv;
    cudnnStatus_t st = graph_problem(op, &p, &cv);
    if (st) return st;
    u64 x = pack_ptr(pack, op->x->uid), w = pack_ptr(pack, op->w->uid), y = pack_ptr(pack, op->y->uid);
    if (!x || !w || !y) {
        logf_("cudnnBackendExecute: the variant pack lacks the pointer of tensor %lld", !x ? op->x->uid : !w ? op->w->uid : op->y->uid);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (plan->ws > 0 && (!pack->has_workspace || pack->workspace == 0 || !h->device_range(pack->workspace, plan->ws))) {
        logf_("cudnnBackendExecute: the plan needs a %zu-byte workspace, got %#llx", plan->ws, pack->has_workspace ? pack->workspace : 0);
        return CUDNN_STATUS_BAD_PARAM;
    }
    int dir = op_dir(op);
    int round = plan->engine == 0 && p.dtype == CUDNN_DATA_FLOAT;
    u64 in1 = dir == FWD ? x : dir == BWD_DATA ? w : x;
    u64 in2 = dir == FWD ? w : y;
    u64 out = dir == FWD ? y : dir == BWD_DATA ? x : w;
    return compute(dir, h, &p, round, op->alpha, op->beta, in1, in2, out, plan->ws > 0 ? pack->workspace : 0, plan->ws);
}
