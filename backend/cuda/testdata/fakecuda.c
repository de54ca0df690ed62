// A stand-in for libcuda.so.1 used by fake_test.go: enough of the driver
// API to enumerate one device and to record what cuLaunchKernel and the
// copy functions receive, so the purego calling glue is tested on real
// dlopen'd C code without a GPU. Built by the test with the system C
// compiler.
#include <stddef.h>
#include <string.h>

typedef unsigned long long u64;

int cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
int cuDriverGetVersion(int* v) { *v = 12040; return 0; }
int cuDeviceGetCount(int* n) { *n = 1; return 0; }
int cuDeviceGet(int* dev, int ordinal) { if (ordinal != 0) return 101; *dev = 7; return 0; }
int cuDeviceGetName(char* name, int len, int dev) {
    if (dev != 7) return 101;
    strncpy(name, "Fake GPU 9000", len);
    return 0;
}
int cuDeviceTotalMem_v2(size_t* bytes, int dev) { *bytes = (size_t)8 << 30; return dev == 7 ? 0 : 101; }
int cuDeviceGetAttribute(int* v, int attr, int dev) {
    if (dev != 7) return 101;
    switch (attr) {
    case 75: *v = 8; return 0;   // compute capability major
    case 76: *v = 6; return 0;   // minor
    case 16: *v = 84; return 0;  // SMs
    }
    return 1;
}
static const char* errName = "CUDA_ERROR_INVALID_VALUE";
int cuGetErrorName(int code, const char** s) { *s = code == 1 ? errName : "CUDA_ERROR_UNKNOWN"; return 0; }
int cuGetErrorString(int code, const char** s) { *s = "invalid argument"; return 0; }

// Recorded by cuLaunchKernel: the launch geometry and the first 8 bytes
// behind each of the first nparams kernel parameters.
static u64 lastGeom[9];
static u64 lastParams[32];
static int nparams = 0;
void fake_set_nparams(int n) { nparams = n; }
void fake_last_launch(u64* geom, u64* params) {
    memcpy(geom, lastGeom, sizeof lastGeom);
    memcpy(params, lastParams, sizeof lastParams);
}
int cuLaunchKernel(u64 f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, u64 stream, void** params, void** extra) {
    lastGeom[0] = f; lastGeom[1] = gx; lastGeom[2] = gy; lastGeom[3] = gz;
    lastGeom[4] = bx; lastGeom[5] = by; lastGeom[6] = bz; lastGeom[7] = shared; lastGeom[8] = stream;
    for (int i = 0; i < nparams; i++) {
        lastParams[i] = 0;
        memcpy(&lastParams[i], params[i], 8);
    }
    return extra == NULL ? 0 : 1;
}

// Device memory is host memory here; copies are memcpy.
int cuMemcpyHtoDAsync_v2(u64 dst, const void* src, size_t n, u64 stream) { memcpy((void*)dst, src, n); return 0; }
int cuMemcpyDtoHAsync_v2(void* dst, u64 src, size_t n, u64 stream) { memcpy(dst, (void*)src, n); return 0; }
int cuMemcpyDtoDAsync_v2(u64 dst, u64 src, size_t n, u64 stream) { memmove((void*)dst, (void*)src, n); return 0; }
int cuMemsetD32Async(u64 dst, unsigned v, size_t n, u64 stream) {
    unsigned* p = (unsigned*)dst;
    for (size_t i = 0; i < n; i++) p[i] = v;
    return 0;
}
int cuStreamSynchronize(u64 stream) { return 0; }
int cuCtxSetCurrent(u64 ctx) { return 0; }

// The rest exist so that binding succeeds; they fail if called.
int cuDevicePrimaryCtxRetain() { return 1; }
int cuDevicePrimaryCtxRelease_v2() { return 1; }
int cuStreamCreate() { return 1; }
int cuStreamDestroy_v2() { return 1; }
int cuMemAlloc_v2() { return 2; }
int cuMemFree_v2() { return 1; }
int cuMemGetInfo_v2() { return 1; }
int cuModuleLoadData() { return 1; }
int cuModuleGetFunction() { return 1; }
int cuModuleUnload() { return 1; }
