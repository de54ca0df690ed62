//go:build !(linux || darwin || freebsd || netbsd)

package blas

import "runtime"

// EnvLibrary names an environment variable holding the path of a CBLAS
// library to try instead of searching the usual ones.
const EnvLibrary = "SIMCLR_BLAS"

// OpenBLAS reports that this platform cannot load a CBLAS library at run
// time; Open falls back to the pure-Go kernel.
func OpenBLAS() (Gemm, error) { return OpenBLASThreads(runtime.NumCPU()) }

// OpenBLASThreads is OpenBLAS with a thread count.
func OpenBLASThreads(threads int) (Gemm, error) {
	g, _, err := systemBLAS(threads)
	return g, err
}

func systemBLAS(int) (Gemm, string, error) {
	return nil, "", &NotUsedError{Unsupported: "loading a CBLAS library at run time is not supported on " + runtime.GOOS}
}
