package cuda

import "github.com/simclr-go/simclr/tensor"

// RunExternal runs f with the backend's CUDA context current on a locked OS
// thread and the backend's lock held, for a library that queues its own work
// on the backend's stream (NCCL's all-reduce). f gets the stream and a
// function giving a buffer's device address. Work f queues is ordered after
// the backend's kernels queued before and before those queued after. After a
// device failure f is not run and the failure is returned.
func (b *Backend) RunExternal(f func(stream uintptr, addr func(tensor.Buffer) uintptr) error) error {
	b.enter()
	defer b.leave()
	if b.err != nil {
		return b.err
	}
	if b.refuseCapture("another library's work (RunExternal)") {
		return nil
	}
	// f may write any buffer: no bf16 copy can be trusted after it.
	defer b.staleAllLocked()
	return f(b.stream, func(x tensor.Buffer) uintptr { return uintptr(b.ptr(x)) })
}

// LibraryDirs is the ordered list of folders searched for the CUDA
// libraries (SIMCLR_CUDA_LIBS, LD_LIBRARY_PATH, the toolkit, Python wheels,
// the system folders), for NVIDIA libraries a caller loads beside them
// (collective's NCCL).
func (b *Backend) LibraryDirs() []string { return defaultSearchEnv().dirs() }
