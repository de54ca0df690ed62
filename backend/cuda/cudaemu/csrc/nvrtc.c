// An emulated libnvrtc for tests: nvrtcCompileProgram compiles the CUDA C
// it is given with the host C++ compiler ($CXX, else c++), after
// kernel_shim.h (found beside this library), into a shared object; the
// "CUBIN" it returns is that object behind the header of emu_abi.h, which
// the emulated driver (driver.c) loads. A registry of the program's
// extern "C" __global__ functions is appended to the source, with a launch
// wrapper for each built by the compiler from the function's own parameter
// types; kernels without extern "C" are left out, as their names would be
// mangled on a GPU too.
//
// Options accepted: --gpu-architecture=sm_XY|compute_XY (or -arch), --std=
// c++03|11|14|17|20, -default-device, -lineinfo; any other option is
// NVRTC_ERROR_INVALID_OPTION, so a flag the emulator does not model fails
// loudly. With SIMCLR_CUDA_EMU_CACHE set to a folder, compiled objects are
// kept there by a hash of everything that goes into them.
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu_abi.h"
#include "emu_version.h"

typedef int nvrtcResult;
enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
    NVRTC_ERROR_INVALID_INPUT = 3,
    NVRTC_ERROR_INVALID_PROGRAM = 4,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
    NVRTC_ERROR_INTERNAL_ERROR = 11,
};

typedef struct program {
    char* src;
    char* name;
    char* log;
    unsigned char* image; // header + shared object
    size_t image_len;
    int virtual_arch; // compiled for compute_XY: no CUBIN
} program;

nvrtcResult nvrtcVersion(int* major, int* minor) {
    if (!major || !minor) return NVRTC_ERROR_INVALID_INPUT;
    *major = emu_own_major(12);
    *minor = *major == 12 ? 8 : 0;
    return NVRTC_SUCCESS;
}

const char* nvrtcGetErrorString(nvrtcResult r) {
    switch (r) {
    case NVRTC_SUCCESS: return "NVRTC_SUCCESS";
    case NVRTC_ERROR_OUT_OF_MEMORY: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case NVRTC_ERROR_PROGRAM_CREATION_FAILURE: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case NVRTC_ERROR_INVALID_INPUT: return "NVRTC_ERROR_INVALID_INPUT";
    case NVRTC_ERROR_INVALID_PROGRAM: return "NVRTC_ERROR_INVALID_PROGRAM";
    case NVRTC_ERROR_INVALID_OPTION: return "NVRTC_ERROR_INVALID_OPTION";
    case NVRTC_ERROR_COMPILATION: return "NVRTC_ERROR_COMPILATION";
    case NVRTC_ERROR_INTERNAL_ERROR: return "NVRTC_ERROR_INTERNAL_ERROR";
    }
    return "NVRTC_ERROR unknown";
}

nvrtcResult nvrtcCreateProgram(program** out, const char* src, const char* name, int nheaders, const char* const* headers,
                               const char* const* include_names) {
    (void)headers;
    (void)include_names;
    if (!out || !src) return NVRTC_ERROR_INVALID_INPUT;
    if (nheaders != 0) {
        fprintf(stderr, "nvrtc emulator: headers passed to nvrtcCreateProgram are not emulated\n");
        return NVRTC_ERROR_INVALID_INPUT;
    }
    program* p = calloc(1, sizeof *p);
    p->src = strdup(src);
    p->name = strdup(name ? name : "default_program");
    *out = p;
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(program** pp) {
    if (!pp || !*pp) return NVRTC_ERROR_INVALID_PROGRAM;
    program* p = *pp;
    free(p->src);
    free(p->name);
    free(p->log);
    free(p->image);
    free(p);
    *pp = NULL;
    return NVRTC_SUCCESS;
}

// ---- small helpers ----

typedef struct buf {
    char* s;
    size_t n, cap;
} buf;

static void put(buf* b, const char* s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}
static void puts_(buf* b, const char* s) { put(b, s, strlen(s)); }

static char* read_file(const char* path, size_t* len) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) put(&b, chunk, n);
    fclose(f);
    if (!b.s) put(&b, "", 0);
    if (len) *len = b.n;
    return b.s;
}

static int write_file(const char* path, const void* data, size_t len) {
    FILE* f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static unsigned long long fnv(unsigned long long h, const char* s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

// The folder this library's file is in: kernel_shim.h and emu_abi.h are
// there. Found once, when the library is loaded, as the file's real path:
// a test may load it through a symbolic link in a folder of its own, and
// the loader keeps that first name for every later load of the same file,
// after the test has removed the link.
static char own_dir_path[4096];

__attribute__((constructor)) static void find_own_dir(void) {
    Dl_info info;
    if (!dladdr((void*)find_own_dir, &info) || !info.dli_fname) return;
    char* real = realpath(info.dli_fname, NULL);
    snprintf(own_dir_path, sizeof own_dir_path, "%s", real ? real : info.dli_fname);
    free(real);
    char* slash = strrchr(own_dir_path, '/');
    if (slash) *slash = 0;
    else own_dir_path[0] = 0;
}

static int own_dir(char* out, size_t size) {
    if (!own_dir_path[0]) return -1;
    snprintf(out, size, "%s", own_dir_path);
    return 0;
}

// kernel_names appends EMU_KERNEL(name), for every extern "C" __global__
// function of src, to reg; comments are skipped.
static void kernel_names(const char* src, buf* reg, int* count) {
    const char* p = src;
    const char* code_start = src; // for looking back past extern "C"
    (void)code_start;
    while (*p) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            const char* e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
            continue;
        }
        if (strncmp(p, "__global__", 10) == 0 && (p == src || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
            // extern "C" right before?
            const char* b = p;
            while (b > src && isspace((unsigned char)b[-1])) b--;
            int extern_c = b - src >= 3 && strncmp(b - 3, "\"C\"", 3) == 0;
            const char* q = p + 10;
            while (isspace((unsigned char)*q)) q++;
            if (strncmp(q, "void", 4) == 0 && isspace((unsigned char)q[4])) {
                q += 4;
                while (isspace((unsigned char)*q)) q++;
                const char* name = q;
                while (isalnum((unsigned char)*q) || *q == '_') q++;
                size_t len = (size_t)(q - name);
                while (isspace((unsigned char)*q)) q++;
                if (len > 0 && *q == '(' && extern_c) {
                    puts_(reg, "    EMU_KERNEL(");
                    put(reg, name, len);
                    puts_(reg, "),\n");
                    (*count)++;
                }
            }
            p += 10;
            continue;
        }
        p++;
    }
}

static nvrtcResult fail(program* p, nvrtcResult r, const char* fmt, const char* arg) {
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, arg);
    free(p->log);
    p->log = strdup(msg);
    fprintf(stderr, "nvrtc emulator: %s\n", msg);
    return r;
}

nvrtcResult nvrtcCompileProgram(program* p, int nopts, const char* const* opts) {
    if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
    if (nopts < 0 || (nopts > 0 && !opts)) return NVRTC_ERROR_INVALID_INPUT;
    const char* std = "c++17"; // NVRTC 12's default dialect
    const char* arch = "compute_52";
    for (int i = 0; i < nopts; i++) {
        const char* o = opts[i];
        if (!o) return NVRTC_ERROR_INVALID_INPUT;
        if (strncmp(o, "--gpu-architecture=", 19) == 0) arch = o + 19;
        else if (strncmp(o, "-arch=", 6) == 0) arch = o + 6;
        else if (strcmp(o, "-arch") == 0 && i + 1 < nopts) arch = opts[++i];
        else if (strncmp(o, "--std=", 6) == 0 || strncmp(o, "-std=", 5) == 0) {
            std = strchr(o, '=') + 1;
            if (strcmp(std, "c++03") && strcmp(std, "c++11") && strcmp(std, "c++14") && strcmp(std, "c++17") && strcmp(std, "c++20"))
                return fail(p, NVRTC_ERROR_INVALID_OPTION, "unknown language dialect in %s", o);
        } else if (strcmp(o, "-default-device") == 0 || strcmp(o, "--device-as-default-execution-space") == 0 ||
                   strcmp(o, "-lineinfo") == 0 || strcmp(o, "--generate-line-info") == 0) {
        } else
            return fail(p, NVRTC_ERROR_INVALID_OPTION, "option %s is not emulated", o);
    }
    int virt;
    const char* digits;
    if (strncmp(arch, "sm_", 3) == 0) virt = 0, digits = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0) virt = 1, digits = arch + 8;
    else return fail(p, NVRTC_ERROR_INVALID_OPTION, "unknown architecture %s", arch);
    int ccode = atoi(digits);
    if (ccode < 50 || ccode > 121 || !isdigit((unsigned char)digits[0]))
        return fail(p, NVRTC_ERROR_INVALID_OPTION, "unknown architecture %s", arch);
    if (strcmp(std, "c++03") == 0) std = "c++14"; // the shim needs C++14; the kernels are plain C

    char dir[4096];
    if (own_dir(dir, sizeof dir) != 0) return fail(p, NVRTC_ERROR_INTERNAL_ERROR, "cannot find the folder of %s", "libnvrtc");
    char shim_path[4200];
    snprintf(shim_path, sizeof shim_path, "%s/kernel_shim.h", dir);
    size_t shim_len;
    char* shim = read_file(shim_path, &shim_len);
    if (!shim) return fail(p, NVRTC_ERROR_INTERNAL_ERROR, "cannot read %s", shim_path);

    buf full = {0};
    puts_(&full, "#include \"kernel_shim.h\"\n#line 1 \"");
    puts_(&full, p->name);
    puts_(&full, "\"\n");
    puts_(&full, p->src);
    puts_(&full, "\n#line 1 \"emulator-registry\"\nextern \"C\" EMU_EXPORT const emu_kernel* emu_kernels_v1(void) {\n"
                 "  static const emu_kernel k[] = {\n");
    int count = 0;
    kernel_names(p->src, &full, &count);
    puts_(&full, "    {0, 0, 0}};\n  return k;\n}\n");

    const char* cxx = getenv("CXX");
    if (!cxx || !*cxx) cxx = "c++";
    char flags[512];
    snprintf(flags, sizeof flags, "-x c++ -std=%s -O2 -fPIC -shared -fvisibility=hidden -ffp-contract=off -fno-fast-math -Wall -Wno-unused-function", std);

    unsigned long long h = 0xcbf29ce484222325ull;
    h = fnv(h, shim, shim_len);
    h = fnv(h, full.s, full.n);
    h = fnv(h, cxx, strlen(cxx));
    h = fnv(h, flags, strlen(flags));
    free(shim);
    char key[32];
    snprintf(key, sizeof key, "%016llx", h);

    const char* cache = getenv("SIMCLR_CUDA_EMU_CACHE");
    char cached[4200] = "";
    size_t so_len = 0;
    char* so = NULL;
    if (cache && *cache) {
        snprintf(cached, sizeof cached, "%s/kernels-%s.so", cache, key);
        so = read_file(cached, &so_len);
        if (so && so_len == 0) {
            free(so);
            so = NULL;
        }
    }
    if (!so) {
        const char* tmp = getenv("TMPDIR");
        char work[4096];
        snprintf(work, sizeof work, "%s/simclr-nvrtc-emu-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(work)) {
            free(full.s);
            return fail(p, NVRTC_ERROR_INTERNAL_ERROR, "mkdtemp: %s", strerror(errno));
        }
        char src_path[4200], so_path[4200], log_path[4200], cmd[16384];
        snprintf(src_path, sizeof src_path, "%s/kernels.cu.cpp", work);
        snprintf(so_path, sizeof so_path, "%s/kernels.so", work);
        snprintf(log_path, sizeof log_path, "%s/log.txt", work);
        if (write_file(src_path, full.s, full.n) != 0) {
            free(full.s);
            return fail(p, NVRTC_ERROR_INTERNAL_ERROR, "cannot write %s", src_path);
        }
        snprintf(cmd, sizeof cmd, "%s %s -I'%s' -o '%s' '%s' >'%s' 2>&1", cxx, flags, dir, so_path, src_path, log_path);
        int rc = system(cmd);
        char* log = read_file(log_path, NULL);
        free(p->log);
        p->log = log ? log : strdup("");
        if (rc != 0) {
            fprintf(stderr, "nvrtc emulator: %s failed:\n%s\n", cxx, p->log);
            unlink(src_path), unlink(so_path), unlink(log_path), rmdir(work);
            free(full.s);
            return NVRTC_ERROR_COMPILATION;
        }
        so = read_file(so_path, &so_len);
        unlink(src_path), unlink(so_path), unlink(log_path), rmdir(work);
        if (!so) {
            free(full.s);
            return fail(p, NVRTC_ERROR_INTERNAL_ERROR, "the compiler wrote no %s", so_path);
        }
        if (cached[0]) {
            char tmpname[4300];
            snprintf(tmpname, sizeof tmpname, "%s.%d.tmp", cached, (int)getpid());
            if (write_file(tmpname, so, so_len) == 0) rename(tmpname, cached);
            else unlink(tmpname);
        }
    } else {
        free(p->log);
        p->log = strdup("");
    }
    free(full.s);
    free(p->image);
    p->image_len = EMU_IMAGE_MAGIC_LEN + 8 + so_len;
    p->image = malloc(p->image_len);
    memcpy(p->image, EMU_IMAGE_MAGIC, EMU_IMAGE_MAGIC_LEN);
    for (int i = 0; i < 8; i++) p->image[EMU_IMAGE_MAGIC_LEN + i] = (unsigned char)((unsigned long long)so_len >> (8 * i));
    memcpy(p->image + EMU_IMAGE_MAGIC_LEN + 8, so, so_len);
    free(so);
    p->virtual_arch = virt;
    if (count == 0) fprintf(stderr, "nvrtc emulator: warning: no extern \"C\" __global__ function in %s\n", p->name);
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(program* p, size_t* n) {
    if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
    if (!n) return NVRTC_ERROR_INVALID_INPUT;
    *n = (p->log ? strlen(p->log) : 0) + 1;
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(program* p, char* out) {
    if (!p) return NVRTC_ERROR_INVALID_PROGRAM;
    if (!out) return NVRTC_ERROR_INVALID_INPUT;
    strcpy(out, p->log ? p->log : "");
    return NVRTC_SUCCESS;
}

// A program compiled for a virtual architecture has no CUBIN, as with the
// real NVRTC.
nvrtcResult nvrtcGetCUBINSize(program* p, size_t* n) {
    if (!p || !p->image) return NVRTC_ERROR_INVALID_PROGRAM;
    if (!n) return NVRTC_ERROR_INVALID_INPUT;
    if (p->virtual_arch) return NVRTC_ERROR_INVALID_INPUT;
    *n = p->image_len;
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBIN(program* p, char* out) {
    if (!p || !p->image) return NVRTC_ERROR_INVALID_PROGRAM;
    if (!out || p->virtual_arch) return NVRTC_ERROR_INVALID_INPUT;
    memcpy(out, p->image, p->image_len);
    return NVRTC_SUCCESS;
}

// The "PTX" is the same image plus a NUL; the emulated driver loads either.
nvrtcResult nvrtcGetPTXSize(program* p, size_t* n) {
    if (!p || !p->image) return NVRTC_ERROR_INVALID_PROGRAM;
    if (!n) return NVRTC_ERROR_INVALID_INPUT;
    *n = p->image_len + 1;
    return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPTX(program* p, char* out) {
    if (!p || !p->image) return NVRTC_ERROR_INVALID_PROGRAM;
    if (!out) return NVRTC_ERROR_INVALID_INPUT;
    memcpy(out, p->image, p->image_len);
    out[p->image_len] = 0;
    return NVRTC_SUCCESS;
}
