package cuda

// CUDAMajor is the CUDA major of the library set the backend loaded
// (cuBLAS, cuBLASLt, NVRTC and cuDNN share one; see libset.go), 0 when
// nothing said, for NVIDIA libraries a caller loads beside them:
// collective's NCCL must be built for the same major.
func (b *Backend) CUDAMajor() int { return b.libs.set.major }
