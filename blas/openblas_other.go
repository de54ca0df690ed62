//go:build !(linux || darwin || freebsd || netbsd)

package blas

import (
	"errors"
	"runtime"
)

// EnvLibrary names an environment variable holding the path of a CBLAS
// library to try before the usual ones.
const EnvLibrary = "SIMCLR_BLAS"

// OpenBLAS reports that this platform cannot load a CBLAS library at run
// time; Open falls back to the pure-Go kernel.
func OpenBLAS() (Gemm, error) { return OpenBLASThreads(runtime.NumCPU()) }

// OpenBLASThreads is OpenBLAS with a thread count.
func OpenBLASThreads(threads int) (Gemm, error) {
	return nil, errors.New("blas: loading OpenBLAS at run time is not supported on " + runtime.GOOS + "; using the pure-Go kernel")
}
