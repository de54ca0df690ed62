//go:build !amd64 || purego

package blas

// kernels lists the micro-kernels this machine can run, fastest first.
func kernels() []kernel { return []kernel{genericKernel} }
