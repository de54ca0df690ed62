// An emulated libcuda.so.1 for tests: the part of the CUDA driver API that
// backend/cuda calls, on the host. Device memory is host memory (mmap'd,
// with a guard page after each allocation); streams are synchronous; a
// module is a host shared object built by the emulated NVRTC (nvrtc.c), and
// cuLaunchKernel runs its grid block by block on a few worker threads, each
// block's threads as fibers on one worker with a real barrier for
// __syncthreads (a thread that reaches it waits until every thread of the
// block has), so the kernels run as written, shared memory and all.
//
// Every call checks what the real driver checks and that this emulator can
// check more strictly: cuInit first, a current context on the calling
// thread, stream handles, that copy ranges and kernel pointer arguments lie
// in device allocations, launch geometry limits. A failure returns the
// CUresult the real driver would and says why on stderr.
//
// Settings (environment): SIMCLR_CUDA_EMU_WORKERS (threads running blocks,
// default 2), SIMCLR_CUDA_EMU_SMS (the multiprocessor count reported,
// default 132, an H100 SXM), SIMCLR_CUDA_EMU_MEMORY_MB (the device memory, default 8192),
// SIMCLR_CUDA_EMU_ORDER (ascending: run a block's threads in index order
// between barriers instead of a fixed pseudo-random order),
// SIMCLR_CUDA_EMU_DRIVER_VERSION (what cuDriverGetVersion reports, default
// 12080: CUDA 12.8).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_abi.h"

typedef unsigned long long u64;
typedef int CUresult;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903,
    CUDA_ERROR_CAPTURED_EVENT = 907,
    CUDA_ERROR_UNKNOWN = 999,
};

static void emu_log(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("cuda emulator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int env_int(const char* name, int def, int lo, int hi) {
    const char* v = getenv(name);
    if (!v || !*v) return def;
    long x = strtol(v, NULL, 10);
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return (int)x;
}

// ---- global state ----

#define DEVICE_HANDLE 0
#define MAX_ALLOCS 4096
#define MAX_STREAMS 256

typedef struct alloc_rec {
    u64 base, size; // the usable bytes
    void* map;      // the mapping (with its guard page)
    size_t map_size;
} alloc_rec;

typedef struct module module;
typedef struct function {
    module* mod;
    int index;
} function;

struct module {
    int live;
    int nworkers;
    void* dl[64];
    emu_state* state[64];
    const emu_kernel* kernels[64];
    char* shared_lo[64];
    char* shared_hi[64];
    int nkernels;
    function* fns;
    module* next;
};

typedef struct context {
    int refs;        // primary context retain count; 0 = inactive
    CUresult sticky; // a launch failure poisons the context, as on a GPU
} context;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static context primary;
static __thread context* current;
static alloc_rec allocs[MAX_ALLOCS];
static int nallocs;
static u64 allocated;
static void* streams[MAX_STREAMS];
static module* modules;

static u64 total_memory(void) { return (u64)env_int("SIMCLR_CUDA_EMU_MEMORY_MB", 8192, 64, 1 << 20) << 20; }

// need_ctx is the check at the top of every call that works in a context.
static CUresult need_ctx(const char* call) {
    if (!initialized) {
        emu_log("%s before cuInit", call);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (current == NULL || current->refs == 0) {
        emu_log("%s: no current context on this thread (cuCtxSetCurrent on the calling OS thread first)", call);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return current->sticky;
}

static CUresult need_init(const char* call) {
    if (!initialized) {
        emu_log("%s before cuInit", call);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return CUDA_SUCCESS;
}

// find_alloc returns the allocation holding [p, p+bytes), or NULL. Called
// with mu held.
static alloc_rec* find_alloc(u64 p, u64 bytes) {
    for (int i = 0; i < nallocs; i++) {
        alloc_rec* a = &allocs[i];
        if (p >= a->base && p - a->base <= a->size && bytes <= a->size - (p - a->base)) return a;
    }
    return NULL;
}

static int device_range(u64 p, u64 bytes) {
    pthread_mutex_lock(&mu);
    int ok = find_alloc(p, bytes) != NULL;
    pthread_mutex_unlock(&mu);
    return ok;
}

// For the emulated cuBLAS and cuDNN (looked up with dlsym): whether
// [p, p+bytes) is device memory, and whether the calling thread has a
// current context.
__attribute__((visibility("default"))) int simclr_cuda_emu_device_range(u64 p, u64 bytes) { return device_range(p, bytes); }
__attribute__((visibility("default"))) int simclr_cuda_emu_has_context(void) {
    return initialized && current != NULL && current->refs > 0;
}
// The sticky error of the calling thread's context (0: none): the
// emulated cuBLAS and cuDNN fail their work after a fault, as the real
// ones do.
__attribute__((visibility("default"))) int simclr_cuda_emu_sticky(void) {
    return initialized && current != NULL && current->refs > 0 ? current->sticky : 0;
}

// For tests: the next launch that succeeds leaves a fault of code behind,
// as a kernel that faults on a GPU does: the launch itself returns
// success (the kernel runs after it returns), and the context is poisoned
// for every later call, which then returns code (a "sticky" error).
static CUresult fault_after_launch;
__attribute__((visibility("default"))) void simclr_cuda_emu_fault_after_next_launch(int code) {
    pthread_mutex_lock(&mu);
    fault_after_launch = code;
    pthread_mutex_unlock(&mu);
}

static int valid_stream(u64 s) {
    if (s == 0 || s == 1 || s == 2) return 1; // the NULL stream, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
    pthread_mutex_lock(&mu);
    int ok = 0;
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i] && (u64)(uintptr_t)streams[i] == s) ok = 1;
    pthread_mutex_unlock(&mu);
    return ok;
}

// ---- stream capture: the state a capturing stream records into ----
//
// cuStreamBeginCapture_v2 puts a stream in capture mode: work queued on it
// from then on is recorded as nodes of a graph instead of running, as on a
// GPU. The nodes are kernel launches (the arguments copied by value, as
// the driver copies them), device-to-device copies, memsets, and the
// emulated cuBLAS's and cuDNN's calls (host functions with their arguments
// copied, through simclr_cuda_emu_enqueue). cuGraphLaunch replays the
// nodes in order through the same calls, so every check of an eager call
// (device ranges, the sticky fault) applies again at each replay. What a
// GPU refuses in a capture (global mode) is refused here and invalidates
// it: synchronising the capturing stream, copies to or from host memory on
// it (all host memory here is pageable), cuMemAlloc and cuMemFree while a
// capture is under way; cuStreamEndCapture then returns
// CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph.

enum { NODE_KERNEL, NODE_COPY, NODE_SET, NODE_HOST };
#define NODE_MAX_PARAMS 32

typedef struct node {
    int kind;
    // NODE_KERNEL
    u64 fn;
    unsigned grid[3], block[3];
    int nparams;
    u64 vals[NODE_MAX_PARAMS];
    // NODE_COPY (dst, src, n bytes) and NODE_SET (dst, value, n words)
    u64 dst, src, n;
    unsigned value;
    // NODE_HOST
    int (*host)(void*);
    void* arg;
    size_t arg_size;
} node;

typedef struct graph {
    unsigned magic;
    node* nodes;
    int n, cap;
} graph;
#define GRAPH_MAGIC 0x6a7a0001u
#define EXEC_MAGIC 0x6a7a0002u

typedef struct capture {
    graph* g;
    int invalid;
} capture;

static capture* captures[MAX_STREAMS]; // by stream slot
static int ncapturing;

// stream_slot is the index of stream s in streams, or -1. Called with mu held.
static int stream_slot(u64 s) {
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i] && (u64)(uintptr_t)streams[i] == s) return i;
    return -1;
}

// capturing returns the capture of stream s, or NULL. Called with mu held.
static capture* capturing(u64 s) {
    int i = stream_slot(s);
    return i < 0 ? NULL : captures[i];
}

static void graph_free(graph* g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) free(g->nodes[i].arg);
    free(g->nodes);
    g->magic = 0;
    free(g);
}

// record appends nd to the capture of stream s; 0 when s is not
// capturing, 1 when recorded, -1 when out of memory (the capture is then
// invalid). Called with mu held.
static int record(u64 s, const node* nd) {
    capture* c = capturing(s);
    if (!c) return 0;
    if (c->invalid) return 1;
    graph* g = c->g;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        node* more = realloc(g->nodes, (size_t)cap * sizeof(node));
        if (!more) {
            c->invalid = 1;
            return -1;
        }
        g->nodes = more, g->cap = cap;
    }
    g->nodes[g->n++] = *nd;
    return 1;
}

// refuse_in_capture invalidates the capture of stream s (or, when s is 0,
// says whether any capture is under way, for the calls a global-mode
// capture forbids everywhere) and reports whether the call must fail.
static int refuse_in_capture(u64 s, const char* call) {
    pthread_mutex_lock(&mu);
    capture* c = s ? capturing(s) : NULL;
    int refuse = s ? c != NULL : ncapturing > 0;
    if (c) c->invalid = 1;
    if (!s && refuse)
        for (int i = 0; i < MAX_STREAMS; i++)
            if (captures[i]) captures[i]->invalid = 1;
    pthread_mutex_unlock(&mu);
    if (refuse) emu_log("%s: not permitted while a stream is capturing (the capture is now invalid)", call);
    return refuse;
}

// For the emulated cuBLAS and cuDNN: when stream s is capturing, record
// fn with a copy of the size bytes at arg, to be called at each replay
// (returning 0 on success), and return 1; return 0 when s is not
// capturing (the caller runs the work now) and -1 when the record failed.
__attribute__((visibility("default"))) int simclr_cuda_emu_enqueue(u64 s, int (*fn)(void*), const void* arg, size_t size) {
    pthread_mutex_lock(&mu);
    capture* c = capturing(s);
    pthread_mutex_unlock(&mu);
    if (!c) return 0;
    node nd;
    memset(&nd, 0, sizeof nd);
    nd.kind = NODE_HOST;
    nd.host = fn;
    nd.arg = malloc(size ? size : 1);
    if (!nd.arg) return -1;
    memcpy(nd.arg, arg, size);
    nd.arg_size = size;
    pthread_mutex_lock(&mu);
    int r = record(s, &nd);
    pthread_mutex_unlock(&mu);
    if (r != 1) free(nd.arg);
    return r;
}

// For the emulated cuDNN: a call a capture cannot hold (an algorithm
// search, which runs and times work) on a capturing stream invalidates
// the capture; returns 1 when it did.
__attribute__((visibility("default"))) int simclr_cuda_emu_capture_unsupported(u64 s, const char* call) {
    return refuse_in_capture(s, call);
}

// ---- initialisation, devices, contexts ----

CUresult cuInit(unsigned int flags) {
    if (flags != 0) {
        emu_log("cuInit(%u): flags must be 0", flags);
        return CUDA_ERROR_INVALID_VALUE;
    }
    initialized = 1;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v) {
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = env_int("SIMCLR_CUDA_EMU_DRIVER_VERSION", 12080, 1000, 99990);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* n) {
    CUresult r = need_init("cuDeviceGetCount");
    if (r) return r;
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    *n = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(int* dev, int ordinal) {
    CUresult r = need_init("cuDeviceGet");
    if (r) return r;
    if (!dev) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *dev = DEVICE_HANDLE;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, int dev) {
    CUresult r = need_init("cuDeviceGetName");
    if (r) return r;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (dev != DEVICE_HANDLE) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "simclr CUDA emulator (host CPU)");
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev) {
    CUresult r = need_init("cuDeviceTotalMem");
    if (r) return r;
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (dev != DEVICE_HANDLE) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = total_memory();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
    CUresult r = need_init("cuDeviceGetAttribute");
    if (r) return r;
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    if (dev != DEVICE_HANDLE) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case 1: *v = 1024; return CUDA_SUCCESS;        // max threads per block
    case 2: case 3: *v = 1024; return CUDA_SUCCESS; // max block x, y
    case 4: *v = 64; return CUDA_SUCCESS;          // max block z
    case 5: *v = 2147483647; return CUDA_SUCCESS;  // max grid x
    case 6: case 7: *v = 65535; return CUDA_SUCCESS;
    case 8: *v = 49152; return CUDA_SUCCESS;       // shared memory per block
    case 10: *v = 32; return CUDA_SUCCESS;         // warp size
    case 16: *v = env_int("SIMCLR_CUDA_EMU_SMS", 132, 1, 1024); return CUDA_SUCCESS;
    // Compute capability 9.0 (Hopper), or SIMCLR_CUDA_EMU_CC (e.g. 75 for
    // sm_75) so that tests can present an older GPU.
    case 75: *v = env_int("SIMCLR_CUDA_EMU_CC", 90, 10, 199) / 10; return CUDA_SUCCESS;
    case 76: *v = env_int("SIMCLR_CUDA_EMU_CC", 90, 10, 199) % 10; return CUDA_SUCCESS;
    }
    emu_log("cuDeviceGetAttribute: attribute %d is not emulated", attr);
    return CUDA_ERROR_INVALID_VALUE;
}

static const struct {
    int code;
    const char *name, *desc;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
    {CUDA_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

CUresult cuGetErrorName(int code, const char** s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code) {
            *s = errors[i].name;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(int code, const char** s) {
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code) {
            *s = errors[i].desc;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDevicePrimaryCtxRetain(u64* ctx, int dev) {
    CUresult r = need_init("cuDevicePrimaryCtxRetain");
    if (r) return r;
    if (!ctx) return CUDA_ERROR_INVALID_VALUE;
    if (dev != DEVICE_HANDLE) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    if (primary.refs++ == 0) primary.sticky = CUDA_SUCCESS;
    pthread_mutex_unlock(&mu);
    *ctx = (u64)(uintptr_t)&primary;
    return CUDA_SUCCESS;
}

static void unload_module(module* m);

// Releasing the last reference destroys the context: its memory, modules
// and streams go with it.
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
    CUresult r = need_init("cuDevicePrimaryCtxRelease");
    if (r) return r;
    if (dev != DEVICE_HANDLE) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    if (primary.refs == 0) {
        pthread_mutex_unlock(&mu);
        emu_log("cuDevicePrimaryCtxRelease: the primary context is not retained");
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (--primary.refs == 0) {
        for (int i = 0; i < nallocs; i++) munmap(allocs[i].map, allocs[i].map_size);
        nallocs = 0;
        allocated = 0;
        for (int i = 0; i < MAX_STREAMS; i++) {
            free(streams[i]);
            streams[i] = NULL;
        }
        for (module* m = modules; m; m = m->next)
            if (m->live) unload_module(m);
    }
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(u64 ctx) {
    CUresult r = need_init("cuCtxSetCurrent");
    if (r) return r;
    if (ctx == 0) {
        current = NULL;
        return CUDA_SUCCESS;
    }
    if (ctx != (u64)(uintptr_t)&primary || primary.refs == 0) {
        emu_log("cuCtxSetCurrent(%#llx): not a live context", ctx);
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    current = &primary;
    return CUDA_SUCCESS;
}

// ---- streams ----

CUresult cuStreamCreate(u64* s, unsigned int flags) {
    CUresult r = need_ctx("cuStreamCreate");
    if (r) return r;
    if (!s || flags > 1) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (!streams[i]) {
            streams[i] = malloc(16);
            *s = (u64)(uintptr_t)streams[i];
            pthread_mutex_unlock(&mu);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuStreamDestroy_v2(u64 s) {
    CUresult r = need_ctx("cuStreamDestroy");
    if (r) return r;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i] && (u64)(uintptr_t)streams[i] == s) {
            if (captures[i]) {
                graph_free(captures[i]->g);
                free(captures[i]);
                captures[i] = NULL;
                ncapturing--;
            }
            free(streams[i]);
            streams[i] = NULL;
            pthread_mutex_unlock(&mu);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&mu);
    emu_log("cuStreamDestroy(%#llx): not a stream", s);
    return CUDA_ERROR_INVALID_HANDLE;
}

// Work runs when it is queued, so a stream is always idle.
CUresult cuStreamSynchronize(u64 s) {
    CUresult r = need_ctx("cuStreamSynchronize");
    if (r) return r;
    if (!valid_stream(s)) {
        emu_log("cuStreamSynchronize(%#llx): not a stream", s);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (refuse_in_capture(s, "cuStreamSynchronize")) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return CUDA_SUCCESS;
}

// ---- memory ----

// Allocations up to this size are filled with 0xFF bytes (a NaN in every
// float lane), as device memory holds whatever was there before; larger
// ones stay untouched (zero) so that the host does not commit their pages.
#define POISON_LIMIT (64ull << 20)

CUresult cuMemAlloc_v2(u64* p, size_t bytes) {
    CUresult r = need_ctx("cuMemAlloc");
    if (r) return r;
    if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    if (refuse_in_capture(0, "cuMemAlloc")) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    long page = sysconf(_SC_PAGESIZE);
    size_t usable = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
    pthread_mutex_lock(&mu);
    if (allocated + bytes > total_memory() || nallocs == MAX_ALLOCS) {
        pthread_mutex_unlock(&mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t map_size = usable + (size_t)page;
    void* m = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        pthread_mutex_unlock(&mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    // The guard page: an access past the end faults at once. The usable
    // part ends at the guard, so a kernel overrunning the last byte of the
    // allocation is caught.
    char* base = (char*)m + (usable - bytes);
    base = (char*)((uintptr_t)base & ~(uintptr_t)255); // 256-byte aligned, as cuMemAlloc's
    mprotect((char*)m + usable, (size_t)page, PROT_NONE);
    if (bytes <= POISON_LIMIT) memset(base, 0xFF, bytes);
    allocs[nallocs++] = (alloc_rec){(u64)(uintptr_t)base, bytes, m, map_size};
    allocated += bytes;
    pthread_mutex_unlock(&mu);
    *p = (u64)(uintptr_t)base;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(u64 p) {
    CUresult r = need_ctx("cuMemFree");
    if (r) return r;
    if (refuse_in_capture(0, "cuMemFree")) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nallocs; i++)
        if (allocs[i].base == p) {
            munmap(allocs[i].map, allocs[i].map_size);
            allocated -= allocs[i].size;
            allocs[i] = allocs[--nallocs];
            pthread_mutex_unlock(&mu);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&mu);
    emu_log("cuMemFree(%#llx): not the start of an allocation", p);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
    CUresult r = need_ctx("cuMemGetInfo");
    if (r) return r;
    if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    *total = total_memory();
    *free_bytes = *total - allocated;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

static CUresult check_copy(const char* call, u64 stream, u64 dev1, u64 dev2, int ndev, size_t n) {
    CUresult r = need_ctx(call);
    if (r) return r;
    if (!valid_stream(stream)) {
        emu_log("%s: stream %#llx is not a stream", call, stream);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!device_range(dev1, n) || (ndev == 2 && !device_range(dev2, n))) {
        emu_log("%s of %zu bytes: %#llx%s is not inside one device allocation", call, n, ndev == 2 && device_range(dev1, n) ? dev2 : dev1,
                ndev == 2 ? " (or its pair)" : "");
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(u64 dst, const void* src, size_t n, u64 stream) {
    CUresult r = check_copy("cuMemcpyHtoDAsync", stream, dst, 0, 1, n);
    if (r) return r;
    if (n && !src) return CUDA_ERROR_INVALID_VALUE;
    if (refuse_in_capture(stream, "cuMemcpyHtoDAsync from pageable memory")) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    memcpy((void*)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, u64 src, size_t n, u64 stream) {
    CUresult r = check_copy("cuMemcpyDtoHAsync", stream, src, 0, 1, n);
    if (r) return r;
    if (n && !dst) return CUDA_ERROR_INVALID_VALUE;
    if (refuse_in_capture(stream, "cuMemcpyDtoHAsync to pageable memory")) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    memcpy(dst, (void*)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync_v2(u64 dst, u64 src, size_t n, u64 stream) {
    CUresult r = check_copy("cuMemcpyDtoDAsync", stream, dst, src, 2, n);
    if (r) return r;
    node nd = {.kind = NODE_COPY, .dst = dst, .src = src, .n = n};
    pthread_mutex_lock(&mu);
    int rec = record(stream, &nd);
    pthread_mutex_unlock(&mu);
    if (rec) return rec > 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    memmove((void*)(uintptr_t)dst, (void*)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

// n counts 32-bit words; the address must be 4-byte aligned.
CUresult cuMemsetD32Async(u64 dst, unsigned int v, size_t n, u64 stream) {
    CUresult r = check_copy("cuMemsetD32Async", stream, dst, 0, 1, n * 4);
    if (r) return r;
    if (dst % 4) {
        emu_log("cuMemsetD32Async: %#llx is not 4-byte aligned", dst);
        return CUDA_ERROR_INVALID_VALUE;
    }
    node nd = {.kind = NODE_SET, .dst = dst, .value = v, .n = n};
    pthread_mutex_lock(&mu);
    int rec = record(stream, &nd);
    pthread_mutex_unlock(&mu);
    if (rec) return rec > 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    unsigned int* p = (unsigned int*)(uintptr_t)dst;
    for (size_t i = 0; i < n; i++) p[i] = v;
    return CUDA_SUCCESS;
}

// ---- fibers: a block's threads on one worker ----

#define FIBER_STACK (64 * 1024)
#define MAX_BLOCK_THREADS 1024

#if defined(__x86_64__)
// A fiber is its saved stack pointer. emu_switch(save, to) saves the
// callee-saved registers on the current stack, stores the stack pointer in
// *save, and resumes the fiber whose stack pointer is to. The SSE and x87
// control words are not switched: kernels never change them.
typedef void* fiber;
void emu_switch(fiber* save, fiber to);
extern char emu_fiber_entry[];
__asm__(".text\n"
        ".globl emu_switch\n.hidden emu_switch\n.type emu_switch,@function\n"
        "emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size emu_switch, .-emu_switch\n"
        ".globl emu_fiber_entry\n.hidden emu_fiber_entry\n"
        "emu_fiber_entry:\n"
        "  movq %r12, %rdi\n  callq *%r13\n  ud2\n");

// fiber_make prepares a stack so that switching to it calls fn(arg). After
// the 6 pops and the ret, rsp is top (16-byte aligned), so the call in
// emu_fiber_entry enters fn with the ABI's alignment.
static fiber fiber_make(fiber slot, char* stack_lo, size_t size, void (*fn)(void*), void* arg) {
    (void)slot;
    uintptr_t top = ((uintptr_t)(stack_lo + size) & ~(uintptr_t)15) - 64;
    u64* sp = (u64*)(top - 56);
    sp[0] = 0;                   // r15
    sp[1] = 0;                   // r14
    sp[2] = (u64)(uintptr_t)fn;  // r13
    sp[3] = (u64)(uintptr_t)arg; // r12
    sp[4] = 0;                   // rbx
    sp[5] = 0;                   // rbp
    sp[6] = (u64)(uintptr_t)emu_fiber_entry;
    return sp;
}
#define FIBER_SLOT(w, t) NULL
#define SCHED_SLOT(w) NULL
#else
// Elsewhere a fiber is a ucontext (slower: each switch is a system call).
#include <ucontext.h>
typedef ucontext_t* fiber;
static void emu_switch(fiber* save, fiber to) { swapcontext(*save, to); }
static void (*uc_fn)(void*);
static void uc_entry(unsigned hi, unsigned lo) { uc_fn((void*)(((uintptr_t)hi << 32) | lo)); }
static fiber fiber_make(fiber slot, char* stack_lo, size_t size, void (*fn)(void*), void* arg) {
    getcontext(slot);
    slot->uc_stack.ss_sp = stack_lo + 4096;
    slot->uc_stack.ss_size = size - 4096;
    slot->uc_link = NULL;
    uc_fn = fn;
    makecontext(slot, (void (*)(void))uc_entry, 2, (unsigned)((uintptr_t)arg >> 32), (unsigned)(uintptr_t)arg);
    return slot;
}
#define FIBER_SLOT(w, t) (&(w)->fiber_uc[t])
#define SCHED_SLOT(w) (&(w)->sched_uc)
#endif

typedef struct launch_job launch_job;

typedef struct worker {
    int id;
    pthread_t thread;
    char* stacks;
    launch_job* job;
    emu_state* st;
    fiber sched;
    fiber fibers[MAX_BLOCK_THREADS];
    // The running phase: threads run in the order t, t+step, t+2*step, ...
    // (mod T), so the n-th to run is (first + n*step) mod T.
    unsigned T, ran, cur, step, bx, bxy;
    unsigned waiting, done;
#if !defined(__x86_64__)
    ucontext_t sched_uc, dead_uc;
    ucontext_t fiber_uc[MAX_BLOCK_THREADS];
#endif
} worker;

struct launch_job {
    module* mod;
    int kernel;
    unsigned gx, gy, gz, bx, by, bz;
    void** params;
    u64 nblocks;
    u64 next; // atomic: the next block to run
    u64 seq;  // launch number, seeds the thread order
    int ascending;
    CUresult err;
    char msg[512];
};

static void job_fail(launch_job* j, CUresult code, const char* fmt, ...) {
    pthread_mutex_lock(&mu);
    if (j->err == CUDA_SUCCESS) {
        j->err = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(j->msg, sizeof j->msg, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&mu);
    __atomic_store_n(&j->next, j->nblocks, __ATOMIC_SEQ_CST);
}

// set_thread makes t the running thread for the kernel's threadIdx.
static inline void set_thread(worker* w, unsigned t) {
    w->cur = t;
    if (w->bx == w->T) { // a one-dimensional block: no divisions
        w->st->threadIdx.x = t;
        return;
    }
    w->st->threadIdx.x = t % w->bx;
    w->st->threadIdx.y = t / w->bx % (w->bxy / w->bx);
    w->st->threadIdx.z = t / w->bxy;
}

// next is where a thread that stops (at the barrier or at its end) hands
// control: straight to the phase's next thread, or back to the scheduler
// after the last.
static inline fiber next(worker* w) {
    if (++w->ran == w->T) return w->sched;
    unsigned t = w->cur + w->step;
    if (t >= w->T) t -= w->T;
    set_thread(w, t);
    return w->fibers[t];
}

static void barrier(void* sched) {
    worker* w = (worker*)sched;
    unsigned t = w->cur;
    w->waiting++;
    emu_switch(&w->fibers[t], next(w));
}

static void fiber_main(void* arg) {
    worker* w = (worker*)arg;
    launch_job* j = w->job;
    j->mod->kernels[w->id][j->kernel].launch(j->params);
    w->done++;
#if defined(__x86_64__)
    fiber dead;
#else
    fiber dead = &w->dead_uc;
#endif
    emu_switch(&dead, next(w));
    abort(); // never resumed
}

static u64 mix(u64 x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static unsigned gcd(unsigned a, unsigned b) {
    while (b) {
        unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// run_block runs every thread of block b to completion, phase by phase:
// in each phase every thread runs until it reaches __syncthreads or
// returns, in an order that changes from phase to phase (a pseudo-random
// start and stride), so a missing barrier shows as a read of a value not
// yet written. A phase in which some threads wait at the barrier while
// others have returned is a fault (on a GPU it hangs or corrupts),
// reported as a launch failure.
static void run_block(worker* w, launch_job* j, u64 b) {
    unsigned T = j->bx * j->by * j->bz;
    emu_state* st = j->mod->state[w->id];
    char *lo = j->mod->shared_lo[w->id], *hi = j->mod->shared_hi[w->id];
    if (lo && hi > lo) memset(lo, 0xFF, (size_t)(hi - lo));
    w->st = st;
    st->blockIdx.x = (unsigned)(b % j->gx);
    st->blockIdx.y = (unsigned)(b / j->gx % j->gy);
    st->blockIdx.z = (unsigned)(b / ((u64)j->gx * j->gy));
    st->blockDim = (emu_uint3){j->bx, j->by, j->bz};
    st->gridDim = (emu_uint3){j->gx, j->gy, j->gz};
    st->sync = barrier;
    st->sched = w;
    w->T = T, w->bx = j->bx, w->bxy = j->bx * j->by;
    st->threadIdx = (emu_uint3){0, 0, 0};
    for (unsigned t = 0; t < T; t++)
        w->fibers[t] = fiber_make(FIBER_SLOT(w, t), w->stacks + (size_t)t * FIBER_STACK, FIBER_STACK, fiber_main, w);
    for (unsigned phase = 0;; phase++) {
        unsigned first = 0, step = 1;
        if (!j->ascending && T > 1) {
            u64 s = mix(j->seq * 0x9E3779B97F4A7C15ull ^ mix(b + 1) ^ ((u64)phase << 40));
            first = (unsigned)(s % T);
            step = 1 + (unsigned)((s >> 32) % (T - 1));
            while (gcd(step, T) != 1) step = step % (T - 1) + 1;
        }
        w->step = step, w->ran = 0, w->waiting = 0, w->done = 0;
        set_thread(w, first);
#if !defined(__x86_64__)
        w->sched = SCHED_SLOT(w);
#endif
        emu_switch(&w->sched, w->fibers[first]);
        if (w->waiting == 0) return;
        if (w->done > 0) {
            job_fail(j, CUDA_ERROR_LAUNCH_FAILED,
                     "kernel %s, block (%u,%u,%u): %u threads wait at __syncthreads while %u have returned (a barrier in divergent code)",
                     j->mod->kernels[w->id][j->kernel].name, st->blockIdx.x, st->blockIdx.y, st->blockIdx.z, w->waiting, w->done);
            return;
        }
    }
}

// ---- the worker pool ----

static struct {
    pthread_mutex_t mu;
    pthread_cond_t start, finished;
    int n;
    worker* workers;
    launch_job* job;
    u64 generation;
    int busy;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, NULL, 0, 0};
static pthread_mutex_t launch_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static u64 launch_seq;

static void work(worker* w, launch_job* j) {
    w->job = j;
    for (;;) {
        u64 b = __atomic_fetch_add(&j->next, 1, __ATOMIC_SEQ_CST);
        if (b >= j->nblocks) break;
        run_block(w, j, b);
    }
}

static void* worker_loop(void* arg) {
    worker* w = (worker*)arg;
    u64 seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool.mu);
        while (pool.generation == seen) pthread_cond_wait(&pool.start, &pool.mu);
        seen = pool.generation;
        launch_job* j = pool.job;
        pthread_mutex_unlock(&pool.mu);
        work(w, j);
        pthread_mutex_lock(&pool.mu);
        if (--pool.busy == 0) pthread_cond_signal(&pool.finished);
        pthread_mutex_unlock(&pool.mu);
    }
    return NULL;
}

static int nworkers(void) { return env_int("SIMCLR_CUDA_EMU_WORKERS", 2, 1, 64); }

static void pool_start(void) {
    pool.n = nworkers();
    pool.workers = calloc((size_t)pool.n, sizeof(worker));
    for (int i = 0; i < pool.n; i++) {
        worker* w = &pool.workers[i];
        w->id = i;
        w->stacks = mmap(NULL, (size_t)MAX_BLOCK_THREADS * FIBER_STACK, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (w->stacks == MAP_FAILED) {
            emu_log("cannot map fiber stacks: %s", strerror(errno));
            abort();
        }
        // A guard page at the bottom of each stack: an overflow faults.
        for (int t = 0; t < MAX_BLOCK_THREADS; t++) mprotect(w->stacks + (size_t)t * FIBER_STACK, 4096, PROT_NONE);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1 << 20);
        pthread_create(&w->thread, &attr, worker_loop, w);
        pthread_attr_destroy(&attr);
    }
}

static CUresult run_grid(launch_job* j) {
    pthread_once(&pool_once, pool_start);
    pthread_mutex_lock(&launch_mu);
    j->seq = ++launch_seq;
    pthread_mutex_lock(&pool.mu);
    pool.job = j;
    pool.busy = pool.n;
    pool.generation++;
    pthread_cond_broadcast(&pool.start);
    while (pool.busy > 0) pthread_cond_wait(&pool.finished, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&launch_mu);
    return j->err;
}

// ---- modules ----

static void unload_module(module* m) {
    for (int w = 0; w < m->nworkers; w++)
        if (m->dl[w]) dlclose(m->dl[w]);
    free(m->fns);
    m->fns = NULL;
    m->live = 0;
}

// cuModuleLoadData takes the image nvrtcGetCUBIN gave (emu_abi.h): the
// shared object is written out once per worker and each copy loaded on its
// own, so that every worker has its own emu_state and __shared__ variables.
CUresult cuModuleLoadData(u64* out, const void* image) {
    CUresult r = need_ctx("cuModuleLoadData");
    if (r) return r;
    if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
    const unsigned char* img = image;
    if (memcmp(img, EMU_IMAGE_MAGIC, EMU_IMAGE_MAGIC_LEN) != 0) {
        emu_log("cuModuleLoadData: not an image of the emulated NVRTC (a real CUBIN or PTX cannot run here)");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    u64 len = 0;
    for (int i = 0; i < 8; i++) len |= (u64)img[EMU_IMAGE_MAGIC_LEN + i] << (8 * i);
    const unsigned char* so = img + EMU_IMAGE_MAGIC_LEN + 8;
    pthread_once(&pool_once, pool_start);
    module* m = calloc(1, sizeof *m);
    m->nworkers = pool.n;
    const char* tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/simclr-cuda-emu-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        emu_log("cuModuleLoadData: mkdtemp %s: %s", dir, strerror(errno));
        free(m);
        return CUDA_ERROR_UNKNOWN;
    }
    for (int w = 0; w < m->nworkers; w++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/kernels.%d.so", dir, w);
        FILE* f = fopen(path, "wb");
        if (!f || fwrite(so, 1, len, f) != len || fclose(f) != 0) {
            emu_log("cuModuleLoadData: write %s: %s", path, strerror(errno));
            return CUDA_ERROR_UNKNOWN;
        }
        m->dl[w] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        unlink(path);
        if (!m->dl[w]) {
            emu_log("cuModuleLoadData: %s", dlerror());
            rmdir(dir);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        m->state[w] = dlsym(m->dl[w], EMU_STATE_SYMBOL);
        const emu_kernel* (*kernels)(void) = (const emu_kernel* (*)(void))dlsym(m->dl[w], EMU_KERNELS_SYMBOL);
        void (*shared)(char**, char**) = (void (*)(char**, char**))dlsym(m->dl[w], EMU_SHARED_SYMBOL);
        if (!m->state[w] || !kernels || !shared) {
            emu_log("cuModuleLoadData: the image lacks %s, %s or %s", EMU_STATE_SYMBOL, EMU_KERNELS_SYMBOL, EMU_SHARED_SYMBOL);
            rmdir(dir);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        m->kernels[w] = kernels();
        shared(&m->shared_lo[w], &m->shared_hi[w]);
    }
    rmdir(dir);
    while (m->kernels[0][m->nkernels].name) m->nkernels++;
    m->fns = calloc((size_t)m->nkernels + 1, sizeof(function));
    for (int i = 0; i < m->nkernels; i++) m->fns[i] = (function){m, i};
    m->live = 1;
    pthread_mutex_lock(&mu);
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&mu);
    *out = (u64)(uintptr_t)m;
    return CUDA_SUCCESS;
}

static module* find_module(u64 h) {
    for (module* m = modules; m; m = m->next)
        if ((u64)(uintptr_t)m == h && m->live) return m;
    return NULL;
}

CUresult cuModuleGetFunction(u64* fn, u64 hmod, const char* name) {
    CUresult r = need_ctx("cuModuleGetFunction");
    if (r) return r;
    if (!fn || !name) return CUDA_ERROR_INVALID_VALUE;
    module* m = find_module(hmod);
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < m->nkernels; i++)
        if (strcmp(m->kernels[0][i].name, name) == 0) {
            *fn = (u64)(uintptr_t)&m->fns[i];
            return CUDA_SUCCESS;
        }
    emu_log("cuModuleGetFunction: no kernel %s in the module", name);
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleUnload(u64 hmod) {
    CUresult r = need_ctx("cuModuleUnload");
    if (r) return r;
    pthread_mutex_lock(&mu);
    module* m = find_module(hmod);
    if (m) unload_module(m);
    pthread_mutex_unlock(&mu);
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static function* find_function(u64 f) {
    for (module* m = modules; m; m = m->next)
        if (m->live && f >= (u64)(uintptr_t)m->fns && f < (u64)(uintptr_t)(m->fns + m->nkernels) &&
            (f - (u64)(uintptr_t)m->fns) % sizeof(function) == 0)
            return (function*)(uintptr_t)f;
    return NULL;
}

CUresult cuLaunchKernel(u64 f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, u64 stream, void** params, void** extra) {
    CUresult r = need_ctx("cuLaunchKernel");
    if (r) return r;
    pthread_mutex_lock(&mu);
    function* fn = find_function(f);
    pthread_mutex_unlock(&mu);
    if (!fn) {
        emu_log("cuLaunchKernel: %#llx is not a function of a loaded module", f);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    const emu_kernel* k = &fn->mod->kernels[0][fn->index];
    if (!valid_stream(stream)) {
        emu_log("cuLaunchKernel(%s): stream %#llx is not a stream", k->name, stream);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || gy > 65535 || gz > 65535 || gx > 2147483647u ||
        bx > 1024 || by > 1024 || bz > 64) {
        emu_log("cuLaunchKernel(%s): grid (%u,%u,%u), block (%u,%u,%u) out of range", k->name, gx, gy, gz, bx, by, bz);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((u64)bx * by * bz > 1024) {
        emu_log("cuLaunchKernel(%s): %llu threads per block (at most 1024)", k->name, (u64)bx * by * bz);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (shared != 0 || extra != NULL) {
        emu_log("cuLaunchKernel(%s): dynamic shared memory and the extra argument are not emulated", k->name);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    size_t nparams = strlen(k->kinds);
    if (nparams > 0 && params == NULL) {
        emu_log("cuLaunchKernel(%s): no kernel parameters for %zu", k->name, nparams);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < nparams; i++) {
        if (k->kinds[i] == '?') {
            emu_log("cuLaunchKernel(%s): parameter %zu has a type the emulator does not know", k->name, i);
            return CUDA_ERROR_NOT_SUPPORTED;
        }
        if (k->kinds[i] != 'p') continue;
        u64 p;
        memcpy(&p, params[i], 8);
        // A pointer argument is null or points into device memory (a host
        // pointer would fault on a GPU).
        if (p != 0 && !device_range(p, 0)) {
            emu_log("cuLaunchKernel(%s): pointer parameter %zu (%#llx) is not device memory", k->name, i, p);
            pthread_mutex_lock(&mu);
            current->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
            pthread_mutex_unlock(&mu);
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        }
    }
    if (nparams > NODE_MAX_PARAMS) {
        emu_log("cuLaunchKernel(%s): %zu parameters (the emulator records at most %d)", k->name, nparams, NODE_MAX_PARAMS);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    // On a capturing stream the launch is recorded with its arguments
    // copied (8 bytes each: every kind the kernels take fits).
    node nd = {.kind = NODE_KERNEL, .fn = f, .grid = {gx, gy, gz}, .block = {bx, by, bz}, .nparams = (int)nparams};
    for (size_t i = 0; i < nparams; i++) memcpy(&nd.vals[i], params[i], k->kinds[i] == 'p' || k->kinds[i] == 'd' ? 8 : 4);
    pthread_mutex_lock(&mu);
    int rec = record(stream, &nd);
    pthread_mutex_unlock(&mu);
    if (rec) return rec > 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    launch_job j;
    memset(&j, 0, sizeof j);
    j.mod = fn->mod;
    j.kernel = fn->index;
    j.gx = gx, j.gy = gy, j.gz = gz, j.bx = bx, j.by = by, j.bz = bz;
    j.params = params;
    j.nblocks = (u64)gx * gy * gz;
    const char* order = getenv("SIMCLR_CUDA_EMU_ORDER");
    j.ascending = order && strcmp(order, "ascending") == 0;
    r = run_grid(&j);
    if (r) {
        emu_log("%s", j.msg);
        pthread_mutex_lock(&mu);
        current->sticky = r;
        pthread_mutex_unlock(&mu);
        return r;
    }
    pthread_mutex_lock(&mu);
    if (fault_after_launch) {
        emu_log("cuLaunchKernel(%s): fault %d injected by the test, returned by the calls after this launch", k->name, fault_after_launch);
        current->sticky = fault_after_launch;
        fault_after_launch = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

// ---- graphs: capture, instantiate, launch ----

CUresult cuStreamBeginCapture_v2(u64 s, int mode) {
    CUresult r = need_ctx("cuStreamBeginCapture");
    if (r) return r;
    if (mode != 0) {
        emu_log("cuStreamBeginCapture: mode %d (only CU_STREAM_CAPTURE_MODE_GLOBAL is emulated)", mode);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_lock(&mu);
    int i = stream_slot(s);
    if (i < 0) {
        pthread_mutex_unlock(&mu);
        emu_log("cuStreamBeginCapture(%#llx): not a stream the emulator can capture (the NULL stream cannot be)", s);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (captures[i]) {
        pthread_mutex_unlock(&mu);
        emu_log("cuStreamBeginCapture(%#llx): the stream is already capturing", s);
        return CUDA_ERROR_INVALID_VALUE;
    }
    capture* c = calloc(1, sizeof *c);
    graph* g = calloc(1, sizeof *g);
    if (!c || !g) {
        pthread_mutex_unlock(&mu);
        free(c);
        free(g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    g->magic = GRAPH_MAGIC;
    c->g = g;
    captures[i] = c;
    ncapturing++;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(u64 s, u64* out) {
    CUresult r = need_ctx("cuStreamEndCapture");
    if (r) return r;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    *out = 0;
    pthread_mutex_lock(&mu);
    int i = stream_slot(s);
    capture* c = i < 0 ? NULL : captures[i];
    if (!c) {
        pthread_mutex_unlock(&mu);
        emu_log("cuStreamEndCapture(%#llx): the stream is not capturing", s);
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    captures[i] = NULL;
    ncapturing--;
    pthread_mutex_unlock(&mu);
    if (c->invalid) {
        graph_free(c->g);
        free(c);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *out = (u64)(uintptr_t)c->g;
    free(c);
    return CUDA_SUCCESS;
}

static graph* get_graph(u64 h, unsigned magic) {
    graph* g = (graph*)(uintptr_t)h;
    return g && g->magic == magic ? g : NULL;
}

// An executable graph is its own copy of the nodes.
CUresult cuGraphInstantiateWithFlags(u64* out, u64 hg, unsigned long long flags) {
    CUresult r = need_ctx("cuGraphInstantiateWithFlags");
    if (r) return r;
    graph* g = get_graph(hg, GRAPH_MAGIC);
    if (!out || !g || flags != 0) return g ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
    graph* e = calloc(1, sizeof *e);
    if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = EXEC_MAGIC;
    e->nodes = malloc((size_t)(g->n ? g->n : 1) * sizeof(node));
    if (!e->nodes) {
        free(e);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->n = e->cap = g->n;
    for (int i = 0; i < g->n; i++) {
        e->nodes[i] = g->nodes[i];
        if (g->nodes[i].kind == NODE_HOST) {
            e->nodes[i].arg = malloc(g->nodes[i].arg_size ? g->nodes[i].arg_size : 1);
            if (!e->nodes[i].arg) {
                e->n = i;
                graph_free(e);
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            memcpy(e->nodes[i].arg, g->nodes[i].arg, g->nodes[i].arg_size);
        }
    }
    *out = (u64)(uintptr_t)e;
    return CUDA_SUCCESS;
}

// cuGraphLaunch replays the nodes in order on s, each through the call
// that queued it, so that the checks and faults of an eager call apply.
CUresult cuGraphLaunch(u64 he, u64 s) {
    CUresult r = need_ctx("cuGraphLaunch");
    if (r) return r;
    graph* e = get_graph(he, EXEC_MAGIC);
    if (!e) {
        emu_log("cuGraphLaunch: %#llx is not an executable graph", he);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (!valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&mu);
    int cap = capturing(s) != NULL;
    CUresult sticky = current->sticky;
    pthread_mutex_unlock(&mu);
    if (cap) {
        emu_log("cuGraphLaunch: launching a graph into a capture is not emulated");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (sticky) return sticky;
    for (int i = 0; i < e->n; i++) {
        node* nd = &e->nodes[i];
        switch (nd->kind) {
        case NODE_KERNEL: {
            void* ptrs[NODE_MAX_PARAMS];
            for (int p = 0; p < nd->nparams; p++) ptrs[p] = &nd->vals[p];
            r = cuLaunchKernel(nd->fn, nd->grid[0], nd->grid[1], nd->grid[2], nd->block[0], nd->block[1], nd->block[2], 0, s, ptrs, NULL);
            break;
        }
        case NODE_COPY: r = cuMemcpyDtoDAsync_v2(nd->dst, nd->src, nd->n, s); break;
        case NODE_SET: r = cuMemsetD32Async(nd->dst, nd->value, nd->n, s); break;
        case NODE_HOST:
            if (nd->host(nd->arg) != 0) {
                emu_log("cuGraphLaunch: library node %d of %d failed", i, e->n);
                r = CUDA_ERROR_LAUNCH_FAILED;
                pthread_mutex_lock(&mu);
                current->sticky = r;
                pthread_mutex_unlock(&mu);
            }
            break;
        }
        if (r) return r;
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(u64 he) {
    graph* e = get_graph(he, EXEC_MAGIC);
    if (!e) return CUDA_ERROR_INVALID_HANDLE;
    graph_free(e);
    return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(u64 hg) {
    graph* g = get_graph(hg, GRAPH_MAGIC);
    if (!g) return CUDA_ERROR_INVALID_HANDLE;
    graph_free(g);
    return CUDA_SUCCESS;
}
