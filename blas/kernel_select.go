package blas

// bestKernel is the fastest micro-kernel this machine runs.
func bestKernel() kernel { return kernels()[0] }
