package cuda

import (
	"errors"
	"fmt"
)

// fail records the first device error. cuBLAS and cuDNN report a fault of
// earlier work as a failure of their own (CUBLAS_STATUS_EXECUTION_FAILED,
// CUDNN_STATUS_EXECUTION_FAILED): after any failure but a refused
// allocation the stream is asked, and a sticky driver error it returns is
// recorded with the failure, so that the error names the fault it is.
func (b *Backend) fail(err error) {
	if err == nil || b.err != nil {
		return
	}
	if !errors.Is(err, ErrDeviceFault) && !errors.Is(err, ErrOutOfMemory) && b.capture == nil && b.stream != 0 && b.libs != nil && b.libs.driver.cuStreamSynchronize != 0 {
		dr := &b.libs.driver
		if f := dr.check("cuStreamSynchronize, after it", mustCall(dr.cuStreamSynchronize, b.stream)); errors.Is(f, ErrDeviceFault) {
			err = fmt.Errorf("%w; %w", err, f)
		}
	}
	b.err = err
}

func (b *Backend) Sync() error {
	b.enter()
	defer b.leave()
	return b.syncLocked()
}

func (b *Backend) syncLocked() error {
	if b.refuseCapture("Sync") {
		return b.err
	}
	if b.err == nil && b.stream != 0 {
		dr := &b.libs.driver
		b.fail(dr.check("cuStreamSynchronize", mustCall(dr.cuStreamSynchronize, b.stream)))
	}
	return b.err
}

// Recover clears a recorded out-of-memory failure (ErrOutOfMemory), after
// which buffers allocated before it can be read again, so that a trainer
// can still save a checkpoint. Buffers allocated while the failure stood
// are not backed and must not be used. Any other failure (a kernel fault
// may leave the context unusable) is returned and stays recorded.
func (b *Backend) Recover() error {
	b.enter()
	defer b.leave()
	if b.err == nil {
		return nil
	}
	if !errors.Is(b.err, ErrOutOfMemory) {
		return b.err
	}
	b.err = nil
	// Conversions queued while the failure stood did not run.
	b.staleAllLocked()
	// Work queued before the failure must have completed cleanly.
	return b.syncLocked()
}
