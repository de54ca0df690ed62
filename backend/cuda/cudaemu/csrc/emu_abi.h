// The interface between the emulated driver (driver.c) and the kernels the
// emulated NVRTC (nvrtc.c) builds into a host shared object. The kernel
// object is C++ (kernel_shim.h is prepended to the project's .cu source);
// this header is valid C and C++.
#ifndef SIMCLR_EMU_ABI_H
#define SIMCLR_EMU_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emu_uint3 {
    unsigned int x, y, z;
} emu_uint3;

// emu_state is the one global of a kernel object that the scheduler writes:
// the running thread's indices, the launch geometry, and the barrier. The
// driver loads one copy of the object per worker thread, so each worker has
// its own emu_state and its own __shared__ variables.
typedef struct emu_state {
    emu_uint3 threadIdx, blockIdx, blockDim, gridDim;
    void (*sync)(void* sched);
    void* sched;
} emu_state;

// emu_kernel is one __global__ function: launch unpacks cuLaunchKernel's
// array of parameter pointers by the function's own C++ parameter types;
// kinds has one letter per parameter (p pointer, i 32-bit integer, f float,
// d double, ? anything else).
typedef struct emu_kernel {
    const char* name;
    void (*launch)(void** params);
    const char* kinds;
} emu_kernel;

// Symbols a kernel object exports (the version suffix changes with this
// interface): emu_state_v1 (an emu_state), emu_kernels_v1 (returns the
// kernels, ended by an entry with a null name) and emu_shared_range_v1
// (the bounds of its __shared__ variables, which the scheduler fills with
// NaN bytes before each block: shared memory starts undefined on a GPU).
#define EMU_STATE_SYMBOL "emu_state_v1"
#define EMU_KERNELS_SYMBOL "emu_kernels_v1"
#define EMU_SHARED_SYMBOL "emu_shared_range_v1"

// The image nvrtcGetCUBIN returns and cuModuleLoadData takes: this magic,
// the length of the shared object as 8 little-endian bytes, then its bytes.
#define EMU_IMAGE_MAGIC "SIMCLR-CUDA-EMULATOR-KERNELS-1\n"
#define EMU_IMAGE_MAGIC_LEN 31

#ifdef __cplusplus
}
#endif

#endif
