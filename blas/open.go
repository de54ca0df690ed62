package blas

import "runtime"

// Open returns the fastest SGEMM available: OpenBLAS (or another CBLAS)
// found at run time when there is one, else the pure-Go kernel, both using
// runtime.NumCPU() threads. Name says which was chosen; OpenBLAS's error
// says why a library was not found.
func Open() Gemm {
	if g, err := OpenBLAS(); err == nil {
		return g
	}
	return PureGo(runtime.NumCPU())
}
