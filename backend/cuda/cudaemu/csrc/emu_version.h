// The CUDA major version an emulated library reports: the one in the soname
// it was loaded under (a copy named libcublas.so.13 reports 13), so that
// tests can lay out library sets of several majors from one build. Valid C.
#ifndef SIMCLR_EMU_VERSION_H
#define SIMCLR_EMU_VERSION_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// A static object: its address resolves to this library's own copy, never
// to another loaded copy's (exported symbols may be interposed).
static const char emu_version_anchor = 0;

static int emu_own_major(int def) {
    Dl_info info;
    if (!dladdr(&emu_version_anchor, &info) || !info.dli_fname) return def;
    const char* so = strstr(info.dli_fname, ".so.");
    if (!so) return def;
    int n = atoi(so + 4);
    return n > 0 ? n : def;
}

#endif
