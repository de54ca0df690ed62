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
// otherwise; DeviceCUDA that cannot be opened is an error.
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
		c := cpu.New()
		return c, fmt.Sprintf("device auto -> cpu (cuda unavailable: %v): %s", err, c.Describe()), nil
	}
	return nil, "", fmt.Errorf("unknown device %v: use one of %s", device, strings.Join(Devices, ", "))
}
