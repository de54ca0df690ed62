// Prepended by the emulated NVRTC (nvrtc.c) to the CUDA C it compiles with
// the host C++ compiler: the CUDA built-ins the project's kernels use, in
// host C++. Each thread of a block is a fiber of the emulated driver
// (driver.c), which sets threadIdx before resuming it; __syncthreads gives
// control back to the driver until every thread of the block has arrived;
// __shared__ variables are static (one copy of the object is loaded per
// worker thread, and a worker runs one block at a time) in a section the
// driver fills with NaN bytes before each block.
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <type_traits>
#include <utility>

#include "emu_abi.h"

#define EMU_EXPORT __attribute__((visibility("default")))

extern "C" EMU_EXPORT emu_state emu_state_v1;

typedef emu_uint3 uint3;
#define threadIdx (emu_state_v1.threadIdx)
#define blockIdx (emu_state_v1.blockIdx)
#define blockDim (emu_state_v1.blockDim)
#define gridDim (emu_state_v1.gridDim)
#define __syncthreads() emu_state_v1.sync(emu_state_v1.sched)

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static __attribute__((section("emu_shared")))

static inline unsigned int __float_as_uint(float x) {
    unsigned int u;
    memcpy(&u, &x, 4);
    return u;
}
static inline float __uint_as_float(unsigned int u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static inline int __float_as_int(float x) {
    int u;
    memcpy(&u, &x, 4);
    return u;
}
static inline float __int_as_float(int u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

// Atomics are atomic: blocks run on several worker threads at once.
static inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <typename T>
static inline T emu_atomic_add_fp(T* p, T v) {
    T old, want;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    do {
        want = old + v;
    } while (!__atomic_compare_exchange(p, &old, &want, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
static inline float atomicAdd(float* p, float v) { return emu_atomic_add_fp(p, v); }
static inline double atomicAdd(double* p, double v) { return emu_atomic_add_fp(p, v); }
static inline int atomicMax(int* p, int v) {
    int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline int atomicMin(int* p, int v) {
    int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old > v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline int atomicCAS(int* p, int cmp, int v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}

// CUDA's min and max for the arithmetic types.
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

// ---- launch wrappers (used by the registry the emulated NVRTC appends) ----

template <typename... A, size_t... I>
static void emu_invoke(void (*f)(A...), void** p, std::index_sequence<I...>) {
    f(*static_cast<typename std::remove_reference<A>::type*>(p[I])...);
}
template <typename... A>
static void emu_call(void (*f)(A...), void** p) {
    emu_invoke(f, p, std::index_sequence_for<A...>{});
}
template <typename T>
constexpr char emu_kind() {
    return std::is_pointer<T>::value ? 'p'
           : std::is_same<T, float>::value ? 'f'
           : std::is_same<T, double>::value ? 'd'
           : (std::is_integral<T>::value && sizeof(T) == 4) ? 'i'
           : '?';
}
template <typename... A>
static const char* emu_kinds(void (*)(A...)) {
    static const char k[] = {emu_kind<A>()..., 0};
    return k;
}
#define EMU_KERNEL(name) {#name, [](void** p) { emu_call(&name, p); }, emu_kinds(&name)}

extern "C" {
extern char __start_emu_shared[] __attribute__((weak, visibility("hidden")));
extern char __stop_emu_shared[] __attribute__((weak, visibility("hidden")));
EMU_EXPORT emu_state emu_state_v1;
EMU_EXPORT void emu_shared_range_v1(char** lo, char** hi) {
    *lo = __start_emu_shared;
    *hi = __stop_emu_shared;
}
}
