package tensor

// Capabilities some backends have beyond Backend, for libraries that move
// a buffer's memory themselves (the collective operations between ranks).
// A caller asserts the interface it needs and falls back to Download and
// Upload without it.

// HostMemory is implemented by a backend whose buffers are host memory:
// HostData returns buf's elements themselves, not a copy, so a library can
// read and write them in place.
type HostMemory interface {
	HostData(buf Buffer) []float32
}

// ExternalStream is implemented by a device backend that lets a library
// outside it (NCCL) queue work on its stream: RunExternal calls f with the
// stream and addr, the device address of any buffer of the backend, so
// that the library's work runs in order with the backend's kernels. When
// the backend holds an earlier device error it returns that error instead
// of calling f.
type ExternalStream interface {
	RunExternal(f func(stream uintptr, addr func(Buffer) uintptr) error) error
}
