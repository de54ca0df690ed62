package backend

import (
	"fmt"
	"strings"
)

// Device is the backend a command asks for: DeviceAuto (the zero value:
// CUDA when found, else the CPU), DeviceCPU or DeviceCUDA.
type Device int

const (
	DeviceAuto Device = iota
	DeviceCPU
	DeviceCUDA
)

// Devices lists the accepted names of ParseDevice, as --device takes them.
var Devices = []string{"auto", "cpu", "cuda"}

func (d Device) String() string {
	if d < 0 || int(d) >= len(Devices) {
		return fmt.Sprintf("Device(%d)", int(d))
	}
	return Devices[d]
}

// ParseDevice reads a device's name: auto (or empty), cpu, or cuda (or
// gpu), in any case.
func ParseDevice(name string) (Device, error) {
	switch strings.ToLower(name) {
	case "", "auto":
		return DeviceAuto, nil
	case "cpu":
		return DeviceCPU, nil
	case "cuda", "gpu":
		return DeviceCUDA, nil
	}
	return 0, fmt.Errorf("unknown device %q: use one of %s", name, strings.Join(Devices, ", "))
}

// Precision is the CUDA backend's arithmetic for matrix products and
// convolutions: TF32 (the zero value; tensor cores, about 10 bits of
// mantissa) or FP32. The CPU backend always computes in FP32.
type Precision int

const (
	TF32 Precision = iota
	FP32
)

func (p Precision) String() string {
	switch p {
	case TF32:
		return "tf32"
	case FP32:
		return "fp32"
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// ParsePrecision reads a precision's name: tf32 (or empty) or fp32.
func ParsePrecision(name string) (Precision, error) {
	switch name {
	case "", "tf32":
		return TF32, nil
	case "fp32":
		return FP32, nil
	}
	return 0, fmt.Errorf("unknown precision %q: use tf32 or fp32", name)
}
