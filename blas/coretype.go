package blas

import (
	"os"
	"runtime"

	"golang.org/x/sys/cpu"
)

// envCoreType is read by DYNAMIC_ARCH builds of OpenBLAS when the library is
// loaded, to choose their kernels.
const envCoreType = "OPENBLAS_CORETYPE"

// openBLASCoreType names the OpenBLAS kernels this CPU can run, or "" when
// OpenBLAS's own detection is as good. OpenBLAS detects cores by CPUID model
// number, so a CPU newer than the library (here: Debian's 0.3.21 on an
// Emerald Rapids Xeon, model 207) falls back to its Prescott SSE3 kernels,
// about half the speed of its AVX-512 ones; choosing by instruction set
// avoids that.
func openBLASCoreType() string {
	if runtime.GOARCH != "amd64" {
		return ""
	}
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512CD:
		return "SkylakeX"
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return "Haswell"
	}
	return ""
}

// setOpenBLASCoreType sets OPENBLAS_CORETYPE for the library about to be
// loaded unless the user chose one. It changes the process environment,
// which OpenBLAS reads through getenv at load time.
func setOpenBLASCoreType() {
	if _, set := os.LookupEnv(envCoreType); set {
		return
	}
	if core := openBLASCoreType(); core != "" {
		_ = os.Setenv(envCoreType, core)
	}
}
