package cuda

import "errors"

// fail records the first device error.
func (b *Backend) fail(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

func (b *Backend) Sync() error {
	b.enter()
	defer b.leave()
	return b.syncLocked()
}

func (b *Backend) syncLocked() error {
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
	// Work queued before the failure must have completed cleanly.
	return b.syncLocked()
}
