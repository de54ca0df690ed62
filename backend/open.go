// Package backend chooses the compute backend a command runs on: the CPU
// backend (OpenBLAS or pure Go) or the CUDA backend when an NVIDIA GPU and
// its libraries are found.
package backend

import (
	"fmt"
	"strings"

	"github.com/simclr-go/simclr/backend/cpu"
	"github.com/simclr-go/simclr/backend/cuda"
	"github.com/simclr-go/simclr/tensor"
)

// Open returns the backend for device and a log line saying which backend
// was chosen and why. precision only matters on CUDA. DeviceAuto picks CUDA
// when its libraries and a device are found and falls back to the CPU
// otherwise; DeviceCUDA that cannot be opened is an error. BF16 exists
// only on CUDA: asked of the CPU, or of auto where CUDA cannot open, it is
// an error (never a silent fp32 run).
func Open(device Device, precision Precision) (tensor.Backend, string, error) {
	return OpenGPU(device, precision, 0)
}

// Close releases what a backend returned by Open holds: the CUDA backend's
// device memory, handles and context (until then they stay taken, so a
// program that opens backends repeatedly, as the tests do, runs out of
// device memory); the CPU backend holds nothing. b must not be used
// afterwards.
func Close(b tensor.Backend) error {
	if c, ok := b.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// OpenGPU is Open on the GPU of the given index when the device is CUDA
// (ranks of a data-parallel run on one node each take their own).
func OpenGPU(device Device, precision Precision, gpu int) (tensor.Backend, string, error) {
	opts := cuda.Options{Precision: precision.String(), Device: gpu}
	switch device {
	case DeviceCPU:
		if precision == BF16 {
			return nil, "", errBF16OnCPU("the CPU backend (device cpu)")
		}
		b := cpu.New()
		return b, "device cpu (requested): " + b.Describe(), nil
	case DeviceCUDA:
		b, err := cuda.Open(opts)
		if err != nil {
			return nil, "", fmt.Errorf("device cuda: %w (run `simclr devices` to see what was found, or use --device cpu)", err)
		}
		return b, "device cuda (requested): " + b.Describe(), nil
	case DeviceAuto:
		b, err := cuda.Open(opts)
		if err == nil {
			return b, "device auto -> cuda: " + b.Describe(), nil
		}
		if precision == BF16 {
			return nil, "", fmt.Errorf("%w; device auto found no usable CUDA GPU: %v", errBF16OnCPU("the CPU backend"), err)
		}
		c := cpu.New()
		return c, fmt.Sprintf("device auto -> cpu (cuda unavailable: %v): %s", err, c.Describe()), nil
	}
	return nil, "", fmt.Errorf("unknown device %v: use one of %s", device, strings.Join(Devices, ", "))
}

// errBF16OnCPU is the refusal of the bf16 precision by the CPU backend.
func errBF16OnCPU(what string) error {
	return fmt.Errorf("precision bf16: %s computes in fp32 only and has no bf16 arithmetic; bf16 needs --device cuda on a GPU of compute capability 8.0 or newer: use --precision fp32 on the CPU", what)
}
