package cuda

import (
	"errors"
	"testing"
	"unsafe"
)

// TestEmulatorStreamCapture holds the emulated driver to what a GPU does
// with a capturing stream, which the step-graph tests rely on: work queued
// while capturing is recorded, not run; each launch of the instantiated
// graph runs it once; synchronising the capturing stream fails and
// invalidates the capture.
func TestEmulatorStreamCapture(t *testing.T) {
	useEmulator(t)
	b, err := Open(Options{Precision: "fp32"})
	if err != nil {
		t.Fatalf("open the CUDA backend on the emulator: %v", err)
	}
	defer b.Close()
	d := &b.libs.driver
	x := b.Alloc(4)
	b.Upload(x, []float32{1, 2, 3, 4})
	call := func(what string, r uintptr) error {
		b.enter()
		defer b.leave()
		return d.check(what, r)
	}
	if err := call("cuStreamBeginCapture", mustCall(d.cuStreamBeginCapture, b.stream, captureModeGlobal)); err != nil {
		t.Fatal(err)
	}
	b.Scale(x, 2)   // a kernel
	b.Copy(x, x)    // a device-to-device copy
	b.Axpy(x, 1, x) // x += x: 4x after one replay
	var graph, exec uintptr
	if err := call("cuStreamEndCapture", mustCall(d.cuStreamEndCapture, b.stream, uintptr(unsafe.Pointer(&graph)))); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	b.Download(got, x)
	if got[0] != 1 || got[3] != 4 {
		t.Fatalf("after the capture x = %v: the recorded work ran", got)
	}
	if err := call("cuGraphInstantiateWithFlags", mustCall(d.cuGraphInstantiate, uintptr(unsafe.Pointer(&exec)), graph, 0)); err != nil {
		t.Fatal(err)
	}
	mustCall(d.cuGraphDestroy, graph)
	for range 2 {
		if err := call("cuGraphLaunch", mustCall(d.cuGraphLaunch, exec, b.stream)); err != nil {
			t.Fatal(err)
		}
	}
	mustCall(d.cuGraphExecDestroy, exec)
	b.Download(got, x)
	if got[0] != 16 || got[3] != 64 {
		t.Fatalf("after two launches x = %v, want 16x the start", got)
	}

	// A synchronisation inside a capture.
	if err := call("cuStreamBeginCapture", mustCall(d.cuStreamBeginCapture, b.stream, captureModeGlobal)); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := call("cuStreamSynchronize", mustCall(d.cuStreamSynchronize, b.stream)); !errors.As(err, &e) || e.Code != 900 {
		t.Fatalf("cuStreamSynchronize while capturing: %v, want CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", err)
	}
	if err := call("cuStreamEndCapture", mustCall(d.cuStreamEndCapture, b.stream, uintptr(unsafe.Pointer(&graph)))); !errors.As(err, &e) || e.Code != 901 || graph != 0 {
		t.Fatalf("cuStreamEndCapture after it: %v (graph %#x), want CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph", err, graph)
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("the stream after the invalidated capture: %v", err)
	}
}
