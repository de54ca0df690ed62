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
// losses DCL and SogCLR of docs/definitions.md, section 10 "Decoupled
// losses" (internal/ref's Decoupled is the reference).
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

// StepGraphs is implemented by a device backend that can record the device
// work of a training step once and replay it with one launch (CUDA graphs),
// so that a small step costs its kernels rather than the host's calls.
type StepGraphs interface {
	// GraphStep runs step, which only queues device work, keyed by key (a
	// comparable value describing everything that decides what step
	// queues: the batch size, the kind of pass). step must queue the same
	// work on the same buffers whenever it is called with the same key,
	// and must not allocate after its first call for the key; from the
	// third call on it may not be called at all. Results the host needs
	// are read after GraphStep returns (ReadNTXent). A step whose work
	// cannot be recorded runs eagerly. It returns the backend's failure.
	GraphStep(key any, step func()) error
	// QueueNTXent is ContrastiveLoss.NTXent without the read of its loss to
	// the host, so that it can be part of a step given to GraphStep.
	QueueNTXent(n, d int, tau float32, multilevel bool, z, dz Buffer)
	// ReadNTXent returns the loss of the last NTXent or QueueNTXent
	// queued, whether directly or by a replayed step; it synchronises.
	ReadNTXent(multilevel bool) LossResult
}
