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

// DecoupledLoss is implemented by a backend with the decoupled contrastive
// losses of docs/definitions.md, section 10 "Decoupled losses",
// DCL and SogCLR (internal/ref's Decoupled is the reference).
type DecoupledLoss interface {
	// Decoupled computes, on z (2n x d, rows 2k and 2k+1 the views of image
	// k, n >= 2), DCL when u is nil, or a SogCLR step when u holds the n
	// images' moving averages (0: not seen before), which it updates with
	// gamma in (0, 1]. dz receives the gradient (SogCLR: the step, tau
	// times DCL's scale); the result's Loss and Full are the loss (SogCLR:
	// DCL's with the updated averages). Reductions are float64; the
	// scalars are returned to the host (this synchronises).
	Decoupled(n, d int, tau, gamma float32, u, z, dz Buffer) LossResult
}
